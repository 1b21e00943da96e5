"""Installing fastslow adds one top-level name, ``fastslow``, and the installed copy works alone.

The repository keeps the design's top-level folders (``theory/``, ``numerics/``, ``verify/``,
``figures/``); ``pyproject.toml`` installs them as ``fastslow.theory`` … ``fastslow.figures``. So an
install never shadows or overwrites another distribution's ``figures`` or ``theory``, and another
distribution's ``figures`` on the path does not break ours.

The copy is built the way a release is: a source distribution from a copy of the sources, a wheel
from the unpacked source distribution (``pip wheel``), and a regular, non-editable install of that
wheel (``pip install --target``); it is then run with ``python -I`` from an unrelated working
directory, so nothing of the checkout can leak in. What ships is checked on the way: the sdist
carries the tests and what they need (the root ``conftest.py``, ``run.sh``, ``docs/``), the wheel the
package alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from fastslow import DESIGN_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    "pyproject.toml", "README.md", "LICENSE", "CITATION.cff", "MANIFEST.in", "conftest.py",
    "run.sh", "fastslow", *DESIGN_PACKAGES, "tests", "tools", "docs",
]  # fmt: skip
SKIP = shutil.ignore_patterns(
    "__pycache__", "report", "out", "*.egg-info", ".numba_cache", ".hypothesis", "*.pyc"
)


def _package_modules() -> set[str]:
    """The package's files as the wheel must hold them (``fastslow/numerics/lapack.py`` for
    ``numerics/lapack.py``): every ``.py``, ``py.typed`` and ``.json`` of the design folders and of
    ``fastslow/``, without tests (``verify/tests/``) or generated output."""
    out = set()
    for top in ("fastslow", *DESIGN_PACKAGES):
        for path in (ROOT / top).rglob("*"):
            rel = path.relative_to(ROOT)
            if not path.is_file() or {"__pycache__", "tests", "report", "out"} & set(rel.parts):
                continue
            if path.suffix in (".py", ".json") or path.name == "py.typed":
                out.add(str(rel) if top == "fastslow" else f"fastslow/{rel}")
    return out


def _run_ok(args, cwd, what):
    res = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        pytest.fail(f"{what} failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return res


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(sdist, wheel)``: a source distribution of a copy of this checkout's sources, and the
    wheel built from that source distribution alone."""
    base = tmp_path_factory.mktemp("build")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():  # the links fastslow/<name> -> ../<name> stay links, as in a checkout
            shutil.copytree(path, src / name, ignore=SKIP, symlinks=True)
        else:
            shutil.copy2(path, src / name)
    dist = base / "dist"
    code = f"from setuptools import build_meta as b; print(b.build_sdist({str(dist)!r}))"
    res = _run_ok([sys.executable, "-c", code], src, "building the sdist")
    sdist = dist / res.stdout.strip().splitlines()[-1]
    unpacked = base / "unpacked"
    with tarfile.open(sdist) as tar:
        tar.extractall(unpacked, filter="data")
    (top,) = unpacked.iterdir()
    wheels = base / "wheels"
    _run_ok(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(top)],
        base,
        "building the wheel from the sdist",
    )
    (wheel,) = wheels.glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """``(site, workdir)``: the wheel built from the sdist, installed (non-editable) into ``site``."""
    _, wheel = built
    base = tmp_path_factory.mktemp("install")
    site = base / "site"
    _run_ok(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        base,
        "pip install --target of the wheel",
    )  # fmt: skip
    work = base / "work"
    work.mkdir()
    return site, work


