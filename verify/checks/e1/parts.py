"""E1's conclusion parts and limits that are not one-liners: the gates were trained, each
endpoint's three-way decision as a part and as a limit, and the statistics recomputed by SciPy's
own routines (:mod:`verify.equivalence` holds the statistics themselves)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from ...equivalence import simulated_tost_power
from ...verdict import Diagnostic

TRAINED_STEP_FRACTION = 0.9
"""A coupled gate counts as trained when it changed on at least this fraction of its steps."""
ENDPOINTS = {"gap": "gap", "gate_ablation": "ablation"}
"""Figure prefix → the per-seed values of :func:`verify.checks.e1.runs.endpoint_values`."""
SIM_DRAWS = 20_000
"""Draws of the simulated power in ``statistics_cross_checked``."""
STAT_RTOL = 1e-9
"""Relative agreement of two float64 evaluations of one t or χ² tail (rounding ~1e-15)."""


def trained_part(pilot: dict, test: dict) -> tuple[Diagnostic, dict]:
    """Every coupled gate moved on ≥ :data:`TRAINED_STEP_FRACTION` of its steps; no frozen one."""
    coupled = [r for part in (pilot, test) for r in part["coupled"]]
    frozen = [r for part in (pilot, test) for r in part["frozen"]]
    frac = min(u / r["steps"] for r in coupled for u in r["gate_updates"])
    frozen_moves = max(u for r in frozen for u in r["gate_updates"])
    part = Diagnostic(
        bool(frac >= TRAINED_STEP_FRACTION and frozen_moves == 0),
        [frac, frozen_moves],
        f"[least fraction of steps on which a coupled gate changed, most updates of a frozen "
        f"gate]: ≥ {TRAINED_STEP_FRACTION} and 0",
    )
    return part, {"gate_updated_fraction_min": frac, "frozen_gate_updates_max": frozen_moves}


def endpoint_part(e: dict, margin: list, what: str) -> Diagnostic:
    """Holds unless the endpoint is shown not equivalent; the rule states the three-way decision."""
    t = e["tost"]
    beyond = "entirely above Δ_high" if e["upper_only"] else "outside ±Δ_high"
    return Diagnostic(
        e["decision"] != "not equivalent",
        t["ci"],
        f"{what}: 90 % interval over {t['n']} seeds not {beyond} = {margin[1]:.4g} (inside "
        f"±Δ_low = ±{margin[0]:.4g}: equivalent, TOST p = {t['p']:.3g}); decision: {e['decision']}",
    )


def decided_limit(e: dict, other_fails: bool, margin: list, what: str) -> Diagnostic:
    """The endpoint's interval is decided (inside ±Δ_low or beyond Δ_high), or another part of
    the conclusion fails anyway (then the verdict is ``fails`` whatever this endpoint says)."""
    return Diagnostic(
        e["decision"] != "inconclusive" or other_fails,
        e["tost"]["ci"],
        f"{what}'s 90 % interval inside ±Δ_low = ±{margin[0]:.4g} or beyond Δ_high = "
        f"{margin[1]:.4g} (between them the pilot's uncertainty about Δ leaves it inconclusive), "
        "or another part fails",
    )


def statistics_cross_check(values: dict, ends: dict, pilot_k: int, plan: dict, alpha: float):
    """The hand-written statistics against SciPy's own routines on the data they decided: each
    endpoint's TOST p (``ttest_1samp``, one-sided, at ``±Δ_low``) and interval (its
    ``confidence_interval``), the margin's interval (``chi2.cdf`` at its ends gives ``1 − α`` and
    ``α``), and the planned power of each endpoint, ``P(A) + P(B) − 1`` of the two one-sided
    tests, against its unbiased estimate from a seeded simulation of the test (within 4 Monte
    Carlo SE)."""
    worst = 0.0
    lo, hi = plan["margin_ci"]
    df = pilot_k - 1
    if plan["margin"] > 0:
        x2 = df * plan["margin"] ** 2
        worst = max(
            abs(stats.chi2.cdf(x2 / hi**2, df) - alpha) / alpha,
            abs(stats.chi2.sf(x2 / lo**2, df) - alpha) / alpha,
        )
    for key, e in ends.items():
        x = values[ENDPOINTS[key]][: e["tost"]["n"]]
        if float(np.std(x)) == 0:  # a constant sample: SciPy's t-test is undefined
            continue
        t = e["tost"]
        p = max(
            stats.ttest_1samp(x + lo, 0.0, alternative="greater").pvalue,
            stats.ttest_1samp(x - lo, 0.0, alternative="less").pvalue,
        )
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(1 - 2 * alpha)
        scale = max(abs(t["ci"][0]), abs(t["ci"][1]), 1e-300)
        worst = max(
            worst,
            abs(t["p"] - p) / max(p, 1e-300),
            abs(t["ci"][0] - ci.low) / scale,
            abs(t["ci"][1] - ci.high) / scale,
        )
    power_off = 0.0
    for i, (key, pw) in enumerate(zip(ENDPOINTS, plan["powers"])):
        sim = simulated_tost_power(
            plan["n"], lo, plan["sd_high"][key], alpha, plan["effect"], SIM_DRAWS, seed=i
        )
        power_off = max(power_off, abs(pw - max(0.0, sim["bound"])) / sim["bound_se"])
    part = Diagnostic(
        bool(worst <= STAT_RTOL and power_off <= 4),
        [float(worst), float(power_off)],
        f"[largest relative difference of TOST p, interval ends and the margin's χ² tails from "
        f"SciPy's routines, planned power P(A) + P(B) − 1 from its {SIM_DRAWS}-draw simulation in "
        f"Monte Carlo SE]: ≤ {STAT_RTOL:g} and ≤ 4",
    )
    return part
