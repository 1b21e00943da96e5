"""Eight-lane float64 vectors for Numba kernels: one type, ``F64x8`` (LLVM ``<8 x double>``), and a
few intrinsics that load, combine and store it.

Why: Numba runs LLVM's loop vectoriser but not its SLP vectoriser, so a loop over a short run of
``d = 8`` contiguous doubles (a row of a ``T×8`` state) is left scalar or wrapped in runtime checks
that cost more than the work, and an accumulator held in an array goes through memory on every
step (a store-to-load chain of ≈ 9 cycles). A local of type ``F64x8`` is an SSA value: LLVM keeps
it in one AVX-512 register (two AVX2 or four SSE registers elsewhere; the type is portable) and
each intrinsic below is one or two vector instructions.

What they compute (lane by lane, IEEE double, the same operations in the same order as the scalar
code ``for k in range(8): ...``, so results are bit for bit those of that code; no contraction to
fused multiply-add, no reassociation):

* :func:`load8` ``(x, o)`` → ``x[o : o + 8]``; :func:`store8` ``(x, o, v)``: ``x[o : o + 8] = v``;
* :func:`zero8` → ``+0.0`` in every lane; :func:`splat8` ``(a)`` → ``a`` in every lane;
* :func:`madd8` ``(acc, a, x, o)`` → ``acc + a·x[o : o + 8]`` (``a`` a scalar);
* :func:`add8`, :func:`sub8` ``(u, v)`` → ``u ± v``; :func:`scale8` ``(v, a)`` → ``v·a``;
  :func:`div8` ``(v, a)`` → ``v/a``; :func:`neg8` ``(v)`` → ``−v``; :func:`mul8`, :func:`vdiv8`
  ``(u, v)`` → ``u·v``, ``u/v``; :func:`sqrt8` ``(v)`` → ``√v`` (correctly rounded);
  :func:`abs8` ``(v)`` → ``|v|``; :func:`max8` ``(u, v)`` → ``v if v > u else u`` (Python's
  ``max``); :func:`times_i8` ``(v)`` → ``i·z`` for four complex numbers held as (re, im) pairs;
* :func:`select_pos8` ``(m, u, v)`` → ``u if m > 0 else v``; :func:`masked_max8` ``(s, m)`` → the
  largest ``s`` with ``m > 0`` (a scalar); :func:`sum8` ``(a, v)`` → ``a + v₀ + … + v₇`` added in
  order (an ordered reduction: the rounding of the scalar loop);
* :func:`exp8` ``(v)`` (``v ≤ 0``) and :func:`tanh8` ``(x)``: the elementary functions of
  :func:`numerics.model.compiled.exp_into` (Cody–Waite reduction, the degree-11 minimax
  polynomial :data:`EXP_POLY`, ``2^k`` in the exponent bits; ≤ 1 ulp) and
  :func:`numerics.model.compiled.tanh_row` (≤ 2 ulp), the same operations, so the same bits
  (``tanh8`` keeps ``−0``); on values in registers, with no pass through memory. These two use
  fused multiply-adds, explicitly (``llvm.fma``, correctly rounded, so the same bits on every
  machine), and the row kernels the same ones through the scalar :func:`fma`;
* :func:`transpose8` ``(x, xo, xs, y, yo, ys)``: an 8×8 block transposed by 24 shuffles.

Caveats: no bounds checks (the caller guarantees ``0 ≤ o`` and ``o + 8 ≤ len(x)``); ``x`` must be
a C-contiguous float64 array (1-D or a row-major view; ``o`` is a flat element offset into its
data); loads and stores are unaligned-safe (alignment 8), but a load whose 64 bytes straddle two
cache lines is slower: :func:`aligned_zeros` gives arrays whose element ``o`` starts a line for
every ``o`` that is a multiple of 8 (NumPy's own arrays start wherever the allocator put them).
Works with ``cache=True``: the type only appears inside compiled functions, never in a cached
signature.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, models, register_model

__all__ = [
    "F64x8",
    "load8",
    "store8",
    "zero8",
    "splat8",
    "madd8",
    "add8",
    "sub8",
    "scale8",
    "div8",
    "neg8",
    "select_pos8",
    "masked_max8",
    "sum8",
    "exp8",
    "tanh8",
    "fma",
    "EXP_POLY",
    "aligned_zeros",
]

CACHE_LINE = 64
"""Bytes of a cache line and of one :class:`F64x8` (what :func:`aligned_zeros` aligns to)."""


def aligned_zeros(n: int, dtype=np.float64) -> np.ndarray:
    """A 1-D array of ``n`` zeros of ``dtype`` whose data starts on a :data:`CACHE_LINE` boundary.

    Why: an eight-lane load or store (:func:`load8`) that straddles two cache lines is slower
    than one that does not. NumPy aligns its data to 16 bytes, so where a buffer starts decides,
    from process to process, whether every load of a kernel straddles (measured on the coupling
    right-hand side: ``docs/benchmarks.md``, "Where the arrays start").

    The array is a view of a slightly larger buffer (its ``base``); copies of it (pickling,
    ``np.copy``) are ordinary NumPy arrays again."""
    itemsize = np.dtype(dtype).itemsize
    buf = np.zeros(n * itemsize + CACHE_LINE, dtype=np.uint8)
    start = -buf.ctypes.data % CACHE_LINE
    return buf[start : start + n * itemsize].view(dtype)


_F64 = ir.DoubleType()
_V8 = ir.VectorType(_F64, 8)
_I32 = ir.IntType(32)


class F64x8(types.Type):
    """Eight float64 lanes held in one SSA value (LLVM ``<8 x double>``)."""

    def __init__(self):
        super().__init__(name="F64x8")


f64x8 = F64x8()


@register_model(F64x8)
class _F64x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _V8)


def _lanes_ptr(context, builder, aryty, ary, off):
    """``<8 x double>*`` pointing at element ``off`` of the array's data."""
    data = context.make_array(aryty)(context, builder, ary).data
    return builder.bitcast(builder.gep(data, [off]), _V8.as_pointer())


