"""Exact FLOP model of one layer's matrix products, fast path against slow path (claim A2).

A product of an a×b by a b×c matrix counts ``2abc`` FLOP (one multiply and one add per term).
With ``T`` tokens, ``N = T/P`` pooled tokens, width ``d`` and MLP width ``m``, the reference forward
(:mod:`numerics.model.layer`, dense scores whatever the mask) executes:

==================  ====================  ==================  =====================
piece               fast path             slow path           ratio slow / fast
==================  ====================  ==================  =====================
Q, K, V projections ``6Td²``              ``6Nd²``            ``1/P``
scores ``QKᵀ``      ``2T²d``              ``2N²d``            ``1/P²``
mixing ``A·V``      ``2T²d``              ``2N²d``            ``1/P²``
MLP                 ``4Tdm``              none                —
==================  ====================  ==================  =====================

so the attention core (scores + mixing) costs exactly ``1/P²`` and, with

    R(T, P, d, m) = (4N²d + 6Nd²) / (4T²d + 6Td² + 4Tdm),

the whole slow path relative to the whole fast layer satisfies

* ``R ≤ 1/P`` always (``P ≥ 1``): the numerator is ``(4T²d/P + 6Td²)/P ≤ (4T²d + 6Td²)/P``;
* ``R ≥ 1/P²`` **if and only if** ``3d(P − 1) ≥ 2m``: multiply out,
  ``P²(4T²d/P² + 6Td²/P) − (4T²d + 6Td² + 4Tdm) = 6Td²(P − 1) − 4Tdm``.

The lower bound is therefore *not* universal: the slow path has no MLP, so when the MLP is wide
compared with the slow projections (``m > 3d(P−1)/2``: ``P = 1`` for any ``m``; ``P = 2`` with
``m > 1.5d``; ``P = 3`` with ``m > 3d``, e.g. the usual ``m = 4d``) the slow path costs *less* than
``1/P²`` of the fast layer. With ``m = d`` (the default here) it holds for every ``P ≥ 2``.

Not in the model: the element-wise work (softmax ≈ 5 FLOP per score entry, the RMS norms, tanh,
block pooling ``Td`` adds, the gate and the residual), which is lower order in ``d``; and the saving
of a causal mask, which the reference does not exploit (the Numba path :mod:`numerics.model.compiled` does,
by row tiles). The model counts what the reference executes; ``verify/checks/a2.py`` checks it
against an instrumented run of the reference.
"""

from __future__ import annotations

from fractions import Fraction

from fastslow.numerics import validation

__all__ = [
    "matmul_flops",
    "layer_flops",
    "attention_ratio",
    "layer_ratio",
    "layer_ratio_lower_bound_holds",
]


def matmul_flops(a: int, b: int, c: int) -> int:
    """FLOP of an (a×b)·(b×c) product: ``2abc``."""
    return 2 * a * b * c


def _sizes(T, P, d, m):
    T = validation.positive_int("T", T)
    N = validation.divides(P, T)
    d = validation.positive_int("d", d)
    m = d if m is None else validation.positive_int("m", m)
    return T, int(P), N, d, m


def layer_flops(T: int, P: int, d: int, m: int | None = None) -> dict:
    """The matrix-product FLOP of one layer, by piece (integers), and the totals.

    Keys: ``fast_qkv``, ``fast_scores``, ``fast_mixing``, ``mlp``, ``slow_qkv``, ``slow_scores``,
    ``slow_mixing``; totals ``fast_attention_core`` (scores + mixing), ``slow_attention_core``,
    ``fast_layer`` (attention + projections + MLP), ``slow_path`` (everything the slow path
    multiplies), ``layer`` (both). ``m`` defaults to ``d``.
    """
    T, P, N, d, m = _sizes(T, P, d, m)
    f = {
        "fast_qkv": 3 * matmul_flops(T, d, d),
        "fast_scores": matmul_flops(T, d, T),
        "fast_mixing": matmul_flops(T, T, d),
        "mlp": matmul_flops(T, d, m) + matmul_flops(T, m, d),
        "slow_qkv": 3 * matmul_flops(N, d, d),
        "slow_scores": matmul_flops(N, d, N),
        "slow_mixing": matmul_flops(N, N, d),
    }
    f["fast_attention_core"] = f["fast_scores"] + f["fast_mixing"]
    f["slow_attention_core"] = f["slow_scores"] + f["slow_mixing"]
    f["fast_layer"] = f["fast_qkv"] + f["fast_attention_core"] + f["mlp"]
    f["slow_path"] = f["slow_qkv"] + f["slow_attention_core"]
    f["layer"] = f["fast_layer"] + f["slow_path"]
    return f


def attention_ratio(T: int, P: int, d: int) -> Fraction:
    """Slow over fast attention core, ``4N²d / 4T²d`` as an exact fraction (``= 1/P²``)."""
    f = layer_flops(T, P, d)
    return Fraction(f["slow_attention_core"], f["fast_attention_core"])


def layer_ratio(T: int, P: int, d: int, m: int | None = None) -> Fraction:
    """Slow path over fast layer, ``(4N²d + 6Nd²)/(4T²d + 6Td² + 4Tdm)`` as an exact fraction."""
    f = layer_flops(T, P, d, m)
    return Fraction(f["slow_path"], f["fast_layer"])


def layer_ratio_lower_bound_holds(P: int, d: int, m: int | None = None) -> bool:
    """The exact condition for ``layer_ratio ≥ 1/P²``: ``3d(P − 1) ≥ 2m`` (independent of ``T``)."""
    P = validation.positive_int("P", P)
    d = validation.positive_int("d", d)
    m = d if m is None else validation.positive_int("m", m)
    return 3 * d * (P - 1) >= 2 * m
