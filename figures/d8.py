"""D8 figure: predictive log-loss gap (pooled − full) by emission family, with intervals, and the
largest exact full-vs-pooled difference of each family (the check's series)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, verdict_json, verdict_points
from fastslow.verify.registry import get_claim
from fastslow.verify.verdict import Verdict

_FAMILY_CHOICES = get_claim("D8").params["family"].choices
assert _FAMILY_CHOICES is not None  # the family parameter is declared with its choices
FAMILIES: tuple[str, ...] = _FAMILY_CHOICES
"""Every design of the check: the exponential families and the controls."""
SIZES = ("n_seq", "P", "N")
"""The sizes the figure records (the check's defaults, the same for every family)."""


@figure(
    "D8",
    "d8_logloss_gap",
    compute=verdict_json,
    points=verdict_points("D8", [{"family": fam} for fam in FAMILIES]),
)
def d8_logloss_gap(data: list, seed: int):
    rows = [Verdict.from_json(case) for case in data]
    fig, axes = plt.subplots(
        1, 2, figsize=(8.0, 3.6), constrained_layout=True, gridspec_kw={"width_ratios": [1.4, 1.0]}
    )
    ax = axes[0]
    x = np.arange(len(FAMILIES))
    gap = np.array([r.figures["gap_mean"] for r in rows])
    ci = np.array([r.figures["gap_ci"] for r in rows])
    colors = ["tab:blue" if r.hypotheses_hold else "tab:red" for r in rows]  # measured hypothesis
    ax.bar(x, gap, color=colors, alpha=0.75)
    ax.errorbar(x, gap, yerr=np.abs(ci - gap[:, None]).T, fmt="none", ecolor="k", capsize=3, lw=1)
    ax.axhline(0.0, color="k", lw=0.6)
    for xi, gi, r in zip(x, gap, rows):
        if not r.hypotheses_hold:
            ax.annotate(
                f"{gi:.3f}",
                (xi, gi),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=7,
            )
    ax.set_xticks(x, FAMILIES, rotation=35, ha="right")
    ax.set_ylabel("E[log p_full − log p_pooled]  (nats/token)")
    ax.set_title("log-loss cost of block-mean pooling (95% CI)", fontsize=9)
    ax = axes[1]
    diff = np.array([r.series["max_abs_diff"] for r in rows])
    ax.semilogy(x, np.maximum(diff, 1e-17), "o", color="k")
    for xi, c in zip(x, colors):
        ax.plot(xi, max(diff[xi], 1e-17), "o", color=c)
    ax.axhline(1e-10, color="gray", ls="--", lw=0.8, label="tolerance 1e-10")
    ax.set_xticks(x, FAMILIES, rotation=35, ha="right")
    ax.set_ylabel("max |full − pooled| (log pred., posterior)")
    ax.set_title("exp. families (blue) vs controls (red)", fontsize=9)
    ax.legend(fontsize=7)
    sizes = {k: rows[0].params[k] for k in SIZES}
    return fig, dict(sizes, seed=seed, families=FAMILIES)
