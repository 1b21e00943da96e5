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
