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

Faults never lose finished work:

* a point whose function raises is recorded as an error result (``on_error(point, exc)``, by
  default ``{"error": {"type", "message"}}``; :func:`check_point_error` gives a verdict of outcome
  ``error``) and the other points finish; error results are not cached, so a rerun retries them;
* every cache entry carries a SHA-256 of its point and result; an entry that cannot be read, is
  not an entry, belongs to another point or fails its checksum is named on stderr, moved aside
  (``<name>.corrupt``) and recomputed;
* Ctrl-C (or SIGTERM) stores every point that has finished, kills the workers and raises
  :class:`SweepInterrupted` (a ``KeyboardInterrupt``) saying how many points are cached; pool
  workers ignore SIGINT (their parent decides) and die with their parent (``PR_SET_PDEATHSIG``
  on Linux, a parent-watch thread elsewhere);
* :func:`executor_for` bounds ``workers`` by the CPUs and the number of points, and fails fast,
  on one line, on an unreachable Dask scheduler.

Results do not depend on the executor or on the cache: each point carries its own seed, and every
result is passed through JSON (as the cache and the workers would), so a serial run, a process
pool, a Dask cluster and a cache hit all return the same lists, dicts and floats, bit for bit.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import hashlib
import itertools
import json
import math
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from fastslow.numerics import threads
from fastslow.verify import provenance
from fastslow.verify.registry import run_check
from fastslow.verify.verdict import Verdict

RESULT_BYTES = 64 << 10
"""Memory held per finished point of a sweep (a verdict's JSON with its series), for budgets."""

