"""What the theory predicts for E1's trained networks (``e1_trained_theory``: the short profile;
``e1_trained_theory_paper``: the paper scale), drawn from the
committed section ``docs/report/trained_<profile>.json`` (:mod:`verify.trained_section`); it
never trains. Four panels:

* D7: every coupled layer's trained ``|g|`` against the upper bound ``m⁺/G⁻`` of D7's certified
  region ``m(J)/‖G‖₂`` (above the diagonal: certainly outside it);
* D5: ``r(l)`` of every network against depth, with ``τ`` (``L* ≤ L`` iff the curve crosses ``τ``);
* D6: the share of the trained weight change on the directions D6 calls invisible (Q, K, Qs, Ks)
  and the decaying share of its first-order response (predicted 0, tolerance 1e-9);
* D9: the paired cost of zeroing the trained gates (90 % interval) against ±Δ, for E1's text and
  the shuffled-block control, with each corpus's cross-block structure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify import trained_section

COLOURS = {"coupled": "tab:blue", "frozen": "tab:orange", "dense": "tab:green"}


def section(profile: str) -> dict:
    """The committed section of ``profile`` (``ValueError`` naming the command that makes it)."""
    return trained_section.load(profile)


def points(seed: int) -> list[dict]:
    return [{"profile": "short"}]


def paper_points(seed: int) -> list[dict]:
    return [{"profile": "paper"}]


def _figures(row: dict, unit: str) -> dict:
    return row[unit].get("figures") or {}


def d7_panel(ax, data: dict) -> None:
    for row in data["networks"]:
        if row["arm"] != "coupled":
            continue
        f = _figures(row, "D7t")
        ax.loglog(f["bound_upper"], np.abs(f["gate"]), "o", ms=4, alpha=0.7)
    lim = ax.get_xlim()
    ax.plot(lim, lim, "k-", lw=0.8, label="|g| = m⁺/G⁻")
    ax.set_xlabel("m⁺/G⁻ ≥ m(J)/‖G‖₂ (per layer)")
    ax.set_ylabel("trained |g| (coupled)")
    ax.set_title("D7: gates vs the certified region (above: outside)", fontsize=8)
    ax.legend(fontsize=7)


def d5_panel(ax, data: dict) -> None:
    tau = None
    for row in data["networks"]:
        f = _figures(row, "D5t")
        r = f.get("r")
        if r:
            ax.semilogy(range(1, len(r) + 1), r, "-o", color=COLOURS[row["arm"]], ms=3, alpha=0.5)
            tau = f["tau"]
    if tau is not None:
        ax.axhline(tau, color="k", lw=0.8, ls="--", label=f"τ = {tau:g}")
    for arm, c in COLOURS.items():
        ax.plot([], [], "-", color=c, label=arm)
    ax.set_xlabel("depth l")
    ax.set_ylabel("r(l) = max_{λ≠1} ‖D_λ‖ / σ_min(D_1)")
    stars = sorted({_figures(r, "D5t").get("L_star") for r in data["networks"]}, key=str)
    ax.set_title(f"D5: saturation (L* over networks: {', '.join(map(str, stars))})", fontsize=8)
    ax.legend(fontsize=7)


def d6_panel(ax, data: dict) -> None:
    for i, arm in enumerate(("coupled", "frozen")):
        rows = [r for r in data["networks"] if r["arm"] == arm]
        t = np.array([r["tokens"] for r in rows], float) * (1 + 0.06 * i)
        f = [_figures(r, "D6t") for r in rows]
        ax.semilogy(
            t,
            [x["invisible_share_of_weight_change"] for x in f],
            "s",
            color=COLOURS[arm],
            label=f"{arm}: ‖δθ_QK‖²/‖δθ‖²",
        )
        ax.semilogy(
            t,
            [max(x["decaying_share_of_response"], 1e-18) for x in f],
            "o",
            mfc="none",
            color=COLOURS[arm],
            label=f"{arm}: ‖(I−Π)δX_L‖/‖δX_L‖",
        )
    ax.axhline(1e-9, color="k", lw=0.8, ls="--", label="tolerance 1e-9")
    ax.set_xscale("log")
    ax.set_xlabel("training tokens per run")
    ax.set_title("D6: weight change on invisible directions; decaying response", fontsize=8)
    ax.legend(fontsize=6)


def d9_panel(ax, data: dict) -> None:
    for i, corpus in enumerate(("pydoc", "shuffled")):
        rows = [r for r in data["d9"] if r["corpus"] == corpus]
        colour = ("tab:blue", "tab:gray")[i]
        for r in rows:
            f = r.get("figures") or {}
            if not f:
                continue
            x = r["tokens"] * (1 + 0.08 * i)
            lo, hi = f["cost_ci90"]
            ax.plot([x, x], [lo, hi], "-", color=colour, lw=3)
            ax.plot([x / 1.04, x * 1.04], [f["margin_delta"]] * 2, "k-", lw=0.8)
            ax.plot([x / 1.04, x * 1.04], [-f["margin_delta"]] * 2, "k-", lw=0.8)
        excess = next(
            (r["figures"]["mi_excess_bits"] for r in rows if r.get("figures")), float("nan")
        )
        ax.plot([], [], "-", color=colour, lw=3, label=f"{corpus} (structure {excess:.3f} bits)")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("training tokens per run")
    ax.set_ylabel("cost of zeroing the gates, 90 % CI (nats/char)")
    ax.set_title("D9: gates on E1's text and the shuffled-block control (ticks: ±Δ)", fontsize=8)
    ax.legend(fontsize=7)


def draw_section(d: dict):
    """The four panels of one section."""
    fig, axes = plt.subplots(2, 2, figsize=(10.0, 7.5), constrained_layout=True)
    d7_panel(axes[0, 0], d)
    d5_panel(axes[0, 1], d)
    d6_panel(axes[1, 0], d)
    d9_panel(axes[1, 1], d)
    fig.suptitle(
        f"The theory on E1's trained networks ({d['profile']} profile, run seeds "
        f"{d['seeds']}, tokens {d['tokens']})",
        fontsize=10,
    )
    return fig, {"profile": d["profile"], "tokens": d["tokens"], "seeds": d["seeds"]}


@figure("E1", "e1_trained_theory", compute=section, points=points)
def e1_trained_theory(data: list, seed: int):
    return draw_section(data[0])


@figure("E1", "e1_trained_theory_paper", compute=section, points=paper_points)
def e1_trained_theory_paper(data: list, seed: int):
    return draw_section(data[0])
