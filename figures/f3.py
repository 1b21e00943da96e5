"""F3 figure: held-out error of the softmax MLP against width, for each number of training steps."""

from __future__ import annotations

import matplotlib.pyplot as plt

from fastslow.figures import figure, verdict_json, verdict_points
from fastslow.verify.verdict import Verdict

WIDTHS = (1, 2, 4, 8, 16, 32)
STEPS = (0, 300, 1000, 3000)
PARAMS = {"widths": WIDTHS, "steps": STEPS, "n_seeds": 3}


@figure("F3", "f3_error_vs_width", compute=verdict_json, points=verdict_points("F3", [PARAMS]))
def f3_error_vs_width(data: list, seed: int):
    res = Verdict.from_json(data[0])
    table = res.figures["kl_width_table"]
    widths = list(WIDTHS)
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4), constrained_layout=True)
    for s in STEPS:
        for ax, metric in zip(axes, ("mean_kl", "max_tv")):
            vals = [table[f"width={w}"][f"steps={s}"][metric] for w in widths]
            ax.loglog(widths, vals, "o-", ms=3, label=f"{s} steps")
    axes[1].axhline(res.params["tv_threshold"], color="k", ls="--", lw=0.8, label="threshold")
    axes[1].axhline(
        res.figures["constant_predictor"]["max_tv"],
        color="0.5",
        ls=":",
        lw=0.8,
        label="best constant",
    )
    axes[0].set_ylabel("held-out mean KL(p_st ‖ φ_θ)")
    axes[1].set_ylabel("held-out max TV")
    for ax in axes:
        ax.set_xlabel("width")
        ax.set_xticks(widths, [str(w) for w in widths])
    axes[1].legend(fontsize=6)
    gv = res.figures["generator_violation"]
    lin = gv["linearised"]
    fig.suptitle(
        "F3: softmax MLP → p_st (median over seeds). Attention operator generator "
        f"violation (median rel.): sign {lin['negative_offdiag_rel']['median']:.2f}, "
        f"sum {lin['sum_defect_rel']['median']:.2f}",
        fontsize=8,
    )
    return fig, dict(res.params, seed=seed)
