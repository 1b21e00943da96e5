"""Fault injection for your own systems (issue #30, items 1-3): a broken system is bad input (one
line naming the fault, exit 2, before any work), from the command line and from the Python API;
every verdict on a system is strict JSON whatever the system holds; the human verdict names the
system and its own seed; time and memory are estimated on the system's own sizes; ``claims``,
``claims --json`` and ``--describe`` list the kinds each claim checks; ``sweep --system`` sweeps a
system over seeds (its fingerprint in every cache key) and refuses a grid over a parameter the
system replaces.

Where only the surface is under test the claims' work (:meth:`verify.claim.Claim.decide`) is
stubbed, so a fault that slipped through would show as exit 3 (the stub's ``error``), not pass.
The few real checks are A1 on a 4-token flow (about a second).
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import fastslow
from fastslow.cli import main
from fastslow.figures import rendering
from fastslow.numerics.model.activations import Activation
from fastslow.numerics.toy import markov
from fastslow.toy import DepthFlow, GeneratorFamily, LinearLoop
from fastslow.verify import sweep
from fastslow.verify.claim import Claim, describe_system
from fastslow.verify.json_values import jsonable
from fastslow.verify.registry import CLAIMS, IDS
from fastslow.verify.verdict import Verdict

SYSTEMS_FILE = """
import sys
import numpy as np
import sympy as sp
from fastslow.toy import DepthFlow, GeneratorFamily, LinearLoop
from fastslow.numerics.model.activations import Activation
from fastslow.numerics.toy import markov

y, t = sp.symbols("y t")
x = sp.symbols("a b")


def nan_in_q():
    return GeneratorFamily(sp.Matrix([[-1, sp.nan], [1, -1]]), -y, y, x)


def sin_of_the_fast_state():
    return GeneratorFamily(sp.Matrix([[-1, 1 + y**2], [1, -1 - y**2]]), -y + sp.sin(x[0]), y, x)


def stiff_slow_field():
    n, xs = 3, sp.symbols("x0:3")
    Q = sp.zeros(n, n)
    for j in range(n):
        for i in range(n):
            if i != j:
                Q[i, j] = (1 + (i + 2 * j) % 3) * (1 + y**2 / (i + j + 1)) + sp.Rational(i, 3) * y**2
    for j in range(n):
        Q[j, j] = -sum(Q[i, j] for i in range(n) if i != j)
    slow = -y + sum((k + 1) * xs[k] for k in range(n)) * (1 + y**2) / 3
    return GeneratorFamily(Q, slow, y, xs, t, name="stiff")


def complex_in_q():
    return GeneratorFamily(sp.Matrix([[-1, 1 + sp.I], [1, -1]]), -y, y, x)


def nan_set_after_construction():
    loop = LinearLoop(0.5 * np.eye(3), np.eye(3))
    loop.J[1, 1] = np.nan
    return loop


def complex_j():
    return LinearLoop(0.5 * np.eye(3) + 0j, np.eye(3))


def g_reshaped_after_construction():
    loop = LinearLoop(0.5 * np.eye(3), np.eye(3))
    loop.G = np.eye(4)
    return loop


def flow_resized_after_construction():
    flow = DepthFlow("causal", P=2, d=2, T=4)
    flow.T = 5
    return flow


class Broken(LinearLoop):
    def describe(self):
        raise RuntimeError("boom")


def describe_raises():
    return Broken(0.5 * np.eye(3), np.eye(3))


def exits():
    sys.exit(7)


def user_activation():
    soft = Activation("soft", np.tanh, lambda z: 1 - np.tanh(z) ** 2, smooth=True)
    return DepthFlow("causal", P=2, d=2, T=4, sigma=soft, gate=0.5, seed=7, name="mine")


def flow7():
    return DepthFlow("causal", P=2, d=2, T=4, gate=0.5, seed=7, name="flow7")


def big_loop():
    return LinearLoop(0.5 * np.eye(700), np.eye(700) / 700, name="big")


def tiny_loop():
    return LinearLoop(0.5 * np.eye(2), np.eye(2), name="tiny")


three = 3
"""


@pytest.fixture(scope="module")
def systems_file(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("systems")
    (d / "exit7.py").write_text("import sys\nsys.exit(7)\n")
    (d / "raises.py").write_text("raise RuntimeError('nope')\n")
    path = d / "mine.py"
    path.write_text(SYSTEMS_FILE)
    return path


def one_line(err: str) -> str:
    """The single line of ``err``; fails on a traceback or on more than one line."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def stub_decide(self, p, seed, control=None, system=None):
    """A check that does no work: outcome ``error`` at once (exit 3 if a fault slipped through)."""
    return Verdict(
        self.id, "error", {}, {}, {}, p, seed, control, error={"type": "Stub", "message": "stub"}
    )


