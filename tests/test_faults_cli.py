"""Fault injection for the command line's own faults (issue #30, "other faults" and the CLI's
conventions): parameter combinations known before any work, ``--describe``'s ranges against what
the parser accepts, the integrators on a right-hand side that turns non-finite and on a span
shorter than one step, ``fastslow readme`` on malformed reports and half-published trees, an
``--version``, help text, summaries and suggestions.

Every case ends as the contract says: one line, the documented exit code, no traceback, nothing
lost and nothing left running. Heavy checks are never run: :meth:`Claim.decide` is stubbed where
only the surface is under test, and signals go to subprocesses this file starts.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from numba import njit
from test_faults import STUB_PYTHON
from test_report import full_a1

import fastslow
from fastslow import bench
from fastslow.cli import brief, main
from fastslow.numerics.integrators.base import RHS_SIG
from fastslow.numerics.integrators.integration import integrate
from fastslow.readme import BEGIN, END, claims_markdown, report_schema
from fastslow.verify.budgets import MEMORY_BUDGET_ENV, TIME_BUDGET_ENV
from fastslow.verify.claim import Claim
from fastslow.verify.json_schema import first_error
from fastslow.verify.provenance import provenance
from fastslow.verify.registry import CLAIMS, IDS
from fastslow.verify.report import ClaimLedger, build_report


def one_line(err: str) -> str:
    """The single line of ``err``; fails on a traceback or on more than one line."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Any verdict decided fails the test: bad input must be refused before the work."""
    monkeypatch.setattr(Claim, "decide", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "50%")
    monkeypatch.setenv(TIME_BUDGET_ENV, "600")


# ------------------------------------------------------ parameter orders known before any work

ORDERS = [
    (["F2", "y0=3", "y_min=-1", "y_max=1"], "y_min=-1.0, y0=3.0, y_max=1.0: expected y_min ≤ y0"),
    (["F2", "y0=-2.5"], "expected y_min ≤ y0 ≤ y_max"),
    (["F2", "t0=5", "t1=2"], "t0=5.0, t1=2.0: expected t0 < t1"),
    (["F2", "eps_min=0.1", "eps_max=0.01"], "expected eps_min < eps_max"),
    (["F2", "y_min=1", "y_max=1", "y0=1"], "expected y_min < y_max"),
    (["F3", "y_min=1", "y_max=-1"], "expected y_min < y_max"),
    (["F3", "steps=0,300,300"], "steps=0,300,300: expected strictly increasing values"),
    (["D6", "s_min=0.1", "s_max=0.01"], "expected s_min < s_max"),
    (["D6", "gate_sweep=0.1,0.01"], "gate_sweep=0.1,0.01: expected strictly increasing"),
    (["D9", "rhos=0.2,0.1"], "rhos=0.2,0.1: expected strictly increasing"),
    (["D8", "n_seq=10", "n_future=32"], "n_future=32, n_seq=10: expected n_future ≤ n_seq"),
]


@pytest.mark.parametrize("case, message", ORDERS, ids=[" ".join(c) for c, _ in ORDERS])
def test_a_violated_order_between_parameters_is_bad_input_before_work(
    case, message, capsys, no_work
):
    cid, *params = case
    argv = ["check", cid] + [x for kv in params for x in ("--param", kv)]
    assert main(argv) == 2
    assert message in one_line(capsys.readouterr().err)


def test_every_declared_order_holds_at_the_defaults_and_is_described():
    for cid, unit in CLAIMS.items():
        if not unit.implemented:
            continue
        for order in unit.orders:
            assert set(order.names) <= set(unit.params), (cid, order)
            order.check(unit.defaults())
            assert order.describe() in unit.describe()


def test_a_point_on_the_edge_of_a_non_strict_order_is_accepted():
    p = CLAIMS["F2"].resolve({"y0": 1.0, "y_max": 1.0})
    assert p["y0"] == p["y_max"] == 1.0


# ------------------------------------------------- --describe shows exactly what is accepted

INTERVAL = re.compile(r"in ([\[(])(\S+), (\S+?)([\])])")


