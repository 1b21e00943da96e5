"""The resource estimates are true: ``Claim.memory_bytes`` bounds the memory a check allocates
(tracemalloc peak, measured here at small points where the claim's own arrays dominate), and the
time models grow with their parameters and refuse an over-budget point in one line before any work.

No timed assertion: the time models are counts of work stated by each claim at the rates of one
calibrated table (:mod:`verify.cost_model`), measured at the limits by ``fastslow bench limits``;
here they are tested by their form, monotonicity and refusals.
"""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from fastslow.cli import main
from fastslow.numerics.lm import blockstats, corpus
from fastslow.verify import checks
from fastslow.verify.budgets import MEMORY_BUDGET_ENV, TIME_BUDGET_ENV
from fastslow.verify.checks.e1 import claim as e1_claim
from fastslow.verify.claim import Claim
from fastslow.verify.cost_model import RATES, seconds
from fastslow.verify.registry import CLAIMS

SLACK = 8 << 20
"""Allowance for the Python objects of a verdict (diagnostics, figures, series) beside the arrays
an estimate counts."""

MEMORY_POINTS = [
    ("A1", {"T": 64, "P": 1, "d": 16, "L": 4}),
    ("A2", {"T": 512, "P": 4, "d": 64, "m": 256}),
    ("D2", {"T": 8, "P": 1, "d": 8, "L_min": 64, "L_max": 1024}),
    ("D2", {"T": 32, "P": 1, "d": 16, "L_min": 16, "L_max": 256}),  # peak 51 MB, estimate 57 MB
    ("D2", {"T": 8, "P": 1, "d": 4, "path": "step", "L_max": 1024}),
    ("D8", {"family": "gaussian_ar1", "P": 16, "N": 16, "n_seq": 2000, "n_future": 4}),
    ("D8", {"family": "poisson", "P": 8, "N": 16, "n_seq": 400, "K": 4, "n_future": 4}),
    ("D9", {"P": 16, "N": 16, "n_grad": 8192, "steps": 20, "seeds": 2}),
    ("F3", {"widths": (2, 4), "n_seeds": 3, "steps": (0, 20), "n_test": 20000, "attn_seeds": 1}),
    ("F3", {"widths": (64, 128), "n_seeds": 3, "steps": (0, 20), "n_test": 50000, "attn_seeds": 1}),
]


