"""Thread counts of BLAS, OpenMP and Numba: set by fastslow itself, with one override.

**Statement.** After :func:`pin`, every BLAS or OpenMP library loaded in this process (NumPy's and
SciPy's OpenBLAS, MKL, ...) runs :func:`requested` threads, Numba's threading layer too (when
Numba is imported), and the variables of :data:`THREAD_VARS` hold that count, so that child
processes (sweep pool workers, pytest-xdist workers, benchmark subprocesses) load their libraries
with it. The count is 1 unless ``FASTSLOW_THREADS`` (:data:`ENV`) says otherwise: that variable is
the one override; ``OPENBLAS_NUM_THREADS`` and the like set by hand are overwritten by it.

**Who calls it.** The command line (``fastslow ...``, before its heavy imports), the pytest
configuration of ``tests/`` and ``verify/`` (the root ``conftest.py``) and ``fastslow bench``: a plain
``python -m pytest verify`` therefore times and computes as ``bash run.sh verify`` does.

**Why.** E1's cost part and the benchmarks compare CPU times (``time.process_time``), which add up
every thread of the process. With OpenBLAS' default of one thread per core, its threads spin
while they wait for work, so a model of larger matrices (the coupled one) was charged up to 7× the
dense one's CPU time on a loaded 2-core machine, and short training ran about 30× slower. The
thread count also changes results in the last digits (reductions split differently, about
1e-15), so the caches of computed results key by it (:func:`blas_threads`).

**How.** The environment variables are set first (they take effect for a library loaded later,
which is the only way to limit OpenBLAS before its first call); a library already loaded is
limited at run time with :func:`threadpoolctl.threadpool_limits`; Numba by
:func:`numba.set_num_threads` (at most the pool it started with). Nothing here imports NumPy or
Numba: a library that is not loaded yet picks the count up from the environment.

**Caveats.** A count above the machine's cores is accepted (it only makes timings worse);
``FASTSLOW_THREADS`` must be a positive integer, anything else is a :class:`ValueError` naming it.
"""

from __future__ import annotations

import os
import sys

ENV = "FASTSLOW_THREADS"
"""The one override of the thread count (a positive integer; default 1)."""

THREAD_VARS = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
"""The variables through which libraries loaded later (here or in a child process) read it."""

DEFAULT = 1


def requested() -> int:
    """The thread count asked for: ``$FASTSLOW_THREADS`` or :data:`DEFAULT` (1)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(f"{ENV} must be a positive integer (the thread count), got {text!r}")
    return int(text)


def pin(n: int | None = None) -> dict:
    """Limit BLAS, OpenMP and Numba to ``n`` threads (default :func:`requested`) in this process
    and in the children it starts; return :func:`effective`."""
    n = requested() if n is None else int(n)
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    if "numpy" in sys.modules or "scipy" in sys.modules:  # loaded already: limit at run time
        from threadpoolctl import threadpool_limits  # deferred: only once NumPy is loaded

        threadpool_limits(limits=n)
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    return effective()


def _counts(api: str) -> list[int]:
    from threadpoolctl import threadpool_info  # deferred: the command line's start-up

    return [int(i.get("num_threads") or 1) for i in threadpool_info() if i["user_api"] == api]


def blas_threads() -> int:
    """The largest thread count among the BLAS libraries loaded in this process (what a result
    computed now depends on); 1 when none is loaded."""
    return max(_counts("blas"), default=1)


def _env_count(var: str) -> int | None:
    text = os.environ.get(var, "")
    return int(text) if text.isdigit() else None


def effective() -> dict:
    """The thread counts in effect: the request, the largest of the loaded BLAS and OpenMP
    libraries and Numba's. A library not loaded in this process reports the count its variable
    (which :func:`pin` sets) gives it when it loads, so that the record is the same whichever
    tests or commands this process happened to run (``None`` when neither says)."""
    numba = sys.modules.get("numba")
    return {
        "requested": requested(),
        "blas": max(_counts("blas"), default=_env_count("OPENBLAS_NUM_THREADS")),
        "openmp": max(_counts("openmp"), default=_env_count("OMP_NUM_THREADS")),
        "numba": (
            numba.get_num_threads() if numba is not None else _env_count("NUMBA_NUM_THREADS")
        ),
    }
