"""The automated mutation run's plumbing (tools/mutation/mutate.py) and the coverage table's
reading of Numba-compiled functions and its tables (verify/line_coverage.py); cheap: no mutant is
run here (the run is ``bash run.sh mutate``)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fastslow.verify import line_coverage
from tools.mutation import mutate, mutate_report


def _population():
    items = []
    for pkg, files in (("theory", 2), ("numerics", 5), ("verify", 4)):
        for f in range(files):
            for op in ("core/NumberReplacer", "core/ReplaceBinaryOperator_Add_Sub", "core/AddNot"):
                for occ in range(7 if op.endswith("Sub") else 2):
                    items.append((f"{pkg}{f}{op}{occ}", f"{pkg}/m{f}.py", op, occ))
    return items


def test_the_sample_is_fixed_by_its_seed_and_shared_equally_by_package():
    pop = _population()
    a, b = mutate.sample(pop, 30, 35), mutate.sample(list(reversed(pop)), 30, 35)
    assert a == b and len(a) == len(set(a)) == 30
    assert Counter(mutate.package_of(x[1]) for x in a) == {
        "theory": 10,
        "numerics": 10,
        "verify": 10,
    }
    assert mutate.sample(pop, 30, 36) != a
    # uniform across operator families: the abundant family gets no more than its fair share
    fams = Counter(mutate.operator_family(x[2]) for x in a)
    assert set(fams) == {"NumberReplacer", "ReplaceBinaryOperator", "AddNot"}
    assert max(fams.values()) <= 16


def test_a_package_with_few_mutations_gives_all_it_has():
    pop = [x for x in _population() if not x[1].startswith("theory")]
    pop += [("t", "theory/m.py", "core/AddNot", 0)]
    s = mutate.sample(pop, 30, 1)
    assert ("t", "theory/m.py", "core/AddNot", 0) in s and len(s) == 30


def test_the_module_map_finds_unit_tests_and_claims():
    g = mutate.module_graph()
    assert "tests/test_markov.py" in mutate.unit_tests(g, "theory/markov.py")
    ids = ("A1", "D7", "F2", "F3")
    assert set(mutate.claims_of(g, "theory/markov.py", ids)) == {"F2", "F3"}
    assert mutate.claims_of(g, "verify/checks/d7/claim.py", ids) == ["D7"]
    assert mutate.near_claims(g, "verify/checks/d7/claim.py", ids) == ["D7"]
    # a claim's test file imports its unit (the registry imports units by name)
    assert "verify/checks/d7/claim.py" in g["verify/tests/test_d7_margin.py"]
    assert mutate.unit_files(g, "A1") == ["verify/checks/a1.py"]
    # a unit of several modules (a package): each of its modules is the unit's
    assert mutate.unit_files(g, "F2")[0] == "verify/checks/f2/__init__.py"
    assert "verify/checks/f2/tracking.py" in mutate.unit_files(g, "F2")
    assert mutate.claims_of(g, "verify/checks/f2/tracking.py", ids) == ["F2"]
    assert mutate.near_claims(g, "verify/checks/f2/tracking.py", ids) == ["F2"]
    assert "verify/checks/f2/tracking.py" in g["verify/tests/test_f2_stationary_manifold.py"]
    assert "tests/test_markov.py" in mutate.unit_tests(g, "verify/checks/f2/tracking.py")


def test_score_counts_timeouts_as_killed_and_survivors_by_triage():
    rows = [
        {"job": "a", "file": "theory/x.py", "outcome": "killed"},
        {"job": "b", "file": "theory/x.py", "outcome": "timeout"},
        {"job": "c", "file": "theory/x.py", "outcome": "survived"},
        {"job": "d", "file": "theory/x.py", "outcome": "survived"},
        {"job": "f", "file": "theory/x.py", "outcome": "survived"},
        {"job": "g", "file": "theory/x.py", "outcome": "survived"},
        {"job": "e", "file": "verify/x.py", "outcome": "pending"},
    ]
    s = mutate_report.score(rows, {"d": "equivalent", "f": "killed", "g": "removed"})
    assert s["theory"] == {
        "sampled": 6,
        "run": 6,
        "killed": 2,
        "timeout": 1,
        "equivalent": 1,
        "killed_since": 1,
        "removed": 1,
        "surviving": 1,
        "score": 2 / 5,
        "score_now": 3 / 4,
    }
    assert s["verify"]["run"] == 0 and s["all"]["sampled"] == 7
    with pytest.raises(ValueError, match="equivalent \\(argued\\)"):  # counted nowhere: refused
        mutate_report.score(rows, {"d": "equivalent (argued)"})


def fake_session(folder, outputs):
    """A ``session.sqlite`` in ``folder`` as cosmic-ray leaves it: one mutant of numerics/x.py per
    entry of ``outputs`` (job id: the kill command's output), each reported KILLED."""
    import sqlite3

    folder.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(folder / "session.sqlite") as db:
        db.execute(
            "create table mutation_specs (job_id, module_path, operator_name, occurrence, "
            "start_pos_row)"
        )
        db.execute("create table work_items (job_id)")
        db.execute("create table work_results (job_id, worker_outcome, test_outcome, output, diff)")
        for job, out in outputs.items():
            db.execute(
                "insert into mutation_specs values (?, 'numerics/x.py', 'core/Op', 0, 1)", (job,)
            )
            db.execute("insert into work_items values (?)", (job,))
            db.execute(
                "insert into work_results values (?, 'NORMAL', 'TestOutcome.KILLED', ?, '')",
                (job, out),
            )


KILLED_OUTPUT = "mutated numerics/x.py; ...\nKILLED by unit tests (1): ['tests/test_x.py']\n"


def test_a_kill_command_that_fails_before_any_check_is_no_kill(tmp_path):
    """The kill command's own failure (its set-up raised: exit 3, cosmic-ray says KILLED) is
    reported ``incompetent``: it checked nothing, so it neither kills nor survives the mutant."""
    from tools.mutation import mutate_report

    fake_session(
        tmp_path, {"a": f"{mutate.KILL_FAILED} (FileExistsError: [Errno 17] File exists)\n"}
    )
    fake_session(tmp_path / "more", {"b": KILLED_OUTPUT})
    rows = {r["job"]: r["outcome"] for r in mutate_report.results(tmp_path)}
    assert rows == {"a": "incompetent"}
    rows = {r["job"]: r["outcome"] for r in mutate_report.results(tmp_path / "more")}
    assert rows == {"b": "killed"}


def test_a_sharded_session_reports_every_shard_and_resumes_only_with_its_shards(tmp_path, capsys):
    """``--shards K``: the rows are those of every shard folder; a session is resumed with the
    number of shards it was made with, else refused in one line before anything runs."""
    import json

    from tools.mutation import mutate_report

    (tmp_path / "session.json").write_text(json.dumps({"shards": 2}))
    fake_session(tmp_path / "shard-1", {"a": KILLED_OUTPUT, "c": KILLED_OUTPUT})
    fake_session(tmp_path / "shard-2", {"b": KILLED_OUTPUT})
    assert mutate.session_dirs(tmp_path) == mutate.shard_dirs(tmp_path, 2)
    assert [r["job"] for r in mutate_report.results(tmp_path)] == ["a", "c", "b"]
    assert mutate.main(["run", "--dir", str(tmp_path), "--shards", "1"]) == 2
    assert "has 2 shard(s), not 1" in capsys.readouterr().err
    assert mutate.main(["run", "--dir", str(tmp_path), "--shards", "0"]) == 2
    assert mutate.main(["status", "--dir", str(tmp_path / "none")]) == 0
    assert "no session in" in capsys.readouterr().out


def test_compiled_functions_are_the_jitted_ones(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "from numba import njit\n"
        "@njit(cache=True)\n"
        "def a(x):\n    return x\n"
        "def b(x):\n    return x\n"
        "def c(x):\n    return x\n"
        "C = njit('f8(f8)')(c)\n"
        "class K:\n    def d(self):\n        return 1\n"
        "from numba.extending import overload\n"
        "def e(x):\n    return x\n"
        "@overload(e)\n"
        "def e_nb(x):\n    def impl(x):\n        return x\n    return impl\n"
    )
    # an @overload's implementation (impl) is compiled; e (what Python runs) and e_nb (run by
    # Numba's typing, as Python) are not
    assert line_coverage.compiled_functions(f) == {"a", "c", "e_nb.impl"}
    linalg = mutate.ROOT / "numerics" / "integrators" / "linalg.py"
    compiled = line_coverage.compiled_functions(linalg)
    assert "_invert_blocks_fast_nb.impl" in compiled
    assert not {"_invert_blocks_fast", "_invert_blocks_fast_nb", "_pivot_size"} & compiled


def _run_g(tree, cache) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "FASTSLOW_NUMBA"))}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    code = "from numerics.caller import g; print(g())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_a_mutated_callee_is_not_hidden_by_its_callers_cached_code(tmp_path):
    """A warm cache copied for a mutant of a callee file: as is, the caller in another file keeps
    the unmutated callee's machine code (Numba checks an entry against its own file only); without
    the entries of :func:`stale_sources` the caller recompiles and sees the mutant."""
    tree = tmp_path / "tree"
    pkg = tree / "numerics"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    callee = pkg / "callee.py"
    callee.write_text("from numba import njit\n\n@njit(cache=True)\ndef f():\n    return 1\n")
    (pkg / "caller.py").write_text(
        "from numba import njit\n\nfrom .callee import f\n\n"
        "@njit(cache=True)\ndef g():\n    return f() + 10\n"
    )
    (pkg / "unrelated.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef u():\n    return 0\n"
    )
    warm = tmp_path / "warm"
    assert _run_g(tree, warm) == "11"
    callee.write_text(callee.read_text().replace("return 1", "return 2"))
    later = callee.stat().st_mtime_ns + 10**10  # a later time stamp, as an edit gives
    os.utime(callee, ns=(later, later))

    naive = shutil.copytree(warm, tmp_path / "naive")
    assert _run_g(tree, naive) == "11"  # the hazard: the caller's entry holds the old callee

    graph = mutate.code_graph(tree)
    assert graph["numerics/caller.py"] == {"numerics/callee.py"}
    stale = mutate.stale_sources(graph, "numerics/callee.py", tree)
    assert stale == {"numerics/callee.py", "numerics/caller.py"}
    pruned = shutil.copytree(warm, tmp_path / "pruned")
    removed = mutate.cache_entries(pruned, tree, stale)
    assert {p.name.split(".")[0] for p in removed} == {"callee", "caller"}
    assert {p.suffix for p in removed} == {".nbi", ".nbc"}
    for p in removed:
        p.unlink()
    assert _run_g(tree, pruned) == "12"


