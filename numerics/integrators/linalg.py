"""Shifted linear systems ``(σI − J) ⊗ I_k · x = v`` for the implicit steps, by the structure of ``J``.

Three storage forms of ``J`` (``m×m`` acting on the first index of ``y`` read as ``m×k``):

* :data:`BLOCK` (``mb < m``, block-local masks): ``J`` is the ``m×mb`` array of its diagonal
  blocks' rows (:mod:`numerics.integrators.base`). The "factorisation" is the *inverse* of each
  ``mb×mb`` block of ``σI − J`` (Gauss–Jordan with partial pivoting, in place: ``2·mb³`` per
  block instead of ``(2/3)·mb³`` for an LU), stored in an ``m×mb`` array, so that a solve is
  one dense ``mb×mb`` by ``mb×k`` product per block: the same ``2·m·mb·k`` operations as the two
  triangular substitutions, without their serial dependencies and pivot swaps; a Radau run of
  the depth-flow benchmark solves 4–5 times per factorisation, so the dearer factorisation pays
  (measured: ``docs/benchmarks.md``). ``O(m·mb)`` memory. When ``k`` is
  a multiple of 8 the products run on eight lanes (:mod:`numerics.lanes`): each output row's
  columns in vectors of eight, accumulated in registers over the block's columns, the inverse's
  entries broadcast; the same operations in the same order per output entry as the scalar loops
  (kept for other ``k``), so the same bits. The 8×8 block inverses run on lanes as well
  (:func:`_invert_real_blocks8`, and :func:`_invert_complex_blocks8` on interleaved (re, im)
  pairs), bit for bit the scalar Gauss–Jordan.
* :data:`LOWER` (``J`` lower triangular, e.g. a causal mask; detected from the zeros of ``J``):
  no factorisation and no copy of ``J``: the only per-shift data are the reciprocals
  ``1/(σ − J_ii)`` (``m`` numbers, ``F`` may be ``m×1``). A solve is a forward substitution on
  the stored lower triangle of ``J`` itself, blocked by :data:`TRSM_BLOCK` rows so that all but
  the diagonal blocks are one BLAS product per block row (``J``'s panel copied into a
  :data:`TRSM_BLOCK`-row buffer, ``O(m²k)`` per solve). A complex shift differs from a real one
  only on the diagonal, so its real and imaginary parts are real columns of the same
  substitution; Radau's real and complex systems are solved in *one* sweep over ``J``
  (:func:`solve_pair`, ``3k`` columns). Scratch: :func:`scratch_size`.
* :data:`DENSE`: one LU with partial pivoting of the whole ``m×m`` matrix (``O(m³)`` per
  factorisation, ``O(m²k)`` per solve). Loops, not LAPACK: no LAPACK binding to compile (seconds
  of cold start), and the dense case (a general mask that is neither block-local nor causal) is
  the rare one.

Real shifts (Rosenbrock, Radau's real eigenvalue) and complex ones (Radau's complex pair, in
complex arithmetic on real and imaginary parts held separately) share the code. A singular block
gives non-finite entries (no exception), which the step then rejects. ``v`` and ``out`` of a solve
must be different arrays.
"""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np
from numba import njit, types
from numba.extending import overload

from fastslow.numerics.integrators.base import copy_into
from fastslow.numerics.integrators.numba_binding import COMPILED_ONLY, NO_C_ENTRY, with_globals
from fastslow.numerics.lanes import (
    add8,
    load8,
    madd8,
    mul8,
    scale8,
    select_pos8,
    splat8,
    store8,
    sub8,
    sum8,
    times_i8,
    zero8,
)

DENSE, BLOCK, LOWER = 0, 1, 2
HAS_BLOCK = HAS_LANES = HAS_LOWER = HAS_DENSE = True
"""Which code the solvers hold (compile-time constants: a branch behind a ``False`` one is pruned
before typing, so its callees are never compiled). The functions of this module hold every path;
:func:`specialised` makes copies holding only the paths of one structure (:data:`STRUCTURES`)."""
TRSM_BLOCK = 64
"""Rows per diagonal block of the blocked triangular solve (the rest is matrix products)."""
_LANE = np.arange(8.0)  # the lane indices, for the lane masks of _invert_real_blocks8


def scratch_size(m: int, k: int) -> int:
    """Length of the float scratch of a :data:`LOWER` solve with ``k`` columns per row (up to
    ``3k`` for :func:`solve_pair`): the right-hand sides as ``m×3k``, a panel of ``J`` and the
    product of a block row."""
    return 3 * m * k + TRSM_BLOCK * (m + 3 * k)


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
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


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def checked_structure(J, m, mb, lower):
    """:func:`structure`, refusing (``ValueError``) a ``J`` declared lower triangular (``lower``:
    no room was kept for its factorisation) that has an entry above its diagonal."""
    kind = structure(J, m, mb)
    if lower and kind != LOWER:
        raise ValueError("jac_lower=True but the Jacobian has an entry above its diagonal")
    return kind


