"""Sweeps: same results serially, on a process pool and on a local Dask cluster; resumable cache;
reruns with the same seed reproduce check results bit for bit."""

import json
import subprocess
import sys

import pytest

from fastslow.cli import main
from fastslow.verify import sweep

POINTS = [
    dict(claim="A1", seed=s, P=P, slow_mask=m)
    for s in (0, 1)
    for P in (2, 4)
    for m in ("blockcausal", "full")
]


def test_grid_is_the_cartesian_product_in_order():
    assert sweep.grid(a=[1, 2], b="xy") == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]
    with pytest.raises(ValueError, match="sweep axis 'b' is empty"):
        sweep.grid(a=[1], b=[])


def test_process_pool_gives_the_serial_results_bit_for_bit():
    serial = sweep.sweep(sweep.check_point, POINTS)
    with sweep.local_executor(2) as ex:
        pooled = sweep.sweep(sweep.check_point, POINTS, executor=ex)
    assert json.dumps(serial, sort_keys=True) == json.dumps(pooled, sort_keys=True)
    assert [r["holds"] for r in serial] == [
        m == "blockcausal" for m in (p["slow_mask"] for p in POINTS)
    ]


def test_dask_local_cluster_gives_the_same_results_as_the_process_pool():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        with sweep.executor_for(
            scheduler=cluster.scheduler_address
        ) as executor:  # as --scheduler does
            on_dask = sweep.sweep(sweep.check_point, POINTS, executor=executor)
    with sweep.local_executor(2) as ex:
        pooled = sweep.sweep(sweep.check_point, POINTS, executor=ex)
    assert json.dumps(on_dask, sort_keys=True) == json.dumps(pooled, sort_keys=True)


def _count_calls(x, log):
    with open(log, "a") as f:
        f.write(f"{x}\n")
    return x * x


def test_an_interrupted_sweep_resumes_from_the_cache(tmp_path):
    log = tmp_path / "calls.txt"
    pts = [dict(x=i, log=str(log)) for i in range(5)]
    assert sweep.sweep(_count_calls, pts[:3], cache_dir=tmp_path / "c") == [0, 1, 4]
    assert sweep.sweep(_count_calls, pts, cache_dir=tmp_path / "c") == [0, 1, 4, 9, 16]
    assert log.read_text().split() == ["0", "1", "2", "3", "4"]  # each point computed once


def test_sweep_rejects_bad_arguments():
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        sweep.sweep(_count_calls, [], executor="dask")
    with pytest.raises(TypeError, match="every sweep point must be a dict"):
        sweep.sweep(_count_calls, [1, 2])


def test_same_seed_reproduces_a_check_bit_for_bit_in_a_fresh_process():
    code = (
        "import json,sys; from fastslow.verify.registry import run_check; "
        "print(json.dumps(run_check('A1', {'T': 8, 'P': 2}, seed=5).to_json(), sort_keys=True))"
    )
    a = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    b = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert a == b and json.loads(a)["seed"] == 5


def test_sweep_command_reports_where_the_conclusion_fails(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    rc = main(
        [
            "sweep",
            "A1",
            "--grid",
            "slow_mask=blockcausal,full",
            "--seeds",
            "0:2",
            "--cache",
            str(tmp_path / "cache"),
            "--out",
            str(out),
        ]
    )
    assert rc == 4  # the worst verdict: the full slow mask is outside the hypotheses
    text = capsys.readouterr().out
    assert "A1: 2 holds, 0 fails, 2 outside-hypotheses, 0 undecided, 0 error of 4 instances" in text
    assert len(json.loads(out.read_text())) == 4
    assert main(["sweep", "A1", "--seeds", "x"]) == 2


def _array_point(x):
    return {"v": (x, float("inf")), "a": [x / 3]}


def _not_json(x):
    return {1, 2}


def test_results_are_the_same_whether_computed_or_read_from_the_cache(tmp_path):
    fresh = sweep.sweep(_array_point, [dict(x=1), dict(x=2)], cache_dir=tmp_path)
    cached = sweep.sweep(_array_point, [dict(x=1), dict(x=2)], cache_dir=tmp_path)
    assert (
        fresh
        == cached
        == [{"v": [1, float("inf")], "a": [1 / 3]}, {"v": [2, float("inf")], "a": [2 / 3]}]
    )


def test_a_result_without_a_json_form_is_a_clear_type_error():
    with pytest.raises(TypeError, match=r"_not_json\(\{'x': 1\}\) must be JSON-serialisable"):
        sweep.sweep(_not_json, [dict(x=1)])


def test_the_cache_is_keyed_by_the_source_fingerprint(tmp_path, monkeypatch):
    from fastslow.verify import provenance

    log = tmp_path / "calls.txt"
    pts = [dict(x=3, log=str(log))]
    sweep.sweep(_count_calls, pts, cache_dir=tmp_path / "c")
    sweep.sweep(_count_calls, pts, cache_dir=tmp_path / "c")
    assert log.read_text().split() == ["3"]
    monkeypatch.setattr(provenance, "source_fingerprint", lambda: "edited-code")
    sweep.sweep(
        _count_calls, pts, cache_dir=tmp_path / "c"
    )  # other code: never served stale results
    assert log.read_text().split() == ["3", "3"]


def test_executor_for_picks_serial_pool_or_rejects():
    import concurrent.futures as cf

    with sweep.executor_for(1) as ex:
        assert ex is None
    with sweep.executor_for(2) as ex:
        assert isinstance(ex, cf.ProcessPoolExecutor)
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            with sweep.executor_for(bad):
                pass


def test_verdicts_survive_the_json_round_trip_including_non_finite_numbers():
    from fastslow.verify.registry import run_check
    from fastslow.verify.verdict import Verdict

    r = run_check("D7", {"slow_mask": "blockcausal"}, seed=0)  # g_c = inf: the gap D7 reports
    back = Verdict.from_json(sweep.as_json(r.to_json()))
    assert back.figures["critical_gate"] == float("inf") == r.figures["critical_gate"]
    assert back.outcome == r.outcome and back.params == sweep.as_json(r.params)
    assert back.hypotheses == r.hypotheses and back.to_json() == sweep.as_json(r.to_json())
