"""The claim report: statuses from recorded verdicts, the JSON schema, partial reports, publishing."""

import json
import subprocess

import jsonschema
import pytest

from fastslow.readme import BEGIN, END, claims_markdown, publishable, update_readme
from fastslow.readme_e1 import E1_SECTIONS, e1_sections
from fastslow.verify.provenance import REPO_ROOT, provenance
from fastslow.verify.registry import CLAIMS, IDS
from fastslow.verify.report import (
    SCHEMA_PATH,
    ClaimLedger,
    build_report,
    render_markdown,
    write_report,
)
from fastslow.verify.verdict import Diagnostic, Verdict

PROV = {"git": {"commit": "abc123", "dirty": False}, "blas": {"summary": "openblas (Haswell)"}}


def verdict(outcome="holds", control=None, cid="A1", broken="slow_path_sees_only_completed_blocks"):
    """A hand-made A1 verdict with the given outcome (hypotheses/conclusion consistent with it)."""
    unit = CLAIMS[cid]
    hyps = {k: Diagnostic(True, 0, "r") for k in unit.hypotheses}
    parts = {k: Diagnostic(True, 0.0, "r") for k in unit.conclusion}
    error = None
    if outcome == "outside-hypotheses":
        hyps[broken] = Diagnostic(False, 96, "r")
        first = next(iter(parts))
        parts[first] = Diagnostic(False, 1.7, "r")
    elif outcome == "fails":
        first = next(iter(parts))
        parts[first] = Diagnostic(False, 1.7, "r")
    elif outcome == "error":
        parts, error = {}, {"type": "LinAlgError", "message": "Singular matrix"}
    limits = {"integrators_agree": Diagnostic(outcome != "undecided", 2e-3, "≤ 1e-3")}
    return Verdict(
        cid,
        outcome,
        hyps,
        parts,
        {"x": 1.0, "inf": float("inf"), "max_future_dependence": 0.0},
        {"T": 4},
        3,
        control,
        {"abs": 0.0},
        error=error,
        limits=limits,
        sources={k: "implementation" for k in hyps},
    )


def control_verdict(outcome="outside-hypotheses", name="full_slow_mask", cid="A1"):
    breaks = CLAIMS[cid].control(name).breaks
    return verdict(outcome, control=name, cid=cid, broken=breaks)


def full_a1(led, *, main="holds", controls=("outside-hypotheses", "outside-hypotheses"), cid="A1"):
    led.outcome(cid, "t::main", "passed", 0.1)
    led.record(cid, verdict(main, cid=cid), negative=False)
    names = [c.name for c in CLAIMS[cid].controls]
    for name, outcome in zip(names, list(controls) + ["outside-hypotheses"] * len(names)):
        led.record(cid, control_verdict(outcome, name, cid), negative=True)


def statuses(ledger, **kw):
    rep = build_report(ledger, PROV, **kw)
    return {c["id"]: (c["status"], c["negative_control"]) for c in rep["claims"]}, rep


def validate(rep):
    schema = json.loads((REPO_ROOT / SCHEMA_PATH).read_text())
    jsonschema.Draft202012Validator(schema).validate(json.loads(json.dumps(rep)))


def test_every_claim_appears_untested_ones_pending_and_unimplemented_ones_say_so(pending_e1):
    st, rep = statuses(ClaimLedger())
    assert list(st) == list(IDS)
    assert all(v == ("pending", "pending") for v in st.values())
    e1 = next(c for c in rep["claims"] if c["id"] == "E1")
    assert e1["reasons"] == ["not implemented yet"]


def test_verified_needs_a_holding_main_verdict_and_every_declared_control_failing_as_predicted():
    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    led.record("A1", verdict("holds"), negative=False)
    assert statuses(led)[0]["A1"] == ("pending", "pending")  # no control yet
    led.record("A1", control_verdict(name="full_slow_mask"), negative=True)
    assert statuses(led)[0]["A1"] == ("pending", "pending")  # one declared control missing
    led.record("A1", control_verdict(name="bidirectional_fast_mask"), negative=True)
    assert statuses(led)[0]["A1"] == ("verified", "fails-as-predicted")


