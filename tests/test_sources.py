"""How each hypothesis is decided: every hypothesis of every claim declares exactly one source, the
verdict carries it, and the instances declared as the claims' own (built to satisfy their
hypotheses) are the ones where an implementation-sourced violation is a failure of the suite."""

import ast
from pathlib import Path

import pytest

from fastslow.verify import checks as checks_package
from fastslow.verify.registry import CLAIMS, IDS
from fastslow.verify.verdict import SOURCES


@pytest.mark.parametrize("cid", IDS)
def test_every_hypothesis_declares_exactly_one_valid_source(cid):
    unit = CLAIMS[cid]
    assert set(unit.hypothesis_sources) == set(unit.hypotheses), (
        f"{cid}: hypotheses without a source: "
        f"{sorted(set(unit.hypotheses) - set(unit.hypothesis_sources))}; sources of no "
        f"hypothesis: {sorted(set(unit.hypothesis_sources) - set(unit.hypotheses))}"
    )
    bad = {k: v for k, v in unit.hypothesis_sources.items() if v not in SOURCES}
    assert not bad, f"{cid}: sources must be one of {SOURCES}: {bad}"


@pytest.mark.parametrize("cid", IDS)
def test_main_instances_are_valid_and_no_negative_control_is_one(cid):
    unit = CLAIMS[cid]
    assert unit.main_instances and {} in [dict(m) for m in unit.main_instances]
    for main in unit.main_instances:
        assert unit.is_main_instance(unit.resolve(main)), (cid, main)
    for ctl in unit.controls:
        assert not unit.is_main_instance(unit.resolve(ctl.params)), (
            f"{cid}: negative control {ctl.name} has a main instance's parameters: a violated "
            "hypothesis there would be called a failure of the suite"
        )


@pytest.mark.parametrize("cid", IDS)
def test_the_seed_sweep_runs_a_declared_main_instance(cid):
    unit = CLAIMS[cid]
    assert unit.is_main_instance(unit.resolve(unit.sweep_instance)), cid


def test_an_input_sourced_hypothesis_cross_checks_the_implementation_loudly(monkeypatch):
    """A2 decides ``slow_projections_outweigh_mlp`` from the parameters; an instance whose MLP
    weight has another shape (a planted bug in the layer's construction) is an ``error`` naming
    both shapes, never a quiet ``outside-hypotheses``."""
    import numpy as np

    from fastslow.verify.checks import a2

    assert CLAIMS["A2"].check({}).outcome == "holds"
    real = a2.Instance.__init__

    def widened(self, p, seed):
        real(self, p, seed)
        self.layer.W1 = np.hstack([self.layer.W1, self.layer.W1])

    monkeypatch.setattr(a2.Instance, "__init__", widened)
    v = CLAIMS["A2"].check({})
    assert v.outcome == "error" and "the parameters say" in v.error["message"], v.summary()


@pytest.mark.parametrize("cid", ["A3", "D6"])
def test_a_gate_hypothesis_read_from_the_input_names_a_model_that_changed_the_gates(
    cid, monkeypatch
):
    """A3's ``gates_zero`` and D6's ``gate_zero`` are decided from the input gates; a model whose
    stored gates differ (a planted bug in building it) is an ``error``, never a quiet exit 4."""
    import importlib

    module = importlib.import_module(f"fastslow.verify.checks.{cid.lower()}")
    real = module.Instance.__init__

    def corrupted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self.model = self.model.with_gates(1e-300)

    monkeypatch.setattr(module.Instance, "__init__", corrupted)
    v = CLAIMS[cid].check({})
    assert v.outcome == "error" and "gates" in v.error["message"], v.summary()


def test_no_claim_declaration_is_assigned_twice():
    """A class attribute assigned twice in a unit's class body (as a three-way merge can leave it)
    silently keeps the last one: each declaration stands once."""
    folder = Path(checks_package.__file__).parent
    twice = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [
                    t.id
                    for stmt in node.body
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign))
                    for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                    if isinstance(t, ast.Name)
                ]
                twice += [f"{path.name}:{node.name}.{n}" for n in set(names) if names.count(n) > 1]
    assert twice == []