def described_params():
    for cid, unit in CLAIMS.items():
        for name, spec in unit.params.items():
            yield cid, name, spec


@pytest.mark.parametrize(
    "cid, name, spec",
    [x for x in described_params() if x[2].low is not None or x[2].high is not None],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_the_described_endpoints_are_accepted_or_refused_exactly_as_displayed(cid, name, spec):
    """For every bounded parameter: an endpoint shown with ``[``/``]`` parses, one shown with
    ``(``/``)`` (including ``±inf``) is refused, both read back from the text ``--describe``
    prints."""
    shown = CLAIMS[cid].describe()
    line = next(ln for ln in shown.splitlines() if ln.startswith(f"  {name}: "))
    found = INTERVAL.findall(line)  # the last interval is the type's; the meaning may hold others
    assert found, line
    left, low, high, right = found[-1]
    for text, closed in ((low, left == "["), (high, right == "]")):
        raw = text if not spec.kind.startswith("tuple") else ",".join([text] * spec.min_len)
        if closed:
            spec.parse(name, raw)
        else:
            with pytest.raises(ValueError, match=name):
                spec.parse(name, raw)


# ------------------------------------------- integrators: non-finite values, a one-ulp span

METHODS = ("rosw", "radau", "dopri5", "dop853", "auto")


def nan_after_one(t, y):
    """``-y`` up to ``t = 1``, NaN after: a right-hand side that turns non-finite."""
    return -y if t < 1.0 else np.full_like(y, np.nan)


@pytest.mark.parametrize("method", METHODS)
def test_a_right_hand_side_turning_nan_is_status_3_keeping_the_last_accepted_step(method):
    r = integrate(nan_after_one, (0.0, 2.0), [1.0, 2.0], method=method, t_eval=[0.0, 0.5, 2.0])
    assert r.status == -3 and not r.success and "non-finite" in r.message
    # the output time passed before the failure, then the last accepted step, finite, close to 1
    assert r.t[0] == 0.0 and r.t[1] == 0.5 and 0.5 < r.t[-1] <= 1.0 and r.t.size == 3
    assert np.all(np.isfinite(r.y))
    np.testing.assert_allclose(r.y[:, -1], np.exp(-r.t[-1]) * np.array([1.0, 2.0]), rtol=1e-4)


@njit(RHS_SIG)
def nan_after_one_nb(t, y, p, seg, out):
    """:func:`nan_after_one` compiled: the driver's compiled path."""
    for i in range(y.size):
        out[i] = -y[i] if t < 1.0 else np.nan


@pytest.mark.parametrize("method", METHODS)
def test_a_compiled_right_hand_side_turning_nan_is_status_3_too(method):
    y0 = np.array([1.0, 2.0])
    r = integrate(nan_after_one_nb, (0.0, 2.0), y0, method=method, jac="zero", t_eval=[0, 0.5, 2])
    assert r.compiled and r.status == -3
    assert r.t[1] == 0.5 and 0.5 < r.t[-1] <= 1.0 and r.t.size == 3
    np.testing.assert_allclose(r.y[:, -1], np.exp(-r.t[-1]) * y0, rtol=1e-4)


@pytest.mark.parametrize("method", METHODS)
def test_a_right_hand_side_non_finite_from_the_start_is_status_3_at_once(method):
    r = integrate(lambda t, y: np.full_like(y, np.nan), (0.0, 1.0), [1.0], method=method)
    assert r.status == -3 and r.t.tolist() == [0.0] and r.y.tolist() == [[1.0]]
    assert r.nsteps + r.nreject < 100  # not a million rejected steps ending in "max steps"


@pytest.mark.parametrize("method", ["rosw", "radau"])
def test_a_non_finite_jacobian_is_status_3_not_step_too_small(method):
    r = integrate(
        lambda t, y: -y, (0.0, 1.0), [1.0], method=method, jac=lambda t, y: np.full((1, 1), np.nan)
    )
    assert r.status == -3
    assert r.t.tolist() == [0.0] and r.y.tolist() == [[1.0]]


@pytest.mark.parametrize("method", METHODS)
def test_a_span_of_one_ulp_is_one_step_of_its_length(method):
    t1 = np.nextafter(1.0, 2.0)
    r = integrate(lambda t, y: -y, (1.0, t1), [1.0], method=method)
    assert r.status == 0 and r.t.tolist() == [1.0, t1] and r.nsteps == 1
    assert r.y[0, -1] == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("method", METHODS)
def test_output_times_closer_than_the_float_spacing_are_each_reached(method):
    r = integrate(lambda t, y: -y, (0.0, 1.0), [1.0], method=method, t_eval=[0, 1e-300, 0.5, 1])
    assert r.status == 0 and r.t.tolist() == [0.0, 1e-300, 0.5, 1.0]
    np.testing.assert_allclose(r.y[0], np.exp(-r.t), rtol=1e-5)


# ------------------------------------------------------ readme: malformed reports, all or none


def published_tree(tmp_path, report) -> tuple[Path, Path, dict]:
    """A README with a claim table, an earlier ``docs/report/`` and ``docs/claims.md``, and
    ``report`` (any JSON value) with its REPORT.md; returns the report's path, the README's and a
    snapshot of every file under ``tmp_path/docs`` and the README."""
    rep_dir = tmp_path / "rep"
    rep_dir.mkdir()
    js = rep_dir / "report.json"
    js.write_text(report if isinstance(report, str) else json.dumps(report))
    (rep_dir / "REPORT.md").write_text("# new report\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{BEGIN}\nold table\n{END}\nrest\n")
    (tmp_path / "docs" / "report").mkdir(parents=True)
    (tmp_path / "docs" / "report" / "report.json").write_text('{"old": true}')
    (tmp_path / "docs" / "report" / "REPORT.md").write_text("# old report\n")
    (tmp_path / "docs" / "claims.md").write_text("# old claims\n")
    return js, readme, snapshot(tmp_path)


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_relative_to(root / "rep")
    }


