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

Your own family (:func:`family_slow_manifold`, :func:`family_functions`): the same derivation for
any ``Q(y)`` and slow field ``g(y, x, t)`` given as SymPy expressions. The algebra is the field of
rational functions over ℚ of ``y`` and the expressions' *atoms* (:func:`family_algebra`:
``exp(r·y)`` as powers of one ``exp(y/L)``, roots, trigonometric or any other functions of ``y``
and ``t``, irrational constants; floats read as decimals), the atoms being free generators whose
y-derivatives SymPy supplies. An identity in this field holds for the actual functions, so the
residuals stay exact zero tests. The tree theorem and the bordered solve run fraction-free over
the polynomial ring (``h_1 = g(p_st)·w`` with ``Q w = ∂_y p_st``, ``1ᵀw = 0``), so that verifying
them is a polynomial identity, not a chain of gcds.

Attention link (:func:`within_block_stationary`): the frozen within-block kernels ``K`` are
row-stochastic, so ``K − I`` is a generator in the row convention and ``(K − I)ᵀ`` in the column
convention. Its stationary distribution is uniform for ``block_bidirectional`` (the block mean is
the conserved coarse variable) and ``e_1`` for ``block_causal`` (the first token is absorbing: the
chain is *not* irreducible, but it has exactly one closed class, ``{1}``, which is the hypothesis that
makes the stationary distribution unique).

``theory`` never imports ``numerics``: the kernels are rebuilt here from their definition.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
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
    "family_algebra",
    "family_slow_manifold",
    "family_functions",
    "FamilyFunctions",
    "COMMON_EXP_DENOMINATOR_MAX",
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


# --------------------------------------------------------------------------- exact algebra


@dataclass(frozen=True)
class _Algebra:
    """Exact arithmetic for one derivation: ``field``, the rational functions over ℚ of ``y`` and
    finitely many *atoms* (the non-rational building blocks, as free generators); ``convert(expr,
    env)`` into it (``env`` maps symbols to field elements), ``to_sympy`` back, ``derivs`` (the
    y-derivative of each generator as a field element; ``None`` for a generator that is never
    differentiated) and ``atoms`` (what the generators other than ``y`` stand for).

    Atoms are treated as algebraically independent, so an identity that holds in the field holds
    for the actual functions (a sufficient, exact test): equality in the field is ``== 0``."""

    field: object
    convert: Callable
    to_sympy: Callable
    derivs: tuple
    atoms: tuple = ()

    def matrix(self, M: sp.Matrix, env: dict | None = None) -> DomainMatrix:
        """``M`` (SymPy) as a matrix over the field."""
        rows = [[self.convert(M[i, j], env) for j in range(M.shape[1])] for i in range(M.shape[0])]
        return DomainMatrix(rows, M.shape, self.field)


_u = sp.Symbol("u", positive=True)  # stands for e^y while deriving (rational-function algebra)
_s = sp.Symbol("s", real=True)  # stands for sin t
_FIELD = sp.QQ.frac_field(y, _u, _s)
"""Rational functions of ``(y, u = e^y, s = sin t)``: exact, canonical arithmetic (zero test = ``== 0``)."""


def _rational(expr: sp.Expr, env: dict | None = None):
    """``expr`` with ``e^{ky} → u^k`` (integer k) and ``sin t → s``, as an element of the field of
    the example chains (``env`` is not used: the example slow field is built in the field)."""
    expr = sp.sympify(expr).subs(sp.sin(t), _s)
    expr = expr.replace(
        lambda e: isinstance(e, sp.exp) and sp.expand(e.args[0] / y).is_integer,
        lambda e: _u ** sp.expand(e.args[0] / y),
    )
    if any(isinstance(a, sp.exp) for a in sp.preorder_traversal(expr)) or expr.has(t):
        raise ValueError(f"{expr} is not a rational function of y, e^y and sin t")
    return _FIELD.from_sympy(expr)


def _to_sympy(f) -> sp.Expr:
    return _FIELD.to_sympy(f).subs({_u: sp.exp(y), _s: sp.sin(t)})


_EXAMPLE_ALGEBRA = _Algebra(
    _FIELD, _rational, _to_sympy, (_FIELD.one, _FIELD.gens[1], _FIELD.zero), (sp.exp(y), sp.sin(t))
)
"""The algebra of the example chains: ``y``, ``u = e^y`` (``du/dy = u``) and ``s = sin t``."""