def test_a_control_not_recognised_by_its_hypothesis_diagnostics_did_not_fail():
    led = ClaimLedger()
    full_a1(led, controls=("fails", "outside-hypotheses"))  # conclusion fails, hypotheses hold
    st, rep = statuses(led)
    assert st["A1"] == ("failed", "did-not-fail")
    assert any("did not fail as predicted" in r for r in rep["claims"][0]["reasons"])


def test_a_control_whose_conclusion_holds_means_the_check_has_no_teeth():
    led = ClaimLedger()
    v = control_verdict()
    v.conclusion = {k: Diagnostic(True, 0.0, "r") for k in v.conclusion}
    led.outcome("A1", "t::main", "passed", 0.1)
    led.record("A1", verdict(), negative=False)
    led.record("A1", v, negative=True)
    led.record("A1", control_verdict(name="bidirectional_fast_mask"), negative=True)
    assert statuses(led)[0]["A1"] == ("failed", "did-not-fail")


@pytest.mark.parametrize("outcome", ["fails", "outside-hypotheses", "undecided"])
def test_a_main_instance_that_does_not_hold_fails_the_claim_with_its_reason(outcome):
    led = ClaimLedger()
    full_a1(led, main=outcome)
    st, rep = statuses(led)
    assert st["A1"][0] == "failed"
    assert rep["claims"][0]["reasons"][0].startswith("main instance (seed 3): ")


def test_an_undecidable_instance_is_status_error_with_the_exception():
    led = ClaimLedger()
    full_a1(led, main="error")
    st, rep = statuses(led)
    assert st["A1"][0] == "error"
    assert "LinAlgError: Singular matrix" in rep["claims"][0]["reasons"][0]
    assert "LinAlgError: Singular matrix" in render_markdown(rep)


def test_a_failed_test_fails_the_claim_even_if_its_verdicts_hold():
    led = ClaimLedger()
    full_a1(led)
    led.outcome("A1", "t::other", "failed", 0.1)
    assert statuses(led)[0]["A1"][0] == "failed"


def test_report_validates_against_its_schema_and_is_strict_json(tmp_path):
    led = ClaimLedger()
    full_a1(led)
    rep = build_report(led, provenance())
    validate(rep)
    assert rep["$schema"] == SCHEMA_PATH and rep["schema_version"] == 3
    js, md = write_report(rep, tmp_path)
    loaded = json.loads(js.read_text())
    validate(loaded)
    a1 = loaded["claims"][0]
    assert a1["figures"]["inf"] == "inf"
    assert a1["key_figures"]["max_future_dependence"] == 0.0
    assert "| [A1](#a1) |" in md.read_text()


def test_schema_rejects_a_report_that_breaks_the_contract():
    led = ClaimLedger()
    full_a1(led)
    rep = json.loads(json.dumps(build_report(led, provenance())))
    rep["claims"][0]["status"] = "probably fine"
    with pytest.raises(jsonschema.ValidationError):
        validate(rep)


def test_markdown_opens_with_a_one_screen_summary_and_keeps_raw_numbers_out_of_it():
    led = ClaimLedger()
    full_a1(led)
    md = render_markdown(build_report(led, PROV))
    summary = md.split("## What each claim says")[0]
    assert len(summary.splitlines()) <= 30
    assert "```json" not in md.split("## Provenance")[0]


def test_provenance_records_the_blas_kernel_and_openblas_environment():
    blas = provenance()["blas"]
    assert blas["libraries"] and all(b["architecture"] for b in blas["libraries"])
    assert all(k.startswith("OPENBLAS_") for k in blas["openblas_env"])


# ----------------------------------------------------------------------------- publishing


def _published(tmp_path, report):
    js, _ = write_report(report, tmp_path / "rep")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold table\n{END}\nrest\n")
    return js, readme