def traced_peak(fn) -> int:
    """Peak bytes allocated through Python's allocators (NumPy's included) while ``fn`` runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "cid, params", MEMORY_POINTS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(MEMORY_POINTS)]
)
def test_the_memory_estimate_bounds_what_a_small_check_allocates(cid, params):
    unit = CLAIMS[cid]
    p = unit.resolve(params)
    unit.check(params)  # compile once: Numba's and LLVM's memory is the base, not the check's
    peak = traced_peak(lambda: unit.check(params, seed=1))
    assert peak <= unit.memory_bytes(p) + SLACK, (cid, peak, unit.memory_bytes(p))


def test_e1_counts_the_block_histograms_of_its_structure_hypothesis():
    """E1's parent process builds a ``vocab``-wide histogram per block of ``P`` training tokens
    (2.27 GiB resident at ``P = 1``); its estimate counts them, training aside."""
    base = corpus.pydoc_corpus()
    unit = CLAIMS["E1"]
    for P in (8,):
        p = unit.resolve({"P": P, "T": 2 * P, "tokens": 1000, "workers": 1})
        seed = np.random.SeedSequence(0)
        peak = traced_peak(
            lambda P=P: blockstats.neighbour_mutual_information(base.train, P, corpus.VOCAB, seed)
        )
        training = 2 * 8 * p["L"] * p["batch"] * p["T"] * (3 * p["T"] + 3 * p["m"] + 12 * p["d"])
        assert peak <= unit.memory_bytes(p) - training, (P, peak)


# --------------------------------------------------------------------------- time models

CHECKS = Path(checks.__file__).parent


def test_every_time_model_counts_work_at_the_calibrated_rates():
    """No unit carries its own seconds: each states counts of kinds the table holds, and its
    estimate is those counts at the table's rates."""
    for cid, unit in CLAIMS.items():
        assert type(unit).seconds_estimate is Claim.seconds_estimate, cid
        p = unit.defaults()
        work = unit.work(p)
        assert set(work) <= set(RATES), (cid, set(work) - set(RATES))
        assert all(np.isfinite(n) and n >= 0 for n in work.values()), (cid, work)
        assert unit.seconds_estimate(p) == seconds(work)
    for path in sorted(CHECKS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\w*_SECONDS\b|def \w*_seconds\(", text, re.M), path.name


def test_an_uncalibrated_kind_of_work_is_an_error():
    with pytest.raises(KeyError):
        seconds({"teleportation": 1})


GROWS = [
    ("A1", {"T": 32, "P": 1}, ["T", "d", "L"]),
    ("D2", {"L_max": 4096}, ["T", "d", "L_max"]),
    ("D3", {}, ["T", "d", "L", "n_draws"]),
    ("D6", {}, ["d", "L"]),
    ("E1", {"tokens": 100000}, ["tokens", "pilot_seeds", "T", "d", "m", "L"]),
    ("D8", {}, ["n_seq", "N", "P", "K", "n_future"]),
    ("D8", {"family": "gaussian_ar1"}, ["n_seq", "N", "n_future"]),
    ("D9", {}, ["n_grad", "n_train", "N", "seeds", "steps"]),
    ("F2", {}, ["n_eps", "n_t", "n_grid", "P_max"]),
]


@pytest.mark.parametrize("cid, base, names", GROWS, ids=[c for c, _, _ in GROWS])
def test_a_time_model_grows_with_each_size_it_names(cid, base, names):
    unit = CLAIMS[cid]
    p = {**unit.defaults(), **base}
    before = unit.seconds_estimate(p)
    assert before > 0
    for name in names:
        bigger = dict(p, **{name: 2 * p[name]})
        assert unit.seconds_estimate(bigger) > before, (cid, name)


def test_f2_grows_as_its_smallest_eps_and_its_tolerances_shrink():
    unit = CLAIMS["F2"]
    p = unit.defaults()
    times = [unit.seconds_estimate(dict(p, eps_min=e)) for e in (1e-3, 1e-4, 1e-5, 1e-6)]
    assert times == sorted(times) and times[0] < times[-1]
    tight = [unit.seconds_estimate(dict(p, rtol=r, atol=r / 100)) for r in (1e-10, 1e-12, 1e-14)]
    assert tight == sorted(tight) and tight[0] < tight[-1]


def test_e1_shares_its_runs_among_its_workers_but_not_beyond_the_cores(monkeypatch):
    unit = CLAIMS["E1"]
    p = unit.defaults()
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    one, two, many = (unit.seconds_estimate(dict(p, workers=w)) for w in (1, 2, 16))
    assert one > two == many


REFUSED = [
    (
        ["check", "A1", "--param", "T=256", "--param", "P=1", "--param", "d=64", "--param", "L=64"],
        "60",
        "A1 with",
    ),
    (
        ["check", "D3", "--param", "n_draws=20", "--param", "L=64", "--param", "T=256"]
        + ["--param", "d=64", "--param", "temperatures=" + ",".join(["0.1"] * 16)],
        "60",
        "D3 with",
    ),
    (
        ["check", "D6", "--param", "T=8", "--param", "P=2", "--param", "d=16", "--param", "L=16"],
        "60",
        "D6",
    ),
    (["check", "D2", "--param", "L_min=4096", "--param", "L_max=65536"], "60", "D2"),
    (["check", "E1", "--param", "tokens=100000000"], "600", "E1 with tokens=100000000"),
    (["check", "E1", "--param", "workers=1"], "600", "E1 with workers=1"),
    (
        ["check", "F2", "--param", "n_eps=40", "--param", "eps_min=1e-6"]
        + ["--param", "rtol=1e-14", "--param", "atol=1e-16"],
        "600",
        "F2 with",
    ),
    (
        ["check", "D8", "--param", "n_seq=200000", "--param", "K=8", "--param", "P=8"]
        + ["--param", "N=8", "--param", "n_future=256"],
        "60",
        "D8 with",
    ),
]


@pytest.mark.parametrize(
    "argv, budget, message", REFUSED, ids=[a[1] + "-" + a[-1] for a, _, _ in REFUSED]
)
def test_an_over_budget_point_is_refused_in_one_line_before_any_work(
    argv, budget, message, capsys, monkeypatch
):
    monkeypatch.setattr(Claim, "decide", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "50%")
    monkeypatch.setenv(TIME_BUDGET_ENV, budget)
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and message in err[0] and "beyond the time budget" in err[0], err


def test_d2_at_its_deepest_ladder_is_refused_by_a_small_memory_budget(capsys, monkeypatch):
    monkeypatch.setattr(Claim, "decide", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "2G")
    argv = ["check", "D2", "--param", "T=64", "--param", "P=1", "--param", "d=16"]
    argv += ["--param", "L_min=4096", "--param", "L_max=65536"]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "beyond the memory budget of 2 GiB" in err[0], err


def test_e1_counts_one_selection_run_per_learning_rate_only_when_there_is_a_choice():
    """E1's run count: a grid of several learning rates costs one selection run each, a single
    rate none; then two models per seed (pilot, assumed test seeds, extra)."""
    claim = CLAIMS["E1"]
    seeds = claim.defaults()["pilot_seeds"] + e1_claim.ASSUMED_TEST_SEEDS
    for grid, selection in (((3e-3,), 0), ((1e-3, 3e-3, 1e-2), 3)):
        p = claim.resolve({"lr_grid": grid, "extra_seeds": 2})
        assert claim.runs_estimate(p) == selection + 2 * (seeds + 2)
