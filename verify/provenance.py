"""Provenance: package versions, git commit and dirty flag, platform, thread settings (the
variables and the counts in effect: :func:`numerics.threads.effective`).

Every report, figure and benchmark embeds :func:`provenance`. It contains no timestamp, so that a
rerun with the same seeds and the same code reproduces the report's results bit for bit.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy  # noqa: F401  (loads numpy's BLAS so that threadpoolctl sees it)
import scipy.linalg  # noqa: F401  (and SciPy's)
from threadpoolctl import threadpool_info

from fastslow.numerics import threads
from fastslow.numerics.jit_cache import ACTIVE as numba_cache

PACKAGES = (
    "numpy",
    "scipy",
    "sympy",
    "numba",
    "llvmlite",
    "matplotlib",
    "hypothesis",
    "pytest",
    "threadpoolctl",
)
THREAD_VARS = (threads.ENV, *threads.THREAD_VARS)

REPO_ROOT = Path(__file__).resolve().parent.parent


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git(*args: str, cwd: Path = REPO_ROOT) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


@functools.lru_cache(maxsize=1)
def project_root() -> Path | None:
    """The root of this project's own git checkout: the folder holding the package sources, if it
    is the top of a git work tree with this project's ``pyproject.toml``; ``None`` otherwise (an
    installed copy, perhaps inside some other repository, is "not a git checkout")."""
    top = _git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != REPO_ROOT:
        return None
    try:
        meta = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return REPO_ROOT if 'name = "fastslow"' in meta else None


SOURCE_PACKAGES = ("numerics", "theory", "verify", "figures", "fastslow")
"""The packages whose source determines computed results (the sweep cache is keyed by them)."""


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """A SHA-256 (first 16 hex digits) of every ``.py`` file of :data:`SOURCE_PACKAGES`.

    Unlike the git commit it also changes with uncommitted edits, so a sweep cache keyed by it
    never serves results computed by different code. Test modules are included (they are in
    ``verify``), which makes the key conservative, not wrong.
    """

    h = hashlib.sha256()
    for pkg in SOURCE_PACKAGES:
        for f in sorted((REPO_ROOT / pkg).rglob("*.py")):
            h.update(str(f.relative_to(REPO_ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def blas_state() -> dict:
    """The BLAS/LAPACK libraries numpy and scipy use: library, version, the CPU kernel in use
    (OpenBLAS' ``architecture``: ``Haswell``, ``SkylakeX``, ...), threads, and every ``OPENBLAS_*``
    environment variable (``OPENBLAS_CORETYPE`` forces the kernel). Results that rest on LAPACK
    may differ in rounding between kernels; verdicts must not."""

    libs = [
        {
            k: info.get(k)
            for k in (
                "internal_api",
                "prefix",
                "version",
                "architecture",
                "threading_layer",
                "num_threads",
            )
        }
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]
    libs.sort(key=lambda b: (str(b["prefix"]), str(b["version"])))  # load order varies
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("OPENBLAS_")}
    summary = (
        ", ".join(f"{b['internal_api']} {b['version']} ({b['architecture']} kernel)" for b in libs)
        or "unknown"
    )
    return {"libraries": libs, "openblas_env": env, "summary": summary}


@functools.lru_cache(maxsize=1)
def git_state() -> dict:
    """``{"commit": sha or None, "dirty": bool or None}`` of this project's checkout
    (:func:`project_root`); outside one, both are ``None`` and ``"note"`` says "not a git
    checkout" (never the commit of some other repository around an installed copy)."""
    if project_root() is None:
        return {"commit": None, "dirty": None, "note": "not a git checkout"}
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def provenance(seeds: dict | None = None, params: dict | None = None) -> dict:
    """The provenance record: versions, git state, platform, thread settings, and the given seeds/params."""

    rec = {
        "fastslow": _version("fastslow"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": {name: _version(name) for name in PACKAGES},
        "git": git_state(),
        "source_fingerprint": source_fingerprint(),
        "numba_cache": numba_cache["fingerprint"],
        "threads": {k: os.environ.get(k) for k in THREAD_VARS},
        "threads_effective": threads.effective(),
        "blas": blas_state(),
    }
    if seeds is not None:
        rec["seeds"] = seeds
    if params is not None:
        rec["params"] = params
    return rec


def short(rec: dict | None = None) -> str:
    """A one-line summary for figure metadata and console output."""
    rec = rec or provenance()
    git = rec["git"]
    commit = (git["commit"] or git.get("note") or "unknown")[:20] + (
        "+dirty" if git["dirty"] else ""
    )
    pk = rec["packages"]
    return (
        f"fastslow {rec['fastslow']} @ {commit}; python {rec['python']}; numpy {pk['numpy']}; "
        f"scipy {pk['scipy']}; sympy {pk['sympy']}; numba {pk['numba']}; "
        f"BLAS {rec['blas']['summary']}"
    )
