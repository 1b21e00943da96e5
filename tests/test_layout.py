"""The repository's layout: the design folders are the real sources, and each file has one name.

The design's top-level folders (``fastslow.DESIGN_PACKAGES``: ``theory/``, ``numerics/``,
``verify/``, ``figures/``) are the real sources; ``fastslow/<name>`` is a committed relative link to
each, so a checkout has the layout of an installed copy (a wheel holds them inside ``fastslow/``)
and static tools (mypy, pyright) see ``fastslow.numerics``. Each design package refuses any name
but ``fastslow.<name>``. These tests check the ways the layout goes wrong: a link missing, extra or
pointing elsewhere; a file imported, or importable, under two module names; a folder of the
checkout other than the design packages reachable as ``fastslow.<name>``; a clone without
symbolic links (``core.symlinks=false``) that imports another tree's code or keys its caches
differently; a ``fastslow.*`` import that a static tool cannot resolve to a file; copies of the
list of design packages that disagree with it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from fastslow import DESIGN_PACKAGES
from fastslow.verify import line_coverage, provenance
from tools.mutation import mutate

ROOT = Path(__file__).resolve().parent.parent
IN_GIT = (ROOT / ".git").exists() and shutil.which("git") is not None
needs_git = pytest.mark.skipif(not IN_GIT, reason="not a git checkout")


def _git(*args, cwd=ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120
    ).stdout


def _tracked_py() -> set[str]:
    return {f for f in _git("ls-files", "*.py").splitlines() if f}


def _links_checked_out() -> bool:
    """Whether this checkout has its links as links (not a clone with ``core.symlinks=false``)."""
    return all((ROOT / "fastslow" / name).is_symlink() for name in DESIGN_PACKAGES)


def _package_modules(root: Path = ROOT) -> set[str]:
    """The module names a wheel holds: ``fastslow.<path>`` for every tracked ``.py`` of
    ``fastslow/`` and of the design folders, without the tests (``verify/tests/``)."""
    files = _git("ls-files", "*.py", cwd=root).splitlines()
    out = set()
    for f in files:
        parts = Path(f).with_suffix("").parts
        if parts[0] not in ("fastslow", *DESIGN_PACKAGES) or "tests" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.add(".".join(parts) if parts[0] == "fastslow" else ".".join(("fastslow", *parts)))
    return out


# ----------------------------------------------------------------------------- the links


@needs_git
def test_the_only_links_are_fastslow_s_to_the_design_folders():
    """Git mode 120000 is a link: exactly ``fastslow/<name> -> ../<name>`` for each design package
    (relative, so a clone anywhere works), and, checked out, each reaches the real folder."""
    links = {}
    for line in _git("ls-files", "-s").splitlines():
        meta, path = line.split("\t")
        mode, sha, _ = meta.split()
        if mode == "120000":
            links[path] = _git("cat-file", "-p", sha)
    assert links == {f"fastslow/{name}": f"../{name}" for name in DESIGN_PACKAGES}
    if _links_checked_out():
        for name in DESIGN_PACKAGES:
            assert (ROOT / "fastslow" / name).resolve() == ROOT / name


# ----------------------------------------------------------------------------- one name per file

PROBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    def pytest_collection_finish(session):
        root = Path(session.config.rootpath).resolve()
        names = {}
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if f:
                path = Path(f).resolve()
                if path.is_relative_to(root):
                    names.setdefault(str(path.relative_to(root)), []).append(name)
        with open(__import__("os").environ["PROBE_OUT"], "w") as out:
            json.dump(names, out)
    """
)


def _modules_after_collection(tmp_path, *args) -> dict[str, list[str]]:
    """``{repository file: module names}`` of every module imported by a pytest collection of
    ``args`` from the repository's root (``--collect-only`` imports every test module and conftest
    and everything they import)."""
    (tmp_path / "layout_probe.py").write_text(PROBE)
    out = tmp_path / "modules.json"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PROBE_OUT=str(out))
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "layout_probe",
         "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(out.read_text())


def _imported_twice(modules: dict[str, list[str]], tracked: set[str]) -> dict:
    return {f: sorted(n) for f, n in modules.items() if f in tracked and len(n) > 1}