DASK_TIMEOUT = 5.0
"""Seconds to wait for a Dask scheduler before giving up."""


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C or SIGTERM after storing every finished point."""

    def __init__(self, done: int, total: int, cache: Path | None):
        self.done, self.total, self.cache = done, total, cache
        where = f"cached in {cache}" if cache else "not cached (no cache folder given)"
        super().__init__(f"interrupted: {done} of {total} points finished, {where}")


# --------------------------------------------------------------------------- grids


def _axes(axes: dict) -> dict[str, Sequence]:
    """Every axis as a list, validated: non-empty, no repeated value."""
    out: dict[str, Sequence] = {}
    for n, given in axes.items():
        vals: Sequence = given if isinstance(given, range) else list(given)
        if len(vals) == 0:
            raise ValueError(f"sweep axis {n!r} is empty")
        if not isinstance(vals, range):  # a range never repeats
            seen: set[str] = set()
            for v in vals:
                key = json.dumps(v, sort_keys=True, default=str)
                if key in seen:
                    raise ValueError(f"sweep axis {n!r} repeats the value {v!r}")
                seen.add(key)
        out[n] = vals
    return out


def grid_size(**axes: Iterable) -> int:
    """The number of points of :func:`grid` with these axes (validated), without building it."""
    return math.prod(len(v) for v in _axes(axes).values())


def iter_grid(**axes: Iterable) -> Iterator[dict]:
    """The points of :func:`grid`, one at a time (axes validated first)."""
    checked = _axes(axes)
    names = list(checked)
    for combo in itertools.product(*checked.values()):
        yield dict(zip(names, combo))


def grid(**axes: Iterable) -> list[dict]:
    """The Cartesian product of named axes as a list of dicts, first axis slowest.
    ``ValueError`` on an empty axis or a repeated value (a degenerate grid)."""
    return list(iter_grid(**axes))


def point_key(fn: Callable, point: dict) -> str:
    """A stable key for ``fn`` at ``point`` (the cache file name); it includes the thread count
    of :mod:`numerics.threads` when that is not 1 (results differ in the last digits between
    thread counts), so a single-threaded point keeps the key it always had."""
    what: dict = {"fn": f"{fn.__module__}.{fn.__qualname__}", "point": point}
    n = threads.requested()
    if n != 1:
        what["threads"] = n
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Progress:
    """A minimal progress line on stderr; silent when stderr is not a terminal or under CI.

    The time left is estimated from the items computed in this run only (items taken from a
    cache, :meth:`skip`, take no time and would make it too short); until one is computed the
    line says it is estimating, never a NaN."""

    def __init__(self, total: int, label: str, enabled: bool | None = None):
        if enabled is None:
            enabled = sys.stderr.isatty() and os.environ.get("CI", "") != "true"
        self.total, self.label, self.enabled = total, label, enabled
        self.done, self.skipped, self.t0 = 0, 0, time.perf_counter()

    def skip(self, n: int) -> None:
        """``n`` items done without work (from the cache)."""
        self.skipped += n
        self.update(n)

    def text(self) -> str:
        """The progress line (without its carriage return)."""
        computed = self.done - self.skipped
        if self.done >= self.total:
            left = "done"
        elif computed <= 0:
            left = "estimating the time left"
        else:
            rate = computed / max(time.perf_counter() - self.t0, 1e-9)
            left = f"{(self.total - self.done) / rate:.0f} s left"
        cached = f", {self.skipped} from the cache" if self.skipped else ""
        return f"{self.label}: {self.done}/{self.total}{cached}  ({left})"

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.enabled:
            sys.stderr.write(f"\r{self.text()}\x1b[K")  # and clear the rest of a longer line
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


# --------------------------------------------------------------------------- the cache


def prepare_cache(cache_dir: str | Path, what: str = "cache folder") -> Path:
    """``cache_dir`` created if needed and proven writable (a probe file is written and removed);
    ``ValueError`` naming it otherwise. Call it before any work starts."""
    path = Path(cache_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a file, expected a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{what} {str(path)!r} is not writable: {exc.strerror or exc}") from None
    return path


def _checksum(point: dict, result) -> str:
    text = json.dumps({"point": point, "result": result}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_entry(f: Path, point: dict):
    """``(True, result)`` for a sound cache entry of ``point``, else ``(False, why)``."""
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return False, f"unreadable ({type(exc).__name__}: {exc})"
    if not isinstance(data, dict) or not {"point", "result", "sha256"} <= set(data):
        return False, "not a cache entry (expected the keys point, result, sha256)"
    if data["sha256"] != _checksum(data["point"], data["result"]):
        return False, "checksum mismatch (edited or damaged)"
    if data["point"] != as_json(point, "a sweep point"):
        return False, "the entry belongs to another point"
    return True, data["result"]


def _set_aside(f: Path, why: str) -> None:
    """Move a corrupt cache entry out of the way (``<name>.corrupt[.N]``) and say so on stderr."""
    target = f.with_name(f.name + ".corrupt")
    n = 1
    while target.exists():
        target, n = f.with_name(f"{f.name}.corrupt.{n}"), n + 1
    try:
        os.replace(f, target)
        moved = f"moved to {target.name}"
    except OSError as exc:
        moved = f"could not be moved ({exc.strerror}); ignored"
    print(f"sweep cache: {f}: {why}; {moved}, recomputing the point", file=sys.stderr)


def _write_entry(f: Path, point: dict, value) -> None:
    text = json.dumps(
        {"point": point, "result": value, "sha256": _checksum(point, value)}, sort_keys=True
    )
    fd, tmp = tempfile.mkstemp(prefix=f".{f.stem}.", suffix=".tmp", dir=f.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, f)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- the sweep


def error_result(point: dict, exc: BaseException) -> dict:
    """The default result of a point whose function raised: its exception."""
    return {"error": {"type": type(exc).__name__, "message": str(exc) or repr(exc)}}


def sweep(
    fn: Callable,
    points: Iterable[dict],
    *,
    executor: cf.Executor | None = None,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    label: str | None = None,
    on_error: Callable[[dict, BaseException], object] | None = error_result,
) -> list:
    """``[fn(**p) for p in points]``, computed on ``executor`` and cached in ``cache_dir``.

    Args:
        fn: a picklable (module-level) function of keyword arguments returning JSON-able data.
        points: the parameter dicts, e.g. from :func:`grid`.
        executor: a ``concurrent.futures.Executor`` (process pool, Dask client executor, ...);
            ``None`` evaluates serially in this process.
        cache_dir: where finished points are stored; rerunning resumes from them.
        progress: show a progress line (default: only on an interactive terminal outside CI).
        on_error: the result recorded for a point whose ``fn`` raised (not cached); ``None``
            re-raises the exception instead.

    Raises:
        SweepInterrupted: on Ctrl-C, after storing every finished point and stopping the workers.
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
        name = f"{fn.__module__}.{fn.__qualname__}"
        cache = prepare_cache(Path(cache_dir) / provenance.source_fingerprint() / name)

    def entry(i: int) -> Path | None:
        return cache / f"{point_key(fn, points[i])}.json" if cache else None

    results: list = [None] * len(points)
    todo = []
    for i, p in enumerate(points):
        f = entry(i)
        if f is not None and (f.exists() or f.is_symlink()):
            ok, value = _read_entry(f, p)
            if ok:
                results[i] = value
                continue
            _set_aside(f, value)
        todo.append(i)
    bar = Progress(len(points), label or fn.__qualname__, progress)
    bar.skip(len(points) - len(todo))
    stored: set[int] = set()

    def store(i: int, value) -> None:
        value = as_json(value, f"{fn.__qualname__}({points[i]})")
        results[i] = value
        stored.add(i)
        f = entry(i)
        if f is not None:
            _write_entry(f, points[i], value)
        bar.update()

    def failed(i: int, exc: BaseException) -> None:
        if on_error is None:
            raise exc
        results[i] = as_json(on_error(points[i], exc), "an error result")
        stored.add(i)
        bar.update()

    try:
        if executor is None:
            for i in todo:
                try:
                    value = fn(**points[i])
                except Exception as exc:  # recorded as the point's error result
                    failed(i, exc)
                    continue
                store(i, value)
        else:
            futures = {executor.submit(fn, **points[i]): i for i in todo}
            try:
                for fut in cf.as_completed(futures):
                    _collect(fut, futures[fut], store, failed)
            except KeyboardInterrupt:
                for fut, i in futures.items():  # finished while we were told to stop
                    if i not in stored and fut.done() and not fut.cancelled():
                        _collect(fut, i, store, failed)
                stop_executor(executor)
                raise
    except KeyboardInterrupt:
        cached = sum(1 for i in stored if i in todo) + len(points) - len(todo)
        given = Path(cache_dir) if cache_dir is not None else None
        raise SweepInterrupted(cached if cache else len(stored), len(points), given) from None
    return results


