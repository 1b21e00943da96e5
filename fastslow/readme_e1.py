"""The README's E1 sentences, written from the report so that no E1 number is typed by hand.

``fastslow readme`` fills three marked sections of README.md from the E1 entry of the published
report (:func:`e1_sections`): ``e1`` (the finding on real text, the design, the token sweep and
what D9 says of the corpus), ``e1-gallery`` (the two figure captions) and ``e1-scope`` (what
``fastslow check E1`` runs). Every number comes from the main verdict's figures, its parameters,
the ``token_sweep`` rows or the entry's provenance.
"""

from __future__ import annotations

OUTCOME_WORDS = {
    "holds": "holds",
    "fails": "is false",
    "undecided": "is undecided",
    "outside-hypotheses": "is outside its hypotheses",
    "error": "could not be decided",
}
ENDPOINT_WORDS = {"gap": "the gap coupled − frozen", "gate_ablation": "zeroing the trained gates"}
EXPLORATORY = (
    "prespecified after an exploratory run (the 500k outcome on seeds 0–4 was committed in "
    "9afc6ef and eaabdab before the first design, 661b7bb, which reused those seeds)"
)


def _ci(ci) -> str:
    return f"[{ci[0]:+.4f}, {ci[1]:+.4f}]"


def _p(p: float) -> str:
    return f"{p:.2g}"


def _k(tokens: int) -> str:
    return f"{tokens // 1000}k"


def main_verdict(entry: dict) -> dict:
    """The verdict of the main instance with the most tokens (the paper-scale one in a thorough
    report, the short one otherwise)."""
    return max(entry["verdicts"], key=lambda v: v["params"]["tokens"])


def endpoint_sentence(f: dict, key: str) -> str:
    """One endpoint at the main token count, with the two extra seeds."""
    x = f["extra"]
    return (
        f"{ENDPOINT_WORDS[key]}: {f[key + '_mean']:+.4f}, 90 % CI {_ci(f[key + '_ci90'])}, "
        f"**{f[key + '_decision']}** (TOST p = {_p(f[key + '_tost_p'])} against Δ_low, "
        f"p = {_p(f[key + '_zero_p'])} against 0; it would be equivalent at any margin above "
        f"{f[key + '_margin_min']:.4f}; planned power {f['power_' + key]:.2f}); with two more "
        f"seeds ({x['seeds']}): CI {_ci(x[key + '_ci90'])}, {x[key + '_decision']}"
    )


def sweep_sentence(rows: list[dict], fixed: float) -> str:
    """The token sweep: each count's decisions against its own Δ and against the fixed ruler."""
    parts = []
    for r in rows:
        lo, hi = r["equivalence_margin_ci90"]
        parts.append(
            f"at {_k(r['tokens'])} ({r['seeds']} test seeds, Δ = {r['equivalence_margin']:.4f} "
            f"[{lo:.4f}, {hi:.4f}]) the gap {_ci(r['gap_ci90'])} is {r['gap_decision']} and the "
            f"gate cost {_ci(r['gate_ablation_ci90'])} {r['gate_ablation_decision']} (fixed "
            f"ruler: {r['gap_decision_fixed']}, {r['gate_ablation_decision_fixed']}); verdict "
            f"{r['verdict']}"
        )
    return (
        f"**Token sweep** (one learning rate, judged against each count's own Δ and against the "
        f"fixed margin ln 1.01 = {fixed:.4f} nats/char, a 1 % change of perplexity, stated before "
        "the runs): " + "; ".join(parts) + "."
    )


def e1_finding(entry: dict) -> str:
    """The E1 bullets of "Formalisation choices and gaps"."""
    v = main_verdict(entry)
    f, p = v["figures"], v["params"]
    lo, hi = f["equivalence_margin_ci90"]
    commit = (entry["provenance"].get("git") or {}).get("commit") or "unknown"
    rows = f.get("token_sweep") or entry["figures"].get("token_sweep") or []
    words = OUTCOME_WORDS.get(v["verdict"], v["verdict"])
    lines = [
        f'- *"At 500k tokens the coupling is neutral" {words} on this text (E1, profile '
        f"{f['profile']}), under a design {EXPLORATORY}.* Three character-level language models of "
        f"the suite's own stack (dense, coupled with the gate trained from 0, frozen with the gate "
        f"held at 0; T = {p['T']}, P = {p['P']}, d = {p['d']}, L = {p['L']}, {p['fast_mask']} fast "
        f"mask) on `pydoc_data` text, with held-out and validation text deduplicated against "
        f"training ({100 * f['heldout_near_duplicate_fraction_before']:.1f} % of held-out "
        "positions had a 64-character context seen in training before, "
        f"{100 * f['heldout_near_duplicate_fraction']:.1f} % after) and one learning rate for "
        f"every token count ({f['lr']:g}, chosen on the validation split after {p['lr_tokens']} "
        "tokens). Fixed before these runs (`fastslow check E1 --describe`): Δ is the frozen "
        f"model's seed-to-seed SD on {len(f['pilot_seeds'])} pilot seeds, with its 90 % χ² "
        "interval [Δ_low, Δ_high]; each endpoint is equivalent when its paired 90 % interval lies "
        "inside ±Δ_low (holds), not equivalent outside ±Δ_high (fails; the gate cost only above "
        "Δ_high), else undecided; the test seeds are the least number ≥ 5 with TOST power "
        f"≥ {p['power']} on both endpoints at a true mean of Δ_low·{p['power_effect']:g} with "
        f"each endpoint's SD at its upper limit. At {f['tokens_per_run']:,} tokens per run "
        f"({f['seeds']} test seeds): Δ = {f['equivalence_margin']:.4f} nats/char, 90 % CI "
        f"[{lo:.4f}, {hi:.4f}]; " + endpoint_sentence(f, "gap") + "; "
        f"{endpoint_sentence(f, 'gate_ablation')}. CPU cost {f['cost_ratio_cpu']:.2f}× dense "
        "(best-of, interleaved in one process). The held-out loss of every test run, recomputed "
        "from its weights on the declared held-out windows, matches to "
        f"{f['heldout_recomputed_error_max']:.1g} nats/char. No drift statistic is evidence: the "
        "joint χ² of the final gates that an earlier version reported assumed independent Adam "
        "random walks, a wrong null (it gave p ≈ 1 on short runs), and is no longer computed. "
        + (sweep_sentence(rows, f["fixed_margin"]) + " " if rows else "")
        + "Every pilot and test value (per-seed losses of each arm, gaps, gate costs) is in the "
        f'report. The default `pytest verify` runs a short E1 labelled `profile: "short"`; the '
        f"numbers here are from the report of commit {commit[:7]} (`fastslow readme` writes "
        "them).",
        "- *How D9 reads it.* D9 says the gate stays invisible only when neighbouring blocks "
        "share no structure. This text shares a little: the previous block's character histogram "
        f"gains {f['cross_block_bag_gain_excess_bits']:.3f} bits/char over a shuffled-block "
        f"baseline ({100 * f['cross_block_bag_gain_excess_fraction']:.1f} % of the "
        f"{f['cross_block_char_entropy_bits']:.2f}-bit character entropy). On a corpus built with "
        "strong cross-block structure (noisy block copies, the negative control) the gates open "
        "and coupled beats frozen clearly.",
    ]
    return "\n".join(lines)


