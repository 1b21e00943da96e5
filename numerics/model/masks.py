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
* block_bidirectional: ``R = U``, ``L = Bᵀ`` (the block mean);
* your own block-local boolean mask: ``R = U``, ``L`` the *stationary weighting*
  (:func:`stationary_weighting`): per block, the left eigenvector of the eigenvalue 1 of the block's
  kernel with ``Lᵀ1 = 1``, computed numerically by one linear solve (it exists and is unique when the
  block's mask graph has one closed class; it need not be the block mean when the block's kernel is
  not doubly stochastic).

:func:`subdominant_eigenvalue` is ``λ₂`` of any mask numerically: the largest real part among the
eigenvalues of ``K`` other than 1, so ``1 − λ₂`` is the rate at which ``dX/dτ = (K − I)X`` contracts
onto the eigenvalue-1 states.

Caveat: the causal kernel is strongly non-normal; never rely on a numerical eigendecomposition of
it beyond T ≈ 20 (see claim D4).
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import lapack, validation

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
    "is_block_local",
    "stationary_weighting",
    "subdominant_eigenvalue",
    "slowest_left_eigenvectors",
]

EIGENVALUE_ONE_TOL = 1e-9
"""An eigenvalue of a frozen kernel within this distance of 1 counts as the eigenvalue 1 in
:func:`subdominant_eigenvalue` (the eigenvalue 1 of a row-stochastic matrix is semisimple, so it is
computed to rounding)."""

SLOW_MODE_TOL = 1e-6
"""Eigenvalues within this distance are one eigenvalue, and singular values below this fraction of
the largest span a null space, in :func:`slowest_left_eigenvectors` (an eigenvalue of a defective
kernel is accurate only to about √(unit roundoff))."""


def make_mask(name: str, T: int, P: int | None = None) -> np.ndarray:
    """Return the named boolean T×T mask. ``P`` (dividing ``T``) is required for block masks."""
    validation.choice("mask", name, NAMED_MASKS)
    T = validation.positive_int("T", T)
    if name == "causal":
        return np.tril(np.ones((T, T), dtype=bool))
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = validation.divides(P, T)
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
    validation.choice("slow_mask", slow_mask, ("blockcausal", "full"))
    N = validation.positive_int("N", N)
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


def is_block_local(mask, P: int) -> bool:
    """Whether the boolean mask only connects tokens of the same block of ``P`` (``P`` divides T)."""
    m = np.asarray(mask, dtype=bool)
    validation.divides(P, m.shape[0])
    blocks = np.arange(m.shape[0]) // P
    return bool(not np.any(m & (blocks[:, None] != blocks[None, :])))


def stationary_weighting(mask, P: int) -> np.ndarray:
    """``L`` (T×N) of a block-local boolean mask: column ``b`` is the left eigenvector of the
    eigenvalue 1 of block ``b``'s frozen kernel ``K_b`` with entries summing to 1, zero outside the
    block (``LᵀK = Lᵀ``, ``LᵀU = I``).

    Numerically, per block, the solution ``π`` of ``(K_bᵀ − I)π = 0`` with its last equation
    replaced by ``1ᵀπ = 1`` (a nonsingular system exactly when the eigenvalue 1 of ``K_b`` is
    simple). ``ValueError`` if the mask is not block-local or a block's eigenvalue 1 is not simple
    (several closed classes: no unique weighting).
    """
    m = as_mask(mask, np.shape(mask)[0])
    T = m.shape[0]
    N = validation.divides(P, T)
    if not is_block_local(m, P):
        raise ValueError(f"the mask attends across blocks of P={P}: no block stationary weighting")
    K = frozen_kernel(m)
    L = np.zeros((T, N))
    for b in range(N):
        Kb = K[b * P : (b + 1) * P, b * P : (b + 1) * P]
        A = Kb.T - np.eye(P)
        A[-1, :] = 1.0
        rhs = np.zeros(P)
        rhs[-1] = 1.0
        s = lapack.svdvals(A)
        if s[-1] <= P * np.finfo(float).eps * s[0]:
            raise ValueError(
                f"block {b}: the eigenvalue 1 of its kernel is not simple (its mask graph has "
                "several closed classes): no unique stationary weighting"
            )
        L[b * P : (b + 1) * P, b] = np.linalg.solve(A, rhs)
    return L


