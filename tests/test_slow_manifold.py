"""theory.slow_manifold: the symbolic first-order slow manifold against closed forms (exact)."""

import numpy as np
import pytest
import sympy as sp

from fastslow.numerics.model.weights import SIGMAS
from fastslow.theory.slow_manifold import coarse_vector, frozen_kernel_matrix, slow_manifold


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


@pytest.mark.parametrize("mask", ["block_bidirectional", "block_causal"])
def test_the_full_derivation_agrees_with_the_one_f1_integrates(mask):
    """Two SymPy derivations of the same reduction check each other: :func:`slow_manifold` (the
    softmax Taylor expansion of (a)–(d), all of ``G₂``) and :func:`block_reduction` (the restricted
    derivation behind F1's reduced flows). ``H₁``, the order-0 field and the curvature agree to
    rounding; ``reduced1 = LᵀG₂`` (the O(ε) coefficient of dy/dt) is the ε-derivative of
    ``block_reduction``'s ``f1(ε) = LᵀR(1yᵀ + εH₁) + ε·curvature`` at 0, taken by Richardson
    extrapolation of difference quotients (remainder O(ε²) = 1e-6 at ε = 1e-3; the tolerance 1e-4
    allows a second-derivative coefficient up to 100)."""
    sm = slow_manifold(mask, 2, 2)
    red = block_reduction(mask, 2, 2, False)
    rng = np.random.default_rng(11)
    y, E = rng.standard_normal(2), rng.standard_normal((2, 2))
    Q, K, W1, W2 = (rng.standard_normal((2, 2)) for _ in range(4))
    w = (y, E, Q, K, W1, W2, 0.7, 1.3)
    assert _rel(sm.H1_fn(*w), red.H1_fn(*w, 1e-6)) < 1e-12
    assert _rel(sm.reduced0_fn(*w), red.f0_fn(*w, 1e-6)) < 1e-12
    curv = red.curvature_fn(*w, 1e-6)
    assert np.abs(sm.curvature_fn(*w) - curv).max() < 1e-12 * max(1.0, np.abs(curv).max())
    f0 = red.f0_fn(*w, 1e-6)

    def quotient(eps):
        return (red.f1_fn(*w, 1e-6, eps) - f0) / eps

    eps = 1e-3
    slope = 2 * quotient(eps / 2) - quotient(eps)
    if mask == "block_causal":  # L = e₁ and LᵀH₁ = 0: the first token's field has no O(ε) term
        assert np.abs(slope).max() < 1e-6 and np.abs(sm.reduced1_fn(*w)).max() < 1e-12
    else:
        assert np.abs(sm.reduced1_fn(*w)).max() > 1e-2  # not a vacuous 0 = 0
        assert _rel(sm.reduced1_fn(*w), slope) < 1e-4


def test_the_expanded_f1_is_f0_at_zero_and_its_numeric_function_elsewhere():
    """``BlockReduction.f1``, the order-1 field in the model symbols (the placeholders ``n0``,
    ``Dn``, ``H`` expanded): at ``ε = 0`` it is ``f0`` exactly (``f1(ε) = LᵀR(1yᵀ + εH₁) +
    ε·curvature``), and at a point with ``ε > 0`` it is what ``f1_fn`` (built from the
    placeholders, not from this expansion) computes, where it differs from ``f0``."""
    red = block_reduction("block_bidirectional", 2, 2, False, sigma="identity")
    s = red.symbols
    assert (red.f1.subs(s["eps"], 0) - red.f0).applyfunc(sp.simplify) == sp.zeros(1, 2)
    rng = np.random.default_rng(5)
    y, E = rng.standard_normal(2), rng.standard_normal((2, 2))
    Q, K, W1, W2 = (rng.standard_normal((2, 2)) for _ in range(4))
    values = {
        **dict(zip(s["y"], y)),
        **dict(zip(s["E"], E.ravel())),
        **dict(zip(s["Q"], Q.ravel())),
        **dict(zip(s["K"], K.ravel())),
        **dict(zip(s["W1"], W1.ravel())),
        **dict(zip(s["W2"], W2.ravel())),
        s["beta"]: 0.7,
        s["gamma"]: 1.3,
        s["norm_eps"]: 1e-6,
        s["eps"]: 0.1,
    }
    got = np.array(red.f1.evalf(30, subs=values).tolist(), dtype=float).ravel()
    want = red.f1_fn(y, E, Q, K, W1, W2, 0.7, 1.3, 1e-6, 0.1)
    f0 = red.f0_fn(y, E, Q, K, W1, W2, 0.7, 1.3, 1e-6, 0.1)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-14)
    assert np.abs(got - f0).max() > 1e-3  # not a vacuous f1 = f0


