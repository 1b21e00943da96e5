"""D1: ∂X_L/∂X_0 is the depth-ordered product J_{L−1}⋯J_0; the order matters with untied weights;
with tied weights the reversed product agrees when the layer Jacobians coincide (a fixed point of
the tied map), but not on a moving trajectory (a finding against the unqualified reading)."""

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from verify.checks import run_check

pytestmark = pytest.mark.claim("D1")

CHAIN = ("chain_rule_rel_forward", "chain_rule_rel_reverse")


def _chain_rule_holds(result):
    f, tol = result.figures, result.tolerance
    return f["chain_rule_difference_over_product_scale"] <= tol["chain_rule_rel_jvp_vjp"] \
        and f["fd_error_over_allowance"] <= 1.0


def test_depth_ordered_product_and_order_matters_with_untied_weights(claim, check_sweep):
    result = claim.main(run_check("D1", {}, seed=0))
    assert result.hypotheses_hold
    assert _chain_rule_holds(result), result.summary()
    assert all(result.figures[k] <= 1e-14 for k in CHAIN)  # plain relative differences
    assert result.figures["chain_rule_rel_fd"] <= 1e-6
    assert result.figures["reversal_rel_difference"] >= result.tolerance["reversal_min_rel_untied"]
    assert result.holds
    # generic instances: the smallest reversal difference over further seeds
    rs = [r.figures["reversal_rel_difference"]
          for r in check_sweep([dict(claim="D1", seed=s) for s in range(1, 6)])]
    claim.figure("untied_reversal_rel_difference_min_over_seeds_0_5",
                 min(rs + [result.figures["reversal_rel_difference"]]))
    assert min(rs) >= 1e-2


def test_tied_weights_at_a_fixed_point_reversal_agrees(claim):
    result = claim.main(run_check("D1", {"tied": True, "trajectory": "fixed_point"}, seed=0))
    f = result.figures
    assert result.hypotheses_hold and _chain_rule_holds(result)
    assert f["fixed_point_residual"] <= 1e-14
    assert f["layer_jacobian_spread"] <= 1e-13  # the J_l coincide (up to rounding)
    assert f["reversal_rel_difference"] <= result.tolerance["reversal_max_rel_tied"]
    assert f["reversal_difference_over_product_scale"] <= result.tolerance["reversal_max_rel_tied"]
    assert result.holds, result.summary()


def test_tied_weights_at_a_homogeneous_fixed_point(claim):
    result = claim.main(run_check("D1", {"tied": True, "trajectory": "homogeneous_fixed_point",
                                         "gate": 0.0, "T": 16, "P": 4}, seed=1))
    assert result.figures["fixed_point_token_spread"] <= 1e-13  # X* = 1 x*ᵀ: the frozen kernel
    assert result.holds, result.summary()


def test_negative_control_tied_weights_on_a_moving_trajectory(claim):
    """Finding: tied weights alone do not make the reversed product agree."""
    result = claim.negative(run_check("D1", {"tied": True}, seed=0))
    f = result.figures
    assert not result.hypotheses_hold
    assert _chain_rule_holds(result)  # the chain rule holds for every instance
    assert f["layer_jacobian_spread"] >= 1e-2  # the J_l differ because X_l moves
    assert f["reversal_rel_difference"] >= 1e-2 > result.tolerance["reversal_max_rel_tied"]
    assert not result.holds
    claim.note("finding: SPEC's unqualified 'with tied weights they agree' is false on a moving "
               f"trajectory: tied weights, generic X_0 (T=8, d=4, L=4, h=0.5, gamma=1) give a "
               f"relative reversal difference {f['reversal_rel_difference']:.3g} (layer-Jacobian "
               f"spread {f['layer_jacobian_spread']:.3g}); agreement holds (to ~1e-16) when the "
               "layer Jacobians coincide, e.g. at a fixed point of the tied map")
    claim.figure("tied_moving_trajectory_reversal_rel_difference", f["reversal_rel_difference"])


def test_negative_control_scalar_jacobians_commute(claim):
    result = claim.negative(run_check("D1", {"T": 1, "P": 1, "d": 1}, seed=0))
    assert not result.hypotheses_hold and _chain_rule_holds(result)
    assert result.figures["reversal_rel_difference"] <= 1e-12
    assert not result.holds


@given(N=st.integers(1, 3), P=st.integers(1, 2), d=st.integers(2, 4), L=st.integers(1, 3),
       mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
       norm=st.booleans(), sigma=st.sampled_from(["tanh", "identity"]), tied=st.booleans(),
       h=st.sampled_from([1.0, 0.5, 0.25]), gamma=st.sampled_from([0.0, 1.0]),
       gate=st.sampled_from([0.0, 0.5]), seed=st.integers(0, 2**16))
def test_chain_rule_over_random_instances(N, P, d, L, mask, norm, sigma, tied, h, gamma, gate, seed):
    params = {"T": N * P, "P": P, "d": d, "L": L, "mask": mask, "norm": norm, "sigma": sigma,
              "tied": tied, "h": h, "gamma": gamma, "gate": gate}
    result = run_check("D1", params, seed=seed)
    assert _chain_rule_holds(result), result.figures


@given(N=st.integers(1, 3), P=st.integers(1, 2), d=st.integers(2, 3), L=st.integers(2, 4),
       gate=st.sampled_from([0.0, 0.5]), gamma=st.sampled_from([1.0, 2.0]),
       h=st.sampled_from([1.0, 0.5]), seed=st.integers(0, 2**16))
def test_tied_fixed_point_reversal_agrees_over_random_instances(N, P, d, L, gate, gamma, h, seed):
    """With the norm on a fixed point exists (Brouwer); Newton finds one on most instances (about
    3% of random draws defeat it: those are skipped, they have no instance to test). At an
    unstable fixed point rounding drives the trajectory off X* and the J_l drift apart: the
    measured hypothesis (spread ≤ 1e-12) then fails and only the chain rule is asserted.
    d ≥ 2: at d = 1 the RMS norm is sign(x) up to O(ε_n) and its Jacobian ε_n/|x|³ is either
    negligible or huge, which makes every relative comparison ill-conditioned."""
    params = {"T": N * P, "P": P, "d": d, "L": L, "h": h, "gate": gate, "gamma": gamma,
              "tied": True, "trajectory": "fixed_point"}
    try:
        result = run_check("D1", params, seed=seed)
    except ValueError as exc:
        assume("no fixed point" not in str(exc))
        raise
    assert _chain_rule_holds(result), result.figures
    if result.hypotheses_hold:
        assert result.holds, result.figures


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="needs tied=True"):
        run_check("D1", {"trajectory": "fixed_point"}, seed=0)
    with pytest.raises(ValueError, match="needs gamma > 0"):
        run_check("D1", {"trajectory": "fixed_point", "tied": True, "gamma": 0.0}, seed=0)
    with pytest.raises(ValueError, match="T·d must be ≤ 64"):
        run_check("D1", {"T": 32, "d": 4}, seed=0)
    with pytest.raises(ValueError, match="unknown trajectory"):
        run_check("D1", {"trajectory": "moving"}, seed=0)
    with pytest.raises(ValueError, match="order_tol"):
        run_check("D1", {"order_tol": -1.0}, seed=0)
    assert np.isfinite(run_check("D1", {"L": 1}, seed=0).figures["reversal_rel_difference"])
