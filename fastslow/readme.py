"""The README's claim table and ``docs/claims.md``, generated so that they cannot drift.

``fastslow readme`` publishes one complete report: it copies ``report.json`` and ``REPORT.md`` to
``docs/report/``, writes ``docs/claims.md`` from the claim units, and rewrites the part of
README.md between ``<!-- claims:begin -->`` and ``<!-- claims:end -->`` and the E1 sections
between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` when the README has them
(:func:`fastslow.readme_e1.e1_sections`: every E1 number the README shows comes from the report).

It reads the report as bad input (:class:`MalformedReport`, nothing written) when it is not JSON,
does not match ``verify/report.schema.json``, does not hold every registered claim exactly once
(or holds one the registry does not know), or its summary does not count its rows. It refuses a
well-formed report (``ValueError``, nothing written) when it is partial, when a claim that has a
check was not run (pending), or when it comes from a working tree with uncommitted changes. The
four files are published together or not at all (:func:`verify.outputs.write_atomic_many`: all
written beside their targets first, then renamed, the renamed ones rolled back on a failure).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from fastslow.publishing import inconsistencies, lowered_rows, lowered_text, marker_faults
from fastslow.readme_e1 import E1_SECTIONS, e1_sections
from fastslow.verify.json_schema import first_error
from fastslow.verify.outputs import write_atomic_many
from fastslow.verify.registry import CLAIMS
from fastslow.verify.report import (
    SCHEMA_VERSION,
    STATUSES,
    key_figures_text,
    off_scale_text,
)
from fastslow.verify.suggest import did_you_mean
from fastslow.verify.trained_claims import evaluated_at


class MalformedReport(ValueError):
    """The report is not one ``pytest verify`` writes for this registry: bad input."""


BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"


def _cell(text: str) -> str:
    """Escape a table cell: a '|' (as in |g|) would split it."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def fill_section(text: str, name: str, body: str, where: str) -> str:
    """``text`` with the part between ``<!-- name:begin -->`` and ``<!-- name:end -->`` replaced by
    ``body``; ``ValueError`` naming ``where`` when the markers are missing."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        raise ValueError(f"{where} has no {begin} ... {end} section to fill")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + body + "\n" + end + tail


def report_schema() -> dict:
    """``verify/report.schema.json``, from the installed package."""
    return json.loads(resources.files("fastslow.verify").joinpath("report.schema.json").read_text())


def read_report(path: Path) -> dict:
    """The report at ``path``, checked against its schema, the registry and its own summary;
    :class:`MalformedReport` naming the first fault."""
    try:
        report = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise MalformedReport(f"{path} is not valid JSON ({exc}); rerun pytest verify") from None
    except UnicodeDecodeError:
        raise MalformedReport(f"{path} is not UTF-8 text; rerun pytest verify") from None
    if isinstance(report, dict) and report.get("schema_version") not in (None, SCHEMA_VERSION):
        raise MalformedReport(
            f"{path} has schema_version {report.get('schema_version')!r}, expected "
            f"{SCHEMA_VERSION} (rerun pytest verify)"
        )
    err = first_error(report, report_schema())
    if err:
        raise MalformedReport(f"{path} does not match verify/report.schema.json: {err}")
    ids = [c["id"] for c in report["claims"]]
    for cid in ids:
        if cid not in CLAIMS:
            raise MalformedReport(
                f"{path} has a row for {cid!r}, not a registered claim{did_you_mean(cid, CLAIMS)}"
            )
    twice = sorted({c for c in ids if ids.count(c) > 1})
    missing = [c for c in CLAIMS if c not in ids]
    if twice or missing:
        what = f"rows for {', '.join(twice)} more than once" if twice else ""
        what += ("; " if twice and missing else "") + (
            f"no row for {', '.join(missing)}" if missing else ""
        )
        raise MalformedReport(
            f"{path} has {what}: every registered claim must be present exactly once"
        )
    counts = {s: sum(c["status"] == s for c in report["claims"]) for s in STATUSES}
    if {s: report["summary"].get(s) for s in STATUSES} != counts:
        raise MalformedReport(
            f"{path}: the summary {report['summary']} does not count its rows {counts}"
        )
    return report


def publishable(report: dict) -> list[str]:
    """Why ``report`` may not be published (empty when it may)."""
    why = []
    if not report["complete"]:
        why.append("the report is partial: " + "; ".join(report["incomplete_reasons"]))
    pending = [
        c["id"]
        for c in report["claims"]
        if c["status"] == "pending" and CLAIMS[c["id"]].implemented
    ]
    if pending:
        why.append("claims with a check were not run (pending): " + ", ".join(pending))
    git = report["provenance"].get("git") or {}
    if git.get("dirty") is not False:
        why.append(
            "the report comes from a working tree with uncommitted changes (dirty: "
            f"{git.get('dirty')}); commit, then rerun pytest verify"
        )
    return why


def claim_table(
    report: dict,
    figure_names: dict[str, list[str]],
    figure_dir: str,
    report_md: str = "docs/report/REPORT.md",
) -> str:
    """A Markdown table: ID, abstract sentence, formal statement, status, key figures, figures."""
    rows = [
        "| ID | the abstract says | we check | status | key measured figures | figure |",
        "|---|---|---|---|---|---|",
    ]
    for c in report["claims"]:
        figs = " ".join(f"[{n}]({figure_dir}/{n}.png)" for n in figure_names.get(c["id"], []))
        status = c["status"] + (
            "" if c["status"] == "pending" else f" (control: {c['negative_control']})"
        )
        rows.append(
            f"| [{c['id']}]({report_md}#{c['id'].lower()}) | {_cell(c['abstract'])} | "
            f"{_cell(c['statement'])} | **{status}** | {_cell(key_figures_text(c))} | "
            f"{figs} |"
        )
    return "\n".join(rows)


def claims_markdown() -> str:
    """``docs/claims.md``: every claim as its unit declares it (statement, parameters, hypotheses,
    conclusion, negative controls, key figures)."""
    lines = [
        "# The claims",
        "",
        "Generated from the claim units (`verify/checks/<id>`) by `fastslow readme`; do not "
        "edit by hand. Each claim's verdict on an instance is one of `holds`, `fails`, "
        "`outside-hypotheses`, `undecided`, `error` (`fastslow check ID`, exit 0 / 1 / 4 / 5 / 3; "
        "bad input 2). `undecided`: the check's own numerics cannot decide the instance (one of "
        "its limits does not hold, and no part of the conclusion it does not govern fails); never "
        "`fails`. Each hypothesis says how it is decided: from the `input`, from `theory`, from a "
        "`reference` written from the formulas, or through the `implementation` under test; a "
        "hypothesis violated on a declared main instance (at its main seed whatever its source, "
        "at any seed when measured through the implementation) is a failure of the suite "
        "(`fails`).",
        "",
    ]
    for cid, unit in CLAIMS.items():
        lines += [f"## {cid} — {unit.title}", "", f"> {unit.abstract}", "", unit.statement, ""]
        if not unit.implemented:
            lines += ["*Pending: no check is implemented yet.*", ""]
            continue
        lines += ["**Hypotheses** (diagnostics computed before the conclusion):", ""]
        lines += [
            f"- `{k}` ({unit.hypothesis_sources.get(k, 'source not declared')}): {m}"
            for k, m in unit.hypotheses.items()
        ]
        lines += _system_lines(unit)
        lines += ["", "**Conclusion:**", ""]
        lines += [f"- `{k}`: {m}" for k, m in unit.conclusion.items()]
        if unit.limits:
            lines += ["", "**Limits of the check** (not holding: `undecided`):", ""]
            lines += [f"- `{k}`: {m}" for k, m in unit.limits.items()]
        lines += ["", "**Negative controls** (`fastslow check " + cid + " --control NAME`):", ""]
        lines += [
            f"- `{c.name}` breaks `{c.breaks}`: {c.meaning} ("
            + ", ".join(f"{k}={v}" for k, v in c.params.items())
            + ")"
            for c in unit.controls
        ]
        trained = evaluated_at(cid)
        if trained:
            lines += [
                "",
                "**On trained weights** (`--system FILE.safetensors`, `--system e1:ARM:SEED:TOKENS`; "
                f"[trained_weights.md](trained_weights.md)): evaluated at {trained}.",
            ]
        lines += [
            "",
            "**Key figures:** " + ", ".join(f"`{k}`" for k in unit.key_figures),
            "",
            "**Parameters** (`--param KEY=VALUE`):",
            "",
            "| name | meaning | type and range |",
            "|---|---|---|",
        ]
        lines += [
            f"| `{k}` | {_cell(s.meaning)} | {_cell(s.describe())} |"
            for k, s in unit.params.items()
        ]
        if unit.orders:
            lines += [
                "",
                "**Orders between parameters:** "
                + "; ".join(_cell(o.describe()) for o in unit.orders),
            ]
        lines.append("")
    return "\n".join(lines)


def update_readme(
    readme: Path,
    report_path: Path,
    figure_names: dict[str, list[str]],
    figure_dir: str = "docs/figures",
    report_dir: str = "docs/report",
    *,
    allow_lower_profile: bool = False,
) -> None:
    """Publish ``report_path``: copy it to ``report_dir``, write ``docs/claims.md`` and the claim
    table of ``readme`` (``figure_names``: claim ID → figure names, from the figure registry).
    :class:`MalformedReport` for a report that is not one (:func:`read_report`), ``ValueError``
    when it may not be published, ``OSError`` when a file cannot be written: each before anything
    is replaced, or with every replaced file restored (all four files or none)."""
    report_path, readme = Path(report_path), Path(readme)
    report = read_report(report_path)
    report_md = report_path.with_name("REPORT.md").read_text()
    why = publishable(report)
    if why:
        raise ValueError(f"refusing to publish {report_path}: " + "; ".join(why))
    text = readme.read_text()
    if any(f"<!-- {name}:begin -->" in text for name in E1_SECTIONS):
        e1 = next(c for c in report["claims"] if c["id"] == "E1")
        for name, body in e1_sections(e1).items():
            text = fill_section(text, name, body, str(readme))
    head, tail = _around_table(readme, text)
    table = claim_table(report, figure_names, figure_dir, f"{report_dir}/REPORT.md")
    stamp = _stamp(report)
    refusal = _refusal(report, readme.parent / report_dir / "report.json", allow_lower_profile)
    refusal += marker_faults(report, [table, stamp], (BEGIN, END))
    if refusal:
        raise ValueError(f"refusing to publish {report_path}: " + "; ".join(refusal))
    # everything is checked and rendered before the first write; then all four files or none
    dest = readme.parent / report_dir
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        write_atomic_many(
            {
                dest / "report.json": report_path.read_text(),
                dest / "REPORT.md": report_md,
                readme.parent / "docs" / "claims.md": claims_markdown(),
                readme: head + BEGIN + "\n" + table + "\n" + stamp + END + tail,
            }
        )
    except BaseException:
        if created:
            dest.rmdir()
        raise


def _around_table(readme: Path, text: str) -> tuple[str, str]:
    """The README's text before its table's begin marker and after its end marker;
    ``ValueError`` unless each marker occurs exactly once, begin first."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(
            f"{readme} must hold {BEGIN} once, then {END} once (found {text.count(BEGIN)} and "
            f"{text.count(END)}); nothing was published"
        )
    head, rest = text.split(BEGIN, 1)
    return head, rest.split(END, 1)[1]


