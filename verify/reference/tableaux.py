"""Order conditions of Runge–Kutta and Rosenbrock-W tableaux, in exact rational arithmetic.

A float64 coefficient is exactly a dyadic rational; :func:`exact` turns it into that
:class:`fractions.Fraction`, and every condition below is evaluated without rounding. A tableau
typed correctly from its paper satisfies each condition up to the rounding of its coefficients to
float64 (a residual of a few units of roundoff relative to the size of the terms,
:data:`ROUNDING_UNITS`); a coefficient wrong in its sixth digit leaves a residual many orders of
magnitude above that.

* Runge–Kutta (explicit or implicit) of order ``p``: ``c = A·1`` and, for every rooted tree ``t``
  with ``|t| ≤ p`` (Butcher), ``bᵀΦ(t) = 1/γ(t)`` with the stage weights
  ``Φ(•) = 1``, ``Φ([t_1 … t_k]) = Π_k (A Φ(t_k))`` (element-wise) and the density
  ``γ([t_1 … t_k]) = |t| Π_k γ(t_k)``: 1, 2, 4, 8, 17, 37, 85, 200 trees up to orders 1…8.
* Rosenbrock-W of order 3 (Steihaug & Wolfbrandt; Rang & Angermann 2005): with ``α`` (strictly
  lower), ``Γ`` (lower, diagonal ``γ``), ``α_i = Σ_j α_ij``, ``γ_i = Σ_{j<i} Γ_ij``:
  ``Σb = 1``, ``Σ b α_i = 1/2``, ``Σ b γ_i = −γ``, ``Σ b α_i² = 1/3``, ``bᵀα α_· = 1/6``,
  ``bᵀα γ_· = −γ/2``, ``bᵀΓ_s α_· = −γ/2``, ``bᵀΓ_s γ_· = γ²`` (``Γ_s`` the strictly lower part):
  order 3 for *any* matrix in place of the Jacobian. The embedded solution: the three conditions
  of order 2. Stiff accuracy: ``b_j = α_sj + Γ_sj`` (last row) and ``α_s = 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

ROUNDING_UNITS = 64
"""A condition holds when ``|residual| ≤ ROUNDING_UNITS · u · (1 + Σ|terms|)``, ``u = 2⁻⁵³``."""

UNIT_ROUNDOFF = Fraction(1, 2**53)


def exact(x) -> Fraction:
    """The rational a float64 (or an int) stands for."""
    return Fraction(float(x))


@dataclass(frozen=True)
class Condition:
    """One order condition: its name, the exact residual and the size of its terms."""

    name: str
    residual: Fraction
    size: Fraction

    @property
    def holds(self) -> bool:
        return abs(self.residual) <= ROUNDING_UNITS * UNIT_ROUNDOFF * (1 + self.size)


def condition(name: str, terms: list, target: Fraction) -> Condition:
    """The condition ``Σ terms = target`` (exact)."""
    return Condition(
        name, sum(terms, Fraction(0)) - target, sum((abs(t) for t in terms), Fraction(0))
    )


# ----------------------------------------------------------------------------- rooted trees


def trees(order: int) -> list:
    """Every rooted tree with ``order`` vertices, as a sorted tuple of its children (canonical)."""
    if order == 1:
        return [()]
    out = set()
    for kids in _forests(order - 1, order - 1):
        out.add(tuple(sorted(kids)))
    return sorted(out)


def _forests(n: int, largest: int) -> list:
    """Multisets of trees with ``n`` vertices in all, each tree of at most ``largest`` vertices
    (generated in non-increasing order of size to avoid repeats up to sorting)."""
    if n == 0:
        return [[]]
    out = []
    for k in range(min(n, largest), 0, -1):
        for t in trees(k):
            for rest in _forests(n - k, k):
                out.append([t, *rest])
    return out


def size(t) -> int:
    return 1 + sum(size(c) for c in t)


def density(t) -> int:
    """``γ(t)``."""
    g = size(t)
    for c in t:
        g *= density(c)
    return g


def runge_kutta_conditions(A, b, c, order: int, name: str = "") -> list:
    """The conditions ``c = A·1`` and ``bᵀΦ(t) = 1/γ(t)`` for all trees up to ``order``."""
    A = [[exact(a) for a in row] for row in A]
    b = [exact(x) for x in b]
    c = [exact(x) for x in c]
    s = len(b)
    out = [condition(f"{name}c[{i}] = Σ_j a_{i}j", list(A[i][:s]), c[i]) for i in range(s)]
    memo: dict = {}

    def phi(t):
        if t not in memo:
            v = [Fraction(1)] * s
            for child in t:
                w = phi(child)
                Aw = [
                    sum((A[i][j] * w[j] for j in range(s) if A[i][j]), Fraction(0))
                    for i in range(s)
                ]
                v = [x * y for x, y in zip(v, Aw)]
            memo[t] = v
        return memo[t]

    for p in range(1, order + 1):
        for k, t in enumerate(trees(p)):
            v = phi(t)
            out.append(
                condition(
                    f"{name}order {p} tree {k}",
                    [b[i] * v[i] for i in range(s)],
                    Fraction(1, density(t)),
                )
            )
    return out


def collocation_conditions(A, c, stages: int, name: str = "") -> list:
    """``C(q)``: ``Σ_j a_ij c_j^{k−1} = c_i^k / k`` for ``k = 1 … q`` (``q`` = ``stages``)."""
    A = [[exact(a) for a in row] for row in A]
    c = [exact(x) for x in c]
    out = []
    for i in range(len(c)):
        for k in range(1, stages + 1):
            terms = [A[i][j] * c[j] ** (k - 1) for j in range(len(c))]
            out.append(condition(f"{name}C({k}) row {i}", terms, c[i] ** k / k))
    return out


def moment_conditions(e, c, targets: list, name: str = "") -> list:
    """``Σ_j e_j c_j^k = targets[k − 1]`` for ``k = 1 …`` (an error estimate's conditions)."""
    e = [exact(x) for x in e]
    c = [exact(x) for x in c]
    return [
        condition(f"{name}moment {k}", [ej * cj**k for ej, cj in zip(e, c)], Fraction(t))
        for k, t in enumerate(targets, start=1)
    ]


def rosenbrock_w_conditions(alpha, Gamma, b, bhat, name: str = "") -> list:
    """Order 3 (any W) of ``b``, order 2 of ``bhat`` and stiff accuracy (module docstring)."""
    a = [[exact(x) for x in row] for row in alpha]
    G = [[exact(x) for x in row] for row in Gamma]
    b = [exact(x) for x in b]
    bh = [exact(x) for x in bhat]
    s = len(b)
    gam = G[0][0]
    Gs = [[G[i][j] if j < i else Fraction(0) for j in range(s)] for i in range(s)]
    al = [sum(a[i], Fraction(0)) for i in range(s)]
    gi = [sum(Gs[i], Fraction(0)) for i in range(s)]

    def mv(M, v):
        return [sum((M[i][j] * v[j] for j in range(s)), Fraction(0)) for i in range(s)]

    def dot(w, v):
        return [x * y for x, y in zip(w, v)]

    one = [Fraction(1)] * s
    out = [condition(f"{name}diagonal {i} = γ", [G[i][i]], gam) for i in range(1, s)]
    for tag, w, order in (("b", b, 3), ("bhat", bh, 2)):
        out += [
            condition(f"{name}{tag}: Σb = 1", dot(w, one), Fraction(1)),
            condition(f"{name}{tag}: Σ b α_i = 1/2", dot(w, al), Fraction(1, 2)),
            condition(f"{name}{tag}: Σ b γ_i = −γ", dot(w, gi), -gam),
        ]
        if order >= 3:
            out += [
                condition(
                    f"{name}{tag}: Σ b α_i² = 1/3", dot(w, [x * x for x in al]), Fraction(1, 3)
                ),
                condition(f"{name}{tag}: bᵀα α = 1/6", dot(w, mv(a, al)), Fraction(1, 6)),
                condition(f"{name}{tag}: bᵀα γ = −γ/2", dot(w, mv(a, gi)), -gam / 2),
                condition(f"{name}{tag}: bᵀΓ α = −γ/2", dot(w, mv(Gs, al)), -gam / 2),
                condition(f"{name}{tag}: bᵀΓ γ = γ²", dot(w, mv(Gs, gi)), gam * gam),
            ]
    out += [
        condition(f"{name}stiffly accurate b_{j}", [a[s - 1][j], G[s - 1][j]], b[j])
        for j in range(s)
    ]
    out.append(condition(f"{name}α_s = 1", a[s - 1], Fraction(1)))
    return out
