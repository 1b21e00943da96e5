"""E1 figures, drawn from the verdicts' figures; they never train silently.

* ``e1_neutrality``: the paper-scale experiment (the claim's defaults): the paired held-out gap
  coupled − frozen per test seed (and the two extra seeds) with its 90 % interval against the
  margin's interval (±Δ_low, ±Δ_high) and the fixed ruler, the paired cost of zeroing the trained
  gates likewise, the planned power of both endpoints against the number of test seeds, and the
  pilot's per-seed losses that fix Δ;
* ``e1_token_sweep``: the same intervals and margins at each token count of
  :data:`verify.checks.e1.SWEEP_TOKENS`, with each endpoint's decision against its own Δ and
  against the fixed ruler, and the verdict at each;
* ``e1_shared_structure``: the negative control (noisy block copies, short profile).

**Where the data come from** (:func:`e1_verdict`), in this order: the check with every training
run read from the run cache (nothing is trained; the CPU timing of part (c) is measured anew);
else the verdict recorded in the committed report ``docs/report/report.json`` for the same
parameters and seed (its ``token_sweep`` rows for the sweep); else, only when
``FASTSLOW_E1_TRAIN=1`` is set, the runs are trained (progress on stderr); otherwise the figure
is not drawn and the error says how to get it.
"""

from __future__ import annotations

import json
import os

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.checks import e1
from fastslow.verify.equivalence import tost_power
from fastslow.verify.json_values import jsonable
from fastslow.verify.provenance import project_root

TRAIN_ENV = "FASTSLOW_E1_TRAIN"
"""Set to 1 to let the E1 figures train the runs missing from the cache."""

REPORT = "docs/report/report.json"


def resolved(params: dict) -> dict:
    """The claim's defaults updated by ``params`` (validated; no time budget: nothing may train
    unless asked)."""
    p = e1.CLAIM.defaults()
    for k, raw in params.items():
        p[k] = e1.CLAIM.params[k].parse(k, raw)
    return p


def from_report(p: dict, seed: int):
    """The verdict (JSON) of ``p`` and ``seed`` recorded in the committed report, else ``None``;
    for a token count of the sweep, its ``token_sweep`` row."""
    root = project_root()
    path = root / REPORT if root is not None else None
    if path is None or not path.exists():
        return None
    entry = next(c for c in json.loads(path.read_text())["claims"] if c["id"] == "E1")
    want = jsonable(p)
    for v in entry.get("verdicts", []) + entry.get("controls", []):
        if v.get("seed") == seed and {k: v["params"].get(k) for k in want} == want:
            return v
    if seed == 0 and all(p[k] == e1.CLAIM.defaults()[k] for k in p if k != "tokens"):
        for row in entry["figures"].get("token_sweep", []):
            if row.get("tokens") == p["tokens"]:
                return {"row": row}
    return None


def e1_verdict(seed: int, params: dict) -> dict:
    """The E1 verdict (JSON) of ``params`` and ``seed``: from the run cache, else the committed
    report, else trained only under ``FASTSLOW_E1_TRAIN=1`` (see the module docstring)."""
    p = resolved(params)
    e1.TRAIN_MISSING["on"] = False
    try:
        v = e1.CLAIM.decide(p, seed)
    finally:
        e1.TRAIN_MISSING["on"] = True
    if (v.error or {}).get("type") != "LookupError":
        return v.to_json()
    recorded = from_report(p, seed)
    if recorded is not None:
        return recorded
    if os.environ.get(TRAIN_ENV) == "1":
        e1.TRAIN_MISSING["progress"] = True
        try:
            return e1.CLAIM.decide(p, seed).to_json()
        finally:
            e1.TRAIN_MISSING["progress"] = None
    raise RuntimeError(
        f"E1 figure: the runs of {params or 'the defaults'} (seed {seed}) are neither in the run "
        f"cache nor in {REPORT}; set {TRAIN_ENV}=1 to train them (or run `fastslow check E1`)"
    )


def e1_row(seed: int, params: dict) -> dict:
    """One token count of the sweep figure: :func:`verify.checks.e1.sweep_row` of the verdict."""
    v = e1_verdict(seed, params)
    return v["row"] if "row" in v else e1.sweep_row(v)


