"""The statistics of E1's pre-registered design (verify.checks.e1): paired TOST, its power, the
seed count from the power rule, and the joint gate-drift test.

Oracles: SciPy's one-sample t-tests (``ttest_1samp`` with one-sided alternatives) for the two
one-sided tests and the test of zero; the duality of TOST and the 90 % interval; Monte Carlo
simulation of the TOST for its power and size; the χ² distribution's own quantiles under the null.
"""

import numpy as np
import pytest
from scipy import stats

from fastslow.verify.checks.e1 import (
    MIN_TEST_SEEDS,
    gate_drift_test,
    paired_tost,
    tost_power,
    tost_seeds,
)


@pytest.mark.parametrize("seed", range(5))
def test_tost_is_two_one_sided_t_tests(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    x = rng.normal(rng.normal(0, 0.5), rng.uniform(0.2, 2.0), n)
    margin = float(rng.uniform(0.2, 2.0))
    t = paired_tost(x, margin, 0.05)
    lo = stats.ttest_1samp(x + margin, 0.0, alternative="greater").pvalue
    hi = stats.ttest_1samp(x - margin, 0.0, alternative="less").pvalue
    assert t["p"] == pytest.approx(max(lo, hi), rel=1e-10, abs=1e-15)
    assert t["p_zero"] == pytest.approx(stats.ttest_1samp(x, 0.0).pvalue, rel=1e-10)
    # duality: equivalent iff the 90 % interval lies inside (−margin, margin)
    assert t["equivalent"] == (-margin < t["ci"][0] and t["ci"][1] < margin)
    # the smallest margin is where the decision flips
    m = t["margin_min"]
    assert paired_tost(x, m * (1 + 1e-9), 0.05)["equivalent"]
    assert not paired_tost(x, m * (1 - 1e-9), 0.05)["equivalent"]


def test_tost_needs_two_differences():
    with pytest.raises(ValueError, match="at least 2"):
        paired_tost([0.1], 1.0)


def simulated_power(n, margin, sd, mean, reps=20000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, sd, (reps, n))
    m, s = x.mean(axis=1), x.std(axis=1, ddof=1)
    se = s / np.sqrt(n)
    q = stats.t.ppf(0.95, n - 1)
    return float(np.mean((m - q * se > -margin) & (m + q * se < margin)))


@pytest.mark.parametrize("n, ratio", [(3, 3.0), (5, 1.5), (8, 1.2), (12, 1.0), (20, 0.7)])
def test_power_is_a_close_lower_bound_of_the_simulated_power(n, ratio):
    exact = simulated_power(n, ratio, 1.0, 0.0)
    bound = tost_power(n, ratio, 1.0, 0.05)
    se = np.sqrt(exact * (1 - exact) / 20000) + 1e-4
    assert bound <= exact + 3 * se
    if exact >= 0.5:  # where it matters for the seed count, the bound is tight
        assert exact - bound < 0.03


def test_size_at_the_margin_is_at_most_alpha():
    for n in (4, 10):
        assert tost_power(n, 1.0, 1.0, 0.05, mean=1.0) <= 0.05
        assert simulated_power(n, 1.0, 1.0, 1.0) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 20000)


def test_seed_count_is_the_least_with_enough_power():
    for ratio in (0.8, 1.2, 2.0, 5.0):
        n, pw = tost_seeds(ratio, 1.0, 0.05, 0.8, 64)
        assert pw >= 0.8 and n >= MIN_TEST_SEEDS
        assert n == MIN_TEST_SEEDS or tost_power(n - 1, ratio, 1.0, 0.05) < 0.8
    n, pw = tost_seeds(0.1, 1.0, 0.05, 0.8, 10)  # unreachable: capped, power reported
    assert n == 10 and pw < 0.8


def test_gate_drift_test_has_its_level_under_the_null_and_sees_drift():
    rng = np.random.default_rng(4)
    p = np.array([gate_drift_test(rng.normal(0, 0.3, (5, 4)), 0.3)["p"] for _ in range(4000)])
    assert abs(np.mean(p < 0.05) - 0.05) < 0.015
    drifted = gate_drift_test(rng.normal(0.9, 0.3, (5, 4)), 0.3)  # 3 SD per gate
    assert drifted["df"] == 20 and drifted["p"] < 1e-3
