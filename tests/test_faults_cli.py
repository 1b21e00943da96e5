"""Fault injection for the command line's own faults (issue #30, "other faults" and the CLI's
conventions): parameter combinations known before any work, ``--describe``'s ranges against what
the parser accepts, the integrators on a right-hand side that turns non-finite and on a span
shorter than one step, ``fastslow readme`` on malformed reports and half-published trees, an
interrupted pooled sweep, ``--version``, help text, summaries and suggestions.

Every case ends as the contract says: one line, the documented exit code, no traceback, nothing
lost and nothing left running. Heavy checks are never run: :meth:`Claim.decide` is stubbed where
only the surface is under test, and signals go to subprocesses this file starts.
"""

from __future__ import annotations

import re

import pytest

from fastslow.cli import main
from fastslow.verify.budgets import MEMORY_BUDGET_ENV, TIME_BUDGET_ENV
from fastslow.verify.claim import Claim
from fastslow.verify.registry import CLAIMS


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
