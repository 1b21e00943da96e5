"""SIGINT and SIGTERM at every moment of a ``fastslow`` command: one rule (:mod:`fastslow.signals`).

Deterministic: a signal lands at a *defined* point of the command's start-up through the test hook
``FASTSLOW_SIGNAL_AT=POINT:SIGNAL`` (the process sends it to itself there), or, in a pooled sweep,
once a defined state is reached (a point finished and cached), never after a delay. Waits are hang
guards far from any expected duration; no test passes or fails by how fast the machine is.

* ``130`` for SIGINT and ``143`` for SIGTERM, one line on stderr, no traceback, at every point;
* started with SIGINT ignored (a script's background job): the command runs to its end whatever
  SIGINT comes, at every point; SIGTERM still ends it with 143;
* a pooled sweep stopped while its workers run leaves no process of its group behind and keeps
  its finished points.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastslow import signals

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
HANG_GUARD = 300
"""Seconds after which a command that never ends fails the test (not a timing assertion)."""

CODES = {"INT": 130, "TERM": 143}


def _run(args, hook: str | None, inherited=signal.SIG_DFL, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in ENV.items() if k != signals.HOOK_ENV}
    if hook:
        env[signals.HOOK_ENV] = hook
    return subprocess.run(
        [sys.executable, "-m", "fastslow", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD,
        # as from a terminal (or a background job), whatever the job this test runs in
        preexec_fn=lambda: signal.signal(signal.SIGINT, inherited),
        **kw,
    )


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("sig", ["INT", "TERM"])
@pytest.mark.parametrize("point", signals.POINTS)
def test_a_signal_at_any_point_of_the_start_up_ends_the_command_with_its_code(point, sig):
    """``start``: the handlers were just installed, before the command line is imported;
    ``imports``: while NumPy and the claims load; ``parse``: while argparse builds the parser
    (where a SIGINT once printed a traceback); ``run``: the command is about to run."""
    res = _run(["claims"], f"{point}:{sig}")
    assert res.returncode == CODES[sig], res.stderr
    assert "interrupted" in _one_line(res.stderr)
    assert res.stdout == ""  # nothing partial


@pytest.mark.parametrize("point", signals.POINTS)
def test_a_command_started_with_sigint_ignored_keeps_ignoring_it_to_its_end(point):
    """A script's background job inherits SIGINT ignored: a SIGINT at any point changes
    nothing, the command prints what it prints without one (same output, same exit code)."""
    quiet = _run(["claims"], None)
    res = _run(["claims"], f"{point}:INT", inherited=signal.SIG_IGN)
    assert quiet.returncode == 0, quiet.stderr
    assert (res.returncode, res.stdout, res.stderr) == (0, quiet.stdout, quiet.stderr)


def test_sigterm_still_stops_a_command_started_with_sigint_ignored():
    res = _run(["claims"], "run:TERM", inherited=signal.SIG_IGN)
    assert res.returncode == 143, res.stderr
    assert "interrupted" in _one_line(res.stderr)


def test_a_pooled_sweep_started_with_sigint_ignored_runs_to_its_end(tmp_path):
    """The sweep's own points and its workers: SIGINT at the moment the sweep starts its pool
    is ignored, every point is computed and the exit code is the sweep's."""
    argv = ["sweep", "A1", "--grid", "T=4", "--grid", "P=2", "--seeds", "0:3", "--workers", "2"]
    out = tmp_path / "out.json"
    res = _run([*argv, "--out", str(out)], "run:INT", inherited=signal.SIG_IGN)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("A1: 3 holds, 0 fails"), res.stdout
    assert len(json.loads(out.read_text())) == 3


def group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (from ``/proc``; zombies count as gone)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_pooled_sweep_stopped_while_its_workers_run_leaves_nothing_running(sig, tmp_path):
    """``fastslow sweep F1 --seeds 0:200 --workers 2``; the signal goes to the whole process group
    (as Ctrl-C sends it) once the first point is in the cache, so the workers are running."""
    cache = tmp_path / "c"
    argv = ["sweep", "F1", "--seeds", "0:200", "--workers", "2", "--cache", str(cache)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastslow", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,  # its own process group: what is left of it can be found
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + HANG_GUARD
        while not list(cache.rglob("*.json")):  # a state, not a delay
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no sweep point finished"
            time.sleep(0.1)
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    assert "interrupted" in _one_line(err)
    assert list(cache.rglob("*.json"))  # the finished points are kept
    deadline = time.monotonic() + 60  # a hang guard: the workers are killed, not waited for
    while group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = group_members(proc.pid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"left running: {left}"