# --------------------------------------------------------------------------- broken systems

BROKEN = [
    ("F2", "nan_in_q", "Q[0, 1] = nan is not finite"),
    ("F2", "complex_in_q", "is complex"),
    # sin(a) was read as a free atom and h_1 kept ``a``: exit 3 NameError on a valid-looking system
    ("F2", "sin_of_the_fast_state", "is not a rational function of the fast state a, b"),
    ("D7", "nan_set_after_construction", "J must be finite, found 1 non-finite"),
    ("D7", "complex_j", "J has complex entries"),
    ("D7", "g_reshaped_after_construction", "G must have shape 3×3, got (4, 4)"),
    ("A1", "flow_resized_after_construction", "your DepthFlow 'depth flow' is not valid"),
    ("D7", "describe_raises", "describe() raised RuntimeError: boom"),
    ("D7", "exits", "exits() called sys.exit(7)"),
    ("D7", "three", "three is a int; expected one of the fastslow.toy systems"),
    ("D7", "missing", "defines no 'missing'"),
    ("F2", "flow7", "F2 cannot be checked on a DepthFlow; claims that can:"),
]


@pytest.mark.parametrize(("cid", "name", "message"), BROKEN)
def test_a_broken_system_is_one_line_and_exit_2_before_any_work(
    cid, name, message, systems_file, capsys, monkeypatch
):
    monkeypatch.setattr(Claim, "decide", stub_decide)
    code = main(["check", cid, "--system", f"{systems_file}:{name}"])
    out, err = capsys.readouterr()
    assert code == 2 and not out, (code, out, err)
    line = one_line(err)
    assert line.startswith("fastslow check: bad input:") and message in line, line


