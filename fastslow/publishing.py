"""What a report must be to replace the published claim table: consistent, not of a lower profile,
free of the table's markers.

``fastslow readme`` (:mod:`fastslow.readme`) asks three questions of a well-formed report before it
writes anything; each answer is a list of one-line reasons, empty when the report may be published:

* :func:`inconsistencies`: the report's rows agree with their own verdicts. A claim's status and
  its negative-control entry are what the claim's unit decides from the verdicts and test outcomes
  the row carries (:meth:`verify.claim.Claim.status`, read, never re-decided here); a verdict's
  ``holds`` flag and its diagnostics agree with its outcome; the per-claim and overall outcome
  counts count the verdicts. A hand-edited row that says ``verified`` while its verdicts say
  ``fails`` is refused.
* :func:`lowered_rows`: no row replaces a published row of a higher profile. A row's profile is
  the claim's own scale when it declares one (E1: ``short`` below ``paper``), else the profile of
  the run (``default`` below ``thorough``). A short E1 never replaces the paper-scale row unless
  asked explicitly (``fastslow readme --allow-lower-profile``).
* :func:`marker_faults`: no text that goes into the README contains the markers that delimit its
  table (a statement holding ``<!-- claims:end -->`` would cut the README on the next run).

Caveat: the published rows compared are those of the published ``report.json``; a published file
that is not a report (unreadable, not JSON, no claim rows) has no rows to compare, and nothing is
refused for profile then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from fastslow.verify.registry import CLAIMS
from fastslow.verify.verdict import Diagnostic, Verdict, outcome_counts

PROFILE_RANK = {"short": 0, "default": 0, "paper": 1, "thorough": 1}
"""The order of profiles: a claim's own scale (``short`` < ``paper``) or the run's (``default`` <
``thorough``)."""


def row_profile(row: Mapping, report: Mapping) -> str:
    """The profile of one claim row: the claim's own (``short`` / ``paper``) when it declares one,
    else the run's (``default`` / ``thorough``; ``default`` when the report does not say)."""
    own = row.get("profile")
    if own:
        return str(own)
    return str((report.get("provenance") or {}).get("profile") or "default")


def published_rows(path: Path) -> tuple[dict, dict]:
    """``({claim: row}, report)`` of the published report at ``path``; empty when there is none or
    it is not a report (see the module's caveat)."""
    try:
        published = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    if not isinstance(published, dict) or not isinstance(published.get("claims"), list):
        return {}, {}
    rows = {
        c["id"]: c
        for c in published["claims"]
        if isinstance(c, dict) and isinstance(c.get("id"), str)
    }
    return rows, published


def lowered_rows(report: Mapping, published_path: Path) -> list[tuple[str, str, str]]:
    """``(claim, new profile, published profile)`` for each claim whose row in ``report`` has a
    lower profile (:data:`PROFILE_RANK`) than the row published at ``published_path``."""
    rows, published = published_rows(published_path)
    out = []
    for c in report["claims"]:
        old = rows.get(c["id"])
        if old is None:
            continue
        new_p, old_p = row_profile(c, report), row_profile(old, published)
        if PROFILE_RANK.get(new_p, 0) < PROFILE_RANK.get(old_p, 0):
            out.append((c["id"], new_p, old_p))
    return out


def lowered_text(lowered: list[tuple[str, str, str]], published_path: Path) -> str:
    """One line: which rows a report would lower (grouped by ``new < published``), and the two
    ways forward."""
    groups: dict[tuple[str, str], list[str]] = {}
    for cid, new_p, old_p in lowered:
        groups.setdefault((new_p, old_p), []).append(cid)
    shown = "; ".join(
        f"{', '.join(ids)}: {new_p} < {old_p}" for (new_p, old_p), ids in groups.items()
    )
    return (
        f"its rows are of a lower profile than those published in {published_path} ({shown}); "
        "rerun pytest verify --thorough, or pass --allow-lower-profile to publish them anyway"
    )


def _diagnostics(data: Mapping) -> dict:
    return {k: Diagnostic.from_json(d) for k, d in (data or {}).items()}


