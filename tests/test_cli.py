"""The fastslow command line: verdict outcomes, exit codes and the JSON contract."""

import json
import subprocess
import sys

import pytest

from fastslow.cli import main
from fastslow.numerics import lapack


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "fastslow", *args], capture_output=True, text=True, timeout=300
    )


def test_claims_lists_every_registered_id(capsys):
    from fastslow.verify.registry import CLAIMS

    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    for cid in CLAIMS:
        assert f"{cid:>3}  [" in out


def test_check_prints_a_json_verdict_and_exits_0_when_the_claim_holds():
    res = run("check", "A1", "--seed", "7", "--json")
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert {
        "id",
        "verdict",
        "holds",
        "hypotheses",
        "conclusion",
        "figures",
        "params",
        "seed",
    } <= set(payload)
    assert payload["id"] == "A1" and payload["verdict"] == "holds" and payload["seed"] == 7
    assert payload["hypotheses"]["fast_mask_causal"] == {
        "holds": True,
        "value": 0,
        "rule": "number of fast-mask entries with s > t; 0 required",
        "source": "reference",
    }


def test_a_negative_control_is_outside_the_hypotheses_and_exits_4(capsys):
    assert main(["check", "A1", "--control", "full_slow_mask"]) == 4
    out = capsys.readouterr().out
    assert out.startswith("A1: OUTSIDE-HYPOTHESES (seed 7, negative control full_slow_mask)")
    assert "slow_path_sees_only_completed_blocks: DOES NOT HOLD" in out


def test_the_same_instance_as_parameters_gives_the_same_verdict_as_the_named_control(capsys):
    assert main(["check", "A1", "--param", "slow_mask=full", "--seed", "7", "--json"]) == 4
    by_params = json.loads(capsys.readouterr().out)
    assert main(["check", "A1", "--control", "full_slow_mask", "--json"]) == 4
    by_name = json.loads(capsys.readouterr().out)
    assert by_params["control"] is None and by_name["control"] == "full_slow_mask"
    for key in ("verdict", "hypotheses", "conclusion", "figures", "params", "seed"):
        assert by_params[key] == by_name[key]


