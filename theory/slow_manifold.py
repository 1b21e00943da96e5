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

**Your own mask.** Wherever a mask is asked for, a P×P boolean *within-block pattern* (the same in
every block) may replace the names of :data:`MASKS`, and :func:`reduced_rhs` also takes a T×T
block-local boolean mask, whose blocks may have different patterns (each distinct pattern is derived
once; :func:`block_patterns` splits the mask). For a pattern the block kernel ``K``, the coarse
vector ``L`` (the stationary weighting: the left eigenvector of the eigenvalue 1 with ``Lᵀ1 = 1``,
which must be simple: one closed class of the pattern's graph), ``Π = 1Lᵀ`` and the normal rate
``1 − max Re λ`` (``λ`` over the other eigenvalues) come exactly from :mod:`theory.kernels`; every
step (a)–(d) is the same derivation, which never assumed ``K`` doubly stochastic or ``L`` a block
mean. ``P, d`` stay small (the derivation is symbolic in every entry of one block); the rest of the
model (the N blocks, the layers, the weights' values) is assembled numerically from the lambdified
expressions.

**The nonlinearity.** :data:`SIGMA_FUNCS` are the MLP nonlinearities the derivation differentiates
symbolically: ``tanh``, ``identity`` and ``gelu`` (its tanh approximation
``½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))``), all analytic. A non-smooth ``σ`` (``relu``: no derivative at 0, listed in :data:`NON_SMOOTH_SIGMAS`) has
no first-order slow manifold in this sense (its expansion needs ``σ'`` and the O(ε²) error ``σ''``);
:func:`sigma_is_smooth` says which is which.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

from .kernels import frozen_kernel, normal_rate, pattern_matrix, stationary_weighting

MASKS = ("block_bidirectional", "block_causal")
"""The named block masks; a P×P boolean within-block pattern may replace them (:func:`block_pattern`)."""

__all__ = [
    "MASKS",
    "SlowManifold",
    "slow_manifold",
    "frozen_kernel_matrix",
    "coarse_vector",
    "block_pattern",
    "block_patterns",
]


def _is_int(value) -> bool:
    """``value`` is an integer of any kind (Python's, NumPy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def block_pattern(mask, P: int):
    """The canonical form of one block's mask: a name of :data:`MASKS` as it is, or a P×P boolean
    within-block pattern as a tuple of tuples of bools (hashable: the derivations' cache key).
    ``ValueError`` (naming what is wrong) for an unknown name or a pattern that is not P×P with
    non-empty rows."""
    if isinstance(mask, str):
        if mask not in MASKS:
            raise ValueError(
                f"unknown mask {mask!r}; expected one of {list(MASKS)} or a P×P boolean pattern"
            )
        return mask
    rows = pattern_matrix(mask)
    if len(rows) != P:
        raise ValueError(f"a within-block pattern must be {P}×{P} (P={P}), got {len(rows)} rows")
    return tuple(tuple(r) for r in rows)


def block_patterns(mask, P: int, T: int) -> list:
    """One :func:`block_pattern` per block of ``P`` tokens of a T-token mask: a name or a P×P
    pattern is the same in every block; a T×T boolean mask must be block-local (``ValueError``
    naming the first entry that attends across blocks) and each diagonal block is its pattern."""
    if isinstance(mask, str) or np.shape(mask) == (P, P):
        return [block_pattern(mask, P)] * (T // P)
    arr = np.asarray(mask)
    if arr.shape != (T, T) or arr.dtype != bool:
        raise ValueError(
            f"mask must be a name, a {P}×{P} within-block pattern or a {T}×{T} boolean array, "
            f"got shape {arr.shape} and dtype {arr.dtype}"
        )
    blocks = np.arange(T) // P
    across = np.argwhere(arr & (blocks[:, None] != blocks[None, :]))
    if across.size:
        t, u = across[0]
        raise ValueError(
            f"the mask is not block-local: token {t} attends to token {u} in another block "
            f"({len(across)} such entries)"
        )
    return [block_pattern(arr[b : b + P, b : b + P], P) for b in range(0, T, P)]


def frozen_kernel_matrix(mask, P: int) -> sp.Matrix:
    """``K_mask`` for one block (exact rationals); ``mask`` a name or a P×P pattern."""
    mask = block_pattern(mask, P)
    if mask == "block_bidirectional":
        return sp.Matrix(P, P, lambda i, j: sp.Rational(1, P))
    if mask == "block_causal":
        return sp.Matrix(P, P, lambda i, j: sp.Rational(1, i + 1) if j <= i else 0)
    return frozen_kernel(mask)


def coarse_vector(mask, P: int) -> sp.Matrix:
    """``L`` (P×1): the left eigenvector of ``K_mask`` for eigenvalue 1 with ``Lᵀ1 = 1`` (closed
    forms for the names; for a pattern :func:`theory.kernels.stationary_weighting`, ``ValueError``
    if the eigenvalue 1 is not simple)."""
    mask = block_pattern(mask, P)
    if mask == "block_bidirectional":
        return sp.Matrix([sp.Rational(1, P)] * P)
    if mask == "block_causal":
        return sp.Matrix([1] + [0] * (P - 1))
    return stationary_weighting(frozen_kernel(mask))


def _rms(row: sp.Matrix, norm_eps) -> sp.Matrix:
    d = row.shape[1]
    return row / sp.sqrt(sum(x**2 for x in row) / d + norm_eps)


def _normed_rows(X: sp.Matrix, norm: bool, norm_eps) -> sp.Matrix:
    """``n(X)`` row by row (the RMS norm with ``norm_eps``), or ``X`` when ``norm`` is False."""
    if not norm:
        return X
    return sp.Matrix.vstack(*[_rms(X[i, :], norm_eps) for i in range(X.shape[0])])


def _scores(X: sp.Matrix, syms: dict, norm: bool, norm_eps) -> sp.Matrix:
    """``β n(X)Q (n(X)K)ᵀ``."""
    Xn = _normed_rows(X, norm, norm_eps)
    return syms["beta"] * (Xn * syms["Q"]) * (Xn * syms["K"]).T


def _block_symbols(P: int, d: int, m: int) -> dict:
    """The real matrix symbols of one block: ``y`` (1×d), ``E`` (P×d), ``Q, K`` (d×d), ``W1``
    (d×m), ``W2`` (m×d) and ``H`` (P×d, the unknown of the invariance equation)."""
    return {
        "y": sp.Matrix(1, d, sp.symbols(f"y0:{d}", real=True)),
        "E": sp.Matrix(P, d, sp.symbols(f"E0:{P * d}", real=True)),
        "Q": sp.Matrix(d, d, sp.symbols(f"Q0:{d * d}", real=True)),
        "K": sp.Matrix(d, d, sp.symbols(f"K0:{d * d}", real=True)),
        "W1": sp.Matrix(d, m, sp.symbols(f"W1_0:{d * m}", real=True)),
        "W2": sp.Matrix(m, d, sp.symbols(f"W2_0:{m * d}", real=True)),
        "H": sp.Matrix(P, d, sp.symbols(f"H0:{P * d}", real=True)),
    }


def _allowed(Kmask: sp.Matrix) -> list:
    """Per row ``i``, the columns ``j`` the mask lets token ``i`` attend to."""
    P = Kmask.shape[0]
    return [[j for j in range(P) if Kmask[i, j] != 0] for i in range(P)]


def _softmax_in_scores(P: int, allowed: list):
    """The masked softmax as a function of score symbols ``s_ij``: ``(s, A(s), {s_ij: 0})``
    (softmax is shift-invariant, so ``s = 0`` represents every point of equal scores in a row)."""
    ssym = sp.Matrix(P, P, lambda i, j: sp.Symbol(f"s_{i}_{j}", real=True))
    Asym = sp.zeros(P, P)
    for i in range(P):
        Z = sum(sp.exp(ssym[i, j]) for j in allowed[i])
        for j in allowed[i]:
            Asym[i, j] = sp.exp(ssym[i, j]) / Z
    at0 = {ssym[i, j]: 0 for i in range(P) for j in range(P)}
    return ssym, Asym, at0


def _invariance_solution(eqs: list, unknowns: list, P: int, d: int, cancel: bool) -> sp.Matrix:
    """The unique solution of the consistent overdetermined linear system ``eqs`` (normal
    equations, exact), expanded; ``ArithmeticError`` if it is not unique. ``cancel`` simplifies the
    coefficient matrix first."""
    Amat, bvec = sp.linear_eq_to_matrix(eqs, unknowns)
    if cancel:
        Amat = Amat.applyfunc(sp.cancel)
    if Amat.rank() != P * d:
        raise ArithmeticError("the O(ε) invariance equation does not determine H₁ uniquely")
    return (Amat.T * Amat).LUsolve(Amat.T * bvec).applyfunc(sp.expand)


@dataclass
class SlowManifold:
    """The symbolic results of :func:`slow_manifold` and their numeric versions.

    Symbols: ``y`` (d), ``E`` (P×d), ``Q, K, W1, W2`` (d×d), ``beta``, ``gamma``, ``eps``.
    ``args`` is the argument order of every numeric function: ``(y, E, Q, K, W1, W2, beta,
    gamma)`` as NumPy arrays and floats.
    """

    mask: str | tuple  # a name of MASKS or a P×P pattern (block_pattern)
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


class _SoftmaxTaylor:
    """The softmax's first two derivatives at equal scores, and the Taylor coefficients of
    ``A(X(ε))`` they give from those of the scores (:func:`slow_manifold`)."""

    def __init__(self, P: int, allowed: list):
        ssym, Asym, at0 = _softmax_in_scores(P, allowed)
        self.P = P
        self.svars = [ssym[i, j] for i in range(P) for j in allowed[i]]
        self.dA = {v: Asym.diff(v).subs(at0) for v in self.svars}
        self.d2A = {(v, w): Asym.diff(v, w).subs(at0) for v in self.svars for w in self.svars}
        self.A0 = Asym.subs(at0)

    @staticmethod
    def index(v):
        return tuple(int(k) for k in v.name.split("_")[1:])

    def coefficients(self, S1, S2):
        """First two Taylor coefficients of A(X(ε)) from those of the scores S(X(ε))."""
        P, index = self.P, self.index
        A1 = sp.zeros(P, P)
        A2 = sp.zeros(P, P)
        for v in self.svars:
            A1 += self.dA[v] * S1[index(v)]
            A2 += self.dA[v] * S2[index(v)]
            for w in self.svars:
                A2 += self.d2A[(v, w)] * S1[index(v)] * S1[index(w)] / 2
        return A1, A2


def _critical_residual(Sm: sp.Matrix, Xm: sp.Matrix, allowed: list) -> sp.Matrix:
    """(a) ``(A(1yᵀ) − I)1yᵀ`` with the kernel from the softmax of the actual scores ``Sm``."""
    P = Xm.shape[0]
    Am = sp.zeros(P, P)
    for i in range(P):
        shifted = {j: sp.exp(sp.expand(Sm[i, j] - Sm[i, allowed[i][0]])) for j in allowed[i]}
        Z = sum(shifted.values())
        for j in allowed[i]:
            Am[i, j] = shifted[j] / Z
    return ((Am - sp.eye(P)) * Xm).applyfunc(sp.expand)


def _full_normal_jacobian(Sx, Xs, Xm, sm: _SoftmaxTaylor, d: int) -> sp.Matrix:
    """(b) ``J[:, k] = vec((A0 − I)e_k + DA[e_k] 1yᵀ)`` at ``X = 1yᵀ``, from the scores ``Sx`` of
    the generic state ``Xs``."""
    P = Xm.shape[0]
    on = dict(zip(list(Xs), list(Xm)))
    cols = []
    for k, xk in enumerate(list(Xs)):
        S1 = Sx.diff(xk).subs(on)
        A1, _ = sm.coefficients(S1, sp.zeros(P, P))
        ek = sp.zeros(P, d)
        ek[k // d, k % d] = 1
        cols.append(((sm.A0 - sp.eye(P)) * ek + A1 * Xm).reshape(P * d, 1))
    return sp.Matrix.hstack(*cols).applyfunc(sp.cancel)


def slow_manifold(
    mask="block_bidirectional", P: int = 2, d: int = 2, norm: bool = False
) -> SlowManifold:
    """Derive (a)–(d) of the module docstring for one block of ``P`` tokens of width ``d``
    (``mask`` a name of :data:`MASKS` or a P×P boolean pattern; cached per canonical pattern)."""
    P, d = (int(x) if _is_int(x) else x for x in (P, d))  # NumPy integers as Python's
    return _slow_manifold(block_pattern(mask, P), P, d, norm)


@cache
def _slow_manifold(mask, P: int, d: int, norm: bool) -> SlowManifold:
    if not (_is_int(P) and 1 <= P <= 4 and _is_int(d) and 1 <= d <= 3):
        raise ValueError(f"need integers 1 ≤ P ≤ 4 and 1 ≤ d ≤ 3 (symbolic cost), got P={P}, d={d}")
    eps, beta, gamma = sp.symbols("epsilon beta gamma", positive=True)
    norm_eps = sp.Rational(1, 10**6)
    syms = {**_block_symbols(P, d, d), "beta": beta, "gamma": gamma, "eps": eps}
    y, E, Hs = syms["y"], syms["E"], syms.pop("H")
    Xs = sp.Matrix(P, d, sp.symbols(f"X0:{P * d}", real=True))
    Kmat = frozen_kernel_matrix(mask, P)
    Lv = coarse_vector(mask, P)
    ones = sp.ones(P, 1)
    allowed = _allowed(Kmat)
    sm = _SoftmaxTaylor(P, allowed)

    def scores(X):
        return _scores(X, syms, norm, norm_eps)

    def R(X):
        Z = (_normed_rows(X, norm, norm_eps) * syms["W1"]).applyfunc(sp.tanh)
        return gamma * (E - X) + Z * syms["W2"]

    Xm = ones * y
    crit = _critical_residual(scores(Xm), Xm, allowed)
    Jn = _full_normal_jacobian(scores(Xs), Xs, Xm, sm, d)
    H1, red0, red1, curv = _first_order_reduction(sm, scores, R, Xm, Hs, Lv, eps, P, d)
    out = SlowManifold(
        mask, P, d, norm, Kmat, Lv, crit, Jn, normal_rate(Kmat), H1, red0, red1, curv, syms
    )
    args = [list(y), list(E), list(syms["Q"]), list(syms["K"]), list(syms["W1"]), list(syms["W2"])]
    args += [beta, gamma]
    out.H1_fn = _numeric(args, H1, (P, d))
    out.reduced0_fn = _numeric(args, red0, (d,))
    out.reduced1_fn = _numeric(args, red1, (d,))
    out.curvature_fn = _numeric(args, curv, (d,))
    return out


def _first_order_reduction(sm: _SoftmaxTaylor, scores, R, Xm, Hs, Lv, eps, P: int, d: int):
    """(c), (d): expand ``G(1yᵀ + εH) = εG₁ + ε²G₂ + O(ε³)``, solve ``(I − Π)G₁ = 0``,
    ``LᵀH = 0`` for ``H₁``; return ``H₁``, ``LᵀG₁``, ``LᵀG₂`` and ``Lᵀ DA[H₁] H₁``."""
    Pi = sp.ones(P, 1) * Lv.T
    Se = scores(Xm + eps * Hs)
    S1 = Se.diff(eps).subs(eps, 0)
    S2 = Se.diff(eps, 2).subs(eps, 0) / 2
    A1, A2 = sm.coefficients(S1, S2)
    Re = R(Xm + eps * Hs)
    R0 = Re.subs(eps, 0)
    R1 = Re.diff(eps).subs(eps, 0)
    G0 = (sm.A0 - sp.eye(P)) * Xm
    assert all(sp.expand(g) == 0 for g in G0)
    G1 = A1 * Xm + (sm.A0 - sp.eye(P)) * Hs + R0
    G2 = A2 * Xm + A1 * Hs + R1
    eqs = [sp.expand(e) for e in list((sp.eye(P) - Pi) * G1) + list(Lv.T * Hs)]
    hvec = _invariance_solution(eqs, list(Hs), P, d, cancel=True)
    sol = dict(zip(list(Hs), list(hvec)))
    H1 = Hs.subs(sol)
    resid = ((sp.eye(P) - Pi) * G1).subs(sol).applyfunc(sp.expand)
    if any(r != 0 for r in resid):
        raise ArithmeticError("H₁ does not solve the invariance equation")
    red0 = (Lv.T * G1).subs(sol).applyfunc(sp.expand)
    red1 = (Lv.T * G2).subs(sol)
    curv = Lv.T * A1.subs(sol) * H1
    return H1, red0, red1, curv


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


GELU_K = sp.Rational(44715, 10**6)
"""The cubic coefficient of the tanh approximation of GELU."""


def _gelu(z):
    """``½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))``: the tanh approximation of GELU."""
    return z * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (z + GELU_K * z**3))) / 2


SIGMA_FUNCS = {"tanh": sp.tanh, "identity": lambda z: z, "gelu": _gelu}
"""The MLP nonlinearities ``σ`` the derivation differentiates symbolically, by name: all analytic
(``gelu`` is the tanh approximation ``½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))``, as in
``numerics``, not the exact ``z·Φ(z)``)."""

NON_SMOOTH_SIGMAS = ("relu",)
"""Named nonlinearities that are not differentiable everywhere: no first-order slow manifold."""


def sigma_is_smooth(sigma) -> bool:
    """Whether ``σ`` is one the derivation differentiates symbolically (a name of
    :data:`SIGMA_FUNCS`, analytic). False for :data:`NON_SMOOTH_SIGMAS` and for anything that is
    not a name (a numerical function has no symbolic derivative to expand with)."""
    return isinstance(sigma, str) and sigma in SIGMA_FUNCS


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

    mask: str | tuple  # a name of MASKS or a P×P pattern (block_pattern)
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


def block_reduction(
    mask="block_bidirectional",
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
    ``lambdify_seconds``. Cached per ``(mask, P, d, norm, m, sigma)`` with ``mask`` in canonical form
    (:func:`block_pattern`: a name of :data:`MASKS` or a P×P boolean within-block pattern, whose
    kernel, coarse vector and normal rate come from :mod:`theory.kernels`).
    """
    m = _checked_block_args(mask, P, d, norm, m, sigma)
    return _block_reduction(block_pattern(mask, P), P, d, norm, m, sigma)