def _control_verdict(cid: str, ctl: Mapping) -> Verdict:
    """A negative control's verdict from its entry in a report row (the fields
    :meth:`~verify.claim.Claim.status` and :meth:`~verify.claim.Claim.fails_as_predicted` read)."""
    return Verdict(
        cid,
        ctl["verdict"],
        _diagnostics(ctl.get("hypotheses")),
        _diagnostics(ctl.get("conclusion")),
        ctl.get("figures") or {},
        ctl.get("params") or {},
        ctl.get("seed", 0),
        ctl["name"],
        limits=_diagnostics(ctl.get("limits")),
        error=ctl.get("error"),
    )


def _verdict_faults(cid: str, v: Verdict, holds_flag) -> list[str]:
    """Where one recorded verdict disagrees with itself: its ``holds`` flag, or an outcome its
    own diagnostics contradict (``holds`` with a part, hypothesis or limit that does not hold;
    ``fails`` with nothing that fails)."""
    out = []
    if holds_flag is not None and bool(holds_flag) != (v.outcome == "holds"):
        out.append(f"{cid} seed {v.seed}: holds={holds_flag} but the verdict is {v.outcome}")
    if v.outcome == "holds" and (
        not v.conclusion_holds
        or v.violated
        or v.unresolved
        or (v.hypotheses and not v.hypotheses_hold)
    ):
        out.append(f"{cid} seed {v.seed}: the verdict says holds but its diagnostics do not")
    if v.outcome == "fails" and not (v.failed_parts or v.violated):
        out.append(f"{cid} seed {v.seed}: the verdict says fails but nothing in it fails")
    return out


def inconsistencies(report: Mapping) -> list[str]:
    """Where the report's summary, statuses and verdicts disagree (see the module docstring);
    the summary against the statuses is checked when the report is read
    (:func:`fastslow.readme.read_report`)."""
    out: list[str] = []
    total: list[str] = []
    for c in report["claims"]:
        cid, unit = c["id"], CLAIMS[c["id"]]
        try:
            main = [Verdict.from_json(v) for v in c.get("verdicts", [])]
            controls = [_control_verdict(cid, ctl) for ctl in c.get("controls", [])]
            for ctl, v in zip(c.get("controls", []), controls):
                if bool(ctl.get("fails_as_predicted")) != unit.fails_as_predicted(v):
                    out.append(
                        f"{cid} control {v.control}: fails_as_predicted disagrees with its verdict"
                    )
        except (KeyError, TypeError, ValueError) as exc:
            out.append(f"{cid}: a verdict cannot be read ({type(exc).__name__}: {exc})")
            continue
        for raw, v in zip(c.get("verdicts", []), main):
            out += _verdict_faults(cid, v, raw.get("holds"))
        outcomes = [v.outcome for v in main]
        total += outcomes
        if "outcomes" in c and c["outcomes"] != outcome_counts(outcomes):
            out.append(f"{cid}: its outcome counts {c['outcomes']} do not count its verdicts")
        status, neg, _ = unit.status(main, controls, c.get("tests", {}))
        if (c["status"], c["negative_control"]) != (status, neg):
            out.append(
                f"{cid} says {c['status']} (control: {c['negative_control']}) but its verdicts "
                f"and tests give {status} (control: {neg})"
            )
    if "outcomes" in report and report["outcomes"] != outcome_counts(total):
        out.append(f"the outcome counts {report['outcomes']} do not count the verdicts")
    return out


def marker_faults(report: Mapping, texts: Iterable[str], markers: Iterable[str]) -> list[str]:
    """The markers found in ``texts`` (what is written into the README's table), naming the claim
    row that holds each."""
    markers = list(markers)
    out = []
    for text in texts:
        for m in markers:
            if m in text:
                row = next(
                    (c["id"] for c in report["claims"] if any(m in str(v) for v in c.values())),
                    None,
                )
                where = f"the row of {row}" if row else "the generated table"
                out.append(f"{where} contains the README marker {m!r}")
    return list(dict.fromkeys(out))