def _splat(builder, a):
    v = builder.insert_element(ir.Constant(_V8, ir.Undefined), a, ir.Constant(_I32, 0))
    zeros = ir.Constant(ir.VectorType(_I32, 8), [0] * 8)
    return builder.shuffle_vector(v, ir.Constant(_V8, ir.Undefined), zeros)


def _check_array(x):
    if not (isinstance(x, types.Array) and x.dtype == types.float64 and x.layout == "C"):
        raise TypeError(f"lanes: need a C-contiguous float64 array, got {x}")


@intrinsic
def load8(typingctx, x, o):
    """``x[o : o + 8]`` as one ``F64x8``."""
    _check_array(x)

    def codegen(context, builder, sig, args):
        return builder.load(_lanes_ptr(context, builder, sig.args[0], args[0], args[1]), align=8)

    return f64x8(x, o), codegen


@intrinsic
def store8(typingctx, x, o, v):
    """``x[o : o + 8] = v``."""
    _check_array(x)

    def codegen(context, builder, sig, args):
        builder.store(args[2], _lanes_ptr(context, builder, sig.args[0], args[0], args[1]), align=8)
        return context.get_dummy_value()

    return types.void(x, o, v), codegen


@intrinsic
def zero8(typingctx):
    """``+0.0`` in every lane."""

    def codegen(context, builder, sig, args):
        return ir.Constant(_V8, [0.0] * 8)

    return f64x8(), codegen


@intrinsic
def splat8(typingctx, a):
    """The float64 ``a`` in every lane."""

    def codegen(context, builder, sig, args):
        return _splat(builder, args[0])

    return f64x8(types.float64), codegen


@intrinsic
def madd8(typingctx, acc, a, x, o):
    """``acc + a·x[o : o + 8]`` (multiply, then add: two roundings, as in scalar code)."""
    _check_array(x)

    def codegen(context, builder, sig, args):
        vx = builder.load(_lanes_ptr(context, builder, sig.args[2], args[2], args[3]), align=8)
        return builder.fadd(args[0], builder.fmul(_splat(builder, args[1]), vx))

    return f64x8(f64x8, types.float64, x, o), codegen


@intrinsic
def add8(typingctx, u, v):
    """``u + v``."""

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1])

    return f64x8(f64x8, f64x8), codegen


@intrinsic
def sub8(typingctx, u, v):
    """``u − v``."""

    def codegen(context, builder, sig, args):
        return builder.fsub(args[0], args[1])

    return f64x8(f64x8, f64x8), codegen


@intrinsic
def scale8(typingctx, v, a):
    """``v·a`` (``a`` a scalar)."""

    def codegen(context, builder, sig, args):
        return builder.fmul(args[0], _splat(builder, args[1]))

    return f64x8(f64x8, types.float64), codegen