@needs_git
def test_pytest_imports_each_source_file_under_one_module_name(tmp_path):
    """``pytest tests verify`` from the root: no file of the repository is imported twice (as
    ``verify.x`` and ``fastslow.verify.x``), and no design folder becomes a top-level module."""
    modules = _modules_after_collection(tmp_path, "tests", "verify")
    tracked = _tracked_py()
    assert _imported_twice(modules, tracked) == {}
    top = {n.split(".")[0] for names in modules.values() for n in names}
    assert top.isdisjoint(DESIGN_PACKAGES), sorted(top & set(DESIGN_PACKAGES))
    # non-vacuity: the claim tests and the claim units were imported, the latter as fastslow.verify
    assert "verify/tests/test_a1_causality.py" in modules
    assert modules["verify/checks/a1.py"] == ["fastslow.verify.checks.a1"]


def test_the_double_import_check_sees_a_file_imported_twice():
    """Non-vacuity of the check above, on the shape a double import has."""
    modules = {"verify/claim.py": ["verify.claim", "fastslow.verify.claim"], "a.py": ["a"]}
    assert _imported_twice(modules, {"verify/claim.py", "a.py"}) == {
        "verify/claim.py": ["fastslow.verify.claim", "verify.claim"]
    }


def test_this_session_imports_each_source_file_under_one_module_name():
    """The same, in this very process, for whatever this session has imported so far."""
    seen: dict[str, list[str]] = {}
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and Path(f).resolve().is_relative_to(ROOT):
            rel = Path(f).resolve().relative_to(ROOT)
            if rel.parts[0] != ".venv":
                seen.setdefault(str(rel), []).append(name)
    assert {f: n for f, n in seen.items() if len(n) > 1} == {}
    assert Path(sys.modules["fastslow.numerics"].__file__).resolve() == ROOT / "numerics" / "__init__.py"  # fmt: skip


NAMES = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    from pathlib import Path

    import fastslow

    errors, walked = [], []
    if sys.argv[2] == "walk":
        walked = [m.name for m in pkgutil.walk_packages(fastslow.__path__, "fastslow.", errors.append)]
    for name in walked:  # every module, not only the packages walk_packages imports
        try:
            importlib.import_module(name)
        except Exception as exc:
            errors.append(f"{name}: {exc!r}")
    outcome = {}
    for name in json.loads(sys.argv[1]):
        try:
            importlib.import_module(name)
            outcome[name] = "imported"
        except ImportError as exc:
            outcome[name] = f"ImportError: {exc}"
    files, root = {}, Path.cwd().resolve()
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        rel = Path(f).resolve().relative_to(root) if f and Path(f).resolve().is_relative_to(root) else None
        if rel is not None and rel.parts[0] != ".venv" and name != "__main__":
            files.setdefault(str(rel), []).append(name)
    print(json.dumps({"walked": walked, "errors": errors, "outcome": outcome,
                      "twice": {f: n for f, n in files.items() if len(n) > 1}}))
    """
)

NOT_FASTSLOW = (
    "fastslow.tests",
    "fastslow.docs",
    "fastslow.conftest",
    "fastslow.fastslow",
    "fastslow.tools",
)
"""Folders and files of the checkout that are not part of the package."""


def _names_from(root: Path, tries: list[str], walk: bool = True) -> dict:
    """Run from ``root`` (the checkout's root first on ``sys.path``, as for ``python -c`` there):
    with ``walk``, every module ``pkgutil.walk_packages`` finds under ``fastslow`` (each then
    imported); the outcome of importing each name of ``tries`` in order, and the files imported
    under two names."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run(
        [sys.executable, "-c", NAMES, json.dumps(tries), "walk" if walk else "no"],
        cwd=root, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def _bare_names(modules: set[str]) -> list[str]:
    """The names the design packages' modules would have with the checkout's root on the path
    (``numerics.lapack`` for ``fastslow.numerics.lapack``)."""
    parts = [m.split(".") for m in modules]
    return sorted(".".join(p[1:]) for p in parts if len(p) > 1 and p[1] in DESIGN_PACKAGES)


@needs_git
def test_from_the_root_fastslow_holds_exactly_the_wheel_s_modules_each_under_one_name():
    """From the checkout's root, where ``import numerics`` would find the folder: ``pkgutil``
    walks exactly the modules a wheel holds (the design packages and fastslow's own; no
    ``fastslow.tests``, no ``fastslow.fastslow.fastslow…``), each imports, every module of
    a design package refuses its bare name (the message names the right one), the checkout's other
    folders are not ``fastslow.<name>``, and no file ends up under two names."""
    modules = _package_modules()
    bare = _bare_names(modules)
    got = _names_from(ROOT, [*bare, *NOT_FASTSLOW])
    assert got["errors"] == []
    assert set(got["walked"]) == modules - {"fastslow"}
    assert len(got["walked"]) == len(set(got["walked"]))
    for name in bare:
        top = name.split(".")[0]
        assert got["outcome"][name] == (
            f"ImportError: import fastslow.{top}, not {top}: "
            "the design folders are subpackages of fastslow"
        ), name
    assert {n: got["outcome"][n] for n in NOT_FASTSLOW} == {
        n: f"ImportError: No module named '{n}'" for n in NOT_FASTSLOW
    }
    assert got["twice"] == {}
    # non-vacuity: every design package and its deepest modules are among them
    assert {"fastslow.numerics.model.layer", "fastslow.verify.checks.a1", "fastslow.theory"} <= modules  # fmt: skip
    assert "numerics.model.layer" in bare


def test_the_bare_names_are_those_of_the_design_packages_modules():
    assert _bare_names(
        {"fastslow", "fastslow.cli", "fastslow.numerics", "fastslow.verify.claim"}
    ) == [
        "numerics",
        "verify.claim",
    ]


def _folder_module_names(tracked: set[str]) -> list[str]:
    """The ``fastslow.…`` names of the tracked files of the design folders that lie in a folder
    without ``__init__.py`` (``fastslow.verify.tests.test_a1_causality``): names Python would give
    them as a namespace package's modules."""
    out = []
    for f in sorted(tracked):
        parts = Path(f).with_suffix("").parts
        if parts[0] in DESIGN_PACKAGES and not all(
            (ROOT.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts))
        ):
            out.append(".".join(("fastslow", *parts)))
    return out


