"""The integrator benchmark's bookkeeping: which runs a speed-up compares, and how it is printed."""

import math

from fastslow.benchmarks import integrators as bench


def test_a_speed_up_is_printed_to_three_significant_digits():
    assert [bench._times(x) for x in (2.9649, 3.0, 61.12, 472.6, 1234.5)] == [
        "2.96×", "3.00×", "61.1×", "473×", "1234×",
    ]  # fmt: skip


def test_speed_ups_compare_the_fastest_run_of_each_side_and_name_scipys(monkeypatch):
    monkeypatch.setattr(bench, "interleaved_times", lambda slow, fast: (slow(), fast()))
    times = {
        "auto": 1.0, "radau": 2.0, "dopri5": None,
        ("RK45", "numpy"): 40.0, ("LSODA", "numpy"): 30.0,
        ("Radau", "numpy+J"): 20.0,
        ("RK45", "compiled"): 3.0, ("DOP853", "compiled"): 4.0, ("BDF", "compiled"): None,
    }  # fmt: skip
    runs = {k: (lambda v=v: v) for k, v in times.items()}
    sp = bench.speedups(times, runs)
    assert sp["ours"] == "auto"
    assert sp["theirs"] == {"numpy": "LSODA", "numpy+J": "Radau", "compiled": "RK45"}
    assert (sp["numpy"], sp["numpy+J"], sp["compiled"]) == (30.0, 20.0, 3.0)
    assert sp["times"]["compiled"] == (3.0, 1.0)


def test_the_overhead_per_call_is_the_time_per_call_less_the_rhs():
    rows = [[0.01, "Numba auto", 1.0, 6e-7, 1e-5, 74, "400/0/0", 0, "—"],
            [0.01, "SciPy RK45 (compiled RHS)", 5.0, 6e-7, 1e-5, 74, "500/0/0", 0, "—"]]  # fmt: skip
    sp = {"ours": "auto", "theirs": {"compiled": "RK45"}, "times": {"compiled": (5e-3, 2e-3)}}
    ours, theirs = bench.overheads(rows, sp, 3e-6)
    assert math.isclose(ours, 2e-3 / 400 - 3e-6) and math.isclose(theirs, 5e-3 / 500 - 3e-6)
    del sp["times"]["compiled"]
    assert all(math.isnan(x) for x in bench.overheads(rows, sp, 3e-6))


def test_a_missing_scipy_kind_gives_nan_not_a_ratio(monkeypatch):
    monkeypatch.setattr(bench, "interleaved_times", lambda slow, fast: (slow(), fast()))
    times = {"auto": 1.0, ("RK45", "numpy"): 5.0}
    sp = bench.speedups(times, {k: (lambda v=v: v) for k, v in times.items()})
    assert sp["numpy"] == 5.0 and math.isnan(sp["compiled"]) and "compiled" not in sp["theirs"]


def test_the_calls_of_a_row_are_its_nfev():
    rows = [[0.01, "Numba auto", 1.8, 6e-7, 1e-5, 74, "473/0/0", 0, "—"],
            [0.01, "SciPy RK45 (compiled RHS)", "—", "—", "—", "—", "—", "—", "capped"]]  # fmt: skip
    assert bench._calls(rows, "Numba auto") == "473"
    assert bench._calls(rows, "SciPy RK45 (compiled RHS)") == "—"
    assert bench._calls(rows, "Numba radau") == "—"
