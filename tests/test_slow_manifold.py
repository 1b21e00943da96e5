"""theory.slow_manifold: the symbolic first-order slow manifold against closed forms (exact)."""

import numpy as np
import pytest
import sympy as sp

from theory.slow_manifold import coarse_vector, frozen_kernel_matrix, slow_manifold


@pytest.mark.parametrize("mask", ["block_bidirectional", "block_causal"])
def test_critical_manifold_and_normal_jacobian(mask):
    sm = slow_manifold(mask, 2, 2)
    assert all(e == 0 for e in sm.critical_residual)
    K = frozen_kernel_matrix(mask, 2)
    assert sm.normal_jacobian == sp.kronecker_product(K - sp.eye(2), sp.eye(2))
    assert sm.normal_rate == (1 if mask == "block_bidirectional" else sp.Rational(1, 2))


@pytest.mark.parametrize("mask,P,d", [("block_bidirectional", 2, 2), ("block_bidirectional", 3, 1),
                                      ("block_causal", 2, 2), ("block_causal", 3, 1)])
def test_h1_is_the_injection_projected_off_the_persistent_bundle(mask, P, d):
    """H₁ = γ(I − K + Π)⁻¹(I − Π)E; for block_bidirectional this is γ(I − UB)E (SPEC)."""
    sm = slow_manifold(mask, P, d)
    E, g = sm.symbols["E"], sm.symbols["gamma"]
    K, L = frozen_kernel_matrix(mask, P), coarse_vector(mask, P)
    Pi = sp.ones(P, 1) * L.T
    expected = g * (sp.eye(P) - K + Pi).inv() * (sp.eye(P) - Pi) * E
    assert (sm.H1 - expected).applyfunc(sp.expand) == sp.zeros(P, d)
    assert (L.T * sm.H1).applyfunc(sp.expand) == sp.zeros(1, d)      # H₁ ∈ E_d
    if mask == "block_bidirectional":
        assert (sm.H1 - g * (sp.eye(P) - Pi) * E).applyfunc(sp.expand) == sp.zeros(P, d)


def test_leading_reduced_flow_is_the_coarse_projection_of_r():
    sm = slow_manifold("block_bidirectional", 2, 2)
    s = sm.symbols
    y, E, W1, W2, g = s["y"], s["E"], s["W1"], s["W2"], s["gamma"]
    expected = (sp.ones(1, 2) / 2) * (g * (E - sp.ones(2, 1) * y)) + (y * W1).applyfunc(sp.tanh) * W2
    assert (sm.reduced0 - expected).applyfunc(sp.expand) == sp.zeros(1, 2)


def test_curvature_term_depends_on_qk_for_bidirectional_and_vanishes_for_block_causal():
    bi = slow_manifold("block_bidirectional", 2, 2)
    Q = bi.symbols["Q"]
    assert any(sym in bi.curvature.free_symbols for sym in Q)
    bc = slow_manifold("block_causal", 2, 2)
    assert bc.curvature.applyfunc(sp.expand) == sp.zeros(1, 2)
    # with γ = 0 there is no H₁ and no curvature
    assert bi.curvature.subs(bi.symbols["gamma"], 0).applyfunc(sp.expand) == sp.zeros(1, 2)


def test_numeric_functions_match_the_expressions():
    sm = slow_manifold("block_bidirectional", 2, 2)
    rng = np.random.default_rng(0)
    y, E = rng.standard_normal(2), rng.standard_normal((2, 2))
    Q, K, W1, W2 = (rng.standard_normal((2, 2)) for _ in range(4))
    s = sm.symbols
    subs = {**dict(zip(s["y"], y)), **dict(zip(s["E"], E.ravel())), **dict(zip(s["Q"], Q.ravel())),
            **dict(zip(s["K"], K.ravel())), **dict(zip(s["W1"], W1.ravel())),
            **dict(zip(s["W2"], W2.ravel())), s["beta"]: 0.7, s["gamma"]: 1.3}
    for expr, fn in ((sm.H1, sm.H1_fn), (sm.curvature, sm.curvature_fn),
                     (sm.reduced1, sm.reduced1_fn)):
        got = fn(y, E, Q, K, W1, W2, 0.7, 1.3)
        val = np.array(expr.evalf(30, subs=subs).tolist(), dtype=float).reshape(got.shape)
        assert np.allclose(fn(y, E, Q, K, W1, W2, 0.7, 1.3), val, rtol=1e-12, atol=1e-14)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="mask"):
        slow_manifold("causal", 2, 2)
    with pytest.raises(ValueError, match="P"):
        slow_manifold("block_causal", 9, 2)
