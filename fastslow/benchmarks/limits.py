"""Resource limits (issue 16): every claim at its largest accepted parameters, measured.

For each claim, :data:`POINTS` lists the parameter combinations that maximise its memory and its
time within its bounds, its validator and the default budgets. Each point runs as
``fastslow check ID --param ... --json`` in a subprocess of its own; its peak resident memory
(``ru_maxrss`` of that child, from ``os.wait4``) and its wall time are set against the claim's
estimates, ``BASE_BYTES + memory_bytes(p)`` and ``seconds_estimate(p)``, the numbers
:meth:`fastslow.verify.claim.Claim.within_budget` and :meth:`~fastslow.verify.claim.Claim.within_time_budget` refuse
on before any work.

A limit point that takes many minutes is measured at a scaled-down point (``run``), and the
table shows the model's estimate at the limit itself (``limit``) next to it, marked
"extrapolated". The measured memory includes the interpreter and the libraries (the estimate's
``BASE_BYTES``); wall times include the start of the interpreter and are noisy on a shared
machine (one run per point, no repeats: the point is the order of magnitude).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from fastslow.benchmarks import section
from fastslow.verify.budgets import BASE_BYTES, format_bytes, memory_budget, time_budget
from fastslow.verify.registry import CLAIMS


@dataclass(frozen=True)
class Point:
    """One measured point of claim ``cid``: ``run`` are the parameters run; ``limit`` (when the
    run is a scaled-down stand-in) the accepted limit point whose estimate is shown beside it."""

    cid: str
    run: dict
    what: str
    limit: dict | None = None
    timeout: float = 900.0


def as_text(value) -> str:
    """A parameter value as ``--param`` text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


LAUNCHER = """
import json, os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a timeout ends the check; this one reports
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"rss": ru.ru_maxrss * 1024, "cpu": ru.ru_utime + ru.ru_stime}, f)
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""A small process between the benchmark and the check: Linux counts the parent's resident memory
at ``exec`` in the child's ``ru_maxrss``, so a check started straight from this (large) process
would report at least this process's peak; started from the launcher (``python -S``, a few MiB) its
peak is its own."""


def measure(cid: str, params: dict, timeout: float = 900.0) -> dict:
    """Run ``fastslow check cid`` on ``params`` in a child process: its exit code, outcome, peak
    RSS in bytes (``ru_maxrss`` of the check's process, through :data:`LAUNCHER`), wall time and
    CPU time (user + system: on a shared machine the wall time grows with the others' load, the
    CPU time much less); killed after ``timeout`` s."""
    argv = [sys.executable, "-m", "fastslow", "check", cid, "--json"]
    for k, v in params.items():
        argv += ["--param", f"{k}={as_text(v)}"]
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory() as tmp,
    ):
        usage_file = os.path.join(tmp, "usage.json")
        env = dict(os.environ, FASTSLOW_LM_CACHE=os.path.join(tmp, "lm"))  # E1 trains, not reads
        launcher = [sys.executable, "-S", "-c", LAUNCHER, usage_file]
        start = time.perf_counter()
        proc = subprocess.Popen(
            launcher + argv, stdout=out, stderr=err, env=env, start_new_session=True
        )
        killed = False
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            killed = True
        except BaseException:  # Ctrl-C: the check is in a session of its own, end it too
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        if killed:  # the check ends, the launcher reports its peak so far
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        wall = time.perf_counter() - start
        usage = {"rss": 0, "cpu": float("nan")}
        if os.path.exists(usage_file):
            with open(usage_file) as f:
                usage = json.load(f)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    outcome = "timeout" if killed else f"exit {proc.returncode}"
    if not killed:
        try:
            outcome = json.loads(stdout)["verdict"]
        except (ValueError, KeyError, TypeError):
            if proc.returncode == 2:
                outcome = "refused: " + (stderr.strip().splitlines() or [""])[-1][:120]
    return {
        "code": proc.returncode,
        "outcome": outcome,
        "rss": usage["rss"],
        "seconds": wall,
        "cpu": usage["cpu"],
        "stderr_tail": stderr[-300:],
    }


def estimates(cid: str, params: dict) -> tuple[int, float]:
    """``(BASE_BYTES + memory_bytes, seconds_estimate)`` of the resolved ``params``, unchecked
    against the budgets (a point beyond them still has an estimate)."""
    claim = CLAIMS[cid]
    p = claim.defaults()
    for k, v in params.items():
        p[k] = claim.params[k].parse(k, v)
    return BASE_BYTES + int(claim.memory_bytes(p)), float(claim.seconds_estimate(p))


