"""Paired equivalence tests against a margin that carries its own uncertainty (E1's statistics).

The margin Δ of "within run-to-run noise" is itself a standard deviation estimated on a pilot of
``k`` draws, so it comes with a chi-square confidence interval ``[Δ_low, Δ_high]``
(:func:`sd_interval`). An endpoint (paired differences ``x``: a gap, a cost) is decided three
ways by its paired ``1 − 2α`` t-interval (:func:`paired_tost`, :func:`three_way`):

* *equivalent* when the interval lies inside ``(−Δ_low, Δ_low)``: the TOST at level ``α`` shows
  ``|mean| < Δ_low``, hence ``< Δ`` at every margin the pilot leaves plausible;
* *not equivalent* when it lies outside ``[−Δ_high, Δ_high]`` (one-sided: entirely above
  ``Δ_high``): the mean exceeds every plausible margin;
* *inconclusive* otherwise: the data, or the pilot's uncertainty about Δ, do not decide.

The number of test pairs comes from a power calculation fixed before the test
(:func:`planned_pairs`): the least ``n`` at which the TOST against ``Δ_low`` has the asked power
at a stated non-zero true mean, for the upper confidence limit of each endpoint's SD.

Hypotheses of every function: the differences are independent draws from one normal
distribution (the t and chi-square intervals are exact under it; with a handful of seeds
normality is an assumption, not a checked fact). Oracles in ``tests/test_equivalence.py``:
``statsmodels.stats.weightstats.ttost_paired`` for the TOST, ``scipy.stats.chi2`` for the
interval of the SD, ``scipy.stats.nct`` and a seeded simulation for the power.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

DECISIONS = ("equivalent", "not equivalent", "inconclusive")


def paired_tost(x, margin: float, alpha: float = 0.05) -> dict:
    """Two one-sided t-tests of ``|mean(x)| ≥ margin`` on the paired differences ``x``.

    Returns the mean, the SD (``ddof = 1``), the ``1 − 2·alpha`` t-interval (``ci``), the TOST
    p-value ``max(P(T > t₁), P(T < t₂))`` with ``t₁,₂ = (x̄ ± margin)/(s/√n)`` on ``n − 1``
    degrees of freedom (equivalence iff ``p < alpha`` iff ``ci`` lies inside
    ``(−margin, margin)``), the two-sided p-value of ``mean = 0``, and
    ``margin_min = |x̄| + t_{1−alpha}·s/√n``, the smallest margin at which equivalence holds."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 differences, got {n}")
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    df = n - 1
    se = sd / math.sqrt(n)
    q = float(stats.t.ppf(1 - alpha, df))
    if se == 0:
        p_lo = 0.0 if mean > -margin else 1.0
        p_hi = 0.0 if mean < margin else 1.0
        p_zero = 1.0 if mean == 0 else 0.0
    else:
        p_lo = float(stats.t.sf((mean + margin) / se, df))
        p_hi = float(stats.t.cdf((mean - margin) / se, df))
        p_zero = float(2 * stats.t.sf(abs(mean) / se, df))
    return {
        "n": n,
        "mean": mean,
        "sd": sd,
        "ci": [mean - q * se, mean + q * se],
        "p": max(p_lo, p_hi),
        "p_zero": p_zero,
        "margin_min": abs(mean) + q * se,
        "equivalent": bool(max(p_lo, p_hi) < alpha),
    }


