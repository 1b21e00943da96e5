"""Installing fastslow adds one top-level name, ``fastslow``, and the installed copy works alone.

The repository keeps the design's top-level folders (``theory/``, ``numerics/``, ``verify/``,
``figures/``); ``pyproject.toml`` installs them as ``fastslow.theory`` … ``fastslow.figures``. So an
install never shadows or overwrites another distribution's ``figures`` or ``theory``, and another
distribution's ``figures`` on the path does not break ours. The copy is built with ``pip install
--target`` (a regular, non-editable install) from a copy of the sources, then run with ``python -I``
from an unrelated working directory, so nothing of the checkout can leak in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["pyproject.toml", "README.md", "LICENSE", "fastslow", "theory", "numerics", "verify", "figures"]  # fmt: skip


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(site, workdir)``: a non-editable install of this checkout's sources into ``site``."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "report", "out", "*.egg-info")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, symlinks=True, ignore=skip)
        else:
            shutil.copy2(path, src / name)
    site = base / "site"
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    if res.returncode != 0:
        pytest.fail(f"pip install --target failed:\n{res.stderr[-2000:]}")
    work = base / "work"
    work.mkdir()
    return site, work


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
    for sub in ("theory", "numerics", "verify", "figures"):
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