def accepted(cid: str, params: dict) -> str:
    """``"accepted"`` or the one-line refusal of :meth:`Claim.resolve` under the current budgets."""
    try:
        CLAIMS[cid].resolve(params)
    except ValueError as exc:
        return f"refused: {exc}"
    return "accepted"


def describe(params: dict) -> str:
    """``k=v, ...`` for the table; a tuple of one repeated value as ``n×value``."""

    def short(v):
        if isinstance(v, (tuple, list)) and len(v) > 3 and len(set(v)) == 1:
            return f"{len(v)}×{v[0]}"
        return as_text(v)

    return ", ".join(f"{k}={short(v)}" for k, v in params.items()) or "defaults"


_T16 = tuple([0.1] * 16)
_D2_LIMIT = {"T": 64, "P": 1, "d": 16, "L_min": 4096, "L_max": 65536}
_D7_LIMIT = {"T": 24, "P": 4, "d": 4, "n_iter": 100000, "n_gates": 1001, "dense_grid": 100001}
_F1_LIMIT = {
    "T": 64,
    "P": 4,
    "d": 4,
    "L": 16,
    "rtol": 1e-13,
    "atol": 1e-15,
    "eps_floor_first": 1e-8,
    "eps_floor_leading": 1e-8,
}
_F3_LIMIT = {
    "widths": (64, 128, 256),
    "steps": (0, 2000, 20000),
    "n_train": 64,
    "n_seeds": 2,
    "T": 64,
    "d": 4,
    "attn_seeds": 50,
    "n_test": 100000,
}
_F2_LIMIT = {
    "n_eps": 40,
    "eps_min": 1e-6,
    "n_t": 10000,
    "n_grid": 10000,
    "rtol": 1e-13,
    "atol": 1e-15,
    "P_max": 64,
}

QUICK_SECONDS = 15.0
"""``--quick`` runs only the limit points themselves (no scaled-down stand-ins) whose estimated
time is at most this."""

