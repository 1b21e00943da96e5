"""Shifted linear systems ``(σI − J) ⊗ I_k · x = v`` for the implicit steps, by the structure of ``J``.

Three storage forms of ``J`` (``m×m`` acting on the first index of ``y`` read as ``m×k``):

* :data:`BLOCK` (``mb < m``, block-local masks): ``J`` is the ``m×mb`` array of its diagonal
  blocks' rows (:mod:`numerics.integrators.base`); the factorisation is one LU with partial
  pivoting per ``mb×mb`` block, stored in place as ``(m/mb, mb, mb)`` in an ``m×mb`` array with
  the pivots: ``O(m·mb²)`` to factor, ``O(m·mb·k)`` to solve, ``O(m·mb)`` memory.
* :data:`LOWER` (``J`` lower triangular, e.g. a causal mask; detected from the zeros of ``J``):
  no factorisation, forward substitution on ``σI − J`` itself, ``O(m²k)`` per solve, blocked by
  :data:`TRSM_BLOCK` rows so that all but the diagonal blocks are BLAS products.
* :data:`DENSE`: one LU with partial pivoting of the whole ``m×m`` matrix, by the block code
  with one block (``O(m³)`` per factorisation, ``O(m²k)`` per solve). Loops, not LAPACK: no
  LAPACK binding to compile (seconds of cold start), and the dense case (a general mask that is
  neither block-local nor causal) is the rare one.

Real shifts (Rosenbrock, Radau's real eigenvalue) and complex ones (Radau's complex pair, solved in
complex arithmetic on real and imaginary parts held separately) share the code. A singular block
gives non-finite entries (no exception), which the step then rejects.
"""

from __future__ import annotations

import numpy as np
from numba import njit

DENSE, BLOCK, LOWER = 0, 1, 2
TRSM_BLOCK = 64
"""Rows per diagonal block of the blocked triangular solve (the rest is matrix products)."""


@njit(cache=True)
def structure(J, m, mb):
    """:data:`BLOCK` if ``mb < m``, else :data:`LOWER` if ``J`` has no entry above its diagonal,
    else :data:`DENSE`."""
    if mb < m:
        return BLOCK
    for i in range(m):
        for j in range(i + 1, m):
            if J[i, j] != 0.0:
                return DENSE
    return LOWER


@njit(cache=True)
def _lu_blocks(F, piv, m, mb):
    """In-place LU with partial pivoting of each ``mb×mb`` block held in the rows of ``F`` (m×mb)."""
    for b0 in range(0, m, mb):
        for c in range(mb):
            p = c
            big = abs(F[b0 + c, c])
            for r in range(c + 1, mb):
                if abs(F[b0 + r, c]) > big:
                    big = abs(F[b0 + r, c])
                    p = r
            piv[b0 + c] = p
            if p != c:
                for j in range(mb):
                    tmp = F[b0 + c, j]
                    F[b0 + c, j] = F[b0 + p, j]
                    F[b0 + p, j] = tmp
            inv = 1.0 / F[b0 + c, c]
            for r in range(c + 1, mb):
                f = F[b0 + r, c] * inv
                F[b0 + r, c] = f
                if f != 0.0:
                    for j in range(c + 1, mb):
                        F[b0 + r, j] -= f * F[b0 + c, j]


@njit(cache=True)
def factor_shifted(J, shift, m, mb, kind, F, piv):
    """Factorise ``shift·I − J`` into ``F`` in the form of ``kind`` (see the module docstring):
    real ``shift`` and ``F`` for Rosenbrock-W and Radau's real eigenvalue, complex for Radau's
    complex pair (Numba compiles one specialisation per dtype)."""
    w = J.shape[1]
    for i in range(m):
        for j in range(w):
            F[i, j] = -J[i, j]
        F[i, i % w] += shift
    if kind != LOWER:
        _lu_blocks(F, piv, m, w)


@njit(cache=True)
def _swap_rows(x, a, b, k):
    for q in range(k):
        tmp = x[a * k + q]
        x[a * k + q] = x[b * k + q]
        x[b * k + q] = tmp


