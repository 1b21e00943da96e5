"""Automated mutation testing with cosmic-ray: ``bash run.sh mutate`` (opt-in, resumable).

**What it measures.** cosmic-ray enumerates every source mutation its operators can make in
``theory/``, ``numerics/`` and ``verify/`` (the claim tests, the hand catalogue :mod:`tools.mutation.mutants`
and this module excluded). A sample of them (:func:`sample`, fixed seed) is executed one by one: the
mutation is written into a scratch copy of the tree (``build/mutate/tree``), and the *kill command*
(:func:`kill`, a fresh process per mutant) runs

1. the tests of the mutated module: the files of ``tests/`` that import it (when none does, those
   that import a module importing it) and the claim test files of ``verify/tests/`` that import it
   (:func:`unit_tests`), with ``pytest -x``;
2. then every claim whose unit imports the mutated module, directly or not (:func:`claims_of`), at
   its :attr:`~verify.claim.Claim.sweep_instance` (the main instance the seed sweep repeats; E1's
   short profile), the claims whose unit imports it directly first, then the cheapest first.

A mutant is **killed** when a unit test fails or a claim's main instance ends anything but
``holds`` (``pytest verify`` asserts that a declared main instance holds; the reason is recorded:
the failing test, or the claim and its outcome), and **killed by timeout** when the kill command
runs past the session's timeout (a mutant that makes a loop run forever; reported apart; the
default 900 s is seven times the longest mutant of the first session, 130 s). A
mutant no test and no claim reaches (no importer) survives. Claims that do not hold on the unmutated tree
(:func:`baseline`) are never used to kill.

**Fresh processes and caches.** Each mutant runs in its own process, so Numba compiles the mutated
source. :mod:`numerics.jit_cache` keys the cache by the content of every file of ``numerics``, so a
mutant of ``numerics`` compiles into a directory of its own (here a temporary one, removed
afterwards). A copy of the unmutated tree's cache there would not be sound by itself: Numba checks
an entry against its own file only, so a caller in another file would keep the unmutated callee's
machine code. The directory starts as hard links to the unmutated tree's entries *without* those
of every file whose compiled code may hold the mutated file's (:func:`stale_sources`: the mutated
file and every file of ``numerics`` naming it, directly or not; :func:`warm_start`); those
recompile (a mutant of an integrator recompiles the integrators, not the model's kernels; one of
``numerics/analysis`` recompiles nothing). A mutant elsewhere reuses the unmutated tree's
directory. cosmic-ray writes the original source back after each mutant, which changes the file's
modification time; the kill command puts the unmutated files' times back (Numba's per-file check
and Python's ``.pyc`` read them). cosmic-ray runs the kill command with
``PYTHONDONTWRITEBYTECODE=1``.

**Sampling.** Uniform across operators and files: per package an equal share of the sample; within
a package, repeatedly an operator family uniformly at random, a file uniformly among the files that
family can mutate, a mutation uniformly in that file (:func:`sample`, ``--seed``). The session
database holds only the sample; cosmic-ray runs the pending mutants in random order, so a partial
run is a uniform sub-sample of it.

**Commands.** ``python -m tools.mutation.mutate run [--n N] [--seed S] [--timeout T] [--shards K]`` (set up
if needed, then execute the pending mutants; resumes an interrupted session; prints progress;
``--shards K`` deals the sample to K sessions, each with its own scratch tree, Numba cache and
baseline, run side by side: K CPUs' worth of mutants at once, the same sample and report),
``status``, ``report`` (``docs/mutants.md``'s automated section), ``kill`` (the kill command;
internal). Everything lives in ``build/mutate/`` (``--dir``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from .mutants import environment

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""

PACKAGES = ("theory", "numerics", "verify")
"""The folders mutated."""

EXCLUDED = ("verify/tests/*", "verify/line_coverage.py")
"""Files of :data:`PACKAGES` never mutated: the claim tests (they are the checks) and the coverage
table's reader (a tool like this one, which lives outside the packages in ``tools/mutation/``)."""

SCANNED = ("theory", "numerics", "verify", "figures", "fastslow", "tests")
"""The folders whose imports make the module graph."""