PROVENANCE = provenance()


def complete_report() -> dict:
    """A complete, schema-valid report of every registered claim (hand-made verdicts), from a
    clean tree."""
    led = ClaimLedger()
    for cid in IDS:
        full_a1(led, cid=cid)
    prov = copy.deepcopy(PROVENANCE)
    prov["git"] = {"commit": "abc123", "dirty": False}
    return json.loads(json.dumps(build_report(led, prov)))


def drop(rep, cid):
    rep["claims"] = [c for c in rep["claims"] if c["id"] != cid]
    return rep


def rename(rep, old, new):
    next(c for c in rep["claims"] if c["id"] == old)["id"] = new
    return rep


MALFORMED = [
    ("empty list", lambda r: [], "expected object, got list"),
    ("not JSON", lambda r: "{not json", "is not valid JSON"),
    ("no complete", lambda r: {k: v for k, v in r.items() if k != "complete"}, "'complete'"),
    ("unknown claim", lambda r: rename(r, "A2", "A9"), "'A9', not a registered claim"),
    ("missing claim", lambda r: drop(r, "F2"), "no row for F2"),
    (
        "claim twice",
        lambda r: {**r, "claims": r["claims"] + r["claims"][:1]},
        "rows for A1 more than once",
    ),
    (
        "stamp miscounts",
        lambda r: {**r, "summary": {**r["summary"], "verified": 15, "failed": 1}},
        "does not count its rows",
    ),
    ("wrong schema version", lambda r: {**r, "schema_version": 2}, "schema_version 2"),
    (
        "bad status",
        lambda r: {**r, "claims": [{**r["claims"][0], "status": "great"}] + r["claims"][1:]},
        "claims[0].status",
    ),
]


@pytest.mark.parametrize("name, spoil, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_report_is_bad_input_and_publishes_nothing(
    name, spoil, message, tmp_path, capsys
):
    js, readme, before = published_tree(tmp_path, spoil(complete_report()))
    code = main(["readme", "--report", str(js), "--readme", str(readme)])
    assert code == 2
    assert message in one_line(capsys.readouterr().err)
    assert snapshot(tmp_path) == before


