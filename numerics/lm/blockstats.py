"""How much structure neighbouring blocks of a text share: the quantity D9 says decides the gate.

**Statistic.** Cut the text into blocks of ``P`` characters and let ``h_b ∈ ℕ^V`` be block ``b``'s
character histogram (``P`` times the block mean of one-hot embeddings: exactly what block-mean
pooling of the input keeps). Draw a character ``c`` uniformly from block ``b`` and ``c'`` uniformly
from block ``b + 1``; their joint law is ``Σ_b h_b h_{b+1}ᵀ / (P²·(n−1))``.
:func:`neighbour_mutual_information` returns the plug-in mutual information ``I(c; c')`` in bits,
and the same for pairs of blocks at random positions (a random permutation of the blocks, the
*shuffled baseline*: what the estimator gives without neighbourhood, i.e. its bias plus any
corpus-wide heterogeneity). The **excess** ``I_neighbour − I_shuffled`` is the cross-block
structure; divided by the character entropy ``H(c)`` it is the fraction of a character's
uncertainty that one character of the previous block explains.

**Link to the slow path.** ``c`` is a function of the pooled previous block and an independent
index, so by data processing ``I(c; c') ≤ I(h_b; c')``: the excess is a lower bound on the
information per character that a channel reading only the previous block's mean can carry. D9:
with independent blocks it is 0 (up to the estimator's noise) and the gate is invisible in the
risk; a positive excess is usable cross-block structure, and the gate may open **unless the fast
path already carries it** (a ``causal`` fast mask sees the previous block itself).

Caveat: a plug-in MI is biased upwards by about ``(V−1)²/(2 n_pairs ln 2)`` bits; the shuffled
baseline has the same bias, so the excess removes it.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import validation

__all__ = [
    "block_histograms",
    "pair_mutual_information",
    "bag_predictive_gain",
    "neighbour_mutual_information",
]

LAMBDAS = np.linspace(0.0, 0.95, 20)
"""The mixing weights of the bag predictor, searched on a grid (one parameter)."""


def block_histograms(tokens: np.ndarray, P: int, vocab: int) -> np.ndarray:
    """``(n_blocks, vocab)`` character counts of the complete blocks of ``P`` tokens."""
    P = validation.positive_int("P", P)
    nb = tokens.size // P
    blocks = np.asarray(tokens[: nb * P], dtype=np.int64).reshape(nb, P)
    H = np.zeros((nb, vocab), dtype=np.int64)
    np.add.at(H, (np.repeat(np.arange(nb), P), blocks.ravel()), 1)
    return H


def entropy_bits(p: np.ndarray) -> float:
    """Shannon entropy in bits of the distribution ``p`` (zeros ignored)."""
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def pair_mutual_information(Ha: np.ndarray, Hb: np.ndarray) -> float:
    """Plug-in ``I(c; c')`` in bits for ``c`` uniform in block ``Ha[i]`` and ``c'`` uniform in
    block ``Hb[i]``, ``i`` uniform (rows are paired)."""
    J = Ha.T.astype(np.float64) @ Hb.astype(np.float64)
    J /= J.sum()
    pa, pb = J.sum(axis=1), J.sum(axis=0)
    nz = J > 0
    return float((J[nz] * np.log2(J[nz] / np.outer(pa, pb)[nz])).sum())


def bag_predictive_gain(Ha: np.ndarray, Hb: np.ndarray, unigram: np.ndarray) -> tuple:
    """``(gain, λ)``: the best, over :data:`LAMBDAS`, mean log₂-likelihood gain per character of
    block ``Hb[i]`` under ``q = λ·Ha[i]/P + (1 − λ)·unigram`` over the unigram alone (bits).

    A predictor's gain over the unigram is a lower bound on ``I(h_prev; c')``: how much the
    previous block's pooled mean can tell about a character of the next block."""
    P = Ha.sum(axis=1, keepdims=True).astype(np.float64)
    freq = Ha / P
    w = Hb.astype(np.float64)
    base = float((w * np.log2(unigram)[None, :]).sum() / w.sum())
    gains = [
        float((w * np.log2(lam * freq + (1 - lam) * unigram[None, :])).sum() / w.sum()) - base
        for lam in LAMBDAS
    ]
    k = int(np.argmax(gains))
    return gains[k], float(LAMBDAS[k])


def neighbour_mutual_information(tokens: np.ndarray, P: int, vocab: int, seed) -> dict:
    """The neighbour and shuffled-baseline pair MI (bits), their excess, the character entropy
    (bits) and the excess as a fraction of it; ``seed`` draws the baseline's permutation."""
    H = block_histograms(tokens, P, vocab)
    if H.shape[0] < 3:
        raise ValueError(f"need at least 3 blocks of P={P} tokens, got {H.shape[0]}")
    perm = np.random.default_rng(seed).permutation(H.shape[0])
    mi_nb = pair_mutual_information(H[:-1], H[1:])
    mi_sh = pair_mutual_information(H[perm[:-1]], H[perm[1:]])
    uni = H.sum(axis=0) / H.sum()
    uni = np.where(uni > 0, uni, 0.5 / H.sum())  # a character never seen: half a count
    h_char = entropy_bits(uni)
    excess = mi_nb - mi_sh
    gain_nb, lam = bag_predictive_gain(H[:-1], H[1:], uni)
    gain_sh, _ = bag_predictive_gain(H[perm[:-1]], H[perm[1:]], uni)
    return {
        "bag_gain_neighbour_bits": gain_nb,
        "bag_gain_shuffled_bits": gain_sh,
        "bag_gain_excess_bits": gain_nb - gain_sh,
        "bag_gain_excess_fraction": (gain_nb - gain_sh) / h_char,
        "bag_lambda": lam,
        "mi_neighbour_bits": mi_nb,
        "mi_shuffled_bits": mi_sh,
        "mi_excess_bits": excess,
        "char_entropy_bits": h_char,
        "mi_excess_fraction": excess / h_char,
        "blocks": int(H.shape[0]),
    }