NAME = "fastslow"

RUNNER = "tools.mutation.mutate"
"""This module's name: how the processes of a session run it (``python -m``) from the scratch
tree, whose root is their working directory and on ``PYTHONPATH``."""

STARTED = time.perf_counter()
"""When this module was imported: the kill command's seconds are counted from it."""

DEFAULT_DIR = ROOT / "build" / "mutate"
DEFAULT_N = 360
DEFAULT_SEED = 35


# ----------------------------------------------------------------------------- the module graph


def module_name(rel: str) -> str:
    """``fastslow.numerics.model.kernels`` for ``numerics/model/kernels.py`` (the design folders
    are ``fastslow.<folder>``; ``fastslow/cli.py`` is ``fastslow.cli``; tests keep their path)."""
    parts = list(Path(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[0] == NAME:
        parts = parts[1:]
    return ".".join([NAME, *parts]) if parts else NAME


def python_files(root: Path, folders=SCANNED) -> list[str]:
    """Relative paths of the ``.py`` files under ``folders`` (outputs and caches left out)."""
    out = []
    for folder in folders:
        for p in sorted((root / folder).rglob("*.py")):
            rel = p.relative_to(root).as_posix()
            if "__pycache__" not in rel and "/out/" not in rel and "/report/" not in rel:
                out.append(rel)
    return out


def imported_names(root: Path, rel: str) -> list[tuple[str | None, list[str]]]:
    """Every import statement of ``rel`` (also inside functions), as ``(module, names)``: for
    ``import a.b`` ``(None, ["a.b"])``, for ``from a import b, c`` (relative ones resolved against
    ``rel``'s package) ``("a", ["a.b", "a.c"])``."""
    tree = ast.parse((root / rel).read_text(), filename=rel)
    mod = module_name(rel)
    pkg = mod if rel.endswith("__init__.py") else mod.rpartition(".")[0]
    out: list[tuple[str | None, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.append((None, [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((target, [f"{target}.{a.name}" for a in node.names]))
    return out


def imports_of(root: Path, rel: str, known: dict[str, str]) -> set[str]:
    """The files of the tree that ``rel`` imports (any import statement, also inside functions),
    with the ``__init__.py`` of every package on the way; ``known`` maps module names to files."""
    names: set[str] = set()
    for target, imported in imported_names(root, rel):
        names.update(imported)
        if target is not None:
            names.add(target)
    out = set()
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            if ".".join(parts[:i]) in known:
                out.add(known[".".join(parts[:i])])
    out.discard(rel)
    return out


def unit_files(graph: dict[str, set[str]], cid: str) -> list[str]:
    """The files of claim ``cid``'s unit: ``verify/checks/<id>.py``, or every module of the package
    ``verify/checks/<id>/`` (a unit of several modules)."""
    flat = f"verify/checks/{cid.lower()}.py"
    if flat in graph:
        return [flat]
    return sorted(f for f in graph if f.startswith(f"verify/checks/{cid.lower()}/"))


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """``{file: files it imports}`` over :data:`SCANNED`; a claim unit's test file
    (``verify/tests/test_<id>_*.py``) also imports every file of the unit (:func:`unit_files`; the
    registry imports the units by name)."""
    files = python_files(root)
    known = {module_name(f): f for f in files if not f.startswith("tests/")}
    graph = {f: imports_of(root, f, known) for f in files}
    for f in files:
        name = Path(f).name
        if f.startswith("verify/tests/test_") and name[5:7].isalnum():
            graph[f].update(unit_files(graph, name[5:7]))
    return graph


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every file ``start`` imports, directly or not (``start`` included)."""
    seen, todo = {start}, [start]
    while todo:
        for g in graph.get(todo.pop(), ()):
            if g not in seen:
                seen.add(g)
                todo.append(g)
    return seen


def unit_tests(graph: dict[str, set[str]], rel: str) -> list[str]:
    """The test files that import ``rel``: of ``tests/`` and of ``verify/tests/`` (a claim's
    test file may check more than its main instance, e.g. D8's symbolic factorisation); when no
    file of ``tests/`` does, those of ``tests/`` importing a file that imports it."""
    tests = sorted(f for f in graph if f.startswith("tests/test_"))
    claim_tests = sorted(f for f in graph if f.startswith("verify/tests/test_") and rel in graph[f])
    direct = [t for t in tests if rel in graph[t]]
    if direct:
        return direct + claim_tests
    importers = {f for f, deps in graph.items() if rel in deps}
    return [t for t in tests if graph[t] & importers] + claim_tests


def near_claims(graph: dict[str, set[str]], rel: str, ids) -> list[str]:
    """The claims whose unit holds ``rel`` or imports it directly (from one of its files)."""
    return [
        c for c in ids if any(u == rel or rel in graph.get(u, ()) for u in unit_files(graph, c))
    ]


def claims_of(graph: dict[str, set[str]], rel: str, ids) -> list[str]:
    """The claims whose unit (:func:`unit_files`) imports ``rel`` directly or not; those holding
    it or importing it directly first, in ``ids`` order otherwise."""
    near = near_claims(graph, rel, ids)
    far = [
        cid
        for cid in ids
        if cid not in near and any(rel in closure(graph, u) for u in unit_files(graph, cid))
    ]
    return near + far


# ----------------------------------------------------------------------------- the session


def manifest(root: Path) -> dict[str, list]:
    """``{file: [sha256, mtime_ns]}`` of every ``.py`` file of the design folders."""
    out = {}
    for rel in python_files(root, ("theory", "numerics", "verify", "figures", "fastslow")):
        if rel == "verify/line_coverage.py":
            continue  # a tool: never mutated; may be updated during a session
        p = root / rel
        out[rel] = [hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns]
    return out


def config_text(timeout: float) -> str:
    """The cosmic-ray configuration: the three packages, the exclusions, the kill command."""
    return (
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(list(PACKAGES))}\n"
        f"timeout = {float(timeout)}\n"
        f"excluded-modules = {json.dumps(list(EXCLUDED))}\n"
        f'test-command = "{os.path.abspath(sys.executable)} -m {RUNNER} kill"\n'
        "\n[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def operator_family(name: str) -> str:
    """``ReplaceBinaryOperator`` for ``core/ReplaceBinaryOperator_Add_Mul``."""
    return name.split("/")[-1].split("_")[0]


def package_of(path: str) -> str:
    return Path(path).parts[0]


def sample(items: list[tuple], n: int, seed: int) -> list[tuple]:
    """``n`` of ``items`` (``(job_id, module_path, operator, ...)``), an equal share per package
    (a package with fewer mutations gives all it has, the others share the rest),
    uniform across operator families and files within one (module docstring), interleaved by
    package; deterministic for a given ``seed`` and population."""
    rng = random.Random(seed)
    by_pkg: dict[str, list[tuple]] = defaultdict(list)
    for it in sorted(items, key=lambda t: (t[1], t[2], t[3])):
        by_pkg[package_of(it[1])].append(it)
    pkgs = [p for p in PACKAGES if by_pkg[p]]
    share, left, open_ = (
        {},
        n,
        list(pkgs),
    )  # equal shares; a short package's rest goes to the others
    while open_:
        each = {p: left // len(open_) + (i < left % len(open_)) for i, p in enumerate(open_)}
        short = [p for p in open_ if len(by_pkg[p]) <= each[p]]
        if not short:
            share.update(each)
            break
        for p in short:
            share[p] = len(by_pkg[p])
            left -= share[p]
            open_.remove(p)
    picked: dict[str, list[tuple]] = {}
    for p in pkgs:
        pool: dict[str, dict[str, list[tuple]]] = defaultdict(lambda: defaultdict(list))
        for it in by_pkg[p]:
            pool[operator_family(it[2])][it[1]].append(it)
        chosen = []
        while len(chosen) < share[p] and pool:
            fam = rng.choice(sorted(pool))
            f = rng.choice(sorted(pool[fam]))
            bucket = pool[fam][f]
            chosen.append(bucket.pop(rng.randrange(len(bucket))))
            if not bucket:
                del pool[fam][f]
            if not pool[fam]:
                del pool[fam]
        picked[p] = chosen
    out = []
    for i in range(max(map(len, picked.values()))):
        out += [picked[p][i] for p in pkgs if i < len(picked[p])]
    return out


def _cosmic_ray(*args, cwd: Path) -> None:
    exe = Path(os.path.abspath(sys.executable)).with_name("cosmic-ray")
    subprocess.run([str(exe), *args], cwd=cwd, check=True)


def setup(work: Path, n: int, seed: int, timeout: float, shards: int = 1) -> None:
    """Scratch tree, manifest, module graph, baseline, population and the sampled session; with
    ``shards`` > 1 the sample is dealt to that many sessions (:func:`shard_dirs`), each with its own
    scratch tree, Numba cache and baseline, run side by side (one per CPU)."""
    from .mutants import scratch_tree  # deferred: keeps `status`/`report` free of the catalogue

    work.mkdir(parents=True, exist_ok=True)
    tree = work / "tree"
    print(f"mutate: copying the tree to {tree}", flush=True)
    scratch_tree(ROOT, tree)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", *PACKAGES], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    (tree / "cosmic-ray.toml").write_text(config_text(timeout))
    if not (work / "population.sqlite").exists():  # the tree's mutations do not depend on time
        print("mutate: enumerating mutations (cosmic-ray init, minutes)", flush=True)
        _cosmic_ray("init", "cosmic-ray.toml", str(work / "population.sqlite"), cwd=tree)
    with sqlite3.connect(work / "population.sqlite") as db:
        rows = db.execute(
            "select job_id, module_path, operator_name, occurrence from mutation_specs"
        ).fetchall()
    chosen = [r[0] for r in sample(rows, n, seed)]
    pop = defaultdict(int)
    for r in rows:
        pop[package_of(r[1])] += 1
    info = {
        "commit": commit,
        "uncommitted_changes": bool(dirty),
        "seed": seed,
        "n": len(chosen),
        "timeout": timeout,
        "population": dict(pop),
        "population_total": len(rows),
        "shards": shards,
    }
    spec = importlib.util.spec_from_file_location("_jc", tree / "numerics" / "jit_cache.py")
    jc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jc)
    info["numba_dir"] = jc.fingerprint(tree / "numerics")[:16]
    if shards == 1:
        (work / "session.json").write_text(json.dumps(info, indent=1))
        _session_dir(work, chosen)
        baseline(work)
        return
    dirs = shard_dirs(work, shards)
    for k, d in enumerate(dirs):
        d.mkdir(exist_ok=True)
        if d / "tree" != tree:
            scratch_tree(tree, d / "tree")
        shutil.copy(work / "population.sqlite", d / "population.sqlite")
        (d / "session.json").write_text(json.dumps({**info, "shard": k + 1}, indent=1))
        _session_dir(d, chosen[k::shards])
    (work / "session.json").write_text(json.dumps(info, indent=1))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", RUNNER, "baseline", "--dir", str(d)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for d in dirs
    ]
    if any(p.wait() != 0 for p in procs):
        raise RuntimeError("baseline failed in a shard (see above)")


def shard_dirs(work: Path, shards: int) -> list[Path]:
    """The session folders of a sharded session: ``work/shard-1`` ... ``work/shard-<shards>``."""
    return [work / f"shard-{k}" for k in range(1, shards + 1)]


def _session_dir(work: Path, job_ids: list[str]) -> None:
    """A session folder ``work`` around its scratch tree ``work/tree``: module graph, manifest,
    pristine sources and ``session.sqlite`` holding ``job_ids``."""
    tree = work / "tree"
    graph = module_graph(tree)
    (work / "graph.json").write_text(json.dumps({k: sorted(v) for k, v in graph.items()}))
    _write_session(work, job_ids)
    man = manifest(tree)
    (work / "manifest.json").write_text(json.dumps(man))
    for rel in man:  # the unmutated sources, to repair a tree left mutated by an interruption
        (work / "pristine" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, work / "pristine" / rel)


def repair(work: Path) -> list[str]:
    """Put back the unmutated source of any file of the tree that differs from it (a session
    stopped while a mutant was applied leaves it in place); the files repaired."""
    man = json.loads((work / "manifest.json").read_text())
    fixed = []
    for rel, (sha, mtime) in man.items():
        p = work / "tree" / rel
        if hashlib.sha256(p.read_bytes()).hexdigest() != sha:
            shutil.copyfile(work / "pristine" / rel, p)
            os.utime(p, ns=(mtime, mtime))
            fixed.append(rel)
    return fixed


def _write_session(work: Path, job_ids: list[str]) -> None:
    """``session.sqlite``: the population's database (``population.sqlite`` of ``work``) with only
    ``job_ids``, in that order."""
    shutil.copy(work / "population.sqlite", work / "session.tmp")
    with sqlite3.connect(work / "session.tmp") as db:
        cols = [r[1] for r in db.execute("pragma table_info(work_items)")]
        spec_cols = [r[1] for r in db.execute("pragma table_info(mutation_specs)")]
        items = {r[cols.index("job_id")]: r for r in db.execute("select * from work_items")}
        specs = defaultdict(list)
        for r in db.execute("select * from mutation_specs"):
            specs[r[spec_cols.index("job_id")]].append(r)
        db.execute("delete from mutation_specs")
        db.execute("delete from work_items")
        q1 = ",".join("?" * len(cols))
        q2 = ",".join("?" * len(spec_cols))
        for j in job_ids:
            db.execute(f"insert into work_items values ({q1})", items[j])
            db.executemany(f"insert into mutation_specs values ({q2})", specs[j])
    (work / "session.tmp").replace(work / "session.sqlite")


def baseline(work: Path) -> dict:
    """Every claim at its sweep instance on the unmutated scratch tree (fills the Numba cache the
    mutants outside ``numerics`` reuse); claims not holding here never kill a mutant."""
    tree = work / "tree"
    env = _env(tree, work / "numba_cache")
    print("mutate: baseline (every claim on the unmutated tree)", flush=True)
    out = subprocess.run(
        [sys.executable, "-m", RUNNER, "baseline-run"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"baseline failed: {out.stderr[-2000:]}")
    res = json.loads(lines[-1])
    (work / "baseline.json").write_text(json.dumps(res, indent=1))
    for cid, r in res.items():
        print(f"  {cid}: {r['outcome']} ({r['seconds']:.0f} s)", flush=True)
    return res


def _env(tree: Path, cache: Path) -> dict:
    """The hand catalogue's check environment (:func:`tools.mutation.mutants.environment`) with the
    session folder the mutated tree lives in."""
    env = environment(tree, cache)
    env["FASTSLOW_MUTATE_DIR"] = str(tree.parent)
    return env


def _claim_runs(ids) -> dict:
    """``{id: {outcome, seconds, detail}}`` of each claim at its sweep instance, in this process,
    stopping at the first that does not hold."""
    from fastslow.verify.registry import CLAIMS  # deferred: the Numba cache is chosen first

    out = {}
    for cid in ids:
        t0 = time.perf_counter()
        try:
            v = CLAIMS[cid].check(dict(CLAIMS[cid].sweep_instance))
            outcome = v.outcome
            detail = list(v.failed_parts) + list(v.violated) + list(v.unresolved)
            if v.outcome == "error":
                detail = [str(getattr(v, "error", ""))[:200]]
        except Exception as exc:  # a mutant may break the unit itself
            outcome, detail = "exception", [f"{type(exc).__name__}: {exc}"[:200]]
        out[cid] = {"outcome": outcome, "seconds": time.perf_counter() - t0, "detail": detail}
        print(f"claim {cid}: {outcome} {detail} ({out[cid]['seconds']:.1f} s)", flush=True)
    return out


def names_of(root: Path, rel: str, known: dict[str, str]) -> set[str]:
    """The files of the tree whose names ``rel`` can reach through its import statements (also
    inside functions): for ``import a.b`` and ``from a import b`` the module ``a.b`` if it is a
    file, else ``a``; unlike :func:`imports_of`, without the ``__init__.py`` of the packages on the
    way (importing a package runs them, but a name of ``rel`` cannot refer to their contents
    unless ``rel`` names the package itself)."""

    def longest(name: str) -> str | None:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in known:
                return known[".".join(parts[:i])]
        return None

    out = set()
    for _, imported in imported_names(root, rel):
        out |= {longest(name) for name in imported}
    out.discard(None)
    out.discard(rel)
    return out  # type: ignore[return-value]


def code_graph(root: Path, folder: str = "numerics") -> dict[str, set[str]]:
    """``{file: files it names}`` (:func:`names_of`) over the files of ``folder``."""
    files = python_files(root, (folder,))
    known = {module_name(f): f for f in files}
    return {f: names_of(root, f, known) for f in files}


def stale_sources(graph: dict[str, set[str]], rel: str, root: Path) -> set[str]:
    """The files of ``numerics`` whose cached compiled code may hold ``rel``'s code once it is
    mutated (``graph``: :func:`code_graph`): ``rel``, every file of ``numerics`` naming it directly
    or not, and every file that such a file names, directly or not, when it compiles copies of
    functions with other globals bound (a *binder*: calls ``with_globals``; e.g. the integrators' driver binds each
    method's functions into a copy of ``drive``, cached under the driver's file).

    **Why.** Numba checks a cache entry only against its own file's time stamp and size: a caller
    compiled against a callee of another file (a call, an inlined function, a global array read
    at compile time) keeps the callee's old machine code when only the callee's file changes.
    Compiled code reaches another file's code only through the imports of its file, or through
    globals a binder bound (and a binder reaches only what it imports).

    **Hypothesis.** No cached function of ``numerics`` is specialised on a compiled function passed
    as an argument (the problem's ``rhs``/``jac`` are passed as addresses,
    :mod:`numerics.integrators.numba_binding`), and no ``@overload`` of one file changes the code
    of a file that does not import it (``numerics`` has none)."""
    numerics = {f for f in graph if f.startswith("numerics/")}
    importers = {f for f in numerics if rel in closure(graph, f)} | {rel}
    out = set(importers)
    for f in importers:
        if "with_globals(" in (root / f).read_text():
            out |= closure(graph, f) & numerics
    return out


def cache_entries(cache_dir: Path, root: Path, files) -> list[Path]:
    """Numba's index (``.nbi``) and data (``.nbc``) files under ``cache_dir`` of the functions
    defined in ``files`` (paths relative to ``root``): Numba keeps a file's entries in
    ``<parent folder>_<sha1 of the folder's absolute path>/`` named ``<file stem>.<qualname>-…``
    (``numba.core.caching``, the cache locator used when ``NUMBA_CACHE_DIR`` is set); ``cache_dir``
    is searched at any depth (:mod:`numerics.jit_cache` adds a fingerprint folder)."""
    folders: dict[str, set[str]] = defaultdict(set)
    for rel in files:
        src = os.path.abspath(root / rel)
        sub = os.path.dirname(src)
        key = f"{os.path.basename(sub)}_{hashlib.sha1(sub.encode()).hexdigest()}"
        folders[key].add(Path(rel).stem)
    out = []
    for d in sorted(p for p in cache_dir.rglob("*") if p.is_dir() and p.name in folders):
        stems = folders[d.name]
        for p in sorted(d.iterdir()):
            if p.suffix in (".nbi", ".nbc") and p.name.split(".")[0] in stems:
                out.append(p)
    return out


def warm_start(work: Path, base: Path, rel: str) -> list[Path]:
    """The Numba cache of a mutant of ``numerics``, ``rel``: its directory
    (``<base>/<fingerprint of the mutated package>``, see :mod:`numerics.jit_cache`) starts as
    hard links to the unmutated tree's compiled functions, without the entries of
    :func:`stale_sources` (those recompile from the mutated source; Numba replaces a file it
    rewrites, never writes through a link); the entries removed."""
    spec = importlib.util.spec_from_file_location(
        "_jc", work / "tree" / "numerics" / "jit_cache.py"
    )
    jc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jc)
    mutated = jc.fingerprint(work / "tree" / "numerics")[:16]
    pristine = work / "numba_cache" / json.loads((work / "session.json").read_text())["numba_dir"]
    if not pristine.is_dir():
        return []
    # loading jit_cache above already made the directory and its marker (it configures on import)
    shutil.copytree(
        pristine,
        base / mutated,
        copy_function=os.link,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".fastslow-jit-cache"),
    )
    tree = work / "tree"
    stale = cache_entries(base / mutated, tree, stale_sources(code_graph(tree), rel, tree))
    for p in stale:
        p.unlink()
    return stale


KILL_FAILED = "mutate: the kill command failed before any check ran"
"""What the kill command prints when its own set-up fails (a mutant it did not check: reported
``incompetent``, never counted as killed)."""


def kill() -> int:
    """The kill command (run by cosmic-ray in the scratch tree, one process per mutant): exit 1
    when the mutant is killed, 0 when it survives (module docstring)."""
    work = Path(os.environ.get("FASTSLOW_MUTATE_DIR", Path.cwd().parent))
    tree = work / "tree"
    man = json.loads((work / "manifest.json").read_text())
    mutated = []
    for rel, (sha, mtime) in man.items():
        p = tree / rel
        if hashlib.sha256(p.read_bytes()).hexdigest() != sha:
            mutated.append(rel)
        elif p.stat().st_mtime_ns != mtime:
            os.utime(p, ns=(mtime, mtime))
    if len(mutated) != 1:
        print(f"mutate: expected one mutated file, found {mutated}")
        return 2
    rel = mutated[0]
    tmp = None
    try:
        if rel.startswith("numerics/"):  # jit_cache keys by content: a directory of its own,
            # chosen before anything of fastslow is imported (numerics.jit_cache reads it then)
            tmp = tempfile.mkdtemp(prefix="numba-", dir=work)
            os.environ["NUMBA_CACHE_DIR"] = tmp
            stale = warm_start(work, Path(tmp), rel)
            print(f"numba cache: warm, {len(stale)} entries of {rel} and its dependents removed")
        graph = {k: set(v) for k, v in json.loads((work / "graph.json").read_text()).items()}
        base = json.loads((work / "baseline.json").read_text())
        from fastslow.verify.registry import IDS  # deferred: after the Numba cache is chosen

        ok = [c for c in claims_of(graph, rel, IDS) if base.get(c, {}).get("outcome") == "holds"]
        near = set(claims_of(graph, rel, IDS)[: len(near_claims(graph, rel, IDS))])
        cost = lambda c: (c not in near, base[c]["seconds"])  # direct importers, then cheapest
        claims = sorted(ok, key=cost)
        units = unit_tests(graph, rel)
    except Exception as exc:  # the command's own failure is no kill (mutate_report: incompetent)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{KILL_FAILED} ({type(exc).__name__}: {exc})", flush=True)
        return 3
    print(f"mutated {rel}; unit tests {units}; claims {claims}", flush=True)
    try:
        if units:
            import pytest  # deferred: only a mutant with unit tests needs pytest

            code = pytest.main(
                ["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", *units]
            )
            if code != 0:
                print(f"KILLED by unit tests ({code}): {units}", flush=True)
                return 1
        runs = _claim_runs(claims)
        bad = [c for c, r in runs.items() if r["outcome"] != "holds"]
        if bad:
            print(f"KILLED by claim {bad[0]}: {runs[bad[0]]['outcome']}", flush=True)
            return 1
        print("SURVIVED", flush=True)
        return 0
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"mutate: {time.perf_counter() - STARTED:.1f} s", flush=True)


def status(work: Path) -> str:
    from .mutate_report import results, score  # deferred: imports this module

    if not (work / "session.json").exists():
        return f"no session in {work} (`bash run.sh mutate run` makes one)"
    rows = results(work)
    s = score(rows)["all"]
    return (
        f"{s['run']}/{s['sampled']} mutants run: {s['killed']} killed "
        f"({s['timeout']} by timeout), {s['surviving']} survived"
    )


def session_dirs(work: Path) -> list[Path]:
    """The folders holding a ``session.sqlite`` of the session in ``work``: ``work`` itself, or its
    shards (:func:`shard_dirs`)."""
    if not (work / "session.json").exists():
        return [work]
    info = json.loads((work / "session.json").read_text())
    return shard_dirs(work, info["shards"]) if info.get("shards", 1) > 1 else [work]


def run(work: Path, n: int, seed: int, timeout: float, shards: int = 1) -> int:
    """Set up (once) and execute the pending mutants (one cosmic-ray per shard, side by side),
    printing progress every 30 s."""
    info = (
        json.loads((work / "session.json").read_text()) if (work / "session.json").exists() else {}
    )
    if info and info.get("shards", 1) != shards:
        print(
            f"mutate: the session in {work} has {info.get('shards', 1)} shard(s), not {shards}: "
            f"rerun with --shards {info.get('shards', 1)}, or use another --dir",
            file=sys.stderr,
        )
        return 2
    dirs = session_dirs(work) if info else []
    if not dirs or any(
        not (d / "session.sqlite").exists() or not (d / "baseline.json").exists() for d in dirs
    ):
        setup(work, n, seed, timeout, shards)
        dirs = session_dirs(work)
    for d in dirs:
        for rel in repair(d):
            print(f"mutate: {rel} was left mutated by an interrupted run: restored", flush=True)
    print(f"mutate: {status(work)}; executing (cosmic-ray exec, {len(dirs)} at once)", flush=True)
    exe = Path(os.path.abspath(sys.executable)).with_name("cosmic-ray")
    procs = [
        subprocess.Popen(
            [str(exe), "exec", "cosmic-ray.toml", str(d / "session.sqlite")],
            cwd=d / "tree",
            env=_env(d / "tree", d / "numba_cache"),
        )
        for d in dirs
    ]
    last = ""
    try:
        while any(p.poll() is None for p in procs):
            time.sleep(30)
            now = status(work)
            if now != last:
                print(f"mutate {time.strftime('%H:%M:%S')}: {now}", flush=True)
                last = now
    except KeyboardInterrupt:
        for p in procs:
            p.terminate()
            p.wait()
        print("mutate: interrupted; `bash run.sh mutate` resumes the session", file=sys.stderr)
        return 130
    print(f"mutate: {status(work)}", flush=True)
    return max(p.returncode for p in procs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.mutation.mutate", description=__doc__)
    ap.add_argument(
        "command",
        nargs="?",
        default="run",
        choices=("run", "status", "report", "kill", "baseline", "baseline-run", "rerun"),
    )
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="session folder")
    ap.add_argument("--n", type=int, default=DEFAULT_N, help="mutants sampled")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the sample")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant")
    ap.add_argument(
        "--shards", type=int, default=1, help="sessions run side by side (one per CPU to give)"
    )
    a = ap.parse_args(argv)
    if a.command == "kill":
        return kill()
    if a.command == "baseline":  # a shard's baseline, run by setup in its own process
        baseline(a.dir)
        return 0
    if a.command == "baseline-run":
        from fastslow.verify.registry import CLAIMS, IDS  # deferred: imports every claim unit

        runs = {}
        for cid in IDS:
            if CLAIMS[cid].implemented:
                runs.update(_claim_runs([cid]))
        print(json.dumps(runs), flush=True)
        return 0
    if a.command == "rerun":
        from .mutate_report import rerun_survivors  # deferred: imports this module

        rerun_survivors(a.dir, a.dir.with_name(a.dir.name + "-rerun"))
        return 0
    if a.command == "status":
        print(status(a.dir))
        return 0
    if a.command in ("report", "rerun") and not (a.dir / "session.json").exists():
        print(
            f"mutate: no session in {a.dir} (`bash run.sh mutate run` makes one)", file=sys.stderr
        )
        return 2
    if a.command == "report":
        from .mutate_report import results, score, write_report  # deferred: imports this module

        write_report(a.dir)
        print(json.dumps(score(results(a.dir)), indent=1))
        return 0
    if a.shards < 1:
        print(f"mutate: --shards {a.shards}: expected a positive integer", file=sys.stderr)
        return 2
    return run(a.dir, a.n, a.seed, a.timeout, a.shards)


if __name__ == "__main__":
    sys.exit(main())
