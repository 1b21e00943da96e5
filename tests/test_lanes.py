"""The eight-lane vectors of numerics.lanes: arithmetic bit for bit that of scalar loops, and
exp8 / tanh8 bit for bit the row kernels of numerics.model.compiled (hence within 1 and 2 ulp of
NumPy's), including ±0, ±inf, NaN and huge arguments; tanh8 keeps the sign of −0 (np.tanh does,
tanh_row does not: the one place where they differ)."""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from fastslow.numerics.lanes import (
    CACHE_LINE,
    EXP_POLY,
    add8,
    aligned_zeros,
    div8,
    exp8,
    exp8x8_into,
    fma,
    load8,
    madd8,
    masked_max8,
    mul8,
    neg8,
    select_pos8,
    splat8,
    sqrt8,
    store8,
    sum8,
    tanh8,
    tanh8x8_into,
    transpose8,
    vdiv8,
    zero8,
)
from fastslow.numerics.model.compiled import EXP_CUT, exp_into, tanh_row


@njit(cache=True)
def _exp8_all(x, out):
    for o in range(0, x.shape[0], 8):
        store8(out, o, exp8(load8(x, o)))


@njit(cache=True)
def _tanh8_all(x, out):
    for o in range(0, x.shape[0], 8):
        store8(out, o, tanh8(load8(x, o)))


@njit(cache=True)
def _dot_rows8(A, x, out):
    """``out[o:o+8] = −x[0:8] + Σ_l A[l]·x[8(l+1) : 8(l+2)]`` by lanes."""
    acc = neg8(load8(x, 0))
    for l in range(A.shape[0]):
        acc = madd8(acc, A[l], x, 8 * (l + 1))
    store8(out, 0, acc)


@njit(cache=True)
def _reductions8(s, m):
    return masked_max8(load8(s, 0), load8(m, 0)), sum8(0.0, load8(s, 0))


@njit(cache=True)
def _select8(m, u, v, out):
    store8(out, 0, select_pos8(load8(m, 0), load8(u, 0), load8(v, 0)))
    store8(out, 8, zero8())


