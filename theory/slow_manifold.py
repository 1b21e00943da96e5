"""The slow manifold of the depth flow with a block-local mask, to first order in ε (claim F1).

For one block of ``P`` tokens (block-local masks decouple the blocks; the slow path gives block 0
nothing), ``X ∈ R^{P×d}`` and

    ε dX/dt = G(X) := (A(X) − I)X + ε R(X),    R(X) = γ(E − X) + tanh(n(X) W1) W2,

with ``A(X) = softmax_mask(β n(X)Q (n(X)K)ᵀ)`` (``n`` the RMS norm or the identity). Everything is
derived from these formulas with SymPy, without using the answer:

(a) *critical manifold*: ``(A(X) − I)X`` vanishes on ``X = 1yᵀ`` (every row of scores is constant,
    so ``A = K_mask``), and row ``i`` equals ``Σ_j A_ij (X_j − X_i)``;
(b) *normal attraction*: the Jacobian of ``vec (A(X) − I)X`` at ``X = 1yᵀ`` (computed by
    differentiating the softmax symbolically) equals ``(K_mask − I) ⊗ I_d``, so the normal rate is
    ``1 − λ₂(K_mask)`` (times ``1/ε``);
(c) *first-order slow manifold*: substitute ``X = 1yᵀ + εH`` with ``LᵀH = 0`` (``Y = LᵀX`` the coarse
    variable, ``L`` the left eigenvector of ``K_mask``: the block mean for ``block_bidirectional``, the
    first token for ``block_causal``), expand ``G`` in ``ε`` (SymPy derivatives at ε = 0), and solve
    the invariance equation ``(I − Π)G₁ = 0`` (``Π = 1Lᵀ``) for ``H = H₁``;
(d) *reduced flow*: ``dy/dt = LᵀG₁ + ε LᵀG₂ + O(ε²)`` at ``H = H₁``; the part of ``LᵀG₂`` that comes
    from the attention, ``Lᵀ DA_{1yᵀ}[H₁] H₁``, is the *attention-curvature* term, the first place
    where ``Q, K`` enter.

Caveats: one block, no slow path (it is block-constant on the manifold and enters ``R`` only through
block-constant terms); ``P, d`` small (the expressions grow fast: P ≤ 3, d ≤ 2 take seconds).
``theory`` does not import ``numerics``: verify/ compares the two.

For the sizes F1 integrates (P ≤ 4, d ≤ 3, the norm on or off) use :func:`block_reduction` (the same
derivation restricted to what the reduced flows need, kept in generic entries and lambdified with
``cse=True``; about a second per configuration) and :func:`reduced_rhs`, which assembles the
order-0 and order-1 reduced right-hand sides of a whole model (N blocks, L piecewise-constant layers)
from it; the slow path, which couples the blocks, is the one numeric input (a callable).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

MASKS = ("block_bidirectional", "block_causal")

__all__ = ["MASKS", "SlowManifold", "slow_manifold", "frozen_kernel_matrix", "coarse_vector"]


def frozen_kernel_matrix(mask: str, P: int) -> sp.Matrix:
    """``K_mask`` for one block (exact rationals)."""
    if mask == "block_bidirectional":
        return sp.Matrix(P, P, lambda i, j: sp.Rational(1, P))
    if mask == "block_causal":
        return sp.Matrix(P, P, lambda i, j: sp.Rational(1, i + 1) if j <= i else 0)
    raise ValueError(f"unknown mask {mask!r}; expected one of {list(MASKS)}")


def coarse_vector(mask: str, P: int) -> sp.Matrix:
    """``L`` (P×1): the left eigenvector of ``K_mask`` for eigenvalue 1 with ``Lᵀ1 = 1``."""
    if mask == "block_bidirectional":
        return sp.Matrix([sp.Rational(1, P)] * P)
    if mask == "block_causal":
        return sp.Matrix([1] + [0] * (P - 1))
    raise ValueError(f"unknown mask {mask!r}; expected one of {list(MASKS)}")


def _rms(row: sp.Matrix, norm_eps) -> sp.Matrix:
    d = row.shape[1]
    return row / sp.sqrt(sum(x**2 for x in row) / d + norm_eps)


@dataclass
class SlowManifold:
    """The symbolic results of :func:`slow_manifold` and their numeric versions.

    Symbols: ``y`` (d), ``E`` (P×d), ``Q, K, W1, W2`` (d×d), ``beta``, ``gamma``, ``eps``.
    ``args`` is the argument order of every numeric function: ``(y, E, Q, K, W1, W2, beta,
    gamma)`` as NumPy arrays and floats.
    """

    mask: str
    P: int
    d: int
    norm: bool
    kernel: sp.Matrix  # K_mask (P×P)
    coarse: sp.Matrix  # L (P×1)
    critical_residual: sp.Matrix  # (A(1yᵀ) − I)1yᵀ, simplified (must be 0)
    normal_jacobian: sp.Matrix  # ∂vec((A(X) − I)X)/∂vec X at X = 1yᵀ, simplified
    normal_rate: sp.Expr  # 1 − λ₂ (rate × ε)
    H1: sp.Matrix  # first-order slow manifold, P×d
    reduced0: sp.Matrix  # LᵀR(1yᵀ), 1×d
    reduced1: sp.Matrix  # LᵀG₂ at H₁: the O(ε) coefficient of dy/dt, 1×d
    curvature: sp.Matrix  # Lᵀ DA[H₁] H₁, 1×d
    symbols: dict
    H1_fn: object = None
    reduced0_fn: object = None
    reduced1_fn: object = None
    curvature_fn: object = None


@cache
def slow_manifold(
    mask: str = "block_bidirectional", P: int = 2, d: int = 2, norm: bool = False
) -> SlowManifold:
    """Derive (a)–(d) of the module docstring for one block of ``P`` tokens of width ``d``."""
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}; expected one of {list(MASKS)}")
    if not (isinstance(P, int) and 1 <= P <= 4 and isinstance(d, int) and 1 <= d <= 3):
        raise ValueError(f"need integers 1 ≤ P ≤ 4 and 1 ≤ d ≤ 3 (symbolic cost), got P={P}, d={d}")
    eps, beta, gamma = sp.symbols("epsilon beta gamma", positive=True)
    norm_eps = sp.Rational(1, 10**6)
    y = sp.Matrix(1, d, sp.symbols(f"y0:{d}", real=True))
    E = sp.Matrix(P, d, sp.symbols(f"E0:{P * d}", real=True))
    Q = sp.Matrix(d, d, sp.symbols(f"Q0:{d * d}", real=True))
    Kw = sp.Matrix(d, d, sp.symbols(f"K0:{d * d}", real=True))
    W1 = sp.Matrix(d, d, sp.symbols(f"W1_0:{d * d}", real=True))
    W2 = sp.Matrix(d, d, sp.symbols(f"W2_0:{d * d}", real=True))
    Hs = sp.Matrix(P, d, sp.symbols(f"H0:{P * d}", real=True))
    Xs = sp.Matrix(P, d, sp.symbols(f"X0:{P * d}", real=True))
    Kmat = frozen_kernel_matrix(mask, P)
    Lv = coarse_vector(mask, P)
    ones = sp.ones(P, 1)
    Pi = ones * Lv.T
    allowed = [[j for j in range(P) if Kmat[i, j] != 0] for i in range(P)]

    def normed(X):
        if not norm:
            return X
        return sp.Matrix.vstack(*[_rms(X[i, :], norm_eps) for i in range(X.shape[0])])

    def scores(X):
        Xn = normed(X)
        return beta * (Xn * Q) * (Xn * Kw).T

    # The softmax as a function of score symbols s_ij, and its first two derivatives at equal
    # scores within each row (softmax is shift-invariant, so s = 0 represents every such point).
    ssym = sp.Matrix(P, P, lambda i, j: sp.Symbol(f"s_{i}_{j}", real=True))
    Asym = sp.zeros(P, P)
    for i in range(P):
        Z = sum(sp.exp(ssym[i, j]) for j in allowed[i])
        for j in allowed[i]:
            Asym[i, j] = sp.exp(ssym[i, j]) / Z
    at0 = {ssym[i, j]: 0 for i in range(P) for j in range(P)}
    svars = [ssym[i, j] for i in range(P) for j in allowed[i]]
    dA = {v: Asym.diff(v).subs(at0) for v in svars}
    d2A = {(v, w): Asym.diff(v, w).subs(at0) for v in svars for w in svars}
    A0 = Asym.subs(at0)

    def index(v):
        return tuple(int(k) for k in v.name.split("_")[1:])

    def A_taylor(S1, S2):
        """First two Taylor coefficients of A(X(ε)) from those of the scores S(X(ε))."""
        A1 = sp.zeros(P, P)
        A2 = sp.zeros(P, P)
        for v in svars:
            A1 += dA[v] * S1[index(v)]
            A2 += dA[v] * S2[index(v)]
            for w in svars:
                A2 += d2A[(v, w)] * S1[index(v)] * S1[index(w)] / 2
        return A1, A2

    def R(X):
        Z = (normed(X) * W1).applyfunc(sp.tanh)
        return gamma * (E - X) + Z * W2

    # (a) critical manifold: the kernel on X = 1yᵀ from the softmax of the actual scores
    Xm = ones * y
    Sm = scores(Xm)
    Am = sp.zeros(P, P)
    for i in range(P):
        shifted = {j: sp.exp(sp.expand(Sm[i, j] - Sm[i, allowed[i][0]])) for j in allowed[i]}
        Z = sum(shifted.values())
        for j in allowed[i]:
            Am[i, j] = shifted[j] / Z
    crit = ((Am - sp.eye(P)) * Xm).applyfunc(sp.expand)

    # (b) normal Jacobian at the manifold: J[:, k] = vec((A0 − I)e_k + DA[e_k] 1yᵀ)
    Sx = scores(Xs)
    on = dict(zip(list(Xs), list(Xm)))
    cols = []
    for k, xk in enumerate(list(Xs)):
        S1 = Sx.diff(xk).subs(on)
        A1, _ = A_taylor(S1, sp.zeros(P, P))
        ek = sp.zeros(P, d)
        ek[k // d, k % d] = 1
        cols.append(((A0 - sp.eye(P)) * ek + A1 * Xm).reshape(P * d, 1))
    Jn = sp.Matrix.hstack(*cols).applyfunc(sp.cancel)
    lam = sorted(set(Kmat.eigenvals()), reverse=True)
    rate = 1 - (lam[1] if len(lam) > 1 else 0)

    # (c) G(X(ε)) = (A(X) − I)X + εR(X), X = 1yᵀ + εH:  G = εG₁ + ε²G₂ + O(ε³)
    Xe = Xm + eps * Hs
    Se = scores(Xe)
    S1 = Se.diff(eps).subs(eps, 0)
    S2 = Se.diff(eps, 2).subs(eps, 0) / 2
    A1, A2 = A_taylor(S1, S2)
    Re = R(Xe)
    R0 = Re.subs(eps, 0)
    R1 = Re.diff(eps).subs(eps, 0)
    G0 = (A0 - sp.eye(P)) * Xm
    assert all(sp.expand(g) == 0 for g in G0)
    G1 = A1 * Xm + (A0 - sp.eye(P)) * Hs + R0
    G2 = A2 * Xm + A1 * Hs + R1
    eqs = list((sp.eye(P) - Pi) * G1) + list(Lv.T * Hs)
    eqs = [sp.expand(e) for e in eqs]
    Amat, bvec = sp.linear_eq_to_matrix(eqs, list(Hs))
    Amat = Amat.applyfunc(sp.cancel)
    if Amat.rank() != P * d:
        raise ArithmeticError("the O(ε) invariance equation does not determine H₁ uniquely")
    hvec = (Amat.T * Amat).LUsolve(Amat.T * bvec)  # consistent overdetermined system
    sol = dict(zip(list(Hs), [sp.expand(h) for h in hvec]))
    H1 = Hs.subs(sol)
    resid = ((sp.eye(P) - Pi) * G1).subs(sol).applyfunc(sp.expand)
    if any(r != 0 for r in resid):
        raise ArithmeticError("H₁ does not solve the invariance equation")

    # (d) reduced flow to O(ε)
    red0 = (Lv.T * G1).subs(sol).applyfunc(sp.expand)
    red1 = (Lv.T * G2).subs(sol)
    curv = Lv.T * A1.subs(sol) * H1

    syms = {
        "y": y,
        "E": E,
        "Q": Q,
        "K": Kw,
        "W1": W1,
        "W2": W2,
        "beta": beta,
        "gamma": gamma,
        "eps": eps,
    }
    out = SlowManifold(mask, P, d, norm, Kmat, Lv, crit, Jn, rate, H1, red0, red1, curv, syms)
    args = [list(y), list(E), list(Q), list(Kw), list(W1), list(W2), beta, gamma]
    out.H1_fn = _numeric(args, H1, (P, d))
    out.reduced0_fn = _numeric(args, red0, (d,))
    out.reduced1_fn = _numeric(args, red1, (d,))
    out.curvature_fn = _numeric(args, curv, (d,))
    return out


def _numeric(args, expr: sp.Matrix, shape):
    """``lambdify(..., cse=True)`` wrapper taking arrays (flattened row-major) and returning ``shape``."""

    f = sp.lambdify(args, list(expr), modules="numpy", cse=True)

    def fn(y, E, Q, K, W1, W2, beta, gamma):
        vals = f(
            np.ravel(y),
            np.ravel(E),
            np.ravel(Q),
            np.ravel(K),
            np.ravel(W1),
            np.ravel(W2),
            float(beta),
            float(gamma),
        )
        return np.asarray(vals, dtype=float).reshape(shape)

    return fn


# ============================================================================ the whole-model reduction
#
# ``slow_manifold`` above expands everything to O(ε²) and simplifies; that is exact but its cost
# explodes beyond P·d ≈ 6 and it has no slow path. ``block_reduction`` derives the quantities that the
# F1 reduced flows need, for the sizes F1 integrates (P ≤ 4, d ≤ 3, the norm on or off), from the
# same formulas, keeping the expressions in generic entries (no simplify, no expand of the
# nonlinear parts) and handing them to ``lambdify(..., cse=True)``. ``reduced_rhs`` assembles the
# reduced right-hand sides of a whole model of N blocks and L layers from them.

SIGMA_FUNCS = ("tanh", "identity")


@dataclass
class BlockReduction:
    """Symbolic first-order reduction of one block (see :func:`block_reduction`).

    Symbols: ``y`` (1×d), ``E`` (P×d), ``Q, K`` (d×d), ``W1`` (d×m), ``W2`` (m×d), ``beta``,
    ``gamma``, ``norm_eps`` (the ε inside the RMS norm), ``eps`` (the time-scale ratio ε).

    ``args`` of every numeric function: ``(y, E, Q, K, W1, W2, beta, gamma, norm_eps, eps)``;
    arrays are flattened row-major; ``H1_fn`` and ``f0_fn`` ignore ``eps``.

    What is symbolic: everything *inside* the block (the softmax attention with its mask, the RMS
    norm, the MLP, the injection ``γ(E_b − X_b)``). What is not: the slow path, which couples the
    blocks; it is block-constant (causal up-sampling), so (I − Π) removes it from ``H₁`` exactly,
    and it enters the reduced fields only additively, as ``Lᵀ S(X)`` evaluated by the caller's
    ``slow_term`` at ``X = UY`` (order 0) or ``X = UY + εH₁`` (order 1) in :func:`reduced_rhs`.
    """

    mask: str
    P: int
    d: int
    m: int
    norm: bool
    sigma: str
    kernel: sp.Matrix  # K_mask (P×P), from the softmax at equal scores
    coarse: sp.Matrix  # L (P×1)
    scores_row_constant: bool  # (a): on X = 1yᵀ every row of scores is constant
    softmax_rows_annihilate_ones: bool  # DA[·]·1 = 0: the attention Jacobian term drops on 1yᵀ
    normal_jacobian: sp.Matrix  # ∂vec((A(X) − I)X)/∂vec X at X = 1yᵀ  (P·d × P·d)
    normal_rate: sp.Expr  # 1 − λ₂(K_mask)
    H1: sp.Matrix  # P×d, solves (I − Π)G₁ = 0, LᵀH₁ = 0
    f0: sp.Matrix  # 1×d, Lᵀ R_fast(1yᵀ)
    curvature_placeholders: (
        sp.Matrix
    )  # the curvature in the placeholders H, n0 = n(y), Dn = Dn(y)[H]
    f1_placeholders: sp.Matrix  # f1 in the same placeholders
    placeholders: tuple  # ({n0, Dn: expressions in y, H}, {H: H₁})
    symbols: dict
    derive_seconds: float = 0.0
    lambdify_seconds: float = 0.0
    H1_fn: object = None
    f0_fn: object = None
    curvature_fn: object = None
    f1_fn: object = None
    _flat: dict = None  # name -> lambdified f(*floats) (modules="math")

    def _expand_placeholders(self, expr):
        nsub, hsub = self.placeholders
        return expr.xreplace(nsub).xreplace(hsub)

    @property
    def curvature(self) -> sp.Matrix:
        """1×d, ``Lᵀ DA_{1yᵀ}[H₁] H₁`` in the model symbols (built on demand: large with the norm)."""
        return self._expand_placeholders(self.curvature_placeholders)

    @property
    def f1(self) -> sp.Matrix:
        """1×d, ``Lᵀ R_fast(1yᵀ + εH₁) + ε·curvature`` in the model symbols (built on demand)."""
        return self._expand_placeholders(self.f1_placeholders)


def _flat_args(syms: dict) -> list:
    return (
        list(syms["y"])
        + list(syms["E"])
        + list(syms["Q"])
        + list(syms["K"])
        + list(syms["W1"])
        + list(syms["W2"])
        + [syms["beta"], syms["gamma"], syms["norm_eps"], syms["eps"]]
    )


@cache
def block_reduction(
    mask: str = "block_bidirectional",
    P: int = 3,
    d: int = 2,
    norm: bool = True,
    m: int | None = None,
    sigma: str = "tanh",
) -> BlockReduction:
    """Derive, for one block of ``P`` tokens of width ``d``, the first-order reduction of

        ε dX/dt = (A(X) − I)X + ε R(X),   R(X) = γ(E − X) + σ(n(X) W1) W2   (+ block-constant slow part)

    ``A(X) = softmax_mask(β n(X)Q (n(X)K)ᵀ)``, ``n(x) = x / √(mean(x²) + norm_eps)`` per row (or the
    identity when ``norm`` is False), ``σ`` = tanh or identity. Steps, all in SymPy:

    (a) on ``X = 1yᵀ`` the score rows are constant (checked structurally), so ``A = softmax at equal
        scores = K_mask`` (the kernel is *computed* from the softmax, not assumed);
    (b) the softmax derivatives ``∂A/∂s_ij`` at equal scores annihilate ``1`` (each is checked), so
        the normal Jacobian is ``(A₀ − I) ⊗ I_d``, whatever the score derivatives are;
    (c) ``G₁ = (A₀ − I)H + Σ_ij ∂A/∂s_ij·1yᵀ·S'_ij + R(1yᵀ)``; the middle term is 0 by (b); the
        invariance equation ``(I − Π)G₁ = 0`` with ``LᵀH = 0`` is solved for ``H`` with a *generic*
        right-hand side ``r`` (a rational linear solve), then ``r := R_fast(1yᵀ)``;
    (d) ``f0 = Lᵀ R_fast(1yᵀ)``; the curvature ``Lᵀ DA_{1yᵀ}[H₁]H₁`` with ``DA[H] = Σ ∂A/∂s_ij ·
        d/dε S(1yᵀ + εH)_ij|₀`` (SymPy derivative of the actual score formula, norm included);
        ``f1 = Lᵀ R_fast(1yᵀ + εH₁) + ε·curvature``.

    The results are lambdified with ``cse=True``; timings in ``derive_seconds`` and
    ``lambdify_seconds``. Cached per ``(mask, P, d, norm, m, sigma)``.
    """
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}; expected one of {list(MASKS)}")
    if sigma not in SIGMA_FUNCS:
        raise ValueError(f"unknown sigma {sigma!r}; expected one of {list(SIGMA_FUNCS)}")
    m = d if m is None else m
    for name, val, hi in (("P", P, 8), ("d", d, 6), ("m", m, 12)):
        if not (isinstance(val, int) and 1 <= val <= hi):
            raise ValueError(
                f"need an integer 1 ≤ {name} ≤ {hi} (symbolic cost), got {name}={val!r}"
            )
    if not isinstance(norm, bool):
        raise TypeError(f"norm must be True or False, got {norm!r}")
    t0 = time.process_time()
    eps = sp.Symbol("epsilon", positive=True)
    beta, gamma = sp.symbols("beta gamma", real=True)
    neps = sp.Symbol("norm_eps", positive=True)
    y = sp.Matrix(1, d, sp.symbols(f"y0:{d}", real=True))
    E = sp.Matrix(P, d, sp.symbols(f"E0:{P * d}", real=True))
    Q = sp.Matrix(d, d, sp.symbols(f"Q0:{d * d}", real=True))
    Kw = sp.Matrix(d, d, sp.symbols(f"K0:{d * d}", real=True))
    W1 = sp.Matrix(d, m, sp.symbols(f"W1_0:{d * m}", real=True))
    W2 = sp.Matrix(m, d, sp.symbols(f"W2_0:{m * d}", real=True))
    Hs = sp.Matrix(P, d, sp.symbols(f"H0:{P * d}", real=True))
    rs = sp.Matrix(P, d, sp.symbols(f"r0:{P * d}", real=True))
    Kmask = frozen_kernel_matrix(mask, P)
    Lv = coarse_vector(mask, P)
    ones = sp.ones(P, 1)
    Pi = ones * Lv.T
    I = sp.eye(P)
    allowed = [[j for j in range(P) if Kmask[i, j] != 0] for i in range(P)]

    def nrow(row):
        if not norm:
            return row
        return row / sp.sqrt(sum(x**2 for x in row) / d + neps)

    def normed(X):
        return sp.Matrix.vstack(*[nrow(X[i, :]) for i in range(X.shape[0])])

    def act(Z):
        return Z.applyfunc(sp.tanh) if sigma == "tanh" else Z

    def scores(X):
        Xn = normed(X)
        return beta * (Xn * Q) * (Xn * Kw).T

    def R_fast(X):
        return gamma * E - gamma * X + act(normed(X) * W1) * W2

    Xm = ones * y
    # (a) score rows constant on 1yᵀ (identical expressions; no simplification needed)
    Sm = scores(Xm)
    row_const = all(
        sp.expand(Sm[i, j] - Sm[i, allowed[i][0]]) == 0 for i in range(P) for j in allowed[i]
    )
    if not row_const:
        raise ArithmeticError("scores are not row-constant on the block-constant states")
    # softmax in score symbols and its derivatives at equal scores (shift invariance: s = 0)
    ssym = sp.Matrix(P, P, lambda i, j: sp.Symbol(f"s_{i}_{j}", real=True))
    Asym = sp.zeros(P, P)
    for i in range(P):
        Z = sum(sp.exp(ssym[i, j]) for j in allowed[i])
        for j in allowed[i]:
            Asym[i, j] = sp.exp(ssym[i, j]) / Z
    at0 = {ssym[i, j]: 0 for i in range(P) for j in range(P)}
    svars = [(i, j) for i in range(P) for j in allowed[i]]
    dA = {}
    for i, j in svars:  # row i of A depends only on row i of the scores
        dA[(i, j)] = sp.zeros(P, P)
        dA[(i, j)][i, :] = Asym[i, :].diff(ssym[i, j]).xreplace(at0)
    A0 = Asym.xreplace(at0)
    if A0 != Kmask:
        raise ArithmeticError("the softmax at equal scores is not the frozen kernel")
    # (b) DA[·]·1yᵀ = (dA·1) yᵀ: each dA annihilates 1 (rows of a softmax derivative sum to 0)
    annih = all((dA[ij] * ones) == sp.zeros(P, 1) for ij in svars)
    if not annih:
        raise ArithmeticError("a softmax derivative does not annihilate the constants")
    cols = []
    for k in range(P * d):
        ek = sp.zeros(P, d)
        ek[k // d, k % d] = 1
        cols.append(((A0 - I) * ek).reshape(P * d, 1))  # + Σ dA·1yᵀ·(∂S/∂x_k) = 0 by (b)
    Jn = sp.Matrix.hstack(*cols)
    lam = sorted(set(Kmask.eigenvals()), reverse=True)
    rate = 1 - (lam[1] if len(lam) > 1 else 0)
    # (c) H₁ from the invariance equation with a generic R₀ = r
    G1 = (A0 - I) * Hs + rs
    eqs = [sp.expand(e) for e in list((I - Pi) * G1) + list(Lv.T * Hs)]
    Amat, bvec = sp.linear_eq_to_matrix(eqs, list(Hs))
    if Amat.rank() != P * d:
        raise ArithmeticError("the O(ε) invariance equation does not determine H₁ uniquely")
    hvec = (Amat.T * Amat).LUsolve(Amat.T * bvec).applyfunc(sp.expand)
    Hgen = sp.Matrix(P, d, list(hvec))
    sol = dict(zip(list(Hs), list(hvec)))
    resid = ((I - Pi) * G1).subs(sol).applyfunc(sp.expand)
    if any(e != 0 for e in resid):
        raise ArithmeticError("H₁ does not solve the invariance equation")
    R0 = R_fast(Xm)
    H1 = Hgen.xreplace(dict(zip(list(rs), list(R0)))).applyfunc(
        lambda e: sp.expand(
            e, deep=False, power_base=False, power_exp=False, multinomial=False, log=False
        )
    )
    # (d) reduced fields
    f0 = Lv.T * R0
    # d/dε S(1yᵀ + εH)|₀ by the product rule on S_ij = β (n(x_i)Q)·(n(x_j)K), with the derivative
    # of each normalised row n(y + εh_i) taken by SymPy
    # (n0, Dn: placeholder symbols for n(y) and the rows of Dn, substituted below; they only keep
    # the expression trees small for the common-subexpression pass of lambdify)
    n0 = nrow(y)
    hrow = sp.Matrix(1, d, sp.symbols(f"h0:{d}", real=True))
    Dn_row = sp.diff(nrow(y + eps * hrow), eps).xreplace({eps: 0})  # Dn(y)[h], generic h
    Dn = sp.Matrix.vstack(
        *[Dn_row.xreplace(dict(zip(list(hrow), list(Hs[i, :])))) for i in range(P)]
    )
    n0s = sp.Matrix(1, d, sp.symbols(f"nrm0:{d}", real=True))
    Dns = sp.Matrix(P, d, sp.symbols(f"dnrm0:{P * d}", real=True))
    q0, k0 = n0s * Q, n0s * Kw
    DA = sp.zeros(P, P)
    for i, j in svars:
        S1 = beta * ((Dns[i, :] * Q * k0.T)[0, 0] + (q0 * (Dns[j, :] * Kw).T)[0, 0])
        DA += dA[(i, j)] * S1
    curv_small = Lv.T * DA * Hs
    nsub = {**dict(zip(list(n0s), list(n0))), **dict(zip(list(Dns), list(Dn)))}
    hsub = dict(zip(list(Hs), list(H1)))
    f1_small = Lv.T * R_fast(Xm + eps * Hs) + eps * curv_small
    t1 = time.process_time()

    syms = {
        "y": y,
        "E": E,
        "Q": Q,
        "K": Kw,
        "W1": W1,
        "W2": W2,
        "beta": beta,
        "gamma": gamma,
        "norm_eps": neps,
        "eps": eps,
    }
    out = BlockReduction(
        mask,
        P,
        d,
        m,
        norm,
        sigma,
        Kmask,
        Lv,
        row_const,
        annih,
        Jn,
        rate,
        H1,
        f0,
        curv_small,
        f1_small,
        (nsub, hsub),
        syms,
    )
    args = _flat_args(syms)
    # one lambdify for the order-0 field, and one returning f1, then H₁ (the order-1 hot path needs
    # H₁ for the slow path's argument), then the curvature. f1 and the curvature are lambdified in
    # the placeholder symbols, defined first in stages
    # (H := H₁, then n0 := n(y), Dn := Dn(y)[H]): the same expressions as ``f1``/``curvature``
    # above, without substituting H₁ and the norm derivative into every occurrence (the CSE pass of
    # the substituted trees is several times slower at P = 4, d = 3 with the norm)
    stages = [(list(Hs), list(H1)), (list(n0s) + list(Dns), list(n0) + list(Dn))]
    flat = {
        "f0": sp.lambdify(args, list(f0), modules="math", cse=True),
        "f1_H1_curv": sp.lambdify(
            args,
            list(f1_small) + list(Hs) + list(curv_small),
            modules="math",
            cse=lambda ex: _staged_cse(stages, ex),
        ),
    }
    out._flat = flat
    out.lambdify_seconds = time.process_time() - t1
    out.derive_seconds = t1 - t0
    pick = {
        "f0": ("f0", slice(0, d), (d,)),
        "f1": ("f1_H1_curv", slice(0, d), (d,)),
        "H1": ("f1_H1_curv", slice(d, d + P * d), (P, d)),
        "curvature": ("f1_H1_curv", slice(d + P * d, 2 * d + P * d), (d,)),
    }

    def wrap(name):
        key, sl, shape = pick[name]
        fn = flat[key]

        def numeric(y, E, Q, K, W1, W2, beta, gamma, norm_eps=1e-6, eps=0.0):
            vals = _pack(y, E, Q, K, W1, W2, beta, gamma, norm_eps, eps)
            return np.asarray(fn(*vals)[sl], dtype=float).reshape(shape)

        numeric.__name__ = f"{name}_fn"
        return numeric

    out.H1_fn, out.f0_fn, out.curvature_fn, out.f1_fn = (
        wrap(n) for n in ("H1", "f0", "curvature", "f1")
    )
    return out


def _staged_cse(stages, exprs):
    """CSE for ``lambdify(cse=...)``: each stage ``(symbols, definitions)`` is reduced and assigned in
    order (a stage may use the symbols of earlier stages), then ``exprs``."""
    repl = []
    for k, (syms, defs) in enumerate(stages):
        r, red = sp.cse(defs, symbols=sp.numbered_symbols(f"xs{k}_"))
        repl += r + list(zip(syms, red))
    r, red = sp.cse(exprs, symbols=sp.numbered_symbols("xf_"))
    return repl + r, red


def _pack(y, E, Q, K, W1, W2, beta, gamma, norm_eps, eps) -> list:
    return (
        [float(v) for v in np.ravel(y)]
        + _weights_flat(E, Q, K, W1, W2)
        + [float(beta), float(gamma), float(norm_eps), float(eps)]
    )


def _weights_flat(*arrays) -> list:
    out = []
    for a in arrays:
        out.extend(float(v) for v in np.ravel(np.asarray(a, dtype=float)))
    return out


# ---------------------------------------------------------------------------- whole model


class ReducedRHS:
    """The reduced right-hand side of order 0 or 1 for a model of ``N`` blocks (see :func:`reduced_rhs`).

    ``f(seg, Y, eps)`` returns ``dY/dt`` (N×d) on layer segment ``seg``; ``H1(seg, Y)`` the
    first-order slow-manifold correction (T×d), so that ``X ≈ UY + εH₁``.
    """

    def __init__(self, order, red: BlockReduction, layers, E, beta, gamma, slow_term, norm_eps):
        self.order, self.red = order, red
        self.P, self.d = red.P, red.d
        self.E = np.asarray(E, dtype=float)
        T = self.E.shape[0]
        if self.E.ndim != 2 or self.E.shape[1] != red.d or T % red.P:
            raise ValueError(f"E must have shape (N·{red.P}, {red.d}), got {self.E.shape}")
        self.N = T // red.P
        self.L = np.array([float(v) for v in red.coarse], dtype=float)  # (P,)
        self.slow_term = slow_term
        tail = [float(beta), float(gamma), float(norm_eps)]
        self._E_flat = [_weights_flat(self.E[b * red.P : (b + 1) * red.P]) for b in range(self.N)]
        self._w_flat = []
        for lw in layers:
            Q, K, W1, W2 = _unpack_layer(lw)
            self._w_flat.append(_weights_flat(Q, K, W1, W2) + tail)

    def _block_field(self, key, seg, Y, eps):
        fn = self.red._flat[key]
        w = self._w_flat[seg]
        return np.array(
            [
                fn(*(list(map(float, Y[b])) + self._E_flat[b] + w + [float(eps)]))
                for b in range(self.N)
            ],
            dtype=float,
        )

    def H1(self, seg: int, Y):
        """``H₁`` (T×d) at ``X = UY`` on segment ``seg``."""
        Y = np.asarray(Y, dtype=float).reshape(self.N, self.d)
        d, P = self.d, self.P
        return self._block_field("f1_H1_curv", seg, Y, 0.0)[:, d : d + P * d].reshape(self.N * P, d)

    def _coarse(self, S):
        """``Lᵀ S`` block by block (S is T×d)."""
        return S.reshape(self.N, self.P, self.d).transpose(0, 2, 1) @ self.L

    def __call__(self, seg: int, Y, eps: float = 0.0):
        Y = np.asarray(Y, dtype=float).reshape(self.N, self.d)
        d, P = self.d, self.P
        if self.order == 0:
            out = self._block_field("f0", seg, Y, 0.0)
            X = np.repeat(Y, P, axis=0)
        else:
            vals = self._block_field("f1_H1_curv", seg, Y, eps)
            out = vals[:, :d].copy()
            X = np.repeat(Y, P, axis=0) + eps * vals[:, d : d + P * d].reshape(self.N * P, d)
        if self.slow_term is not None:
            S = self.slow_term(seg, X)
            if S is not None:
                out = out + self._coarse(np.asarray(S, dtype=float))
        return out


def _unpack_layer(lw):
    if isinstance(lw, dict):
        return lw["Q"], lw["K"], lw["W1"], lw["W2"]
    if hasattr(lw, "Q") and hasattr(lw, "W1"):
        return lw.Q, lw.K, lw.W1, lw.W2
    Q, K, W1, W2 = lw
    return Q, K, W1, W2


def reduced_rhs(
    order: int,
    mask: str,
    P: int,
    d: int,
    norm: bool,
    layer_weights,
    E,
    beta: float,
    gamma: float,
    slow_term=None,
    *,
    norm_eps: float = 1e-6,
    m: int | None = None,
    sigma: str = "tanh",
) -> ReducedRHS:
    """Reduced right-hand side ``f(seg, Y, eps) -> dY/dt`` (N×d) for a whole model.

    Args:
        order: 0 (``dY/dt = Lᵀ R(UY)``) or 1 (``dY/dt = Lᵀ R(UY + εH₁) + ε Lᵀ DA_{UY}[H₁]H₁``).
        mask: ``"block_bidirectional"`` or ``"block_causal"``.
        P, d, norm: block size, width, RMS norm on/off (the derivation's cache key, with ``m``, ``sigma``).
        layer_weights: one entry per layer segment: a dict with keys ``Q, K, W1, W2``, a 4-tuple
            ``(Q, K, W1, W2)`` or any object with those attributes (plain NumPy arrays; Q, K d×d,
            W1 d×m, W2 m×d).
        E: injection target, T×d (T = N·P).
        beta, gamma: score scale and injection strength.
        slow_term: ``None`` or a callable ``slow_term(seg, X) -> (T×d array or None)``: the *gated*
            slow path ``g·Slow(X)`` of the full state ``X``; it is evaluated at ``X = UY`` (order 0)
            or ``X = UY + εH₁`` (order 1, ``H₁`` from the derivation) and enters as ``Lᵀ S`` per block.
        norm_eps: the ε inside the RMS norm (``ModelConfig.norm_eps``).

    Everything inside a block (attention, norm, MLP, injection, H₁, curvature) comes from
    :func:`block_reduction` (SymPy, lambdified with ``cse=True``); only the slow path is numeric.
    """
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order!r}")
    red = block_reduction(mask, P, d, bool(norm), m, sigma)
    return ReducedRHS(order, red, list(layer_weights), E, beta, gamma, slow_term, norm_eps)


__all__ += ["BlockReduction", "block_reduction", "ReducedRHS", "reduced_rhs", "SIGMA_FUNCS"]
