"""The claim report: statuses, negative-control verdicts and the JSON contract of SPEC §3."""

import json

from verify.checks import CheckResult
from verify.registry import CLAIMS
from verify.report import ClaimLedger, build_report, write_report


def result(holds, hyp=True, cid="A1"):
    return CheckResult(id=cid, holds=holds, hypotheses_hold=hyp, figures={"x": 1.0, "inf": float("inf")},
                       params={"T": 4}, seed=3, tolerance={"abs": 0.0})


def statuses(ledger):
    rep = build_report(ledger, {"git": {"commit": "abc", "dirty": False}})
    return {c["id"]: (c["status"], c["negative_control"]) for c in rep["claims"]}, rep


def test_every_claim_appears_and_untested_claims_are_pending():
    st, rep = statuses(ClaimLedger())
    assert list(st) == list(CLAIMS)
    assert all(v == ("pending", "pending") for v in st.values())
    required = {"id", "statement", "status", "negative_control", "figures", "tolerance", "seconds",
                "provenance"}
    assert all(required <= set(c) for c in rep["claims"])


def test_verified_needs_a_passing_main_check_and_a_failing_negative_control():
    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    led.record("A1", result(True), negative=False)
    assert statuses(led)[0]["A1"] == ("pending", "pending")  # no negative control yet
    led.record("A1", result(False, hyp=False), negative=True)
    assert statuses(led)[0]["A1"] == ("verified", "fails-as-predicted")


def test_a_negative_control_that_holds_means_the_check_has_no_teeth():
    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    led.record("A1", result(True), negative=False)
    led.record("A1", result(True, hyp=False), negative=True)
    assert statuses(led)[0]["A1"] == ("failed", "did-not-fail")


def test_a_failed_test_fails_the_claim_even_if_its_checks_hold():
    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    led.outcome("A1", "t::other", "failed", 0.1)
    led.record("A1", result(True), negative=False)
    led.record("A1", result(False, hyp=False), negative=True)
    assert statuses(led)[0]["A1"][0] == "failed"


def test_report_files_are_strict_json_and_markdown(tmp_path):
    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    led.record("A1", result(True), negative=False)
    rep = build_report(led, {"git": {"commit": "abc", "dirty": False}, "packages": {"numpy": "2"}})
    js, md = write_report(rep, tmp_path)
    loaded = json.loads(js.read_text())
    assert loaded["claims"][0]["figures"]["inf"] == "inf"
    assert "| [A1](#a1) |" in md.read_text()


def test_readme_table_is_generated_from_the_report_and_copies_it(tmp_path):
    from verify.readme import BEGIN, END, update_readme

    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    led.record("A1", result(True), negative=False)
    led.record("A1", result(False, hyp=False), negative=True)
    rep = build_report(led, {"git": {"commit": "abc123", "dirty": False}})
    js, _ = write_report(rep, tmp_path / "rep")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold table\n{END}\nrest\n")
    update_readme(readme, js)
    text = readme.read_text()
    assert "old table" not in text and text.startswith("intro") and text.endswith("rest\n")
    assert "| [A1](docs/report/REPORT.md#a1) |" in text and "**verified (control: fails-as-predicted)**" in text
    assert "| [D5](docs/report/REPORT.md#d5) |" in text and "**pending**" in text
    assert (tmp_path / "docs/report/report.json").read_text() == js.read_text()


def test_several_main_instances_are_listed_not_merged():
    led = ClaimLedger()
    led.outcome("A1", "t::main", "passed", 0.1)
    first, second = result(True), result(True)
    second.figures = {"x": 2.0}
    led.record("A1", first, negative=False)
    led.record("A1", second, negative=False)
    a1 = build_report(led, {"git": {}})["claims"][0]
    assert a1["figures"]["x"] == 1.0
    assert a1["figures"]["other_instances"][0]["figures"] == {"x": 2.0}