DECISION_COLOURS = {"equivalent": "tab:blue", "not equivalent": "tab:red", "inconclusive": "0.5"}


def interval_panel(ax, f: dict, key: str, ylabel: str, title: str) -> None:
    """Per-seed values of one endpoint (test seeds, the two extra seeds), its 90 % interval, the
    margin's interval (±Δ_low inside, ±Δ_high outside) and the fixed ruler."""
    lo, hi = f["equivalence_margin_ci90"]
    per_seed = np.atleast_1d(f[f"{key}_per_seed"])
    values = "gap" if key == "gap" else "ablation"
    extra = np.atleast_1d(f["test_values"][values])
    ci = f[f"{key}_ci90"]
    ax.axhspan(-hi, hi, color="tab:green", alpha=0.08, label=f"±Δ_high = ±{hi:.4f}")
    ax.axhspan(-lo, lo, color="tab:green", alpha=0.18, label=f"±Δ_low = ±{lo:.4f}")
    for y in (-f["fixed_margin"], f["fixed_margin"]):
        ax.axhline(y, color="tab:orange", lw=0.8, ls="--")
    ax.plot([], [], color="tab:orange", lw=0.8, ls="--", label=f"fixed ±{f['fixed_margin']:.4f}")
    ax.plot(np.arange(extra.size), extra, "o", color="0.7", ms=4, label="extra seeds")
    ax.plot(np.arange(per_seed.size), per_seed, "o", color="tab:blue", ms=5, label="test seeds")
    x = extra.size + 0.8
    colour = DECISION_COLOURS[f[f"{key}_decision"]]
    ax.errorbar([x], [np.mean(ci)], yerr=[[np.mean(ci) - ci[0]], [ci[1] - np.mean(ci)]],
                fmt="s", color=colour, capsize=4, label=f"90 % CI: {f[f'{key}_decision']}")  # fmt: skip
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("test seed")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=6)


def power_panel(ax, f: dict) -> None:
    """The planned power of each endpoint against the number of test seeds (TOST against Δ_low at
    the stated effect, each SD at its upper limit)."""
    n = np.arange(2, max(3 * f["seeds"], 12) + 1)
    lo = f["equivalence_margin_ci90"][0]
    for key, colour in (("gap", "tab:purple"), ("gate_ablation", "tab:brown")):
        sd = f[f"pilot_{key}_sd_high"]
        pw = [tost_power(int(k), lo, sd, 0.05, f["power_effect"]) for k in n]
        ax.plot(n, pw, "-", color=colour, label=f"{key.replace('_', ' ')} (σ_high = {sd:.4f})")
    ax.axhline(0.8, color="k", lw=0.6, ls=":")
    ax.axvline(f["seeds"], color="tab:blue", lw=1, label=f"planned n = {f['seeds']}")
    ax.set_xlabel("test seeds")
    ax.set_ylabel("TOST power")
    ax.set_title(f"(c) planned power at a true mean {f['power_effect']:.4f} (Δ_low/4)", fontsize=8)
    ax.legend(fontsize=6)


def pilot_panel(ax, f: dict) -> None:
    """The pilot's per-seed held-out losses of both arms (Δ is the frozen ones' SD)."""
    pv = f["pilot_values"]
    k = np.arange(len(pv["frozen"]))
    ax.plot(k, pv["frozen"], "o", color="tab:green", ms=4, label="frozen")
    ax.plot(k, pv["coupled"], "x", color="tab:blue", ms=5, label="coupled")
    lo, hi = f["equivalence_margin_ci90"]
    ax.set_xlabel("pilot seed")
    ax.set_ylabel("held-out loss (nats/char)")
    ax.set_title(
        f"(d) pilot: Δ = {f['equivalence_margin']:.4f}, 90 % CI [{lo:.4f}, {hi:.4f}]", fontsize=8
    )
    ax.legend(fontsize=6)