def test_the_stale_sources_of_the_packages_own_files():
    """A mutant of an integrator recompiles the integrators (the driver binds every method's
    functions), not the model's kernels; one of the model recompiles the model's compiled files,
    not the integrators; a file that no compiled code names recompiles nothing."""
    g = mutate.code_graph(mutate.ROOT)
    radau = mutate.stale_sources(g, "numerics/integrators/radau.py", mutate.ROOT)
    assert {"numerics/integrators/driver.py", "numerics/integrators/dopri5.py"} <= radau
    assert "numerics/model/compiled.py" not in radau
    layer = mutate.stale_sources(g, "numerics/model/layer.py", mutate.ROOT)
    assert "numerics/model/compiled.py" in layer
    assert "numerics/integrators/radau.py" not in layer
    assert mutate.stale_sources(g, "numerics/analysis/linearised.py", mutate.ROOT) == {
        "numerics/analysis/linearised.py"
    }


@pytest.mark.parametrize("as_the_kill_command", [False, True])
def test_warm_start_links_the_unmutated_cache_without_the_stale_entries(
    tmp_path, monkeypatch, as_the_kill_command
):
    """The mutant's cache directory (named by the mutated package's fingerprint) holds links to
    the unmutated entries of the files the mutated one cannot reach, none of the stale ones; the
    unmutated cache is left whole. As the kill command calls it (``NUMBA_CACHE_DIR`` already the
    mutant's directory, the unmutated one with jit_cache's marker), loading jit_cache makes the
    destination and its marker first: the links go in beside them."""
    work = tmp_path / "work"
    pkg = work / "tree" / "numerics"
    pkg.mkdir(parents=True)
    shutil.copy(mutate.ROOT / "numerics" / "jit_cache.py", pkg / "jit_cache.py")
    (pkg / "callee.py").write_text("def f():\n    return 1\n")
    (pkg / "caller.py").write_text("from .callee import f\n\ndef g():\n    return f()\n")
    (pkg / "other.py").write_text("def u():\n    return 0\n")
    jc = _load_jit_cache(pkg)
    pristine_fp = jc.fingerprint(pkg)[:16]
    (work / "session.json").write_text(json.dumps({"numba_dir": pristine_fp}))
    sub = os.path.dirname(os.path.abspath(pkg / "callee.py"))
    folder = (
        work / "numba_cache" / pristine_fp / f"numerics_{hashlib.sha1(sub.encode()).hexdigest()}"
    )
    folder.mkdir(parents=True)
    names = ["callee.f-1.py312.nbi", "caller.g-3.py312.nbi", "caller.g-3.py312.1.nbc"]
    names += ["other.u-1.py312.nbi", "other.u-1.py312.1.nbc"]
    for n in names:
        (folder / n).write_text(n)
    (pkg / "callee.py").write_text("def f():\n    return 2\n")  # the mutant
    base = tmp_path / "base"
    if as_the_kill_command:
        (work / "numba_cache" / pristine_fp / ".fastslow-jit-cache").write_text("")
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(base))
    removed = mutate.warm_start(work, base, "numerics/callee.py")
    assert sorted(p.name for p in removed) == sorted(names[:3])
    mutant_dir = base / jc.fingerprint(pkg)[:16] / folder.name
    assert sorted(p.name for p in mutant_dir.iterdir()) == sorted(names[3:])
    assert os.path.samefile(mutant_dir / names[3], folder / names[3])  # a link, not a copy
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)  # the unmutated cache whole


