"""The eight-lane vectors of numerics.lanes: arithmetic bit for bit that of scalar loops, and
exp8 / tanh8 bit for bit the row kernels of numerics.model.compiled (hence within 1 and 2 ulp of
NumPy's), including ±0, ±inf, NaN and huge arguments; tanh8 keeps the sign of −0 (np.tanh does,
tanh_row does not: the one place where they differ)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from fastslow.numerics.lanes import (
    add8,
    div8,
    exp8,
    exp8x8_into,
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
    return np.array_equal(a.view(np.int64), b.view(np.int64))


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
