"""Times a user feels: the first ``fastslow check F1`` after installing, and the same run again.

Unlike the other sections these are absolute CPU and wall times of whole commands, each in a fresh
process: ``fastslow check F1`` with an empty Numba cache (a fresh ``NUMBA_CACHE_DIR``, as right
after ``pip install``: every compiled function the instance needs is compiled), then again with
the cache that run filled. CPU time is the child's user + system time
(:func:`resource.getrusage` of ``RUSAGE_CHILDREN``), which a machine shared with other jobs
inflates less than wall time; both are reported. Targets (issue #30): cold ≤ 30 s CPU on a
2-core machine; warm no slower than before.

Not run here (minutes each; the commands are in ``docs/benchmarks.md``, "Times a user feels"):
``bash run.sh test`` from a fresh clone and ``bash run.sh figures``.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from fastslow.benchmarks import section

COMMAND = ("check", "F1")
"""The command timed: ``fastslow check F1`` with its default parameters."""


def timed_command(args: tuple[str, ...], cache_dir: str) -> tuple[float, float, int]:
    """``(CPU seconds, wall seconds, exit code)`` of ``python -m fastslow *args`` in a fresh
    process with ``NUMBA_CACHE_DIR=cache_dir`` (the CPU time of that child alone: the difference
    of ``RUSAGE_CHILDREN`` around it, one child at a time)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env.pop("FASTSLOW_NUMBA_CACHE_BASE", None)  # the child fingerprints its sources under cache_dir
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "fastslow", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.returncode


@section("user_times")
def user_times(quick: bool) -> dict:
    """Cold (empty Numba cache) and warm ``fastslow check F1``: CPU and wall seconds."""
    rows = []
    cache = tempfile.mkdtemp(prefix="fastslow-user-times-")
    try:
        for label in ("cold: empty Numba cache", "warm: the cache the cold run filled"):
            cpu, wall, code = timed_command(COMMAND, cache)
            rows.append([f"fastslow {' '.join(COMMAND)}", label, cpu, wall, code])
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "title": "Times a user feels: the first `fastslow check F1` and the next one",
        "columns": ["command", "Numba cache", "CPU s", "wall s", "exit"],
        "rows": rows,
        "notes": [
            "Each run a fresh process; CPU = user + system of that process. Target: cold ≤ 30 s "
            "CPU on 2 cores. `bash run.sh test` and `bash run.sh figures` from a fresh clone take "
            "minutes and are not run here: see docs/benchmarks.md, 'Times a user feels', for the "
            "commands and the last measurements."
        ],
    }
