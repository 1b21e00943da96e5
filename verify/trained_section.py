"""The report's section on trained networks: the predictions of :mod:`verify.trained_theory` for
E1's three arms, seeds and token counts, and D9 with its shuffled-block control.

:func:`compute` returns the section (every verdict as JSON, with provenance) for a profile:

* ``short`` — E1's short profile (:data:`verify.checks.e1.SHORT`: d = 32, T = 64, L = 2) at the
  short sweep's token counts 2000, 6000, 20000, run seeds 0, 1, 2 (D5t, D6t, D7t) and 0…4 (D9t);
  about a minute when the runs are cached (every run trains in seconds otherwise);
* ``paper`` — the paper-scale runs (d = 64, T = 128, L = 4) at 50k, 150k and 500k tokens, the
  same seeds: read from the run cache that ``fastslow check E1 --thorough``-style runs fill; the
  shuffled-block control at this scale is trained when ``train=True`` (20 runs per count).

The section is written to ``docs/report/trained_<profile>.json`` by ``fastslow trained-report``
(:func:`write`), and the figure (``figures/trained.py``) and ``REPORT.md``'s section are drawn from
that file, never trained.

**D9t** (rule in :mod:`verify.trained_theory`): a :class:`~verify.claim.Claim` on a corpus, token
count, profile and seeds; its instance is the coupled and frozen runs of each seed on that corpus.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .claim import Claim, Conclusion
from .equivalence import paired_tost
from .outputs import write_output
from .params import Param
from .provenance import provenance
from .trained import TrainedStack, e1_run_params, e1_run_spec
from .trained_theory import (
    STRUCTURE_SDS,
    TrainedD5,
    TrainedD6,
    TrainedD7,
    corpus_named,
    structure,
)
from .verdict import Diagnostic, outcome_counts

PROFILES = {
    "short": {"tokens": (2_000, 6_000, 20_000), "seeds": (0, 1, 2), "d9_seeds": (0, 1, 2, 3, 4)},
    "paper": {
        "tokens": (50_000, 150_000, 500_000),
        "seeds": (0, 1, 2),
        "d9_seeds": (0, 1, 2, 3, 4),
    },
}
ARMS = ("coupled", "frozen", "dense")
UNITS = (TrainedD5(), TrainedD6(), TrainedD7())
REPORT_DIR = Path(__file__).resolve().parent.parent / "docs" / "report"
TRAIN = {"on": False}
"""Whether :func:`runs` trains a missing run (``False``: bad input naming the run)."""


def run_spec(corpus_name: str, kind: str, seed: int, tokens: int, profile: str):
    """``(RunSpec, Corpus)``: E1's run of ``kind`` and ``seed`` in ``profile`` (its sizes,
    schedule and learning rate) on the named corpus."""
    spec, base = e1_run_spec(kind, seed, tokens, profile, TRAIN["on"], "pydoc", None)
    if corpus_name == "pydoc":
        return spec, base
    label = f"D9 control {corpus_name} {kind} seed {seed} {tokens} tokens"
    return dataclasses.replace(spec, meta={"label": label}), corpus_named(corpus_name, spec.cfg.P)


def run_result(corpus_name: str, kind: str, seed: int, tokens: int, profile: str) -> dict:
    """The run's result (:func:`numerics.lm.train.run`), from the cache or, with ``TRAIN``,
    trained; a missing run is a ``ValueError`` saying how to make it."""
    from fastslow.numerics.lm import train as lm_train  # deferred: the language models

    spec, corpus = run_spec(corpus_name, kind, seed, tokens, profile)
    if not TRAIN["on"] and not lm_train.cached(spec, corpus):
        raise ValueError(
            f"run {corpus_name} {kind} seed {seed} at {tokens} tokens ({profile} profile) is not "
            f"in the run cache {lm_train.default_cache_dir()}; train it with "
            f"fastslow trained-report --profile {profile} --train"
        )
    return lm_train.run(spec, corpus, train_missing=TRAIN["on"])


def missing_runs(prof: dict, profile: str) -> list[str]:
    """The runs of a section (``prof``: its token counts and seeds) missing from the run cache,
    named one per line; empty when every network and every D9 run is cached. A missing
    learning-rate selection is named as such (the runs it decides cannot be named without it)."""
    from fastslow.numerics.lm import train as lm_train  # deferred: the language models

    missing: list[str] = []
    for tokens in prof["tokens"]:
        try:
            for seed in prof["seeds"]:
                for arm in ARMS:
                    spec, corpus = e1_run_spec(arm, seed, tokens, profile, False, "pydoc", None)
                    if not lm_train.cached(spec, corpus):
                        missing.append(f"E1 {arm} seed {seed} at {tokens} tokens")
            for corpus_name, key in (("pydoc", "d9_seeds"), ("shuffled", "control_seeds")):
                for seed in prof[key]:
                    for kind in ("coupled", "frozen"):
                        spec, corpus = run_spec(corpus_name, kind, seed, tokens, profile)
                        if not lm_train.cached(spec, corpus):
                            missing.append(f"{corpus_name} {kind} seed {seed} at {tokens} tokens")
        except ValueError:  # the learning-rate selection at this count is not cached
            missing.append(f"the learning-rate selection for {tokens} tokens")
    return list(dict.fromkeys(missing))


class TrainedD9(Claim):
    id = "D9t"
    title = "D9: cross-block structure and the trained gates"
    abstract = statement = (
        "on a text without cross-block structure the trained gates stay closed: the paired cost "
        "of zeroing them is within Δ (the frozen runs' seed-to-seed SD) by TOST at α = 0.05"
    )
    params = {
        "corpus": Param("shuffled", "training text", choices=("pydoc", "shuffled")),
        "tokens": Param(20_000, "training tokens per run", low=1000, high=100_000_000),
        "profile": Param("short", "E1 profile", choices=("short", "paper")),
        "seeds": Param((0, 1, 2, 3, 4), "run seeds", low=0, high=10**9),
    }
    hypotheses = {"no_cross_block_structure": "|I_nb − I_sh| ≤ 4·SD of I_sh over permutations"}
    hypothesis_sources = {"no_cross_block_structure": "input"}
    conclusion = {"gates_closed": "paired TOST of the cost of zeroing the gates against Δ"}
    limits = {"tost_decides": "equivalent, or the 90 % interval outside (−Δ, Δ)"}

    def validate(self, p):
        if len(p["seeds"]) < 3:
            raise ValueError(f"seeds must give at least 3 runs, got {len(p['seeds'])}")

    def build(self, p, seed):
        P = e1_run_params(p["tokens"], p["profile"])["P"]
        corpus = corpus_named(p["corpus"], P)
        res = {
            k: [run_result(p["corpus"], k, s, p["tokens"], p["profile"]) for s in p["seeds"]]
            for k in ("coupled", "frozen")
        }
        return {"p": p, "seed": seed, "P": P, "corpus": corpus, "runs": res}

    def diagnose(self, inst):
        s = structure(inst["corpus"], inst["P"], inst["seed"])
        inst["structure"] = s
        excess, sd = s["mi_excess_bits"], s["mi_shuffled_sd"]
        return {
            "no_cross_block_structure": Diagnostic(
                abs(excess) <= STRUCTURE_SDS * sd,
                {"excess_bits": excess, "noise_sd_bits": sd},
                f"|I_neighbour − I_shuffled| ≤ {STRUCTURE_SDS:g}·SD(I_shuffled) bits",
            )
        }

    def conclude(self, inst):
        runs = inst["runs"]
        cost = np.array(
            [r["heldout_loss_gates_zeroed"] - r["heldout_loss"] for r in runs["coupled"]]
        )
        margin = float(np.std([r["heldout_loss"] for r in runs["frozen"]], ddof=1))
        t = paired_tost(cost, margin)
        outside = t["ci"][0] >= margin or t["ci"][1] <= -margin
        gates = [r["gates"] for r in runs["coupled"]]
        figures = {
            "cost_of_zeroing_gates": cost.tolist(),
            "margin_delta": margin,
            "cost_ci90": t["ci"],
            "tost_p": t["p"],
            "gates": gates,
            "mean_abs_gate": float(np.mean(np.abs(gates))),
            **{k: inst["structure"][k] for k in ("mi_excess_bits", "mi_excess_fraction")},
        }
        return Conclusion(
            {
                "gates_closed": Diagnostic(
                    t["equivalent"], t["ci"], f"90 % CI inside (±{margin:.3g})"
                )
            },
            figures,
            limits={"tost_decides": Diagnostic(t["equivalent"] or outside, t["ci"], "decided")},
            series=figures,
        )


def lean(verdict: dict) -> dict:
    """A verdict's JSON without its ``series`` (here the same numbers as its ``figures``)."""
    return {k: v for k, v in verdict.items() if k != "series"}


