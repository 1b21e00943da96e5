"""Results of an automated mutation session (:mod:`tools.mutation.mutate`): the rows, the score per package,
docs/mutants.md's cosmic-ray section with every survivor's triage (:data:`TRIAGE`), and the re-run
of the survivors against a newer tree (``python -m tools.mutation.mutate rerun``)."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from scipy.stats import beta

from .mutate import (
    KILL_FAILED,
    PACKAGES,
    ROOT,
    RUNNER,
    _env,
    baseline,
    manifest,
    module_graph,
    package_of,
    session_dirs,
)


def results(work: Path) -> list[dict]:
    """One row per sampled mutant: file, line, operator, occurrence, outcome (``pending``,
    ``killed``, ``timeout``, ``survived``, ``incompetent``), the kill reason, the diff and the kill
    command's seconds (``seconds``, from its last line; absent for a run that printed none); the
    rows of every shard of a sharded session, shard by shard."""
    return [r for d in session_dirs(work) for r in _shard_results(d)]


def _shard_results(work: Path) -> list[dict]:
    with sqlite3.connect(work / "session.sqlite") as db:
        specs = db.execute(
            "select w.rowid, m.job_id, m.module_path, m.operator_name, m.occurrence, "
            "m.start_pos_row from mutation_specs m join work_items w on w.job_id = m.job_id "
            "order by w.rowid"
        ).fetchall()
        res = {
            r[0]: r[1:]
            for r in db.execute(
                "select job_id, worker_outcome, test_outcome, output, diff from work_results"
            )
        }
    rows = []
    for _, job, path, op, occ, line in specs:
        r = {"job": job, "file": path, "line": line, "operator": op, "occurrence": occ}
        if job not in res:
            r["outcome"] = "pending"
        else:
            worker, test, output, diff = res[job]
            output = output or ""
            if "SKIPPED" in str(worker) or "NO_TEST" in str(worker):
                r["outcome"] = "no-mutation"
            elif "expected one mutated file" in output or KILL_FAILED in output:
                r["outcome"] = "incompetent"
            elif str(test).endswith("KILLED") and output == "timeout":
                r["outcome"] = "timeout"
            elif str(test).endswith("KILLED"):
                r["outcome"] = "killed"
            elif str(test).endswith("SURVIVED"):
                r["outcome"] = "survived"
            else:
                r["outcome"] = "incompetent"
            secs = [
                ln for ln in output.splitlines() if ln.startswith("mutate: ") and ln.endswith(" s")
            ]
            if r["outcome"] == "timeout":
                r["seconds"] = None  # past the session's timeout
            elif secs:
                r["seconds"] = float(secs[-1].split()[1])
            reason = [ln for ln in output.splitlines() if ln.startswith(("KILLED", "SURVIVED"))]
            r["reason"] = reason[-1] if reason else output.strip().splitlines()[-1:]
            r["diff"] = [
                ln
                for ln in (diff or "").splitlines()
                if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
            ]
        rows.append(r)
    return rows


VERDICTS = ("equivalent", "killed", "removed", "open", "")
"""The triage verdicts a survivor may have (``open`` or none: surviving)."""


def score(rows: list[dict], triage: dict[str, str] | None = None) -> dict:
    """Per package: mutants run, killed (timeouts included, also counted apart), and the survivors
    by triage (``triage``: job → ``equivalent``, ``killed`` by a check added since, ``removed``
    with code no check ran, else surviving); ``score`` = killed / (run − equivalent) as run,
    ``score_now`` = (killed + killed since) / (run − equivalent − removed)."""
    triage = triage or {}
    unknown = sorted({v for v in triage.values() if v not in VERDICTS})
    if unknown:
        raise ValueError(f"triage verdicts {unknown}: expected one of {VERDICTS} (or none: open)")
    out = {}
    for p in (*PACKAGES, "all"):
        rs = [r for r in rows if p == "all" or package_of(r["file"]) == p]
        done = [r for r in rs if r["outcome"] in ("killed", "timeout", "survived")]
        killed = sum(r["outcome"] in ("killed", "timeout") for r in done)
        surv = [triage.get(r["job"], "") for r in done if r["outcome"] == "survived"]
        eq, new, gone = surv.count("equivalent"), surv.count("killed"), surv.count("removed")
        out[p] = {
            "sampled": len(rs),
            "run": len(done),
            "killed": killed,
            "timeout": sum(r["outcome"] == "timeout" for r in done),
            "equivalent": eq,
            "killed_since": new,
            "removed": gone,
            "surviving": len(surv) - eq - new - gone,
            "score": killed / (len(done) - eq) if len(done) > eq else float("nan"),
            "score_now": (killed + new) / (len(done) - eq - gone)
            if len(done) > eq + gone
            else float("nan"),
        }
    return out


def seconds(rows: list[dict]) -> dict:
    """Per package (and ``all``): ``(mutants timed, median seconds, total seconds)`` of the kill
    command over the mutants run that printed their time (timeouts left out)."""
    out = {}
    for p in (*PACKAGES, "all"):
        xs = sorted(
            r["seconds"]
            for r in rows
            if r.get("seconds") is not None and (p == "all" or package_of(r["file"]) == p)
        )
        mid = len(xs) // 2
        med = (xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2) if xs else float("nan")
        out[p] = (len(xs), med, sum(xs))
    return out


TRIAGE = Path(__file__).resolve().parent / "triage"
"""The triage of each session's surviving mutants, one file per session named after its commit
(``triage/<first 7 hex digits>.json``: line numbers and occurrences mean something only in that
tree), ``{"file:line operator #occurrence": [verdict, reason]}``:
verdict ``equivalent`` (the reason: why no behaviour changes) or ``killed`` (the check added that
kills it now), or ``open`` (a missing check, named)."""

BEGIN, END = "<!-- cosmic-ray: begin -->", "<!-- cosmic-ray: end -->"


def triage_of(commit: str) -> dict[str, list[str]]:
    """The triage of the session on the tree of ``commit`` (:data:`TRIAGE`; empty before any)."""
    path = TRIAGE / f"{commit[:7]}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def mutant_key(r: dict) -> str:
    return f"{r['file']}:{r['line']} {r['operator'].split('/')[-1]} #{r['occurrence']}"


def report_markdown(work: Path) -> str:
    """docs/mutants.md's automated section: the session, the score per package, every survivor
    with its triage (:data:`TRIAGE`)."""
    rows = results(work)
    info = json.loads((work / "session.json").read_text())
    triage = triage_of(info["commit"])
    verdicts = {r["job"]: triage.get(mutant_key(r), [""])[0] for r in rows}
    sc = score(rows, verdicts)
    pop = info["population"]
    lines = [
        BEGIN,
        "## Automated mutation testing (cosmic-ray)",
        "",
        f"`bash run.sh mutate` on the tree of commit {info['commit'][:7]}"
        + (" (with uncommitted changes)" if info["uncommitted_changes"] else "")
        + f": cosmic-ray 8 enumerates {info['population_total']} mutations "
        + f"({', '.join(f'{p}/ {n}' for p, n in pop.items())}); a sample of {info['n']} (seed "
        + f"{info['seed']}, uniform across operator families and files, an equal share per "
        + "package)"
        + (
            f", dealt to {info['shards']} sessions run side by side (`--shards`),"
            if info.get("shards", 1) > 1
            else ""
        )
        + " is run, each in a fresh process: the mutated module's unit tests (`pytest -x`), "
        + "then every claim whose unit imports the module, at its sweep instance (a mutant of "
        + "`numerics` starts from the unmutated tree's Numba cache without the entries of the files "
        + "its code can reach, `tools/mutation/mutate.py`). Killed: a unit "
        + "test fails or a claim's main instance ends anything but `holds`; a mutant running past "
        + f"{info['timeout']:.0f} s is killed by timeout (counted with the killed, shown apart). "
        + "Score = killed / (run − equivalent) as the run found it; now: with the survivors "
        + "killed since (by a check added since, or by an existing one the kill command does "
        + "not run: a test it does not select, mypy; each checked against the mutant by hand), and "
        + "without those whose code was removed (it ran in no check). The interval is the exact "
        + "95 % (Clopper–Pearson) interval of the score now over the mutants run."
        + (
            f" **Partial run:** {sc['all']['run']} of {sc['all']['sampled']} sampled mutants ran "
            "(each in a fresh process, on a 2-core machine shared with other work); "
            "`bash run.sh mutate` resumes the session."
            if sc["all"]["run"] < sc["all"]["sampled"]
            else ""
        ),
        "",
        "| package | sampled | run | killed (by timeout) | equivalent | killed since | "
        "removed with dead code | surviving | score (run) | score (now) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pct(x):
        return "—" if x != x else f"{100 * x:.0f} %"

    def interval(v):
        n = v["run"] - v["equivalent"] - v["removed"]
        k = v["killed"] + v["killed_since"]
        if n <= 0:
            return ""
        lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
        hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
        return f" [{100 * lo:.0f}, {100 * hi:.0f}]"

    for p, v in sc.items():
        lines.append(
            f"| {p} | {v['sampled']} | {v['run']} | {v['killed']} ({v['timeout']}) | "
            f"{v['equivalent']} | {v['killed_since']} | {v['removed']} | {v['surviving']} | "
            f"{pct(v['score'])} | {pct(v['score_now'])}{interval(v)} |"
        )
    secs = seconds(rows)
    lines += [
        "",
        "Seconds per mutant (the kill command, median over the mutants timed; timeouts left out): "
        + "; ".join(
            f"{p} {m:.0f} s ({n} timed)" if n else f"{p} — (none timed)"
            for p, (n, m, _) in secs.items()
        )
        + ".",
    ]
    surv = [r for r in rows if r["outcome"] == "survived"]
    lines += ["", f"Every surviving mutant ({len(surv)}), triaged:", ""]
    lines += ["| mutant | change | triage |", "|---|---|---|"]
    for r in surv:
        change = " / ".join(x.strip() for x in r.get("diff", []))[:160].replace("|", "\\|")
        verdict = triage.get(mutant_key(r), ["untriaged", ""])
        lines.append(f"| `{mutant_key(r)}` | `{change}` | {verdict[0]}: {verdict[1]} |")
    again = work.with_name(work.name + "-rerun") / "rerun.json"
    if again.exists():
        redo = json.loads(again.read_text())
        lines += [
            "",
            f"Survivors re-run against a newer tree (`python -m tools.mutation.mutate rerun`, "
            f"{len(redo)} so far): "
            + "; ".join(
                f"`{mutant_key(r)}` {r['rerun'].replace('gone', 'not re-applied (its line is gone or not unique there)')}"
                for r in redo
            )
            + ".",
        ]
    killers = defaultdict(int)
    for r in rows:
        if r["outcome"] == "killed":
            why = str(r.get("reason", ""))
            killers["unit tests" if "unit tests" in why else "a claim"] += 1
    lines += [
        "",
        "Killed by: " + ", ".join(f"{k} {n}" for k, n in sorted(killers.items())) + ".",
        END,
    ]
    return "\n".join(lines) + "\n"


def write_report(work: Path, doc: Path = ROOT / "docs" / "mutants.md") -> None:
    """Replace (or append) the automated section of ``doc``."""
    text = doc.read_text() if doc.exists() else ""
    section = report_markdown(work)
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        text = head + section + rest.partition(END)[2].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    doc.write_text(text)


def rerun_survivors(work: Path, again: Path) -> list[dict]:
    """The survivors of the session in ``work``, applied to a fresh copy of the current tree (in
    ``again``: its own manifest, graph and baseline) by their source lines (the removed line must
    occur exactly once in the file, else it is reported not re-applied) and run through the same
    kill command; one row per survivor with the new outcome."""
    from .mutants import Mutant, applied  # deferred: the catalogue's snippet machinery

    again.mkdir(parents=True, exist_ok=True)
    if not (again / "baseline.json").exists():
        from .mutants import scratch_tree  # deferred: as above

        scratch_tree(ROOT, again / "tree")
        graph = module_graph(again / "tree")
        (again / "graph.json").write_text(json.dumps({k: sorted(v) for k, v in graph.items()}))
        spec = importlib.util.spec_from_file_location(
            "_jc", again / "tree" / "numerics" / "jit_cache.py"
        )
        jc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(jc)
        (again / "session.json").write_text(
            json.dumps({"numba_dir": jc.fingerprint(again / "tree" / "numerics")[:16]})
        )
        (again / "manifest.json").write_text(json.dumps(manifest(again / "tree")))
        baseline(again)
    out = []
    for r in results(work):
        if r["outcome"] != "survived":
            continue
        minus = [x[1:] for x in r["diff"] if x.startswith("-")]
        plus = [x[1:] for x in r["diff"] if x.startswith("+")]
        old, new = "\n".join(minus) + "\n", "\n".join(plus) + "\n"
        path = again / "tree" / r["file"]
        if not path.exists() or path.read_text().count(old) != 1:
            out.append({**r, "rerun": "not re-applied (its line is gone or not unique there)"})
            continue
        with applied(Mutant(r["job"], r["file"], old, new, (), ""), again / "tree"):
            env = _env(again / "tree", again / "numba_cache")
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", RUNNER, "kill"],
                cwd=again / "tree",
                env=env | {"PYTHONDONTWRITEBYTECODE": "1"},
                capture_output=True,
                text=True,
            )
        verdict = "killed" if proc.returncode else "survived"
        reason = [ln for ln in proc.stdout.splitlines() if ln.startswith(("KILLED", "SURVIVED"))]
        out.append(
            {
                **r,
                "rerun": verdict,
                "rerun_reason": reason[-1:] or proc.stdout[-300:],
                "rerun_seconds": time.perf_counter() - t0,
            }
        )
        print(f"{mutant_key(r)}: {verdict} {reason[-1:]}", flush=True)
        (again / "rerun.json").write_text(json.dumps(out, indent=1))
    return out
