"""Fault injection from a newcomer's session (issue #37): three systems of their own, written
against the public API only (``fastslow.toy``, ``fastslow.check``, the command line), and every
case that session found: a control overridden by a parameter, user code printing into ``--json``
or exiting, ``--describe``'s options, a negative figure seed, an unseeded system file in a sweep,
integers of NumPy's kinds, a mask beyond the memory budget, boolean and complex arrays, figures
over every claim of a system's kind, help texts, hypotheses in a system's own fields, rounded
numbers, parts not evaluated, the progress line, ``--out`` bytes fresh and cached.

Each case ends with its documented exit code and, for a fault, one line naming the value; the
checks that only the surface needs are stubbed (:func:`holds_everywhere`), the newcomer's three
systems are checked for real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from test_faults_cli import no_work, one_line  # noqa: F401 (a fixture)

import fastslow
from fastslow.cli import build_parser, main
from fastslow.cli_output import print_verdict
from fastslow.toy import DepthFlow, GeneratorFamily, LinearLoop
from fastslow.verify.claim import Claim
from fastslow.verify.registry import CLAIMS
from fastslow.verify.sweep import Progress
from fastslow.verify.verdict import Diagnostic, Verdict, not_evaluated

# ------------------------------------------------------------------ the newcomer's three systems


def oscillator_chain(n: int = 3, h: float = 0.1, damping: float = 0.5) -> LinearLoop:
    """``n`` damped oscillators ``(q_i, p_i)``, one explicit-Euler step of depth ``h``; the gate
    couples each momentum to its neighbours' positions."""
    J, G = np.zeros((2 * n, 2 * n)), np.zeros((2 * n, 2 * n))
    for i in range(n):
        q, p = 2 * i, 2 * i + 1
        J[q, q], J[q, p], J[p, q], J[p, p] = 1.0, h, -h, 1.0 - h * damping
        for j in (i - 1, i + 1):
            if 0 <= j < n:
                G[p, 2 * j] = 0.2 * h
    return LinearLoop(J=J, G=G, name="damped oscillator chain")


Y, T = sp.symbols("y t")
X = sp.symbols("x0:3")
ARRIVALS, SERVICE = sp.Rational(1, 2) + Y**2 / 8, sp.Rational(1, 2)
QUEUE = GeneratorFamily(
    Q=sp.Matrix(
        [
            [-ARRIVALS, SERVICE, 0],
            [ARRIVALS, -(ARRIVALS + SERVICE), SERVICE],
            [0, ARRIVALS, -SERVICE],
        ]
    ),
    slow=-2 * Y + X[1] + X[2] + sp.sin(T) / 2,
    y=Y,
    x=X,
    t=T,
    name="birth-death queue",
)
"""Arrivals ``1/2 + y²/8`` (y-dependent), one server at rate ``1/2``: spectral gap 0.5 on the
grid, below the gap of the built-in chain."""

GATED_FLOW = DepthFlow(
    mask="block_causal", T=8, P=4, d=2, gamma=0.05, gate=0.3, name="small gamma, gate 0.3"
)


def test_the_damped_oscillator_chain_holds_for_d7():
    v = fastslow.check("D7", system=oscillator_chain())
    assert v.outcome == "holds", v.summary()
    assert not v.conclusion["jacobians_match_reference"].evaluated  # shown as not evaluated


def test_the_birth_death_queue_is_told_the_t0_it_needs_and_then_holds_for_f2(tmp_path, capsys):
    v = fastslow.check("F2", system=QUEUE)
    assert v.outcome == "outside-hypotheses" and v.violated == ["initial_layer_negligible"]
    assert v.conclusion_holds  # the gap (0.5) fails no part: no default turns it to fails
    rule = v.hypotheses["initial_layer_negligible"].rule
    assert "the parameter t0 ≥ 2.303 would bring it in" in rule
    v = fastslow.check("F2", params={"t0": 2.31}, system=QUEUE)
    assert v.outcome == "holds", v.summary()
    assert v.figures["min_spectral_gap"] == pytest.approx(0.5)


def test_the_gated_block_causal_flow_with_small_gamma_holds_for_f1():
    v = fastslow.check("F1", system=GATED_FLOW)
    assert v.outcome == "holds", v.summary()


# ------------------------------------------------------------------ stubs for the surface


@pytest.fixture
def holds_everywhere(monkeypatch):
    """Every check decides ``holds`` at once (the surface under test, not the claim)."""

    def decide(self, p, seed, control=None, system=None):
        ok = {k: Diagnostic(True, 0.0, "r") for k in self.hypotheses}
        parts = {k: Diagnostic(True, 0.0, "r") for k in self.conclusion}
        limits = {k: Diagnostic(True, 0.0, "r") for k in self.limits}
        return Verdict(self.id, "holds", ok, parts, {"x": 1.0}, p, seed, control, limits=limits)

    monkeypatch.setattr(Claim, "decide", decide)


