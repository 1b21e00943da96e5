"""The suite's statistics against independent implementations and against their own promise.

Two oracles for each interval, neither of them the code under test:

* the same number from another library (statsmodels' OLS for the slope interval of
  :func:`verify.measure.slope_fit`; SciPy's one-sample t test for :func:`verify.measure.mean_interval`;
  ``scipy.stats.sem``; SciPy's normal quantile);
* a seeded simulation of the interval's coverage on data that satisfies its assumptions: the
  fraction of intervals containing the true value must lie in the binomial band
  ``nominal ± 4·√(nominal(1 − nominal)/sims)`` (a false alarm with probability ≈ 6e-5). The sample
  sizes are small, where the degrees of freedom matter: a ``df`` off by one, a ``ddof = 0`` SD or a
  normal quantile in place of Student's t moves the coverage out of the band (the margins are
  stated per test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import special, stats

from fastslow.numerics.toy.gated_predictor import fast_risk_standard_error
from fastslow.verify import measure
from fastslow.verify.checks import d8, d9

SIMS = 4000


def binomial_band(nominal: float, sims: int = SIMS) -> tuple[float, float]:
    """``nominal ± 4σ`` of the fraction of ``sims`` Bernoulli(``nominal``) draws."""
    sd = math.sqrt(nominal * (1 - nominal) / sims)
    return nominal - 4 * sd, nominal + 4 * sd


# --------------------------------------------------------------------------- slope interval


@pytest.mark.parametrize("n", [3, 4, 7])
def test_slope_fit_equals_statsmodels_ols(n):
    """Slope, standard error, 95% interval and R² of :func:`verify.measure.slope_fit` are those of
    statsmodels' OLS of ``log err`` on ``[1, log h]`` (``conf_int(0.05)``: t with ``n − 2`` df)."""
    rng = np.random.default_rng(n)
    h = 10.0 ** -np.sort(rng.uniform(0, 4, n))
    err = h**1.7 * np.exp(0.2 * rng.standard_normal(n))
    fit = measure.slope_fit(h, err)
    ols = sm.OLS(np.log(err), sm.add_constant(np.log(h))).fit()
    assert fit["slope"] == pytest.approx(ols.params[1], rel=1e-12)
    assert fit["intercept"] == pytest.approx(ols.params[0], rel=1e-12, abs=1e-12)
    assert fit["stderr"] == pytest.approx(ols.bse[1], rel=1e-10)
    np.testing.assert_allclose(fit["ci95"], ols.conf_int(0.05)[1], rtol=1e-10)
    assert fit["r2"] == pytest.approx(ols.rsquared, rel=1e-10)


def test_slope_interval_has_its_nominal_coverage():
    """On 4 points with Gaussian noise in ``log err`` the 95% slope interval contains the true
    slope on a fraction of 4000 seeded draws inside the binomial band [0.936, 0.964]. With
    ``n − 1`` df (t₃ instead of t₂) the coverage is 0.914, with a normal quantile 0.811."""
    rng = np.random.default_rng(20261206)
    lh = np.log(np.array([1e-1, 10**-1.5, 1e-2, 10**-2.5]))
    covered = 0
    for _ in range(SIMS):
        le = 0.3 + 2.0 * lh + 0.1 * rng.standard_normal(lh.size)
        lo, hi = measure.slope_fit(np.exp(lh), np.exp(le))["ci95"]
        covered += lo <= 2.0 <= hi
    lo_band, hi_band = binomial_band(0.95)
    assert lo_band <= covered / SIMS <= hi_band, covered / SIMS


# --------------------------------------------------------------------------- interval of a mean


@pytest.mark.parametrize("n", [2, 3, 10])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_mean_interval_equals_scipys_one_sample_t(n, confidence):
    """Mean, standard error, interval and t statistic of :func:`verify.measure.mean_interval` are
    SciPy's ``ttest_1samp`` (statistic and ``confidence_interval``) and ``sem``."""
    x = np.random.default_rng(n).normal(0.3, 2.0, n)
    m = measure.mean_interval(x, confidence)
    t = stats.ttest_1samp(x, 0.0)
    ci = t.confidence_interval(confidence)
    assert m["se"] == pytest.approx(stats.sem(x), rel=1e-12)
    assert m["z"] == pytest.approx(t.statistic, rel=1e-12)
    assert m["df"] == t.df
    np.testing.assert_allclose(m["ci"], (ci.low, ci.high), rtol=1e-12)


def test_mean_interval_of_one_value_is_unbounded():
    m = measure.mean_interval([1.5], 0.95)
    assert m["ci"] == (-math.inf, math.inf) and m["se"] == math.inf and m["z"] == 0.0


