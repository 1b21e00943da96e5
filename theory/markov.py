"""Stationary distributions and the first-order slow manifold of y-dependent Markov generators (F2).

Setting (column convention): ``x`` is a probability vector on ``n`` states and

::

    ε dx/dt = Q(y) x,        dy/dt = g(x, y, t),

with ``Q(y)`` a generator: ``Q_ij ≥ 0`` for ``i ≠ j`` (the rate of the jump ``j → i``) and
``1ᵀQ = 0`` (mass is conserved). If ``Q(y)`` has a single closed communicating class (in particular
if it is irreducible) its null space is one-dimensional and spanned by the stationary distribution
``p_st(y)``. The **Markov chain tree theorem** gives it in closed form: ``p_i`` is proportional to
the ``i``-th principal minor of ``−Q`` (the sum over spanning trees directed into ``i`` of the
products of their rates), which is what :func:`stationary_distribution` computes — a derivation
independent of solving ``Q p = 0``, which it then verifies exactly.

Slow manifold. Write the invariant manifold as ``x = h(y, t) = p_st(y) + ε h_1(y, t) + O(ε²)``.
Invariance, ``ε (∂_y h · ẏ + ∂_t h) = Q(y) h``, at order ε gives

::

    Q(y) h_1 = ∂_y p_st(y) · g(p_st(y), y, t),        1ᵀ h_1 = 0,

(the ``∂_t h`` term enters at order ε² only). The right-hand side sums to zero because
``1ᵀ p_st ≡ 1``, so it lies in ``range Q``; the side condition picks the unique solution in the
zero-sum subspace, ``h_1 = Q(y)^# ∂_y p_st · g`` with ``Q^#`` the group inverse.
:func:`slow_manifold` solves it by replacing one row of ``Q`` with ``1ᵀ`` (any ``n − 1`` rows of a
rank-``n − 1`` generator are independent, and the dropped equation holds automatically) and checks
the full equation symbolically.

Attention link (:func:`within_block_stationary`): the frozen within-block kernels ``K`` are
row-stochastic, so ``K − I`` is a generator in the row convention and ``(K − I)ᵀ`` in the column
convention. Its stationary distribution is uniform for ``block_bidirectional`` (the block mean is
the conserved coarse variable) and ``e_1`` for ``block_causal`` (the first token is absorbing: the
chain is *not* irreducible, but it has exactly one closed class, ``{1}``, which is the hypothesis that
makes the stationary distribution unique).

``theory`` never imports ``numerics``: the kernels are rebuilt here from their definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
from sympy.polys.matrices import DomainMatrix

__all__ = [
    "y",
    "t",
    "eps",
    "example_generator",
    "is_generator",
    "stationary_distribution",
    "StationaryDistribution",
    "slow_manifold",
    "SlowManifold",
    "within_block_kernel",
    "within_block_stationary",
    "EXAMPLE_CHAINS",
]

y = sp.Symbol("y", real=True)
t = sp.Symbol("t", real=True)
eps = sp.Symbol("epsilon", positive=True)

EXAMPLE_CHAINS = (2, 3)
"""Sizes of the example chains with closed-form stationary distributions."""


def _rates(n: int) -> dict[tuple[int, int], sp.Expr]:
    """Jump rates ``(i, j) ↦ rate of j → i`` of the example chain with ``n`` states.

    n = 2: ``0 → 1`` at ``e^y``, ``1 → 0`` at ``1 + y²``.
    n = 3 (irreducible and not reversible for every real y):
    ``0 → 1: e^y``, ``1 → 0: 1``, ``1 → 2: 1 + y²``, ``2 → 1: e^{−y}``, ``2 → 0: 2``, ``0 → 2: 1/2``.
    """
    if n == 2:
        return {(1, 0): sp.exp(y), (0, 1): 1 + y**2}
    if n == 3:
        return {
            (1, 0): sp.exp(y),
            (0, 1): sp.Integer(1),
            (2, 1): 1 + y**2,
            (1, 2): sp.exp(-y),
            (0, 2): sp.Integer(2),
            (2, 0): sp.Rational(1, 2),
        }
    raise ValueError(f"example chains exist for n in {EXAMPLE_CHAINS}, got n={n!r}")


def example_generator(n: int) -> sp.Matrix:
    """The generator ``Q(y)`` (column convention) of the example chain with ``n ∈ {2, 3}`` states."""
    rates = _rates(n)
    Q = sp.zeros(n, n)
    for (i, j), r in rates.items():
        Q[i, j] = r
    for j in range(n):
        Q[j, j] = -sum(Q[i, j] for i in range(n) if i != j)
    return Q


def is_generator(Q: sp.Matrix, convention: str = "column") -> bool:
    """Exact test: off-diagonal entries non-negative (as SymPy can prove) and zero column sums
    (``convention="column"``) or zero row sums (``"row"``)."""
    if convention not in ("column", "row"):
        raise ValueError(f"convention must be 'column' or 'row', got {convention!r}")
    M = Q if convention == "column" else Q.T
    n = M.shape[0]
    sums_zero = all(sp.simplify(sum(M[:, j])) == 0 for j in range(n))
    signs = all(M[i, j].is_nonnegative for i in range(n) for j in range(n) if i != j)
    return bool(sums_zero and signs)


_u = sp.Symbol("u", positive=True)  # stands for e^y while deriving (rational-function algebra)
_s = sp.Symbol("s", real=True)  # stands for sin t
_FIELD = sp.QQ.frac_field(y, _u, _s)
"""Rational functions of ``(y, u = e^y, s = sin t)``: exact, canonical arithmetic (zero test = ``== 0``)."""


def _rational(expr: sp.Expr) -> sp.Expr:
    """``expr`` with ``e^{ky} → u^k`` (integer k) and ``sin t → s``, as an element of the field."""
    expr = sp.sympify(expr).subs(sp.sin(t), _s)
    expr = expr.replace(
        lambda e: isinstance(e, sp.exp) and sp.expand(e.args[0] / y).is_integer,
        lambda e: _u ** sp.expand(e.args[0] / y),
    )
    if any(isinstance(a, sp.exp) for a in sp.preorder_traversal(expr)) or expr.has(t):
        raise ValueError(f"{expr} is not a rational function of y, e^y and sin t")
    return _FIELD.from_sympy(expr)


def _d_dy(f):
    """Total y-derivative in the field: ``∂_y f + u ∂_u f`` (because ``u = e^y``)."""
    Y, U, _ = _FIELD.gens
    return f.diff(Y) + U * f.diff(U)


def _to_sympy(f) -> sp.Expr:
    return _FIELD.to_sympy(f).subs({_u: sp.exp(y), _s: sp.sin(t)})


def _field_matrix(M: sp.Matrix) -> DomainMatrix:
    rows = [[_rational(M[i, j]) for j in range(M.shape[1])] for i in range(M.shape[0])]
    return DomainMatrix(rows, M.shape, _FIELD)


@dataclass(frozen=True)
class StationaryDistribution:
    """``p_st`` of a generator: ``expr`` (n×1 SymPy matrix), ``residual`` (``Q p``, exactly 0 in the
    field of rational functions) and ``numeric`` (``lambdify(y, p, cse=True)``, a list of n arrays)."""

    Q: sp.Matrix
    expr: sp.Matrix
    residual: list
    numeric: object


def _stationary_field(Qd: DomainMatrix) -> list:
    n = Qd.shape[0]
    minus = -Qd
    weights = []
    for i in range(n):
        keep = [k for k in range(n) if k != i]
        weights.append(minus.extract(keep, keep).det() if n > 1 else _FIELD.one)
    total = sum(weights, _FIELD.zero)
    if total == 0:
        raise ValueError(
            "every principal minor of −Q vanishes: the generator has several closed "
            "classes, so its stationary distribution is not unique"
        )
    return [w / total for w in weights]


def stationary_distribution(Q: sp.Matrix) -> StationaryDistribution:
    """``p_st`` of the column-convention generator ``Q(y)`` by the Markov chain tree theorem.

    ``p_i ∝ det((−Q) with row i and column i removed)``. Valid when ``Q`` has a single closed class
    (then the minors are not all zero); raises ``ValueError`` when every minor vanishes identically
    (several closed classes: no unique stationary distribution). Entries must be rational
    functions of ``y`` and ``e^{ky}``. The result is verified exactly: ``Q p = 0`` and ``1ᵀp = 1``.
    """
    Qd = _field_matrix(Q)
    n = Qd.shape[0]
    p = _stationary_field(Qd)
    rows = Qd.to_list()
    residual = [sum((rows[i][j] * p[j] for j in range(n)), _FIELD.zero) for i in range(n)]
    if any(r != 0 for r in residual) or sum(p, _FIELD.zero) != 1:
        raise ArithmeticError(f"tree-theorem vector fails Q p = 0: residual {residual}")
    expr = sp.Matrix([sp.factor(_to_sympy(pi)) for pi in p])
    numeric = sp.lambdify(y, list(expr), modules="numpy", cse=True)
    return StationaryDistribution(
        Q=Q, expr=expr, residual=[_to_sympy(r) for r in residual], numeric=numeric
    )


@dataclass(frozen=True)
class SlowManifold:
    """First-order slow manifold ``h = p_st + ε h_1`` of ``ε x' = Q(y) x``, ``y' = g(x, y, t)``.

    Attributes: ``p`` (p_st), ``dp`` (∂_y p_st), ``g0`` (g on the manifold, ``g(p_st(y), y, t)``),
    ``h1`` (n×1, in terms of y and t), ``residual_invariance`` (``Q h_1 − ∂_y p · g0``: exactly 0),
    ``residual_sum`` (``1ᵀ h_1``: exactly 0), and the numeric functions ``Q_numeric(y)`` (the
    generator, for comparison with an independent definition), ``p_numeric(y)``,
    ``h1_numeric(y, t)``, ``g_reduced_numeric(y, t, epsilon)`` (the slow field on the first-order
    manifold, ``g(p_st + ε h_1, y, t)``).
    """

    Q: sp.Matrix
    c: tuple
    p: sp.Matrix
    dp: sp.Matrix
    g0: sp.Expr
    h1: sp.Matrix
    residual_invariance: list
    residual_sum: sp.Expr
    Q_numeric: object
    p_numeric: object
    h1_numeric: object
    g_reduced_numeric: object


@lru_cache(maxsize=8)
def slow_manifold(n: int, c: tuple | None = None) -> SlowManifold:
    """Derive ``p_st`` and ``h_1`` for the example chain with ``n`` states and the slow equation
    ``y' = −y + cᵀx + sin t`` (default ``c = (0, 1, …, n−1)``).

    ``h_1`` solves ``Q h_1 = ∂_y p_st · g(p_st, y, t)`` with ``1ᵀ h_1 = 0`` (module docstring).
    The algebra runs in the field of rational functions of ``(y, u = e^y, s = sin t)``, where
    equality is decidable, so both residuals are exact zero tests.
    """
    Q = example_generator(n)
    c = (
        tuple(range(n))
        if c is None
        else tuple(int(ci) if float(ci).is_integer() else ci for ci in c)
    )
    if len(c) != n:
        raise ValueError(f"c must have n={n} entries, got {len(c)}")
    cf = [_FIELD.from_sympy(sp.nsimplify(ci)) for ci in c]
    Y, _, S = _FIELD.gens
    Qd = _field_matrix(Q)
    rows = Qd.to_list()
    p = _stationary_field(Qd)
    dp = [_d_dy(pi) for pi in p]

    def g(x):  # the slow field g(x, y, t) = −y + cᵀx + sin t
        return -Y + sum((ci * xi for ci, xi in zip(cf, x)), _FIELD.zero) + S

    g0 = g(p)
    rhs = [dpi * g0 for dpi in dp]
    # n − 1 rows of Q plus the normalisation row 1ᵀ h_1 = 0
    A = [list(r) for r in rows[: n - 1]] + [[_FIELD.one] * n]
    b = [[ri] for ri in rhs[: n - 1]] + [[_FIELD.zero]]
    h1 = [
        e[0]
        for e in DomainMatrix(A, (n, n), _FIELD).lu_solve(DomainMatrix(b, (n, 1), _FIELD)).to_list()
    ]
    res_inv = [sum((rows[i][j] * h1[j] for j in range(n)), _FIELD.zero) - rhs[i] for i in range(n)]
    res_sum = sum(h1, _FIELD.zero)
    if any(r != 0 for r in res_inv) or res_sum != 0:
        raise ArithmeticError(f"h_1 fails the invariance equation: {res_inv}, sum {res_sum}")
    g_red = _to_sympy(-Y + S) + sum(
        sp.nsimplify(ci) * (_to_sympy(pi) + eps * _to_sympy(hi)) for ci, pi, hi in zip(c, p, h1)
    )
    p_e = sp.Matrix([_to_sympy(v) for v in p])
    h1_e = sp.Matrix([_to_sympy(v) for v in h1])
    return SlowManifold(
        Q=Q,
        c=c,
        p=p_e,
        dp=sp.Matrix([_to_sympy(v) for v in dp]),
        g0=_to_sympy(g0),
        h1=h1_e,
        residual_invariance=[_to_sympy(r) for r in res_inv],
        residual_sum=_to_sympy(res_sum),
        Q_numeric=sp.lambdify(y, Q, modules="numpy", cse=True),
        p_numeric=sp.lambdify(y, list(p_e), modules="numpy", cse=True),
        h1_numeric=sp.lambdify((y, t), list(h1_e), modules="numpy", cse=True),
        g_reduced_numeric=sp.lambdify((y, t, eps), g_red, modules="numpy", cse=True),
    )


def within_block_kernel(kind: str, P: int) -> sp.Matrix:
    """The frozen within-block kernel (P×P, exact rationals), rebuilt from its definition: the mask
    row divided by its count; ``block_causal``: ``s ≤ t``; ``block_bidirectional``: all ``s``."""
    if kind not in ("block_causal", "block_bidirectional"):
        raise ValueError(f"kind must be 'block_causal' or 'block_bidirectional', got {kind!r}")
    if not isinstance(P, int) or P < 1:
        raise ValueError(f"P must be a positive integer, got {P!r}")
    allowed = (lambda r, s: s <= r) if kind == "block_causal" else (lambda r, s: True)
    K = sp.zeros(P, P)
    for r in range(P):
        cols = [s for s in range(P) if allowed(r, s)]
        for s in cols:
            K[r, s] = sp.Rational(1, len(cols))
    return K


def within_block_stationary(kind: str, P: int) -> dict:
    """Exact stationary data of the within-block chain with row-convention generator ``K − I``.

    Returns ``kernel``, ``generator`` (``(K − I)ᵀ``, column convention), ``null_dim`` (dimension of
    its null space), ``p_st`` (the unique stationary distribution when ``null_dim == 1``),
    ``closed_classes`` (closed communicating classes of the jump graph ``r → s`` for ``K[r, s] > 0``,
    ``s ≠ r``), ``irreducible`` and ``eigenvalues`` of ``K − I`` with multiplicities.
    """
    K = within_block_kernel(kind, P)
    G = (K - sp.eye(P)).T
    null = G.nullspace()
    p = None
    if len(null) == 1:
        v = null[0]
        p = (v / sum(v)).applyfunc(sp.nsimplify)
    # reachability on the jump graph (transitive closure)
    reach = [[r == s or K[r, s] != 0 for s in range(P)] for r in range(P)]
    for k in range(P):
        for r in range(P):
            for s in range(P):
                reach[r][s] = reach[r][s] or (reach[r][k] and reach[k][s])
    classes = []
    for r in range(P):
        cls = frozenset(s for s in range(P) if reach[r][s] and reach[s][r])
        if cls not in classes:
            classes.append(cls)
    closed = [
        sorted(c) for c in classes if all(not reach[r][s] or s in c for r in c for s in range(P))
    ]
    return {
        "kernel": K,
        "generator": G,
        "null_dim": len(null),
        "p_st": p,
        "closed_classes": closed,
        "irreducible": len(classes) == 1,
        "eigenvalues": (K - sp.eye(P)).eigenvals(),
    }