def _load_jit_cache(pkg):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_jc_test", pkg / "jit_cache.py")
    jc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jc)
    return jc


def test_a_sessions_triage_is_read_from_its_own_commits_file_only():
    """Triage keys (file:line operator #occurrence) mean something only in the tree they were
    written for: a session reads the triage file named after its commit, never another's."""
    from tools.mutation import mutate_report

    first = mutate_report.triage_of("8f5576a8705a731d0a3acd16d8604aaed4a80cf0")
    assert len(first) >= 70
    assert all(v[0] in mutate_report.VERDICTS for v in first.values())
    assert mutate_report.triage_of("0000000" + "0" * 33) == {}


def _fn(executed, missing) -> dict:
    """One entry of coverage.py's JSON ``functions`` (or ``files``) map."""
    return {
        "executed_lines": executed,
        "missing_lines": missing,
        "summary": {"num_statements": len(executed) + len(missing)},
    }


def _write_coverage_report(root) -> Path:
    """Two measured files (a Python module with one unrun function; a Numba module with one
    compiled function never run and one run as Python) and a test file outside the packages,
    with coverage.py's JSON report of them (line numbers as coverage.py gives them)."""
    (root / "theory").mkdir()
    (root / "numerics").mkdir()
    (root / "theory" / "a.py").write_text(
        "def f(x):\n    return x\n\n\ndef g(x):\n    y = x + 1\n    return y\n"
    )
    (root / "numerics" / "b.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef h(x):\n    return x\n\n\n"
        "@njit\ndef h2(x):\n    return -x\n\n\ndef k(x):\n    return 2 * x\n"
    )
    report = {
        "files": {
            "theory/a.py": {
                **_fn([1, 2, 5], [6, 7]),
                "functions": {"": _fn([1, 5], []), "f": _fn([2], []), "g": _fn([], [6, 7])},
            },
            "numerics/b.py": {
                **_fn([1, 4, 9, 11, 14, 15], [6]),
                "functions": {
                    "": _fn([1, 4, 9, 14], []),
                    "h": _fn([], [6]),
                    "h2": _fn([11], []),
                    "k": _fn([15], []),
                },
            },
            # not a measured package: skipped (and never read from disk, it does not exist)
            "tests/test_x.py": {**_fn([1], [2]), "functions": {"t": _fn([], [2])}},
        }
    }
    path = root / "build" / "coverage.json"
    path.parent.mkdir()
    path.write_text(json.dumps(report))
    return path


