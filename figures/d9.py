"""D9 figures: the learned gate against the block correlation ρ with the D7 margin, and the
1/√n decay of the learned gate on independent blocks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from fastslow.figures import figure, verdict_json, verdict_points
from fastslow.verify.verdict import Verdict

PARAMS = {"rhos": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)}
RHO_CASES = ((0.0, "ρ = 0", "tab:blue"), (0.6, "ρ = 0.6", "tab:orange"))
"""The training correlation ρ of each D9 check, its label and colour; the first (ρ = 0, the D9
default) also gives the ρ sweep and the margin of the left panel."""


@figure(
    "D9",
    "d9_gate_vs_rho",
    compute=verdict_json,
    points=verdict_points("D9", [dict(PARAMS, rho=rho) for rho, _, _ in RHO_CASES]),
)
def d9_gate_vs_rho(data: list, seed: int):
    r0, r1 = (Verdict.from_json(case) for case in data)
    f = r0.figures
    rhos = np.array(f["rhos"])
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), constrained_layout=True)
    ax = axes[0]
    ax.axhspan(f["margin_over_normG"], 1.15 * f["margin_over_normG"], color="tab:red", alpha=0.12)
    ax.axhline(
        f["margin_over_normG"],
        color="tab:red",
        lw=1.2,
        label=f"D7 margin m(J)/‖G‖ = {f['margin_over_normG']:.2f}",
    )
    ax.errorbar(
        rhos,
        f["sweep_gate_mean"],
        yerr=f["sweep_gate_ci_half"],
        fmt="o",
        color="tab:blue",
        capsize=3,
        label=f"learned gate (n = {r0.params['n_train']}, {r0.params['seeds']} seeds)",
    )
    ax.plot(
        rhos, f["sweep_gate_population"], "-", color="k", lw=0.8, label="trained on population risk"
    )
    ax.set_xlabel("block correlation ρ (ρ = 0: independent blocks)")
    ax.set_ylabel("gate g after gradient descent from 0")
    ax.set_ylim(-0.05, 1.15 * f["margin_over_normG"])
    ax.set_title(
        "stability delimits what the architecture may do;\nthe data decides what it will",
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="center left")
    ax = axes[1]
    n = np.array(f["n_grid"], dtype=float)
    for res, (_, lab, col) in zip((r0, r1), RHO_CASES):
        g = res.figures
        ax.loglog(
            n,
            g["learned_gate_rms_by_n"],
            "o-",
            color=col,
            label=f"{lab}: slope {g['gate_rms_slope']:.2f} "
            f"[{g['gate_rms_slope_ci'][0]:.2f}, {g['gate_rms_slope_ci'][1]:.2f}]",
        )
    ref = f["learned_gate_rms_by_n"][0] * (n / n[0]) ** -0.5
    ax.loglog(n, ref, "--", color="gray", lw=0.8, label="n^(-1/2)")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(n, [str(int(k)) for k in n])
    ax.set_xlabel("training sequences n")
    ax.set_ylabel("RMS learned gate over seeds")
    ax.set_title("independent blocks: the gate stays closed (∝ 1/√n)", fontsize=8)
    ax.legend(fontsize=7)
    return fig, dict(PARAMS, seed=seed)