@needs_git
def test_no_file_of_a_folder_without_init_imports_under_fastslow():
    """The claim tests (``verify/tests/``, no ``__init__.py``: ``pytest verify`` imports them by
    their base names) are not also ``fastslow.verify.tests.test_…``: importing any such name, or
    the folder, is a ModuleNotFoundError naming the folder, also for a static-style import from
    the root (:class:`fastslow._NoFolderPackages`)."""
    names = _folder_module_names(_tracked_py())
    assert "fastslow.verify.tests.test_a1_causality" in names  # non-vacuity: the claim tests
    tries = ["fastslow.verify.tests", *names]
    got = _names_from(ROOT, tries, walk=False)
    for name in tries:
        assert got["outcome"][name].startswith(
            "ImportError: No module named 'fastslow.verify.tests': "
        ), (name, got["outcome"][name])
        assert "verify/tests has no __init__.py" in got["outcome"][name]
    assert got["twice"] == {}


def test_the_folder_guard_refuses_exactly_folders_without_init(tmp_path):
    """:class:`fastslow._NoFolderPackages` on a planted tree: a folder without ``__init__.py``
    is refused, a package with one and a plain module are left to Python's own finders, and
    names outside ``fastslow`` are not its business."""
    import fastslow

    (tmp_path / "stray").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "mod.py").write_text("")
    guard = fastslow._NoFolderPackages()
    with pytest.raises(ModuleNotFoundError, match="stray has no __init__.py"):
        guard.find_spec("fastslow.stray", [str(tmp_path)])
    assert guard.find_spec("fastslow.pkg", [str(tmp_path)]) is None
    assert guard.find_spec("fastslow.mod", [str(tmp_path)]) is None
    assert guard.find_spec("other.stray", [str(tmp_path)]) is None
    assert sum(type(f).__name__ == "_NoFolderPackages" for f in sys.meta_path) == 1


# ----------------------------------------------------------------------------- without links

CACHE_KEYS = textwrap.dedent(
    """
    import json
    import fastslow, fastslow.numerics.lapack as lapack, fastslow.verify.claim as claim
    import fastslow.figures as figures, fastslow.theory.markov as markov
    from fastslow.numerics import jit_cache
    from fastslow.numerics.lm import train
    from fastslow.verify import provenance
    print(json.dumps({
        "files": [m.__file__ for m in (fastslow, lapack, claim, figures, markov)],
        "numba_fingerprint": jit_cache.fingerprint(),
        "numba_active": jit_cache.ACTIVE["fingerprint"],
        "lm_code_version": train.code_version(),
        "sweep_source": provenance.source_fingerprint(),
    }))
    """
)


def _clone(tmp_path: Path, name: str, symlinks: bool) -> Path:
    clone = tmp_path / name
    flag = "core.symlinks=" + ("true" if symlinks else "false")
    _git("clone", "--quiet", "-c", flag, str(ROOT), str(clone), cwd=tmp_path)
    return clone


def _run_in(clone: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / ".numba")
    return subprocess.run(
        [sys.executable, *args], cwd=clone, capture_output=True, text=True, env=env, timeout=600
    )