@intrinsic
def div8(typingctx, v, a):
    """``v/a`` (``a`` a scalar; a division in every lane, not a multiplication by ``1/a``)."""

    def codegen(context, builder, sig, args):
        return builder.fdiv(args[0], _splat(builder, args[1]))

    return f64x8(f64x8, types.float64), codegen


@intrinsic
def neg8(typingctx, v):
    """``−v`` (flips the sign bit, as scalar ``-x``)."""

    def codegen(context, builder, sig, args):
        return builder.fneg(args[0])

    return f64x8(f64x8), codegen


@intrinsic
def select_pos8(typingctx, m, u, v):
    """Lane by lane ``u if m > 0 else v`` (``m`` NaN selects ``v``)."""

    def codegen(context, builder, sig, args):
        pos = builder.fcmp_ordered(">", args[0], ir.Constant(_V8, [0.0] * 8))
        return builder.select(pos, args[1], args[2])

    return f64x8(f64x8, f64x8, f64x8), codegen


@intrinsic
def masked_max8(typingctx, s, m):
    """The largest lane of ``s`` among those with ``m > 0`` and ``s`` not NaN (``−inf`` if none):
    the maximum a scalar loop ``if m[j] > 0 and s[j] > mx: mx = s[j]`` finds, except that of
    equal zeros of opposite signs either may be returned (a softmax shifted by it is the same)."""

    def codegen(context, builder, sig, args):
        s_, m_ = args
        keep = builder.and_(
            builder.fcmp_ordered(">", m_, ir.Constant(_V8, [0.0] * 8)),
            builder.fcmp_ordered("==", s_, s_),
        )
        t = builder.select(keep, s_, ir.Constant(_V8, [float("-inf")] * 8))
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_F64, [_V8]), "llvm.vector.reduce.fmax.v8f64"
        )
        return builder.call(fn, [t])

    return types.float64(f64x8, f64x8), codegen


@intrinsic
def sum8(typingctx, a, v):
    """``(((a + v₀) + v₁) + …) + v₇``: the lanes added to ``a`` in order (an ordered reduction,
    the rounding of a scalar loop)."""

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(_F64, [_F64, _V8]),
            "llvm.vector.reduce.fadd.v8f64",
        )
        return builder.call(fn, [args[0], args[1]])

    return types.float64(types.float64, f64x8), codegen


# the constants of numerics.model.compiled.exp_into and tanh_row, bit for bit
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SHIFTER = 6755399441055744.0
_BIAS = 1023 << 52
EXP_CUT = -708.0
EXP_POLY = (
    2.5000072213603394e-08,
    2.7630234059192756e-07,
    2.755758626737624e-06,
    2.480149313582193e-05,
    0.00019841269506777785,
    0.0013888888943598022,
    0.008333333333494335,
    0.041666666666530267,
    0.16666666666666413,
    0.5000000000000011,
    1.0,
    1.0,
)
"""The coefficients of ``e^r ≈ 1 + r + c₂r² + … + c₁₁r¹¹`` on the reduced interval
``|r| ≤ ln2/2·(1 + 2⁻²⁰)``, highest first (Horner order): the minimax polynomial for the relative
error with ``c₀ = c₁ = 1`` fixed, by Remez exchange in 40-digit arithmetic
(``tests/test_lanes.py::exp_minimax``, which re-derives them), rounded to double: levelled error
3.6·10⁻¹⁸, 1.1·10⁻¹⁷ (≈ 0.05 ulp) after the rounding of the coefficients (the test bounds it on a
fine grid), small beside the rounding of the eleven Horner steps. Degree 10 would leave
2.9·10⁻¹⁶ (> 1 ulp); Taylor's polynomial needs degree 13."""
_TP = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TQ = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


@intrinsic
def fma(typingctx, a, b, c):
    """``a·b + c`` with one rounding (LLVM ``llvm.fma.f64``: correctly rounded by definition, so the
    same bits on every machine; one instruction where the CPU has fused multiply-add, a call to the
    C library's ``fma`` elsewhere, which is exact but slow). Not ``llvm.fmuladd``, which may or may
    not fuse depending on the target."""
    if not all(isinstance(t, types.Float) and t.bitwidth == 64 for t in (a, b, c)):
        raise TypeError(f"fma: need three float64 arguments, got {a}, {b}, {c}")

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_F64, [_F64, _F64, _F64]), "llvm.fma.f64"
        )
        return builder.call(fn, list(args))

    return types.float64(types.float64, types.float64, types.float64), codegen