def test_invalid_arguments():
    with pytest.raises(ValueError, match="mask"):
        slow_manifold("causal", 2, 2)
    with pytest.raises(ValueError, match="P"):
        slow_manifold("block_causal", 9, 2)


# ---------------------------------------------------------------------------------------------
# block_reduction / reduced_rhs (the reduced flows F1 integrates) against the numerical formulas
# of numerics: H₁ by the linear solve, the curvature by central differences of attention_kernel.

from fastslow.numerics.model.layer import attention_kernel, mlp, slow_path  # noqa: E402
from fastslow.numerics.model.masks import coarse_maps, frozen_kernel  # noqa: E402
from fastslow.numerics.model.weights import ModelConfig, init_model  # noqa: E402
from fastslow.theory.slow_manifold import block_reduction, reduced_rhs  # noqa: E402

# every P ∈ {2, 3, 4} and d ∈ {1, 2, 3} occurs, including the F1 default (3, 2) and hold-out (4, 3)
SIZES = [(2, 1), (3, 2), (4, 1), (4, 3)]


class _Numeric:
    """The numerical reduced fields of verify/checks/f1/instance.py (Instance.nonstiff_part, H1, curvature, reduced)."""

    def __init__(self, mask, P, d, norm, seed, N=2, L=2, m=None, sigma="tanh"):
        self.cfg = ModelConfig(T=N * P, P=P, d=d, m=m, mask=mask, gamma=0.8, norm=norm, sigma=sigma)
        rng = np.random.default_rng(seed)
        self.model = init_model(self.cfg, L, rng.integers(2**32), scale=1.5, gate=0.7)
        T = self.cfg.T
        self.E = rng.standard_normal((T, d))
        self.Y = rng.standard_normal((N, d))
        self.U = np.kron(np.eye(N), np.ones((P, 1)))
        self.Lt = coarse_maps(mask, T, P)[1].T
        self.Pi = self.U @ self.Lt
        self.Hsolve = np.linalg.inv(np.eye(T) - frozen_kernel(mask, T, P) + self.Pi)

    def slow(self, l, X):
        lp = self.model.layers[l]
        return lp.g * slow_path(self.cfg, lp, X)

    def nonstiff_part(self, l, X):
        lp = self.model.layers[l]
        return mlp(self.cfg, lp, X) + self.cfg.gamma * (self.E - X) + self.slow(l, X)

    def H1(self, l, Y):
        R = self.nonstiff_part(l, self.U @ Y)
        return self.Hsolve @ (R - self.Pi @ R)

    def DA(self, l, X, H, h=1e-5):
        s = h / np.linalg.norm(H)
        lp = self.model.layers[l]
        return (
            attention_kernel(self.cfg, lp, X + s * H) - attention_kernel(self.cfg, lp, X - s * H)
        ) / (2 * s)

    def f(self, order, l, Y, eps):
        if order == 0:
            return self.Lt @ self.nonstiff_part(l, self.U @ Y)
        H = self.H1(l, Y)
        X = self.U @ Y
        return self.Lt @ (self.nonstiff_part(l, X + eps * H) + eps * self.DA(l, X, H) @ H)

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
            sigma=c.sigma,
        )

    def assert_theory_matches(self, eps=0.3):
        """``H₁``, ``f0`` (to 1e-10) and ``f1`` (to 1e-6: the central difference of the curvature)
        of the theory's reduced flows against the numerical formulas on every layer; ``eps`` large
        enough that ε·curvature is visible."""
        f0, f1 = self.theory(0), self.theory(1)
        for l in range(self.model.L):
            Y = self.Y + 0.5 * l
            assert _rel(f1.H1(l, Y), self.H1(l, Y)) < 1e-10
            assert _rel(f0(l, Y), self.f(0, l, Y, 0.0)) < 1e-10
            assert _rel(f1(l, Y, eps), self.f(1, l, Y, eps)) < 1e-6


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
    num.assert_theory_matches()
    for l in range(num.model.L):
        Y = num.Y + 0.5 * l
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
    for E in (np.zeros((4, 2)), np.zeros(4)):  # width ≠ d; not a matrix (T divisible by P)
        with pytest.raises(ValueError, match="E must have shape"):
            reduced_rhs(0, "block_causal", 2, 1, False, [], E, 1.0, 1.0)


