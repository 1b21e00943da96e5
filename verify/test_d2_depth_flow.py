"""D2: the stack with h = 1/L is forward Euler for the depth flow: order 1 in h."""

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from verify.checks import run_check

pytestmark = pytest.mark.claim("D2")


def test_stack_converges_to_the_flow_with_order_one_untied_and_tied(claim, thorough):
    params = {"Ls": (16, 32, 64, 128, 256, 512, 1024, 2048)} if thorough else {}
    result = claim.main(run_check("D2", params, seed=0))
    f, tol = result.figures, result.tolerance["slope_abs"]
    assert result.hypotheses_hold
    assert abs(f["slope_untied"] - 1) <= tol, result.summary()
    assert abs(f["slope_tied"] - 1) <= tol, result.summary()
    # the 95% intervals are much narrower than the tolerance: the asymptotic regime is reached
    for key in ("slope_untied_ci95", "slope_tied_ci95"):
        lo, hi = f[key]
        assert hi - lo < tol
    # the error halves with h at every refinement (monotone, not just on average)
    ratios = np.asarray(f["err_untied"][:-1]) / np.asarray(f["err_untied"][1:])
    assert np.all(np.abs(ratios - 2) < 0.2)
    assert result.holds


def test_negative_control_plain_stack_h_one_does_not_converge_to_the_flow(claim):
    result = claim.negative(run_check("D2", {"h_mode": "one"}, seed=0))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    # the error does not shrink as L grows: O(1) at every depth, fitted slope ≈ 0
    assert min(f["err_untied"]) > 0.1 and min(f["err_tied"]) > 0.1
    assert abs(f["slope_untied"]) < 0.2 and abs(f["slope_tied"]) < 0.2


def test_jumps_off_the_grid_keep_order_one_but_make_convergence_irregular(claim):
    """Not a hypothesis of D2 that matters for the order: each jump adds one O(h) local error."""
    smooth = run_check("D2", {}, seed=0).figures
    result = run_check("D2", {"path": "step"}, seed=0)
    f = result.figures
    lo, hi = f["slope_untied_ci95"]
    assert lo < 1 < hi                                   # still order 1 on average
    width_step, width_smooth = hi - lo, np.diff(smooth["slope_untied_ci95"])[0]
    assert width_step > 20 * width_smooth                # but irregular: the grid meets the jumps
    claim.note(f"piecewise-constant θ(t) with jumps off the grid: slope {f['slope_untied']:.3f} "
               f"[{lo:.3f}, {hi:.3f}] (order 1, irregular) vs smooth interval width {width_smooth:.2g}")


@settings(max_examples=6)
@given(seed=st.integers(0, 2**16), mask=st.sampled_from(["causal", "block_causal",
                                                          "block_bidirectional"]))
@example(seed=400, mask="block_causal")   # pre-asymptotic at L = 32 (local slope 1.3): start at 64
def test_order_one_for_random_smooth_paths(seed, mask):
    result = run_check("D2", {"mask": mask, "Ls": (64, 128, 256, 512)}, seed=seed)
    assert abs(result.figures["slope_untied"] - 1) <= 0.1
    assert abs(result.figures["slope_tied"] - 1) <= 0.1


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="h_mode"):
        run_check("D2", {"h_mode": "2"})
    with pytest.raises(ValueError, match="Ls"):
        run_check("D2", {"Ls": (16, 16, 32)})
