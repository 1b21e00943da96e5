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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

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
    return row / sp.sqrt(sum(x ** 2 for x in row) / d + norm_eps)


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
    kernel: sp.Matrix                 # K_mask (P×P)
    coarse: sp.Matrix                 # L (P×1)
    critical_residual: sp.Matrix      # (A(1yᵀ) − I)1yᵀ, simplified (must be 0)
    normal_jacobian: sp.Matrix        # ∂vec((A(X) − I)X)/∂vec X at X = 1yᵀ, simplified
    normal_rate: sp.Expr              # 1 − λ₂ (rate × ε)
    H1: sp.Matrix                     # first-order slow manifold, P×d
    reduced0: sp.Matrix               # LᵀR(1yᵀ), 1×d
    reduced1: sp.Matrix               # LᵀG₂ at H₁: the O(ε) coefficient of dy/dt, 1×d
    curvature: sp.Matrix              # Lᵀ DA[H₁] H₁, 1×d
    symbols: dict
    H1_fn: object = None
    reduced0_fn: object = None
    reduced1_fn: object = None
    curvature_fn: object = None


@lru_cache(maxsize=None)
def slow_manifold(mask: str = "block_bidirectional", P: int = 2, d: int = 2,
                  norm: bool = False) -> SlowManifold:
    """Derive (a)–(d) of the module docstring for one block of ``P`` tokens of width ``d``."""
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}; expected one of {list(MASKS)}")
    if not (isinstance(P, int) and 1 <= P <= 4 and isinstance(d, int) and 1 <= d <= 3):
        raise ValueError(f"need integers 1 ≤ P ≤ 4 and 1 ≤ d ≤ 3 (symbolic cost), got P={P}, d={d}")
    eps, beta, gamma = sp.symbols("epsilon beta gamma", positive=True)
    norm_eps = sp.Rational(1, 10 ** 6)
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
    hvec = (Amat.T * Amat).LUsolve(Amat.T * bvec)      # consistent overdetermined system
    sol = dict(zip(list(Hs), [sp.expand(h) for h in hvec]))
    H1 = Hs.subs(sol)
    resid = ((sp.eye(P) - Pi) * G1).subs(sol).applyfunc(sp.expand)
    if any(r != 0 for r in resid):
        raise ArithmeticError("H₁ does not solve the invariance equation")

    # (d) reduced flow to O(ε)
    red0 = (Lv.T * G1).subs(sol).applyfunc(sp.expand)
    red1 = (Lv.T * G2).subs(sol)
    curv = Lv.T * A1.subs(sol) * H1

    syms = {"y": y, "E": E, "Q": Q, "K": Kw, "W1": W1, "W2": W2, "beta": beta, "gamma": gamma,
            "eps": eps}
    out = SlowManifold(mask, P, d, norm, Kmat, Lv, crit, Jn, rate, H1, red0, red1, curv, syms)
    args = [list(y), list(E), list(Q), list(Kw), list(W1), list(W2), beta, gamma]
    out.H1_fn = _numeric(args, H1, (P, d))
    out.reduced0_fn = _numeric(args, red0, (d,))
    out.reduced1_fn = _numeric(args, red1, (d,))
    out.curvature_fn = _numeric(args, curv, (d,))
    return out


def _numeric(args, expr: sp.Matrix, shape):
    """``lambdify(..., cse=True)`` wrapper taking arrays (flattened row-major) and returning ``shape``."""
    import numpy as np

    f = sp.lambdify(args, list(expr), modules="numpy", cse=True)

    def fn(y, E, Q, K, W1, W2, beta, gamma):
        vals = f(np.ravel(y), np.ravel(E), np.ravel(Q), np.ravel(K), np.ravel(W1), np.ravel(W2),
                 float(beta), float(gamma))
        return np.asarray(vals, dtype=float).reshape(shape)
    return fn
