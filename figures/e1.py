"""E1 figures, drawn from the verdict's series (the training runs are cached, never redone here):
each layer's gate against training tokens for every seed with the noise band, the held-out loss
curves of the three models with seed bands, the final coupled − frozen gap per seed against the
seed-to-seed spread, and the wall-clock cost per token of the three models.

``e1_neutrality`` draws the full experiment on the real text (the claim's defaults);
``e1_shared_structure`` the negative control (the short profile on the noisy block-copy corpus).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, verdict_json, verdict_points
from fastslow.verify.checks.e1 import SHORT, control_params
from fastslow.verify.verdict import Verdict

KIND_COLOURS = {"dense": "tab:gray", "coupled": "tab:blue", "frozen": "tab:orange"}


def gates_panel(ax, v: Verdict) -> None:
    band = v.figures["gate_noise_band"]
    ax.axhspan(-band, band, color="tab:green", alpha=0.12, label=f"noise band ±{band:.3f}")
    for i, run in enumerate(v.series["coupled"]):
        g = np.array(run["gates"])
        for l in range(g.shape[1]):
            ax.plot(
                run["tokens"],
                g[:, l],
                color=plt.get_cmap("viridis")(l / max(g.shape[1] - 1, 1)),
                lw=1,
                alpha=0.8,
                label=f"layer {l}" if i == 0 else None,
            )
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("training tokens")
    ax.set_ylabel("gate g (coupled, every seed)")
    ax.set_title("(a) the gates against their noise band", fontsize=8)
    ax.legend(fontsize=6, ncol=2)


def loss_panel(ax, v: Verdict) -> None:
    for kind, col in KIND_COLOURS.items():
        runs = v.series[kind]
        t = np.array(runs[0]["tokens"])
        y = np.array([r["heldout_loss"] for r in runs])
        ls = "--" if kind == "frozen" else "-"
        ax.plot(t, y.mean(axis=0), ls, color=col, lw=1.2, label=kind)
        ax.fill_between(t, y.min(axis=0), y.max(axis=0), color=col, alpha=0.2)
    ax.set_xlabel("training tokens")
    ax.set_ylabel("held-out loss (nats/char)")
    ax.set_title("(b) held-out loss, band = seed range (frozen ≡ dense)", fontsize=8)
    ax.legend(fontsize=7)


def gap_panel(ax, v: Verdict) -> None:
    f = v.figures
    gaps = np.atleast_1d(f["loss_gap_per_seed"])
    spread = f["loss_gap_seed_spread"]
    ax.axhspan(-spread, spread, color="tab:green", alpha=0.15, label=f"seed spread ±{spread:.4f}")
    ax.plot(np.arange(gaps.size), gaps, "o", color="tab:blue", label="coupled − frozen, per seed")
    ax.axhline(f["loss_gap_coupled_minus_frozen"], color="tab:blue", lw=1, label="mean gap")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(np.arange(gaps.size))
    ax.set_xlabel("seed")
    ax.set_ylabel("final held-out loss gap (nats/char)")
    ax.set_title("(c) the gap against the seed-to-seed spread", fontsize=8)
    ax.legend(fontsize=7)


def cost_panel(ax, v: Verdict) -> None:
    kinds = list(KIND_COLOURS)
    us = [np.array([r["seconds_per_token"] for r in v.series[k]]) * 1e6 for k in kinds]
    for i, (k, u) in enumerate(zip(kinds, us)):
        ax.bar(i, np.median(u), color=KIND_COLOURS[k], alpha=0.7)
        ax.plot(np.full(u.size, i), u, "k.", ms=4)
    ax.set_xticks(range(len(kinds)), kinds)
    ax.set_ylabel("wall-clock µs per training token")
    ratio = v.figures["cost_ratio_coupled_vs_dense"]
    ax.set_title(f"(d) cost per token: coupled / dense = {ratio:.2f}", fontsize=8)


def draw_e1(data: list, seed: int, params: dict):
    v = Verdict.from_json(data[0])
    fig, axes = plt.subplots(2, 2, figsize=(9.0, 6.6), constrained_layout=True)
    for ax, panel in zip(axes.ravel(), (gates_panel, loss_panel, gap_panel, cost_panel)):
        panel(ax, v)
    f = v.figures
    fig.suptitle(
        f"E1 {v.outcome}: {f['tokens_per_run']} tokens × {f['seeds']} seeds, corpus "
        f"{f['corpus_sha256'][:12]}…",
        fontsize=9,
    )
    return fig, dict(params, seed=seed)


@figure("E1", "e1_neutrality", compute=verdict_json, points=verdict_points("E1", [{}]))
def e1_neutrality(data: list, seed: int):
    return draw_e1(data, seed, {})


CONTROL = control_params(SHORT)


@figure("E1", "e1_shared_structure", compute=verdict_json, points=verdict_points("E1", [CONTROL]))
def e1_shared_structure(data: list, seed: int):
    return draw_e1(data, seed, CONTROL)
