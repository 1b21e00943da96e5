"""``fastslow bench``: run every benchmark section and print its ratio table (Markdown).

Timings are ratios measured in one run (``user_times``: whole commands, absolute), never asserted
in tests (targets in docs/benchmarks.md). The sections live in :mod:`fastslow.benchmarks`. BLAS,
OpenMP and Numba run ``$FASTSLOW_THREADS`` threads (default 1), set by :func:`main` for every
section and the commands it starts (:mod:`numerics.threads`); the provenance records the counts.
"""

from __future__ import annotations

import json
import sys

from fastslow.benchmarks import discover
from fastslow.numerics import threads
from fastslow.verify.outputs import writable_file, write_output
from fastslow.verify.provenance import provenance, short
from fastslow.verify.suggest import did_you_mean


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
    """Run the sections ``only`` (all by default); print Markdown; optionally save JSON/Markdown.

    Unknown sections and outputs that cannot be written are refused (exit 2, one line) before any
    section runs; both files are written atomically at the end."""
    sections = discover()
    names = only or list(sections)
    try:
        threads.pin()
        unknown = [n for n in names if n not in sections]
        if unknown:
            raise ValueError(
                f"unknown benchmark section {unknown[0]!r}{did_you_mean(unknown[0], sections)}; "
                f"known: {', '.join(sorted(sections))}"
            )
        for path, option in ((out, "--out"), (markdown, "--markdown")):
            if path:
                writable_file(path, option)
    except ValueError as exc:
        print(f"fastslow bench: bad input: {exc}", file=sys.stderr)
        return 2
    results = {"provenance": provenance(), "sections": {}}
    header = f"<!-- {short(results['provenance'])}; {'quick' if quick else 'full'} run -->"
    print(header)
    md = [header]
    for name in names:
        print(
            f"[{names.index(name) + 1}/{len(names)}] running benchmark section {name} ...",
            file=sys.stderr,
            flush=True,
        )
        table = sections[name](quick)
        results["sections"][name] = table
        md.append(to_markdown(table))
        print(md[-1], "\n", flush=True)
    try:
        if out:
            write_output(out, json.dumps(results, indent=1, default=str) + "\n", "--out")
        if markdown:
            write_output(markdown, "\n\n".join(md) + "\n", "--markdown")
    except OSError as exc:
        print(
            f"fastslow bench: cannot write {exc.filename or 'an output'}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    return 0