# ---------------------------------------------------------------------------------------------
# your own mask: a P×P within-block pattern (or a T×T block-local mask with one per block)

from fastslow.theory.kernels import eigenvalue_one_projector, normal_rate, stationary_weighting  # noqa: E402
from fastslow.theory.kernels import frozen_kernel as exact_kernel  # noqa: E402
from fastslow.theory.slow_manifold import (  # noqa: E402
    block_patterns,
    sigma_is_smooth,
)

MISSING_ENTRY = np.array([[1, 1, 0], [1, 1, 1], [1, 1, 1]], dtype=bool)
"""Token 0 does not attend to token 2: not doubly stochastic, weighting (2/5, 2/5, 1/5), λ₂ = 1/6."""
CHAIN = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=bool)
"""Each token attends to itself and its predecessor: a defective kernel (eigenvalue 1/2 twice, one
eigenvector), weighting (1, 0, 0)."""
LAST_PERSISTS = np.array([[1, 1], [0, 1]], dtype=bool)
"""The reverse of block_causal for P = 2: the last token persists, weighting (0, 1)."""
CYCLE = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], dtype=bool)
"""A circulant kernel: complex eigenvalues ``1/2 + e^{±2πi/3}/2``, rate ``1 − max Re λ = 3/4``."""


def _block_diagonal(*patterns):
    P = patterns[0].shape[0]
    out = np.zeros((P * len(patterns),) * 2, dtype=bool)
    for b, pat in enumerate(patterns):
        out[b * P : (b + 1) * P, b * P : (b + 1) * P] = pat
    return out


@pytest.mark.parametrize(
    "pattern, weighting, rate",
    [
        (
            MISSING_ENTRY,
            [sp.Rational(2, 5), sp.Rational(2, 5), sp.Rational(1, 5)],
            sp.Rational(5, 6),
        ),
        (CHAIN, [1, 0, 0], sp.Rational(1, 2)),
        (LAST_PERSISTS, [0, 1], sp.Rational(1, 2)),
        (CYCLE, [sp.Rational(1, 3)] * 3, sp.Rational(3, 4)),
    ],
    ids=["missing_entry", "chain", "last_persists", "cycle"],
)
def test_a_pattern_has_its_stationary_weighting_projector_and_normal_rate(pattern, weighting, rate):
    K = exact_kernel(pattern)
    P = K.shape[0]
    assert K == sp.Matrix(P, P, lambda i, j: sp.Rational(int(pattern[i, j]), int(pattern[i].sum())))
    L = stationary_weighting(K)
    assert L == sp.Matrix(weighting) and L.T * K == L.T
    Pi = eigenvalue_one_projector(K)
    assert Pi * Pi == Pi and K * Pi == Pi and Pi * K == Pi
    assert sp.simplify(normal_rate(K) - rate) == 0


@pytest.mark.parametrize("pattern", [MISSING_ENTRY, CHAIN], ids=["missing_entry", "chain"])
def test_block_reduction_of_a_pattern_is_the_same_derivation_with_its_own_kernel(pattern):
    """(a), (b) and H₁ = γ(I − K + Π)⁻¹(I − Π)E with the pattern's own K and Π = 1Lᵀ (not the block
    mean); cached by the pattern whatever its container."""
    red = block_reduction(pattern, 3, 2, True)
    assert red is block_reduction(pattern.tolist(), 3, 2, True)
    K, L = exact_kernel(pattern), stationary_weighting(exact_kernel(pattern))
    assert red.kernel == K and red.coarse == L and red.normal_rate == normal_rate(K)
    assert red.scores_row_constant and red.softmax_rows_annihilate_ones
    assert red.normal_jacobian == sp.kronecker_product(K - sp.eye(3), sp.eye(2))
    Pi = sp.ones(3, 1) * L.T
    E, g = red.symbols["E"], red.symbols["gamma"]
    expected = g * (sp.eye(3) - K + Pi).inv() * (sp.eye(3) - Pi) * E
    assert (red.H1 - expected).applyfunc(sp.expand) == sp.zeros(3, 2)