@pytest.mark.parametrize(
    ("file", "message"),
    [("exit7.py", "called sys.exit(7) while loading"), ("raises.py", "RuntimeError: nope")],
)
def test_a_system_file_that_exits_or_raises_at_import_is_bad_input(
    file, message, systems_file, capsys, monkeypatch
):
    monkeypatch.setattr(Claim, "decide", stub_decide)
    code = main(["check", "D7", "--system", f"{systems_file.parent / file}:x"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert message in one_line(err)


class Described:
    """A stand-in for a system: only ``describe()`` matters to :func:`describe_system`."""

    def __init__(self, describe):
        self.describe = describe


def _exit():
    raise SystemExit(7)


@pytest.mark.parametrize(
    ("describe", "message"),
    [
        (lambda: 1 / 0, "your Described's describe() raised ZeroDivisionError: division by zero"),
        (_exit, "your Described's describe() raised SystemExit: 7"),
        (lambda: ["n", 3], "your Described's describe() returned a list; expected a dict"),
    ],
)
def test_describing_a_system_that_cannot_be_described_is_one_line_of_bad_input(describe, message):
    """One description of a user system for the checks and the figures alike
    (:func:`verify.claim.describe_system`): a ``describe()`` that raises (even ``SystemExit``) or
    returns anything but a mapping is a ``ValueError`` naming it."""
    with pytest.raises(ValueError) as caught:
        describe_system(Described(describe))
    assert str(caught.value) == message


def test_a_description_is_strict_json_and_the_figures_use_the_same_one():
    raw = {"J": np.eye(2), "rate": np.float64("inf"), "f": np.sin, "z": 1 + 2j}
    desc = describe_system(Described(lambda: raw))
    assert json.loads(json.dumps(desc, allow_nan=False)) == desc == jsonable(raw)
    assert rendering.describe_system is describe_system


def test_the_python_api_refuses_a_mutated_system_with_the_same_message(monkeypatch):
    monkeypatch.setattr(Claim, "decide", stub_decide)
    loop = LinearLoop(0.5 * np.eye(3), np.eye(3), name="mine")
    loop.J[0, 2] = np.inf
    with pytest.raises(ValueError, match=r"your LinearLoop 'mine' is not valid: J must be finite"):
        fastslow.check("D7", loop)
    loop = LinearLoop(0.5 * np.eye(3), np.eye(3))
    loop.J = loop.J.astype(complex)
    with pytest.raises(TypeError, match="J has complex entries"):
        fastslow.check("D7", loop)
    with pytest.raises(TypeError, match="system must be a fastslow.toy system"):
        fastslow.check("D7", {"J": np.eye(2)})
    flow = DepthFlow("causal", P=2, d=2, T=4)
    flow.seed = -1
    with pytest.raises(ValueError, match="seed"):
        fastslow.check("A1", flow)


def test_a_mutated_system_is_checked_on_a_copy_and_left_as_it_was(monkeypatch):
    """The check validates a copy of the current fields: a valid mutation is honoured (the copy
    sees it), and the user's object is not changed by the validation."""
    monkeypatch.setattr(Claim, "decide", stub_decide)
    loop = LinearLoop(0.5 * np.eye(2), np.eye(2))
    loop.J = [[0.25, 0.0], [0.0, 0.5]]  # a list: valid, made an array on the copy only
    assert CLAIMS["D7"].checked_system(loop).J.shape == (2, 2)
    assert isinstance(loop.J, list)


@pytest.mark.parametrize(
    "make",
    [
        lambda: LinearLoop([[1.0, 2.0]], [[1.0, 2.0]]),
        lambda: LinearLoop([["1", "2"], ["3", "4"]], np.eye(2)),
        lambda: LinearLoop(np.eye(2), np.eye(2), name=3),
        lambda: GeneratorFamily(sp.Matrix([[-1, sp.oo], [1, -1]]), 0, *sp.symbols("y a b")[:1],
                                sp.symbols("a b")),
        lambda: GeneratorFamily(sp.Matrix([[-1, 1], [1, -1]]), sp.zoo, sp.Symbol("y"),
                                sp.symbols("a b")),
        lambda: DepthFlow("causal", P=2, d=2, T=4, scale=1j),
        lambda: DepthFlow("causal", P=2, d=2, T=4, gate=math.nan),
        lambda: DepthFlow(np.ones((4, 4)), P=2, d=2),
    ],
)  # fmt: skip
def test_broken_fields_are_refused_when_the_system_is_made(make):
    with pytest.raises((ValueError, TypeError)) as info:
        make()
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


# --------------------------------------------------------------------------- JSON and the verdict


class _Opaque:
    def __repr__(self):
        return f"<Opaque at {hex(id(self))}>"


class _ReprRaises:
    def __repr__(self):
        raise RuntimeError("no repr")


def test_any_description_reduces_to_strict_json():
    cyclic: list = []
    cyclic.append(cyclic)
    y = sp.Symbol("y")
    value = {
        "numpy": [np.float32(1.5), np.int64(3), np.bool_(True), np.array([[1, 2]]), np.str_("s")],
        "sympy": [y**2 + 1, sp.Rational(1, 3), sp.Integer(4), sp.Matrix([[y]]), sp.pi, sp.nan],
        "nonfinite": [math.inf, -math.inf, math.nan, complex(1, math.nan)],
        "objects": [_Opaque(), _ReprRaises(), np.tanh, len, LinearLoop, {1, 2}, b"\x01"],
        "cyclic": cyclic,
    }
    out = jsonable(value)
    text = json.dumps(out, allow_nan=False)  # strict: raises on anything left over
    assert "0x" not in text  # no memory address: the same text in every run
    assert out["sympy"][0] == "y**2 + 1" and out["objects"][0] == "<Opaque>"
    assert out["objects"][2] == "<function numpy.tanh>"


def test_check_json_with_a_user_activation_is_strict_json(systems_file, capsys):
    code = main(["check", "A1", "--system", f"{systems_file}:user_activation", "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 4), err  # a verdict, whatever it is; never a crash
    data = json.loads(out)
    assert data["system"]["sigma"]["type"] == "Activation"
    assert data["system"]["sigma"]["name"] == "soft" and data["system"]["seed"] == 7


def test_the_human_verdict_names_the_system_and_its_own_seed(systems_file, capsys):
    main(["check", "A1", "--system", f"{systems_file}:flow7"])
    first = capsys.readouterr().out.splitlines()[0]
    assert "your DepthFlow 'flow7', its seed 7; check seed 0" in first, first


# --------------------------------------------------------------------------- budgets on the system


def test_the_time_budget_sees_a_large_linear_loop(systems_file, capsys, monkeypatch):
    """n = 700 was accepted with --time-budget 20 and ran past 120 s: the estimate read D7's
    default T·d = 32. It now reads n (about 9e3 s, so the default budget refuses it too)."""
    monkeypatch.setattr(Claim, "decide", stub_decide)
    code = main(["check", "D7", "--system", f"{systems_file}:big_loop", "--time-budget", "20"])
    line = one_line(capsys.readouterr().err)
    assert code == 2 and "on your LinearLoop 'big' (n=700) would take about" in line, line
    assert "beyond the time budget of 20 s" in line
    code = main(["check", "D7", "--system", f"{systems_file}:tiny_loop", "--time-budget", "60"])
    assert code == 3  # the stub: accepted, and nothing else refused it


def test_the_memory_budget_sees_the_system(systems_file, capsys, monkeypatch):
    monkeypatch.setattr(Claim, "decide", stub_decide)
    code = main(["check", "D7", "--system", f"{systems_file}:big_loop", "--memory-budget", "401M"])
    line = one_line(capsys.readouterr().err)
    assert code == 2 and "(n=700) needs about" in line and "memory budget" in line, line


def test_estimates_read_the_systems_sizes_not_the_replaced_defaults():
    unit = CLAIMS["A1"]
    p = unit.resolve({})
    small = DepthFlow("causal", P=2, d=2, T=4, L=1)
    large = DepthFlow("causal", P=4, d=64, T=256, L=16)
    assert unit.sized(p, large)["T"] == 256 and unit.sized(p, None) is p
    assert unit.seconds_estimate(unit.sized(p, small)) < unit.seconds_estimate(p)
    assert unit.seconds_estimate(unit.sized(p, large)) > unit.seconds_estimate(p)
    assert unit.memory_bytes(unit.sized(p, large)) > unit.memory_bytes(p)
    budget = unit.seconds_estimate(unit.sized(p, large)) / 2
    with pytest.MonkeyPatch.context() as m:
        m.setenv("FASTSLOW_TIME_BUDGET", str(budget))
        unit.within_time_budget(p, small)
        with pytest.raises(ValueError, match=r"on your DepthFlow 'depth flow' \(T=256"):
            unit.within_time_budget(p, large)


def test_integrations_stop_at_their_deadline():
    gen = lambda y: np.array([[-1.0, 1.0], [1.0, -1.0]])
    gen_dy = lambda y: np.zeros((2, 2))
    with pytest.raises(markov.DeadlineExceeded, match="passed its CPU-time deadline at t=0"):
        markov.integrate_coupled(
            gen, gen_dy, 1e-2, [0.5, 0.5], 0.1, [1.0, 0.0], [0.0, 1.0], deadline=0.0
        )


def test_a_stiff_user_slow_field_stops_at_the_time_budget(systems_file, monkeypatch):
    """Its slow field made F2's BDF runs take 44 s of CPU before failing (the estimate, 5.1 s,
    cannot see stiffness): the integrations now stop at the budget, and the verdict keeps the
    deadline as its error. Its reduced solution leaves the grid at t ≈ 2.96 (and then blows up),
    so the outcome is the hypothesis ``reduced_solution_inside_grid``'s, not ``error``."""
    spec = importlib.util.spec_from_file_location("mine_stiff", systems_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("FASTSLOW_TIME_BUDGET", "6")
    start = time.process_time()
    verdict = fastslow.check("F2", module.stiff_slow_field())
    used = time.process_time() - start
    assert verdict.outcome == "outside-hypotheses"
    assert verdict.violated == ["reduced_solution_inside_grid"]
    assert verdict.error["type"] == "DeadlineExceeded"
    assert "ran past the time budget of 6 s" in verdict.error["message"]
    assert used < 6 + 3, used


# --------------------------------------------------------------------------- claims and --describe


def test_claims_lists_the_kinds_each_claim_checks(capsys):
    assert main(["claims"]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = [ln for ln in out if not ln.startswith("       your ")]
    for cid, line in zip(IDS, lines, strict=True):
        kinds = list(CLAIMS[cid].system_kinds())  # the declared kinds and those derived from them
        assert line.split()[0] == cid
        assert f"systems: {', '.join(kinds) or 'built-in only'}]" in line, line
        for kind in [k.__name__ for k in CLAIMS[cid].systems]:  # what each kind's fields need
            assert f"       your {kind} needs: {CLAIMS[cid].system_terms[kind]}" in out


def test_claims_json_is_machine_readable(capsys):
    assert main(["claims", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == list(IDS)
    for row in rows:
        unit = CLAIMS[row["id"]]
        assert row["status"] == ("implemented" if unit.implemented else "pending")
        assert [s["kind"] for s in row["systems"]] == list(unit.system_kinds())
        declared = [k.__name__ for k in unit.systems]
        for s in row["systems"]:
            # a derived kind (TrainedStack) is described as the kind it derives from (DepthFlow)
            base = s["kind"] if s["kind"] in declared else "DepthFlow"
            assert set(s["replaces"]) <= set(unit.params)
            assert s["only_if"] is None or type(unit).accepts is not Claim.accepts
            assert (
                s["only_if"] is None
                or base in (type(unit).accepts.__doc__ or "")
                or s["kind"] in (type(unit).accepts.__doc__ or "")
            )
            assert s["needs"] == unit.system_terms.get(s["kind"], unit.system_terms.get(base))
        assert list(row["parameters"]) == list(unit.params)
        for k, spec in unit.params.items():
            assert row["parameters"][k]["range"] == spec.describe()
            assert row["parameters"][k]["type"] == spec.kind


def test_describe_says_which_kinds_and_what_each_replaces(capsys):
    assert main(["check", "F2", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "user systems (--system FILE.py:NAME):\n  GeneratorFamily: replaces n_states," in out
    assert (
        "    only if: A GeneratorFamily whose slow field is a rational function of the fast " in out
    )
    assert main(["check", "A2", "--describe"]) == 0
    assert "  none: built-in instances only" in capsys.readouterr().out


# --------------------------------------------------------------------------- sweep --system


def test_sweep_over_seeds_with_a_system(systems_file, tmp_path, capsys):
    out = tmp_path / "sweep.json"
    argv = ["sweep", "A1", "--system", f"{systems_file}:flow7", "--seeds", "0:2"]
    code = main([*argv, "--workers", "1", "--out", str(out), "--cache", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr().err
    rows = json.loads(out.read_text())
    assert [r["point"]["seed"] for r in rows] == [0, 1]
    assert all(r["result"]["system"]["name"] == "flow7" for r in rows)
    assert capsys.readouterr().out.startswith("A1: 2 holds")


def test_a_pooled_sweep_rebuilds_the_system_in_each_worker(systems_file, capsys):
    argv = ["sweep", "A1", "--system", f"{systems_file}:flow7", "--seeds", "0:2"]
    assert main([*argv, "--workers", "2"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("A1: 2 holds")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--grid", "T=4,8"], "--grid T: parameter T is set by your system (DepthFlow)"),
        (["--grid", "perturbation=1e-3", "--grid", "mask=causal"], "--grid mask: parameter mask"),
    ],
)
def test_a_grid_over_a_replaced_parameter_is_bad_input(
    extra, message, systems_file, capsys, monkeypatch
):
    monkeypatch.setattr(Claim, "decide", stub_decide)
    code = main(["sweep", "A1", "--system", f"{systems_file}:flow7", *extra, "--workers", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert message in one_line(err)


@pytest.mark.parametrize(
    ("cid", "name", "message"),
    [("F2", "flow7", "cannot be checked on a DepthFlow"), ("D7", "complex_j", "complex entries")],
)
def test_a_sweep_refuses_a_wrong_or_broken_system_before_any_work(
    cid, name, message, systems_file, capsys, monkeypatch
):
    monkeypatch.setattr(Claim, "decide", stub_decide)
    code = main(["sweep", cid, "--system", f"{systems_file}:{name}", "--workers", "1"])
    assert code == 2 and message in one_line(capsys.readouterr().err)


def test_the_cache_key_sees_the_system_and_a_changed_file_is_refused(systems_file):
    a = DepthFlow("causal", P=2, d=2, T=4, seed=7)
    b = DepthFlow("causal", P=2, d=2, T=4, seed=8)
    c = LinearLoop(0.5 * np.eye(2), np.eye(2))
    d = LinearLoop(0.25 * np.eye(2), np.eye(2))
    assert a.fingerprint() == DepthFlow("causal", P=2, d=2, T=4, seed=7).fingerprint()
    assert a.fingerprint() != b.fingerprint() and c.fingerprint() != d.fingerprint()
    assert c.describe() == d.describe()  # the description alone would not tell them apart
    same_name = [
        Activation("soft", f, lambda z: 1 - np.tanh(z) ** 2, smooth=True)
        for f in (np.tanh, lambda z: z / (1 + abs(z)))
    ]
    flows = [DepthFlow("causal", P=2, d=2, T=4, sigma=s) for s in same_name]
    assert flows[0].fingerprint() != flows[1].fingerprint()
    spec = f"{systems_file}:flow7"
    key = {"claim": "A1", "seed": 0, "system": spec}
    assert sweep.point_key(sweep.check_point, {**key, "system_fingerprint": a.fingerprint()}) != (
        sweep.point_key(sweep.check_point, {**key, "system_fingerprint": b.fingerprint()})
    )
    with pytest.raises(ValueError, match="builds another system than the one the sweep"):
        sweep.loaded_system(spec, "0" * 24)
