"""Shared pytest configuration for ``tests/`` and ``verify/``.

* Hypothesis profiles: ``ci`` (default: derandomised, ``deadline=None`` because the first call of a
  Numba kernel compiles, 25 examples) and ``thorough`` (500 random examples), chosen with
  ``--thorough`` or ``HYPOTHESIS_PROFILE``.
* ``--thorough`` also switches verify tests to their long sweeps (``request.config.thorough``).
* ``--report-dir DIR`` moves the claim report (default ``verify/report``).
* ``--workers N`` / ``--scheduler ADDR`` / ``--sweep-cache DIR``: where the verify seed and size
  sweeps run (:mod:`verify.sweep`): serially by default, on a local process pool of all CPUs
  under ``--thorough``, on a Dask cluster with ``--scheduler``; cached (resumable) with
  ``--sweep-cache``.
* Threads: BLAS, OpenMP and Numba run ``$FASTSLOW_THREADS`` threads (default 1), set here for this
  process and its workers (:mod:`numerics.threads`), so a plain ``python -m pytest verify`` times
  and computes as ``bash run.sh verify`` does.
* One module name per file: the design packages (``verify/`` …) are collected as plain folders, so
  pytest never imports their ``__init__.py`` as a top-level ``verify`` (which would refuse: a design
  package imports only as ``fastslow.<name>``).
  Test files live in folders without ``__init__.py`` (``tests/``, ``verify/tests/``) and are
  imported by their base names; the code they test is imported as ``fastslow.…`` only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from fastslow import DESIGN_PACKAGES  # imported as fastslow.<name>

settings.register_profile(
    "ci",
    deadline=None,
    max_examples=25,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytest_addoption(parser):
    group = parser.getgroup("fastslow")
    group.addoption(
        "--thorough",
        action="store_true",
        default=False,
        help="run the long sweeps and many Hypothesis examples (opt-in profile)",
    )
    group.addoption(
        "--report-dir",
        default=None,
        help="where pytest verify writes report.json and REPORT.md (default verify/report)",
    )
    group.addoption(
        "--workers",
        type=int,
        default=None,
        help="local processes for the verify sweeps (default 1; all CPUs under --thorough)",
    )
    group.addoption(
        "--scheduler",
        default=None,
        help="run the verify sweeps on the Dask scheduler at this address (fastslow[dask])",
    )
    group.addoption(
        "--sweep-cache",
        default=None,
        help="cache the verify sweep points here, so an interrupted run resumes",
    )


_ROOT = Path(__file__).resolve().parent


def pytest_collect_directory(path, parent):
    """A design package's folder is collected as a plain folder (``pytest.Dir``), not as a
    ``pytest.Package``: a Package would import its ``__init__.py`` under the folder's name
    (``verify``), which refuses that name (it is ``fastslow.verify``)."""
    path = Path(path)
    if path.parent == _ROOT and path.name in DESIGN_PACKAGES:
        return pytest.Dir.from_parent(parent, path=path)
    return None


def pytest_ignore_collect(collection_path, config):
    """The links ``fastslow/<name> -> ../<name>`` are not walked: the design folders are collected
    once, from the root (through a link their test files would get a second module name)."""
    path = Path(collection_path)
    if path.parent == _ROOT / "fastslow" and path.name in DESIGN_PACKAGES and path.is_symlink():
        return True
    return None


def pytest_configure(config):
    from fastslow.numerics import threads  # deferred: importing numerics keys the Numba cache

    try:
        config.threads = threads.pin()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    thorough = config.getoption("--thorough")
    config.thorough = thorough
    settings.load_profile("thorough" if thorough else os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _numba_warm_up():
    """Compile (or load from the cache) the Numba kernels once per session, before any timing."""
    from fastslow.numerics.model.compiled import warm_up

    warm_up()