def network(arm: str, seed: int, tokens: int, profile: str) -> TrainedStack:
    return TrainedStack.from_e1(arm, seed, tokens, profile, train=TRAIN["on"])


def compute(
    profile: str = "short",
    train: bool = False,
    progress=None,
    tokens=None,
    seeds=None,
    d9_seeds=None,
    control_seeds=None,
) -> dict:
    """The section for ``profile`` (see the module docstring) as JSON: ``networks`` (one row per
    arm, seed and token count with the D5t, D6t, D7t verdicts), ``d9`` (one verdict per corpus and
    token count) and the provenance. ``tokens``, ``seeds``, ``d9_seeds`` (E1's text) and
    ``control_seeds`` (the shuffled-block control; default: ``d9_seeds``) replace the profile's
    (e.g. only the token counts and seeds whose runs are cached)."""
    prof = dict(PROFILES[profile])
    prof["control_seeds"] = prof["d9_seeds"]
    given = {"tokens": tokens, "seeds": seeds, "d9_seeds": d9_seeds, "control_seeds": control_seeds}
    for key, value in given.items():
        if value:
            prof[key] = tuple(int(x) for x in value)
    if d9_seeds and not control_seeds:
        prof["control_seeds"] = prof["d9_seeds"]
    for key in ("d9_seeds", "control_seeds"):
        if len(prof[key]) < 3:
            raise ValueError(f"{key} must give at least 3 seeds, got {list(prof[key])}")
    if not train:  # a missing run is bad input before any work, never an error verdict
        missing = missing_runs(prof, profile)
        if missing:
            from fastslow.numerics.lm import train as lm_train  # deferred: the language models

            raise ValueError(
                f"{len(missing)} run(s) of the {profile} section are not in the run cache "
                f"{lm_train.default_cache_dir()} (first: {missing[0]}); train them with "
                f"fastslow trained-report --profile {profile} --train"
            )
    TRAIN["on"] = train
    try:
        rows = []
        for tokens in prof["tokens"]:
            for seed in prof["seeds"]:
                for arm in ARMS:
                    net = network(arm, seed, tokens, profile)
                    verdicts = {u.id: lean(u.check(system=net).to_json()) for u in UNITS}
                    rows.append(
                        {"arm": arm, "seed": seed, "tokens": tokens, "gates": net.gates, **verdicts}
                    )
                    if progress:
                        progress(f"{arm} seed {seed} {tokens} tokens")
        d9 = []
        for corpus in ("pydoc", "shuffled"):
            for tokens in prof["tokens"]:
                v = TrainedD9().check(
                    {
                        "corpus": corpus,
                        "tokens": tokens,
                        "profile": profile,
                        "seeds": tuple(prof["d9_seeds" if corpus == "pydoc" else "control_seeds"]),
                    }
                )
                d9.append({"corpus": corpus, "tokens": tokens, **lean(v.to_json())})
                if progress:
                    progress(f"D9 {corpus} {tokens} tokens")
    finally:
        TRAIN["on"] = False
    return {
        "profile": profile,
        **{k: list(v) for k, v in prof.items()},
        "networks": rows,
        "d9": d9,
        "provenance": provenance(params={"profile": profile}),
    }