def _fma_ir(builder, a, b, c):
    """``a·b + c`` lane by lane with one rounding (``llvm.fma`` on the vector type)."""
    vt = a.type
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vt, [vt, vt, vt]), f"llvm.fma.v{vt.count}f64"
    )
    return builder.call(fn, [a, b, c])


def _exp_ir(builder, v):
    """``e^v`` lane by lane for ``v ≤ 0`` (or NaN), exactly the operations of
    :func:`numerics.model.compiled.exp_into` followed by the caller's ``0 if v < EXP_CUT else p·t``."""
    return _exp_irw(builder, v, 8)


@intrinsic
def exp8(typingctx, v):
    """``e^v`` lane by lane for ``v ≤ 0`` or NaN: bit for bit the softmax exponentials of
    :func:`numerics.model.compiled.exp_into` (≤ 1 ulp from ``np.exp`` on ``[−708, 0]``; ``0`` below
    ``−708``, where ``e^v < 3.1e-308``; NaN stays NaN)."""

    def codegen(context, builder, sig, args):
        return _exp_ir(builder, args[0])

    return f64x8(f64x8), codegen


@intrinsic
def tanh8(typingctx, x):
    """``tanh x`` lane by lane: bit for bit :func:`numerics.model.compiled.tanh_row` (Cephes'
    rational form below ``|x| = 0.625``, ``(1 − e^{−2|x|})/(1 + e^{−2|x|})`` with the sign of ``x``
    above; ≤ 2 ulp from ``np.tanh``; NaN kept, ``±inf`` → ``±1``) except at ``−0``, which it keeps
    (as ``np.tanh``; ``tanh_row`` returns ``+0`` there)."""

    def codegen(context, builder, sig, args):
        return _tanh_irw(builder, args[0], 8)

    return f64x8(f64x8), codegen


@intrinsic
def mul8(typingctx, u, v):
    """``u·v`` lane by lane."""

    def codegen(context, builder, sig, args):
        return builder.fmul(args[0], args[1])

    return f64x8(f64x8, f64x8), codegen


@intrinsic
def vdiv8(typingctx, u, v):
    """``u/v`` lane by lane."""

    def codegen(context, builder, sig, args):
        return builder.fdiv(args[0], args[1])

    return f64x8(f64x8, f64x8), codegen


@intrinsic
def sqrt8(typingctx, v):
    """``√v`` lane by lane (correctly rounded, as ``np.sqrt``; NaN for ``v < 0``)."""

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_V8, [_V8]), "llvm.sqrt.v8f64"
        )
        return builder.call(fn, [args[0]])

    return f64x8(f64x8), codegen


@intrinsic
def abs8(typingctx, v):
    """``|v|`` lane by lane (clears the sign bit, as scalar ``abs``)."""

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_V8, [_V8]), "llvm.fabs.v8f64"
        )
        return builder.call(fn, [args[0]])

    return f64x8(f64x8), codegen


@intrinsic
def max8(typingctx, u, v):
    """``max(u, v)`` lane by lane with Python's (and Numba's) rule: ``v if v > u else u``."""

    def codegen(context, builder, sig, args):
        u_, v_ = args
        return builder.select(builder.fcmp_ordered(">", v_, u_), v_, u_)

    return f64x8(f64x8, f64x8), codegen


@intrinsic
def times_i8(typingctx, v):
    """``i·z`` for the four complex numbers ``z = (v₀ + iv₁, v₂ + iv₃, …)`` held as interleaved
    (real, imaginary) pairs, as NumPy stores complex128: ``(−v₁, v₀, −v₃, v₂, …)`` (exact: a
    shuffle and a sign flip). With it ``w·z = w_re·v + w_im·(i·v)`` lane by lane, the terms of
    ``(ac − bd) + i(ad + bc)``: Numba's (CPython's) complex product, bit for bit."""

    def codegen(context, builder, sig, args):
        i32x8 = ir.VectorType(ir.IntType(32), 8)
        swapped = builder.shuffle_vector(
            args[0], ir.Constant(_V8, ir.Undefined), ir.Constant(i32x8, [1, 0, 3, 2, 5, 4, 7, 6])
        )
        negated = builder.fneg(swapped)
        mix = ir.Constant(i32x8, [0, 9, 2, 11, 4, 13, 6, 15])
        return builder.shuffle_vector(negated, swapped, mix)

    return f64x8(f64x8), codegen