COMMON_EXP_DENOMINATOR_MAX = 60
"""Every ``exp(r·y)`` (rational ``r``) becomes a power of one atom ``exp(y/L)``, ``L`` the least
common denominator of the ``r``, when ``L`` is at most this; otherwise each is an atom of its own."""


def _exp_rate(e: sp.Expr, ys: sp.Symbol):
    """``r`` if ``e = exp(r·y)`` with a non-zero rational ``r``, else ``None``."""
    if isinstance(e, sp.exp):
        r = sp.cancel(e.args[0] / ys)
        if r.is_Rational and r != 0:
            return r
    return None


def _collect_atoms(e: sp.Expr, ys: sp.Symbol, skip: set, rates: set, atoms: list) -> None:
    """Add to ``rates`` the ``r`` of every ``exp(r·y)`` in ``e`` and to ``atoms`` every other
    non-rational building block (a function, a root ``b^(1/q)``, a constant such as π, the
    symbol ``t``), leaving out ``y`` and the symbols in ``skip``."""
    if e.is_Rational or e == ys or e in skip:
        return
    if e.is_Add or e.is_Mul:
        for a in e.args:
            _collect_atoms(a, ys, skip, rates, atoms)
        return
    if e.is_Pow and e.exp.is_Integer:
        _collect_atoms(e.base, ys, skip, rates, atoms)
        return
    rate = _exp_rate(e, ys)
    if rate is not None:
        rates.add(rate)
        return
    atom = e.base ** sp.Rational(1, e.exp.q) if e.is_Pow and e.exp.is_Rational else e
    if atom not in atoms:
        atoms.append(atom)


def _exact(e) -> sp.Expr:
    """``e`` with every float replaced by the rational of its decimal representation."""
    e = sp.sympify(e)
    return sp.nsimplify(e, rational=True) if e.has(sp.Float) else e


class _FamilyField:
    """The field of a user family: ``y``, one dummy per atom, and the atoms' y-derivatives
    (``None`` for atoms that only occur in a derivative: those are never differentiated)."""

    def __init__(self, exprs: list, ys: sp.Symbol, skip: tuple = ()):
        rates, first = set(), []
        for e in exprs:
            _collect_atoms(e, ys, set(skip), rates, first)
        second = []
        for a in first:
            _collect_atoms(sp.diff(a, ys), ys, set(skip), rates, second)
        L = math.lcm(*[int(r.q) for r in rates]) if rates else 1
        self.ys, self.common = ys, bool(rates) and L <= COMMON_EXP_DENOMINATOR_MAX
        self.L = sp.Integer(L)
        exps = [] if self.common else [sp.exp(r * ys) for r in sorted(rates)]
        base = [sp.exp(ys / self.L)] if self.common else []
        atoms = base + exps + first + [a for a in second if a not in first]
        self.atoms = tuple(atoms)
        self.dummies = tuple(sp.Dummy(f"a{k}") for k in range(len(atoms)))
        self.field = sp.QQ.frac_field(ys, *self.dummies)
        self.gens = dict(zip(atoms, self.field.gens[1:]))
        self.back = dict(zip(self.dummies, atoms))
        n_diff = len(base) + len(exps) + len(first)
        self.derivs = [self.field.one] + [
            self.convert(sp.diff(a, ys)) if k < n_diff else None for k, a in enumerate(atoms)
        ]

    def convert(self, e, env: dict | None = None):
        """``e`` as a field element (``env``: symbols standing for field elements)."""
        e = sp.sympify(e)
        if env and e in env:
            return env[e]
        if e == self.ys:
            return self.field.gens[0]
        if e in self.gens:
            return self.gens[e]
        if e.is_Rational or e.is_Float:  # a float as its decimal
            return self.field.from_sympy(_exact(e))
        if e.is_Add:
            return sum((self.convert(a, env) for a in e.args), self.field.zero)
        if e.is_Mul:
            out = self.field.one
            for a in e.args:
                out *= self.convert(a, env)
            return out
        if e.is_Pow and e.exp.is_Integer:
            return self.convert(e.base, env) ** int(e.exp)
        rate = _exp_rate(e, self.ys)
        if rate is not None and self.common:
            return self.gens[sp.exp(self.ys / self.L)] ** int(rate * self.L)
        if e.is_Pow and e.exp.is_Rational:
            return self.gens[e.base ** sp.Rational(1, e.exp.q)] ** int(e.exp.p)
        raise ValueError(f"{e} is not a rational function of y and the atoms {self.atoms}")

    def to_sympy(self, f) -> sp.Expr:
        return self.field.to_sympy(f).xreplace(self.back)

    def algebra(self) -> _Algebra:
        return _Algebra(self.field, self.convert, self.to_sympy, tuple(self.derivs), self.atoms)


