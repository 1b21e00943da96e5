"""LAPACK decompositions whose answers are not unique, behind one door.

Several decompositions leave LAPACK a free choice, and different CPUs' BLAS/LAPACK kernels make
different choices:

* eigenvalues come in no particular order (:func:`eig`, :func:`eigvals`);
* eigenvectors are defined up to a non-zero factor each, and inside a repeated eigenvalue's
  eigenspace any basis is valid, including a nearly dependent one (:func:`eig`) or, for symmetric
  matrices, any orthonormal one (:func:`eigh`);
* singular vectors are defined up to a joint sign, and up to a rotation inside a repeated singular
  value's subspace and inside the null space (:func:`svd`).

Nothing in this suite may decide a verdict on such a choice (use spectral projectors, closed
forms, basis-free quantities instead). Every call to one of these decompositions in ``numerics``,
``verify`` and ``figures`` goes through this module, so that a test can hand every consumer other
valid answers with :func:`other_valid_answers` and check that no verdict changes. The unique parts
(eigenvalues as a multiset, singular values in descending order, ``eigh``'s ascending eigenvalues)
are never altered.
"""

from __future__ import annotations

import contextlib

import numpy as np

_ALTERNATIVE: _Alternatives | None = None


def eig(A):
    """``(w, V)`` with ``A V = V diag(w)``; order, scaling and the basis of repeated eigenvalues
    are LAPACK's choice."""
    w, V = np.linalg.eig(A)
    return (w, V) if _ALTERNATIVE is None else _ALTERNATIVE.eig(w, V)


def eigvals(A):
    """The eigenvalues of ``A`` in LAPACK's order (use them as a multiset)."""
    w = np.linalg.eigvals(A)
    return w if _ALTERNATIVE is None else _ALTERNATIVE.permute(w)


def eigh(A):
    """``(w, V)`` of a symmetric ``A``: ``w`` ascending (unique), ``V`` orthonormal (signs and the
    basis of repeated eigenvalues are LAPACK's choice)."""
    w, V = np.linalg.eigh(A)
    return (w, V) if _ALTERNATIVE is None else (w, _ALTERNATIVE.orthonormal_basis(w, V))


def svd(A, full_matrices: bool = True):
    """``(U, s, Vt)`` with ``s`` descending (unique); joint signs of singular vector pairs, the basis
    inside repeated singular values and the null-space columns are LAPACK's choice."""
    U, s, Vt = np.linalg.svd(A, full_matrices=full_matrices)
    return (U, s, Vt) if _ALTERNATIVE is None else _ALTERNATIVE.svd(U, s, Vt)


def svdvals(A):
    """The singular values of ``A``, descending (unique up to rounding)."""
    return np.linalg.svd(A, compute_uv=False)


def null_space(A, rtol: float | None = None) -> np.ndarray:
    """An orthonormal basis (columns) of the numerical null space of the 2-D array ``A``: right
    singular vectors whose singular value is below ``rtol·s_max`` (default ``max(A.shape)·eps``).
    Any orthonormal basis is valid: use it only through basis-free quantities (projectors, ranks)."""
    A = np.asarray(A)
    _, s, Vt = svd(A, full_matrices=True)
    tol = (max(A.shape) * np.finfo(float).eps if rtol is None else rtol) * (s[0] if s.size else 0.0)
    rank = int(np.sum(s > tol))
    return Vt[rank:].conj().T


# ----------------------------------------------------------------------------- other answers


class _Alternatives:
    """Other valid answers, drawn from a seeded generator."""

    def __init__(self, seed: int, cond: float):
        self.rng = np.random.default_rng(seed)
        self.cond = cond

    def permute(self, w):
        w = np.asarray(w)
        if w.ndim != 1:
            return w
        return w[self.rng.permutation(w.size)]

    def _clusters(self, w, rtol: float = 1e-10):
        """Index groups of numerically equal eigenvalues/singular values."""
        w = np.asarray(w)
        scale = max(float(np.abs(w).max()) if w.size else 0.0, 1.0)
        groups, used = [], np.zeros(w.size, bool)
        for i in range(w.size):
            if used[i]:
                continue
            idx = np.flatnonzero(~used & (np.abs(w - w[i]) <= rtol * scale))
            used[idx] = True
            groups.append(idx)
        return groups

    def _mixing(self, k: int, complex_: bool):
        """A random invertible k×k matrix with condition number ≈ ``cond``."""
        Q1, _ = np.linalg.qr(self.rng.standard_normal((k, k)))
        Q2, _ = np.linalg.qr(self.rng.standard_normal((k, k)))
        s = np.geomspace(1.0, 1.0 / self.cond, k) if k > 1 else np.ones(1)
        M = (Q1 * s) @ Q2
        return M.astype(complex) if complex_ else M

    def _orthogonal(self, k: int):
        Q, R = np.linalg.qr(self.rng.standard_normal((k, k)))
        return Q * np.sign(np.diag(R))

    def eig(self, w, V):
        if np.ndim(V) != 2:
            return w, V
        w, V = np.array(w), np.array(V)
        for idx in self._clusters(w):
            if idx.size > 1:  # another (possibly nearly dependent) basis of the eigenspace
                V[:, idx] = V[:, idx] @ self._mixing(idx.size, np.iscomplexobj(V))
        # rescale every eigenvector (a real factor for real vectors, a phase too for complex ones)
        f = self.rng.uniform(0.2, 5.0, w.size) * self.rng.choice([-1.0, 1.0], w.size)
        if np.iscomplexobj(V):
            f = f * np.exp(1j * self.rng.uniform(0, 2 * np.pi, w.size))
        V = V * f
        order = self.rng.permutation(w.size)
        return w[order], V[:, order]

    def orthonormal_basis(self, w, V):
        if np.ndim(V) != 2:
            return V
        V = np.array(V)
        for idx in self._clusters(w):
            V[:, idx] = V[:, idx] @ self._orthogonal(idx.size)
        return V

    def svd(self, U, s, Vt):
        if np.ndim(U) != 2:
            return U, s, Vt
        U, Vt = np.array(U), np.array(Vt)
        k = s.size
        for idx in self._clusters(s):  # rotate jointly inside repeated singular values
            Q = self._orthogonal(idx.size)
            U[:, idx] = U[:, idx] @ Q
            Vt[idx, :] = Q.T @ Vt[idx, :]
        signs = self.rng.choice([-1.0, 1.0], k)
        U[:, :k] *= signs
        Vt[:k, :] *= signs[:, None]
        if U.shape[1] > k:  # any orthonormal basis of the left null space
            U[:, k:] = U[:, k:] @ self._orthogonal(U.shape[1] - k)
        if Vt.shape[0] > k:  # ... and of the right one
            Vt[k:, :] = self._orthogonal(Vt.shape[0] - k) @ Vt[k:, :]
        return U, s, Vt


@contextlib.contextmanager
def other_valid_answers(seed: int = 0, cond: float = 1e12):
    """Within the block, every decomposition of this module returns another valid answer: permuted
    eigenvalues, rescaled eigenvectors, an ill-conditioned (condition ≈ ``cond``) basis inside every
    repeated eigenvalue, flipped and rotated singular vectors. For tests of portability only."""
    global _ALTERNATIVE
    previous, _ALTERNATIVE = _ALTERNATIVE, _Alternatives(seed, cond)
    try:
        yield
    finally:
        _ALTERNATIVE = previous