def test_a_complete_report_publishes_all_four_files(tmp_path, capsys):
    js, readme, before = published_tree(tmp_path, complete_report())
    assert main(["readme", "--report", str(js), "--readme", str(readme)]) == 0
    after = snapshot(tmp_path)
    assert after["docs/report/report.json"] == js.read_bytes()
    assert after["docs/report/REPORT.md"] == b"# new report\n"
    assert after["docs/claims.md"].decode() == claims_markdown()
    table = after["README.md"].decode()
    rows = [ln for ln in table.splitlines() if ln.startswith("| [")]
    assert "old table" not in table and len(rows) == len(CLAIMS)
    assert f"{len(CLAIMS)} verified" in table


def test_a_well_formed_report_that_may_not_be_published_is_refused_with_exit_2(tmp_path, capsys):
    rep = complete_report()
    rep.update(complete=False, incomplete_reasons=["3 verify test(s) deselected"])
    js, readme, before = published_tree(tmp_path, rep)
    assert main(["readme", "--report", str(js), "--readme", str(readme)]) == 2
    assert "partial" in one_line(capsys.readouterr().err)
    assert snapshot(tmp_path) == before


def test_a_missing_report_or_readme_is_named_on_one_line(tmp_path, capsys):
    js, readme, before = published_tree(tmp_path, complete_report())
    (js.parent / "REPORT.md").unlink()
    assert main(["readme", "--report", str(js), "--readme", str(readme)]) == 2
    assert "REPORT.md: no such file (run pytest verify first)" in one_line(capsys.readouterr().err)
    (js.parent / "REPORT.md").write_text("# new report\n")
    missing = tmp_path / "NOPE.md"
    assert main(["readme", "--report", str(js), "--readme", str(missing)]) == 2
    assert one_line(capsys.readouterr().err).endswith(f"{missing}: no such file")
    assert snapshot(tmp_path) == before


def test_claims_md_being_a_folder_publishes_nothing(tmp_path, capsys):
    js, readme, _ = published_tree(tmp_path, complete_report())
    (tmp_path / "docs" / "claims.md").unlink()
    (tmp_path / "docs" / "claims.md").mkdir()
    before = snapshot(tmp_path)
    assert main(["readme", "--report", str(js), "--readme", str(readme)]) == 2
    assert "claims.md" in one_line(capsys.readouterr().err)
    assert snapshot(tmp_path) == before
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()], "temporary files left"


def test_a_rename_failing_midway_restores_the_files_already_replaced(tmp_path, capsys, monkeypatch):
    js, readme, before = published_tree(tmp_path, complete_report())
    real = os.replace

    def failing_on_the_readme(src, dst):
        if Path(dst) == readme:
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing_on_the_readme)
    assert main(["readme", "--report", str(js), "--readme", str(readme)]) == 2
    assert "nothing was published" in one_line(capsys.readouterr().err)
    monkeypatch.setattr(os, "replace", real)
    assert snapshot(tmp_path) == before
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()], "temporary files left"


def test_the_schema_check_agrees_with_jsonschema_on_reports_and_their_faults():
    schema = report_schema()
    validator = jsonschema.Draft202012Validator(schema)
    rep = complete_report()
    spoiled = [rep] + [s(copy.deepcopy(rep)) for _, s, _ in MALFORMED if _ != "not JSON"]
    spoiled += [
        {**rep, "outcomes": {**rep["outcomes"], "maybe": 1}},
        {**rep, "summary": {**rep["summary"], "verified": -1}},
        {**rep, "claims": []},
        {**rep, "provenance": {**rep["provenance"], "git": {"commit": 3, "dirty": False}}},
    ]
    for r in spoiled:
        assert (first_error(r, schema) is None) == validator.is_valid(r), first_error(r, schema)


# --------------------------------------------------------------------------------- paths

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
# Ctrl-C and SIGTERM at every moment of a command: tests/test_signals.py


# ------------------------------------------------------------------------- CLI conventions


def test_version_is_the_checkouts_and_the_packages(capsys):
    with open(ROOT / "pyproject.toml", "rb") as fh:
        version = tomllib.load(fh)["project"]["version"]
    assert fastslow.__version__ == version
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"fastslow {version}"