def family_algebra(exprs, ys: sp.Symbol = y, skip: tuple = ()) -> _Algebra:
    """The exact algebra of the expressions ``exprs`` in ``ys`` (floats read as decimals): the
    field of rational functions over ℚ of ``ys`` and the expressions' atoms — ``exp(r·y)`` as
    powers of one ``exp(y/L)`` (see :data:`COMMON_EXP_DENOMINATOR_MAX`), roots ``b^(1/q)``, any
    other function of ``y`` or ``t``, irrational constants — and of the atoms of their
    y-derivatives; the symbols in ``skip`` (the fast state) are left for ``env``."""
    return _FamilyField([_exact(e) for e in exprs], ys, skip).algebra()


# --------------------------------------------------------------------------- stationary law


@dataclass(frozen=True)
class StationaryDistribution:
    """``p_st`` of a generator: ``expr`` (n×1 SymPy matrix), ``residual`` (``Q p``, exactly 0 in the
    field of rational functions) and ``numeric`` (``lambdify(y, p, cse=True)``, a list of n arrays)."""

    Q: sp.Matrix
    expr: sp.Matrix
    residual: list
    numeric: object


class _Polynomial(NamedTuple):
    """The generator over the polynomial ring: ``Q = Qn / D`` and the tree-theorem weights ``m``
    (``p_st = m / S``, ``S = Σ m``), with ``Qn·m = 0`` verified exactly."""

    Qn: list
    D: object
    m: list
    S: object


def _tree_theorem(Qd: DomainMatrix) -> _Polynomial:
    """``p_i ∝ det((−Q) without row and column i)``, fraction-free: the entries of ``Q`` over one
    common denominator ``D``, the minors of ``−D·Q`` (the factor ``D^(n−1)`` cancels in ``p``).
    ``ValueError`` if every minor vanishes (several closed classes); ``ArithmeticError`` unless
    ``Q p = 0`` exactly (it fails when the columns of ``Q`` do not sum to 0)."""
    n, R = Qd.shape[0], Qd.domain.get_ring()
    entries = Qd.to_list()
    D = R.one
    for e in (e for row in entries for e in row):
        D = D.lcm(e.denom)
    Qn = [[e.numer * D.exquo(e.denom) for e in row] for row in entries]
    minus = DomainMatrix([[-q for q in row] for row in Qn], (n, n), R)
    m = []
    for i in range(n):
        keep = [k for k in range(n) if k != i]
        m.append(minus.extract(keep, keep).det() if n > 1 else R.one)
    S = sum(m, R.zero)
    if S == 0:
        raise ValueError(
            "every principal minor of −Q vanishes: the generator has several closed "
            "classes, so its stationary distribution is not unique"
        )
    residual = [sum((Qn[i][j] * m[j] for j in range(n)), R.zero) for i in range(n)]
    if any(r != 0 for r in residual):
        raise ArithmeticError(f"tree-theorem vector fails Q p = 0: residual {residual}")
    return _Polynomial(Qn, D, m, S)


def _derivation(alg: _Algebra):
    """``(E, D_E)``: the common denominator ``E`` of the generators' y-derivatives and the map
    ``f ↦ E·df/dy`` on polynomials (exact, polynomial-valued)."""
    R = alg.field.get_ring()
    E = R.one
    for d in alg.derivs:
        if d is not None:
            E = E.lcm(d.denom)
    scaled = [None if d is None else d.numer * E.exquo(d.denom) for d in alg.derivs]
    gens = R.gens

    def D_E(f):
        out = R.zero
        for g, dg in zip(gens, scaled):
            part = f.diff(g)
            if part != 0:
                if dg is None:
                    raise ValueError(
                        f"{alg.to_sympy(alg.field.convert(g))} is never differentiated"
                    )
                out += part * dg
        return out

    return E, D_E


