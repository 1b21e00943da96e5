"""The coupling form's compiled right-hand side, :func:`coupling_rhs_nb`.

``out = vec[(1/ε)(A_t(X) − I)X + R_t(X)]`` with ``R_t(X) = γ(E − X) + MLP_t(X) + g_t·Slow_t(X)``
and the weights of the interval ``seg`` read from the packed vector
(:mod:`numerics.model.coupling.packing`): a Numba transcription of
:func:`numerics.model.flow.make_rhs` with ``form="coupling"`` (same RMS norm, masked softmax, MLP
with a built-in activation (tanh, relu, gelu or identity), block-causal slow path with ``U_c``).
For block-local masks the kernel and its product with ``X`` are computed block by block
(``O(T·P·d)``, not ``O(T²d)``); for other masks in row panels (:func:`kernel_panel`: no T×T
array, a causal row only up to its diagonal). The softmax exponentials and the MLP activation go
through the vectorisable ``exp`` and :func:`numerics.model.compiled.activation_rows` (≤ 1 and ≤ 2
ulp). Block-local masks with ``d``, ``m`` and ``P`` multiples of 8 take the eight-lane path
(:mod:`numerics.model.coupling.lanes`), everything else the row path here. The attention weights
(:func:`block_weights`, :func:`kernel_panel`) are shared with the frozen-kernel Jacobian
(:mod:`numerics.model.coupling.jacobian`).

Oracle: the NumPy right-hand side :func:`numerics.model.kernels.coupling` (tests).

Caveats. :func:`coupling_rhs_nb` agrees with :func:`numerics.model.flow.make_rhs` to rounding, not
bitwise (different summation order and the precomputed ``Q Kᵀ``; the tests check the agreement).
Its eight-lane and row paths agree to rounding (``n(X)·G`` is a BLAS product on the row path, a
sum in order on the lanes; ``tanh(−0)`` is ``−0`` on the lanes, ``+0`` on the rows; every other
operation is the same, in the same order): tests assert 1e-13 of the largest entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics.integrators.numba_binding import COMPILED_ONLY, with_globals
from fastslow.numerics.model.activations import COMPILED_CODES
from fastslow.numerics.model.compiled import EXP_CUT, activation_rows, exp_into, softmax_row
from fastslow.numerics.model.coupling import layout
from fastslow.numerics.model.coupling.lanes import block_local_rhs8
from fastslow.numerics.model.coupling.packing import (
    fused_offset,
    lanes_fit,
    layer_offset,
    matrix_view,
    scratch_arrays,
)

ROWS_BLOCK_LOCAL = ROWS_OTHER_MASKS = True
"""Which branches the row path holds (compile-time constants: a branch behind a ``False`` one is
pruned before typing, its callees never compiled); on in :func:`coupling_rhs_rows_nb`, one off in
the copies :func:`rhs_for` hands out."""

__all__ = [
    "coupling_rhs_nb",
    "coupling_rhs_lanes_nb",
    "coupling_rhs_rows_nb",
    "rows_copy",
    "rhs_for",
    "KERNEL_PANEL",
]
# block_weights, kernel_panel, normed_rows and panel_work are compiled without a Python entry
# (numba_binding.COMPILED_ONLY): only compiled code may call them (lanes.py imports them)


@njit(cache=True)
def coupling_rhs_nb(t, y, p, seg, out):
    """``out = vec[(1/ε)(A(X) − I)X + R(X)]`` with the weights of interval ``seg`` (signature
    :data:`numerics.integrators.RHS_SIG`, compiled on first use). No allocation for block-local
    masks: the work arrays are the scratch tail of ``p`` (so one ``p`` must not be shared by
    concurrent calls). Block-local masks with ``d``, ``m``, ``P`` multiples of 8 take the
    eight-lane path (:func:`coupling_rhs_lanes_nb`), everything else the row-by-row one
    (:func:`coupling_rhs_rows_nb`); the two agree to rounding (the tests check 1e-13).

    Compiling this dispatcher compiles both paths; the drivers pass the one path an instance
    takes (:func:`rhs_for`), so a first run compiles only that one (``docs/benchmarks.md``,
    "Times a user feels")."""
    if lanes_fit(p):
        coupling_rhs_lanes_nb(t, y, p, seg, out)
    else:
        _coupling_rhs_rows(t, y, p, seg, out)


def rhs_for(p: np.ndarray):
    """The compiled right-hand side the packed vector ``p`` takes: :func:`coupling_rhs_lanes_nb`
    when the eight-lane path applies (:func:`numerics.model.coupling.packing.lanes_fit`, evaluated
    here in Python, no compilation), else the row path's copy for block-local masks or for the
    others (:func:`rows_copy`). Each computes what
    :func:`coupling_rhs_nb` computes on such a ``p`` (the same code, bit for bit); passing it
    instead of :func:`coupling_rhs_nb` compiles one path, not both, and on the row path only the
    activation of ``p``."""
    if lanes_fit.py_func(p):
        return coupling_rhs_lanes_nb
    return rows_copy(bool(p[layout.BLOCK_LOCAL] > 0.0), int(p[layout.SIGMA]))


@njit(cache=True)
def coupling_rhs_lanes_nb(t, y, p, seg, out):
    """:func:`coupling_rhs_nb` on the eight-lane path (:func:`block_local_rhs8`); only for a
    ``p`` the path fits (:func:`rhs_for` checks that; this entry does not)."""
    block_local_rhs8(y, p, seg, out)


@njit(cache=True)
def _coupling_rhs_rows(t, y, p, seg, out):
    """:func:`coupling_rhs_nb` row by row, for any mask and sizes (scalar loops, BLAS products)."""
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    m = int(p[layout.M])
    N = T // P
    Xw, XG, S, Z, v, pb, tb, zb, acc, Yb, Yh, Zs, YG, sv, sp, st = scratch_arrays(p)
    X = y.reshape((T, d))
    Xn = normed_rows(X, p, Xw)
    inv_eps = 1.0 / p[layout.EPS]
    off = layer_offset(p, seg) + 2 * d * d
    W2 = matrix_view(p, off + d * m, m, d)
    if ROWS_BLOCK_LOCAL and p[layout.BLOCK_LOCAL] > 0.0:
        np.dot(Xn, matrix_view(p, fused_offset(p, seg), d, d + m), XG)  # one BLAS call
        block_weights(Xn, XG, p, S, v, pb, tb)
        for i in range(T):  # the same sums as Σ_j S[i, j]·X[b0 + j, k] − X[i, k], rows at a time
            b0 = (i // P) * P
            for k in range(d):
                acc[k] = -X[i, k]
            for j in range(P):
                a = S[i, j]
                for k in range(d):
                    acc[k] += a * X[b0 + j, k]
            for k in range(d):
                out[i * d + k] = acc[k] * inv_eps
            for k in range(m):
                Z[i, k] = XG[i, d + k]
    elif ROWS_OTHER_MASKS:
        _dense_attention_into(Xn, X, p, seg, out)
        np.dot(Xn, matrix_view(p, off, d, m), Z)
    _add_mlp_output(Z, W2, int(p[layout.SIGMA]), out, v, pb, tb, zb, acc)
    g = p[off + 2 * d * m + 3 * d * d]
    if p[layout.SLOW] > 0.0 and g != 0.0:
        Zs = _pooled_slow_attention(X, p, seg, Yb, Yh, Zs, YG, sv, sp, st)
        for b in range(1, N):
            for i in range(P):
                for k in range(d):
                    out[(b * P + i) * d + k] += g * Zs[b - 1, k]
    gam = p[layout.GAMMA]
    if gam != 0.0:
        e0 = layout.HEADER + T * int(p[layout.MASK_WIDTH])
        for i in range(T * d):
            out[i] += gam * (p[e0 + i] - y[i])


coupling_rhs_rows_nb = _coupling_rhs_rows
"""The row-by-row path of :func:`coupling_rhs_nb` as an entry of its own (any mask and sizes)."""

_ROW_COPIES: dict = {}
_ACTIVATION_NAMES = {code: name for name, code in COMPILED_CODES.items()}


def rows_copy(block_local: bool, act: int):
    """The row path holding only one branch and one activation, compiled on first use: for a ``p``
    of a block-local mask (``block_local``) or of another mask, with the activation code ``act``
    (:data:`numerics.model.activations.COMPILED_CODES`), what :func:`coupling_rhs_rows_nb`
    computes (a copy of the same source with :data:`ROWS_OTHER_MASKS` or :data:`ROWS_BLOCK_LOCAL`
    off and its MLP's :func:`numerics.model.compiled.activation_rows` holding ``act`` alone, named
    ``coupling_rhs_rows_block_<activation>`` / ``coupling_rhs_rows_other_<activation>`` for
    Numba's cache), without compiling the other branch or the other activations' kernels. Made
    on first call: the copy takes this module's globals as they are then (all defined)."""
    key = (block_local, act)
    if key not in _ROW_COPIES:
        name, off = (
            ("coupling_rhs_rows_block", "ROWS_OTHER_MASKS")
            if block_local
            else ("coupling_rhs_rows_other", "ROWS_BLOCK_LOCAL")
        )
        sigma = _ACTIVATION_NAMES[act]
        flags = {f"HAS_{k.upper()}": COMPILED_CODES[k] == act for k in ("tanh", "relu", "gelu")}
        rows_act = njit(cache=True, **COMPILED_ONLY)(
            with_globals(activation_rows.py_func, f"activation_rows_{sigma}", flags)
        )
        mlp = njit(cache=True, inline="always")(
            with_globals(
                _add_mlp_output.py_func, f"_add_mlp_output_{sigma}", {"activation_rows": rows_act}
            )
        )
        _ROW_COPIES[key] = njit(cache=True)(
            with_globals(
                _coupling_rhs_rows.py_func,
                f"{name}_{sigma}",
                {off: False, "_add_mlp_output": mlp},
            )
        )
    return _ROW_COPIES[key]


@njit(cache=True, **COMPILED_ONLY)
def _small_mm_into(A, B, C):
    """``C = A·B`` by loops (matrices too small for BLAS)."""
    n, k = A.shape
    m = B.shape[1]
    C[:, :] = 0.0
    for i in range(n):
        for l in range(k):
            a = A[i, l]
            for j in range(m):
                C[i, j] += a * B[l, j]
    return C


@njit(cache=True, **COMPILED_ONLY)
def _rms_into(X, ne, out):
    """``out`` ← the row-wise RMS norm of ``X``; returns ``out``."""
    for i in range(X.shape[0]):
        s = 0.0
        for j in range(X.shape[1]):
            s += X[i, j] * X[i, j]
        r = 1.0 / np.sqrt(s / X.shape[1] + ne)
        for j in range(X.shape[1]):
            out[i, j] = X[i, j] * r
    return out


@njit(cache=True, **COMPILED_ONLY)
def normed_rows(X, p, out):
    """``n(X)`` in ``out``, or ``X`` itself without the norm."""
    return _rms_into(X, p[layout.NORM_EPS], out) if p[layout.NORM] > 0.0 else X


@njit(cache=True, **COMPILED_ONLY)
def block_weights(Xn, XG, p, S, v, pb, tb):
    """Block-local mask: the ``T×P`` weights ``S[i, j] = A[i, b(i) + j]`` (``b(i)`` the first
    token of the block of ``i``), from ``XG = n(X)·[β·Q Kᵀ | W1]``: the score of ``(i, j)`` is
    ``XG[i, :d]·n(X)[j]`` (``P×P×d`` per block, explicit loops); all exponentials go through one
    vectorisable pass (:func:`numerics.model.compiled.exp_into`, ≤ 1 ulp from ``np.exp``). The
    mask is read as its blocks' rows (T×P); ``v, pb, tb`` are scratch of length ``T·P``."""
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    for i in range(T):
        b0 = (i // P) * P
        for j in range(P):
            s = 0.0
            for k in range(d):
                s += XG[i, k] * Xn[b0 + j, k]
            S[i, j] = s
    return _block_softmax(p, S, v, pb, tb)


@njit(cache=True, **COMPILED_ONLY)
def _block_softmax(p, S, v, pb, tb):
    """``S`` (T×P block-local scores) ← the masked softmax of each row, in place: the maximum over
    the allowed entries, the exponentials of the shifted scores by one :func:`exp_into` pass,
    masked entries exact zeros, each row divided by its sum."""
    T, P = S.shape
    mask = matrix_view(p, layout.HEADER, T, P)
    v = v[: T * P]
    pb = pb[: T * P]
    tb = tb[: T * P]
    for i in range(T):
        mx = -np.inf
        for j in range(P):
            s = S[i, j]
            if mask[i, j] > 0.0 and s > mx:
                mx = s
        for j in range(P):
            v[i * P + j] = S[i, j] - mx if mask[i, j] > 0.0 else -1000.0
    exp_into(v, pb, tb)
    for i in range(T):
        z = 0.0
        for j in range(P):
            e = 0.0 if v[i * P + j] < EXP_CUT else pb[i * P + j] * tb[i * P + j]
            S[i, j] = e
            z += e
        for j in range(P):
            S[i, j] /= z
    return S


# the two pieces of the right-hand side below are inlined into it (Numba IR): no call overhead in
# the integrators' hot loop, the same arithmetic
@njit(cache=True, inline="always")
def _add_mlp_output(Z, W2, act, out, v, pb, tb, zb, acc):
    """``out += vec(σ(Z)·W2)`` for the pre-activation ``Z = n(X)·W1`` (T×m; ``σ`` applied in place
    by :func:`numerics.model.compiled.activation_rows` with the activation code ``act``, nothing
    for identity (0); ``v, pb, tb, zb`` scratch of length ``T·m``, ``acc`` of length ``d``)."""
    T, m = Z.shape
    d = W2.shape[1]
    if act != 0:  # as one row of T·m entries: the rows of Z (m = d) are too short to vectorise
        n = T * m
        zf = Z.reshape((1, n))
        activation_rows(act, zf, v, pb, tb, zb)
    for i in range(T):
        acc[:] = 0.0
        for l in range(m):
            a = Z[i, l]
            for k in range(d):
                acc[k] += a * W2[l, k]
        for k in range(d):
            out[i * d + k] += acc[k]


@njit(cache=True, inline="always")
def _pooled_slow_attention(X, p, seg, Yb, Yh, Zs, YG, v, pb, tb):
    """The slow attention over the pooled tokens of interval ``seg`` (N×d; row ``a`` is pooled
    query ``a``'s output, which ``U_c`` up-samples to block ``a + 1``): block means ``Y``,
    ``n(Y)·[β·Qs Ksᵀ | Vs]``, and the softmax over the pooled keys ``b ≤ a`` (all ``b`` with the
    ``full`` slow mask). The N×N×d and N×d×d products (N = T/P) are explicit loops, too small for
    BLAS; the scores of the N − 1 queries that reach the output share one vectorisable exponential
    pass."""
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    m = int(p[layout.M])
    N = T // P
    Yb[:, :] = 0.0
    for b in range(N):
        for i in range(P):
            for k in range(d):
                Yb[b, k] += X[b * P + i, k]
    Yb /= P
    Yh = normed_rows(Yb, p, Yh)
    _small_mm_into(Yh, matrix_view(p, fused_offset(p, seg) + d * (d + m), d, 2 * d), YG)
    full = p[layout.SLOW_FULL] > 0.0
    Zs[:, :] = 0.0
    for a in range(N - 1):
        top = N if full else a + 1
        mx = -np.inf
        for b in range(top):
            sc = 0.0
            for k in range(d):
                sc += YG[a, k] * Yh[b, k]
            v[a * N + b] = sc
            if sc > mx:
                mx = sc
        for b in range(N):
            v[a * N + b] = v[a * N + b] - mx if b < top else -1000.0
    exp_into(v[: (N - 1) * N], pb[: (N - 1) * N], tb[: (N - 1) * N])
    for a in range(N - 1):
        top = N if full else a + 1
        z = 0.0
        for b in range(top):
            e = 0.0 if v[a * N + b] < EXP_CUT else pb[a * N + b] * tb[a * N + b]
            pb[a * N + b] = e
            z += e
        for b in range(top):
            wb = pb[a * N + b]
            for k in range(d):
                Zs[a, k] += (wb / z) * YG[b, d + k]
    return Zs


KERNEL_PANEL = 32768
"""Floats of the row panel in which :func:`_kernel_rows_into` computes scores (256 KB: the panel
stays in cache while it is scaled, exponentiated and written to ``J``)."""


@njit(cache=True, **COMPILED_ONLY)
def panel_work(Xn, p, seg):
    """Queries ``n(X)·Q``, keys ``n(X)·K`` and the work arrays of :func:`kernel_panel`: a panel
    buffer of ``KERNEL_PANEL`` floats (at least one row) and three rows of softmax scratch."""
    T = int(p[layout.T])
    d = int(p[layout.D])
    off = layer_offset(p, seg)
    XQ = np.dot(Xn, matrix_view(p, off, d, d))
    XK = np.dot(Xn, matrix_view(p, off + d * d, d, d))
    rows = min(T, max(1, KERNEL_PANEL // T))
    return XQ, XK, np.empty(rows * T), np.empty(T), np.empty(T), np.empty(T)


@njit(cache=True, **COMPILED_ONLY)
def kernel_panel(XQ, XK, p, r0, r1, buf, v, pb, tb):
    """Rows ``r0:r1`` of the attention matrix ``A(X)`` of a mask that is not block-local, as a
    ``(r1 − r0) × c1`` view of ``buf``: ``c1`` is the panel's last allowed column + 1, rounded up
    to a multiple of 4 (so the softmax sums group as over the whole row); the columns beyond it
    are zero. The scores ``β·(n(X)Q)(n(X)K)ᵀ`` and a masked softmax per row (:func:`softmax_row`)."""
    T = int(p[layout.T])
    mask = matrix_view(p, layout.HEADER, T, T)
    beta = p[layout.BETA]
    c1 = 0
    for i in range(r0, r1):
        last = T - 1
        while last >= c1 and mask[i, last] == 0.0:
            last -= 1
        c1 = max(c1, last + 1)
    c1 = min(T, (max(c1, 1) + 3) // 4 * 4)
    S = buf[: (r1 - r0) * c1].reshape((r1 - r0, c1))
    np.dot(XQ[r0:r1], XK[:c1].T, S)
    for i in range(r0, r1):
        row = S[i - r0]
        for j in range(c1):
            row[j] = beta * row[j]
        softmax_row(row, mask[i, :c1], v, pb, tb)
    return S


@njit(cache=True, **COMPILED_ONLY)
def _dense_attention_into(Xn, X, p, seg, out):
    """``out ← vec[(A(X) − I)X/ε]`` for a mask that is not block-local, row panel by row panel
    (:func:`kernel_panel`): no T×T array, so the working set stays in cache at large ``T``, and
    a causal row only up to its diagonal. Equal to ``(A·X − X)/ε`` with the whole ``A`` to
    rounding (the products are summed per panel; the tests compare with the NumPy kernel)."""
    T = int(p[layout.T])
    d = int(p[layout.D])
    XQ, XK, buf, v, pb, tb = panel_work(Xn, p, seg)
    eps = p[layout.EPS]
    rows = buf.size // T
    AX = np.empty((rows, d))
    for r0 in range(0, T, rows):
        r1 = min(r0 + rows, T)
        S = kernel_panel(XQ, XK, p, r0, r1, buf, v, pb, tb)
        c1 = S.shape[1]
        np.dot(S, X[:c1], AX[: r1 - r0])
        for i in range(r0, r1):
            for k in range(d):
                out[i * d + k] = (AX[i - r0, k] - X[i, k]) / eps