@needs_git
def test_a_clone_without_symbolic_links_runs_its_own_code_under_the_same_names(tmp_path):
    """``git clone -c core.symlinks=false`` (Git's default on Windows: each link becomes a small
    text file) of the committed tree: run from the clone, ``fastslow.numerics`` and the others are
    the clone's folders, even with this checkout's editable install in the environment; the bare
    names still refuse; ``fastslow`` reaches no other folder; a claim checks. The cache keys (the
    Numba cache's fingerprint, the language-model runs' code version, the sweep cache's source
    fingerprint) are those of a clone with links: they hash the files' contents and their paths
    inside the package, never the path a module was imported through."""
    plain = _clone(tmp_path, "plain", symlinks=False)
    assert (plain / "fastslow" / "numerics").is_file()  # the precondition: a link as a text file
    assert (plain / "fastslow" / "numerics").read_text() == "../numerics"
    linked = _clone(tmp_path, "linked", symlinks=True)
    assert (linked / "fastslow" / "numerics").is_symlink()
    keys = {}
    for clone in (plain, linked):
        res = _run_in(clone, tmp_path, "-c", CACHE_KEYS)
        assert res.returncode == 0, res.stderr
        keys[clone.name] = json.loads(res.stdout)
        files = [Path(f) for f in keys[clone.name].pop("files")]
        assert all(f.resolve().is_relative_to(clone.resolve()) for f in files), files
        assert keys[clone.name]["numba_active"] == keys[clone.name]["numba_fingerprint"][:16]
    assert keys["plain"] == keys["linked"]
    first = ["fastslow.numerics.lapack", "fastslow.verify.claim", "fastslow.theory", "fastslow.figures"]  # fmt: skip
    got = _names_from(plain, [*first, "numerics", "verify.claim", *NOT_FASTSLOW], walk=False)
    assert all(got["outcome"][n] == "imported" for n in first), got["outcome"]
    assert got["outcome"]["numerics"].startswith(
        "ImportError: import fastslow.numerics, not numerics"
    )
    assert got["outcome"]["verify.claim"].startswith(
        "ImportError: import fastslow.verify, not verify"
    )
    assert all(got["outcome"][n].startswith("ImportError: No module named") for n in NOT_FASTSLOW)
    assert got["twice"] == {}
    res = _run_in(plain, tmp_path, "-m", "fastslow", "check", "D3", "--json")
    assert res.returncode == 0, res.stdout[-1000:] + res.stderr[-2000:]
    assert json.loads(res.stdout)["verdict"] == "holds"


# ----------------------------------------------------------------------------- static tools


