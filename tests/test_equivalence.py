"""The statistics of E1's design (verify.equivalence): paired TOST, the χ² interval of the margin,
the three-way decision, the TOST power and the planned number of pairs.

Oracles, each an implementation that is not ours: statsmodels' ``ttost_paired`` for the TOST
(p-value and its two one-sided tests, which pins the degrees of freedom ``n − 1``), SciPy's
``ttest_1samp`` and its ``confidence_interval`` for the 90 % interval; ``scipy.stats.chi2`` (its
distribution function at the interval's ends, and the interval's coverage in simulation, which pins
``ddof = 1``); SciPy's noncentral t and a seeded simulation of the TOST for the power.
"""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from fastslow.verify.equivalence import (
    paired_tost,
    planned_pairs,
    sd_interval,
    simulated_tost_power,
    three_way,
    tost_power,
)


def draw(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 14))
    x = rng.normal(rng.normal(0, 0.5), rng.uniform(0.2, 2.0), n)
    return x, float(rng.uniform(0.2, 2.0))


@pytest.mark.parametrize("seed", range(8))
def test_tost_agrees_with_statsmodels_ttost_paired(seed):
    """``ttost_paired(x1, x0, low, upp)`` tests the mean of ``x1 − x0`` against ``(low, upp)``:
    with ``x0 = 0`` it is our paired TOST of ``x`` at ``±margin``."""
    x, margin = draw(seed)
    t = paired_tost(x, margin, 0.05)
    p, lower, upper = ttost_paired(x, np.zeros_like(x), -margin, margin)
    assert t["p"] == pytest.approx(p, rel=1e-10, abs=1e-15)
    assert lower[2] == upper[2] == x.size - 1  # statsmodels' degrees of freedom: n − 1
    assert t["equivalent"] == (p < 0.05)


@pytest.mark.parametrize("seed", range(8))
def test_tost_interval_and_test_of_zero_agree_with_scipy(seed):
    x, margin = draw(seed)
    t = paired_tost(x, margin, 0.05)
    res = stats.ttest_1samp(x, 0.0)
    ci = res.confidence_interval(0.90)
    assert t["ci"] == pytest.approx([ci.low, ci.high], rel=1e-12, abs=1e-15)
    assert t["p_zero"] == pytest.approx(res.pvalue, rel=1e-10)
    assert t["sd"] == pytest.approx(np.std(x, ddof=1), rel=1e-14)
    # duality: equivalent iff the 90 % interval lies inside (−margin, margin)
    assert t["equivalent"] == (-margin < t["ci"][0] and t["ci"][1] < margin)
    m = t["margin_min"]  # the smallest margin is where the decision flips
    assert paired_tost(x, m * (1 + 1e-9), 0.05)["equivalent"]
    assert not paired_tost(x, m * (1 - 1e-9), 0.05)["equivalent"]


@pytest.mark.parametrize(
    "value, equivalent", [(-0.5, False), (0.5, False), (-0.05, True), (0.05, True), (0.0, True)]
)
def test_tost_on_identical_differences_is_the_limit_of_a_vanishing_spread(value, equivalent):
    """All differences equal (SD 0, where the t statistics are infinite): equivalent exactly when
    the common value lies strictly inside ±margin, each one-sided p-value 0 or 1 as the limit
    of the t-test when the spread goes to 0 (checked against a tiny spread)."""
    margin = 0.1
    t = paired_tost([value] * 5, margin)
    assert t["equivalent"] is equivalent
    assert t["p"] == (0.0 if equivalent else 1.0)
    assert t["ci"] == [value, value]
    jitter = value + 1e-12 * np.array([1.0, -1.0, 0.5, -0.5, 0.0])
    assert paired_tost(jitter, margin)["p"] == pytest.approx(t["p"], abs=1e-9)


def test_tost_needs_two_differences():
    with pytest.raises(ValueError, match="at least 2"):
        paired_tost([0.1], 1.0)


@pytest.mark.parametrize("n, sd", [(2, 1.0), (5, 0.3), (10, 0.004), (40, 2.0)])
def test_sd_interval_ends_are_the_chi2_quantiles(n, sd):
    lo, hi = sd_interval(sd, n, 0.05)
    df = n - 1
    assert stats.chi2.sf(df * sd**2 / lo**2, df) == pytest.approx(0.05, rel=1e-9)
    assert stats.chi2.cdf(df * sd**2 / hi**2, df) == pytest.approx(0.05, rel=1e-9)
    assert lo < sd < hi


