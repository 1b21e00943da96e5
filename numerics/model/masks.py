"""Attention masks, the frozen kernel ``K_mask`` and its eigenvalue-1 spectral data.

A mask is a boolean T×T matrix whose rows are all non-empty (every token attends to something);
entry ``[t, s]`` says whether token ``t`` may attend to token ``s``. The named masks are

* ``"causal"``: ``s ≤ t``;
* ``"block_causal"``: same block and ``s ≤ t``;
* ``"block_bidirectional"``: same block.

The *frozen kernel* ``K_mask`` divides each row of the mask by its count. It is what every softmax
attention returns on a token-homogeneous state ``X = 1 xᵀ`` (all scores in a row are equal). ``K`` is
row-stochastic, so ``K − I`` is a generator in the row convention and eigenvalue 1 is semisimple
for the named masks. The spectral projector onto eigenvalue 1 factors as ``Π = R Lᵀ`` with
``LᵀR = I``; :func:`coarse_maps` returns ``(R, L)``:

* causal: ``R = 1_T``, ``L = e_1`` (the first token persists);
* block_causal: ``R = U``, ``L = F`` (first token of each block);
* block_bidirectional: ``R = U``, ``L = Bᵀ`` (the block mean).

Caveat: the causal kernel is strongly non-normal; never rely on a numerical eigendecomposition of
it beyond T ≈ 20 (see claim D4).
"""

from __future__ import annotations

import numpy as np

from numerics import validation as v

NAMED_MASKS = ("causal", "block_causal", "block_bidirectional")
"""The mask names understood by :func:`make_mask` and :func:`coarse_maps`."""

__all__ = [
    "NAMED_MASKS",
    "make_mask",
    "as_mask",
    "frozen_kernel",
    "coarse_maps",
    "spectral_projector",
    "kernel_eigenvalues",
    "block_level_mask",
]


def make_mask(name: str, T: int, P: int | None = None) -> np.ndarray:
    """Return the named boolean T×T mask. ``P`` (dividing ``T``) is required for block masks."""
    v.choice("mask", name, NAMED_MASKS)
    T = v.positive_int("T", T)
    if name == "causal":
        return np.tril(np.ones((T, T), dtype=bool))
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = v.divides(P, T)
    same_block = np.kron(np.eye(N, dtype=bool), np.ones((P, P), dtype=bool))
    if name == "block_causal":
        return same_block & np.tril(np.ones((T, T), dtype=bool))
    return same_block


def as_mask(mask, T: int, P: int | None = None) -> np.ndarray:
    """Resolve ``mask`` (a name from :data:`NAMED_MASKS` or a boolean T×T array) to a boolean array.

    Custom masks must be boolean, of shape (T, T), with every row non-empty.
    """
    if isinstance(mask, str):
        return make_mask(mask, T, P)
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise TypeError(f"a custom mask must be a boolean array, got dtype {arr.dtype}")
    if arr.shape != (T, T):
        raise ValueError(f"a custom mask must have shape ({T}, {T}), got {arr.shape}")
    empty = np.flatnonzero(~arr.any(axis=1))
    if empty.size:
        raise ValueError(
            f"every mask row must allow at least one token; rows {empty[:5].tolist()} are empty"
        )
    return arr


def block_level_mask(slow_mask: str, N: int) -> np.ndarray:
    """The N×N mask of the slow attention over pooled tokens: ``"blockcausal"`` or ``"full"``."""
    v.choice("slow_mask", slow_mask, ("blockcausal", "full"))
    N = v.positive_int("N", N)
    if slow_mask == "full":
        return np.ones((N, N), dtype=bool)
    return np.tril(np.ones((N, N), dtype=bool))


def frozen_kernel(mask, T: int | None = None, P: int | None = None) -> np.ndarray:
    """``K_mask``: the mask with each row divided by its count (row-stochastic, T×T).

    ``mask`` is a boolean array, or a name together with ``T`` (and ``P`` for block masks).
    """
    if isinstance(mask, str):
        if T is None:
            raise ValueError(f"frozen_kernel({mask!r}) needs T")
        m = make_mask(mask, T, P)
    else:
        m = np.asarray(mask)
        m = as_mask(m, m.shape[0] if m.ndim == 2 else -1)
    m = m.astype(np.float64)
    return m / m.sum(axis=1, keepdims=True)


def coarse_maps(name: str, T: int, P: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(R, L)`` with ``Π = R Lᵀ`` the spectral projector of ``K_name`` onto eigenvalue 1.

    ``R`` spans the right eigenvectors (persistent states), ``L`` the left ones (the coarse
    variable is ``Y = Lᵀ X``), normalised so that ``LᵀR = I``. Named masks only.
    """
    v.choice("mask", name, NAMED_MASKS)
    T = v.positive_int("T", T)
    if name == "causal":
        R = np.ones((T, 1))
        L = np.zeros((T, 1))
        L[0, 0] = 1.0
        return R, L
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = v.divides(P, T)
    U = np.kron(np.eye(N), np.ones((P, 1)))
    if name == "block_causal":
        first = np.zeros((P, 1))
        first[0, 0] = 1.0
        return U, np.kron(np.eye(N), first)
    return U, U / P


def spectral_projector(name: str, T: int, P: int | None = None) -> np.ndarray:
    """Dense ``Π = R Lᵀ`` (T×T) for a named mask. For small sizes and checks."""
    R, L = coarse_maps(name, T, P)
    return R @ L.T


def kernel_eigenvalues(name: str, T: int, P: int | None = None) -> dict[float, int]:
    """Exact eigenvalues of ``K_name`` with their algebraic multiplicities, largest first.

    causal: ``{1, 1/2, …, 1/T}``; block_causal: ``{1, …, 1/P}`` each ``N``-fold;
    block_bidirectional: ``{1: N, 0: T − N}`` (no zero eigenvalue when ``P = 1``).
    """
    v.choice("mask", name, NAMED_MASKS)
    T = v.positive_int("T", T)
    if name == "causal":
        return {1.0 / (t + 1): 1 for t in range(T)}
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = v.divides(P, T)
    if name == "block_causal":
        return {1.0 / (p + 1): N for p in range(P)}
    out = {1.0: N}
    if P > 1:
        out[0.0] = T - N
    return out