def path_for(profile: str, folder: Path | None = None) -> Path:
    return (folder or REPORT_DIR) / f"trained_{profile}.json"


def write(section: dict, folder: Path | None = None) -> Path:
    """Write the section to ``docs/report/trained_<profile>.json`` (:mod:`verify.outputs`)."""
    path = path_for(section["profile"], folder)
    write_output(path, json.dumps(section, indent=1, sort_keys=True) + "\n", "trained section")
    return path


def load(profile: str = "short", folder: Path | None = None) -> dict:
    """The committed section of ``profile``; ``ValueError`` naming the command that makes it."""
    path = path_for(profile, folder)
    if not path.is_file():
        raise ValueError(
            f"no trained-network section {path}; make it with fastslow trained-report "
            f"--profile {profile}"
        )
    return json.loads(path.read_text())


def _outcomes(rows: list, unit: str) -> str:
    counts = outcome_counts([r[unit]["verdict"] for r in rows])
    return ", ".join(f"{n} {k}" for k, n in counts.items() if n)


def _reasons(rows: list, unit: str) -> str:
    seen: dict = {}
    for r in rows:
        v = r[unit]
        why = [k for k, d in v["hypotheses"].items() if not d["holds"]]
        why += [k for k, d in (v.get("conclusion") or {}).items() if not d["holds"]]
        seen.setdefault(", ".join(why) or "—", 0)
        seen[", ".join(why) or "—"] += 1
    return "; ".join(f"{k} ({n})" for k, n in seen.items())


