"""The shared measurement of verify.measure: each rule does what its docstring says and can fail."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from fastslow.verify import measure

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


# --------------------------------------------------------------------------- relative errors


def test_ratio_on_a_zero_scale_is_zero_for_an_exact_match_and_inf_otherwise():
    assert measure.ratio(3.0, 2.0) == 1.5
    assert measure.ratio(0.0, 0.0) == 0.0
    assert measure.ratio(1e-300, 0.0) == math.inf


def test_relative_error_uses_the_reference_norm_unless_a_scale_is_declared():
    a, b = np.array([1.0, 2.0, 2.0]), np.array([1.0, 2.0, 3.0])
    assert measure.relative_error(a, b) == pytest.approx(1 / np.sqrt(14))
    assert measure.relative_error(a, b, scale=10.0) == pytest.approx(0.1)
    assert measure.relative_error(a, b, norm="max") == pytest.approx(1 / 3)
    assert measure.relative_error(np.zeros(3), np.zeros(3)) == 0.0
    assert measure.relative_error(np.ones(3), np.zeros(3)) == math.inf
    with pytest.raises(ValueError, match="norm"):
        measure.relative_error(a, b, norm="l1")


@given(st.lists(finite, min_size=1, max_size=8), st.floats(min_value=1e-3, max_value=1e3))
def test_relative_error_is_invariant_under_a_common_scaling(xs, c):
    a = np.array(xs)
    b = a + 1.0
    assert measure.relative_error(c * a, c * b) == pytest.approx(
        measure.relative_error(a, b), rel=1e-12
    )


def test_elementwise_relative_error_applies_the_zero_rule_entry_by_entry():
    out = measure.elementwise_relative_error([1.0, 0.0, 1.0, 3.0], [2.0, 0.0, 0.0, 3.0])
    assert out.tolist() == [0.5, 0.0, math.inf, 0.0]


# --------------------------------------------------------------------------- rates


def test_slope_fit_recovers_an_exact_power_law_with_a_tight_interval():
    h = np.logspace(-3, -1, 7)
    fit = measure.slope_fit(h, 5.0 * h**2)
    assert fit["slope"] == pytest.approx(2.0, abs=1e-12)
    assert fit["ci95"][1] - fit["ci95"][0] < 1e-10


def test_slope_fit_interval_covers_the_true_slope_on_noisy_data():
    rng = np.random.default_rng(3)
    h = np.logspace(-4, -1, 12)
    fit = measure.slope_fit(h, h**1.5 * np.exp(0.05 * rng.standard_normal(h.size)))
    lo, hi = fit["ci95"]
    assert lo < 1.5 < hi and hi - lo < 0.2


LADDER = 0.1 * 10.0 ** (-np.arange(13) / 4)
"""ε from 1e-1 down to 1e-4 in quarter decades (F1's first-order ladder)."""
NOISE = np.random.default_rng(27).standard_normal(LADDER.size)


def rate(curve, order, tol, **kw):
    return measure.asymptotic_slope(LADDER, curve, order, tol, spread=tol, **kw)


@pytest.mark.parametrize("c", [1e-1, 1e-2, 1e-3])
def test_a_leading_term_c_eps_does_not_pass_as_order_2(c):
    """c·ε + ε²: order 1 however small c is; for c = 1e-3 it is straight at slope ≈ 2 over the
    coarse decade and bends below: the finest window decides (fails), or no window (unresolved)."""
    res = rate(lambda e: c * e + e**2, 2.0, 0.1)
    assert not res["holds"] and res["verdict"] in ("fails", "unresolved")
    if c >= 1e-2:
        assert res["verdict"] == "fails" and res["slope"] < 1.2


@pytest.mark.parametrize(
    "curve", [lambda e: e**2 * math.log(1 / e), lambda e: e**1.85], ids=["eps2_log", "eps1.85"]
)
def test_near_order_2_curves_do_not_pass_as_order_2(curve):
    res = rate(curve, 2.0, 0.1)
    assert not res["holds"] and res["converged"]


@pytest.mark.parametrize("order,tol", [(1.0, 0.05), (2.0, 0.1)])
def test_clean_orders_with_small_noise_pass(order, tol):
    res = rate(
        lambda e: 3 * e**order * math.exp(1e-3 * NOISE[np.argmin(abs(LADDER - e))]), order, tol
    )
    assert res["verdict"] == "holds" and res["window"][1] == LADDER[-1]


def test_a_leading_order_interval_off_the_band_is_not_accepted():
    """The band of order 1 is [0.95, 1.05] at tol 0.05: an interval [0.924, 0.933] (a straight
    slope 0.928) is outside it."""
    res = rate(lambda e: e**0.928, 1.0, 0.05)
    assert res["verdict"] == "fails" and res["band"] == [0.95, 1.05]


def test_the_floor_ends_the_ladder_and_no_window_above_it_is_unresolved():
    """ε² on an accuracy floor of 2e-5: the points below 10·2e-5 are not resolved; with only
    four resolved points there is no window: unresolved, not fails."""
    res = rate(lambda e: e**2 + 2e-5, 2.0, 0.1, floor=2e-5)
    assert res["floor_reached"] and len(res["h"]) == 4
    assert res["verdict"] == "unresolved" and not res["converged"]


def test_a_window_still_approaching_the_order_at_the_floor_is_unresolved():
    """ε²(1 + 30√ε) is order 2 but its local slopes still fall from 2.24 to 2.12 over the
    finest decade (pre-asymptotic): not a counterexample."""
    res = rate(lambda e: e**2 * (1 + 30 * e**0.5), 2.0, 0.1)
    assert res["verdict"] == "unresolved"


def test_asymptotic_slope_reports_no_window_when_the_curve_never_straightens():
    ladder = 10.0 ** (-np.arange(0, 8) / 2)
    res = measure.asymptotic_slope(ladder, lambda h: h * (2 + math.sin(1 / h)), 1.0, 0.05)
    assert not res["converged"] and res["verdict"] == "unresolved"


def test_asymptotic_slope_tries_coarser_windows_after_one_the_finer_points_leave():
    """Local slopes (coarse to fine) 1 ×6, 0.97 ×4, then 1.025: the finest straight window
    (slope 0.97) is rejected because the last slope leaves it by more than the spread (0.05); the
    next coarser one (slope ≈ 0.976) is straight and every finer slope stays within the spread of
    it, so it is the asymptotic window and the rate 1 ± 0.1 holds."""
    slopes = [1.0] * 6 + [0.97] * 4 + [1.025]
    h = 2.0 ** -np.arange(len(slopes) + 1)
    err = [1.0]
    for i, s in enumerate(slopes):
        err.append(err[-1] * (h[i + 1] / h[i]) ** s)
    table = dict(zip(h, err))
    res = measure.asymptotic_slope(h, table.__getitem__, 1.0, 0.1)
    assert res["converged"] and res["verdict"] == "holds"
    assert res["window"] == [h[5], h[9]] and abs(res["slope"] - 0.976) < 1e-3


def test_asymptotic_slope_stops_at_a_non_positive_error():
    res = measure.asymptotic_slope(
        [1.0, 0.5, 0.25, 0.125], lambda h: h if h > 0.3 else 0.0, 1.0, 0.1
    )
    assert res["h"] == [1.0, 0.5] and not res["converged"] and res["floor_reached"]


@pytest.mark.parametrize("bad", [0.0, -1e-3, float("nan"), "below the floor"])
def test_asymptotic_slope_never_reads_past_the_first_unusable_error(bad):
    """The ladder ends at the first error that is not finite, not positive or below the accuracy
    floor, even where a clean first-order window follows it: no point below is read."""
    ladder = 2.0 ** -np.arange(14)
    calls = []

    def err(h):
        calls.append(h)
        if h == ladder[6]:
            return 1e-30 if bad == "below the floor" else bad
        return h

    res = measure.asymptotic_slope(ladder, err, 1.0, 0.1, floor=1e-20)
    assert res["h"] == list(ladder[:6]) and calls == list(ladder[:7])
    assert res["floor_reached"]


@pytest.mark.parametrize("bad", [0.0, -1e-3, float("nan")])
def test_taylor_window_ends_the_ladder_at_a_non_positive_or_non_finite_error(bad):
    """Points past the first unusable error are never read, even where a clean window of the
    expected order follows: the rate cannot be measured below rounding."""
    ladder = 2.0 ** -np.arange(12)
    calls = []

    def err(h):
        calls.append(h)
        return bad if h == ladder[4] else h**2

    res = measure.taylor_window(ladder, err, 2.0, 0.1)
    assert res["h"] == list(ladder[:4]) and calls == list(ladder[:5])
    assert not res["converged"] and not res["holds"]


def test_errors_at_their_floor_bound_the_error_exactly():
    assert measure.at_accuracy_floor([1e-16, 5e-16], [1e-16, 1e-16])["holds"]
    assert not measure.at_accuracy_floor([1e-16, 3e-15], [1e-16, 1e-16])["holds"]


# --------------------------------------------------------------------------- derivatives


def test_central_and_richardson_differences_have_orders_two_and_four():
    def err(diff, step):
        return abs(float(diff(np.sin, 0.7, 1.0, step)) - math.cos(0.7))

    for diff, order in ((measure.central_difference, 2), (measure.richardson_difference, 4)):
        ratio = err(diff, 0.1) / err(diff, 0.05)
        assert ratio == pytest.approx(2.0**order, rel=0.05)


def test_taylor_remainder_order_accepts_the_derivative_and_rejects_a_wrong_oracle():
    A = np.array([[0.3, -1.0], [0.5, 0.2]])

    def f(x):
        return np.tanh(A @ x)

    X, dX = np.array([0.4, -0.2]), np.array([1.0, 0.5])
    J = (1 - np.tanh(A @ X) ** 2)[:, None] * A
    good = measure.taylor_remainder_order(f, X, dX, J @ dX, slope_tol=0.1)
    bad = measure.taylor_remainder_order(f, X, dX, 1.01 * (J @ dX), slope_tol=0.1)
    assert good["holds"] and good["order_2"]
    assert not bad["holds"] and bad["secant_defect_rel"] > 1e-3


# --------------------------------------------------------------------------- theory against numerics


def test_symbolic_agrees_compares_a_sympy_value_with_a_numeric_one():
    x = sp.symbols("x")
    exact = sp.lambdify((), sp.integrate(sp.exp(-x), (x, 0, 1)))()  # 1 − 1/e
    assert measure.symbolic_agrees(exact, 1 - np.exp(-1.0), tol=1e-14, what="∫e^-x").holds
    d = measure.symbolic_agrees(exact, 0.63, tol=1e-6)
    assert not d.holds and d.value > 1e-4 and "≤ 1e-06" in d.rule