@njit(cache=True, inline="always", error_model="numpy")
def _reciprocal(x):
    """``1/x`` of a pivot or diagonal entry, real or complex; NaN when ``x = 0`` (a singular
    block or shift): the step then sees non-finite values and is rejected, where Numba's own
    complex division would raise ``ZeroDivisionError`` out of the integrator."""
    if x == 0:
        return x * np.nan
    return 1.0 / x


@njit(cache=True, inline="always", error_model="numpy")
def _pivot_rows(F, piv, b0, c, mb):
    """Partial pivoting at column ``c`` of the ``mb×mb`` block starting at row ``b0``: the row of
    the largest :func:`_pivot_size` among ``c…mb−1`` is swapped into row ``c`` and its index
    recorded in ``piv[b0 + c]`` (shared by the LU and the Gauss–Jordan inverse)."""
    p = _pivot_search(F, b0, c, mb)
    piv[b0 + c] = p
    if p != c:
        for j in range(mb):
            tmp = F[b0 + c, j]
            F[b0 + c, j] = F[b0 + p, j]
            F[b0 + p, j] = tmp


@njit(cache=True, inline="always", error_model="numpy")
def _pivot_search(F, b0, c, mb):
    """The row among ``c…mb−1`` of the block at row ``b0`` with the largest :func:`_pivot_size` in
    column ``c`` (the first of equals)."""
    p = c
    big = _pivot_size(F[b0 + c, c])
    for r in range(c + 1, mb):
        size = _pivot_size(F[b0 + r, c])
        if size > big:
            big = size
            p = r
    return p


@njit(cache=True, inline="always", error_model="numpy", **COMPILED_ONLY)
def _lu_blocks(F, piv, m, mb):
    """In-place LU with partial pivoting of each ``mb×mb`` block held in the rows of ``F`` (m×mb).
    Inlined into :func:`factor_shifted`, its one caller, as :func:`_invert_blocks` and
    :func:`_eliminate8` are: a first run compiles one function instead of a chain of three, each
    of which Numba would otherwise optimise and emit alone and again inside its caller (measured:
    about 0.15 s less for the dense copy's two dtypes, 0.3 s for the block copy's)."""
    for b0 in range(0, m, mb):
        for c in range(mb):
            _pivot_rows(F, piv, b0, c, mb)
            inv = _reciprocal(F[b0 + c, c])
            for r in range(c + 1, mb):
                f = F[b0 + r, c] * inv
                F[b0 + r, c] = f
                if f != 0.0:
                    for j in range(c + 1, mb):
                        F[b0 + r, j] -= f * F[b0 + c, j]


def _pivot_size(x):
    """The size by which a pivot is chosen: ``|x|`` for a real ``x``, ``|x|²`` for a complex one
    (the same order without a square root). Compiled callers get :func:`_pivot_size_nb`'s
    implementation (``@overload``); this body is what a Python caller gets, the same values."""
    if isinstance(x, complex):  # numpy.complex128 included
        return x.real * x.real + x.imag * x.imag
    return abs(x)


@overload(_pivot_size)
def _pivot_size_nb(x):
    if isinstance(x, types.Complex):
        return lambda x: x.real * x.real + x.imag * x.imag
    return lambda x: abs(x)


@njit(cache=True, inline="always", error_model="numpy", **COMPILED_ONLY)
def _eliminate8(F, b0, c):
    """The Gauss–Jordan elimination of column ``c`` from the other rows of the 8×8 block at row
    ``b0`` (the same operations as the general loop, the pivot row held in registers)."""
    p0 = F[b0 + c, 0]
    p1 = F[b0 + c, 1]
    p2 = F[b0 + c, 2]
    p3 = F[b0 + c, 3]
    p4 = F[b0 + c, 4]
    p5 = F[b0 + c, 5]
    p6 = F[b0 + c, 6]
    p7 = F[b0 + c, 7]
    for r in range(b0, b0 + 8):
        if r != b0 + c:
            f = F[r, c]
            if f != 0.0:
                F[r, c] = 0.0
                F[r, 0] -= f * p0
                F[r, 1] -= f * p1
                F[r, 2] -= f * p2
                F[r, 3] -= f * p3
                F[r, 4] -= f * p4
                F[r, 5] -= f * p5
                F[r, 6] -= f * p6
                F[r, 7] -= f * p7