def _padded(x):
    n = -(-x.size // 8) * 8
    y = np.zeros(n)
    y[: x.size] = x
    return y


def lanes_exp(v):
    out = np.empty(_padded(v).size)
    _exp8_all(_padded(v), out)
    return out[: v.size]


def lanes_tanh(x):
    out = np.empty(_padded(x).size)
    _tanh8_all(_padded(x), out)
    return out[: x.size]


def row_exp(v):
    """The softmax exponentials of the row kernels: ``exp_into`` then zero below the cut."""
    p, t = np.empty_like(v), np.empty_like(v)
    exp_into(v.copy(), p, t)
    return np.where(v < EXP_CUT, 0.0, p * t)


def row_tanh(x):
    """``tanh_row`` with the sign of −0 restored (``tanh_row(−0) = +0``)."""
    y = x.copy()
    tanh_row(y, np.empty(x.size), np.empty(x.size), np.empty(x.size))
    return np.where(x == 0, x, y)


def ulps(a, ref):
    return np.abs(a - ref) / np.spacing(np.abs(ref))


def same_bits(a, b):
    """Equal bit for bit, except that any NaN equals any NaN: IEEE 754 leaves the sign and payload
    of a NaN produced by an operation to the implementation (x86's default NaN is negative; a
    C library's ``fma`` may return a positive one), so they are not part of a result."""
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(
        a[~nan].view(np.int64), b[~nan].view(np.int64)
    )


EXP_POINTS = np.concatenate(
    [
        np.linspace(-708.0, 0.0, 100_001),
        -np.logspace(-320, 2.5, 4001),
        [0.0, -0.0, -708.0, -708.5, -745.0, -1000.0, -np.inf, np.nan],
    ]
)
TANH_POINTS = np.concatenate(
    [
        np.linspace(-30.0, 30.0, 100_001),
        np.logspace(-320, 1.5, 4001),
        -np.logspace(-320, 1.5, 4001),
        [0.625, -0.625, np.nextafter(0.625, 0), 0.0, -0.0, 800.0, -800.0, 1e308, -1e308],
        [np.inf, -np.inf, np.nan, 5e-324, -5e-324],
    ]
)


def test_exp8_is_bit_for_bit_the_row_exponential_and_within_one_ulp_of_numpy():
    e = lanes_exp(EXP_POINTS)
    assert same_bits(e, row_exp(EXP_POINTS))
    ok = EXP_POINTS >= EXP_CUT
    assert ulps(e[ok], np.exp(EXP_POINTS[ok])).max() <= 1.0
    assert np.all(e[EXP_POINTS < EXP_CUT] == 0.0)  # e^v < 3.1e-308: an absolute error below that
    assert np.isnan(e[-1])  # NaN propagates


def test_tanh8_is_bit_for_bit_the_row_tanh_and_within_two_ulp_of_numpy():
    y = lanes_tanh(TANH_POINTS)
    assert same_bits(y, row_tanh(TANH_POINTS))
    ref = np.tanh(TANH_POINTS)
    fin = np.isfinite(ref) & (ref != 0)
    assert ulps(y[fin], ref[fin]).max() <= 2.0
    zero = ref == 0  # ±0 (and the tiniest subnormals, tanh x = x) keep their sign
    assert np.array_equal(np.signbit(y[zero]), np.signbit(TANH_POINTS[zero]))
    assert y[TANH_POINTS == np.inf][0] == 1.0 and y[TANH_POINTS == -np.inf][0] == -1.0
    assert np.isnan(y[np.isnan(TANH_POINTS)]).all()


def test_exp8_and_tanh8_on_millions_of_random_points():
    """Dense random sampling beyond the grids above: exp on all of [−708, 0], on [−1, 0] and
    log-uniform magnitudes; tanh on [−20, 20], [−1, 1] (both formulas and the switch at 0.625) and
    log-uniform magnitudes of both signs; bit for bit the row kernels, within 1 and 2 ulp."""
    rng = np.random.default_rng(7)
    v = np.concatenate(
        [
            -rng.uniform(0, 708, 1_000_000),
            -rng.uniform(0, 1, 500_000),
            -np.exp(rng.uniform(-40, np.log(708), 500_000)),
        ]
    )
    e = lanes_exp(v)
    assert same_bits(e, row_exp(v))
    assert ulps(e, np.exp(v)).max() <= 1.0
    x = np.concatenate(
        [
            rng.uniform(-20, 20, 1_000_000),
            rng.uniform(-1, 1, 500_000),
            np.exp(rng.uniform(-40, 3, 500_000)) * rng.choice([-1.0, 1.0], 500_000),
        ]
    )
    y = lanes_tanh(x)
    assert same_bits(y, row_tanh(x))
    assert ulps(y, np.tanh(x)).max() <= 2.0


@njit(cache=True)
def _fma_all(a, b, c, out):
    for i in range(a.shape[0]):
        out[i] = fma(a[i], b[i], c[i])


def test_fma_rounds_once():
    """``fma`` is ``a·b + c`` rounded once (the exact value by fractions, rounded by ``float``),
    including a case where multiplying, rounding and adding gives another number."""
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 8, 2000) for _ in range(3))
    a[0], b[0], c[0] = 1 + 2.0**-30, 1 - 2.0**-30, -1.0  # a·b = 1 − 2⁻⁶⁰ exactly
    out = np.empty(a.size)
    _fma_all(a, b, c, out)
    exact = [float(Fraction(p) * Fraction(q) + Fraction(r)) for p, q, r in zip(a, b, c)]
    assert same_bits(out, np.array(exact))
    assert out[0] == -(2.0**-60) and a[0] * b[0] + c[0] == 0.0


def exp_minimax(deg, half_width, grid=2000, iters=12, dps=40):
    """The coefficients (highest first, then ``1, 1``) of ``p(r) = 1 + r + c₂r² + … + c_deg r^deg``
    minimising ``max |p(r)/e^r − 1|`` on ``[−h, h]`` (Remez exchange on a grid of ``grid + 1``
    points in ``dps``-digit arithmetic), rounded to double, and the levelled error. Derives
    :data:`numerics.lanes.EXP_POLY` (``deg = 11``, ``h = ln2/2·(1 + 2⁻²⁰)``: the Cody–Waite
    remainder's bound with a margin for the rounding of ``k``)."""
    with mp.workdps(dps):
        h = mp.mpf(half_width)
        m = deg - 1
        rs = [r for r in (h * (2 * mp.mpf(i) / grid - 1) for i in range(grid + 1)) if r != 0]
        f = [(mp.exp(r) - 1 - r) / r**2 for r in rs]  # q(r) ≈ f(r), p = 1 + r + r²q
        w = [r**2 / mp.exp(r) for r in rs]  # p/e^r − 1 = w·(q − f)
        idx = [
            round((len(rs) - 1) * (1 - mp.cos(mp.pi * (i + 0.5) / (m + 1))) / 2)
            for i in range(m + 1)
        ]
        for _ in range(iters):
            A = mp.matrix(
                [[rs[i] ** j for j in range(m)] + [(-1) ** k / w[i]] for k, i in enumerate(idx)]
            )
            sol = mp.lu_solve(A, mp.matrix([f[i] for i in idx]))
            c = [sol[j] for j in range(m)]
            err = [w[i] * (mp.polyval(c[::-1], rs[i]) - f[i]) for i in range(len(rs))]
            segs, cur = [], [0]  # runs of one sign; the largest |err| of each run
            for i in range(1, len(rs)):
                if mp.sign(err[i]) == mp.sign(err[cur[0]]):
                    cur.append(i)
                else:
                    segs.append(cur)
                    cur = [i]
            segs.append(cur)
            ext = [max(run, key=lambda i: abs(err[i])) for run in segs]
            while len(ext) > m + 1:
                ext.pop(0 if abs(err[ext[0]]) < abs(err[ext[-1]]) else -1)
            if len(ext) < m + 1:
                break
            idx = ext
        return tuple(float(x) for x in c[::-1]) + (1.0, 1.0), max(abs(e) for e in err)