def test_the_coverage_tables_count_python_statements_and_set_compiled_ones_apart(tmp_path):
    report = json.loads(_write_coverage_report(tmp_path).read_text())
    t = line_coverage.tables(report, tmp_path)
    # per file: (statements, missed, compiled statements, compiled statements run as Python);
    # h's line 6 and h2's line 11 leave the Python count: b.py has 5 Python statements, all run
    assert t["files"] == {"theory/a.py": (5, 2, 0, 0), "numerics/b.py": (5, 0, 2, 1)}
    # g never ran; h never ran either but is compiled (not traced), so it is not listed
    assert t["unrun"] == [("theory/a.py", "g", 2)]
    # numerics: 2 compiled functions, 1 of them run as Python, 2 compiled statements
    assert t["compiled"] == {"numerics": [2, 1, 2]}
    md = line_coverage.markdown(t, lowest=1)
    rows = md.splitlines()
    assert "| theory/ | 5 | 2 | 60.0 % | 0 (0) | 0 |" in rows
    assert "| numerics/ | 5 | 0 | 100.0 % | 2 (1) | 2 |" in rows
    assert "| verify/ | 0 | 0 | 0.0 % | 0 (0) | 0 |" in rows  # no file: no division by zero
    # the files covered least: only the lowest one (3 of 5 statements run)
    assert "The 1 files covered least (Python statements):" in rows
    assert "| theory/a.py | 5 | 2 | 60.0 % |" in rows and "| numerics/b.py |" not in md
    assert rows[-1] == "- `theory/a.py`: `g` (2 statements)"
    assert line_coverage.markdown({**t, "unrun": []}).splitlines()[-1] == "- none"


def test_the_coverage_command_writes_the_table_next_to_the_report(tmp_path, monkeypatch, capsys):
    path = _write_coverage_report(tmp_path)
    monkeypatch.chdir(tmp_path)  # the report's file names are relative to the root
    assert line_coverage.main([str(path)]) == 0
    table = (tmp_path / "build" / "table.md").read_text()
    assert table == line_coverage.markdown(
        line_coverage.tables(json.loads(path.read_text()), tmp_path)
    )
    assert capsys.readouterr().out == table + "\n"
    assert "| numerics/b.py | 5 | 0 | 100.0 % |" in table  # both files ranked by default
