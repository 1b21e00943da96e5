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


@pytest.mark.parametrize(
    "mask,P,d",
    [
        ("block_bidirectional", 2, 2),
        ("block_bidirectional", 3, 1),
        ("block_causal", 2, 2),
        ("block_causal", 3, 1),
    ],
)
def test_h1_is_the_injection_projected_off_the_persistent_bundle(mask, P, d):
    """H₁ = γ(I − K + Π)⁻¹(I − Π)E; for block_bidirectional this is γ(I − UB)E."""
    sm = slow_manifold(mask, P, d)
    E, g = sm.symbols["E"], sm.symbols["gamma"]
    K, L = frozen_kernel_matrix(mask, P), coarse_vector(mask, P)
    Pi = sp.ones(P, 1) * L.T
    expected = g * (sp.eye(P) - K + Pi).inv() * (sp.eye(P) - Pi) * E
    assert (sm.H1 - expected).applyfunc(sp.expand) == sp.zeros(P, d)
    assert (L.T * sm.H1).applyfunc(sp.expand) == sp.zeros(1, d)  # H₁ ∈ E_d
    if mask == "block_bidirectional":
        assert (sm.H1 - g * (sp.eye(P) - Pi) * E).applyfunc(sp.expand) == sp.zeros(P, d)


def test_leading_reduced_flow_is_the_coarse_projection_of_r():
    sm = slow_manifold("block_bidirectional", 2, 2)
    s = sm.symbols
    y, E, W1, W2, g = s["y"], s["E"], s["W1"], s["W2"], s["gamma"]
    expected = (sp.ones(1, 2) / 2) * (g * (E - sp.ones(2, 1) * y)) + (y * W1).applyfunc(
        sp.tanh
    ) * W2
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
    subs = {
        **dict(zip(s["y"], y)),
        **dict(zip(s["E"], E.ravel())),
        **dict(zip(s["Q"], Q.ravel())),
        **dict(zip(s["K"], K.ravel())),
        **dict(zip(s["W1"], W1.ravel())),
        **dict(zip(s["W2"], W2.ravel())),
        s["beta"]: 0.7,
        s["gamma"]: 1.3,
    }
    for expr, fn in (
        (sm.H1, sm.H1_fn),
        (sm.curvature, sm.curvature_fn),
        (sm.reduced1, sm.reduced1_fn),
    ):
        got = fn(y, E, Q, K, W1, W2, 0.7, 1.3)
        val = np.array(expr.evalf(30, subs=subs).tolist(), dtype=float).reshape(got.shape)
        assert np.allclose(fn(y, E, Q, K, W1, W2, 0.7, 1.3), val, rtol=1e-12, atol=1e-14)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="mask"):
        slow_manifold("causal", 2, 2)
    with pytest.raises(ValueError, match="P"):
        slow_manifold("block_causal", 9, 2)


# ---------------------------------------------------------------------------------------------
# block_reduction / reduced_rhs (the reduced flows F1 integrates) against the numerical formulas
# of numerics: H₁ by the linear solve, the curvature by central differences of attention_kernel.

import numerics as nm  # noqa: E402
from numerics.model.masks import coarse_maps, frozen_kernel  # noqa: E402
from theory.slow_manifold import block_reduction, reduced_rhs  # noqa: E402

# every P ∈ {2, 3, 4} and d ∈ {1, 2, 3} occurs, including the F1 default (3, 2) and hold-out (4, 3)
SIZES = [(2, 1), (3, 2), (4, 1), (4, 3)]


class _Numeric:
    """The numerical reduced fields of verify/checks/f1.py (Instance.R, H1, curvature, reduced)."""

    def __init__(self, mask, P, d, norm, seed, N=2, L=2, m=None):
        self.cfg = nm.ModelConfig(T=N * P, P=P, d=d, m=m, mask=mask, gamma=0.8, norm=norm)
        rng = np.random.default_rng(seed)
        self.model = nm.init_model(self.cfg, L, rng.integers(2**32), scale=1.5, gate=0.7)
        T = self.cfg.T
        self.E = rng.standard_normal((T, d))
        self.Y = rng.standard_normal((N, d))
        self.U = np.kron(np.eye(N), np.ones((P, 1)))
        self.Lt = coarse_maps(mask, T, P)[1].T
        self.Pi = self.U @ self.Lt
        self.Hsolve = np.linalg.inv(np.eye(T) - frozen_kernel(mask, T, P) + self.Pi)

    def slow(self, l, X):
        lp = self.model.layers[l]
        return lp.g * nm.slow_path(self.cfg, lp, X)

    def R(self, l, X):
        lp = self.model.layers[l]
        return nm.mlp(self.cfg, lp, X) + self.cfg.gamma * (self.E - X) + self.slow(l, X)

    def H1(self, l, Y):
        R = self.R(l, self.U @ Y)
        return self.Hsolve @ (R - self.Pi @ R)

    def DA(self, l, X, H, h=1e-5):
        s = h / np.linalg.norm(H)
        lp = self.model.layers[l]
        return (
            nm.attention_kernel(self.cfg, lp, X + s * H)
            - nm.attention_kernel(self.cfg, lp, X - s * H)
        ) / (2 * s)

    def f(self, order, l, Y, eps):
        if order == 0:
            return self.Lt @ self.R(l, self.U @ Y)
        H = self.H1(l, Y)
        X = self.U @ Y
        return self.Lt @ (self.R(l, X + eps * H) + eps * self.DA(l, X, H) @ H)

    def theory(self, order):
        c = self.cfg
        layers = [(lp.Q, lp.K, lp.W1, lp.W2) for lp in self.model.layers]
        return reduced_rhs(
            order,
            c.mask,
            c.P,
            c.d,
            c.norm,
            layers,
            self.E,
            c.score_scale,
            c.gamma,
            self.slow,
            norm_eps=c.norm_eps,
            m=c.m,
        )