def e1_gallery(entry: dict) -> str:
    """The gallery row of the two E1 figures, as its own table."""
    v = main_verdict(entry)
    f = v["figures"]
    rows = f.get("token_sweep") or entry["figures"].get("token_sweep") or []
    counts = ", ".join(_k(r["tokens"]) for r in rows)
    verdicts = ", ".join(f"{_k(r['tokens'])} {r['verdict']}" for r in rows)
    return "\n".join(
        [
            "| | |",
            "|---|---|",
            f"| ![E1](docs/figures/e1_neutrality.png) **E1** Real text, {f['tokens_per_run']:,} "
            f"tokens per run ({v['verdict']}): the paired gap coupled − frozen and the cost of "
            "zeroing the trained gates per test seed, with their 90 % intervals against ±Δ_low, "
            f"±Δ_high and the fixed ruler; the planned power that fixed {f['seeds']} test seeds; "
            "the pilot's per-seed losses that fix Δ. | ![E1 token sweep]"
            f"(docs/figures/e1_token_sweep.png) **E1 at {counts} tokens** The 90 % intervals of "
            "the gap and of the gate cost against each count's own margin interval and the one "
            f"fixed ruler; verdicts {verdicts}. |",
        ]
    )


def e1_scope(entry: dict) -> str:
    """What the default profile, one paper-scale check and the thorough sweep run."""
    v = main_verdict(entry)
    f, p = v["figures"], v["params"]
    rows = entry["figures"].get("token_sweep") or []
    short = (entry["figures"].get("seed_sweep") or {}).get("params", {}).get("tokens")
    runs = 2 * (len(f["pilot_seeds"]) + f["extra"]["seeds"]) + len(f["lr_validation_losses"])
    return (
        "`pytest verify` runs a short E1"
        + (f" ({short:,} tokens per run, a smaller model" if short else " (a smaller model")
        + ', labelled `profile: "short"` everywhere) and never presents it as the paper\'s '
        f"result. `fastslow check E1` runs the experiment at {p['tokens']:,} tokens: "
        f"{len(f['lr_validation_losses'])} learning-rate runs, {len(f['pilot_seeds'])} pilot "
        f"seeds and {f['extra']['seeds']} test seeds of two arms ({runs} runs in the report's "
        "check); `pytest verify --thorough` runs it at "
        + (", ".join(f"{r['tokens']:,}" for r in rows) or f"{p['tokens']:,}")
        + " tokens."
    )


E1_SECTIONS = ("e1", "e1-gallery", "e1-scope")
"""The marker names of the README sections written from the E1 entry."""


DESIGN_FIGURES = ("equivalence_margin_ci90", "gap_decision", "pilot_values", "test_values")
"""Figures every E1 verdict of the current design carries (an older report lacks them)."""


def e1_sections(entry: dict) -> dict[str, str]:
    """``{marker name: text}`` of every README section written from the E1 entry; for a report
    whose E1 verdict predates the current design, one sentence saying so in each (its numbers
    answer another test and are not shown)."""
    verdicts = entry.get("verdicts") or []
    if not verdicts or not all(k in main_verdict(entry)["figures"] for k in DESIGN_FIGURES):
        commit = ((entry.get("provenance") or {}).get("git") or {}).get("commit") or "unknown"
        text = (
            f"_The published report (commit {commit[:7]}) has no E1 verdict of the current "
            "design; `pytest verify --thorough` and then `fastslow readme` write its numbers "
            "here._"
        )
        return dict.fromkeys(E1_SECTIONS, text)
    return dict(zip(E1_SECTIONS, (e1_finding(entry), e1_gallery(entry), e1_scope(entry))))
