"""Block pooling and up-sampling, applied by reshaping (never as dense matrices).

With ``T = N·P`` tokens in ``N`` blocks of ``P``:

* ``B = I_N ⊗ (1/P)·1_Pᵀ`` (N×T) is block-mean pooling, :func:`block_mean`;
* ``U = I_N ⊗ 1_P`` (T×N) is up-sampling, :func:`upsample`; ``BU = I_N`` and ``UB`` is the
  orthogonal projector onto block-constant sequences, :func:`block_constant_part`;
* ``U_c`` is causal up-sampling, :func:`causal_upsample`: block ``b`` receives row ``b−1``, block 0
  receives zero, so a token never sees the block it is in;
* ``W = I_N ⊗ wᵀ`` with ``w`` in the probability simplex is weighted pooling, :func:`weighted_pool`
  (``w = 1/P`` is the block mean; ``w = e_1`` picks the first token of each block).

All functions take arrays of shape ``(T,)`` or ``(T, d)`` (``(N,)`` or ``(N, d)`` for the
up-sampling maps) and return new arrays. The ``*_adjoint`` functions apply the transposed matrices
(used by the reverse-mode gradients). The functions with a leading underscore skip validation and are
for internal hot paths only.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model import kernels

__all__ = [
    "block_mean",
    "upsample",
    "causal_upsample",
    "causal_upsample_adjoint",
    "weighted_pool",
    "block_constant_part",
    "pooling_matrix",
    "upsampling_matrix",
    "causal_upsampling_matrix",
]


def _as_tokens(name: str, X) -> np.ndarray:
    X = validation.finite_array(name, X)
    if X.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (T,) or (T, d), got {X.shape}")
    return X


def block_mean(X, P: int) -> np.ndarray:
    """Block-mean pooling ``B X``: the mean of each block of ``P`` consecutive tokens.

    Raises ``ValueError`` if ``P`` does not divide ``T = X.shape[0]``.
    """
    X = _as_tokens("X", X)
    validation.divides(P, X.shape[0])
    return kernels.block_mean(X, P)


def upsample(Y, P: int) -> np.ndarray:
    """Up-sampling ``U Y``: every block value repeated ``P`` times."""
    Y = _as_tokens("Y", Y)
    P = validation.positive_int("P", P)
    return kernels.upsample(Y, P)


def causal_upsample(Y, P: int) -> np.ndarray:
    """Causal up-sampling ``U_c Y``: block ``b`` receives ``Y[b−1]``, block 0 receives zero."""
    Y = _as_tokens("Y", Y)
    P = validation.positive_int("P", P)
    return kernels.causal_upsample(Y, P)


def causal_upsample_adjoint(G, P: int) -> np.ndarray:
    """``U_cᵀ G``: row ``b`` is the sum of ``G`` over block ``b+1`` (the last row is zero)."""
    G = _as_tokens("G", G)
    validation.divides(P, G.shape[0])
    return kernels.causal_upsample_adjoint(G, P)


def weighted_pool(X, w) -> np.ndarray:
    """Weighted pooling ``W X`` with ``W = I_N ⊗ wᵀ``: ``Σ_p w_p X[bP + p]`` for each block ``b``.

    ``w`` must be a probability vector of length ``P`` (non-negative, summing to 1 within 1e-12).
    """
    X = _as_tokens("X", X)
    w = validation.finite_array("w", w, ndim=1)
    if np.any(w < 0) or abs(w.sum() - 1.0) > 1e-12:
        raise ValueError(
            f"w must be a probability vector (w ≥ 0, Σw = 1), got sum {w.sum()!r} "
            f"and min {w.min()!r}"
        )
    P = w.shape[0]
    N = validation.divides(P, X.shape[0])
    return np.tensordot(w, X.reshape((N, P) + X.shape[1:]), axes=([0], [1]))


def block_constant_part(X, P: int) -> np.ndarray:
    """``UB X``: the orthogonal projection of ``X`` onto block-constant sequences."""
    X = _as_tokens("X", X)
    validation.divides(P, X.shape[0])
    return kernels.upsample(kernels.block_mean(X, P), P)


def pooling_matrix(T: int, P: int, w=None) -> np.ndarray:
    """Dense ``B`` (or ``W`` for weights ``w``), N×T. For small checks and theory comparisons only."""
    N = validation.divides(P, T)
    w = np.full(P, 1.0 / P) if w is None else validation.finite_array("w", w, shape=(P,))
    return np.kron(np.eye(N), w[None, :])


def upsampling_matrix(T: int, P: int) -> np.ndarray:
    """Dense ``U``, T×N. For small checks only."""
    N = validation.divides(P, T)
    return np.kron(np.eye(N), np.ones((P, 1)))


def causal_upsampling_matrix(T: int, P: int) -> np.ndarray:
    """Dense ``U_c``, T×N (block b gets column b−1). For small checks only."""
    N = validation.divides(P, T)
    return np.kron(np.eye(N, k=-1), np.ones((P, 1)))