def stationary_distribution(Q: sp.Matrix, ys: sp.Symbol = y) -> StationaryDistribution:
    """``p_st`` of the column-convention generator ``Q(ys)`` by the Markov chain tree theorem.

    ``p_i ∝ det((−Q) with row i and column i removed)``. Valid when ``Q`` has a single closed class
    (then the minors are not all zero); raises ``ValueError`` when every minor vanishes identically
    (several closed classes: no unique stationary distribution). Entries may be any expressions
    that are rational in ``ys`` and finitely many atoms (:func:`family_algebra`: ``a·exp(b·y)``,
    roots, trigonometric functions, …). The result is verified exactly: ``Q p = 0``, ``1ᵀp = 1``.
    """
    alg = family_algebra(list(Q), ys)
    K = alg.field
    tree = _tree_theorem(alg.matrix(_exact(Q)))
    expr = sp.Matrix([sp.factor(alg.to_sympy(K.field.new(mi, tree.S))) for mi in tree.m])
    numeric = sp.lambdify(ys, list(expr), modules="numpy", cse=True)
    residual = [sp.Integer(0)] * len(tree.m)  # Q p = 0 verified exactly by _tree_theorem
    return StationaryDistribution(Q=Q, expr=expr, residual=residual, numeric=numeric)


# --------------------------------------------------------------------------- slow manifold


@dataclass(frozen=True)
class SlowManifold:
    """First-order slow manifold ``h = p_st + ε h_1`` of ``ε x' = Q(y) x``, ``y' = g(x, y, t)``.

    Attributes: ``p`` (p_st), ``dp`` (∂_y p_st), ``g0`` (g on the manifold, ``g(p_st(y), y, t)``),
    ``h1`` (n×1, in terms of y and t), ``residual_invariance`` (``Q h_1 − ∂_y p · g0``: exactly 0),
    ``residual_sum`` (``1ᵀ h_1``: exactly 0), and the numeric functions ``Q_numeric(y)`` (the
    generator as the derivation read it, for comparison with an independent definition),
    ``p_numeric(y)``, ``h1_numeric(y, t)`` (lists of n arrays, broadcast to the arguments' shape),
    ``g_reduced_numeric(y, t, epsilon)`` (the slow field on the first-order manifold,
    ``g(p_st + ε h_1, y, t)``). ``c`` is the coupling of the example slow field (``None`` for a
    family's own), ``slow`` the slow field ``g`` (SymPy, in ``y``, ``x`` and ``t``) and ``atoms``
    the non-rational building blocks the exact algebra treated as free generators.
    """

    Q: sp.Matrix
    c: tuple | None
    p: sp.Matrix
    dp: sp.Matrix
    g0: sp.Expr
    h1: sp.Matrix
    residual_invariance: list
    residual_sum: sp.Expr
    Q_numeric: Callable
    p_numeric: Callable
    h1_numeric: Callable
    g_reduced_numeric: Callable
    slow: sp.Expr | None = None
    atoms: tuple = ()


