"""The claim report: ``report.json`` (validated by ``verify/report.schema.json``) and ``REPORT.md``.

A :class:`ClaimLedger` collects what one ``pytest verify`` session recorded, claim by claim: the
verdicts of the main instances and of the negative controls (:class:`verify.verdict.Verdict`, never
re-decided here), extra measured numbers, and the outcome and duration of every test marked
``@pytest.mark.claim(ID)``. The claim's unit turns them into its status
(:meth:`verify.claim.Claim.status`: ``verified`` / ``failed`` / ``error`` / ``pending``; a main
instance whose verdict is not ``holds``, ``undecided`` included, is never ``verified``). The
report counts the verdicts of the main instances per outcome (:data:`verify.verdict.OUTCOMES`),
in all and per claim, beside the statuses.

A report is *complete* when every test of ``verify/`` that was collected ran (no ``-k``
deselection, no interruption, no early stop). ``fastslow readme`` publishes complete reports only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .json_values import jsonable
from .outputs import write_atomic_many
from .registry import CLAIMS
from .verdict import NOT_EVALUATED, Diagnostic, Verdict, outcome_counts

SCHEMA_VERSION = 3
"""3: the outcome ``undecided``, each verdict's ``limits`` and each hypothesis's ``source``, and the
counts of main-instance verdicts per outcome (``outcomes``)."""
SCHEMA_PATH = "verify/report.schema.json"
"""Repository-relative path of the JSON Schema that validates ``report.json``."""

STATUSES = ("verified", "failed", "error", "pending")
"""A claim's status in the report (decided by :meth:`verify.claim.Claim.status`)."""


@dataclass
class _Entry:
    main: list = field(default_factory=list)
    controls: list = field(default_factory=list)
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

    def record(self, claim_id: str, verdict: Verdict, *, negative: bool) -> None:
        """Record a main instance's verdict, or a negative control's (``negative=True``)."""
        if not isinstance(verdict, Verdict):
            raise TypeError(f"record a Verdict, got {type(verdict).__name__}")
        if verdict.id != claim_id:
            raise ValueError(f"a verdict of {verdict.id} recorded under claim {claim_id}")
        if negative and verdict.control is None:
            raise ValueError(
                f"{claim_id}: a negative control's verdict must name its control "
                "(run_check(ID, control=NAME))"
            )
        e = self._entry(claim_id)
        (e.controls if negative else e.main).append(verdict)

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


def _report_verdict(v: Verdict) -> dict:
    """A verdict as the report records it: everything but the figures' series (arrays)."""
    data = v.to_json()
    data.pop("series", None)
    return data


def _control_entry(unit, v: Verdict) -> dict:
    ctl = unit.control(v.control)
    return {
        "name": v.control,
        "breaks": ctl.breaks,
        "meaning": ctl.meaning,
        "verdict": v.outcome,
        "violated": v.violated,
        "failed_parts": v.failed_parts,
        "fails_as_predicted": unit.fails_as_predicted(v),
        "reason": v.reason(),
        "params": v.params,
        "seed": v.seed,
        "hypotheses": {k: d.to_json() for k, d in v.hypotheses.items()},
        "conclusion": {k: d.to_json() for k, d in v.conclusion.items()},
        "limits": {k: d.to_json() for k, d in v.limits.items()},
        "figures": v.figures,
        "error": v.error,
    }


