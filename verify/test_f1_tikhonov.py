"""F1: fast collapse onto block-constant states, O(ε) leading-order and O(ε²) first-order reduction."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import numerics as nm
from verify.checks import run_check

pytestmark = pytest.mark.claim("F1")


def _record_slopes(claim, result, prefix):
    f = result.figures
    claim.figure(f"{prefix}slope_leading", f["slope_leading"])
    claim.figure(f"{prefix}slope_leading_ci95", f["slope_leading_ci95"])
    claim.figure(f"{prefix}slope_first_order", f["slope_first_order"])
    claim.figure(f"{prefix}slope_first_order_ci95", f["slope_first_order_ci95"])
    claim.figure(f"{prefix}attraction_rate_ratio", f["attraction_rate_ratio"])


def test_block_bidirectional_slopes_one_and_two_rate_and_symbolic_h1(claim, thorough):
    params = {"n_eps": 9} if thorough else {}
    result = claim.main(run_check("F1", params, seed=0))
    f, tol = result.figures, result.tolerance
    assert result.hypotheses_hold
    # (a) block-constant states are critical (to rounding), generic ones are not
    assert f["critical_residual_block_constant"] <= tol["critical_residual_abs"]
    assert f["critical_residual_generic_min"] > 1e-3
    # (b) normal attraction at (1 − λ₂)/ε + γ with λ₂ = 0
    assert f["lambda2"] == 0.0
    assert abs(f["attraction_rate_ratio"] - 1) <= tol["attraction_rate_rel"], f["attraction_rate"]
    # (c), (d) fitted error slopes
    assert abs(f["slope_leading"] - 1) <= tol["slope_leading_abs"], result.summary()
    assert abs(f["slope_first_order"] - 2) <= tol["slope_first_order_abs"], result.summary()
    # the first-order reduction is the better one at every ε
    assert np.all(np.asarray(f["err_first_order"]) < np.asarray(f["err_leading"]))
    # symbolic derivation (theory/) agrees with the numerics: H₁ = γ(I − UB)E, curvature term
    th = f["theory"]
    assert th["critical_residual_symbolic_zero"] and th["normal_rate_symbolic"] == 1.0
    assert th["H1_rel"] < tol["theory_H1_rel"] and th["curvature_rel"] < tol["theory_first_order_rel"]
    assert th["curvature_norm"] > 1e-3   # Q, K are visible at order ε through the curvature term
    assert result.holds
    _record_slopes(claim, result, "")
    claim.figure("full_flow_steps_eps_min", f["full_flow_work"][0]["steps"])


def test_block_causal_reduces_through_the_first_token(claim):
    result = claim.main(run_check("F1", {"mask": "block_causal", "theory_check": True}, seed=1))
    f, tol = result.figures, result.tolerance
    assert f["coarse_variable"] == "first" and f["lambda2"] == 0.5
    assert abs(f["attraction_rate_ratio"] - 1) <= tol["attraction_rate_rel"]
    assert abs(f["slope_leading"] - 1) <= tol["slope_leading_abs"]
    assert abs(f["slope_first_order"] - 2) <= tol["slope_first_order_abs"]
    # the first token attends only to itself: no fast coupling, no fibre shift, no curvature term
    assert f["fibre_base_point_shift"] == 0.0
    assert f["theory"]["curvature_norm"] == 0.0
    assert result.holds
    _record_slopes(claim, result, "block_causal_")
    claim.note(f"block_causal reduces through Y = FᵀX (first token): slopes "
               f"{f['slope_leading']:.3f} {f['slope_leading_ci95']} and {f['slope_first_order']:.3f} "
               f"{f['slope_first_order_ci95']}, rate ratio {f['attraction_rate_ratio']:.4f}")


def test_block_causal_with_block_mean_coarse_variable_does_not_converge(claim):
    """The block mean is not the coarse variable of block_causal (its kernel is not doubly stochastic)."""
    result = claim.negative(run_check("F1", {"mask": "block_causal", "coarse": "mean", "n_eps": 3,
                                             "theory_check": False}, seed=1))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    assert abs(f["slope_leading"]) < 0.2 and min(f["err_leading"]) > 0.1
    claim.note(f"block_causal with the block mean as coarse variable: error stays "
               f"{min(f['err_leading']):.2f}–{max(f['err_leading']):.2f} (slope {f['slope_leading']:.3f})")


def test_negative_control_global_causal_mask_block_reduction_error_stays_order_one(claim):
    result = claim.negative(run_check("F1", {"mask": "causal", "n_eps": 3}, seed=0))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    # block-constant states are not critical for the global causal mask
    assert f["critical_residual_block_constant"] > 1e-3
    # the block reduction error does not shrink: slope ≈ 0 and O(1) errors
    assert abs(f["slope_leading"]) < 0.1 and min(f["err_leading"]) > 0.1
    claim.figure("causal_slope_leading", f["slope_leading"])
    claim.figure("causal_err_leading_min", float(min(f["err_leading"])))


def test_two_independent_stiff_integrators_give_the_same_errors(claim):
    """The full flow by Radau IIA and by the Rosenbrock-W method: the measured errors agree."""
    params = {"n_eps": 3, "theory_check": False}
    a = run_check("F1", dict(params, method="radau"), seed=2).figures
    b = run_check("F1", dict(params, method="rosw"), seed=2).figures
    for key in ("err_leading", "err_first_order"):
        ea, eb = np.asarray(a[key]), np.asarray(b[key])
        assert np.all(np.abs(ea - eb) <= 1e-3 * ea), (key, ea, eb)
    claim.note("full-flow errors agree between Radau IIA and ROS34PW2 to 1e-3 relative")


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="eps_min"):
        run_check("F1", {"eps_min": 0.1, "eps_max": 0.01})
    with pytest.raises(ValueError, match="coarse"):
        run_check("F1", {"coarse": "median"})
    with pytest.raises(ValueError, match="method"):
        run_check("F1", {"method": "euler"})


@given(N=st.integers(1, 3), P=st.integers(1, 4), d=st.integers(1, 3),
       mask=st.sampled_from(["block_bidirectional", "block_causal"]), norm=st.booleans(),
       seed=st.integers(0, 2**16))
def test_block_constant_states_are_critical_and_normally_linear(N, P, d, mask, norm, seed):
    """(a), (b) for random instances: ``(A(UY) − I)UY = 0`` and the fast part's derivative at
    ``UY`` is ``(K − I) ⊗ I_d`` (the softmax-derivative term ``DA[δX]·UY`` vanishes)."""
    cfg = nm.ModelConfig(T=N * P, P=P, d=d, mask=mask, norm=norm)
    rng = np.random.default_rng(seed)
    lp = nm.init_layer(cfg, rng, scale=2.0)
    X = np.repeat(rng.standard_normal((N, d)), P, axis=0)
    assert np.abs(nm.attention_kernel(cfg, lp, X) @ X - X).max() <= 1e-12

    def fast(Z):
        return nm.attention_kernel(cfg, lp, Z) @ Z - Z

    dX = rng.standard_normal(X.shape)
    h = 1e-6
    jvp = (fast(X + h * dX) - fast(X - h * dX)) / (2 * h)
    K = nm.frozen_kernel(mask, cfg.T, P)
    assert np.abs(jvp - (K - np.eye(cfg.T)) @ dX).max() <= 1e-7 * max(1.0, np.abs(dX).max())


def test_slopes_hold_for_other_seeds(thorough, check_sweep):
    if not thorough:
        pytest.skip("thorough profile only (≈ 5 s per instance)")
    points = [dict(claim="F1", seed=s, mask=m, n_eps=9, theory_check=False)
              for m in ("block_bidirectional", "block_causal") for s in (1, 2, 3, 4)]
    failing = [(p["mask"], p["seed"], r.summary()) for p, r in zip(points, check_sweep(points))
               if not r.holds]
    assert not failing, failing
