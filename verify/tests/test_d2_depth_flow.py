"""D2: the stack with h = 1/L is forward Euler for the depth flow: order 1 in h, untied and tied.

The verdict is decided by :data:`verify.checks.d2.CLAIM` (for each path: an asymptotic window found
on the doubling ladder of depths, and the slope's 95% interval there inside 1 ± slope_tol); these
tests only read it. The negative controls (the plain stack h = 1; a path with jumps off the grid)
run in ``verify/tests/test_negative_controls.py``.
"""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastslow.verify.portability import assert_portable
from fastslow.verify.registry import CLAIMS, run_check

pytestmark = pytest.mark.claim("D2")


def test_stack_converges_to_the_flow_with_order_one_untied_and_tied(claim, thorough):
    params = {"L_min": 128} if thorough else {}
    claim.holds(params, seed=0)


_EXAMPLES = 2 if settings.default.max_examples <= 25 else 12
"""Random paths per run: 2 by default (and the example below), 12 under ``--thorough``."""


@settings(max_examples=_EXAMPLES)
@given(
    seed=st.integers(0, 2**16),
    mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
)
@example(seed=400, mask="block_causal")  # tied path pre-asymptotic up to L ≈ 128: window 128–2048
def test_order_one_for_random_smooth_paths(seed, mask):
    result = run_check("D2", {"mask": mask}, seed=seed)
    assert result.outcome == "holds", result.summary()


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["D2"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """D2 calls no non-unique decomposition; the verdict and its key figures are identical."""
    assert_portable("D2", {"L_max": 256}, control=control)


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="h_mode"):
        run_check("D2", {"h_mode": "2"})
    with pytest.raises(ValueError, match="L_max"):
        run_check("D2", {"L_min": 64, "L_max": 512})  # one window of 5 needs L_max ≥ 1024
    with pytest.raises(ValueError, match="window"):
        run_check("D2", {"window": 2})
    with pytest.raises(ValueError, match="L_min"):
        run_check("D2", {"L_min": 0})