EXP_HALF_WIDTH = mp.log(2) / 2 * (1 + mp.mpf(2) ** -20)


def test_exp_poly_is_the_minimax_polynomial_and_its_error_bound_holds():
    coefs, levelled = exp_minimax(11, EXP_HALF_WIDTH)
    assert coefs == EXP_POLY
    assert levelled < 3.7e-18
    with mp.workdps(40):  # the rounded coefficients, on a finer grid than the derivation's
        h = EXP_HALF_WIDTH
        worst = max(
            abs(mp.polyval([mp.mpf(c) for c in EXP_POLY], r) / mp.exp(r) - 1)
            for r in (h * (2 * mp.mpf(i) / 20_011 - 1) for i in range(20_012))
        )
    assert worst < 1.2e-17  # ≈ 0.05 ulp of 1 (mostly the rounding of c₂): the Horner steps dominate


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=40))
def test_tanh8_property_any_double(xs):
    x = np.array(xs, dtype=np.float64)
    y = lanes_tanh(x)
    assert same_bits(y, row_tanh(x))
    ref = np.tanh(x)
    assert np.array_equal(np.isnan(y), np.isnan(x))
    fin = np.isfinite(x) & (ref != 0)
    if fin.any():
        assert ulps(y[fin], ref[fin]).max() <= 2.0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats(max_value=0.0, allow_infinity=True) | st.just(float("nan")),
        min_size=1,
        max_size=40,
    )
)
def test_exp8_property_any_nonpositive_double(vs):
    v = np.array(vs, dtype=np.float64)
    e = lanes_exp(v)
    assert same_bits(e, row_exp(v))
    ok = v >= EXP_CUT
    if ok.any():
        assert ulps(e[ok], np.exp(v[ok])).max() <= 1.0
    assert np.array_equal(np.isnan(e), np.isnan(v))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_lane_arithmetic_is_that_of_the_scalar_loop(seed, n):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)
    x = rng.standard_normal(8 * (n + 1))
    out = np.empty(8)
    _dot_rows8(A, x, out)
    ref = -x[:8].copy()
    for l in range(n):
        for k in range(8):
            ref[k] += A[l] * x[8 * (l + 1) + k]
    assert same_bits(out, ref)
    s = rng.standard_normal(8)
    s[rng.integers(0, 8)] = np.nan
    m = rng.integers(0, 2, 8).astype(float)
    mx, tot = _reductions8(s, m)
    ref_mx = -np.inf
    ref_tot = 0.0
    for j in range(8):
        if m[j] > 0 and s[j] > ref_mx:
            ref_mx = s[j]
        ref_tot += s[j]
    assert mx == ref_mx
    assert np.isnan(tot) and np.isnan(ref_tot)
    tot = _reductions8(np.where(np.isnan(s), 1.5, s), m)[1]
    assert tot == sum(np.where(np.isnan(s), 1.5, s).tolist(), 0.0)  # in order, from +0
    out = np.empty(16)
    _select8(np.array([1.0, 0, -1, np.nan, 2, 0, 1, -0.0]), np.arange(8.0), -np.arange(8.0), out)
    assert np.array_equal(out[:8], [0, -1, -2, -3, 4, -5, 6, -7])
    assert same_bits(out[8:], np.zeros(8))


@njit(cache=True)
def _transpose8(x, xo, xs, y, yo, ys):
    transpose8(x, xo, xs, y, yo, ys)


