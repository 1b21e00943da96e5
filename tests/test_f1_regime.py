"""F1's hypothesis ``asymptotic_regime_resolvable`` (verify/checks/f1/hypotheses.py) when a
reduced flow does not integrate: the hypothesis does not hold and says why, it does not raise."""

from __future__ import annotations

from fastslow.verify.checks.f1 import hypotheses
from fastslow.verify.registry import CLAIMS
from fastslow.verify.verdict import Diagnostic


class _NoReducedFlow:
    """An instance whose reduced flow's linearity cannot be measured."""

    p = CLAIMS["F1"].resolve({})

    @property
    def linearity(self):
        raise RuntimeError("reduced flow failed: step size too small")


def test_a_reduced_flow_that_does_not_integrate_leaves_no_regime_to_resolve(monkeypatch):
    monkeypatch.setattr(
        hypotheses, "first_order_correction_nonzero", lambda inst: Diagnostic(True, 1.0, "")
    )
    d = hypotheses.asymptotic_regime_resolvable(_NoReducedFlow())
    assert not d.holds
    assert d.value == "c₂ not computed: reduced flow failed: step size too small"


def test_without_a_symbolic_derivation_the_three_symbolic_parts_fail_naming_why():
    """Where the theory has no derivation (``th`` is None), F1's symbolic parts fail with the
    reason; they never hold vacuously."""
    from fastslow.verify.checks.f1 import parts

    out = parts.symbolic_parts(None, 0.5, "a user nonlinearity")
    assert set(out) == {
        "symbolic_normal_structure",
        "theory_agrees_with_numerical_formulas",
        "curvature_term_as_derived",
    }
    for d in out.values():
        assert not d.holds and d.rule == "no symbolic derivation: a user nonlinearity"