def _complete_report():
    led = ClaimLedger()
    for cid in IDS:
        if CLAIMS[cid].implemented:
            full_a1(led, cid=cid)
    prov = provenance()  # schema-valid (readme checks it), from a clean tree
    prov.update(git=PROV["git"], blas={**prov["blas"], **PROV["blas"]})
    return build_report(led, prov)


def test_readme_table_is_generated_from_a_complete_report_and_copies_it(tmp_path):
    js, readme = _published(tmp_path, _complete_report())
    update_readme(readme, js, {"A1": ["a1_dependence"]})
    text = readme.read_text()
    assert "old table" not in text and text.startswith("intro") and text.endswith("rest\n")
    assert "| [A1](docs/report/REPORT.md#a1) |" in text
    assert "**verified (control: fails-as-predicted)**" in text
    assert "max_future_dependence = 0" in text
    assert (tmp_path / "docs/report/report.json").read_text() == js.read_text()
    assert (tmp_path / "docs/claims.md").read_text() == claims_markdown()


@pytest.mark.parametrize(
    "spoil, expected",
    [
        (
            lambda r: r.update(complete=False, incomplete_reasons=["3 verify test(s) deselected"]),
            "partial",
        ),
        (lambda r: r["provenance"]["git"].update(dirty=True), "uncommitted"),
        (
            lambda r: (
                next(c for c in r["claims"] if c["id"] == "D4").update(status="pending"),
                r["summary"].update(
                    verified=r["summary"]["verified"] - 1, pending=r["summary"]["pending"] + 1
                ),
            ),
            "pending",
        ),
    ],
)
def test_readme_refuses_a_partial_dirty_or_pending_report_and_writes_nothing(
    tmp_path, spoil, expected
):
    rep = _complete_report()
    spoil(rep)
    assert any(expected in w for w in publishable(rep))
    js, readme = _published(tmp_path, rep)
    before = readme.read_text()
    with pytest.raises(ValueError, match="refusing"):
        update_readme(readme, js, {})
    assert readme.read_text() == before
    assert not (tmp_path / "docs").exists()


def test_committed_claims_md_is_generated_from_the_units():
    assert (REPO_ROOT / "docs/claims.md").read_text() == claims_markdown()


def test_every_e1_number_in_the_readme_comes_from_the_committed_report():
    """The README's E1 sections are what ``fastslow readme`` writes from the E1 entry of
    ``docs/report/report.json`` (none typed by hand), and the README has all of them."""
    text = (REPO_ROOT / "README.md").read_text()
    report = json.loads((REPO_ROOT / "docs/report/report.json").read_text())
    entry = next(c for c in report["claims"] if c["id"] == "E1")
    for name, body in e1_sections(entry).items():
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        assert text.count(begin) == text.count(end) == 1, name
        assert text.split(begin)[1].split(end)[0] == "\n" + body + "\n", name
    assert set(e1_sections(entry)) == set(E1_SECTIONS)
    assert "pre-regist" not in "".join(e1_sections(entry).values()).lower()