def _collect(fut, i: int, store, failed) -> None:
    try:
        value = fut.result()
    except cf.CancelledError as exc:
        failed(i, exc)
        return
    except Exception as exc:  # the point's own exception, or its worker died
        failed(i, exc)
        return
    store(i, value)


def as_json(value, what: str = "a sweep result"):
    """``value`` after a JSON round trip (the form every sweep result takes); TypeError if it has none."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{what} must be JSON-serialisable (lists, dicts, numbers, strings): {exc}"
        ) from None


# --------------------------------------------------------------------------- executors


def max_workers(workers: int, tasks: int | None = None) -> int:
    """``workers`` bounded by the CPUs of this machine and by the number of ``tasks``;
    ``ValueError`` unless ``workers`` is a positive integer."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    bound = min(workers, os.cpu_count() or 1)
    return max(1, min(bound, tasks)) if tasks is not None else bound


@contextlib.contextmanager
def executor_for(workers: int | None = 1, scheduler: str | None = None, tasks: int | None = None):
    """The executor a command or test session asked for, shut down on exit.

    ``scheduler`` (a Dask scheduler address) wins; otherwise ``workers > 1`` gives a local process
    pool of at most the CPUs (and ``tasks``, the number of points, when given) and ``workers`` of
    1 or ``None`` gives ``None`` (serial, in this process). On an exception (Ctrl-C) the workers
    are killed instead of awaited.
    """
    n = 1 if workers is None else max_workers(workers, tasks)
    if scheduler:
        executor, client = dask_executor(scheduler)
        try:
            yield executor
        except BaseException:
            executor.shutdown(wait=False)
            client.close(timeout=2)
            raise
        executor.shutdown(wait=True)
        client.close()
    elif n > 1:
        executor = local_executor(n)
        try:
            yield executor
        except BaseException:
            stop_executor(executor)
            raise
        executor.shutdown(wait=True)
    else:
        yield None