@pytest.mark.parametrize(("n", "confidence"), [(3, 0.95), (5, 1 - 0.01 / 3)])
def test_mean_interval_has_its_nominal_coverage(n, confidence):
    """Gaussian samples of size ``n``: the interval contains the true mean on a fraction of 4000
    draws inside the binomial band around ``confidence``. At ``n = 3`` and 95% (band [0.936,
    0.964]) one df too many gives 0.914, ``ddof = 0`` 0.928, a normal quantile 0.811; at ``n = 5``
    and D9's Bonferroni level 99.67% (band [0.9930, 0.9997]) a normal quantile gives 0.957 (the
    df and ddof errors are inside that band: the ``n = 3`` case is the one that sees them)."""
    rng = np.random.default_rng(7 + n)
    covered = sum(
        lo <= 1.0 <= hi
        for lo, hi in (
            measure.mean_interval(rng.normal(1.0, 3.0, n), confidence)["ci"] for _ in range(SIMS)
        )
    )
    lo_band, hi_band = binomial_band(confidence)
    assert lo_band <= covered / SIMS <= hi_band, covered / SIMS


def test_d8_gap_interval_is_the_t_interval_of_the_per_sequence_gaps():
    """D8's interval of the expected log-loss gap is SciPy's one-sample t interval of the
    per-sequence mean gaps."""
    rng = np.random.default_rng(1)
    lp_full, lp_pool = rng.normal(-1, 0.3, (6, 5)), rng.normal(-1.1, 0.3, (6, 5))
    out = d8.gap_interval(lp_full, lp_pool, 0.95)
    per_seq = (lp_full - lp_pool).mean(axis=1)
    ci = stats.ttest_1samp(per_seq, 0.0).confidence_interval(0.95)
    np.testing.assert_allclose(out["gap_ci"], (ci.low, ci.high), rtol=1e-12)
    assert out["gap_se"] == pytest.approx(stats.sem(per_seq), rel=1e-12)


def test_fast_risk_standard_error_is_the_sem_of_the_per_sequence_risks():
    """The toy's standard error of the fast-only risk is ``scipy.stats.sem`` (``ddof = 1``) of the
    per-sequence mean squared errors."""
    from fastslow.numerics.toy.gated_predictor import GatedToy, fast_estimate

    toy = GatedToy(P=2, N=3, tau=1.0, sigma=0.5, a=0.5, c=1.0)
    x = np.random.default_rng(2).standard_normal((7, toy.T))
    per_seq = ((x.reshape(-1, toy.N, toy.P) - fast_estimate(toy, x)) ** 2).mean(axis=(1, 2))
    assert fast_risk_standard_error(toy, x) == pytest.approx(stats.sem(per_seq), rel=1e-12)


# --------------------------------------------------------------------------- D9's decay slope


def test_d9_normal_quantile_is_scipys():
    for level in (0.05, 0.01 / 3):
        assert d9.normal_quantile(level) == pytest.approx(stats.norm.isf(level / 2), rel=1e-14)


def test_d9_log_rms_variance_is_the_chi_square_trigamma():
    """``Var(log RMS)`` of ``S`` Gaussian values is ``ψ'(S/2)/4`` (``S·RMS²/σ²`` is χ²_S): checked by
    simulation (the sample variance of 20000 log-RMS values within 4 of its standard errors)."""
    rng = np.random.default_rng(9)
    for S in (4, 16):
        g = rng.standard_normal((20000, S))
        lr = np.log(np.sqrt(np.mean(g * g, axis=1)))
        var, target = float(lr.var(ddof=1)), float(special.polygamma(1, S / 2)) / 4
        # SE of a sample variance: Var·√(2/(N−1)) up to the kurtosis of log RMS (close to 3)
        assert abs(var - target) <= 4 * target * math.sqrt(3 / 20000), (S, var, target)


def test_d9_decay_slope_interval_has_its_nominal_coverage():
    """Gates with ``SD ∝ n^{-1/2}`` on D9's grid shape (4 sizes) and ``S = 6`` seeds: the decay
    slope's interval at D9's Bonferroni level (false alarm 0.01/3) contains −0.5 on a fraction of
    4000 draws inside the binomial band [0.9930, 0.9997]; ``ψ'(S)`` for ``ψ'(S/2)`` (the χ²'s
    degrees of freedom doubled) falls below it."""
    rng = np.random.default_rng(31)
    grid = np.array([64, 256, 1024, 4096])
    level = 0.01 / 3
    covered = 0
    for _ in range(SIMS):
        gg = rng.standard_normal((grid.size, 6)) * 0.3 / np.sqrt(grid)[:, None]
        lo, hi = d9.rms_decay_slope(grid, gg, level)["ci"]
        covered += lo <= -0.5 <= hi
    lo_band, hi_band = binomial_band(1 - level)
    assert lo_band <= covered / SIMS <= hi_band, covered / SIMS