POINTS: list[Point] = [
    Point(
        "A1",
        {"T": 256, "P": 1, "d": 64, "L": 8},
        "sizes at their max, L/8",
        {"T": 256, "P": 1, "d": 64, "L": 64},
    ),
    Point(
        "A2",
        {"T": 4096, "P": 1, "d": 512, "m": 2048, "pooled": False},
        "limit (largest T·T and T·m)",
    ),
    Point("A2", {"T": 4096, "P": 64, "d": 512, "m": 2048}, "limit, pooled"),
    Point("A3", {"T": 256, "P": 1, "d": 32, "L": 32}, "limit"),
    Point("D1", {"T": 64, "P": 1, "d": 1, "L": 32}, "limit (T·d = 64)"),
    Point("D1", {"T": 1, "P": 1, "d": 64, "L": 32}, "limit (T·d = 64)"),
    Point(
        "D2",
        {"T": 64, "P": 1, "d": 16, "L_min": 256, "L_max": 4096},
        "T, d at max; ladder 1/16",
        _D2_LIMIT,
    ),
    Point(
        "D3",
        {"T": 256, "P": 1, "d": 64, "L": 16, "n_draws": 20, "temperatures": _T16},
        "sizes, draws, temperatures at max; L/4",
        {"T": 256, "P": 1, "d": 64, "L": 64, "n_draws": 20, "temperatures": _T16},
    ),
    Point(
        "D4",
        {"T": 128, "P": 1, "d": 32, "L": 64, "slow": True, "eig_max_T": 24, "cond_Ts": (128,) * 16},
        "limit",
    ),
    Point(
        "D5", {"T": 256, "P": 1, "d": 32, "L": 256, "brute_max_Td": 256, "exact_max_T": 32}, "limit"
    ),
    Point("D6", {"T": 64, "P": 1, "d": 2, "L": 16, "n_s": 50}, "limit (T·d = 128, d small)"),
    Point(
        "D6",
        {"T": 8, "P": 2, "d": 16, "L": 6, "n_s": 50},
        "T·d = 128, d at max; L 6/16",
        {"T": 8, "P": 2, "d": 16, "L": 16, "n_s": 50},
    ),
    Point(
        "D7",
        {"T": 24, "P": 4, "d": 4, "n_iter": 10000, "n_gates": 101, "dense_grid": 10001},
        "T·d = 96; grids, iterations 1/10",
        _D7_LIMIT,
    ),
    Point(
        "D8",
        {"family": "gaussian_ar1", "P": 64, "N": 64, "n_seq": 5000, "n_future": 1},
        "T = 4096, n_seq 1/5.6 of the budget's",
        {"family": "gaussian_ar1", "P": 64, "N": 64, "n_seq": 28000, "n_future": 1},
    ),
    Point(
        "D8",
        {"family": "poisson", "P": 64, "N": 64, "n_seq": 300, "K": 8, "n_future": 1},
        "T = 4096, K = 8, n_seq 1/5 of the budget's",
        {"family": "poisson", "P": 64, "N": 64, "n_seq": 1500, "K": 8, "n_future": 1},
    ),
    Point(
        "D9",
        {"P": 64, "N": 64, "n_grad": 16384},
        "T = 4096, n_grad 1/3.75 of the budget's",
        {"P": 64, "N": 64, "n_grad": 61440},
    ),
    Point(
        "E1",
        {"tokens": 1000, "T": 2, "P": 1, "d": 2, "m": 1, "L": 1, "batch": 1, "lr_grid": (0.01,)},
        "P = 1 (block statistics), tiny model",
    ),
    Point(
        "E1",
        {"tokens": 20000, "lr_grid": (0.003,)},
        "default model, 20k tokens, fixed lr",
        {"tokens": 480000, "lr_grid": (0.003,)},
    ),
    Point(
        "F1",
        {"T": 64, "P": 4, "d": 4, "L": 16},
        "sizes at their max; tolerances, ε floors default",
        _F1_LIMIT,
    ),
    Point(
        "F2",
        {"eps_min": 1e-6, "eps_max": 1e-5, "n_eps": 3, "rtol": 1e-12, "atol": 1e-14},
        "smallest ε, 3 of 40 ε, rtol ×10",
        _F2_LIMIT,
    ),
    Point("F2", {"P_max": 64, "n_t": 10000, "n_grid": 10000}, "grids, P_max at their limits"),
    Point("F3", {**_F3_LIMIT, "steps": (0, 300, 3000)}, "steps 1/6.7", _F3_LIMIT),
]
"""The measured points, claim by claim (see the module docstring)."""


def row(point: Point, result: dict) -> list:
    mem_run, sec_run = estimates(point.cid, point.run)
    cells = [
        point.cid,
        point.what,
        describe(point.run),
        format_bytes(mem_run),
        format_bytes(result["rss"]),
        f"{mem_run / result['rss']:.2g}",
        f"{sec_run:.3g}",
        f"{result['cpu']:.3g}",
        f"{result['seconds']:.3g}",
        result["outcome"],
    ]
    if point.limit is not None:
        mem_lim, sec_lim = estimates(point.cid, point.limit)
        cells[1] += (
            f"; extrapolated to {describe(point.limit)}: {format_bytes(mem_lim)}, "
            f"{sec_lim:.3g} s ({accepted(point.cid, point.limit)})"
        )
    return cells


@section("limits")
def limits(quick: bool) -> dict:
    rows = []
    for point in POINTS:
        if quick and (
            point.limit is not None or estimates(point.cid, point.run)[1] > QUICK_SECONDS
        ):
            continue
        rows.append(row(point, measure(point.cid, point.run, point.timeout)))
    return {
        "title": "Resource limits: every claim at its largest accepted parameters",
        "columns": [
            "claim",
            "point",
            "parameters run",
            "est. memory",
            "peak RSS",
            "est./meas.",
            "est. s",
            "CPU s",
            "wall s",
            "verdict",
        ],
        "rows": rows,
        "notes": [
            f"Budgets: memory {format_bytes(memory_budget())}, time {time_budget():.0f} s. "
            "Peak RSS of the check's own process (ru_maxrss via wait4); estimated memory = "
            f"BASE_BYTES ({format_bytes(BASE_BYTES)}) + memory_bytes. Wall time of one run on a "
            "shared machine, including the interpreter's start, and the CPU time of the check's "
            "process (the fairer measure when the machine is shared); an estimate of 0 s means "
            "the claim declares no time model. A point marked 'extrapolated' ran scaled down; "
            "the estimates at the limit beside it are the models' (and whether the default "
            "budgets accept it)."
        ],
    }