def _butterfly(builder, rows, bit):
    """One stage of the 8×8 transpose: exchange bit ``bit`` of the row and of the lane index."""
    h = 1 << bit
    lo = [l if not l & h else 8 + (l ^ h) for l in range(8)]
    hi = [(l ^ h) if not l & h else 8 + l for l in range(8)]
    out = list(rows)
    for i in range(8):
        if not i & h:
            u, v = rows[i], rows[i + h]
            out[i] = builder.shuffle_vector(u, v, ir.Constant(ir.VectorType(_I32, 8), lo))
            out[i + h] = builder.shuffle_vector(u, v, ir.Constant(ir.VectorType(_I32, 8), hi))
    return out


@intrinsic
def transpose8(typingctx, x, xo, xs, y, yo, ys):
    """``y[yo + j·ys + i] = x[xo + i·xs + j]`` for ``i, j < 8``: an 8×8 block transposed (rows
    ``xs`` apart in ``x``, ``ys`` apart in ``y``; three stages of eight two-vector shuffles). The
    blocks must not overlap."""
    _check_array(x)
    _check_array(y)

    def codegen(context, builder, sig, args):
        xa, xo_, xs_, ya, yo_, ys_ = args
        rows = []
        for i in range(8):
            o = builder.add(xo_, builder.mul(xs_, ir.Constant(xs_.type, i)))
            rows.append(builder.load(_lanes_ptr(context, builder, sig.args[0], xa, o), align=8))
        for bit in range(3):
            rows = _butterfly(builder, rows, bit)
        for j in range(8):
            o = builder.add(yo_, builder.mul(ys_, ir.Constant(ys_.type, j)))
            builder.store(rows[j], _lanes_ptr(context, builder, sig.args[3], ya, o), align=8)
        return context.get_dummy_value()

    return types.void(x, types.intp, types.intp, y, types.intp, types.intp), codegen


# ------------------------------------------------------------------------ eight vectors at once
# exp8 and tanh8 are chains of ≈ 20 and ≈ 40 dependent operations (the Horner polynomial alone is
# 11 fused multiply-adds): a loop applying them to one vector after another is bound by their
# latency, not by the floating-point pipes. tanh8x8_into and exp8x8_into apply the same operations
# to eight vectors as one LLVM <64 x double> value, which the code generator splits into eight
# interleaved register operations, so eight chains advance together (bit for bit, lane by lane;
# the measured gains are in docs/benchmarks.md).

_NW = 64


def _cw(x, n=_NW):
    return ir.Constant(ir.VectorType(_F64, n), [float(x)] * n)


def _exp_irw(builder, v, n=_NW):
    """``e^v`` on an ``n``-lane vector: the operations of :func:`numerics.model.compiled.exp_into`
    lane by lane (the reduction and the polynomial in fused multiply-adds), then ``0`` where
    ``v < EXP_CUT``."""
    below = builder.fcmp_ordered("<", v, _cw(EXP_CUT, n))
    x = builder.select(below, _cw(EXP_CUT, n), v)
    s = _fma_ir(builder, x, _cw(_LOG2E, n), _cw(_SHIFTER, n))
    k = builder.fsub(s, _cw(_SHIFTER, n))
    nk = builder.fneg(k)
    r = _fma_ir(builder, nk, _cw(_LN2_LO, n), _fma_ir(builder, nk, _cw(_LN2_HI, n), x))
    q = _cw(EXP_POLY[0], n)
    for c in EXP_POLY[1:]:
        q = _fma_ir(builder, q, r, _cw(c, n))
    i64 = ir.VectorType(ir.IntType(64), n)
    bits = builder.bitcast(s, i64)
    bits = builder.add(builder.shl(bits, ir.Constant(i64, [52] * n)), ir.Constant(i64, [_BIAS] * n))
    e = builder.fmul(q, builder.bitcast(bits, ir.VectorType(_F64, n)))
    return builder.select(below, _cw(0.0, n), e)