def test_sd_interval_covers_sigma_90_percent_of_the_time():
    """Coverage by simulation: a wrong ``ddof`` or degrees of freedom moves it visibly."""
    rng = np.random.default_rng(11)
    x = rng.normal(0.0, 2.0, (20000, 10))
    s = x.std(axis=1, ddof=1)
    cover = np.mean([lo < 2.0 < hi for lo, hi in (sd_interval(v, 10, 0.05) for v in s)])
    assert abs(cover - 0.90) < 4 * math.sqrt(0.9 * 0.1 / 20000)


def test_sd_interval_needs_two_draws():
    with pytest.raises(ValueError, match="at least 2"):
        sd_interval(1.0, 1)


@pytest.mark.parametrize(
    "ci, upper_only, expected",
    [
        ([-0.5, 0.5], False, "equivalent"),
        ([-1.5, 0.5], False, "inconclusive"),
        ([2.5, 3.0], False, "not equivalent"),
        ([-3.0, -2.5], False, "not equivalent"),
        ([-3.0, -2.5], True, "inconclusive"),  # the gate cost fails only above Δ_high
        ([2.5, 3.0], True, "not equivalent"),
        ([1.5, 3.0], True, "inconclusive"),
        ([-1.0, 0.5], False, "inconclusive"),  # the end at −Δ_low is not inside
    ],
)
def test_three_way_decision(ci, upper_only, expected):
    assert three_way(ci, 1.0, 2.0, upper_only=upper_only) == expected


@pytest.mark.parametrize(
    "n, ratio, mean", [(3, 3.0, 0.0), (5, 1.5, 0.0), (8, 1.2, 0.3), (12, 1.0, 0.25), (24, 0.7, 0.2)]
)
def test_power_is_a_close_lower_bound_of_the_simulated_power(n, ratio, mean):
    sim = simulated_tost_power(n, ratio, 1.0, 0.05, mean, draws=100_000, seed=n)
    bound = tost_power(n, ratio, 1.0, 0.05, mean)
    # exactly P(A) + P(B) − 1, whose simulated estimate is unbiased
    assert abs(bound - max(0.0, sim["bound"])) <= 4 * sim["bound_se"]
    assert bound <= sim["power"] + 4 * sim["power_se"]  # a lower bound of the exact power
    if n >= 5 and sim["power"] >= 0.8:  # where the plan lands (n ≥ 5, power ≥ 0.8) it is tight
        assert sim["power"] - bound < 0.01


def test_power_is_the_two_noncentral_t_tails():
    n, margin, sd, mean = 7, 1.0, 0.8, 0.2
    tc = stats.t.ppf(0.95, n - 1)
    nc = math.sqrt(n) / sd
    expected = stats.nct.sf(tc, n - 1, (mean + margin) * nc) + stats.nct.cdf(
        -tc, n - 1, (mean - margin) * nc
    )
    assert tost_power(n, margin, sd, 0.05, mean) == pytest.approx(expected - 1, rel=1e-12)


def test_size_at_the_margin_is_at_most_alpha():
    for n in (4, 10):
        assert tost_power(n, 1.0, 1.0, 0.05, mean=1.0) <= 0.05
        sim = simulated_tost_power(n, 1.0, 1.0, 0.05, mean=1.0, draws=50_000)
        assert sim["power"] <= 0.05 + 3 * sim["power_se"]


def test_planned_pairs_is_the_least_with_enough_power_on_every_endpoint():
    for sds in ([1.0], [0.5, 1.0], [1.2, 0.4]):
        n, pw = planned_pairs(1.5, sds, 0.05, 0.8, 0.375, 5, 64)
        assert min(pw) >= 0.8 and n >= 5
        assert n == 5 or min(tost_power(n - 1, 1.5, s, 0.05, 0.375) for s in sds) < 0.8
    n, pw = planned_pairs(0.1, [1.0], 0.05, 0.8, 0.0, 5, 10)  # unreachable: capped
    assert n == 10 and pw[0] < 0.8
    assert planned_pairs(10.0, [0.01], 0.05, 0.8, 0.0, 5, 64)[0] == 5  # never fewer than 5