def test_pytest_verify_with_a_k_selection_writes_a_report_flagged_partial(tmp_path):
    out = tmp_path / "rep"
    res = subprocess.run(
        [
            __import__("sys").executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(REPO_ROOT / "verify"),
            "-k",
            "test_blockcausal_model_is_autoregressive",
            "--report-dir",
            str(out),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rep = json.loads((out / "report.json").read_text())
    assert rep["complete"] is False and "deselected" in rep["incomplete_reasons"][0]
    assert "PARTIAL" in (out / "REPORT.md").read_text()
    assert publishable(rep)


def test_an_undecided_main_instance_is_never_verified_and_is_counted_as_undecided(tmp_path):
    """The claim's status stays one of the four; the verdict stays ``undecided`` (not ``fails``),
    counted per outcome in all and per claim, with the limit that decided it in REPORT.md."""
    led = ClaimLedger()
    full_a1(led, main="undecided")
    led.record("A1", verdict("holds"), negative=False)
    rep = build_report(led, provenance())
    validate(rep)
    a1 = rep["claims"][0]
    assert a1["status"] == "failed"
    assert "cannot decide this instance: integrators_agree" in a1["reasons"][0]
    assert a1["outcomes"] == {
        "holds": 1,
        "fails": 0,
        "outside-hypotheses": 0,
        "undecided": 1,
        "error": 0,
    }
    assert rep["outcomes"]["undecided"] == 1 and rep["outcomes"]["fails"] == 0
    assert a1["verdicts"][0]["limits"]["integrators_agree"]["holds"] is False
    md = render_markdown(rep)
    assert "**undecided**" in md and "| limits | integrators_agree |" in md
    assert "1 undecided" in md.split("## What each claim says")[0]


def test_each_hypothesis_carries_its_source_and_the_schema_checks_it():
    led = ClaimLedger()
    full_a1(led)
    rep = json.loads(json.dumps(build_report(led, provenance())))
    hyps = rep["claims"][0]["verdicts"][0]["hypotheses"]
    assert hyps and all(h["source"] == "implementation" for h in hyps.values())
    validate(rep)
    next(iter(hyps.values()))["source"] = "hearsay"
    with pytest.raises(jsonschema.ValidationError):
        validate(rep)
    rep = json.loads(json.dumps(build_report(led, provenance())))
    rep["outcomes"]["maybe"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate(rep)


def test_a_verdict_round_trips_through_json_with_its_limits_and_sources():
    v = verdict("undecided")
    back = Verdict.from_json(json.loads(json.dumps(v.to_json())))
    assert back.outcome == "undecided" and back.unresolved == ["integrators_agree"]
    assert back.sources == v.sources and back.limits == v.limits


def test_e1_sections_write_their_numbers_from_the_e1_entry():
    """The README's E1 sentences carry the verdict's own numbers (a short check, its runs cached
    or trained in seconds); an entry from before the current design gives one sentence saying so."""
    from fastslow.verify.checks.e1 import SHORT, sweep_row
    from fastslow.verify.registry import run_check

    v = json.loads(json.dumps(run_check("E1", {**SHORT, "tokens": 2000}, seed=0).to_json()))
    entry = {
        "verdicts": [v],
        "figures": {"token_sweep": [sweep_row(v)], "seed_sweep": {"params": {"tokens": 2000}}},
        "provenance": {"git": {"commit": "0123456789abcdef"}},
    }
    s = e1_sections(entry)
    f = v["figures"]
    lo, hi = f["equivalence_margin_ci90"]
    assert f"Δ = {f['equivalence_margin']:.4f} nats/char, 90 % CI [{lo:.4f}, {hi:.4f}]" in s["e1"]
    assert f"90 % CI [{f['gap_ci90'][0]:+.4f}, {f['gap_ci90'][1]:+.4f}]" in s["e1"]
    assert f"**{f['gate_ablation_decision']}**" in s["e1"] and "commit 0123456" in s["e1"]
    assert "prespecified after an exploratory run" in s["e1"] and "9afc6ef" in s["e1"]
    assert f"{f['cross_block_bag_gain_excess_bits']:.3f} bits/char" in s["e1"]
    assert f"fixed {f['seeds']} test seeds" in s["e1-gallery"]
    assert (
        f"{len(f['pilot_seeds'])} pilot seeds" in s["e1-scope"] and "2,000 tokens" in s["e1-scope"]
    )
    old = {
        "verdicts": [{"params": {"tokens": 500_000}, "figures": {"gap_paired_ci90": [0.0, 1.0]}}],
        "provenance": {"git": {"commit": "a7527c813d5b"}},
    }
    assert set(e1_sections(old).values()) == {
        "_The published report (commit a7527c8) has no E1 verdict of the current design; "
        "`pytest verify --thorough` and then `fastslow readme` write its numbers here._"
    }
