"""The fastslow command line: exit codes and JSON contract of SPEC §3."""

import json
import subprocess
import sys

import pytest

from fastslow.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "fastslow", *args], capture_output=True, text=True,
                          timeout=300)


def test_claims_lists_every_registered_id(capsys):
    from verify.registry import CLAIMS
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    for cid in CLAIMS:
        assert f"{cid:>3}  [" in out


def test_check_prints_a_json_verdict_and_exits_0_when_the_claim_holds():
    res = run("check", "A1", "--seed", "7", "--json")
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert {"id", "holds", "hypotheses_hold", "figures", "params", "seed"} <= set(payload)
    assert payload["id"] == "A1" and payload["holds"] is True and payload["seed"] == 7


def test_check_exits_1_when_the_conclusion_fails(capsys):
    assert main(["check", "A1", "--param", "slow_mask=full", "--seed", "7"]) == 1
    assert "DOES NOT HOLD" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["check", "Z9"], "unknown claim ID 'Z9'"),
    (["check", "A1", "--param", "T=15"], "P=4 must divide the sequence length T=15"),
    (["check", "A1", "--param", "colour=red"], "unknown parameter 'colour'"),
    (["check", "A1", "--param", "T=many"], "parameter T='many': expected a value of type int"),
    (["check", "A1", "--param", "T"], "--param expects KEY=VALUE"),
    (["check", "A1", "--param", "mask=sliding"], "unknown mask 'sliding'"),
    (["check", "A1", "--seed", "-3"], "seed must be a non-negative integer"),
])
def test_bad_input_exits_2_with_a_one_line_reason(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_pending_claim_exits_2_and_says_so(capsys, monkeypatch):
    import verify.checks as checks

    def pending(claim_id):
        raise checks.PendingClaim(f"claim {claim_id} is pending: no check is implemented yet")
    monkeypatch.setattr(checks, "load", pending)
    assert main(["check", "F3"]) == 2
    assert "pending" in capsys.readouterr().err


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


def test_check_defaults_prints_the_parameters(capsys):
    assert main(["check", "A1", "--defaults"]) == 0
    assert json.loads(capsys.readouterr().out)["P"] == 4


def test_bench_rejects_an_unknown_section(capsys):
    assert main(["bench", "warp_drive", "--quick"]) == 2
    assert "unknown benchmark section 'warp_drive'" in capsys.readouterr().err