@njit(cache=True)
def _rms_lanes(x, ne, out):
    """Eight rows' RMS factors with one row per lane (the sums of squares in order over k)."""
    acc = zero8()
    for k in range(x.shape[0] // 8):
        v = load8(x, 8 * k)
        acc = add8(acc, mul8(v, v))
    store8(out, 0, vdiv8(splat8(1.0), sqrt8(add8(div8(acc, float(x.shape[0] // 8)), splat8(ne)))))


def test_transpose8_moves_every_entry_and_nothing_else():
    x = np.arange(200.0)
    y = np.full(200, -1.0)
    _transpose8(x, 5, 11, y, 3, 13)
    ref = np.full(200, -1.0)
    for i in range(8):
        for j in range(8):
            ref[3 + 13 * j + i] = x[5 + 11 * i + j]
    assert same_bits(y, ref)


def test_lane_norm_factors_are_those_of_the_scalar_loop():
    rng = np.random.default_rng(2)
    for d in (8, 16, 24):
        X = rng.standard_normal((8, d)) * 10.0 ** rng.integers(-3, 3, (8, 1))
        out = np.empty(8)
        _rms_lanes(np.ascontiguousarray(X.T).ravel(), 1e-6, out)
        ref = np.empty(8)
        for i in range(8):
            s = 0.0
            for k in range(d):
                s += X[i, k] * X[i, k]
            ref[i] = 1.0 / np.sqrt(s / d + 1e-6)
        assert same_bits(out, ref)


@njit(cache=True)
def _wide_all(x, shifts, stride, t, e):
    """``tanh8x8_into`` on ``t`` and ``exp8x8_into`` (shifted by ``shifts[0:8]``) on ``e``, eight
    vectors ``stride`` apart at a time (``t``, ``e`` copies of ``x``)."""
    mx = load8(shifts, 0)
    for o in range(0, x.shape[0] // (8 * stride) * (8 * stride), 8 * stride):
        for c in range(0, stride, 8):
            tanh8x8_into(t, o + c, stride)
            exp8x8_into(e, o + c, stride, mx)


def test_eight_vectors_at_once_are_bit_for_bit_eight_single_ones():
    shifts = np.array([0.0, -0.0, 1.5, -3.0, np.inf, -np.inf, np.nan, 700.0])
    for x, stride in ((TANH_POINTS, 8), (EXP_POINTS, 16)):
        x = x[: x.size // 128 * 128]
        t, e = x.copy(), x.copy()
        _wide_all(x, shifts, stride, t, e)
        assert same_bits(t, lanes_tanh(x))
        with np.errstate(invalid="ignore"):
            v = (x.reshape(-1, 8) - shifts).ravel()
        assert same_bits(e, lanes_exp(v))


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 300), dtype=st.sampled_from([np.float64, np.complex128, np.int64]))
def test_aligned_zeros_start_on_a_cache_line_and_hold_n_zeros(n, dtype):
    a = aligned_zeros(n, dtype)
    assert a.shape == (n,) and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
    assert n == 0 or a.ctypes.data % CACHE_LINE == 0  # an empty array has no data to place
    assert not a.any()


def test_lanes_refuse_an_array_that_is_not_c_contiguous_float64_when_compiled():
    """``load8``/``store8`` read and write eight consecutive doubles: a strided view or another
    dtype is refused at compile time (a typing error naming the need), never read as if it were
    packed doubles."""
    from numba.core.errors import TypingError  # only this test compiles a refusal

    @njit
    def copy8(x, out):
        store8(out, 0, load8(x, 0))

    packed, out = np.arange(16.0), np.zeros(8)
    copy8(packed, out)
    assert np.array_equal(out, packed[:8])
    for bad in (np.arange(32.0)[::2], np.arange(16.0, dtype=np.float32)):
        with pytest.raises((TypeError, TypingError), match="need a C-contiguous float64 array"):
            copy8(bad, out)


def test_times_i_rotates_four_interleaved_complex_numbers_by_a_quarter_turn():
    """``times_i8``: ``i·z`` for four complex numbers stored as NumPy stores complex128
    (interleaved real and imaginary parts), exactly: compared with NumPy's ``1j * z``."""
    from fastslow.numerics.lanes import times_i8  # the one lane operation only this test needs

    @njit
    def rotate(x, out):
        store8(out, 0, times_i8(load8(x, 0)))

    z = np.array([1 + 2j, -3.5 + 0.25j, 0 - 1j, 7e-300 + 1e300j])
    out = np.zeros(8)
    rotate(z.view(np.float64).copy(), out)
    assert np.array_equal(out.view(np.complex128), 1j * z)
