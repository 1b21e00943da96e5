"""F2's example chain and slow field, written from their definition (``docs/claims.md``, F2),
sharing no code with :mod:`numerics` or :mod:`theory`.

The chain with ``n ∈ {2, 3}`` states, column convention (``Q[i, j]`` is the rate of ``j → i``):

* n = 2: ``0 → 1`` at ``e^y``, ``1 → 0`` at ``1 + y²``;
* n = 3: ``0 → 1: e^y``, ``1 → 0: 1``, ``1 → 2: 1 + y²``, ``2 → 1: e^{−y}``, ``2 → 0: 2``,
  ``0 → 2: 1/2``;

and the slow field ``g = −y + Σ_i i·x_i + sin t``. F2's hypothesis ``reduced_solution_inside_grid``
is decided on these for the built-in instance, so that neither theory's derivation nor the
numerical chain under test decides whether the claim applies.
"""

from __future__ import annotations

import sympy as sp

RATES = {
    2: lambda y: {(1, 0): sp.exp(y), (0, 1): 1 + y**2},
    3: lambda y: {
        (1, 0): sp.exp(y),
        (0, 1): sp.Integer(1),
        (2, 1): 1 + y**2,
        (1, 2): sp.exp(-y),
        (0, 2): sp.Integer(2),
        (2, 0): sp.Rational(1, 2),
    },
}
"""``n ↦ (y ↦ {(i, j): rate of j → i})``."""


def example_chain(n: int, y: sp.Symbol) -> sp.Matrix:
    """The example chain's generator ``Q(y)`` with ``n`` states (``KeyError`` for another n)."""
    Q = sp.zeros(n, n)
    for (i, j), rate in RATES[n](y).items():
        Q[i, j] = rate
        Q[j, j] -= rate
    return Q


def example_slow_field(xs: tuple, y: sp.Symbol, t: sp.Symbol) -> sp.Expr:
    """``g(x, y, t) = −y + Σ_i i·x_i + sin t``."""
    return -y + sum(i * x for i, x in enumerate(xs)) + sp.sin(t)