def _stamp(report: dict) -> str:
    """The footer under the table: the commit, the BLAS, the run's profile, the counts, and each
    row that is not at the paper's scale (:func:`verify.report.off_scale_text`)."""
    git = report["provenance"]["git"]
    s = report["summary"]
    profile = report["provenance"].get("profile") or "default"
    return (
        f"\n_Generated by `fastslow readme` from the {profile}-profile report of commit "
        f"`{(git.get('commit') or 'unknown')[:12]}` (BLAS: "
        f"{report['provenance']['blas']['summary']}); {s['verified']} verified, "
        f"{s['failed']} failed, {s['error']} error, {s['pending']} pending"
        f"{off_scale_text(report)}._\n"
    )


def _refusal(report: dict, published: Path, allow_lower_profile: bool) -> list[str]:
    """Why a well-formed, complete report may still not replace the published one: its rows
    disagree with their verdicts (:func:`fastslow.publishing.inconsistencies`), or it would lower
    a published row's profile (:func:`fastslow.publishing.lowered_rows`) and that was not
    allowed."""
    why = inconsistencies(report)
    lowered = [] if allow_lower_profile else lowered_rows(report, published)
    if lowered:
        why.append(lowered_text(lowered, published))
    return why


def _system_lines(unit) -> list[str]:
    """``docs/claims.md``'s lines on the user systems a claim checks: what its hypotheses ask of
    each kind's fields (``Claim.system_terms``)."""
    if not unit.system_terms:
        return []
    lines = [
        "",
        "**Your own system** (`--system FILE.py:NAME`; what the hypotheses ask of it):",
        "",
    ]
    return lines + [f"- `{kind}`: {needs}" for kind, needs in unit.system_terms.items()]