@pytest.mark.parametrize("argv", [[], ["check"], ["sweep"], ["readme"], ["figures"], ["claims"]])
def test_help_has_no_markup(argv, capsys):
    assert main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and not re.search(r":[a-z]+:`", out), out
    if not argv:
        assert "fastslow checks, claim by claim" in out and "--version" in out


def test_human_output_summarises_arrays_and_json_keeps_them_whole(capsys):
    assert main(["check", "A1"]) == 0
    out = capsys.readouterr().out
    assert "dependence: 16×16 array, min 0, max" in out
    assert "[[" not in out and all(len(line) < 600 for line in out.splitlines())
    assert main(["check", "A1", "--json"]) == 0
    dependence = json.loads(capsys.readouterr().out)["figures"]["dependence"]
    assert np.asarray(dependence).shape == (16, 16)


def test_brief_shows_shape_range_and_non_finite_entries():
    assert brief([1.0, 2.0]) == "[1, 2]" and brief(0.29977311686832053) == "0.2998"
    text = brief([[float(i) for i in range(5)], [float("nan")] * 4 + [9.0]])
    rms = np.sqrt(np.mean(np.array([0.0, 1, 2, 3, 4, 9]) ** 2))  # of the finite entries
    assert text == f"2×5 array, min 0, max 9, RMS {rms:.4g}, 4 non-finite"
    assert brief({"a": "x" * 500}) == "{a: " + "x" * 99 + "…}"  # each item, then the whole
    many = brief({str(i): "x" * 50 for i in range(20)})
    assert many.endswith("…") and len(many) == 200


SUGGESTIONS = [
    (["chek", "A1"], "(did you mean 'check'?)"),
    (["check", "A1", "--sed", "3"], "(did you mean '--seed'?)"),
    (["check", "A11"], "unknown claim ID 'A11' (did you mean 'A1'?)"),
    (["check", "A1", "--param", "Tt=8"], "unknown parameter 'Tt' of A1 (did you mean 'T'?)"),
    (["check", "A1", "--control", "full_slow"], "(did you mean 'full_slow_mask'?)"),
    (["check", "A1", "--param", "slow_mask=ful"], "(did you mean 'full'?)"),
    (["sweep", "A1", "--grid", "PP=2"], "--grid PP: unknown parameter of A1 (did you mean 'P'?)"),
    (["figures", "F22"], "(did you mean 'F2'?)"),
]


@pytest.mark.parametrize("argv, hint", SUGGESTIONS, ids=[" ".join(a) for a, _ in SUGGESTIONS])
def test_unknown_names_get_a_did_you_mean(argv, hint, capsys, no_work):
    code = main(argv)
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and hint in err.splitlines()[-1]


def test_an_unknown_benchmark_section_gets_a_did_you_mean(capsys, monkeypatch):
    monkeypatch.setattr(
        bench, "discover", lambda: {"integrators": lambda quick: pytest.fail("ran")}
    )
    assert bench.main(quick=True, only=["integrator"]) == 2
    assert "(did you mean 'integrators'?)" in one_line(capsys.readouterr().err)


def test_a_name_far_from_every_known_one_gets_no_suggestion(capsys, no_work):
    assert main(["check", "A1", "--param", "colour=1"]) == 2
    assert "did you mean" not in one_line(capsys.readouterr().err)


def test_run_sh_says_it_is_setting_up_before_the_long_first_install(tmp_path):
    venv = tmp_path / "venv"
    stub = tmp_path / "python3"
    stub.write_text(STUB_PYTHON.format(python=sys.executable))
    stub.chmod(0o755)
    env = dict(ENV, PYTHON=str(stub), FASTSLOW_VENV=str(venv))
    res = subprocess.run(
        ["bash", str(ROOT / "run.sh"), "no-such-job"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    lines = res.stderr.splitlines()
    assert lines[0] == f"run.sh: setting up {venv} (first run, about a minute)..."
    assert "pip install" in (venv / "calls").read_text()
    res = subprocess.run(
        ["bash", str(ROOT / "run.sh"), "no-such-job"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "setting up" not in res.stderr  # set up once: no line of its own the second time
