"""Closed forms for the stability margin and the critical gate (claim D7), and the exact algebra of
the slow coupling ``G = U_c K_s B`` (claim D6 (c)).

Margin and critical gate. For ``J`` normal with eigenvalues ``λ_i = r_i e^{iφ_i}`` (``r_i < 1``)
and ``G = I``:

* ``m(J) = min_{|z|=1} min_i |z − λ_i| = 1 − max_i r_i`` and ``‖G‖₂ = 1``;
* ``ρ(J + gI) = max_i |λ_i + g|``, and ``|λ + g| = 1`` for real ``g`` has the roots
  ``g = −r cos φ ± √(1 − r² sin²φ)``; the critical gates are
  ``g_c⁺ = min_i (−r_i cos φ_i + √(1 − r_i² sin²φ_i))`` and
  ``g_c⁻ = min_i ( r_i cos φ_i + √(1 − r_i² sin²φ_i))``;
* hence ``g_c^± ≥ 1 − r_i ≥ m/‖G‖`` for every eigenvalue, with equality for ``g_c⁺`` exactly when the
  eigenvalue of largest modulus is real and positive (``φ = 0``; the scalar case ``J = a·I``,
  ``a ≥ 0``: ``g_c⁺ = 1 − a = m/‖G‖``), and for ``g_c⁻`` when it is real and negative.

:func:`normal_critical_gates` derives these roots with SymPy (``solve`` on ``|λ + g|² = 1``) and
proves the bound ``g_c⁺ − (1 − r) ≥ 0`` (it simplifies to a sum of a square root and a non-negative
term); :func:`scalar_critical_gates` specialises to ``J = a·I``.

Slow coupling. At a token-homogeneous state the slow path linearises to
``δX ↦ U_c K_s B δX M_s`` (the softmax-derivative term vanishes because its rows sum to zero and
all pooled values are equal). In token space ``G = U_c K_s B`` with ``K_s`` the frozen block-causal
kernel over ``N`` pooled tokens. :func:`slow_coupling_algebra` checks in exact rational arithmetic
that ``G(I − UB) = 0``, ``(I − UB)G = 0``, ``(I − UFᵀ)G = 0`` and
``G(I − UFᵀ)(G(I − UFᵀ))ᵀ = (P − 1)·GGᵀ``: for ``block_causal`` (``Π = UFᵀ``) the block mean reads
the decaying bundle, and every singular value of ``G(I − Π)`` is ``√(P − 1)`` times one of ``G``:
``‖G(I − Π)‖₂ = √(P − 1)·‖G‖₂`` (:func:`block_causal_gap_ratio` derives the factor for symbolic ``P``).

This module never imports :mod:`numerics` (independent oracle).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

__all__ = [
    "NormalGates",
    "normal_critical_gates",
    "scalar_critical_gates",
    "block_causal_gap_ratio",
    "slow_coupling_algebra",
]


@dataclass(frozen=True)
class NormalGates:
    """Critical gates of one eigenvalue ``λ = r e^{iφ}`` of a normal ``J`` with ``G = I``.

    Attributes:
        r, phi: the SymPy symbols.
        g_plus, g_minus: ``g_c⁺(r, φ)``, ``g_c⁻(r, φ)`` (SymPy expressions).
        margin: ``1 − r``.
        slack_plus: ``g_c⁺ − (1 − r)``, shown non-negative for ``0 ≤ r < 1``.
        numeric: ``f(r, phi) -> (g_plus, g_minus, margin)`` (``lambdify``, ``cse=True``).
    """

    r: sp.Symbol
    phi: sp.Symbol
    g_plus: sp.Expr
    g_minus: sp.Expr
    margin: sp.Expr
    slack_plus: sp.Expr
    numeric: Callable


@functools.cache
def normal_critical_gates() -> NormalGates:
    """Solve ``|r e^{iφ} + g|² = 1`` for the real gate ``g`` (both signs) symbolically."""
    r, phi = sp.symbols("r phi", nonnegative=True)
    g = sp.symbols("g", real=True)
    modulus_sq = (r * sp.cos(phi) + g) ** 2 + (r * sp.sin(phi)) ** 2
    roots = sp.solve(sp.Eq(modulus_sq, 1), g)
    # the two roots are -r cos φ ± √(1 − r² sin² φ): the positive one is g_c⁺, minus the negative one g_c⁻
    disc = sp.sqrt(1 - r**2 * sp.sin(phi) ** 2)
    g_plus = -r * sp.cos(phi) + disc
    g_minus = r * sp.cos(phi) + disc
    found = {sp.simplify(x) for x in roots}
    for expected in (g_plus, -g_minus):
        if not any(sp.simplify(sp.expand_trig(x - expected)) == 0 for x in found):
            raise AssertionError(f"SymPy roots {found} do not contain {expected}")
    margin = 1 - r
    slack = g_plus - margin
    # slack ≥ 0: if 1 − r + r cos φ < 0 it is trivial; otherwise square both sides of
    # √(1 − r² sin²φ) ≥ 1 − r + r cos φ: the difference of squares is −2r(1 − r)(1 − cos φ) ≤ 0
    lhs = sp.expand((margin + r * sp.cos(phi)) ** 2 - (1 - r**2 * sp.sin(phi) ** 2))
    lhs = sp.simplify(lhs.subs(sp.sin(phi) ** 2, 1 - sp.cos(phi) ** 2))
    expected = sp.expand(-2 * r * (1 - r) * (1 - sp.cos(phi)))
    if sp.simplify(lhs - expected) != 0:
        raise AssertionError(f"margin identity failed: {lhs} vs {expected}")
    numeric = sp.lambdify((r, phi), (g_plus, g_minus, margin), modules="numpy", cse=True)
    return NormalGates(r, phi, g_plus, g_minus, margin, slack, numeric)


@functools.cache
def scalar_critical_gates():
    """``J = a·I``, ``G = I`` (``0 ≤ a < 1``): ``(a, g_c⁺, g_c⁻, m/‖G‖, numeric)``.

    ``g_c⁺ = 1 − a = m/‖G‖`` (the bound is tight) and ``g_c⁻ = 1 + a``.
    """
    a = sp.symbols("a", nonnegative=True)
    ng = normal_critical_gates()
    g_plus = sp.simplify(ng.g_plus.subs({ng.r: a, ng.phi: 0}))
    g_minus = sp.simplify(ng.g_minus.subs({ng.r: a, ng.phi: 0}))
    bound = 1 - a
    if sp.simplify(g_plus - bound) != 0:
        raise AssertionError(f"scalar case: g_c⁺ = {g_plus} is not 1 − a")
    numeric = sp.lambdify(a, (g_plus, g_minus, bound), modules="numpy", cse=True)
    return a, g_plus, g_minus, bound, numeric


def block_causal_gap_ratio() -> sp.Expr:
    """``‖G(I − UFᵀ)‖₂ / ‖G‖₂ = √(P − 1)`` for symbolic block size ``P``.

    ``G(I − UFᵀ) = U_c K_s (B − Fᵀ)`` and ``G = U_c K_s B``. The rows of ``B`` and of ``B − Fᵀ`` are
    supported on disjoint blocks, with squared norms ``P·(1/P)² = 1/P`` and
    ``(1 − 1/P)² + (P − 1)/P² = (P − 1)/P``; so ``(B − Fᵀ)(B − Fᵀ)ᵀ = (P − 1)·BBᵀ`` and every singular
    value scales by the square root of the ratio.
    """
    P = sp.symbols("P", positive=True, integer=True)
    p = sp.symbols("p", integer=True)
    mean_row = sp.summation((1 / P) ** 2, (p, 1, P))
    gap_row = (1 - 1 / P) ** 2 + sp.summation((1 / P) ** 2, (p, 2, P))
    return sp.sqrt(sp.simplify(gap_row / mean_row))


def slow_coupling_algebra(N: int, P: int) -> dict:
    """Exact (rational) matrices of the slow coupling for ``N`` blocks of ``P`` tokens, and the
    identities of D6 (c): returns a dict with ``G`` and the residual matrices (all zero) plus the
    exact ratio matrix check."""
    if not (isinstance(N, int) and isinstance(P, int) and N >= 1 and P >= 1):
        raise ValueError(f"N and P must be positive integers, got N={N!r}, P={P!r}")
    T = N * P
    U = sp.Matrix(T, N, lambda t, b: 1 if t // P == b else 0)
    Uc = sp.Matrix(T, N, lambda t, b: 1 if t // P == b + 1 else 0)
    B = sp.Matrix(N, T, lambda b, t: sp.Rational(1, P) if t // P == b else 0)
    F = sp.Matrix(T, N, lambda t, b: 1 if t == b * P else 0)
    Ks = sp.Matrix(N, N, lambda i, j: sp.Rational(1, i + 1) if j <= i else 0)
    G = Uc * Ks * B
    I = sp.eye(T)
    Pi = U * F.T
    gap = G * (I - Pi)
    return {
        "G": G,
        "G_times_I_minus_UB": G * (I - U * B),
        "I_minus_UB_times_G": (I - U * B) * G,
        "I_minus_Pi_times_G": (I - Pi) * G,
        "gap_gram_minus_scaled_gram": gap * gap.T - (P - 1) * G * G.T,
        "gap": gap,
    }