def test_a_counterexample_exits_1_and_an_undecidable_valid_input_exits_3(capsys, monkeypatch):
    import numpy as np

    from fastslow.verify.checks import a1
    from fastslow.verify.verdict import Diagnostic

    real = a1.A1.conclude

    def fails(self, inst):
        out = real(self, inst)
        out.parts["no_future_dependence"] = Diagnostic(False, 1.0, "forced")
        return out

    monkeypatch.setattr(a1.A1, "conclude", fails)
    assert main(["check", "A1"]) == 1
    assert capsys.readouterr().out.startswith("A1: FAILS")

    def singular(self, inst):
        np.linalg.inv(np.zeros((2, 2)))

    monkeypatch.setattr(a1.A1, "conclude", singular)
    assert main(["check", "A1", "--json"]) == 3
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert payload["verdict"] == "error"
    assert payload["error"] == {"type": "LinAlgError", "message": "Singular matrix"}
    assert "could not be decided" in captured.err and "bad input" not in captured.err


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "Z9"], "unknown claim ID 'Z9'"),
        (["check", "A1", "--param", "T=15"], "P=4 must divide T=15"),
        (["check", "A1", "--param", "colour=red"], "unknown parameter 'colour'"),
        (["check", "A1", "--param", "T=many"], "parameter T='many': expected int in [1, 256]"),
        (["check", "A1", "--param", "T"], "--param expects KEY=VALUE"),
        (
            ["check", "A1", "--param", "mask=sliding"],
            "parameter mask='sliding': expected str one of",
        ),
        (["check", "A1", "--control", "nope"], "A1 has no negative control 'nope'"),
        (["check", "A1", "--seed", "-3"], "seed must be a non-negative integer"),
    ],
)
def test_bad_input_exits_2_with_a_one_line_reason(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_pending_claim_exits_2_and_says_so(capsys, pending_e1):
    assert main(["check", "E1"]) == 2
    assert "claim E1 is pending" in capsys.readouterr().err


def test_figures_rejects_unknown_ids_and_bad_worker_counts(capsys):
    assert main(["figures", "Q7"]) == 2
    assert "unknown claim ID 'Q7'" in capsys.readouterr().err
    assert main(["figures", "A1", "--workers", "0"]) == 2
    assert "workers must be a positive integer, got 0" in capsys.readouterr().err


def test_figures_are_the_same_bytes_serially_on_a_pool_and_from_the_cache(tmp_path):
    a, b, c, cache = tmp_path / "a", tmp_path / "b", tmp_path / "c", tmp_path / "cache"
    assert main(["figures", "A1", "--out", str(a), "--workers", "1"]) == 0
    assert main(["figures", "A1", "--out", str(b), "--workers", "2", "--cache", str(cache)]) == 0
    assert len(list(cache.rglob("*.json"))) == 2  # one cached point per slow mask
    assert main(["figures", "A1", "--out", str(c), "--workers", "2", "--cache", str(cache)]) == 0
    for name in ("a1_dependence.png", "a1_dependence.pdf"):
        assert (a / name).read_bytes() == (b / name).read_bytes() == (c / name).read_bytes()
    assert b'"claim": "A1"' in (a / "a1_dependence.png").read_bytes()  # provenance in metadata


def test_check_describe_prints_parameters_hypotheses_and_controls(capsys):
    assert main(["check", "A1", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "P: tokens per block (int in [1, 256]; default 4)" in out
    assert "full_slow_mask" in out and "fast_mask_causal" in out


def test_bench_rejects_an_unknown_section(capsys):
    assert main(["bench", "warp_drive", "--quick"]) == 2
    assert "unknown benchmark section 'warp_drive'" in capsys.readouterr().err


def test_check_json_is_exactly_the_verdict_the_python_api_decides(capsys):
    from fastslow.verify.registry import run_check

    assert main(["check", "A1", "--param", "T=8", "--param", "P=2", "--seed", "3", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    api = run_check("A1", {"T": 8, "P": 2}, seed=3).to_json()
    assert cli == json.loads(json.dumps(api))


def test_cli_check_of_the_d4_block_bidirectional_instance_holds_under_other_lapack_answers():
    """The D4 instance that once crashed on another CPU's BLAS exits 0 (holds)."""
    argv = [
        "check",
        "D4",
        "--param",
        "mask=block_bidirectional",
        "--param",
        "gamma=0.3",
        "--param",
        "T=12",
        "--param",
        "P=4",
        "--seed",
        "5",
    ]
    with lapack.other_valid_answers(seed=0, cond=1e16):
        code = main(argv)
    assert code == 0


def _undecided_a1(monkeypatch, conclusion_holds: bool = True):
    """A1 with one declared limit of its check that does not hold on every instance."""
    from fastslow.verify.checks import a1
    from fastslow.verify.verdict import Diagnostic

    real = a1.A1.conclude

    def undecided(self, inst):
        out = real(self, inst)
        out.limits = {"resolvable": Diagnostic(False, 3.59, "ratio to the rounding floor ≥ 10")}
        if not conclusion_holds:
            out.parts["no_future_dependence"] = Diagnostic(False, 1.0, "forced")
        return out

    monkeypatch.setattr(a1.A1, "limits", {"resolvable": "the finite difference resolves it"})
    # the part this limit governs (a limit hides only the parts it declares; any other failing
    # part decides fails: tests/test_faults.py)
    monkeypatch.setattr(a1.A1, "limit_governs", {"resolvable": ("no_future_dependence",)})
    monkeypatch.setattr(a1.A1, "conclude", undecided)


@pytest.mark.parametrize("conclusion_holds", [True, False])
def test_an_undecided_instance_exits_5_names_its_limit_and_never_fails(
    capsys, monkeypatch, conclusion_holds
):
    _undecided_a1(monkeypatch, conclusion_holds)
    assert main(["check", "A1"]) == 5
    out = capsys.readouterr().out
    assert out.startswith(
        "A1: UNDECIDED (seed 0): the check cannot decide this instance: resolvable"
    )
    assert "  limit resolvable: DOES NOT HOLD (value 3.59; ratio to the rounding floor ≥ 10)" in out
    assert main(["check", "A1", "--json"]) == 5
    payload = json.loads(capsys.readouterr().out)
    assert payload["verdict"] == "undecided" and payload["holds"] is False
    assert payload["limits"] == {
        "resolvable": {"holds": False, "value": 3.59, "rule": "ratio to the rounding floor ≥ 10"}
    }


def test_check_help_states_every_exit_code(capsys):
    assert main(["check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for code, outcome in ((0, "holds"), (1, "fails"), (4, "outside-hypotheses"), (5, "undecided")):
        assert f"{code} {outcome}" in out
    assert "3 error" in out and "2 bad input" in out


def test_a_sweep_exits_with_its_worst_outcome_in_the_order_of_severity():
    from fastslow.verify.verdict import EXIT_CODES, OUTCOMES, SEVERITY, worst_outcome

    assert set(SEVERITY) == set(OUTCOMES) == set(EXIT_CODES)
    assert worst_outcome(["holds", "outside-hypotheses"]) == "outside-hypotheses"
    assert worst_outcome(["outside-hypotheses", "undecided", "holds"]) == "undecided"
    assert worst_outcome(["undecided", "fails"]) == "fails"
    assert worst_outcome(["fails", "error", "holds"]) == "error"
    assert EXIT_CODES["undecided"] == 5
    with pytest.raises(ValueError):
        worst_outcome([])


def test_a_sweep_with_an_undecided_point_counts_it_and_exits_5(tmp_path, capsys, monkeypatch):
    _undecided_a1(monkeypatch)
    rc = main(["sweep", "A1", "--grid", "T=8", "--grid", "P=2", "--seeds", "0:2"])
    out = capsys.readouterr().out
    assert rc == 5, out
    assert "A1: 0 holds, 0 fails, 0 outside-hypotheses, 2 undecided, 0 error of 2 instances" in out
    assert "undecided at" in out and "resolvable" in out


def test_each_hypothesis_in_the_json_says_its_source(capsys):
    from fastslow.verify.registry import CLAIMS
    from fastslow.verify.verdict import SOURCES

    assert main(["check", "A1", "--param", "T=8", "--param", "P=2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert {k: h["source"] for k, h in payload["hypotheses"].items()} == dict(
        CLAIMS["A1"].hypothesis_sources
    )
    assert all(h["source"] in SOURCES for h in payload["hypotheses"].values())