@njit(cache=True, inline="always", error_model="numpy", **NO_C_ENTRY)
def _invert_blocks(F, piv, m, mb):
    """Overwrite each ``mb×mb`` block held in the rows of ``F`` (m×mb) with its inverse, in place:
    Gauss–Jordan elimination with partial (row) pivoting, the row exchanges undone as column
    exchanges at the end (``2·mb³`` operations per block, no scratch). Blocks of 8 eliminate
    through :func:`_eliminate8` (the same operations) where the eight-lane paths are held
    (:data:`HAS_LANES`): the ``block`` copies of :func:`specialised`, used only for ``mb ≠ 8``
    (:func:`structure_of`), do not type it."""
    for b0 in range(0, m, mb):
        for c in range(mb):
            _pivot_rows(F, piv, b0, c, mb)
            inv = _reciprocal(F[b0 + c, c])
            F[b0 + c, c] = 1.0
            for j in range(mb):
                F[b0 + c, j] *= inv
            if HAS_LANES and mb == 8:
                _eliminate8(F, b0, c)
                continue
            for r in range(mb):
                if r != c:
                    f = F[b0 + r, c]
                    if f != 0.0:
                        F[b0 + r, c] = 0.0
                        for j in range(mb):
                            F[b0 + r, j] -= f * F[b0 + c, j]
        _unpivot_columns(F, piv, b0, mb)


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _invert_real_blocks8(F, piv, m):
    """:func:`_invert_blocks` for real blocks of 8×8 with a block row on eight lanes: the row
    exchange, the pivot row's scaling and each row's update ``F[r, :] −= f·pivot_row`` one or two
    vector operations each, the pivot column's entry set to ``0`` (``1`` in the pivot row) by a
    lane select before the update instead of a scalar store (a scalar store followed by a vector
    load of the same row stalls store forwarding: the first version, with those stores, was
    slower than the scalar code); the same pivots and the same operations per entry, so the same
    bits."""
    lane = load8(_LANE, 0)
    for b0 in range(0, m, 8):
        for c in range(8):
            p = _pivot_search(F, b0, c, 8)
            piv[b0 + c] = p
            if p != c:  # the exchange as vectors: no scalar store before the rows' vector loads
                u = load8(F, (b0 + c) * 8)
                store8(F, (b0 + c) * 8, load8(F, (b0 + p) * 8))
                store8(F, (b0 + p) * 8, u)
            d = sub8(lane, splat8(float(c)))
            keep = mul8(d, d)  # 0 in lane c, positive in the others
            pc = (b0 + c) * 8
            inv = _reciprocal(F[b0 + c, c])
            prow = scale8(select_pos8(keep, load8(F, pc), splat8(1.0)), inv)
            store8(F, pc, prow)
            for r in range(b0, b0 + 8):
                if r != b0 + c:
                    f = F[r, c]
                    if f != 0.0:
                        o = r * 8
                        x = select_pos8(keep, load8(F, o), zero8())
                        store8(F, o, sub8(x, scale8(prow, f)))
        _unpivot_columns(F, piv, b0, 8)


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _invert_complex_blocks8(F, piv, m):
    """:func:`_invert_blocks` for complex 8×8 blocks on eight lanes: a block row (eight complex
    numbers) is two vectors of four interleaved (re, im) pairs of ``F`` viewed as float64; the
    pivot row's scaling ``x·inv`` and each row's update ``x − f·pivot_row`` are formed as
    ``w_re·v + w_im·(i·v)`` (:func:`numerics.lanes.times_i8`), which is Numba's complex product
    ``(ac − bd) + i(ad + bc)`` term by term; the pivot column's entries are set by lane selects as
    in :func:`_invert_real_blocks8`. The same pivots and operations per entry, so the same bits."""
    V = F.view(np.float64)  # m × 16
    lane = load8(_LANE, 0)
    for b0 in range(0, m, 8):
        for c in range(8):
            p = _pivot_search(F, b0, c, 8)
            piv[b0 + c] = p
            if p != c:
                for h in range(0, 16, 8):
                    u = load8(V, (b0 + c) * 16 + h)
                    store8(V, (b0 + c) * 16 + h, load8(V, (b0 + p) * 16 + h))
                    store8(V, (b0 + p) * 16 + h, u)
            hc = 8 * (c // 4)  # the half of the row holding column c
            dre = sub8(lane, splat8(float(2 * (c % 4))))
            dim = sub8(lane, splat8(float(2 * (c % 4) + 1)))
            keep_re = mul8(dre, dre)  # 0 in the lane of Re F[., c]
            keep_im = mul8(dim, dim)  # 0 in the lane of Im F[., c]
            keep = mul8(keep_re, keep_im)
            inv = _reciprocal(F[b0 + c, c])
            pc = (b0 + c) * 16
            x0 = load8(V, pc)
            x1 = load8(V, pc + 8)
            if hc == 0:
                x0 = select_pos8(keep_im, select_pos8(keep_re, x0, splat8(1.0)), zero8())
            else:
                x1 = select_pos8(keep_im, select_pos8(keep_re, x1, splat8(1.0)), zero8())
            p0 = add8(scale8(x0, inv.real), scale8(times_i8(x0), inv.imag))
            p1 = add8(scale8(x1, inv.real), scale8(times_i8(x1), inv.imag))
            store8(V, pc, p0)
            store8(V, pc + 8, p1)
            ip0 = times_i8(p0)
            ip1 = times_i8(p1)
            for r in range(b0, b0 + 8):
                if r != b0 + c:
                    f = F[r, c]
                    if f != 0.0:
                        o = r * 16
                        y0 = load8(V, o)
                        y1 = load8(V, o + 8)
                        if hc == 0:
                            y0 = select_pos8(keep, y0, zero8())
                        else:
                            y1 = select_pos8(keep, y1, zero8())
                        g0 = add8(scale8(p0, f.real), scale8(ip0, f.imag))
                        g1 = add8(scale8(p1, f.real), scale8(ip1, f.imag))
                        store8(V, o, sub8(y0, g0))
                        store8(V, o + 8, sub8(y1, g1))
        _unpivot_columns(F, piv, b0, 8)


@njit(cache=True, inline="always", error_model="numpy")
def _unpivot_columns(F, piv, b0, mb):
    """The row exchanges of a Gauss–Jordan inverse undone as column exchanges, last first."""
    for c in range(mb - 1, -1, -1):
        p = piv[b0 + c]
        if p != c:
            for r in range(mb):
                tmp = F[b0 + r, c]
                F[b0 + r, c] = F[b0 + r, p]
                F[b0 + r, p] = tmp


def _invert_blocks_fast(F, piv, m, mb):
    """:func:`_invert_blocks`, by :func:`_invert_real_blocks8` / :func:`_invert_complex_blocks8` for
    C-contiguous 8×8 blocks. Compiled callers (:func:`factor_shifted`) get
    :func:`_invert_blocks_fast_nb`'s implementation (``@overload``); this body is what a Python
    caller gets: the scalar loops, the same bits (the lanes paths do the same operations)."""
    _invert_blocks(F, piv, m, mb)


@overload(_invert_blocks_fast)
def _invert_blocks_fast_nb(F, piv, m, mb):
    lanes = None
    if isinstance(F, types.Array) and F.layout == "C":
        lanes = {
            types.float64: _invert_real_blocks8,
            types.complex128: _invert_complex_blocks8,
        }.get(F.dtype)
    if lanes is None:
        return lambda F, piv, m, mb: _invert_blocks(F, piv, m, mb)

    def impl(F, piv, m, mb):
        if mb == 8:
            lanes(F, piv, m)
        else:
            _invert_blocks(F, piv, m, mb)

    return impl


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def factor_shifted(J, shift, m, mb, kind, F, piv):
    """Prepare the solves with ``shift·I − J`` in ``F`` (and ``piv``) in the form of ``kind`` (see
    the module docstring): the blocks' inverses (:data:`BLOCK`), the diagonal reciprocals in
    ``F[:, 0]`` (:data:`LOWER`; ``F`` may be ``m×1``), or the LU factors (:data:`DENSE`). Real
    ``shift`` and ``F`` for Rosenbrock-W and Radau's real eigenvalue, complex for Radau's complex
    pair (Numba compiles one specialisation per dtype)."""
    if HAS_LOWER and kind == LOWER:
        for i in range(m):
            F[i, 0] = _reciprocal(shift - J[i, i])
        return
    w = J.shape[1]
    for i in range(m):
        for j in range(w):
            F[i, j] = -J[i, j]
        F[i, i % w] += shift
    if HAS_BLOCK and kind == BLOCK:
        if HAS_LANES:
            _invert_blocks_fast(F, piv, m, w)
        else:
            _invert_blocks(F, piv, m, w)
    elif HAS_DENSE:
        _lu_blocks(F, piv, m, w)


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _swap_rows(x, a, b, k):
    for q in range(k):
        tmp = x[a * k + q]
        x[a * k + q] = x[b * k + q]
        x[b * k + q] = tmp


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _forward_lower(J, X, kr, Dr, kc, Dc, buf, tmp):
    """``X ← (σI − J)⁻¹X`` in place for the lower-triangular ``J`` (``X`` is ``m×w``, one row per
    row of ``J``): columns ``[0, kr)`` with a real ``σ`` whose reciprocals ``1/(σ − J_ii)`` are
    ``Dr[:, 0]``, columns ``[kr, kr + kc)`` and ``[kr + kc, kr + 2kc)`` the real and imaginary
    parts with a complex ``σ`` (reciprocals ``Dc[:, 0]``); the off-diagonal part of ``σI − J`` is
    ``−J`` for both. Row blocks of :data:`TRSM_BLOCK`: the panel left of the diagonal block is
    copied row-major into ``buf`` and applied by one BLAS product (into ``tmp``), the diagonal
    block by substitution."""
    m, w = X.shape
    for r0 in range(0, m, TRSM_BLOCK):
        r1 = min(r0 + TRSM_BLOCK, m)
        rb = r1 - r0
        if r0 > 0:
            A = buf[: rb * r0].reshape((rb, r0))
            for i in range(rb):
                for j in range(r0):
                    A[i, j] = J[r0 + i, j]
            P = tmp[: rb * w].reshape((rb, w))
            np.dot(A, X[:r0], P)
            for i in range(rb):
                for q in range(w):
                    X[r0 + i, q] += P[i, q]
        for i in range(r0, r1):
            for j in range(r0, i):
                a = J[i, j]
                if a != 0.0:
                    for q in range(w):
                        X[i, q] += a * X[j, q]
            if kr > 0:
                dr = Dr[i, 0]
                for q in range(kr):
                    X[i, q] *= dr
            if kc > 0:
                cr = Dc[i, 0].real
                ci = Dc[i, 0].imag
                for q in range(kr, kr + kc):
                    xr = X[i, q]
                    xi = X[i, q + kc]
                    X[i, q] = cr * xr - ci * xi
                    X[i, q + kc] = cr * xi + ci * xr


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def _real_blocks(F, v, out, m, k):
    """The :data:`BLOCK` branch of :func:`solve_real`: ``out = F_b·v_b`` block by block (scalar
    loops, any ``k``)."""
    mb = F.shape[1]
    V = v.reshape((m, k))
    O = out.reshape((m, k))
    for b0 in range(0, m, mb):
        for i in range(b0, b0 + mb):
            a = F[i, 0]
            for q in range(k):
                O[i, q] = a * V[b0, q]
            for j in range(1, mb):
                a = F[i, j]
                for q in range(k):
                    O[i, q] += a * V[b0 + j, q]


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def _complex_blocks(Fc, vre, vim, ore, oim, m, k):
    """The :data:`BLOCK` branch of :func:`solve_complex` (scalar loops, any ``k``)."""
    mb = Fc.shape[1]
    VR = vre.reshape((m, k))
    VI = vim.reshape((m, k))
    OR = ore.reshape((m, k))
    OI = oim.reshape((m, k))
    for b0 in range(0, m, mb):
        for i in range(b0, b0 + mb):
            ar = Fc[i, 0].real
            ai = Fc[i, 0].imag
            for q in range(k):
                OR[i, q] = ar * VR[b0, q] - ai * VI[b0, q]
                OI[i, q] = ar * VI[b0, q] + ai * VR[b0, q]
            for j in range(1, mb):
                ar = Fc[i, j].real
                ai = Fc[i, j].imag
                for q in range(k):
                    OR[i, q] += ar * VR[b0 + j, q] - ai * VI[b0 + j, q]
                    OI[i, q] += ar * VI[b0 + j, q] + ai * VR[b0 + j, q]


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _lower_buffers(sw, m, k):
    """``(X, buf, tmp)`` of the scratch ``sw`` (:func:`scratch_size`)."""
    o = 3 * m * k
    return sw[:o], sw[o : o + TRSM_BLOCK * m], sw[o + TRSM_BLOCK * m :]


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def solve_real(J, F, piv, v, out, m, mb, k, kind, sw):
    """``out = ((shift·I − J) ⊗ I_k)⁻¹ v`` from :func:`factor_shifted` (``sw``: scratch of
    :func:`scratch_size` for :data:`LOWER`, unused otherwise)."""
    if HAS_LOWER and kind == LOWER:
        copy_into(out, v)
        Xs, buf, tmp = _lower_buffers(sw, m, k)
        _forward_lower(J, out.reshape((m, k)), k, F, 0, F, buf, tmp)  # no complex columns
        return
    if HAS_BLOCK and kind == BLOCK:
        if HAS_LANES and k % 8 == 0:
            _real_blocks8(F, v, out, m, k)
        else:
            _real_blocks(F, v, out, m, k)
        return
    if not HAS_DENSE:
        return
    copy_into(out, v)
    for c in range(m):
        if piv[c] != c:
            _swap_rows(out, c, piv[c], k)
    for i in range(1, m):
        for j in range(i):
            a = F[i, j]
            if a != 0.0:
                for q in range(k):
                    out[i * k + q] -= a * out[j * k + q]
    for i in range(m - 1, -1, -1):
        for j in range(i + 1, m):
            a = F[i, j]
            if a != 0.0:
                for q in range(k):
                    out[i * k + q] -= a * out[j * k + q]
        inv = _reciprocal(F[i, i])
        for q in range(k):
            out[i * k + q] *= inv


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _sub_complex(ore, oim, i, j, a, k):
    """Row ``i`` −= ``a``·row ``j`` (complex ``a``; rows of ``k`` entries in real/imag parts)."""
    ar = a.real
    ai = a.imag
    for q in range(k):
        xr = ore[j * k + q]
        xi = oim[j * k + q]
        ore[i * k + q] -= ar * xr - ai * xi
        oim[i * k + q] -= ar * xi + ai * xr


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _div_complex(ore, oim, i, a, k):
    inv = _reciprocal(a)
    ar = inv.real
    ai = inv.imag
    for q in range(k):
        xr = ore[i * k + q]
        xi = oim[i * k + q]
        ore[i * k + q] = ar * xr - ai * xi
        oim[i * k + q] = ar * xi + ai * xr


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def solve_complex(J, Fc, piv, vre, vim, ore, oim, m, mb, k, kind, sw):
    """``o = ((shift·I − J) ⊗ I_k)⁻¹ v`` (complex ``shift``; ``v = vre + i·vim``, ``o`` likewise)
    from :func:`factor_shifted` (``sw`` as in :func:`solve_real`)."""
    if HAS_LOWER and kind == LOWER:
        Xs, buf, tmp = _lower_buffers(sw, m, k)
        X = Xs[: 2 * m * k].reshape((m, 2 * k))
        for i in range(m):
            for q in range(k):
                X[i, q] = vre[i * k + q]
                X[i, k + q] = vim[i * k + q]
        _forward_lower(J, X, 0, J, k, Fc, buf, tmp)  # no real columns: J is not read as Dr
        for i in range(m):
            for q in range(k):
                ore[i * k + q] = X[i, q]
                oim[i * k + q] = X[i, k + q]
        return
    if HAS_BLOCK and kind == BLOCK:
        if HAS_LANES and k % 8 == 0:
            _complex_blocks8(Fc, vre, vim, ore, oim, m, k)
        else:
            _complex_blocks(Fc, vre, vim, ore, oim, m, k)
        return
    if not HAS_DENSE:
        return
    copy_into(ore, vre)
    copy_into(oim, vim)
    for c in range(m):
        if piv[c] != c:
            _swap_rows(ore, c, piv[c], k)
            _swap_rows(oim, c, piv[c], k)
    for i in range(1, m):
        for j in range(i):
            if Fc[i, j] != 0.0:
                _sub_complex(ore, oim, i, j, Fc[i, j], k)
    for i in range(m - 1, -1, -1):
        for j in range(i + 1, m):
            if Fc[i, j] != 0.0:
                _sub_complex(ore, oim, i, j, Fc[i, j], k)
        _div_complex(ore, oim, i, Fc[i, i], k)


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def _pair_blocks(Fr, Fc, vr, vcr, vci, outr, ocr, oci, m, k, wt):
    """:func:`solve_pair` for :data:`BLOCK` in one pass over the blocks' inverses: each output
    entry is its three sums over the block's columns, accumulated in registers (the same
    operations in the same order as the two separate products, stored once); returns
    ``Σ_i wt_i²·(outr_i² + ocr_i² + oci_i²)`` (no weighting when ``wt`` is empty)."""
    w = Fr.shape[1]
    s = 0.0
    weighted = wt.size > 0
    for b0 in range(0, m, w):
        for i in range(b0, b0 + w):
            for q in range(k):
                ar = 0.0
                cr = 0.0
                ci = 0.0
                for j in range(w):
                    f = Fr[i, j]
                    gr = Fc[i, j].real
                    gi = Fc[i, j].imag
                    o = (b0 + j) * k + q
                    x = vr[o]
                    yr = vcr[o]
                    yi = vci[o]
                    ar += f * x
                    cr += gr * yr - gi * yi
                    ci += gr * yi + gi * yr
                o = i * k + q
                outr[o] = ar
                ocr[o] = cr
                oci[o] = ci
                if weighted:
                    ar *= wt[o]
                    cr *= wt[o]
                    ci *= wt[o]
                s += ar * ar + cr * cr + ci * ci
    return s


# The block products on eight lanes (k a multiple of 8): for each output row, eight of its k
# columns accumulated in registers (vectors over q), the block's columns j in order with the
# inverse's entries broadcast. Each output entry sees the same operations in the same order as in
# the scalar loops (lanes: no fused multiply-add, no reassociation), so the results are the same
# bits; the scalar loops remain for the other k.


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _real_blocks8(F, v, out, m, k):
    """The :data:`BLOCK` branch of :func:`solve_real` on eight lanes (``k`` a multiple of 8)."""
    w = F.shape[1]
    for b0 in range(0, m, w):
        for i in range(b0, b0 + w):
            for q in range(0, k, 8):
                acc = scale8(load8(v, b0 * k + q), F[i, 0])
                for j in range(1, w):
                    acc = madd8(acc, F[i, j], v, (b0 + j) * k + q)
                store8(out, i * k + q, acc)


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _complex_blocks8(Fc, vre, vim, ore, oim, m, k):
    """The :data:`BLOCK` branch of :func:`solve_complex` on eight lanes (``k`` a multiple of 8)."""
    w = Fc.shape[1]
    for b0 in range(0, m, w):
        for i in range(b0, b0 + w):
            for q in range(0, k, 8):
                ar = Fc[i, 0].real
                ai = Fc[i, 0].imag
                xr = load8(vre, b0 * k + q)
                xi = load8(vim, b0 * k + q)
                cr = sub8(scale8(xr, ar), scale8(xi, ai))
                ci = add8(scale8(xi, ar), scale8(xr, ai))
                for j in range(1, w):
                    ar = Fc[i, j].real
                    ai = Fc[i, j].imag
                    xr = load8(vre, (b0 + j) * k + q)
                    xi = load8(vim, (b0 + j) * k + q)
                    cr = add8(cr, sub8(scale8(xr, ar), scale8(xi, ai)))
                    ci = add8(ci, add8(scale8(xi, ar), scale8(xr, ai)))
                store8(ore, i * k + q, cr)
                store8(oim, i * k + q, ci)


@njit(cache=True, error_model="numpy", **COMPILED_ONLY)
def _pair_blocks8(Fr, Fc, vr, vcr, vci, outr, ocr, oci, m, k, wt):
    """:func:`_pair_blocks` on eight lanes (``k`` a multiple of 8): the same sums, and the norm's
    terms added in the same order (:func:`numerics.lanes.sum8`, an ordered reduction)."""
    w = Fr.shape[1]
    s = 0.0
    weighted = wt.size > 0
    for b0 in range(0, m, w):
        for i in range(b0, b0 + w):
            for q in range(0, k, 8):
                ar = zero8()
                cr = zero8()
                ci = zero8()
                for j in range(w):
                    f = Fr[i, j]
                    gr = Fc[i, j].real
                    gi = Fc[i, j].imag
                    o = (b0 + j) * k + q
                    yr = load8(vcr, o)
                    yi = load8(vci, o)
                    ar = madd8(ar, f, vr, o)
                    cr = add8(cr, sub8(scale8(yr, gr), scale8(yi, gi)))
                    ci = add8(ci, add8(scale8(yi, gr), scale8(yr, gi)))
                o = i * k + q
                store8(outr, o, ar)
                store8(ocr, o, cr)
                store8(oci, o, ci)
                if weighted:
                    wq = load8(wt, o)
                    ar = mul8(ar, wq)
                    cr = mul8(cr, wq)
                    ci = mul8(ci, wq)
                s = sum8(s, add8(add8(mul8(ar, ar), mul8(cr, cr)), mul8(ci, ci)))
    return s


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def solve_pair_norm2(J, Fr, pr, Fc, pc, vr, vcr, vci, outr, ocr, oci, m, mb, k, kind, sw, wt):
    """:func:`solve_pair`, returning ``Σ_i wt_i²·(outr_i² + ocr_i² + oci_i²)`` as well (``wt`` of
    the size of ``outr``; in one pass with the solve for :data:`BLOCK`)."""
    if HAS_BLOCK and kind == BLOCK:
        if HAS_LANES and k % 8 == 0:
            return _pair_blocks8(Fr, Fc, vr, vcr, vci, outr, ocr, oci, m, k, wt)
        return _pair_blocks(Fr, Fc, vr, vcr, vci, outr, ocr, oci, m, k, wt)
    if HAS_LOWER or HAS_DENSE:
        solve_pair(J, Fr, pr, Fc, pc, vr, vcr, vci, outr, ocr, oci, m, mb, k, kind, sw)
        return _weighted_norm2(outr, ocr, oci, wt)
    return 0.0


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def _weighted_norm2(outr, ocr, oci, wt):
    """``Σ_i wt_i²·(outr_i² + ocr_i² + oci_i²)`` as ``Σ_i (a² + b² + c²)`` with ``a = outr_i·wt_i``
    etc., summed in index order (:func:`solve_pair_norm2` off the :data:`BLOCK` path)."""
    s = 0.0
    for i in range(outr.size):
        a = outr[i] * wt[i]
        b = ocr[i] * wt[i]
        c = oci[i] * wt[i]
        s += a * a + b * b + c * c
    return s


@njit(cache=True, error_model="numpy", **NO_C_ENTRY)
def solve_pair(J, Fr, pr, Fc, pc, vr, vcr, vci, outr, ocr, oci, m, mb, k, kind, sw):
    """Radau's two systems at once: ``outr`` with the real shift (``Fr, pr``) and ``ocr + i·oci``
    with the complex one (``Fc, pc``). For :data:`LOWER` one substitution sweep over ``J`` with
    ``3k`` columns (``J`` read once, one BLAS product per block row), otherwise the two solves."""
    if HAS_BLOCK and kind == BLOCK:
        if HAS_LANES and k % 8 == 0:
            _pair_blocks8(Fr, Fc, vr, vcr, vci, outr, ocr, oci, m, k, vr[:0])
        else:
            _pair_blocks(Fr, Fc, vr, vcr, vci, outr, ocr, oci, m, k, vr[:0])
        return
    if HAS_DENSE and kind != LOWER:
        solve_real(J, Fr, pr, vr, outr, m, mb, k, kind, sw)
        solve_complex(J, Fc, pc, vcr, vci, ocr, oci, m, mb, k, kind, sw)
        return
    if not HAS_LOWER:
        return
    Xs, buf, tmp = _lower_buffers(sw, m, k)
    X = Xs.reshape((m, 3 * k))
    for i in range(m):
        for q in range(k):
            X[i, q] = vr[i * k + q]
            X[i, k + q] = vcr[i * k + q]
            X[i, 2 * k + q] = vci[i * k + q]
    _forward_lower(J, X, k, Fr, k, Fc, buf, tmp)
    for i in range(m):
        for q in range(k):
            outr[i * k + q] = X[i, q]
            ocr[i * k + q] = X[i, k + q]
            oci[i * k + q] = X[i, 2 * k + q]


STRUCTURES = ("block", "block_lanes", "lower", "dense", "full", "all")
"""The code a :func:`specialised` copy holds: ``block`` the :data:`BLOCK` paths on scalar loops,
``block_lanes`` those and their eight-lane paths, ``lower`` the :data:`LOWER` path, ``dense`` the
:data:`DENSE` path, ``full`` the
:data:`LOWER` and :data:`DENSE` paths (a full ``J`` whose triangularity is detected at run time),
``all`` every path (the module's own functions)."""

_FLAGS = {
    "block": (True, False, False, False),
    "block_lanes": (True, True, False, False),
    "lower": (False, False, True, False),
    "dense": (False, False, False, True),
    "full": (False, False, True, True),
    "all": (True, True, True, True),
}
SOLVERS = ("factor_shifted", "solve_real", "solve_complex", "solve_pair", "solve_pair_norm2")
"""The functions a :func:`specialised` copy replaces (in an order where each calls only earlier ones)."""


def structure_of(m: int, mb: int, k: int, lower: bool) -> str:
    """The :data:`STRUCTURES` entry an integration with an ``m×m`` Jacobian (blocks of ``mb``,
    ``k`` columns per row, declared lower triangular or not) needs: its paths are decided by
    these sizes alone (:func:`structure` then picks :data:`BLOCK` for ``mb < m``, and only
    :data:`LOWER`, or :data:`LOWER`/:data:`DENSE` from ``J``'s zeros, otherwise)."""
    if mb < m:
        return "block_lanes" if (k % 8 == 0 or mb == 8) else "block"
    return "lower" if lower else "full"


_SPECIALISED: dict[str, ModuleType] = {}
PYTHON_ON_DENSE = ("solve_pair", "solve_pair_norm2")
"""The solvers that, on a :data:`DENSE` ``J``, only call other compiled functions
(:func:`solve_real`, :func:`solve_complex`, :func:`_weighted_norm2`): the Python driver runs them
uncompiled (:func:`dense_for_python`)."""


def specialised(kind: str) -> ModuleType:
    """This module's solvers (:data:`SOLVERS`) compiled with only the paths of ``kind`` (one of
    :data:`STRUCTURES`), as the attributes of a module object that an integrator's step binds in
    place of this module (:func:`numerics.integrators.driver.bound_driver`).

    Each copy runs the same source with the switches ``HAS_*`` set (the branches of the other
    structures pruned before typing, so their helpers are not compiled), named
    ``<solver>__<kind>`` so that Numba's on-disk cache keeps one entry per copy. On a matrix of
    that structure a copy computes exactly what the full function computes (the same code on the
    paths it holds); on another structure it leaves its output unwritten, so it must only be
    used where :func:`structure_of` gives ``kind``. ``"all"`` is this module itself."""
    if kind == "all":
        return sys.modules[__name__]
    if kind not in _SPECIALISED:
        flags = dict(zip(("HAS_BLOCK", "HAS_LANES", "HAS_LOWER", "HAS_DENSE"), _FLAGS[kind]))
        ns = ModuleType(f"{__name__}__{kind}")
        bound: dict = dict(flags)
        bound["_invert_blocks"] = njit(
            cache=True, inline="always", error_model="numpy", **NO_C_ENTRY
        )(with_globals(_invert_blocks.py_func, f"_invert_blocks__{kind}", flags))
        for name in SOLVERS:
            fn = globals()[name]
            copy = with_globals(fn.py_func, f"{name}__{kind}", bound)
            bound[name] = njit(cache=True, error_model="numpy", **NO_C_ENTRY)(copy)
            setattr(ns, name, bound[name])
        ns.checked_structure = checked_structure
        ns.scratch_size = scratch_size
        _SPECIALISED[kind] = ns
    return _SPECIALISED[kind]


_DENSE_FOR_PYTHON: list[ModuleType] = []


def dense_for_python() -> ModuleType:
    """The :data:`DENSE` solvers as the Python driver calls them: the ``dense`` copies of
    :func:`specialised`, except :data:`PYTHON_ON_DENSE`, which run uncompiled, the same source
    with the same switches, calling the compiled copies. The same operations in the same order
    (their own code on that structure is calls and, for :func:`solve_pair_norm2`, the compiled
    :func:`_weighted_norm2`), so the same bits; two compilations fewer on a first run that meets a
    dense ``J`` with Python problem functions (each would re-optimise and re-emit the solves it
    calls). Caveat: only for a ``J`` of structure :data:`DENSE` (the Python driver's
    :func:`numerics.integrators.driver._by_kind` dispatch guarantees it)."""
    if not _DENSE_FOR_PYTHON:
        dense = specialised("dense")
        ns = ModuleType(f"{__name__}__dense_python")
        bound: dict = dict(
            zip(("HAS_BLOCK", "HAS_LANES", "HAS_LOWER", "HAS_DENSE"), _FLAGS["dense"])
        )
        for name in SOLVERS:
            if name in PYTHON_ON_DENSE:
                fn = with_globals(globals()[name].py_func, f"{name}__dense_python", bound)
            else:
                fn = getattr(dense, name)
            bound[name] = fn
            setattr(ns, name, fn)
        ns.checked_structure = checked_structure
        ns.scratch_size = scratch_size
        _DENSE_FOR_PYTHON.append(ns)
    return _DENSE_FOR_PYTHON[0]
