"""The repository's layout works however the project is run, with no symbolic link.

The design's top-level folders (``theory/``, ``numerics/``, ``verify/``, ``figures/``) are the real
sources, imported as ``fastslow.<name>`` (``fastslow/__init__.py`` extends its ``__path__`` by the
checkout's root in a source checkout; a wheel holds them inside ``fastslow/``). These tests check
the three ways a layout goes wrong: a committed link (a text file on a clone without symlinks), a
file imported under two module names (the double-import hazard), and a clone that imports another
tree's code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN_PACKAGES = ("theory", "numerics", "verify", "figures")
IN_GIT = (ROOT / ".git").exists() and shutil.which("git") is not None
needs_git = pytest.mark.skipif(not IN_GIT, reason="not a git checkout")


def _git(*args, cwd=ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120
    ).stdout


def _tracked_py() -> set[str]:
    return {f for f in _git("ls-files", "*.py").splitlines() if f}


@needs_git
def test_the_repository_holds_no_symbolic_link():
    """Git mode 120000 is a link; on a clone with ``core.symlinks=false`` it becomes a text file."""
    links = [line.split("\t")[1] for line in _git("ls-files", "-s").splitlines() if line.startswith("120000")]  # fmt: skip
    assert links == []


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
    assert sys.modules["fastslow.numerics"].__file__ == str(ROOT / "numerics" / "__init__.py")


@needs_git
def test_a_clone_without_symbolic_links_runs_its_own_code(tmp_path):
    """``git clone -c core.symlinks=false`` (Git's default on Windows) of the committed tree: run
    from the clone, ``fastslow.numerics`` and ``fastslow.verify`` are the clone's folders, even with
    this checkout's editable install in the environment, and a claim checks."""
    clone = tmp_path / "clone"
    _git("clone", "--quiet", "-c", "core.symlinks=false", str(ROOT), str(clone), cwd=tmp_path)
    code = (
        "import json, fastslow, fastslow.numerics.lapack as lapack, "
        "fastslow.verify.claim as claim, fastslow.figures as figures, "
        "fastslow.theory.markov as markov; "
        "print(json.dumps([m.__file__ for m in (fastslow, lapack, claim, figures, markov)]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / ".numba")
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=clone,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    files = [Path(f) for f in json.loads(res.stdout)]
    assert all(f.resolve().is_relative_to(clone.resolve()) for f in files), files
    res = subprocess.run(
        [sys.executable, "-m", "fastslow", "check", "D3", "--json"],
        cwd=clone, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-1000:] + res.stderr[-2000:]
    assert json.loads(res.stdout)["verdict"] == "holds"


def test_test_files_have_unique_base_names():
    """Test folders have no ``__init__.py``: pytest imports each test file by its base name, so two
    files of the same name in ``tests/`` and ``verify/tests/`` would collide."""
    names = [p.name for d in ("tests", "verify/tests") for p in (ROOT / d).glob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