def _invariance_solve(Qd: DomainMatrix, g_on: Callable, alg: _Algebra) -> dict:
    """``p_st``, ``∂_y p_st``, ``g0 = g_on(p_st)`` and ``w`` (field elements), where
    ``h_1 = g0·w`` solves ``Q h_1 = ∂_y p · g0`` with ``1ᵀ h_1 = 0``.

    The right-hand side is the scalar ``g0`` times ``∂_y p``, so ``w`` is the zero-sum solution of
    ``Q w = ∂_y p`` (free of ``t`` and of the slow field): ``n − 1`` rows of ``Q`` plus the
    normalisation row (any ``n − 1`` rows of a rank-``n − 1`` generator are independent; the
    dropped one holds because the columns sum to 0). Fraction-free over the polynomial ring, so
    that the checks are polynomial identities (no gcd): ``∂_y p = dpn / (E·S²)``,
    ``w = x / (den·E·S²)``; ``ArithmeticError`` unless ``Q w − ∂_y p`` (all n rows) and ``1ᵀw``
    are exactly 0. The residuals returned are ``g0`` times these (exact zeros).
    """
    n, K, R = Qd.shape[0], Qd.domain, Qd.domain.get_ring()
    Qn, D, m, S = _tree_theorem(Qd)
    E, D_E = _derivation(alg)
    dS = D_E(S)
    dpn = [D_E(mi) * S - mi * dS for mi in m]
    A = [list(r) for r in Qn[: n - 1]] + [[R.one] * n]
    b = [[D * di] for di in dpn[: n - 1]] + [[R.zero]]
    x, den = DomainMatrix(A, (n, n), R).solve_den(DomainMatrix(b, (n, 1), R))
    x = [e[0] for e in x.to_list()]
    res = [sum((Qn[i][j] * x[j] for j in range(n)), R.zero) - D * den * dpn[i] for i in range(n)]
    res_sum = sum(x, R.zero)
    if any(r != 0 for r in res) or res_sum != 0:
        raise ArithmeticError(f"h_1 fails the invariance equation: {res}, sum {res_sum}")
    F, dp_den = K.field, E * S**2
    p = [F.new(mi, S) for mi in m]
    g0 = g_on(p)
    return {
        "p": p,
        "dp": [F.new(di, dp_den) for di in dpn],
        "g0": g0,
        "w": [F.new(xj, den * dp_den) for xj in x],
        "res_inv": [g0 * F.new(r, D * den * dp_den) for r in res],
        "res_sum": g0 * F.new(res_sum, den * dp_den),
    }


def _broadcasting(fn: Callable) -> Callable:
    """``fn`` (a lambdified list of expressions) returning float arrays of the arguments' common
    shape (a constant entry would otherwise come back as a scalar)."""

    def wrapped(*args):
        shape = np.broadcast(*args).shape
        return [np.array(np.broadcast_to(np.asarray(v, dtype=float), shape)) for v in fn(*args)]

    return wrapped


def _manifold(Q, Q_read, alg: _Algebra, solved: dict, g_red, ys, ts, h1_e=None, **fields):
    """The :class:`SlowManifold` of the solved field elements: SymPy expressions and their
    numeric functions over ``(ys, ts)``; ``Q_read`` is the generator as the derivation read it,
    ``h1_e`` the expression of ``h_1`` (default: the field element's)."""
    back = alg.to_sympy
    p_e = sp.Matrix([back(v) for v in solved["p"]])
    if h1_e is None:
        h1_e = sp.Matrix([back(v) for v in solved["h1"]])
    return SlowManifold(
        Q=Q,
        p=p_e,
        dp=sp.Matrix([back(v) for v in solved["dp"]]),
        g0=back(solved["g0"]),
        h1=h1_e,
        residual_invariance=[back(r) for r in solved["res_inv"]],
        residual_sum=back(solved["res_sum"]),
        Q_numeric=sp.lambdify(ys, Q_read, modules="numpy", cse=True),
        p_numeric=_broadcasting(sp.lambdify(ys, list(p_e), modules="numpy", cse=True)),
        h1_numeric=_broadcasting(sp.lambdify((ys, ts), list(h1_e), modules="numpy", cse=True)),
        g_reduced_numeric=sp.lambdify((ys, ts, eps), g_red, modules="numpy", cse=True),
        atoms=tuple(alg.atoms),
        **fields,
    )