def build_report(
    ledger: ClaimLedger,
    provenance: dict,
    *,
    complete: bool = True,
    incomplete_reasons: list | None = None,
) -> dict:
    """The report as a JSON-ready dict (see ``verify/report.schema.json``)."""
    claims = []
    for cid, unit in CLAIMS.items():
        e = ledger.entries[cid]
        status, neg, why = unit.status(e.main, e.controls, e.tests)
        head = e.main[0] if e.main else None
        figures = dict(head.figures) if head else {}
        figures.update(e.figures)
        key = {k: figures.get(k) for k in unit.key_figures}
        claims.append(
            jsonable(
                {
                    "id": cid,
                    "title": unit.title,
                    "statement": unit.statement,
                    "abstract": unit.abstract,
                    "status": status,
                    "reasons": why,
                    "negative_control": neg,
                    "hypotheses": dict(unit.hypotheses),
                    "conclusion": dict(unit.conclusion),
                    "key_figures": key,
                    **({"profile": figures["profile"]} if "profile" in figures else {}),
                    "figures": figures,
                    "verdicts": [_report_verdict(v) for v in e.main],
                    "outcomes": outcome_counts(v.outcome for v in e.main),
                    "controls": [_control_entry(unit, v) for v in e.controls],
                    "tolerance": dict(head.tolerance) if head else {},
                    "seconds": round(e.seconds, 3),
                    "tests": dict(sorted(e.tests.items())),
                    "notes": list(
                        dict.fromkeys(e.notes + [n for v in e.main + e.controls for n in v.notes])
                    ),
                    "provenance": {
                        "seeds": sorted({v.seed for v in e.main + e.controls}),
                        "params": [v.params for v in e.main],
                        "git": provenance.get("git"),
                    },
                }
            )
        )
    counts = {s: sum(c["status"] == s for c in claims) for s in STATUSES}
    outcomes = outcome_counts(v.outcome for e in ledger.entries.values() for v in e.main)
    return {
        "$schema": SCHEMA_PATH,
        "schema_version": SCHEMA_VERSION,
        "complete": bool(complete),
        "incomplete_reasons": list(incomplete_reasons or []),
        "provenance": jsonable(provenance),
        "summary": counts,
        "outcomes": outcomes,
        "claims": claims,
    }


# ----------------------------------------------------------------------------- REPORT.md


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, float) for x in v):
        return f"[{v[0]:.4g}, {v[1]:.4g}]"  # an interval: enough digits to see its width
    if isinstance(v, list) and len(v) <= 4 and all(isinstance(x, (int, float)) for x in v):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, dict) and isinstance(v.get("slope"), float):  # a fitted rate
        ci = v.get("ci95")
        return f"{v['slope']:.4g}" + (f" {_fmt(ci)}" if isinstance(ci, list) else "")
    if isinstance(v, (list, dict)):
        return f"({type(v).__name__} of {len(v)}, see report.json)"
    return str(v)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def key_figures_text(c: dict) -> str:
    """``name = value; ...`` of a claim's key figures (the README and REPORT.md show these)."""
    return "; ".join(f"{k} = {_fmt(v)}" for k, v in c["key_figures"].items() if v is not None)


def profile_text(c: dict) -> str:
    """`` (profile: short)`` for a claim whose verdict comes from a reduced experiment, else ``""``
    (a claim that declares a ``profile`` figure, such as E1, is labelled wherever it is shown)."""
    return f" (profile: {c['profile']})" if c.get("profile") == "short" else ""


def off_scale_text(report: dict) -> str:
    """``"; not at the paper's scale: E1 (profile short)"`` naming each row whose claim declares a
    scale (``profile``) other than the paper's, else ``""``: the summary line of ``REPORT.md`` and
    the README's footer carry it, so a count of verified claims never hides a reduced run."""
    rows = [
        f"{c['id']} (profile {c['profile']})"
        for c in report["claims"]
        if c.get("profile") and c["profile"] != "paper"
    ]
    return f"; not at the paper's scale: {', '.join(rows)}" if rows else ""


def _claim_section(c: dict) -> list[str]:
    """The details of one claim in ``REPORT.md``: its verdicts, controls, notes and figures."""
    lines: list[str] = []
    lines += [
        "",
        f"## {c['id']}",
        "",
        f"**{c['title']}** — {c['status']}{profile_text(c)}; negative control "
        f"{c['negative_control']}.",
        "",
        f"> {c['abstract']}",
        "",
        c["statement"],
        "",
    ]
    if c["reasons"]:
        lines += ["Why this status: " + "; ".join(c["reasons"]), ""]
    for v in c["verdicts"]:
        lines += [
            f"Instance seed {v['seed']}: **{v['verdict']}** — {v['reason']}",
            "",
            "| | name | holds | value | rule |",
            "|---|---|---|---|---|",
        ]
        for kind in ("hypotheses", "conclusion", "limits"):
            for k, d in v.get(kind, {}).items():
                source = f" ({d['source']})" if "source" in d else ""
                shown = Diagnostic.from_json(d)
                holds = d["holds"] if shown.evaluated else NOT_EVALUATED
                lines.append(
                    f"| {kind[:10]} | {k}{source} | {holds} | {_cell(_fmt(d['value']))} | "
                    f"{_cell(d['rule'])} |"
                )
        lines.append("")
    if c["controls"]:
        lines += [
            "| negative control | breaks | verdict | as predicted | reason |",
            "|---|---|---|---|---|",
        ]
        for ctl in c["controls"]:
            lines.append(
                f"| {ctl['name']} | {ctl['breaks']} | {ctl['verdict']} | "
                f"{ctl['fails_as_predicted']} | {_cell(ctl['reason'])} |"
            )
        lines.append("")
    for n in c["notes"]:
        lines.append(f"- {n}")
    scalars = {k: v for k, v in c["figures"].items() if not isinstance(v, (dict, list))}
    if scalars:
        lines += [
            "",
            "Measured: "
            + "; ".join(f"{k} = {_fmt(v)}" for k, v in scalars.items())
            + " (arrays and nested results: report.json).",
        ]
    if c["tolerance"]:
        lines += [
            "",
            "Tolerances: " + ", ".join(f"{k} = {v}" for k, v in c["tolerance"].items()),
        ]
    if c["provenance"]["seeds"]:
        lines += ["", f"Seeds: {c['provenance']['seeds']}; {c['seconds']} s."]
    return lines


