"""The README's claim table and ``docs/claims.md``, generated so that they cannot drift.

``fastslow readme`` publishes one complete report: it copies ``report.json`` and ``REPORT.md`` to
``docs/report/``, writes ``docs/claims.md`` from the claim units, and rewrites the part of
README.md between ``<!-- claims:begin -->`` and ``<!-- claims:end -->``. It refuses (and writes
nothing) when the report is partial, when a claim that has a check was not run (pending), or when
the report comes from a working tree with uncommitted changes. Every file is written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path

from fastslow.verify.registry import CLAIMS
from fastslow.verify.report import SCHEMA_VERSION, key_figures_text, write_atomic

BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"


def _cell(text: str) -> str:
    """Escape a table cell: a '|' (as in |g|) would split it."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def publishable(report: dict) -> list[str]:
    """Why ``report`` may not be published (empty when it may)."""
    why = []
    if report.get("schema_version") != SCHEMA_VERSION:
        why.append(
            f"the report has schema_version {report.get('schema_version')!r}, expected {SCHEMA_VERSION} "
            "(rerun pytest verify)"
        )
        return why
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
        "Generated from the claim units (`verify/checks/<id>.py`) by `fastslow readme`; do not "
        "edit by hand. Each claim's verdict on an instance is one of `holds`, `fails`, "
        "`outside-hypotheses`, `undecided`, `error` (`fastslow check ID`, exit 0 / 1 / 4 / 5 / 3; "
        "bad input 2). `undecided`: the check's own numerics cannot decide the instance (one of "
        "its limits does not hold); never `fails`. Each hypothesis says how it is decided: from "
        "the `input`, from `theory`, from a `reference` written from the formulas, or through the "
        "`implementation` under test; one of the last kind violated on a declared main instance "
        "is a failure of the suite (`fails`).",
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
) -> None:
    """Publish ``report_path``: copy it to ``report_dir``, write ``docs/claims.md`` and the claim
    table of ``readme`` (``figure_names``: claim ID → figure names, from the figure registry).
    ``ValueError`` (nothing written) when the report may not be published."""
    report_path, readme = Path(report_path), Path(readme)
    try:
        report = json.loads(report_path.read_text())
        report_md = report_path.with_name("REPORT.md").read_text()
    except json.JSONDecodeError as exc:
        raise ValueError(f"{report_path} is not valid JSON ({exc}); rerun pytest verify") from None
    why = publishable(report)
    if why:
        raise ValueError(f"refusing to publish {report_path}: " + "; ".join(why))
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{readme} has no {BEGIN} ... {END} section to fill")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    git = report["provenance"]["git"]
    s = report["summary"]
    table = claim_table(report, figure_names, figure_dir, f"{report_dir}/REPORT.md")
    stamp = (
        f"\n_Generated by `fastslow readme` from the report of commit "
        f"`{(git.get('commit') or 'unknown')[:12]}` (BLAS: "
        f"{report['provenance']['blas']['summary']}); {s['verified']} verified, "
        f"{s['failed']} failed, {s['error']} error, {s['pending']} pending._\n"
    )
    # everything is checked and rendered before the first write
    dest = readme.parent / report_dir
    dest.mkdir(parents=True, exist_ok=True)
    write_atomic(dest / "report.json", report_path.read_text())
    write_atomic(dest / "REPORT.md", report_md)
    write_atomic(readme.parent / "docs" / "claims.md", claims_markdown())
    write_atomic(readme, head + BEGIN + "\n" + table + "\n" + stamp + END + tail)