@njit(cache=True)
def solve_real(F, piv, v, out, m, mb, k, kind):
    """``out = ((shift·I − J) ⊗ I_k)⁻¹ v`` from the factorisation of :func:`factor_shifted`."""
    mb = F.shape[1]
    out[:] = v
    if kind == LOWER:
        X = out.reshape((m, k))
        for r0 in range(0, m, TRSM_BLOCK):
            r1 = min(r0 + TRSM_BLOCK, m)
            if r0 > 0:
                X[r0:r1] -= np.dot(np.ascontiguousarray(F[r0:r1, :r0]), X[:r0])
            for i in range(r0, r1):
                for j in range(r0, i):
                    a = F[i, j]
                    if a != 0.0:
                        for q in range(k):
                            X[i, q] -= a * X[j, q]
                inv = 1.0 / F[i, i]
                for q in range(k):
                    X[i, q] *= inv
        return
    for b0 in range(0, m, mb):
        for c in range(mb):
            if piv[b0 + c] != c:
                _swap_rows(out, b0 + c, b0 + piv[b0 + c], k)
        for i in range(1, mb):
            for j in range(i):
                a = F[b0 + i, j]
                if a != 0.0:
                    for q in range(k):
                        out[(b0 + i) * k + q] -= a * out[(b0 + j) * k + q]
        for i in range(mb - 1, -1, -1):
            for j in range(i + 1, mb):
                a = F[b0 + i, j]
                if a != 0.0:
                    for q in range(k):
                        out[(b0 + i) * k + q] -= a * out[(b0 + j) * k + q]
            inv = 1.0 / F[b0 + i, i]
            for q in range(k):
                out[(b0 + i) * k + q] *= inv


@njit(cache=True)
def _sub_complex(ore, oim, i, j, a, k):
    """Row ``i`` −= ``a``·row ``j`` (complex ``a``; rows of ``k`` entries in real/imag parts)."""
    ar = a.real
    ai = a.imag
    for q in range(k):
        xr = ore[j * k + q]
        xi = oim[j * k + q]
        ore[i * k + q] -= ar * xr - ai * xi
        oim[i * k + q] -= ar * xi + ai * xr


@njit(cache=True)
def _div_complex(ore, oim, i, a, k):
    inv = 1.0 / a
    ar = inv.real
    ai = inv.imag
    for q in range(k):
        xr = ore[i * k + q]
        xi = oim[i * k + q]
        ore[i * k + q] = ar * xr - ai * xi
        oim[i * k + q] = ar * xi + ai * xr


@njit(cache=True)
def _lower_complex(Fc, ore, oim, m, k):
    """Blocked forward substitution with the complex lower-triangular ``Fc`` (off-diagonal
    blocks as complex BLAS products on a complex copy of the right-hand side)."""
    X = np.empty((m, k), dtype=np.complex128)
    for i in range(m):
        for q in range(k):
            X[i, q] = complex(ore[i * k + q], oim[i * k + q])
    for r0 in range(0, m, TRSM_BLOCK):
        r1 = min(r0 + TRSM_BLOCK, m)
        if r0 > 0:
            X[r0:r1] -= np.dot(np.ascontiguousarray(Fc[r0:r1, :r0]), X[:r0])
        for i in range(r0, r1):
            for j in range(r0, i):
                a = Fc[i, j]
                if a != 0.0:
                    for q in range(k):
                        X[i, q] -= a * X[j, q]
            inv = 1.0 / Fc[i, i]
            for q in range(k):
                X[i, q] *= inv
    for i in range(m):
        for q in range(k):
            ore[i * k + q] = X[i, q].real
            oim[i * k + q] = X[i, q].imag


@njit(cache=True)
def solve_complex(Fc, piv, vre, vim, ore, oim, m, mb, k, kind):
    """``o = ((shift·I − J) ⊗ I_k)⁻¹ v`` (complex ``shift``; ``v = vre + i·vim``, ``o`` likewise)
    from the factorisation of :func:`factor_shifted`."""
    mb = Fc.shape[1]
    ore[:] = vre
    oim[:] = vim
    if kind == LOWER:
        _lower_complex(Fc, ore, oim, m, k)
        return
    for b0 in range(0, m, mb):
        for c in range(mb):
            if piv[b0 + c] != c:
                _swap_rows(ore, b0 + c, b0 + piv[b0 + c], k)
                _swap_rows(oim, b0 + c, b0 + piv[b0 + c], k)
        for i in range(1, mb):
            for j in range(i):
                if Fc[b0 + i, j] != 0.0:
                    _sub_complex(ore, oim, b0 + i, b0 + j, Fc[b0 + i, j], k)
        for i in range(mb - 1, -1, -1):
            for j in range(i + 1, mb):
                if Fc[b0 + i, j] != 0.0:
                    _sub_complex(ore, oim, b0 + i, b0 + j, Fc[b0 + i, j], k)
            _div_complex(ore, oim, b0 + i, Fc[b0 + i, i], k)