def trained_sections() -> list[str]:
    """The sections on E1's trained networks, from the committed ``docs/report/trained_*.json``
    (:mod:`verify.trained_section`; none when they have not been computed)."""
    from . import trained_section  # deferred: the section's units import the language models

    lines: list[str] = []
    for profile in ("paper", "short"):
        try:
            lines += trained_section.markdown(trained_section.load(profile))
        except ValueError:
            continue
    return lines


def render_markdown(report: dict) -> str:
    """``REPORT.md``: a one-screen summary, the qualified form of each claim, then the details."""
    prov = report["provenance"]
    git = prov.get("git", {})
    blas = prov.get("blas") or {}
    lines = ["# fastslow claim report", ""]
    if not report["complete"]:
        lines += ["**PARTIAL REPORT** — " + "; ".join(report["incomplete_reasons"]), ""]
    lines += [
        f"Commit `{(git.get('commit') or 'unknown')[:12]}` (dirty: {git.get('dirty')}), "
        f"profile {prov.get('profile', 'default')}, python {prov.get('python')}, BLAS "
        f"{blas.get('summary', 'unknown')}. "
        + ", ".join(f"{v} {k}" for k, v in report["summary"].items())
        + "; main instances: "
        + ", ".join(f"{v} {k}" for k, v in report.get("outcomes", {}).items())
        + off_scale_text(report)
        + ".",
        "",
        "| ID | claim | status | negative control | key figures |",
        "|---|---|---|---|---|",
    ]
    for c in report["claims"]:
        lines.append(
            f"| [{c['id']}](#{c['id'].lower()}) | {_cell(c['title'])} | **{c['status']}**"
            f"{profile_text(c)} | "
            f"{c['negative_control']} | {_cell(key_figures_text(c))} |"
        )
    lines += ["", "## What each claim says, as checked", ""]
    for c in report["claims"]:
        lines.append(f"- **{c['id']}** ({c['status']}{profile_text(c)}): {c['statement']}")
        for r in c["reasons"]:
            lines.append(f"  - why {c['status']}: {r}")
    for c in report["claims"]:
        lines += _claim_section(c)
    lines += trained_sections()
    lines += ["", "## Provenance", "", "```json", json.dumps(prov, indent=1), "```", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- writing


def write_report(report: dict, outdir: Path, stem: str = "report") -> tuple[Path, Path]:
    """Write ``report.json`` and ``REPORT.md`` into ``outdir`` together (both written to temporary
    files, then renamed); return both paths. ``stem="report.partial"`` gives
    ``report.partial.json`` and ``REPORT.partial.md``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    js = outdir / f"{stem}.json"
    md = outdir / f"{stem.upper().replace('.PARTIAL', '.partial')}.md"
    text = json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic_many({js: text, md: render_markdown(report)})
    return js, md


def complete_report_in(outdir: Path) -> bool:
    """There is a complete report in ``outdir`` (which a partial session must not replace)."""
    try:
        return json.loads((outdir / "report.json").read_text(encoding="utf-8"))["complete"] is True
    except (OSError, ValueError, KeyError, TypeError):
        return False