def test_the_exact_slow_manifold_of_a_pattern():
    sm = slow_manifold(LAST_PERSISTS, 2, 2)
    assert all(e == 0 for e in sm.critical_residual)
    assert sm.normal_jacobian == sp.kronecker_product(
        exact_kernel(LAST_PERSISTS) - sp.eye(2), sp.eye(2)
    )
    assert sm.normal_rate == sp.Rational(1, 2) and list(sm.coarse) == [0, 1]
    assert (sm.coarse.T * sm.H1).applyfunc(sp.expand) == sp.zeros(1, 2)


@pytest.mark.parametrize(
    "sigma",
    [
        "tanh",
        pytest.param(
            "gelu",
            marks=pytest.mark.skipif(
                "gelu" not in SIGMAS, reason="the engine has no gelu yet (pluggable nonlinearity)"
            ),
        ),
    ],
)
@pytest.mark.parametrize("norm", [False, True], ids=["norm_off", "norm_on"])
def test_reduced_rhs_with_a_pattern_per_block_matches_the_numerical_formulas(norm, sigma):
    """Blocks with different patterns, each reduced through its own weighting; numerics computes
    the weighting by its own linear solve (``coarse_maps`` of the mask)."""
    mask = _block_diagonal(MISSING_ENTRY, CHAIN)
    num = _Numeric(mask, 3, 2, norm, seed=11, sigma=sigma)
    assert [r.coarse for r in num.theory(1).reds] == [
        stationary_weighting(exact_kernel(MISSING_ENTRY)),
        stationary_weighting(exact_kernel(CHAIN)),
    ]
    num.assert_theory_matches()


def test_patterns_the_derivation_refuses():
    across = _block_diagonal(MISSING_ENTRY, MISSING_ENTRY)
    across[0, 3] = True
    with pytest.raises(ValueError, match="not block-local: token 0 attends to token 3"):
        block_patterns(across, 3, 6)
    with pytest.raises(ValueError, match="closed classes"):
        coarse_vector(np.eye(3, dtype=bool), 3)  # every token alone: three closed classes
    with pytest.raises(ValueError, match="3×3"):
        block_reduction(LAST_PERSISTS, 3, 2)
    with pytest.raises(ValueError, match="rows \\[1\\] are empty"):
        coarse_vector(np.array([[1, 0], [0, 0]], dtype=bool), 2)
    for wrong in (np.ones((4, 4), dtype=bool), np.ones((6, 6), dtype=int)):  # shape; dtype
        with pytest.raises(ValueError, match="a 6×6 boolean array"):
            block_patterns(wrong, 3, 6)


def test_smooth_nonlinearities_are_the_ones_the_derivation_differentiates():
    assert all(sigma_is_smooth(s) for s in ("tanh", "identity", "gelu"))
    assert not sigma_is_smooth("relu") and not sigma_is_smooth(np.tanh)
    with pytest.raises(ValueError, match="relu.*not differentiable"):
        block_reduction("block_causal", 2, 1, False, sigma="relu")


@pytest.mark.parametrize("size", [{"P": 2.0}, {"P": True}, {"d": 1.0}, {"d": np.True_}])
def test_block_sizes_that_are_floats_or_bools_are_refused(size):
    """A size must be an integer (Python's or NumPy's), not a float with an integer value nor a
    bool: each is refused naming both sizes."""
    with pytest.raises(ValueError, match="need integers 1 ≤ P ≤ 4 and 1 ≤ d ≤ 3"):
        slow_manifold("block_bidirectional", **{"P": 2, "d": 1, **size})


@pytest.mark.parametrize("size", [{"P": 9}, {"d": 7}, {"m": 13}, {"P": 0}, {"d": 2.0}, {"m": True}])
def test_block_reduction_refuses_sizes_outside_its_symbolic_budget(size):
    """Each size an integer within its bound (P ≤ 8, d ≤ 6, m ≤ 12; floats and bools refused),
    checked on its own, before any derivation."""
    name, value = next(iter(size.items()))
    with pytest.raises(ValueError, match=f"need an integer 1 ≤ {name} ≤"):
        block_reduction("block_bidirectional", **{"P": 2, "d": 2, "norm": False, **size})