def _range(values) -> str:
    values = [float(x) for x in values if x is not None]
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:.3g}" if lo == hi else f"{lo:.3g} – {hi:.3g}"


def markdown(section: dict) -> list[str]:
    """The section of ``REPORT.md``: per prediction and arm, the outcomes over seeds and token
    counts and the measured numbers; D9 per corpus and token count."""
    rows = section["networks"]
    lines = [
        "",
        f"## The theory on E1's trained networks ({section['profile']} profile)",
        "",
        f"Arms coupled, frozen, dense; run seeds {section['seeds']}; tokens {section['tokens']}. "
        "Rules written before the numbers (`verify/trained_theory.py`); regenerate with "
        f"`fastslow trained-report --profile {section['profile']}`; figure `e1_trained_theory`.",
        "",
        "| prediction | arm | outcomes | not holding (count) | measured |",
        "|---|---|---|---|---|",
    ]
    for unit in ("D7t", "D5t", "D6t"):
        for arm in ARMS:
            sel = [r for r in rows if r["arm"] == arm]
            f = [r[unit].get("figures") or {} for r in sel]
            if unit == "D7t":
                ratio = [x for g in f for x in g.get("gate_over_bound_upper", [])]
                m = [x for g in f for x in g.get("m_upper", [])]
                meas = f"max_l \\|g_l\\|·G⁻/m⁺: {_range(ratio)}; m⁺: {_range(m)}"
            elif unit == "D5t":
                meas = f"L* {_range([g.get('L_star') for g in f])} vs L = {f[0].get('L')}"
            else:
                meas = (
                    f"decaying share {_range([g.get('decaying_share_of_response') for g in f])}; "
                    f"Q,K,Qs,Ks share of ‖δθ‖² "
                    f"{_range([g.get('invisible_share_of_weight_change') for g in f])}; "
                    f"persistent effect {_range([g.get('persistent_effect_rel') for g in f])}"
                )
            lines.append(
                f"| {unit} | {arm} | {_outcomes(sel, unit)} | {_reasons(sel, unit)} | {meas} |"
            )
    lines += [
        "",
        "| D9t corpus | tokens | outcome | structure (bits) | mean \\|g\\| | cost of zeroing, 90 % CI | Δ |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in section["d9"]:
        fig = r.get("figures") or {}
        ci = fig.get("cost_ci90")
        lines.append(
            f"| {r['corpus']} | {r['tokens']} | {r['verdict']} | "
            f"{_range([fig.get('mi_excess_bits')])} | {_range([fig.get('mean_abs_gate')])} | "
            f"{'—' if not ci else f'[{ci[0]:+.4f}, {ci[1]:+.4f}]'} | "
            f"{_range([fig.get('margin_delta')])} |"
        )
    return lines + [""]
