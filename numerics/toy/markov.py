"""Markov generators: validation, communicating classes, stationary distributions, spectral gaps,
the example chains and their negative controls, the first-order slow manifold and the coupled
fast–slow system (claims F2, F3).

Conventions. A **generator in the column convention** is a real n×n matrix ``Q`` with
``Q_ij ≥ 0`` for ``i ≠ j`` (the rate of the jump ``j → i``) and zero column sums, ``1ᵀQ = 0``; a
probability vector evolves by ``dx/dt = Q x`` and stays on the simplex. ``G`` is a generator in the
**row convention** iff ``Gᵀ`` is one in the column convention (``G 1 = 0``): the frozen attention
kernels give ``K − I`` in the row convention, acting on ``X`` from the left.

Uniqueness. ``Q`` has a one-dimensional null space spanned by a probability vector iff its jump
graph has exactly **one closed communicating class** (a "unichain"); irreducibility (one class
in all) is the special case with a strictly positive ``p_st``. Then every other eigenvalue has
negative real part and ``x(t) → p_st`` at the spectral gap ``−max{Re λ : λ ≠ 0}``.

The fast–slow system of F2 (column convention)::

    ε dx/dt = Q(y) x,        dy/dt = g(x, y, t),

with the example slow field ``g = −y + cᵀx + sin t`` or any :class:`SlowField` (callables, e.g.
lambdified from a user family's SymPy expressions by ``verify``).

After an initial layer of duration O(ε log 1/ε), ``x(t) = p_st(y(t)) + ε h_1(y(t), t) + O(ε²)``
with ``Q h_1 = ∂_y p_st · g(p_st, y, t)``, ``1ᵀh_1 = 0``; and ``∂_y p_st = Q^#(−∂_y Q · p_st)``
(differentiate ``Q p_st = 0``). :func:`first_order_correction` computes ``h_1`` this way,
numerically, independently of ``theory.markov`` (which derives it symbolically).

``numerics`` never imports ``theory``: the example chains are written out here and ``verify``
checks that both definitions agree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.integrate import solve_ivp

from fastslow.numerics import lapack, validation
from fastslow.numerics.model import kernels
from fastslow.numerics.model.layer import check_layer_params, check_state

__all__ = [
    "CONVENTIONS",
    "check_generator",
    "generator_violation",
    "reachability",
    "graph_communicating_classes",
    "graph_closed_classes",
    "class_period",
    "mask_closed_classes",
    "communicating_classes",
    "closed_classes",
    "is_irreducible",
    "stationary_distribution",
    "spectral_gap",
    "null_dimension",
    "unique_null_vector",
    "sorted_eigenvalues",
    "zero_sum_solve",
    "example_generator",
    "example_generator_dy",
    "EXAMPLE_CHAINS",
    "CHAIN_KINDS",
    "ExampleChain",
    "example_chain",
    "switch_generator",
    "stationary_derivative",
    "first_order_correction",
    "SlowField",
    "linear_slow_field",
    "as_slow_field",
    "CoupledRun",
    "integrate_coupled",
    "attention_mixing_operator",
]

CONVENTIONS = ("column", "row")
EXAMPLE_CHAINS = (2, 3)


def _as_column(Q, convention: str) -> np.ndarray:
    validation.choice("convention", convention, CONVENTIONS)
    Q = validation.finite_array("Q", Q, ndim=2)
    if Q.shape[0] != Q.shape[1] or Q.shape[0] < 1:
        raise ValueError(f"Q must be a non-empty square matrix, got shape {Q.shape}")
    return Q if convention == "column" else Q.T


def generator_violation(G, convention: str = "column") -> dict:
    """How far ``G`` is from being a generator: the sizes of the two violated conditions.

    Returns (all ≥ 0; every entry is exactly 0 for a generator):

    * ``negative_offdiag``: ``max(0, −min_{i≠j} G_ij)``, the most negative off-diagonal rate;
    * ``negative_offdiag_rel``: the same divided by ``max_{i≠j} |G_ij|``;
    * ``negative_mass_fraction``: ``Σ_{i≠j} max(0, −G_ij) / Σ_{i≠j} |G_ij|``;
    * ``sum_defect``: ``max |column sums|`` (column convention) or ``max |row sums|`` (row), i.e.
      ``‖1ᵀG‖_∞`` resp. ``‖G 1‖_∞``: the conservation defect;
    * ``sum_defect_rel``: the same divided by the largest absolute column (row) sum of ``|G|``.
    """
    Gc = _as_column(G, convention)
    n = Gc.shape[0]
    off = ~np.eye(n, dtype=bool)
    offv = Gc[off]
    neg = np.maximum(0.0, -offv) + 0.0  # no negative zeros
    scale_off = float(np.abs(offv).max()) if offv.size else 0.0
    sums = Gc.sum(axis=0)
    scale_sum = float(np.abs(Gc).sum(axis=0).max())
    return {
        "negative_offdiag": float(neg.max()) if offv.size else 0.0,
        "negative_offdiag_rel": float(neg.max()) / scale_off if scale_off > 0 else 0.0,
        "negative_mass_fraction": float(neg.sum() / np.abs(offv).sum()) if scale_off > 0 else 0.0,
        "sum_defect": float(np.abs(sums).max()),
        "sum_defect_rel": float(np.abs(sums).max()) / scale_sum if scale_sum > 0 else 0.0,
    }


def check_generator(Q, convention: str = "column", atol: float = 1e-12) -> np.ndarray:
    """Return ``Q`` (as a float array) if it is a generator within ``atol``, else raise ``ValueError``
    naming the first violation: a negative off-diagonal entry or a non-zero column (row) sum.

    ``atol`` is absolute, scaled by ``max(1, max |Q|)``.
    """
    Qc = _as_column(Q, convention)
    atol = validation.real("atol", atol, low=0.0)
    tol = atol * max(1.0, float(np.abs(Qc).max()))
    n = Qc.shape[0]
    off = ~np.eye(n, dtype=bool)
    bad = np.argwhere(off & (Qc < -tol))
    if bad.size:
        i, j = bad[0]
        r, c = (i, j) if convention == "column" else (j, i)
        raise ValueError(
            f"not a generator ({convention} convention): off-diagonal entry "
            f"Q[{r}, {c}] = {Qc[i, j]:.3g} is negative (rates must be ≥ 0)"
        )
    sums = Qc.sum(axis=0)
    badsum = np.flatnonzero(np.abs(sums) > tol)
    if badsum.size:
        j = badsum[0]
        what = "column" if convention == "column" else "row"
        raise ValueError(
            f"not a generator ({convention} convention): {what} {j} sums to "
            f"{sums[j]:.3g}, expected 0 (mass conservation, 1ᵀQ = 0)"
        )
    return np.asarray(Q, dtype=np.float64)


def reachability(A) -> np.ndarray:
    """``R[i, j]``: ``j`` is reachable from ``i`` (reflexive and transitive) in the directed graph
    with an edge ``i → j`` where the Boolean adjacency ``A[i, j]`` holds; exact (Warshall)."""
    A = np.asarray(A, dtype=bool)
    R = A | np.eye(A.shape[0], dtype=bool)
    for k in range(A.shape[0]):
        R = R | (R[:, [k]] & R[[k], :])
    return R


def graph_communicating_classes(A) -> list[list[int]]:
    """The communicating classes of the graph of the Boolean adjacency ``A`` (sorted lists of
    vertices, in the order of their smallest vertex)."""
    R = reachability(A)
    both = R & R.T
    classes, seen = [], set()
    for j in range(R.shape[0]):
        if j not in seen:
            cls = sorted(np.flatnonzero(both[j]).tolist())
            seen.update(cls)
            classes.append(cls)
    return classes


def graph_closed_classes(A) -> list[list[int]]:
    """The closed communicating classes of the graph of ``A``: those no edge leaves."""
    R = reachability(A)
    n = R.shape[0]
    return [
        c
        for c in graph_communicating_classes(A)
        if not R[c][:, [k for k in range(n) if k not in c]].any()
    ]


def class_period(A, cls) -> int:
    """The period of the closed class ``cls`` of the graph of ``A``: the gcd of ``level(u) + 1 −
    level(v)`` over its edges, with levels from a breadth-first search from its first vertex."""
    A = np.asarray(A, dtype=bool)
    level = {int(cls[0]): 0}
    frontier, period = [int(cls[0])], 0
    while frontier:
        nxt = []
        for u in frontier:
            for w in np.flatnonzero(A[u]).tolist():
                if w not in level:
                    level[w] = level[u] + 1
                    nxt.append(w)
        frontier = nxt
    for u in cls:
        for w in np.flatnonzero(A[u]).tolist():
            period = math.gcd(period, abs(level[int(u)] + 1 - level[w]))
    return period


def mask_closed_classes(mask) -> list[dict]:
    """The closed communicating classes of an attention mask's graph (``i → j`` when token ``i``
    attends to ``j``) as ``{"tokens", "period"}``. For the row-stochastic frozen kernel of the mask
    the eigenvalue 1 has (algebraic) multiplicity the number of closed classes, and every other
    eigenvalue of modulus 1 comes from a closed class of period > 1."""
    A = np.asarray(mask, dtype=bool)
    return [{"tokens": c, "period": class_period(A, c)} for c in graph_closed_classes(A)]


def _jump_graph(Qc: np.ndarray) -> np.ndarray:
    """The jump graph of a column-convention generator: an edge ``j → i`` where ``Q_ij > 0``."""
    return Qc.T > 0


def communicating_classes(Q, convention: str = "column") -> list[list[int]]:
    """The communicating classes of the jump graph of ``Q`` (sorted lists of states)."""
    return graph_communicating_classes(_jump_graph(_as_column(Q, convention)))


def closed_classes(Q, convention: str = "column") -> list[list[int]]:
    """The closed communicating classes (no jump leaves them). Their number is the dimension of the
    null space of a generator; ``p_st`` is unique iff there is exactly one."""
    return graph_closed_classes(_jump_graph(_as_column(Q, convention)))


def is_irreducible(Q, convention: str = "column") -> bool:
    """Every state reaches every other state through jumps of positive rate."""
    return len(communicating_classes(Q, convention)) == 1


def stationary_distribution(Q, convention: str = "column", atol: float = 1e-12) -> np.ndarray:
    """The unique stationary distribution ``p`` of the generator ``Q`` (``Q p = 0``, ``1ᵀp = 1``).

    Hypotheses, checked with a clear ``ValueError``: ``Q`` is a generator (:func:`check_generator`)
    with exactly one closed communicating class (irreducible chains are the main case; a chain with
    transient states and one closed class, such as the within-block causal kernel, also has a
    unique ``p``). Computed as the right singular vector of the smallest singular value, normalised
    to sum 1 (entries of transient states are zero up to rounding).
    """
    Qc = _as_column(check_generator(Q, convention, atol), convention)
    closed = closed_classes(Qc)
    if len(closed) != 1:
        raise ValueError(
            f"Q has {len(closed)} closed communicating classes {closed}: it is "
            "reducible with several equilibria, so the stationary distribution is "
            "not unique"
        )
    return _null_vector(Qc)


def null_dimension(Q, convention: str = "column", rtol: float = 1e-10) -> int:
    """The dimension of the numerical null space of ``Q``: the number of singular values
    ``≤ rtol·max(1, σ_max)`` (basis-free: singular values are unique)."""
    s = lapack.svdvals(_as_column(Q, convention))
    return int(np.sum(s <= rtol * max(1.0, float(s[0]) if s.size else 0.0)))


def unique_null_vector(Q, convention: str = "column", rtol: float = 1e-10):
    """The null vector of ``Q`` normalised to ``1ᵀp = 1`` if the numerical null space is
    one-dimensional (and not orthogonal to ``1``), else ``None``.

    A one-dimensional null space is spanned by one vector, unique up to a factor, so the
    normalised vector does not depend on LAPACK's choice of sign or basis.
    """
    Qc = _as_column(Q, convention)
    if null_dimension(Qc, "column", rtol) != 1:
        return None
    return _null_vector(Qc)


def _null_vector(Qc: np.ndarray) -> np.ndarray:
    """The right singular vector of the smallest singular value, normalised to sum 1 (callers
    ensure the null space is one-dimensional, so this is basis-free)."""
    _, _, Vt = lapack.svd(Qc)
    p = Vt[-1]
    total = p.sum()
    if total == 0.0:
        raise ValueError("the null vector of Q sums to 0: it is not a multiple of a distribution")
    return p / total


def sorted_eigenvalues(Q, convention: str = "column") -> np.ndarray:
    """The eigenvalues of ``Q`` as a multiset in a fixed order: ascending ``|λ|``, ties broken by
    real part, then imaginary part (independent of LAPACK's order)."""
    lam = np.asarray(lapack.eigvals(_as_column(Q, convention)))
    order = np.lexsort((np.round(lam.imag, 12), np.round(lam.real, 12), np.round(np.abs(lam), 12)))
    return lam[order]


def spectral_gap(Q, convention: str = "column") -> float:
    """``−max{Re λ : λ eigenvalue of Q other than the one nearest 0}``: the rate at which
    ``x(t) → p_st``. Positive for a generator with one closed class. Small n only (dense eig)."""
    lam = sorted_eigenvalues(Q, convention)
    if lam.size == 1:
        return float("inf")
    return float(-lam[1:].real.max())  # all but one eigenvalue of least modulus


def zero_sum_solve(Q, b) -> np.ndarray:
    """The solution ``h`` of ``Q h = b`` with ``1ᵀh = 0`` (``h = Q^# b``, group inverse).

    ``Q`` is a column-convention generator with one closed class and ``b`` must satisfy ``1ᵀb = 0``
    (then ``b ∈ range Q``). Solved as the consistent bordered system ``[Q; 1ᵀ] h = [b; 0]`` by
    least squares (exact for consistent systems up to rounding). Unvalidated; callers check.
    """
    Q = np.asarray(Q, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n = Q.shape[0]
    A = np.vstack([Q, np.ones((1, n))])
    rhs = np.concatenate([b, np.zeros((1,) + b.shape[1:])])
    return np.linalg.lstsq(A, rhs, rcond=None)[0]


# --------------------------------------------------------------------------- example chains


def _example_rates(n: int, y: float) -> tuple[list, list]:
    """``(rates, d rates/dy)`` as lists of ``(i, j, value)`` for the jump ``j → i``.

    n = 2: ``0 → 1: e^y``, ``1 → 0: 1 + y²``.
    n = 3: ``0 → 1: e^y``, ``1 → 0: 1``, ``1 → 2: 1 + y²``, ``2 → 1: e^{−y}``, ``2 → 0: 2``,
    ``0 → 2: 1/2`` (irreducible, not reversible).
    """
    ey, emy = np.exp(y), np.exp(-y)
    if n == 2:
        return ([(1, 0, ey), (0, 1, 1.0 + y * y)], [(1, 0, ey), (0, 1, 2.0 * y)])
    return (
        [(1, 0, ey), (0, 1, 1.0), (2, 1, 1.0 + y * y), (1, 2, emy), (0, 2, 2.0), (2, 0, 0.5)],
        [(1, 0, ey), (0, 1, 0.0), (2, 1, 2.0 * y), (1, 2, -emy), (0, 2, 0.0), (2, 0, 0.0)],
    )


def _assemble(n: int, entries: list) -> np.ndarray:
    Q = np.zeros((n, n))
    for i, j, r in entries:
        Q[i, j] += r
        Q[j, j] -= r
    return Q


def _check_example(n, y) -> tuple[int, float]:
    n = validation.positive_int("n", n)
    if n not in EXAMPLE_CHAINS:
        raise ValueError(f"example chains exist for n in {EXAMPLE_CHAINS}, got n={n}")
    return n, validation.real("y", y)


def example_generator(n: int, y: float) -> np.ndarray:
    """``Q(y)`` (column convention) of the example chain with ``n ∈ {2, 3}`` states."""
    n, y = _check_example(n, y)
    return _assemble(n, _example_rates(n, y)[0])


def example_generator_dy(n: int, y: float) -> np.ndarray:
    """``∂Q/∂y`` of :func:`example_generator` (analytic)."""
    n, y = _check_example(n, y)
    return _assemble(n, _example_rates(n, y)[1])


def _equilibrium(Q, require_generator: bool) -> np.ndarray:
    """``p_st`` of the generator ``Q``, or (``require_generator=False``) the normalised null
    vector of any ``Q`` with a one-dimensional null space (``ValueError`` otherwise)."""
    if require_generator:
        return stationary_distribution(Q)
    p = unique_null_vector(Q)
    if p is None:
        raise ValueError("the null space of Q is not one-dimensional: no unique equilibrium")
    return p


def stationary_derivative(Q, dQ, require_generator: bool = True) -> np.ndarray:
    """``∂_y p_st = Q^#(−∂_y Q · p_st)`` (from differentiating ``Q p_st = 0``, ``1ᵀ p_st = 1``).
    ``require_generator=False`` accepts any ``Q`` with a one-dimensional null space whose
    ``∂_y Q`` has zero column sums (the formula holds for such ``Q``; a negative control)."""
    p = _equilibrium(Q, require_generator)
    dQ = validation.finite_array("dQ", dQ, shape=np.shape(Q))
    return zero_sum_solve(Q, -dQ @ p)


class SlowField(NamedTuple):
    """The slow equation ``dy/dt = value(y, x, t)`` with ``gradient(y, x, t) = (∂g/∂x, ∂g/∂y)``
    (an ``(n,)`` array and a float), for the analytic Jacobian of the coupled system."""

    value: Callable
    gradient: Callable


def linear_slow_field(c) -> SlowField:
    """The example slow field ``g = −y + cᵀx + sin t`` (gradient ``(c, −1)``)."""
    c = validation.finite_array("c", c, ndim=1)
    return SlowField(lambda y, x, t: -y + c @ x + np.sin(t), lambda y, x, t: (c, -1.0))


def as_slow_field(slow, n: int) -> SlowField:
    """``slow`` as a :class:`SlowField`: itself, or the coupling ``c`` (n,) of the example field
    ``−y + cᵀx + sin t``."""
    if isinstance(slow, SlowField):
        return slow
    return linear_slow_field(validation.finite_array("c", slow, shape=(n,)))


def first_order_correction(
    Q, dQ, slow, y: float, t: float, require_generator: bool = True
) -> np.ndarray:
    """``h_1 = Q^#(∂_y p_st · g(p_st, y, t))``: the O(ε) term of the slow manifold
    ``x = p_st(y) + ε h_1(y, t) + O(ε²)`` (zero-sum, ``1ᵀh_1 = 0``). ``slow`` is a
    :class:`SlowField` or the coupling ``c`` of ``g = −y + cᵀx + sin t``;
    ``require_generator`` as in :func:`stationary_derivative`."""
    p = _equilibrium(Q, require_generator)
    g0 = as_slow_field(slow, p.size).value(validation.real("y", y), p, validation.real("t", t))
    return zero_sum_solve(Q, stationary_derivative(Q, dQ, require_generator) * g0)


CHAIN_KINDS = ("irreducible", "reducible", "not_generator_mass", "not_generator_sign")
"""The example chain and three chains that break one hypothesis of F2 each (its negative controls)."""


class ExampleChain(NamedTuple):
    """A family of fast chains along the slow variable: ``generator(y)`` (column convention),
    ``generator_dy(y)`` (analytic ``∂Q/∂y``) and the coupling ``c`` of ``g = −y + cᵀx + sin t``."""

    generator: Callable
    generator_dy: Callable
    c: np.ndarray


def _reducible_chain(n: int) -> ExampleChain:
    """Two disjoint copies: ``Q(y)`` on the states ``0..n−1``, ``Q(−y)`` on ``n..2n−1`` (two closed
    classes, a two-dimensional set of equilibria)."""

    def gen(y):
        return np.block(
            [
                [example_generator(n, y), np.zeros((n, n))],
                [np.zeros((n, n)), example_generator(n, -y)],
            ]
        )

    def gen_dy(y):
        return np.block(
            [
                [example_generator_dy(n, y), np.zeros((n, n))],
                [np.zeros((n, n)), -example_generator_dy(n, -y)],
            ]
        )

    return ExampleChain(gen, gen_dy, np.arange(2 * n, dtype=float))


def _negative_rate_chain(n: int) -> ExampleChain:
    """One jump rate made negative, column sums kept at zero (mass is conserved). n = 2: the rate
    ``0 → 1`` set to −1/4 (stable for all y; ``p_1 < 0``); n = 3: the rate ``1 → 2`` set to
    ``−(1 + y²)/2`` (the null vector has a negative entry for all y in [−3, 3])."""
    i, j = (1, 0) if n == 2 else (2, 1)

    def bump(Q, y):
        rate = -0.25 if n == 2 else -0.5 * (1.0 + y * y)
        Q = Q.copy()
        d = rate - Q[i, j]
        Q[i, j] += d
        Q[j, j] -= d
        return Q

    def bump_dy(y):
        dQ = example_generator_dy(n, y)
        d = (0.0 if n == 2 else -y) - dQ[i, j]
        dQ[i, j] += d
        dQ[j, j] -= d
        return dQ

    return ExampleChain(
        lambda y: bump(example_generator(n, y), y), bump_dy, np.arange(n, dtype=float)
    )


def example_chain(n: int, kind: str = "irreducible", defect: float = 1.0) -> ExampleChain:
    """The example chain with ``n ∈ {2, 3}`` states (``kind="irreducible"``, coupling
    ``c = (0, 1, …, n−1)``) or one of its negative controls (:data:`CHAIN_KINDS`):

    * ``reducible``: two disjoint copies of the chain (``Q(y)`` and ``Q(−y)``), ``c = (0, …, 2n−1)``;
    * ``not_generator_mass``: ``Q(y) − defect·I`` (``1ᵀQ ≠ 0``: mass decays);
    * ``not_generator_sign``: one negative jump rate, mass conserved.
    """
    n = _check_example(n, 0.0)[0]
    validation.choice("kind", kind, CHAIN_KINDS)
    defect = validation.real("defect", defect, low=0.0, low_open=True)
    c = np.arange(n, dtype=float)
    if kind == "irreducible":
        return ExampleChain(
            lambda y: example_generator(n, y), lambda y: example_generator_dy(n, y), c
        )
    if kind == "reducible":
        return _reducible_chain(n)
    if kind == "not_generator_mass":
        return ExampleChain(
            lambda y: example_generator(n, y) - defect * np.eye(n),
            lambda y: example_generator_dy(n, y),
            c,
        )
    return _negative_rate_chain(n)


def switch_generator(n: int, y: float) -> np.ndarray:
    """Column-convention generator with the jump ``0 → 1`` at rate ``max(y, 0)``, ``1 → 0`` at
    ``max(−y, 0)`` and (n = 3) ``2 → 0`` at rate 1: for y ≠ 0 one closed class (``{1}`` for y > 0,
    ``{0}`` for y < 0) but never irreducible; at y = 0 two closed classes. Its stationary
    distribution jumps from state 0 to state 1 at y = 0 (the discontinuous target of F3)."""
    n, y = _check_example(n, y)
    Q = np.zeros((n, n))
    a, b = max(y, 0.0), max(-y, 0.0)
    Q[1, 0], Q[0, 0] = a, -a
    Q[0, 1], Q[1, 1] = b, -b
    if n == 3:
        Q[0, 2], Q[2, 2] = 1.0, -1.0
    return Q


# --------------------------------------------------------------------------- coupled system


class DeadlineExceeded(RuntimeError):
    """An integration ran past its caller's CPU-time deadline (:func:`integrate_coupled`)."""


@dataclass
class CoupledRun:
    """A trajectory of ``ε x' = Q(y) x``, ``y' = g(y, x, t)``: times ``t`` (k,), ``x`` (k, n),
    ``y`` (k,), and the solver counters ``nfev``, ``njev``, ``nlu``, ``method``, ``success``."""

    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    nfev: int
    njev: int
    nlu: int
    method: str
    success: bool


def integrate_coupled(
    generator,
    generator_dy,
    eps: float,
    x0,
    y0: float,
    slow,
    t_eval,
    method: str = "Radau",
    rtol: float = 1e-10,
    atol: float = 1e-12,
    require_generator: bool = True,
    deadline: float | None = None,
) -> CoupledRun:
    """Integrate the F2 fast–slow system with ``scipy.integrate.solve_ivp`` and the analytic Jacobian

    ::

        d/dt (x, y) = (Q(y) x / ε,  g(y, x, t)),
        J = [[Q(y)/ε, ∂_yQ(y) x / ε], [∂g/∂x, ∂g/∂y]].

    ``generator(y)`` and ``generator_dy(y)`` return ``Q(y)`` and ``∂Q/∂y``; ``slow`` is a
    :class:`SlowField` or the coupling ``c`` of the example field ``g = −y + cᵀx + sin t``
    (then ``J``'s last row is ``[cᵀ, −1]``). ``t_eval`` is increasing
    and starts at the initial time. With ``require_generator`` (default) ``Q(y0)`` must be a
    generator; the negative controls switch it off. Stiff methods only (``Radau``, ``BDF``,
    ``LSODA``): the fast rate is ``gap/ε``.

    ``deadline`` is a :func:`time.process_time` value: past it the right-hand side raises
    :class:`DeadlineExceeded` (with the time and the evaluations so far), so that a run whose cost
    nobody could estimate beforehand (a stiff slow field) ends with its caller's time budget.
    """
    eps = validation.real("eps", eps, low=0.0, low_open=True)
    validation.choice("method", method, ("Radau", "BDF", "LSODA"))
    x0 = validation.finite_array("x0", x0, ndim=1)
    y0 = validation.real("y0", y0)
    n = x0.size
    slow = as_slow_field(slow, n)
    t_eval = validation.finite_array("t_eval", t_eval, ndim=1)
    if t_eval.size < 2 or np.any(np.diff(t_eval) <= 0):
        raise ValueError("t_eval must be strictly increasing with at least 2 points")
    Q0 = validation.finite_array("generator(y0)", generator(y0), shape=(n, n))
    if require_generator:
        check_generator(Q0)

    evaluations = [0]

    def rhs(t, z):
        evaluations[0] += 1
        if deadline is not None and time.process_time() > deadline:
            raise DeadlineExceeded(
                f"solve_ivp({method}) at eps={eps:g} passed its CPU-time deadline at t={t:.6g} "
                f"after {evaluations[0]} evaluations"
            )
        x, yy = z[:n], z[n]
        return np.concatenate([generator(yy) @ x / eps, [slow.value(yy, x, t)]])

    def jac(t, z):
        x, yy = z[:n], z[n]
        J = np.empty((n + 1, n + 1))
        J[:n, :n] = generator(yy) / eps
        J[:n, n] = generator_dy(yy) @ x / eps
        J[n, :n], J[n, n] = slow.gradient(yy, x, t)
        return J

    sol = solve_ivp(
        rhs,
        (t_eval[0], t_eval[-1]),
        np.concatenate([x0, [y0]]),
        method=method,
        t_eval=t_eval,
        jac=jac,
        rtol=rtol,
        atol=atol,
    )
    if not sol.success:
        raise RuntimeError(f"solve_ivp({method}) failed at eps={eps}: {sol.message}")
    return CoupledRun(
        t=sol.t,
        x=sol.y[:n].T.copy(),
        y=sol.y[n].copy(),
        nfev=int(sol.nfev),
        njev=int(sol.njev),
        nlu=int(sol.nlu),
        method=method,
        success=bool(sol.success),
    )


# --------------------------------------------------------------------------- attention (F3)


def _attention_jvp(cfg, p, X: np.ndarray, dX: np.ndarray) -> np.ndarray:
    """Directional derivative of ``Attn(X) = A(X) n(X) V`` along ``dX`` (RMS norm, softmax)."""

    if cfg.norm:
        ms = np.mean(X * X, axis=-1, keepdims=True) + cfg.norm_eps
        r = np.sqrt(ms)
        Xn = X / r
        dXn = dX / r - X * np.sum(X * dX, axis=-1, keepdims=True) / (X.shape[1] * r**3)
    else:
        Xn, dXn = kernels.normed(cfg, X), dX
    A = kernels.kernel(cfg, Xn, p.Q, p.K, cfg.mask_array)
    dS = cfg.score_scale * ((dXn @ p.Q) @ (Xn @ p.K).T + (Xn @ p.Q) @ (dXn @ p.K).T)
    AdS = A * dS
    dA = AdS - A * AdS.sum(axis=-1, keepdims=True)
    return dA @ (Xn @ p.V) + A @ (dXn @ p.V)


def attention_mixing_operator(config, params, X, kind: str = "frozen") -> np.ndarray:
    """The token-mixing operator ``M`` (Td × Td, row-major ``vec``) of the attention output at ``X``.

    * ``kind="frozen"``: ``M = A(X) ⊗ Vᵀ``, the linear map ``Z ↦ A(X) Z V`` with the attention
      matrix frozen at ``X`` (acting on the normalised state ``Z = n(X)``);
    * ``kind="linearised"``: ``M = ∂ vec Attn(X) / ∂ vec X``, the full Jacobian of
      ``Attn(X) = A(X) n(X) V`` (softmax derivative and norm Jacobian included), by analytic JVPs.

    The attention update ``dX/dτ = M X − X`` is a master equation over (token, feature) pairs iff
    ``M − I`` is a generator in the row convention (:func:`generator_violation` with
    ``convention="row"``): off-diagonal ``M ≥ 0`` and ``M 1 = 1``. Small ``T·d`` only (dense).
    """

    validation.choice("kind", kind, ("frozen", "linearised"))
    p = check_layer_params(config, params)
    X = check_state(config, X)
    T, d = X.shape
    if T * d > 4096:
        raise ValueError(f"attention_mixing_operator is dense: T·d = {T * d} > 4096")
    if kind == "frozen":
        A = kernels.kernel(config, kernels.normed(config, X), p.Q, p.K, config.mask_array)
        return np.kron(A, p.V.T)
    M = np.empty((T * d, T * d))
    E = np.zeros((T, d))
    for k in range(T * d):
        E.flat[k] = 1.0
        M[:, k] = _attention_jvp(config, p, X, E).ravel()
        E.flat[k] = 0.0
    return M