def test_the_sdist_carries_the_tests_and_what_they_need(built):
    sdist, _ = built
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needed = {"conftest.py", "run.sh", "pyproject.toml", "MANIFEST.in", "tests/conftest.py",
              "verify/tests/conftest.py", "docs/architecture.md", "docs/claims.md"}  # fmt: skip
    needed |= {str(p.relative_to(ROOT)) for p in (ROOT / "verify" / "tests").glob("test_*.py")}
    needed |= {str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")}
    # the repository's tools that tests import (tools/mutation/)
    needed |= {str(p.relative_to(ROOT)) for p in (ROOT / "tools").rglob("*.py")}
    assert needed <= names, sorted(needed - names)
    assert not any("__pycache__" in n or n.startswith("verify/report/") for n in names)
    # each file once, from its real folder: nothing through the links fastslow/<name>
    assert not any(n.split("/")[:2] in (["fastslow", p] for p in DESIGN_PACKAGES) for n in names)


def test_the_wheel_carries_the_package_alone(built):
    """Every module of the package under ``fastslow/``, its data (``py.typed``, the report schema),
    and no test, conftest, generated file or repository tool."""
    _, wheel = built
    with zipfile.ZipFile(wheel) as z:
        names = {n for n in z.namelist() if not n.startswith("fastslow-0.1.0.dist-info/")}
    assert names == _package_modules(), (
        sorted(names - _package_modules()),
        sorted(_package_modules() - names),
    )
    assert "fastslow/verify/report.schema.json" in names
    assert not any("/tests/" in n or n.endswith("conftest.py") for n in names)
    # the repository's tools (the mutation runner, tools/mutation/) are not the package's
    assert not any(n.startswith("tools/") or "mutat" in n for n in names)


def _run(
    installed,
    *args,
    extra_path=(),
    code="import runpy; runpy.run_module('fastslow', run_name='__main__')",
):
    """``python -I`` in the work directory with ``site`` (after ``extra_path``) first on the path:
    the command line with ``args`` by default, or ``code``."""
    site, work = installed
    # -I ignores PYTHONPATH and the user site; the installed copy and the venv's dependencies only
    paths = [*map(str, extra_path), str(site)]
    code = f"import sys; sys.path[:0] = {paths!r}; {code}"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(work / ".numba"), OPENBLAS_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-I", "-c", code, *args],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_an_install_adds_one_top_level_name(installed):
    site, _ = installed
    names = {p.name for p in site.iterdir() if p.name != "bin"}
    assert names == {"fastslow", "fastslow-0.1.0.dist-info"}
    for sub in DESIGN_PACKAGES:
        path = site / "fastslow" / sub
        assert path.is_dir() and not path.is_symlink() and (path / "__init__.py").exists()
    top_level = (site / "fastslow-0.1.0.dist-info" / "RECORD").read_text().splitlines()
    assert {line.split("/")[0] for line in top_level if line} <= {"fastslow", "fastslow-0.1.0.dist-info", "..", "bin"}  # fmt: skip


def _files(site: Path) -> set[Path]:
    return {p for p in site.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_the_installed_copy_checks_a_claim_outside_any_checkout(installed):
    """A verdict from the installed copy alone; provenance says "not a git checkout"; nothing is
    written into site-packages."""
    site, _ = installed
    before = _files(site)
    res = _run(installed, "check", "D6", "--json")
    assert res.returncode == 0, res.stderr
    verdict = json.loads(res.stdout)
    assert verdict["id"] == "D6" and verdict["verdict"] == "holds"
    res = _run(
        installed, code="from fastslow.verify import provenance; print(provenance.git_state())"
    )
    assert res.returncode == 0 and "not a git checkout" in res.stdout, res.stderr
    assert _files(site) == before


def test_another_distributions_figures_package_does_not_shadow_ours(installed, tmp_path):
    """A top-level ``figures`` (someone else's, failing on import) first on the path:
    ``fastslow figures`` still draws, into the folder it is given."""
    other = tmp_path / "other"
    (other / "figures").mkdir(parents=True)
    (other / "figures" / "__init__.py").write_text("raise ImportError('not fastslow figures')\n")
    out = tmp_path / "figs"
    res = _run(installed, "figures", "D6", "--out", str(out), "--workers", "1", extra_path=[other])
    assert res.returncode == 0, res.stderr
    assert sorted(p.suffix for p in out.iterdir() if p.stem.startswith("d6_")) == [
        ".pdf",
        ".pdf",
        ".png",
        ".png",
    ]
