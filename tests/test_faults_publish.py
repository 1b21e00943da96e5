"""Fault injection for ``fastslow readme`` (issue #37, "a published table is the committed,
complete, consistent one"): a report of a lower profile than the published rows (the README's own
sequence, ``bash run.sh verify`` then ``fastslow readme``), a hand-edited report whose statuses
disagree with its verdicts, a claim text holding the table's markers, a README whose markers are
repeated. Each is refused with one line and exit 2, nothing written; the footer and REPORT.md's
summary line name every row that is not at the paper's scale.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from test_faults_cli import complete_report, one_line, published_tree, snapshot
from test_report import full_a1

from fastslow.cli import main
from fastslow.publishing import inconsistencies, lowered_rows
from fastslow.readme import BEGIN, END
from fastslow.verify.provenance import REPO_ROOT
from fastslow.verify.registry import IDS
from fastslow.verify.report import ClaimLedger, build_report, render_markdown


def report_of(profile: str, e1_scale: str, e1_main: str = "holds") -> dict:
    """A complete report from a run of ``profile`` whose E1 row is at ``e1_scale``."""
    base = complete_report()
    led = ClaimLedger()
    for cid in IDS:
        full_a1(led, cid=cid, main=e1_main if cid == "E1" else "holds")
    led.figure("E1", "profile", e1_scale)
    prov = copy.deepcopy(base["provenance"])
    prov["profile"] = profile
    return json.loads(json.dumps(build_report(led, prov)))


def publish(tmp_path, report, published=None, *extra) -> tuple[int, dict, Path]:
    js, readme, _ = published_tree(tmp_path, report)
    if published is not None:
        (tmp_path / "docs" / "report" / "report.json").write_text(json.dumps(published))
    before = snapshot(tmp_path)
    code = main(["readme", "--report", str(js), "--readme", str(readme), *extra])
    return code, before, readme


def test_a_default_run_does_not_replace_a_thorough_paper_scale_table(tmp_path, capsys):
    published = report_of("thorough", "paper", e1_main="fails")
    code, before, _ = publish(tmp_path, report_of("default", "short"), published)
    assert code == 2
    line = one_line(capsys.readouterr().err)
    assert "E1: short < paper" in line and "--allow-lower-profile" in line
    assert snapshot(tmp_path) == before


def test_allow_lower_profile_publishes_and_the_footer_names_the_short_row(tmp_path, capsys):
    published = report_of("thorough", "paper")
    code, _, readme = publish(
        tmp_path, report_of("default", "short"), published, "--allow-lower-profile"
    )
    assert code == 0
    footer = readme.read_text().split(END)[0].splitlines()[-1]
    assert "default-profile report" in footer
    assert "not at the paper's scale: E1 (profile short)" in footer


def test_a_thorough_run_replaces_a_default_one(tmp_path, capsys):
    code, _, readme = publish(
        tmp_path, report_of("thorough", "paper"), report_of("default", "short")
    )
    assert code == 0
    assert "paper's scale" not in readme.read_text()


def test_the_summary_line_of_report_md_names_the_short_row():
    head = render_markdown(report_of("default", "short")).split("| ID |")[0]
    assert "not at the paper's scale: E1 (profile short)" in head
    assert "paper's scale" not in render_markdown(report_of("thorough", "paper")).split("| ID")[0]


def test_a_hand_edited_verified_row_whose_verdicts_fail_is_refused(tmp_path, capsys):
    rep = report_of("thorough", "paper", e1_main="fails")
    e1 = next(c for c in rep["claims"] if c["id"] == "E1")
    assert e1["status"] == "failed"
    e1["status"] = "verified"
    rep["summary"].update(verified=rep["summary"]["verified"] + 1, failed=0)
    code, before, _ = publish(tmp_path, rep)
    assert code == 2
    assert (
        "E1 says verified (control: fails-as-predicted) but its verdicts and tests give failed"
        in (one_line(capsys.readouterr().err))
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda c: c["verdicts"][0].update(holds=False), "holds=False but the verdict is holds"),
        (lambda c: c["outcomes"].update(holds=3), "do not count its verdicts"),
        (
            lambda c: c["controls"][0].update(fails_as_predicted=False),
            "fails_as_predicted disagrees with its verdict",
        ),
        (
            lambda c: next(iter(c["verdicts"][0]["conclusion"].values())).update(holds=False),
            "the verdict says holds but its diagnostics do not",
        ),
    ],
    ids=["holds flag", "outcome counts", "control flag", "diagnostics"],
)
def test_a_row_that_disagrees_with_its_own_verdicts_is_refused(spoil, message, tmp_path, capsys):
    rep = report_of("thorough", "paper")
    spoil(next(c for c in rep["claims"] if c["id"] == "D4"))
    assert any(message in w for w in inconsistencies(rep))
    code, before, _ = publish(tmp_path, rep)
    assert code == 2 and message in one_line(capsys.readouterr().err)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("marker", [BEGIN, END])
def test_a_claim_text_holding_the_table_markers_is_refused(marker, tmp_path, capsys):
    rep = report_of("thorough", "paper")
    d7 = next(c for c in rep["claims"] if c["id"] == "D7")
    d7["statement"] += f" {marker} trailing"
    code, before, _ = publish(tmp_path, rep)
    assert code == 2
    assert f"the row of D7 contains the README marker {marker!r}" in one_line(
        capsys.readouterr().err
    )
    assert snapshot(tmp_path) == before


def test_a_readme_with_its_markers_repeated_is_refused(tmp_path, capsys):
    js, readme, _ = published_tree(tmp_path, report_of("thorough", "paper"))
    readme.write_text(f"{BEGIN}\nold\n{END}\nmiddle\n{END}\n")
    before = snapshot(tmp_path)
    assert main(["readme", "--report", str(js), "--readme", str(readme)]) == 2
    assert "found 1 and 2" in one_line(capsys.readouterr().err)
    assert snapshot(tmp_path) == before


def test_the_committed_report_is_consistent_and_not_lowered_by_itself():
    committed = json.loads((REPO_ROOT / "docs/report/report.json").read_text())
    assert inconsistencies(committed) == []
    assert lowered_rows(committed, REPO_ROOT / "docs/report/report.json") == []


def test_the_readme_sequence_after_a_default_run_keeps_the_thorough_e1_row(tmp_path, capsys):
    """The README's own sequence: the committed (thorough, paper-scale) publication, then a
    default-profile report (E1 short): readme leaves E1's row as the thorough run's, and says why
    in one line."""
    shutil.copy(REPO_ROOT / "README.md", tmp_path / "README.md")
    (tmp_path / "docs" / "report").mkdir(parents=True)
    committed = json.loads((REPO_ROOT / "docs/report/report.json").read_text())
    (tmp_path / "docs/report/report.json").write_text(json.dumps(committed))
    default = copy.deepcopy(committed)
    default["provenance"]["profile"] = "default"
    e1 = next(c for c in default["claims"] if c["id"] == "E1")
    e1["profile"] = e1["figures"]["profile"] = "short"
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "report.json").write_text(json.dumps(default))
    (rep / "REPORT.md").write_text(render_markdown(default))
    before = snapshot(tmp_path)
    code = main(
        ["readme", "--report", str(rep / "report.json"), "--readme", str(tmp_path / "README.md")]
    )
    assert code == 2
    assert "E1: short < paper" in one_line(capsys.readouterr().err)
    assert snapshot(tmp_path) == before
    row = next(
        ln for ln in (tmp_path / "README.md").read_text().splitlines() if ln.startswith("| [E1]")
    )
    assert row in (REPO_ROOT / "README.md").read_text()
