"""The claim report: ``report.json`` and ``REPORT.md`` (SPEC §3).

A :class:`ClaimLedger` collects, per claim, the check results recorded by tests (main instance and
negative control), extra measured numbers, and the outcome and duration of every test marked
``@pytest.mark.claim(ID)``. :func:`build_report` turns it into one entry per registered claim:

* ``status``: ``verified`` when every test of the claim passed, the main check holds, and the
  negative control failed as predicted; ``failed`` when a test failed or the main check does not
  hold; ``pending`` when no test of the claim ran or the negative control is missing.
* ``negative_control``: ``fails-as-predicted`` / ``did-not-fail`` / ``pending``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .claim import Verdict, jsonable
from .registry import CLAIMS


@dataclass
class _Entry:
    main: list = field(default_factory=list)
    negative: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    tests: dict = field(default_factory=dict)  # nodeid -> outcome
    seconds: float = 0.0
    notes: list = field(default_factory=list)


class ClaimLedger:
    """What the tests of one session recorded, claim by claim."""

    def __init__(self):
        self.entries: dict[str, _Entry] = {cid: _Entry() for cid in CLAIMS}

    def _entry(self, claim_id: str) -> _Entry:
        if claim_id not in self.entries:
            raise ValueError(f"unknown claim ID {claim_id!r}; expected one of {', '.join(CLAIMS)}")
        return self.entries[claim_id]

    def record(self, claim_id: str, result: CheckResult, *, negative: bool) -> None:
        if not isinstance(result, Verdict):
            raise TypeError(f"record a Verdict, got {type(result).__name__}")
        e = self._entry(claim_id)
        (e.negative if negative else e.main).append(result)

    def figure(self, claim_id: str, key: str, value) -> None:
        self._entry(claim_id).figures[key] = jsonable(value)

    def note(self, claim_id: str, text: str) -> None:
        e = self._entry(claim_id)
        if text not in e.notes:
            e.notes.append(text)

    def outcome(self, claim_id: str, nodeid: str, outcome: str, seconds: float) -> None:
        e = self._entry(claim_id)
        prev = e.tests.get(nodeid, "passed")
        # a failure in any phase (setup, call, teardown) fails the test
        e.tests[nodeid] = outcome if outcome == "failed" or prev != "failed" else prev
        e.seconds += seconds


def _status(e: _Entry) -> tuple[str, str, list[str]]:
    why = []
    ran = [o for o in e.tests.values() if o != "skipped"]
    if not ran:
        return "pending", "pending", ["no test of this claim ran"]
    failed = [n for n, o in e.tests.items() if o == "failed"]
    if e.negative:
        neg = "did-not-fail" if any(r.holds for r in e.negative) else "fails-as-predicted"
    else:
        neg = "pending"
    if failed:
        why.append(f"{len(failed)} test(s) failed: " + ", ".join(sorted(failed)[:5]))
        return "failed", neg, why
    if not e.main:
        return "pending", neg, ["no main check result was recorded"]
    if not all(r.holds for r in e.main):
        return "failed", neg, ["the main check does not hold"]
    if neg == "pending":
        return "pending", neg, ["the negative control has not run"]
    if neg == "did-not-fail":
        return "failed", neg, ["the negative control did not fail: the check has no teeth"]
    return "verified", neg, why


def build_report(ledger: ClaimLedger, provenance: dict) -> dict:
    """The report as a JSON-ready dict: ``{"provenance": ..., "summary": ..., "claims": [...]}``."""
    claims = []
    for cid, claim in CLAIMS.items():
        e = ledger.entries[cid]
        status, neg, why = _status(e)
        # the first main result is the claim's headline instance; further instances are listed
        # whole, so that no measured number is silently overwritten by another instance's
        figures = dict(e.main[0].figures) if e.main else {}
        if len(e.main) > 1:
            figures["other_instances"] = [
                {"params": r.params, "seed": r.seed, "holds": r.holds, "figures": r.figures}
                for r in e.main[1:]]
        if e.negative:
            figures["negative_control"] = [
                {"params": r.params, "holds": r.holds, "figures": r.figures} for r in e.negative]
        figures.update(e.figures)
        tolerance = dict(e.main[0].tolerance) if e.main else {}
        seeds = sorted({r.seed for r in e.main + e.negative})
        claims.append(jsonable({
            "id": cid,
            "title": claim.title,
            "statement": claim.statement,
            "abstract": claim.abstract,
            "status": status,
            "negative_control": neg,
            "figures": figures,
            "tolerance": tolerance,
            "seconds": round(e.seconds, 3),
            "tests": dict(sorted(e.tests.items())),
            "reasons": why,
            "notes": list(dict.fromkeys(e.notes + [n for r in e.main + e.negative for n in r.notes])),
            "provenance": {"seeds": seeds,
                           "params": [r.params for r in e.main],
                           "git": provenance.get("git")},
        }))
    counts = {s: sum(c["status"] == s for c in claims) for s in ("verified", "failed", "pending")}
    return {"provenance": jsonable(provenance), "summary": counts, "claims": claims}


def _short_figures(figs: dict, limit: int = 4) -> str:
    items = [(k, v) for k, v in figs.items() if not isinstance(v, (dict, list))]
    parts = []
    for k, v in items[:limit]:
        parts.append(f"{k} = {v:.3g}" if isinstance(v, float) else f"{k} = {v}")
    return "; ".join(parts)


def render_markdown(report: dict) -> str:
    """``REPORT.md``: a summary table, then one section per claim, then provenance."""
    prov = report["provenance"]
    git = prov.get("git", {})
    lines = ["# fastslow claim report", "",
             f"Commit `{git.get('commit')}` (dirty: {git.get('dirty')}); python {prov.get('python')}; "
             + ", ".join(f"{k} {v}" for k, v in prov.get("packages", {}).items() if v), "",
             "Summary: " + ", ".join(f"{v} {k}" for k, v in report["summary"].items()), "",
             "| ID | claim | status | negative control | key figures | seconds |",
             "|---|---|---|---|---|---|"]
    for c in report["claims"]:
        lines.append(f"| [{c['id']}](#{c['id'].lower()}) | {c['title']} | **{c['status']}** | "
                     f"{c['negative_control']} | {_short_figures(c['figures'])} | {c['seconds']} |")
    for c in report["claims"]:
        lines += ["", f"## {c['id']}", "", f"**{c['title']}** — {c['status']}, negative control "
                  f"{c['negative_control']}.", "", f"> {c['abstract']}", "", c["statement"], ""]
        if c["reasons"]:
            lines += ["Why this status: " + "; ".join(c["reasons"]), ""]
        for n in c["notes"]:
            lines.append(f"- {n}")
        if c["figures"]:
            lines += ["", "```json", json.dumps(c["figures"], indent=1, ensure_ascii=False), "```"]
        if c["tolerance"]:
            lines += ["", "Tolerances: " + ", ".join(f"{k} = {v}" for k, v in c["tolerance"].items())]
        if c["provenance"]["seeds"]:
            lines += ["", f"Seeds: {c['provenance']['seeds']}"]
    lines += ["", "## Provenance", "", "```json", json.dumps(prov, indent=1), "```", ""]
    return "\n".join(lines)


def write_report(report: dict, outdir: Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``REPORT.md`` into ``outdir``; return both paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    js = outdir / "report.json"
    md = outdir / "REPORT.md"
    js.write_text(json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    md.write_text(render_markdown(report))
    return js, md
