"""The figure registry: every figure is a compute function over JSON-able sweep points plus a
draw function; registration errors are clear."""

import json

import pytest

from fastslow import figures
from fastslow.verify.registry import CLAIMS


def test_every_figure_has_json_able_sweep_points_and_a_unique_name():
    names = [n for ns in figures.available().values() for n in ns]
    assert len(names) == len(set(names)) and len(names) >= len(CLAIMS)
    assert set(figures.FIGURES) <= set(CLAIMS)
    for specs in figures.FIGURES.values():
        for spec in specs:
            points = spec.points(3)
            assert points and all(isinstance(p, dict) for p in points), spec.name
            assert json.loads(json.dumps(points)) == points, spec.name  # keys of the cache
            assert spec.compute.__qualname__ == spec.compute.__name__, spec.name  # module level


def test_unknown_figure_names_are_a_clear_error():
    with pytest.raises(ValueError, match="no figure named 'nope'"):
        figures.figure_data("nope", {"seed": 0})


def test_registration_rejects_non_callables_and_duplicate_names():
    with pytest.raises(TypeError, match="compute and points must be callables"):
        figures.figure("A1", "x_test_figure", compute="not a function")
    existing = figures.available()["A1"][0]
    with pytest.raises(ValueError, match=f"figure name '{existing}' is registered twice"):
        figures.figure("A1", existing, compute=figures.single_point)(lambda data, seed: None)
    with pytest.raises(ValueError, match="unknown claim ID 'Q9'"):
        figures.figure("Q9", "x_test_figure", compute=figures.single_point)