def sd_interval(sd: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The ``1 − 2·alpha`` confidence interval of a normal SD estimated by ``sd`` (``ddof = 1``)
    from ``n`` draws: ``sd·√((n − 1)/χ²_{1−alpha}) ≤ σ ≤ sd·√((n − 1)/χ²_{alpha})`` with ``n − 1``
    degrees of freedom (``(n − 1)s²/σ² ~ χ²_{n−1}``)."""
    if n < 2:
        raise ValueError(f"a standard deviation's interval needs at least 2 draws, got {n}")
    df = n - 1
    return (
        float(sd * math.sqrt(df / stats.chi2.ppf(1 - alpha, df))),
        float(sd * math.sqrt(df / stats.chi2.ppf(alpha, df))),
    )


def three_way(ci, low: float, high: float, upper_only: bool = False) -> str:
    """:data:`DECISIONS` of the interval ``ci`` against the margin's interval ``[low, high]``:
    ``"equivalent"`` inside ``(−low, low)``; ``"not equivalent"`` outside ``[−high, high]`` (with
    ``upper_only``: entirely above ``high``); else ``"inconclusive"``."""
    lo, hi = ci
    if -low < lo and hi < low:
        return "equivalent"
    if lo > high or (not upper_only and hi < -high):
        return "not equivalent"
    return "inconclusive"


def tost_power(n: int, margin: float, sd: float, alpha: float = 0.05, mean: float = 0.0) -> float:
    """Power of the paired TOST with ``n`` pairs at true mean ``mean``, margin ``margin`` and SD
    ``sd`` of the differences: ``P(T₁ > t_c) + P(T₂ < −t_c) − 1`` with ``T₁,₂`` noncentral t
    (``n − 1`` degrees of freedom, noncentrality ``(mean ± margin)·√n/sd``), clipped at 0. A lower
    bound of the exact power (``P(A∩B) ≥ P(A) + P(B) − 1``), close to it once the power is useful
    (both tested against :func:`simulated_tost_power`)."""
    if n < 2:
        return 0.0
    if sd <= 0:
        return 1.0 if abs(mean) < margin else 0.0
    df = n - 1
    tc = float(stats.t.ppf(1 - alpha, df))
    root = math.sqrt(n) / sd
    p1 = float(stats.nct.sf(tc, df, (mean + margin) * root))
    p2 = float(stats.nct.cdf(-tc, df, (mean - margin) * root))
    return max(0.0, p1 + p2 - 1.0)


def simulated_tost_power(
    n: int, margin: float, sd: float, alpha: float = 0.05, mean: float = 0.0, draws=20_000, seed=0
) -> dict:
    """The TOST simulated on ``draws`` seeded normal samples of ``n`` differences, with A and B
    the events that each one-sided test rejects (the interval's lower end above ``−margin``, its
    upper end below ``margin``): ``power`` = share of A∩B (the exact power) and ``bound`` = share
    of A∩B minus share of neither, an unbiased estimate of ``P(A) + P(B) − 1`` (what
    :func:`tost_power` computes), each with its Monte Carlo SE (``*_se``)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, sd, (draws, n))
    m, s = x.mean(axis=1), x.std(axis=1, ddof=1)
    half = stats.t.ppf(1 - alpha, n - 1) * s / math.sqrt(n)
    a, b = m - half > -margin, m + half < margin
    both = (a & b).astype(float)
    bound = both - (~a & ~b)
    return {
        "power": float(both.mean()),
        "power_se": float(max(both.std(), 1.0 / draws) / math.sqrt(draws)),
        "bound": float(bound.mean()),
        "bound_se": float(max(bound.std(), 1.0 / draws) / math.sqrt(draws)),
    }


def planned_pairs(
    margin: float, sds, alpha: float, power: float, mean: float, least: int, most: int
) -> tuple[int, list[float]]:
    """``(n, power of each endpoint at n)``: the least ``n`` in ``[least, most]`` at which the TOST
    against ``margin`` has :func:`tost_power` ≥ ``power`` at true mean ``mean`` for every SD of
    ``sds`` (one per endpoint); else ``most``, with its insufficient powers."""
    for n in range(least, most + 1):
        pw = [tost_power(n, margin, s, alpha, mean) for s in sds]
        if min(pw) >= power:
            return n, pw
    return most, [tost_power(most, margin, s, alpha, mean) for s in sds]
