"""Parameter sweeps over any ``concurrent.futures.Executor``, cached by parameters so they resume.

:func:`sweep` evaluates ``fn(**point)`` for every point of a grid and returns the results in grid
order. ``fn`` must be a module-level function (it is pickled to the workers) returning a
JSON-serialisable value. The executor is any ``concurrent.futures.Executor``:

* ``None`` runs in this process (deterministic, no start-up cost);
* :func:`local_executor` gives a process pool;
* :func:`dask_executor` gives the executor of a ``dask.distributed`` client (optional extra
  ``pip install 'fastslow[dask]'``), for users who outgrow one machine.

Every finished point is written to
``cache_dir/<source fingerprint>/<fn module.name>/<sha256 of the point>.json`` as soon as it
arrives, so an interrupted sweep rerun with the same ``cache_dir`` only computes the missing
points. The source fingerprint (:func:`verify.provenance.source_fingerprint`) changes with any
edit of the code, so a cache never serves results of other code.

Results do not depend on the executor or on the cache: each point carries its own seed, and every
result is passed through JSON (as the cache and the workers would), so a serial run, a process
pool, a Dask cluster and a cache hit all return the same lists, dicts and floats, bit for bit.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from verify import provenance
from verify.registry import run_check


def grid(**axes: Iterable) -> list[dict]:
    """The Cartesian product of named axes as a list of dicts, first axis slowest."""
    names = list(axes)
    values = [list(axes[n]) for n in names]
    for n, vals in zip(names, values):
        if not vals:
            raise ValueError(f"sweep axis {n!r} is empty")
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def point_key(fn: Callable, point: dict) -> str:
    """A stable key for ``fn`` at ``point`` (the cache file name)."""
    text = json.dumps(
        {"fn": f"{fn.__module__}.{fn.__qualname__}", "point": point}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Progress:
    """A minimal progress line on stderr; silent when stderr is not a terminal or under CI."""

    def __init__(self, total: int, label: str, enabled: bool | None = None):
        if enabled is None:
            enabled = sys.stderr.isatty() and os.environ.get("CI", "") != "true"
        self.total, self.label, self.enabled = total, label, enabled
        self.done, self.t0 = 0, time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.enabled:
            rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else float("nan")
            sys.stderr.write(f"\r{self.label}: {self.done}/{self.total}  ({eta:5.0f} s left)")
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def sweep(
    fn: Callable,
    points: list[dict],
    *,
    executor: cf.Executor | None = None,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    label: str | None = None,
) -> list:
    """``[fn(**p) for p in points]``, computed on ``executor`` and cached in ``cache_dir``.

    Args:
        fn: a picklable (module-level) function of keyword arguments returning JSON-able data.
        points: the parameter dicts, e.g. from :func:`grid`.
        executor: a ``concurrent.futures.Executor`` (process pool, Dask client executor, ...);
            ``None`` evaluates serially in this process.
        cache_dir: where finished points are stored; rerunning resumes from them.
        progress: show a progress line (default: only on an interactive terminal outside CI).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    points = list(points)
    if not all(isinstance(p, dict) for p in points):
        raise TypeError("every sweep point must be a dict of keyword arguments")
    if executor is not None and not isinstance(executor, cf.Executor):
        raise TypeError(
            f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}"
        )
    cache = None
    if cache_dir is not None:
        cache = (
            Path(cache_dir) / provenance.source_fingerprint() / f"{fn.__module__}.{fn.__qualname__}"
        )
        cache.mkdir(parents=True, exist_ok=True)

    results: list = [None] * len(points)
    todo = []
    for i, p in enumerate(points):
        f = cache / f"{point_key(fn, p)}.json" if cache else None
        if f is not None and f.exists():
            results[i] = json.loads(f.read_text())["result"]
        else:
            todo.append(i)
    bar = Progress(len(points), label or fn.__qualname__, progress)
    bar.update(len(points) - len(todo))

    def store(i, value):
        value = as_json(value, f"{fn.__qualname__}({points[i]})")
        results[i] = value
        if cache is not None:
            f = cache / f"{point_key(fn, points[i])}.json"
            tmp = f.with_suffix(".tmp")
            tmp.write_text(json.dumps({"point": points[i], "result": value}, sort_keys=True))
            tmp.replace(f)
        bar.update()

    if executor is None:
        for i in todo:
            store(i, fn(**points[i]))
    else:
        futures = {executor.submit(fn, **points[i]): i for i in todo}
        for fut in cf.as_completed(futures):
            store(futures[fut], fut.result())
    return results


def as_json(value, what: str = "a sweep result"):
    """``value`` after a JSON round trip (the form every sweep result takes); TypeError if it has none."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{what} must be JSON-serialisable (lists, dicts, numbers, strings): {exc}"
        ) from None


@contextlib.contextmanager
def executor_for(workers: int | None = 1, scheduler: str | None = None):
    """The executor a command or test session asked for, shut down on exit.

    ``scheduler`` (a Dask scheduler address) wins; otherwise ``workers > 1`` gives a local process
    pool and ``workers`` of 1 or ``None`` gives ``None`` (serial, in this process).
    """
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if scheduler:
        executor, client = dask_executor(scheduler)
        try:
            yield executor
        finally:
            executor.shutdown(wait=True)
            client.close()
    elif workers and workers > 1:
        with local_executor(workers) as executor:
            yield executor
    else:
        yield None


def local_executor(workers: int | None = None) -> cf.Executor:
    """A process pool with ``workers`` processes (default: the number of CPUs)."""
    return cf.ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)


def dask_executor(address: str):
    """The ``concurrent.futures`` executor of a Dask distributed client at ``address``.

    Returns ``(executor, client)``; close the client when done. Needs the optional extra
    ``fastslow[dask]``.
    """
    try:
        from distributed import Client  # optional dependency: fastslow[dask]
    except ImportError:
        raise ImportError(
            "a Dask scheduler needs the optional extra: pip install 'fastslow[dask]'"
        ) from None
    client = Client(address)
    return client.get_executor(), client


def check_point(claim: str, seed: int, control: str | None = None, **params) -> dict:
    """One claim's verdict as a sweep point (picklable): the JSON of
    :func:`verify.registry.run_check` (``control`` names a negative control)."""

    return run_check(claim, params, seed=seed, control=control).to_json()