def draw_verdict(v: dict, seed: int, params: dict):
    f = v["figures"]
    fig, axes = plt.subplots(2, 2, figsize=(9.0, 6.6), constrained_layout=True)
    interval_panel(
        axes[0, 0],
        f,
        "gap",
        "held-out gap coupled − frozen (nats/char)",
        f"(a) gap: TOST p = {f['gap_tost_p']:.2g} (against Δ_low), p(0) = {f['gap_zero_p']:.2g}",
    )
    interval_panel(
        axes[0, 1],
        f,
        "gate_ablation",
        "loss with gates zeroed − trained (nats/char)",
        f"(b) cost of closing the gates: TOST p = {f['gate_ablation_tost_p']:.2g}",
    )
    power_panel(axes[1, 0], f)
    pilot_panel(axes[1, 1], f)
    fig.suptitle(
        f"E1 {v['verdict']} (profile {f['profile']}): {f['tokens_per_run']} tokens, "
        f"{f['seeds']} test seeds (+{f['extra']['seeds'] - f['seeds']}), CPU cost ratio "
        f"{f['cost_ratio_cpu']:.2f}, corpus {f['corpus_sha256'][:12]}…",
        fontsize=9,
    )
    return fig, dict(params, seed=seed)


def paper_points(seed: int) -> list[dict]:
    return [{"seed": seed, "params": {}}]


@figure("E1", "e1_neutrality", compute=e1_verdict, points=paper_points)
def e1_neutrality(data: list, seed: int):
    return draw_verdict(data[0], seed, {})


def sweep_points(seed: int) -> list[dict]:
    return [{"seed": seed, "params": {"tokens": t}} for t in e1.SWEEP_TOKENS]


@figure("E1", "e1_token_sweep", compute=e1_row, points=sweep_points)
def e1_token_sweep(data: list, seed: int):
    """Each token count's 90 % intervals against its own margin interval (green: ±Δ_low, light:
    ±Δ_high) and the one fixed ruler (orange), coloured by the decision against its own Δ."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8), constrained_layout=True)
    t = np.array([r["tokens_per_run"] for r in data], dtype=float)
    lo = np.array([r["equivalence_margin_ci90"][0] for r in data])
    hi = np.array([r["equivalence_margin_ci90"][1] for r in data])
    fixed = data[0]["fixed_margin"]
    for ax, key, what in (
        (axes[0], "gap", "gap coupled − frozen"),
        (axes[1], "gate_ablation", "cost of zeroing the gates"),
    ):
        ax.fill_between(t, -hi, hi, color="tab:green", alpha=0.08, label="±Δ_high (pilot)")
        ax.fill_between(t, -lo, lo, color="tab:green", alpha=0.18, label="±Δ_low (pilot)")
        ax.axhline(fixed, color="tab:orange", lw=0.8, ls="--", label=f"fixed ±{fixed:.4f}")
        ax.axhline(-fixed, color="tab:orange", lw=0.8, ls="--")
        for x, r in zip(t, data):
            a, b = r[f"{key}_ci90"]
            ax.plot([x, x], [a, b], "-", color=DECISION_COLOURS[r[f"{key}_decision"]], lw=3)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xscale("log")
        ax.set_xticks(t, [f"{x / 1000:.0f}k" for x in t])
        ax.minorticks_off()
        ax.set_xlabel("training tokens per run")
        ax.set_ylabel(f"{what}, 90 % CI (nats/char)")
        ax.set_title(
            "own Δ: "
            + ", ".join(f"{int(x / 1000)}k {r[f'{key}_decision']}" for x, r in zip(t, data))
            + "\nfixed: "
            + ", ".join(f"{int(x / 1000)}k {r[f'{key}_decision_fixed']}" for x, r in zip(t, data)),
            fontsize=7,
        )
        ax.legend(fontsize=6)
    fig.suptitle(
        "E1 token sweep (blue: equivalent, grey: inconclusive, red: not equivalent); verdicts: "
        + ", ".join(f"{int(x / 1000)}k {r['verdict']}" for x, r in zip(t, data)),
        fontsize=8,
    )
    return fig, {"tokens": [r["tokens"] for r in data], "seed": seed}


CONTROL = e1.control_params(e1.SHORT)


def control_points(seed: int) -> list[dict]:
    return [{"seed": seed, "params": json.loads(json.dumps(jsonable(CONTROL)))}]


@figure("E1", "e1_shared_structure", compute=e1_verdict, points=control_points)
def e1_shared_structure(data: list, seed: int):
    return draw_verdict(data[0], seed, CONTROL)