@cache
def _block_reduction(mask, P: int, d: int, norm: bool, m: int, sigma: str) -> BlockReduction:
    """The derivation of :func:`block_reduction` for canonical, validated arguments."""
    t0 = time.process_time()
    eps = sp.Symbol("epsilon", positive=True)
    beta, gamma = sp.symbols("beta gamma", real=True)
    neps = sp.Symbol("norm_eps", positive=True)
    syms = _block_symbols(P, d, m)
    Hs = syms.pop("H")
    syms.update(beta=beta, gamma=gamma, norm_eps=neps, eps=eps)
    rs = sp.Matrix(P, d, sp.symbols(f"r0:{P * d}", real=True))
    Kmask = frozen_kernel_matrix(mask, P)
    Lv = coarse_vector(mask, P)
    allowed = _allowed(Kmask)

    def R_fast(X):
        Z = _normed_rows(X, norm, neps) * syms["W1"]
        return gamma * syms["E"] - gamma * X + _sigma_of(Z, sigma) * syms["W2"]

    Xm = sp.ones(P, 1) * syms["y"]
    row_const = _scores_row_constant(_scores(Xm, syms, norm, neps), allowed)
    dA, A0, annih = _softmax_derivatives_at_equal_scores(P, allowed, Kmask)
    Jn = _kernel_normal_jacobian(A0, P, d)
    Hgen = _generic_H1(A0, Lv, Hs, rs, P, d)
    R0 = R_fast(Xm)
    H1 = _at_right_hand_side(Hgen, rs, R0)
    f0 = Lv.T * R0
    curv_small, (n0s, n0), (Dns, Dn) = _curvature_in_placeholders(dA, Lv, Hs, syms, norm, P, d)
    nsub = {**dict(zip(list(n0s), list(n0))), **dict(zip(list(Dns), list(Dn)))}
    hsub = dict(zip(list(Hs), list(H1)))
    f1_small = Lv.T * R_fast(Xm + eps * Hs) + eps * curv_small
    t1 = time.process_time()
    structure = (Kmask, Lv, row_const, annih, Jn, normal_rate(Kmask))
    fields = (H1, f0, curv_small, f1_small, (nsub, hsub), syms)
    out = BlockReduction(mask, P, d, m, norm, sigma, *structure, *fields)
    # the order-1 fields are lambdified in the placeholder symbols, defined first in stages
    # (H := H₁, then n0 := n(y), Dn := Dn(y)[H]): the same expressions as ``f1``/``curvature``,
    # without substituting H₁ and the norm derivative into every occurrence (the CSE pass of the
    # substituted trees is several times slower at P = 4, d = 3 with the norm)
    stages = [(list(Hs), list(H1)), (list(n0s) + list(Dns), list(n0) + list(Dn))]
    _attach_numeric(out, f0, list(f1_small) + list(Hs) + list(curv_small), stages)
    out.lambdify_seconds = time.process_time() - t1
    out.derive_seconds = t1 - t0
    return out