def system_file(tmp_path, body: str, name: str = "user_system.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


LOOP = """
    import numpy as np
    from fastslow.toy import LinearLoop
    loop = LinearLoop(J=0.5 * np.eye(3), G=0.1 * np.ones((3, 3)))
"""

# ------------------------------------------------------------------ controls stay controls


def test_a_parameter_cannot_undo_what_a_control_violates(no_work, capsys):  # noqa: F811
    argv = ["check", "D7", "--control", "additive_injection", "--param", "gamma=2.0"]
    assert main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert "gamma=2.0 changes what the negative control additive_injection sets" in line
    with pytest.raises(ValueError, match="negative control additive_injection"):
        fastslow.check("D7", params={"gamma": 2.0}, control="additive_injection")


def test_a_control_that_holds_says_it_did_not_fail_as_predicted(holds_everywhere, capsys):
    assert main(["check", "D7", "--control", "additive_injection"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("D7: HOLDS") and "did not fail as predicted" in head
    v = fastslow.check("D7", control="additive_injection")
    assert "did not fail as predicted" in v.notes[0]


# ------------------------------------------------------------------ JSON and exit codes


def test_a_system_file_that_prints_leaves_the_json_valid(holds_everywhere, tmp_path, capsys):
    path = system_file(tmp_path, "print('hello from the user file')\n" + textwrap.dedent(LOOP))
    assert main(["check", "D7", "--system", f"{path}:loop", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["verdict"] == "holds" and "hello from the user file" in err


@pytest.mark.parametrize("call", ["os._exit(0)", "os._exit(3)", "sys.exit(0)"])
def test_a_system_file_that_exits_is_bad_input_whatever_its_code(call, tmp_path):
    path = system_file(tmp_path, f"import os, sys\n{call}\n")
    run = subprocess.run(
        [sys.executable, "-m", "fastslow", "check", "D7", "--system", f"{path}:loop", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert f"called {call} while loading" in one_line(run.stderr)


def test_describe_json_is_json_and_describe_checks_its_parameters(capsys):
    assert main(["check", "D7", "--describe", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["id"] == "D7" and "reference_contractive" in described["hypotheses"]
    assert main(["check", "D7", "--describe", "--param", "gamma=nan"]) == 2
    assert "gamma=nan" in one_line(capsys.readouterr().err)


def test_a_negative_figure_seed_is_bad_input_and_leaves_no_folder(no_work, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "figs"
    assert main(["figures", "D7", "--seed", "-5", "--out", str(out)]) == 2
    assert "--seed must be a non-negative integer, got -5" in one_line(capsys.readouterr().err)
    assert not out.exists()


UNSEEDED = """
    import numpy as np
    from fastslow.toy import LinearLoop
    J = 0.5 * np.eye(3) + 0.01 * np.random.default_rng().standard_normal((3, 3))
    loop = LinearLoop(J=J, G=0.1 * np.ones((3, 3)))
"""

GLOBAL_RNG = """
    import numpy as np
    from fastslow.toy import LinearLoop
    J = 0.5 * np.eye(3) + 0.01 * np.random.randn(3, 3)
    loop = LinearLoop(J=J, G=0.1 * np.ones((3, 3)))
"""


def test_a_sweep_over_an_unseeded_system_file_is_one_line_not_every_point_an_error(
    holds_everywhere, tmp_path, capsys
):
    path = system_file(tmp_path, UNSEEDED)
    assert (
        main(["sweep", "D7", "--system", f"{path}:loop", "--seeds", "0:3", "--workers", "1"]) == 2
    )
    assert "builds a different system each time it is loaded" in one_line(capsys.readouterr().err)
    path = system_file(tmp_path, GLOBAL_RNG, "global_rng.py")  # the global generator: seeded
    assert (
        main(["sweep", "D7", "--system", f"{path}:loop", "--seeds", "0:3", "--workers", "1"]) == 0
    )
    assert capsys.readouterr().out.startswith("D7: 3 holds")


def test_sizes_of_any_integer_kind_are_accepted(holds_everywhere):
    flow = DepthFlow(
        mask="block_causal", T=np.int64(8), P=np.int32(4), d=np.uint8(2), L=np.int16(2)
    )
    assert all(type(getattr(flow, k)) is int for k in ("T", "P", "d", "L"))
    assert fastslow.check("D3", params={"T": np.int64(8), "P": np.int64(4)}).outcome == "holds"
    assert fastslow.check("D3", system=flow).outcome == "holds"
    from fastslow.theory.slow_manifold import slow_manifold  # the symbolic derivation F1 uses

    assert slow_manifold("block_causal", np.int64(2), np.int32(1)) is not None


def test_a_named_mask_beyond_the_memory_budget_is_refused_before_it_is_built():
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"T=200000: the causal mask alone needs about .* budget"):
        DepthFlow(mask="causal", T=200000, P=4, d=2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 << 20


@pytest.mark.parametrize(
    "J, message",
    [(np.eye(3, dtype=bool), "J is boolean"), (np.eye(3) + 0j, "J has complex entries")],
    ids=["boolean", "complex"],
)
def test_boolean_or_complex_arrays_are_refused_never_cast(J, message):
    with pytest.raises(TypeError, match=message):
        LinearLoop(J=J, G=np.eye(3))


def test_figures_over_every_claim_of_a_kind_skip_a_claim_whose_limits_refuse_the_system():
    from fastslow import figures  # deferred: matplotlib

    wide = DepthFlow(mask="block_causal", T=8, P=4, d=8, name="d = 8")  # F1 takes d ≤ 4
    drawn, skipped = figures.system_figures(None, wide)
    assert drawn and not any(sp.claim == "F1" for sp in drawn)
    assert any(name.startswith("f1_") and "F1 does not check it" in why for name, why in skipped)
    with pytest.raises(ValueError, match="d = 8"):
        figures.system_figures(["F1"], wide)  # named: bad input


def test_sweep_out_is_the_same_bytes_fresh_or_from_the_cache(holds_everywhere, tmp_path):
    cache, fresh, cached = tmp_path / "cache", tmp_path / "fresh.json", tmp_path / "cached.json"
    for out in (fresh, cached):
        argv = ["sweep", "D3", "--seeds", "0:2", "--workers", "1", "--cache", str(cache)]
        assert main([*argv, "--out", str(out)]) == 0
    assert fresh.read_bytes() == cached.read_bytes()


# ------------------------------------------------------------------ a newcomer finds things


def test_top_level_help_describes_the_tool_and_every_command_and_option(capsys):
    parser = build_parser()
    assert "fast-slow" in parser.description and "exit codes" in parser.epilog
    subs = next(a for a in parser._actions if a.dest == "command").choices
    assert set(subs) == {"claims", "check", "figures", "bench", "sweep", "readme", "trained-report"}
    for name, sub in subs.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest}"


def test_claims_json_gives_each_kind_its_own_text_and_cuts_nothing(capsys):
    assert main(["claims", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    d7 = {s["kind"]: s for s in rows["D7"]["systems"]}
    assert d7["LinearLoop"]["needs"] != d7["DepthFlow"]["needs"]
    assert "ρ(J) < 1" in d7["LinearLoop"]["needs"] and d7["LinearLoop"]["only_if"] is None
    assert "slow_mask='full'" in d7["DepthFlow"]["needs"]
    for cid in ("D4", "D5"):
        assert "blocks of at most" in rows[cid]["systems"][0]["only_if"]
    needs = {cid: " ".join(s["needs"] or "" for s in r["systems"]) for cid, r in rows.items()}
    for cid in ("A3", "D3", "D4", "D6"):
        assert "gate=0.0" in needs[cid], cid
    assert "norm=False" in needs["D5"] and "value_gain" in needs["D5"]
    for cid in ("D6", "F1"):
        assert "gamma > 0" in needs[cid], cid
    for cid, unit in CLAIMS.items():  # every kind a claim takes is described in its fields
        assert set(unit.system_terms) == {k.__name__ for k in unit.systems}, cid


def test_human_output_rounds_to_4_digits_and_shows_a_part_not_evaluated(capsys):
    unit = CLAIMS["D4"]
    parts = {k: Diagnostic(True, 0.29977311686832053, "r") for k in unit.conclusion}
    parts["projectors_exact"] = not_evaluated("T=32 > eig_max_T=12")
    ok = {k: Diagnostic(True, 0, "r") for k in unit.hypotheses}
    v = Verdict("D4", "holds", ok, parts, {"rho": 0.29977311686832053}, {}, 0)
    print_verdict(v)
    out = capsys.readouterr().out
    assert "(not evaluated: projectors_exact)" in out.splitlines()[0]
    assert "  conclusion projectors_exact: not evaluated: T=32 > eig_max_T=12" in out
    assert "rho: 0.2998" in out and "0.29977311686832053" not in out


def test_the_progress_line_is_honest_from_its_first_line_and_silent_off_a_terminal(monkeypatch):
    bar = Progress(3, "sweep D7", enabled=False)
    assert bar.text() == "sweep D7: 0/3  (estimating the time left)"
    bar.skip(2)
    assert bar.text() == "sweep D7: 2/3, 2 from the cache  (estimating the time left)"
    bar.update()
    assert bar.text().endswith("(done)") and "nan" not in bar.text()
    assert Progress(3, "x").enabled is False  # pytest's stderr is not a terminal
    from fastslow.numerics.lm.train import shows_progress

    long_run = SimpleNamespace(progress=None, tokens=500_000)  # what shows_progress reads
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert shows_progress(long_run) is False  # E1's training: no lines into a log
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert shows_progress(long_run) is True
