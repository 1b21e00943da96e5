"""Interleaved best-of CPU times (:func:`verify.timing.interleaved_best`) decide a ratio the same
way beside a busy process as on their own.

What is asserted is a *decision* (ratio ≤ a threshold), never a time, on workloads whose true
ratio is far from the threshold (1 and 3 against 1.5): the test fails only if a background load
moves a best-of CPU time by a factor of about 1.5, which is what E1's cost part must not suffer
(it decides ``coupled ≤ 1.5 × dense`` on a true ratio near 1.1).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fastslow.numerics import threads
from fastslow.verify import timing
from fastslow.verify.timing import interleaved_best

THRESHOLD = 1.5

BUSY = "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush()\nwhile True: pass"
"""A CPU-bound process (a pure Python loop on one core)."""


def _matmuls(n: int, times: int):
    a = np.random.default_rng(0).standard_normal((n, n))

    def work() -> None:
        x = a
        for _ in range(times):
            x = np.tanh(x @ a / n)

    return work


def _decisions(repeat: int = 9) -> dict:
    """``ratio ≤ THRESHOLD`` for a workload against itself (true ratio 1) and against three
    times itself (true ratio 3), with every ratio for the failure message."""
    fns = {"one": _matmuls(96, 10), "same": _matmuls(96, 10), "triple": _matmuls(96, 30)}
    t = interleaved_best(fns, repeat)
    ratios = {"same": t["same"] / t["one"], "triple": t["triple"] / t["one"]}
    return {k: r <= THRESHOLD for k, r in ratios.items()}, ratios


@pytest.fixture
def busy():
    """One CPU-bound process per core of this machine (at most 4), running until the test ends."""
    procs = []
    try:
        for _ in range(min(4, max(1, len(os.sched_getaffinity(0))))):
            p = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
            procs.append(p)
        for p in procs:
            assert p.stdout.readline().strip() == "ready"  # it runs its loop now
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_the_thread_count_is_pinned_for_timing():
    """The pytest configuration pins BLAS to ``$FASTSLOW_THREADS`` (1 by default): the CPU times
    below then count one thread, as in ``bash run.sh``."""
    assert threads.blas_threads() == threads.requested()


def test_a_ratio_decision_is_the_same_beside_a_busy_process(busy):
    assert all(p.poll() is None for p in busy)
    loaded, loaded_ratios = _decisions()
    assert all(p.poll() is None for p in busy)  # the load lasted the whole measurement
    for p in busy:
        p.kill()
        p.wait()
    quiet, quiet_ratios = _decisions()
    assert quiet == {"same": True, "triple": False}, quiet_ratios
    assert loaded == quiet, (loaded_ratios, quiet_ratios)


def test_the_a2_table_times_the_same_computation_on_both_paths():
    """The A2 timing table compares like with like: each NumPy call (the reference kernels) and
    its compiled counterpart return the same array (to rounding) on the seeded layer and state,
    the fast attention and the slow path at every block size, including ``P = 1`` (no pooling)
    and ``P = T`` (one block); the table has one CPU time per call, in the order of ``Ps``."""
    T, d, Ps = 16, 4, (1, 2, 4, 16)
    calls = timing.a2_attention_calls(T, d, Ps)
    assert set(calls) == {(path, k) for path in ("numpy", "numba") for k in ("fast", *Ps)}
    for k in ("fast", *Ps):
        want, got = calls["numpy", k](), calls["numba", k]()
        assert got.shape == want.shape == (T, d)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12), k
    assert np.abs(calls["numpy", 1]() - calls["numpy", 16]()).max() > 1e-3  # P matters
    table = timing.a2_attention_times(T, d, Ps, repeat=1)
    for path in ("numpy", "numba"):
        assert table[path]["fast"] >= 0.0 and len(table[path]["slow"]) == len(Ps)
        assert all(t >= 0.0 for t in table[path]["slow"])
