"""``fastslow bench``: run every benchmark section and print its ratio table (Markdown).

Timings are ratios measured in one run, never asserted in tests (targets in docs/benchmarks.md). The sections live in
:mod:`fastslow.benchmarks`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastslow.benchmarks import discover
from verify.provenance import provenance, short


def to_markdown(table: dict) -> str:
    cols = table["columns"]
    lines = [f"### {table['title']}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table["rows"]:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    for n in table.get("notes", []):
        lines.append(f"\n{n}")
    return "\n".join(lines)


def _cell(x) -> str:
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def main(
    quick: bool = False,
    out: str | None = None,
    only: list[str] | None = None,
    markdown: str | None = None,
) -> int:
    """Run the sections ``only`` (all by default); print Markdown; optionally save JSON/Markdown."""
    sections = discover()
    names = only or list(sections)
    results = {"provenance": provenance(), "sections": {}}
    header = f"<!-- {short(results['provenance'])}; {'quick' if quick else 'full'} run -->"
    print(header)
    md = [header]
    for name in names:
        if name not in sections:
            print(f"unknown benchmark section {name!r}; known: {sorted(sections)}", file=sys.stderr)
            return 2
        print(
            f"[{names.index(name) + 1}/{len(names)}] running benchmark section {name} ...",
            file=sys.stderr,
            flush=True,
        )
        table = sections[name](quick)
        results["sections"][name] = table
        md.append(to_markdown(table))
        print(md[-1], "\n", flush=True)
    if out:
        Path(out).write_text(json.dumps(results, indent=1, default=str))
    if markdown:
        Path(markdown).write_text("\n\n".join(md) + "\n")
    return 0