def _tanh_irw(builder, x_, n=_NW):
    """The operations of :func:`tanh8` (those of :func:`numerics.model.compiled.tanh_row`, with
    the sign of ``−0`` kept) on an ``n``-lane vector."""
    vt = ir.VectorType(_F64, n)
    fabs = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vt, [vt]), f"llvm.fabs.v{n}f64"
    )
    ax = builder.call(fabs, [x_])
    e = _exp_irw(builder, builder.fmul(_cw(-2.0, n), ax), n)
    one = _cw(1.0, n)
    small_arg = builder.fcmp_ordered("<", ax, _cw(0.625, n))
    z = builder.fmul(x_, x_)
    num = _fma_ir(builder, _fma_ir(builder, _cw(_TP[0], n), z, _cw(_TP[1], n)), z, _cw(_TP[2], n))
    den = _fma_ir(
        builder,
        _fma_ir(builder, builder.fadd(z, _cw(_TQ[0], n)), z, _cw(_TQ[1], n)),
        z,
        _cw(_TQ[2], n),
    )
    # one division per lane: num/den below 0.625, (1 − e)/(1 + e) above (the same quotients)
    q = builder.fdiv(
        builder.select(small_arg, num, builder.fsub(one, e)),
        builder.select(small_arg, den, builder.fadd(one, e)),
    )
    small = _fma_ir(builder, builder.fmul(x_, z), q, x_)
    big = builder.select(builder.fcmp_ordered(">=", x_, _cw(0.0, n)), q, builder.fneg(q))
    y = builder.select(small_arg, small, big)
    return builder.select(builder.fcmp_ordered("==", x_, _cw(0.0, n)), x_, y)  # tanh(−0) = −0


def _load_n(context, builder, aryty, ary, o, s, k=8):
    """The ``k`` vectors at ``o, o + s, …, o + (k − 1)s`` as one ``<8k x double>``."""
    vs = []
    for r in range(k):
        off = builder.add(o, builder.mul(s, ir.Constant(s.type, r)))
        vs.append(builder.load(_lanes_ptr(context, builder, aryty, ary, off), align=8))
    while len(vs) > 1:
        n = 2 * vs[0].type.count
        idx = ir.Constant(ir.VectorType(_I32, n), list(range(n)))
        vs = [builder.shuffle_vector(vs[i], vs[i + 1], idx) for i in range(0, len(vs), 2)]
    return vs[0]


def _store_n(context, builder, aryty, ary, o, s, w):
    """Store the eight-lane parts of ``w`` at ``o, o + s, o + 2s, …``."""
    undef = ir.Constant(w.type, ir.Undefined)
    for r in range(w.type.count // 8):
        part = builder.shuffle_vector(
            w, undef, ir.Constant(ir.VectorType(_I32, 8), list(range(8 * r, 8 * r + 8)))
        )
        off = builder.add(o, builder.mul(s, ir.Constant(s.type, r)))
        builder.store(part, _lanes_ptr(context, builder, aryty, ary, off), align=8)


@intrinsic
def tanh8x8_into(typingctx, x, o, s):
    """``x[o + r·s : … + 8] ← tanh8(x[o + r·s : … + 8])`` for ``r < 8`` (in place; the eight
    vectors must not overlap): bit for bit eight :func:`tanh8`, computed together."""
    _check_array(x)

    def codegen(context, builder, sig, args):
        xa, o_, s_ = args
        w = _tanh_irw(builder, _load_n(context, builder, sig.args[0], xa, o_, s_))
        _store_n(context, builder, sig.args[0], xa, o_, s_, w)
        return context.get_dummy_value()

    return types.void(x, types.intp, types.intp), codegen


@intrinsic
def exp8x8_into(typingctx, x, o, s, mx):
    """``x[o + r·s : … + 8] ← exp8(x[o + r·s : … + 8] − mx)`` for ``r < 8`` (``mx`` an
    :class:`F64x8`; in place, the eight vectors must not overlap): bit for bit eight
    :func:`exp8` of :func:`sub8`, computed together."""
    _check_array(x)

    def codegen(context, builder, sig, args):
        xa, o_, s_, m_ = args
        idx = ir.Constant(ir.VectorType(_I32, _NW), list(range(8)) * (_NW // 8))
        m_n = builder.shuffle_vector(m_, ir.Constant(_V8, ir.Undefined), idx)
        v = builder.fsub(_load_n(context, builder, sig.args[0], xa, o_, s_), m_n)
        _store_n(context, builder, sig.args[0], xa, o_, s_, _exp_irw(builder, v))
        return context.get_dummy_value()

    return types.void(x, types.intp, types.intp, f64x8), codegen
