"""The thread counts fastslow sets itself (:mod:`numerics.threads`): one override,
``FASTSLOW_THREADS``; every loaded BLAS library and every child process follow it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.numerics import threads
from fastslow.verify import sweep
from fastslow.verify.provenance import provenance

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, os
from fastslow.numerics import threads
import numpy, scipy.linalg  # BLAS loaded before pin(): limited at run time
print(json.dumps({"pinned": threads.pin(), "env": {v: os.environ[v] for v in threads.THREAD_VARS}}))
"""


def _child(**env) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in (threads.ENV, *threads.THREAD_VARS)}
    res = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        env=dict(clean, PYTHONPATH=str(ROOT), **env),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_without_any_variable_blas_runs_one_thread_here_and_in_children():
    """A plain Python (no ``run.sh``, no ``OPENBLAS_NUM_THREADS``): one BLAS thread after pin(),
    and the variables every child process loads its libraries with say 1."""
    out = _child()
    assert out["pinned"]["requested"] == 1 and out["pinned"]["blas"] == 1
    assert set(out["env"].values()) == {"1"}


def test_fastslow_threads_is_the_one_override():
    out = _child(FASTSLOW_THREADS="2", OPENBLAS_NUM_THREADS="7")
    assert out["pinned"]["requested"] == 2 and out["pinned"]["blas"] <= 2
    assert set(out["env"].values()) == {"2"}


@pytest.mark.parametrize("bad", ["0", "two", "-1", "1.5"])
def test_a_bad_thread_count_is_bad_input_naming_the_variable(bad, monkeypatch, capsys):
    monkeypatch.setenv(threads.ENV, bad)
    with pytest.raises(ValueError, match="FASTSLOW_THREADS must be a positive integer"):
        threads.requested()
    assert main(["claims"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "FASTSLOW_THREADS" in err[0] and repr(bad) in err[0]


def test_the_provenance_records_the_thread_counts_in_effect():
    rec = provenance()
    assert rec["threads_effective"]["requested"] == threads.requested()
    assert rec["threads_effective"]["blas"] == threads.blas_threads() == threads.requested()


def test_a_sweep_point_key_holds_the_thread_count_when_it_is_not_one(monkeypatch):
    point = {"claim": "A1", "seed": 0}
    monkeypatch.delenv(threads.ENV, raising=False)
    one = sweep.point_key(sweep.check_point, point)
    monkeypatch.setenv(threads.ENV, "2")
    assert sweep.point_key(sweep.check_point, point) != one