def _rel(a, b):
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("norm", [False, True], ids=["norm_off", "norm_on"])
@pytest.mark.parametrize("mask", ["block_bidirectional", "block_causal"])
@pytest.mark.parametrize("P,d", SIZES)
def test_reduced_rhs_matches_the_numerical_formulas(mask, P, d, norm):
    num = _Numeric(mask, P, d, norm, seed=[P, d, norm, len(mask)])
    red = block_reduction(mask, P, d, norm)
    assert red.scores_row_constant and red.softmax_rows_annihilate_ones
    assert red.normal_jacobian == sp.kronecker_product(red.kernel - sp.eye(P), sp.eye(d))
    assert np.array_equal(np.array(red.kernel.tolist(), dtype=float), frozen_kernel(mask, P, P))
    f0, f1 = num.theory(0), num.theory(1)
    eps = 0.3  # large enough that ε·curvature is visible
    for l in range(num.model.L):
        Y = num.Y + 0.5 * l
        assert _rel(f1.H1(l, Y), num.H1(l, Y)) < 1e-10
        assert _rel(f0(l, Y), num.f(0, l, Y, 0.0)) < 1e-10
        assert _rel(f1(l, Y, eps), num.f(1, l, Y, eps)) < 1e-6
        # the curvature term alone, block by block (it vanishes identically for block_causal)
        H = num.H1(l, Y)
        curv_num = num.Lt @ num.DA(l, num.U @ Y, H) @ H
        lp = num.model.layers[l]
        curv_sym = np.array(
            [
                red.curvature_fn(
                    Y[b],
                    num.E[b * P : (b + 1) * P],
                    lp.Q,
                    lp.K,
                    lp.W1,
                    lp.W2,
                    num.cfg.score_scale,
                    num.cfg.gamma,
                    num.cfg.norm_eps,
                )
                for b in range(num.cfg.N)
            ]
        )
        if mask == "block_causal":
            assert red.curvature == sp.zeros(1, d)
            assert np.abs(curv_num).max() < 1e-8
        elif norm and d == 1:  # n(x) ≈ sign(x): the scores barely move, curvature ≈ 0
            assert np.abs(curv_sym - curv_num).max() < 1e-8
        else:
            assert np.abs(curv_sym).max() > 1e-3
            assert _rel(curv_sym, curv_num) < 1e-6


def test_reduced_rhs_with_a_wide_mlp_and_no_slow_path():
    num = _Numeric("block_bidirectional", 3, 2, True, seed=7, m=3)
    c = num.cfg
    layers = [{"Q": lp.Q, "K": lp.K, "W1": lp.W1, "W2": lp.W2} for lp in num.model.layers]
    f1 = reduced_rhs(1, c.mask, c.P, c.d, c.norm, layers, num.E, c.score_scale, c.gamma, m=3)
    num.slow = lambda l, X: np.zeros_like(X)
    assert _rel(f1(1, num.Y, 0.1), num.f(1, 1, num.Y, 0.1)) < 1e-6


def test_block_reduction_h1_is_the_closed_form_and_derivation_is_cached():
    """H₁ = γ(I − K + Π)⁻¹(I − Π)E: no weight, no y and no norm survive (with the norm on)."""
    red = block_reduction("block_bidirectional", 4, 3, True)
    assert red is block_reduction("block_bidirectional", 4, 3, True)
    s = red.symbols
    assert red.H1.free_symbols == set(s["E"]) | {s["gamma"]}
    Pi = sp.ones(4, 1) * coarse_vector("block_bidirectional", 4).T
    assert (red.H1 - s["gamma"] * (sp.eye(4) - Pi) * s["E"]).applyfunc(sp.expand) == sp.zeros(4, 3)
    assert red.derive_seconds < 30 and red.lambdify_seconds < 30


def test_reduced_rhs_invalid_arguments():
    with pytest.raises(ValueError, match="order"):
        reduced_rhs(2, "block_causal", 2, 1, False, [], np.zeros((4, 1)), 1.0, 1.0)
    with pytest.raises(ValueError, match="mask"):
        block_reduction("causal", 2, 1, False)
    with pytest.raises(ValueError, match="E must have shape"):
        reduced_rhs(0, "block_causal", 2, 1, False, [], np.zeros((3, 1)), 1.0, 1.0)
