"""D7's loop runs (verify/checks/d7/claim.py ``loop_runs``): each side whose critical gate is finite and
non-zero gets its runs below and above it, whatever the other side's gate is (a cosmic-ray
survivor skipped the − side whenever the + side had none)."""

from types import SimpleNamespace

import numpy as np
import pytest

from fastslow.verify.checks import d7


@pytest.mark.parametrize(
    "plus, minus, sides",
    [
        (np.inf, 1.0, {"minus"}),
        (0.0, 2.0, {"minus"}),
        (1.0, np.inf, {"plus"}),
        (1.0, 2.0, {"plus", "minus"}),
        (np.inf, np.inf, set()),
    ],
)
def test_each_side_with_a_finite_critical_gate_is_run(monkeypatch, plus, minus, sides):
    monkeypatch.setattr(d7.claim, "loop_run", lambda inst, g, rho: {"g": g, "rho": rho})
    inst = SimpleNamespace(J=np.diag([0.5, 0.2]), G=np.eye(2), p={"below": 0.5, "above": 2.0})
    runs = d7.claim.loop_runs(inst, 0.5, plus, minus)
    assert set(runs) == {"zero_gate"} | {f"{w}_{s}" for s in sides for w in ("below", "above")}
    for s, gc in (("plus", plus), ("minus", -minus)):
        if s in sides:
            assert runs[f"below_{s}"]["g"] == 0.5 * gc
            assert abs(runs[f"above_{s}"]["g"]) > abs(gc)