def stop_executor(executor: cf.Executor) -> None:
    """Cancel what has not started and stop what runs now: a process pool's workers are killed.

    Killed too: every child this process started since a :func:`local_executor` pool was made.
    Ctrl-C can land while the pool forks its workers, after a worker exists but before the pool's
    process table holds it; such a worker would run a point to its end (interpreter exit joins
    it), so the sweep would not stop within seconds."""
    if isinstance(executor, cf.ProcessPoolExecutor):
        # the pool has no public way to stop running work; its process table is the only handle
        procs = list((getattr(executor, "_processes", None) or {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        before = getattr(executor, "children_before", None)
        strays = set() if before is None else _children() - before - {p.pid for p in procs}
        for proc in procs:
            with contextlib.suppress(OSError, ValueError):
                proc.kill()
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for proc in procs:
            with contextlib.suppress(OSError, ValueError, AssertionError):
                proc.join(timeout=2)
        for pid in strays:
            with contextlib.suppress(OSError):
                os.waitpid(pid, os.WNOHANG)
    else:
        executor.shutdown(wait=False)


def _children() -> set[int]:
    """The PIDs of this process's live children (``/proc`` on Linux, else multiprocessing's)."""
    me, found = os.getpid(), set()
    if not Path("/proc/self").exists():
        import multiprocessing  # deferred: only where /proc is missing

        return {p.pid for p in multiprocessing.active_children() if p.pid is not None}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if int(ppid) == me and state != "Z":
            found.add(int(stat.parent.name))
    return found


class _LocalPool(cf.ProcessPoolExecutor):
    """A process pool that knows which children of this process existed before it (so that
    :func:`stop_executor` can find a worker it forked but did not yet list)."""

    def __init__(self, *args, **kwargs):
        self.children_before = _children()
        super().__init__(*args, **kwargs)


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Pool worker initialiser: ignore SIGINT (the parent decides on Ctrl-C), take the default
    SIGTERM, and die when ``parent`` dies (``PR_SET_PDEATHSIG`` on Linux, else a watch thread)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        ok = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not ok:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def local_executor(workers: int | None = None) -> cf.Executor:
    """A process pool with ``workers`` processes (default: the number of CPUs) whose workers
    ignore Ctrl-C and die with this process."""
    return _LocalPool(
        max_workers=workers or os.cpu_count() or 1,
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )


def probe_scheduler(address: str, timeout: float = DASK_TIMEOUT) -> None:
    """``ValueError`` naming ``address`` unless it is ``[tcp://]HOST:PORT`` and something there
    accepts a connection within ``timeout`` seconds (checked before any work starts)."""
    rest = address.split("://", 1)[1] if "://" in address else address
    scheme = address.split("://", 1)[0] if "://" in address else "tcp"
    host, _, port = rest.rpartition(":")
    if scheme not in ("tcp", "tls") or not host or not port.isdigit() or "/" in rest:
        raise ValueError(
            f"--scheduler {address!r}: expected a Dask scheduler address tcp://HOST:PORT"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ValueError(
            f"--scheduler {address}: no Dask scheduler reachable ({exc.strerror or exc})"
        ) from None


def dask_executor(address: str, timeout: float = DASK_TIMEOUT):
    """The ``concurrent.futures`` executor of a Dask distributed client at ``address``.

    Returns ``(executor, client)``; close the client when done. Needs the optional extra
    ``fastslow[dask]``. ``ValueError`` naming the address when no scheduler answers within
    ``timeout`` seconds; ``ImportError`` without the extra.
    """
    try:
        from distributed import Client  # optional dependency: fastslow[dask]
    except ImportError:
        raise ImportError(
            "a Dask scheduler needs the optional extra: pip install 'fastslow[dask]'"
        ) from None
    probe_scheduler(address, timeout)
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"--scheduler {address}: no Dask scheduler answered within {timeout:g} s ({why})"
        ) from None
    return client.get_executor(), client


# --------------------------------------------------------------------------- claim points


POINT_KEYS = ("claim", "seed", "control", "system", "system_fingerprint")
"""The keys of a :func:`check_point` that are not the claim's parameters."""

_SYSTEMS: dict = {}
"""The user systems this process has loaded for sweep points, by ``(spec, fingerprint)``."""


def check_point(
    claim: str,
    seed: int,
    control: str | None = None,
    system: str | None = None,
    system_fingerprint: str | None = None,
    **params,
) -> dict:
    """One claim's verdict as a sweep point (picklable): the JSON of
    :func:`verify.registry.run_check` (``control`` names a negative control).

    ``system`` is a user system as ``FILE.py:NAME`` (:func:`verify.systems.load`), loaded once per
    process (each pooled worker loads the file itself, so nothing of the user's module has to be
    pickled); ``system_fingerprint`` (:meth:`verify.systems.System.fingerprint`, part of the
    point and so of its cache key) is the system the sweep was planned on: a file that builds
    another system in a worker (edited during the sweep, or drawing unseeded random numbers) is
    a ``ValueError``, never a verdict on another system."""
    user = None if system is None else loaded_system(system, system_fingerprint)
    return run_check(claim, params, seed=seed, control=control, system=user).to_json()


def loaded_system(spec: str, fingerprint: str | None = None):
    """The system of ``spec`` (``FILE.py:NAME``), loaded once per process; ``ValueError`` when
    its :meth:`~verify.systems.System.fingerprint` is not ``fingerprint`` (when given)."""
    from fastslow.verify import systems  # deferred: a sweep without a system needs no model

    key = (spec, fingerprint)
    if key not in _SYSTEMS:
        user = systems.load(spec)
        if fingerprint is not None and user.fingerprint() != fingerprint:
            raise ValueError(
                f"--system {spec}: the file now builds another system than the one the sweep "
                "was planned on (edited during the sweep, or unseeded random draws)"
            )
        _SYSTEMS[key] = user
    return _SYSTEMS[key]


def planned_system(spec: str):
    """The system of ``spec`` (``FILE.py:NAME``) a sweep is planned on, loaded twice: a file that
    builds another system the second time (a random generator of its own left unseeded; the
    global ones are seeded by :func:`verify.systems.user_code`) is a ``ValueError`` on one line,
    before any point is computed, since every worker loads it again. The system is kept for the
    points computed in this process."""
    from fastslow.verify import systems  # deferred: a sweep without a system needs no model

    first = systems.load(spec)
    fingerprint = first.fingerprint()
    if systems.load(spec).fingerprint() != fingerprint:
        raise ValueError(
            f"--system {spec}: the file builds a different system each time it is loaded (a "
            "random generator left unseeded?); seed it, e.g. np.random.default_rng(0), so "
            "that every sweep point checks the same system"
        )
    _SYSTEMS[(spec, fingerprint)] = first
    return first


def check_point_error(point: dict, exc: BaseException) -> dict:
    """The result of a :func:`check_point` that raised (or whose worker died): a verdict of
    outcome ``error`` with the exception, in :class:`verify.verdict.Verdict`'s JSON form."""
    params = {k: v for k, v in point.items() if k not in POINT_KEYS}
    v = Verdict(
        str(point.get("claim")),
        "error",
        {},
        {},
        {},
        params,
        int(point.get("seed", 0)),
        point.get("control"),
        error={"type": type(exc).__name__, "message": str(exc) or repr(exc)},
    )
    return v.to_json()
