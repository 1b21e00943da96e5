"""D7: the gate keeps the looped map contractive for |g| < m(J)/‖G‖, g_c ≥ m/‖G‖ (tight in the
scalar/normal case), the looped nonlinear map converges below g_c and not above; the autoregressive
slow path cannot move the spectrum at all (g_c = ∞)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from numerics.stability import (critical_gate, gate_spectral_radii, margin_certificate,
                                spectral_radius, stability_margin)
from theory.stability import normal_critical_gates, scalar_critical_gates
from verify.checks import run_check

pytestmark = pytest.mark.claim("D7")


def test_gate_inside_the_margin_keeps_the_looped_layer_contractive(claim):
    result = claim.main(run_check("D7", {}, seed=0))
    f, tol = result.figures, result.tolerance
    assert result.hypotheses_hold and f["spectral_radius_J"] < 1
    # the margin by two independent methods, and a dense grid never below it
    assert f["margin_methods_abs_gap"] / tol["margin_methods_abs"] <= 1.0
    assert f["margin"] <= f["margin_dense_grid"] + 1e-12
    assert f["margin"] <= f["one_minus_rho"] + 1e-12
    # linear statement
    assert f["max_rho_inside_margin"] < 1.0
    assert f["critical_gate_plus"] >= f["bound_m_over_normG"]
    assert f["critical_gate_minus"] >= f["bound_m_over_normG"]
    assert np.isfinite(f["critical_gate"])  # the instance (slow_mask="full") has a finite g_c
    # nonlinear: converges to X* = 0 below g_c (both signs), loses it above (1.5 g_c)
    nl = f["nonlinear"]
    for sign in ("plus", "minus"):
        assert nl[f"below_{sign}"]["converged_to_reference"], nl
        assert nl[f"below_{sign}"]["distance_to_reference"] / tol["fixed_point_distance"] < 1.0
        assert not nl[f"above_{sign}"]["converged_to_reference"], nl
        assert nl[f"above_{sign}"]["rho"] > 1.0
    assert result.holds, result.summary()
    claim.figure("margin", f["margin"])
    claim.figure("critical_gates", [f["critical_gate_minus"], f["critical_gate_plus"]])
    claim.figure("bound_m_over_normG", f["bound_m_over_normG"])
    claim.note("instance: E = 0, norm off, γ = 1, h = 0.5, slow_mask='full': X* = 0 is a fixed point "
               "for every g and its Jacobian is exactly J + gG; above 1.5·g_c the iteration "
               f"{nl['above_plus']['status']} (+) / {nl['above_minus']['status']} (−)")


def test_causal_fast_mask_and_embedding_reference(claim):
    for params in ({"mask": "causal"}, {"reference": "embedding", "norm": True}):
        result = run_check("D7", params, seed=1)
        f = result.figures
        assert result.hypotheses_hold
        assert f["max_rho_inside_margin"] < 1.0
        assert min(f["critical_gate_plus"], f["critical_gate_minus"]) >= f["bound_m_over_normG"]
        assert result.holds, result.summary()


def test_autoregressive_slow_path_leaves_the_spectrum_unchanged(claim):
    """Finding: with slow_mask='blockcausal' J + gG is block lower-triangular with g-independent
    diagonal blocks, so ρ(J + gG) = ρ(J) for every g and g_c = ∞ (the bound holds vacuously)."""
    for params in ({"slow_mask": "blockcausal"},
                   {"slow_mask": "blockcausal", "mask": "causal"},
                   {"slow_mask": "blockcausal", "reference": "embedding", "norm": True}):
        result = run_check("D7", params, seed=0)
        f = result.figures
        assert result.holds and result.hypotheses_hold
        assert f["critical_gate_plus"] == float("inf") == f["critical_gate_minus"]
        # only rounding moves ρ (Jordan blocks of repeated eigenvalues: ~√eps sensitivity)
        assert f["rho_variation_over_wide_gates"] < 1e-6, f["rho_variation_over_wide_gates"]
    claim.figure("blockcausal_rho_variation_over_gates", f["rho_variation_over_wide_gates"])
    claim.note("finding: with the autoregressive slow path (blockcausal, U_c shift) the linearised "
               "gated loop is block-triangular in token order: ρ(J + gG) = ρ(J) for every g, so "
               "g_c = ∞ and the margin bound is vacuous; a finite g_c needs v1's slow_mask='full'")


def test_negative_control_additive_injection_is_not_contractive(claim):
    result = claim.negative(run_check("D7", {"gamma": 0.0}, seed=0))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    assert f["spectral_radius_J"] >= 1.0
    # the conclusion fails measurably inside the would-be margin, and the loop does not converge
    assert f["max_rho_inside_margin"] >= 1.0 + 1e-3
    assert f["critical_gate"] == 0.0 < f["bound_m_over_normG"]
    assert not f["nonlinear"]["zero_gate"]["converged_to_reference"]


def test_scalar_case_is_tight_against_the_closed_form(claim):
    _, _, _, _, f = scalar_critical_gates()
    worst = 0.0
    for a in (0.0, 0.25, 0.5, 0.9):
        J, G = a * np.eye(4), np.eye(4)
        gp, gm, bound = f(a)
        m = stability_margin(J)
        assert abs(m - (1 - a)) < 1e-12
        worst = max(worst, abs(critical_gate(J, G) - gp), abs(critical_gate(J, G, sign=-1) - gm),
                    abs(critical_gate(J, G) - m / np.linalg.norm(G, 2)))
    assert worst < 1e-10
    claim.figure("scalar_case_max_abs_error_vs_sympy", worst)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 8), rho=st.floats(0.05, 0.97),
       normal=st.booleans())
def test_margin_bound_for_random_contractive_maps(seed, n, rho, normal):
    rng = np.random.default_rng(seed)
    if normal:  # real normal J: orthogonal similarity of a block-diagonal rotation-scaling
        lam = rng.uniform(0, rho, n) * np.exp(1j * rng.uniform(0, np.pi, n))
        Qo, _ = np.linalg.qr(rng.standard_normal((n, n)))
        J = (Qo @ np.diag(lam) @ Qo.T)
    else:
        A = rng.standard_normal((n, n))
        J = rho * A / spectral_radius(A)
    G = rng.standard_normal((n, n))
    m = stability_margin(J)
    cert = margin_certificate(J)
    assert abs(m - cert.margin) < 1e-8
    bound = m / np.linalg.norm(G, 2)
    gates = np.concatenate([[-0.999, 0.999], rng.uniform(-0.999, 0.999, 6)]) * bound
    assert gate_spectral_radii(J, G, gates).max() < 1.0
    assert critical_gate(J, G) >= bound * (1 - 1e-9)
    assert critical_gate(J, G, sign=-1) >= bound * (1 - 1e-9)
    if normal:
        assert abs(m - (1 - spectral_radius(J))) < 1e-9
        gp, gm, _ = normal_critical_gates().numeric(np.abs(lam), np.angle(lam))
        assert abs(critical_gate(J, np.eye(n)) - gp.min()) < 1e-9


_MODEL_EXAMPLES = 6 if settings.default.max_examples <= 25 else 60


@settings(max_examples=_MODEL_EXAMPLES)
@given(seed=st.integers(0, 2**16), mask=st.sampled_from(["causal", "block_bidirectional"]),
       d=st.integers(1, 3), P=st.integers(1, 3), N=st.integers(2, 3))
def test_model_instances(seed, mask, d, P, N):
    result = run_check("D7", {"T": N * P, "P": P, "d": d, "mask": mask}, seed=seed)
    f = result.figures
    assume(result.hypotheses_hold)  # a few random draws are not contractive (ρ(J) ≥ 1)
    assert result.holds, result.summary()
    assert f["max_rho_inside_margin"] < 1.0
    assert min(f["critical_gate_plus"], f["critical_gate_minus"]) >= f["bound_m_over_normG"]


def test_seed_sweep(claim, thorough, check_sweep):
    """Several seeds and both contractive fast masks (many more under --thorough)."""
    seeds = range(12) if thorough else range(2)
    ratios = []
    points = [dict(claim="D7", seed=s, mask=m) for s in seeds for m in ("causal", "block_bidirectional")]
    for result in check_sweep(points):
        f = result.figures
        if not result.hypotheses_hold:
            continue
        assert result.holds, result.summary()
        ratios.append(f["critical_gate"] / f["bound_m_over_normG"])
    assert ratios and min(ratios) >= 1.0
    claim.figure("gc_over_bound_range_seed_sweep", [min(ratios), max(ratios)])
