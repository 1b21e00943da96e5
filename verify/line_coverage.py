"""Line coverage of the design folders and ``fastslow/``, as tables (``bash run.sh coverage``,
docs/benchmarks.md).

Reads coverage.py's JSON report of one run of every test (``tests/`` and ``verify/``) and writes
the per-package table, the files covered least and the functions no test and no claim runs.

**Numba.** A function compiled by Numba runs as machine code: coverage.py traces none of its lines,
whether or not a test calls it. Such functions (decorated with ``njit``/``jit``, passed to
``njit(...)`` in their module, or the implementations an ``@overload`` returns) are counted apart:
their statements are left out of the traced percentage and reported as *compiled*, with how many
of them a test ran as Python (the integrators run their uncompiled source for Python callables;
``py_func``), the rest *compiled, not traced*.
A compiled function is not listed as run by nothing: whether it runs is seen only through the
tests and claims that use it.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

PACKAGES = ("theory", "numerics", "verify", "figures", "fastslow")
"""The folders of the table: what ``[tool.coverage.run] source`` measures (tests/test_layout.py
keeps the two in step)."""


def compiled_functions(path: Path) -> set[str]:
    """Qualified names of the functions of ``path`` that Numba compiles (decorated with
    ``njit``/``jit`` or passed by name to such a call, or defined inside a function decorated
    with ``overload``/``overload_method``: the implementation such a function returns is
    compiled). The ``@overload``-decorated function itself runs as Python (while Numba types a
    call) and is not counted, nor is the Python function it overloads (what a Python caller
    runs)."""
    tree = ast.parse(path.read_text())
    passed = {
        arg.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Call)
        and "jit" in ast.unparse(node.func.func)
        for arg in node.args
        if isinstance(arg, ast.Name)
    }
    out: set[str] = set()

    def visit(node, prefix, in_overload):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                is_function = not isinstance(child, ast.ClassDef)
                decorators = [ast.unparse(d) for d in child.decorator_list]
                if is_function and (
                    in_overload or child.name in passed or any("jit" in d for d in decorators)
                ):
                    out.add(name)
                overload = is_function and any(d.startswith("overload") for d in decorators)
                visit(child, name + ".", in_overload or overload)

    visit(tree, "", False)
    return out


def tables(report: dict, root: Path) -> dict:
    """Per package and per file: statements traced, missed and compiled; the functions (not
    compiled) of which no line ran."""
    files, unrun, compiled = {}, [], defaultdict(lambda: [0, 0, 0])
    for name, data in report["files"].items():
        rel = Path(name).as_posix()
        if rel.split("/")[0] not in PACKAGES:
            continue
        comp = compiled_functions(root / rel)
        comp_lines, comp_run = set(), set()
        for qual, fn in data.get("functions", {}).items():
            if not qual:
                continue
            lines = set(fn["executed_lines"]) | set(fn["missing_lines"])
            if qual in comp or any(qual.startswith(c + ".") for c in comp):
                comp_lines |= lines
                comp_run |= set(fn["executed_lines"])
                if qual in comp:
                    pkg = rel.split("/")[0]
                    compiled[pkg][0] += 1
                    compiled[pkg][1] += bool(fn["executed_lines"])
                    compiled[pkg][2] += len(lines)
            elif fn["summary"]["num_statements"] and not fn["executed_lines"]:
                unrun.append((rel, qual, fn["summary"]["num_statements"]))
        executed = set(data["executed_lines"]) - comp_lines
        missing = set(data["missing_lines"]) - comp_lines
        files[rel] = (len(executed) + len(missing), len(missing), len(comp_lines), len(comp_run))
    return {"files": files, "unrun": sorted(unrun), "compiled": dict(compiled)}


def markdown(t: dict, lowest: int = 12) -> str:
    rows = [
        "| package | statements (Python) | missed | covered | compiled functions (run as Python by a test) | compiled statements |",
        "|---|---|---|---|---|---|",
    ]
    for pkg in PACKAGES:
        fs = [v for f, v in t["files"].items() if f.split("/")[0] == pkg]
        n, miss = sum(v[0] for v in fs), sum(v[1] for v in fs)
        c = t["compiled"].get(pkg, [0, 0, 0])
        rows.append(
            f"| {pkg}/ | {n} | {miss} | {100 * (n - miss) / max(n, 1):.1f} % | {c[0]} ({c[1]}) | {c[2]} |"
        )
    rows += ["", f"The {lowest} files covered least (Python statements):", ""]
    rows += ["| file | statements | missed | covered |", "|---|---|---|---|"]
    ranked = sorted(
        ((f, v) for f, v in t["files"].items() if v[0]),
        key=lambda fv: (fv[1][0] - fv[1][1]) / fv[1][0],
    )
    for f, (n, miss, _, _) in ranked[:lowest]:
        rows.append(f"| {f} | {n} | {miss} | {100 * (n - miss) / n:.1f} % |")
    rows += ["", "Functions of which no line ran (not compiled):", ""]
    rows += [f"- `{f}`: `{q}` ({n} statements)" for f, q, n in t["unrun"]] or ["- none"]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0] if argv else "build/coverage/coverage.json")
    report = json.loads(path.read_text())
    text = markdown(tables(report, Path.cwd()))
    (path.parent / "table.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