@lru_cache(maxsize=8)
def slow_manifold(n: int, c: tuple | None = None) -> SlowManifold:
    """Derive ``p_st`` and ``h_1`` for the example chain with ``n`` states and the slow equation
    ``y' = −y + cᵀx + sin t`` (default ``c = (0, 1, …, n−1)``).

    ``h_1`` solves ``Q h_1 = ∂_y p_st · g(p_st, y, t)`` with ``1ᵀ h_1 = 0`` (module docstring).
    The algebra runs in the field of rational functions of ``(y, u = e^y, s = sin t)``, where
    equality is decidable, so both residuals are exact zero tests. (:func:`family_slow_manifold`
    does the same for any generator and slow field.)
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

    def g_on(x):  # the slow field g(x, y, t) = −y + cᵀx + sin t
        return -Y + sum((ci * xi for ci, xi in zip(cf, x)), _FIELD.zero) + S

    solved = _invariance_solve(_EXAMPLE_ALGEBRA.matrix(Q), g_on, _EXAMPLE_ALGEBRA)
    solved["h1"] = [solved["g0"] * wi for wi in solved["w"]]
    g_red = _to_sympy(-Y + S) + sum(
        sp.nsimplify(ci) * (_to_sympy(pi) + eps * _to_sympy(hi))
        for ci, pi, hi in zip(c, solved["p"], solved["h1"])
    )
    return _manifold(Q, Q, _EXAMPLE_ALGEBRA, solved, g_red, y, t, c=c)


def family_slow_manifold(Q: sp.Matrix, slow: sp.Expr, ys, xs, ts) -> SlowManifold:
    """``p_st`` and ``h_1`` of a user family: the generator ``Q(ys)`` (column convention) and the
    slow field ``ys' = slow(ys, xs, ts)`` (SymPy; ``xs`` the n fast-state symbols).

    Derived exactly in the field of :func:`family_algebra` (floats read as decimals): the tree
    theorem for ``p_st``, the bordered solve for ``h_1``, both residuals exact zero tests.
    ``ValueError`` if an entry is not rational in ``ys`` and finitely many atoms or if every
    principal minor vanishes (several closed classes); ``ArithmeticError`` if the columns of ``Q``
    do not sum to 0 (not a generator: ``Q p_st ≠ 0``).
    """
    xs = tuple(xs)
    Qx, gx = _exact(sp.Matrix(Q)), _exact(slow)
    alg = family_algebra(list(Qx) + [gx], ys, skip=xs)
    Qd = alg.matrix(Qx)

    def g_on(p):  # the slow field on x = p
        return alg.convert(gx, dict(zip(xs, p)))

    solved = _invariance_solve(Qd, g_on, alg)
    n, back = Qd.shape[0], alg.to_sympy
    Q_read = sp.Matrix(n, n, [back(e) for row in Qd.to_list() for e in row])
    g0 = back(solved["g0"])
    h1_e = sp.Matrix([g0 * back(wi) for wi in solved["w"]])  # h_1 = g0·w, kept as a product
    on_manifold = {xi: back(pi) + eps * hi for xi, pi, hi in zip(xs, solved["p"], h1_e)}
    g_red = gx.xreplace(on_manifold)
    return _manifold(Q, Q_read, alg, solved, g_red, ys, ts, h1_e=h1_e, c=None, slow=slow)


class FamilyFunctions(NamedTuple):
    """Numeric functions of a user family, lambdified from its SymPy expressions (for the
    integrator, which never sees SymPy): ``generator(y)`` and ``generator_dy(y)`` (n×n arrays),
    ``slow(y, x, t)`` and ``slow_gradient(y, x, t) = (∂g/∂x (n,), ∂g/∂y)``."""

    generator: Callable
    generator_dy: Callable
    slow: Callable
    slow_gradient: Callable


def family_functions(Q: sp.Matrix, slow: sp.Expr, ys, xs, ts) -> FamilyFunctions:
    """:class:`FamilyFunctions` of the family ``(Q, slow)`` (derivatives by SymPy, exact)."""
    xs, Q, slow = list(xs), sp.Matrix(Q), sp.sympify(slow)
    fQ = sp.lambdify(ys, Q, modules="numpy", cse=True)
    fdQ = sp.lambdify(ys, Q.diff(ys), modules="numpy", cse=True)
    fg = sp.lambdify((ys, xs, ts), slow, modules="numpy", cse=True)
    fgrad = sp.lambdify(
        (ys, xs, ts), [[slow.diff(xi) for xi in xs], slow.diff(ys)], modules="numpy", cse=True
    )

    def gradient(yv, x, tv):
        gx, gy = fgrad(yv, x, tv)
        return np.asarray(gx, dtype=float), float(gy)

    return FamilyFunctions(
        lambda yv: np.asarray(fQ(yv), dtype=float),
        lambda yv: np.asarray(fdQ(yv), dtype=float),
        lambda yv, x, tv: float(fg(yv, x, tv)),
        gradient,
    )


def within_block_kernel(kind: str, P: int) -> sp.Matrix:
    """The frozen within-block kernel (P×P, exact rationals), rebuilt from its definition: the mask
    row divided by its count; ``block_causal``: ``s ≤ t``; ``block_bidirectional``: all ``s``."""
    if kind not in ("block_causal", "block_bidirectional"):
        raise ValueError(f"kind must be 'block_causal' or 'block_bidirectional', got {kind!r}")
    if isinstance(P, bool) or not isinstance(P, int) or P < 1:
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