def _sigma_of(Z: sp.Matrix, sigma: str) -> sp.Matrix:
    """``σ`` entrywise (``Z`` itself for the identity)."""
    return Z if sigma == "identity" else Z.applyfunc(SIGMA_FUNCS[sigma])


def _checked_block_args(mask, P, d, norm, m, sigma) -> int:
    """Validate the arguments of :func:`block_reduction` (the mask by :func:`block_pattern`);
    return ``m`` (``d`` when None)."""
    if not sigma_is_smooth(sigma):
        why = (
            "is not differentiable everywhere (no first-order slow manifold)"
            if sigma in NON_SMOOTH_SIGMAS
            else "has no symbolic derivative here"
        )
        raise ValueError(f"sigma {sigma!r} {why}; expected one of {list(SIGMA_FUNCS)}")
    m = d if m is None else m
    for name, val, hi in (("P", P, 8), ("d", d, 6), ("m", m, 12)):
        if not (_is_int(val) and 1 <= val <= hi):
            raise ValueError(
                f"need an integer 1 ≤ {name} ≤ {hi} (symbolic cost), got {name}={val!r}"
            )
    if not isinstance(norm, bool):
        raise TypeError(f"norm must be True or False, got {norm!r}")
    return m


def _scores_row_constant(Sm: sp.Matrix, allowed: list) -> bool:
    """(a) every row of the scores on ``1yᵀ`` is constant over the allowed columns (identical
    expressions; no simplification needed); ``ArithmeticError`` if not."""
    P = Sm.shape[0]
    row_const = all(
        sp.expand(Sm[i, j] - Sm[i, allowed[i][0]]) == 0 for i in range(P) for j in allowed[i]
    )
    if not row_const:
        raise ArithmeticError("scores are not row-constant on the block-constant states")
    return row_const