def coarse_maps(mask, T: int | None = None, P: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(R, L)`` with ``Π = R Lᵀ`` the spectral projector of ``K_mask`` onto eigenvalue 1.

    ``R`` spans the right eigenvectors (persistent states), ``L`` the left ones (the coarse
    variable is ``Y = Lᵀ X``), normalised so that ``LᵀR = I``. ``mask`` is a name (closed forms) or
    a block-local boolean array with the block size ``P`` (``R = U``, ``L`` from
    :func:`stationary_weighting`).
    """
    if not isinstance(mask, str):
        if P is None:
            raise ValueError("coarse_maps of a custom mask needs the block size P")
        L = stationary_weighting(mask, P)
        return np.kron(np.eye(L.shape[1]), np.ones((P, 1))), L
    name = mask
    validation.choice("mask", name, NAMED_MASKS)
    T = validation.positive_int("T", T)
    if name == "causal":
        R = np.ones((T, 1))
        L = np.zeros((T, 1))
        L[0, 0] = 1.0
        return R, L
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = validation.divides(P, T)
    U = np.kron(np.eye(N), np.ones((P, 1)))
    if name == "block_causal":
        first = np.zeros((P, 1))
        first[0, 0] = 1.0
        return U, np.kron(np.eye(N), first)
    return U, U / P


def spectral_projector(name, T: int | None = None, P: int | None = None) -> np.ndarray:
    """Dense ``Π = R Lᵀ`` (T×T) for a named or a block-local custom mask (:func:`coarse_maps`). For
    small sizes and checks."""
    R, L = coarse_maps(name, T, P)
    return R @ L.T


def kernel_eigenvalues(name: str, T: int, P: int | None = None) -> dict[float, int]:
    """Exact eigenvalues of ``K_name`` with their algebraic multiplicities, largest first.

    causal: ``{1, 1/2, …, 1/T}``; block_causal: ``{1, …, 1/P}`` each ``N``-fold;
    block_bidirectional: ``{1: N, 0: T − N}`` (no zero eigenvalue when ``P = 1``).
    """
    validation.choice("mask", name, NAMED_MASKS)
    T = validation.positive_int("T", T)
    if name == "causal":
        return {1.0 / (t + 1): 1 for t in range(T)}
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = validation.divides(P, T)
    if name == "block_causal":
        return {1.0 / (p + 1): N for p in range(P)}
    out = {1.0: N}
    if P > 1:
        out[0.0] = T - N
    return out


def subdominant_eigenvalue(mask, T: int | None = None, P: int | None = None) -> float:
    """``λ₂``: the largest real part among the eigenvalues of the frozen kernel other than the
    eigenvalue 1 (those within :data:`EIGENVALUE_ONE_TOL` of 1), numerically (0 if there is none).

    ``mask`` is a name (with ``T``, ``P``) or a boolean array. The eigenvalues are a multiset (no
    LAPACK choice enters); an eigenvalue of a defective block is accurate only to about
    ``u^(1/k)`` for a Jordan block of size ``k`` (``u`` the unit roundoff: 1.5e-8 for ``k = 2``,
    6e-6 for ``k = 3``).
    """
    w = lapack.eigvals(frozen_kernel(mask, T, P))
    rest = w[np.abs(w - 1.0) > EIGENVALUE_ONE_TOL]
    return float(rest.real.max()) if rest.size else 0.0


def slowest_left_eigenvectors(mask, T: int | None = None, P: int | None = None) -> np.ndarray:
    """``W`` (T×k, complex): orthonormal bases, side by side, of the left eigenspaces of every
    eigenvalue ``λ`` of the frozen kernel with ``Re λ = λ₂`` (:func:`subdominant_eigenvalue`; a
    complex pair gives two), from the null spaces of ``(K − λI)ᴴ``. ``‖Wᴴx‖`` decays exactly like
    ``e^{−(1 − λ₂)τ}`` under ``dx/dτ = (K − I)x``, even when ``K`` is defective (no LAPACK choice
    enters it: the bases are orthonormal, the norm is basis-free). Empty when 1 is the only
    eigenvalue."""
    K = frozen_kernel(mask, T, P)
    w = lapack.eigvals(K)
    rest = w[np.abs(w - 1.0) > EIGENVALUE_ONE_TOL]
    if not rest.size:
        return np.zeros((K.shape[0], 0), dtype=complex)
    slow = rest[np.abs(rest.real - rest.real.max()) <= SLOW_MODE_TOL]
    reps: list = []
    for lam in slow:
        if all(abs(lam - r) > SLOW_MODE_TOL for r in reps):
            reps.append(lam)
    eye = np.eye(K.shape[0])
    return np.hstack([lapack.null_space((K - lam * eye).conj().T, SLOW_MODE_TOL) for lam in reps])