def _fastslow_imports(path: Path):
    """``(line, module)`` of every absolute import of a ``fastslow.*`` module in ``path`` (for
    ``from M import n``: M, and M.n when that names a module)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fastslow":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "fastslow":
                yield node.lineno, node.module
                for alias in node.names:
                    if _static_file(f"{node.module}.{alias.name}") is not None:
                        yield node.lineno, f"{node.module}.{alias.name}"


def _static_file(module: str, root: Path = ROOT) -> Path | None:
    """Where a static tool (mypy, pyright: a search of the source tree from the root, no code run)
    finds ``module``: ``<root>/a/b.py`` or ``<root>/a/b/__init__.py`` for ``a.b``; ``None`` when
    it finds nothing."""
    base = root.joinpath(*module.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


@needs_git
def test_every_fastslow_import_resolves_to_a_file_the_way_static_tools_search():
    """Every ``fastslow.*`` import of the five packages, their tests, ``tests/``, ``tools/`` and
    the root conftest resolves by a plain search of the tree from the root (how mypy and pyright
    resolve imports: ``bash run.sh typecheck`` runs both), through the links, to the real file."""
    if not _links_checked_out():
        pytest.skip("this checkout has no symbolic links (core.symlinks=false): static tools do "
                    "not see the design packages here (docs/architecture.md)")  # fmt: skip
    unresolved, resolved = [], 0
    for f in sorted(_tracked_py()):
        if f.split("/")[0] not in ("fastslow", *DESIGN_PACKAGES, "tests", "tools", "conftest.py"):
            continue
        for line, module in _fastslow_imports(ROOT / f):
            target = _static_file(module)
            if target is None:
                unresolved.append(f"{f}:{line} {module}")
                continue
            resolved += 1
            parts = module.split(".")
            if len(parts) > 1 and parts[1] in DESIGN_PACKAGES:  # through the link, to the folder
                assert target.resolve().is_relative_to(ROOT / parts[1]), (module, target)
    assert unresolved == []
    assert resolved > 1000  # non-vacuity: the suite imports fastslow.* thousands of times
    assert _static_file("fastslow.numerics.not_a_module") is None
    assert _static_file("fastslow.tests") is None and _static_file("fastslow.conftest") is None


# ----------------------------------------------------------------------------- one list


def _literal_name_lists(path: Path):
    """``(line, names)`` of every tuple, list or set of strings, or dict keyed by strings, in
    ``path`` that names every design package: a copy of the list. (A copy that misses one is a
    subset, like the folders mutated: the holders of copies are checked as a whole below, so a
    known copy gone stale shows as a holder missing.)"""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            names = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]  # fmt: skip
            if set(DESIGN_PACKAGES) <= set(names):
                yield node.lineno, names


def test_the_design_package_lists_agree():
    """``fastslow.DESIGN_PACKAGES`` is the one list: Python reads it (``conftest.py``, the tests);
    the copies that cannot (pyproject.toml's ``package-dir``, ``packages``, coverage's ``source``
    and pyright's ``include``; the tables of ``verify/`` below ``fastslow`` in the layers) name
    the same packages; ``run.sh``, ``MANIFEST.in`` and ``.ci/run`` name none (they need no list);
    no other Python file holds a literal copy."""
    home = set(DESIGN_PACKAGES)
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert tool["setuptools"]["package-dir"] == {f"fastslow.{n}": n for n in DESIGN_PACKAGES}
    listed = tool["setuptools"]["packages"]
    assert {p.split(".")[1] for p in listed if p.count(".") >= 1} - {"benchmarks"} == home
    assert set(tool["coverage"]["run"]["source"]) == {"fastslow", *home}
    include = tool["pyright"]["include"]
    assert {p.split("/")[1] for p in include if p.startswith("fastslow/")} == home
    assert set(line_coverage.PACKAGES) == {"fastslow", *home}
    assert set(provenance.SOURCE_PACKAGES) == {"fastslow", *home}
    assert set(mutate.SCANNED) == {"fastslow", "tests", *home}
    assert set(mutate.PACKAGES) < home  # the folders mutated: figures/ deliberately not
    words = re.compile(r"\b(" + "|".join(DESIGN_PACKAGES) + r")\b")
    for f in ("run.sh", "MANIFEST.in", ".ci/run"):
        for n, line in enumerate((ROOT / f).read_text().splitlines(), 1):
            assert len(set(words.findall(line))) < 3, f"{f}:{n} lists the design packages: {line}"
    holders = {f for f in _tracked_py() if list(_literal_name_lists(ROOT / f))}
    assert holders == {
        "fastslow/__init__.py",  # the home
        "verify/line_coverage.py",  # checked above
        "verify/provenance.py",
        "tools/mutation/mutate.py",
        "tests/test_architecture.py",  # LAYERS: each package's layer
    }


def test_the_list_check_sees_a_copy(tmp_path):
    """Non-vacuity: a literal copy (here with one more name) is found, a subset is not."""
    probe = tmp_path / "probe.py"
    probe.write_text(f"A = {DESIGN_PACKAGES[:3]!r}\nB = {[*DESIGN_PACKAGES, 'x']!r}\n")
    assert list(_literal_name_lists(probe)) == [(2, [*DESIGN_PACKAGES, "x"])]


def test_test_files_have_unique_base_names():
    """Test folders have no ``__init__.py``: pytest imports each test file by its base name, so two
    files of the same name in ``tests/`` and ``verify/tests/`` would collide."""
    names = [p.name for d in ("tests", "verify/tests") for p in (ROOT / d).glob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


@needs_git
def test_a_design_package_refuses_any_name_but_its_own(tmp_path):
    """Not only the bare name: reached through a folder that links to the checkout
    (``aaa.theory``, a name that sorts before ``fastslow.theory``, and ``zzz.theory`` after it),
    each design package refuses, naming the one name it has."""
    for alias in ("aaa", "zzz"):
        (tmp_path / alias).symlink_to(ROOT, target_is_directory=True)
    names = [f"{alias}.{pkg}" for alias in ("aaa", "zzz") for pkg in DESIGN_PACKAGES]
    code = (
        "import importlib, json, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "out = {}\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        importlib.import_module(name); out[name] = 'imported'\n"
        "    except ImportError as exc:\n"
        "        out[name] = str(exc)\n"
        "print(json.dumps(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run(
        [sys.executable, "-c", code, json.dumps(names)],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    for name in names:
        pkg = name.split(".")[1]
        assert got[name] == (
            f"import fastslow.{pkg}, not {name}: the design folders are subpackages of fastslow"
        ), (name, got[name])