def _softmax_derivatives_at_equal_scores(P: int, allowed: list, Kmask: sp.Matrix):
    """``({(i, j): ∂A/∂s_ij}, A₀, annihilates)`` at equal scores (row ``i`` of ``A`` depends only
    on row ``i`` of the scores). Checks that ``A₀`` is the frozen kernel and (b) that every
    derivative annihilates ``1`` (``ArithmeticError`` otherwise)."""
    ssym, Asym, at0 = _softmax_in_scores(P, allowed)
    svars = [(i, j) for i in range(P) for j in allowed[i]]
    dA = {}
    for i, j in svars:
        dA[(i, j)] = sp.zeros(P, P)
        dA[(i, j)][i, :] = Asym[i, :].diff(ssym[i, j]).xreplace(at0)
    A0 = Asym.xreplace(at0)
    if A0 != Kmask:
        raise ArithmeticError("the softmax at equal scores is not the frozen kernel")
    ones = sp.ones(P, 1)
    annih = all((dA[ij] * ones) == sp.zeros(P, 1) for ij in svars)
    if not annih:
        raise ArithmeticError("a softmax derivative does not annihilate the constants")
    return dA, A0, annih


def _kernel_normal_jacobian(A0: sp.Matrix, P: int, d: int) -> sp.Matrix:
    """(b) the normal Jacobian ``(A₀ − I) ⊗ I_d`` column by column (``+ Σ dA·1yᵀ·∂S/∂x_k = 0``)."""
    cols = []
    for k in range(P * d):
        ek = sp.zeros(P, d)
        ek[k // d, k % d] = 1
        cols.append(((A0 - sp.eye(P)) * ek).reshape(P * d, 1))
    return sp.Matrix.hstack(*cols)


def _generic_H1(A0: sp.Matrix, Lv: sp.Matrix, Hs: sp.Matrix, rs: sp.Matrix, P: int, d: int):
    """(c) ``H`` (P×d) solving ``(I − Π)((A₀ − I)H + r) = 0``, ``LᵀH = 0`` for a generic ``r``
    (``ArithmeticError`` if the solution is not unique or does not solve it)."""
    Pi = sp.ones(P, 1) * Lv.T
    I = sp.eye(P)
    G1 = (A0 - I) * Hs + rs
    eqs = [sp.expand(e) for e in list((I - Pi) * G1) + list(Lv.T * Hs)]
    hvec = _invariance_solution(eqs, list(Hs), P, d, cancel=False)
    sol = dict(zip(list(Hs), list(hvec)))
    resid = ((I - Pi) * G1).subs(sol).applyfunc(sp.expand)
    if any(e != 0 for e in resid):
        raise ArithmeticError("H₁ does not solve the invariance equation")
    return sp.Matrix(P, d, list(hvec))


def _at_right_hand_side(Hgen: sp.Matrix, rs: sp.Matrix, R0: sp.Matrix) -> sp.Matrix:
    """``H₁``: the generic solution with ``r := R_fast(1yᵀ)``, expanded one level (no powers,
    multinomials or logs)."""
    return Hgen.xreplace(dict(zip(list(rs), list(R0)))).applyfunc(
        lambda e: sp.expand(
            e, deep=False, power_base=False, power_exp=False, multinomial=False, log=False
        )
    )


def _curvature_in_placeholders(dA: dict, Lv, Hs, syms: dict, norm: bool, P: int, d: int):
    """(d) ``Lᵀ DA_{1yᵀ}[H] H`` with ``DA[H] = Σ ∂A/∂s_ij · d/dε S(1yᵀ + εH)_ij|₀``, by the product
    rule on ``S_ij = β (n(x_i)Q)·(n(x_j)K)``, in placeholder symbols ``n0`` for ``n(y)`` and
    ``Dn`` for the rows of ``Dn(y)[H]`` (SymPy's derivative of each normalised row): returns the
    curvature and the pairs ``(n0 symbols, n(y))``, ``(Dn symbols, Dn(y)[H])``. The placeholders
    only keep the expression trees small for the common-subexpression pass of lambdify."""
    y, eps, neps = syms["y"], syms["eps"], syms["norm_eps"]
    Q, Kw, beta = syms["Q"], syms["K"], syms["beta"]
    n0 = _normed_rows(y, norm, neps)
    hrow = sp.Matrix(1, d, sp.symbols(f"h0:{d}", real=True))
    Dn_row = sp.diff(_normed_rows(y + eps * hrow, norm, neps), eps).xreplace({eps: 0})
    Dn = sp.Matrix.vstack(
        *[Dn_row.xreplace(dict(zip(list(hrow), list(Hs[i, :])))) for i in range(P)]
    )
    n0s = sp.Matrix(1, d, sp.symbols(f"nrm0:{d}", real=True))
    Dns = sp.Matrix(P, d, sp.symbols(f"dnrm0:{P * d}", real=True))
    q0, k0 = n0s * Q, n0s * Kw
    DA = sp.zeros(P, P)
    for (i, j), dAij in dA.items():
        S1 = beta * ((Dns[i, :] * Q * k0.T)[0, 0] + (q0 * (Dns[j, :] * Kw).T)[0, 0])
        DA += dAij * S1
    return Lv.T * DA * Hs, (n0s, n0), (Dns, Dn)


def _attach_numeric(out: BlockReduction, f0, f1_H1_curv: list, stages: list) -> None:
    """Lambdify (``cse=True``, ``modules="math"``) the order-0 field, and one function returning
    ``f1``, then ``H₁`` (the order-1 hot path needs ``H₁`` for the slow path's argument), then the
    curvature, with the staged common subexpressions; attach them and their array wrappers
    ``H1_fn``, ``f0_fn``, ``curvature_fn``, ``f1_fn`` to ``out``."""
    P, d = out.P, out.d
    args = _flat_args(out.symbols)
    flat = {
        "f0": sp.lambdify(args, list(f0), modules="math", cse=True),
        "f1_H1_curv": sp.lambdify(
            args, f1_H1_curv, modules="math", cse=lambda ex: _staged_cse(stages, ex)
        ),
    }
    out._flat = flat
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
    first-order slow-manifold correction (T×d), so that ``X ≈ UY + εH₁``. ``red`` is one
    :class:`BlockReduction` for every block, or a list of ``N`` (one per block: a mask whose blocks
    have different patterns); ``reds`` is that list.
    """

    def __init__(self, order, red, layers, E, beta, gamma, slow_term, norm_eps):
        first = red[0] if isinstance(red, (list, tuple)) else red
        self.order, self.red = order, first
        self.P, self.d = first.P, first.d
        self.E = np.asarray(E, dtype=float)
        T = self.E.shape[0]
        if self.E.ndim != 2 or self.E.shape[1] != first.d or T % first.P:
            raise ValueError(f"E must have shape (N·{first.P}, {first.d}), got {self.E.shape}")
        self.N = T // first.P
        self.reds = list(red) if isinstance(red, (list, tuple)) else [red] * self.N
        if len(self.reds) != self.N or any((r.P, r.d) != (first.P, first.d) for r in self.reds):
            raise ValueError(f"need {self.N} block reductions of one P and d, got {len(self.reds)}")
        self.uniform = all(r is first for r in self.reds)
        self.L = np.array([float(v) for v in first.coarse], dtype=float)  # (P,) of block 0
        self.L_blocks = np.array([[float(v) for v in r.coarse] for r in self.reds])  # (N, P)
        self.slow_term = slow_term
        tail = [float(beta), float(gamma), float(norm_eps)]
        self._E_flat = [_weights_flat(self.E[b * self.P : (b + 1) * self.P]) for b in range(self.N)]
        self._w_flat = []
        for lw in layers:
            Q, K, W1, W2 = _unpack_layer(lw)
            self._w_flat.append(_weights_flat(Q, K, W1, W2) + tail)

    def _block_field(self, key, seg, Y, eps):
        w = self._w_flat[seg]
        return np.array(
            [
                self.reds[b]._flat[key](
                    *(list(map(float, Y[b])) + self._E_flat[b] + w + [float(eps)])
                )
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
        """``Lᵀ S`` block by block (S is T×d), with each block's own ``L``."""
        blocks = S.reshape(self.N, self.P, self.d)
        if self.uniform:
            return blocks.transpose(0, 2, 1) @ self.L
        return np.einsum("npd,np->nd", blocks, self.L_blocks)

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
    mask,
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
        mask: ``"block_bidirectional"``, ``"block_causal"``, a P×P boolean within-block pattern
            (every block), or a T×T block-local boolean mask (each block its own pattern,
            :func:`block_patterns`; ``ValueError`` if it attends across blocks).
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
    if isinstance(mask, str) or np.shape(mask) == (P, P):
        red = block_reduction(mask, P, d, bool(norm), m, sigma)
    else:
        keys = block_patterns(mask, P, np.shape(mask)[0])
        reds = [block_reduction(k, P, d, bool(norm), m, sigma) for k in keys]
        red = reds[0] if all(r is reds[0] for r in reds) else reds
    return ReducedRHS(order, red, list(layer_weights), E, beta, gamma, slow_term, norm_eps)


__all__ += [
    "BlockReduction",
    "block_reduction",
    "ReducedRHS",
    "reduced_rhs",
    "SIGMA_FUNCS",
    "NON_SMOOTH_SIGMAS",
    "sigma_is_smooth",
]
