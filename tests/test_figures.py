"""The figure registry: every figure is a compute function over JSON-able sweep points plus a
draw function; registration errors are clear."""

import dataclasses
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


def test_d2_draws_the_controls_that_form_no_asymptotic_window(tmp_path):
    """The negative controls of D2 (jumps off the grid, the plain stack) have no asymptotic window
    (``window_untied == []``); the figure draws them without a filled window (it raised a
    ValueError that ``fastslow figures`` reported as bad input)."""
    paths = figures.render(["D2"], outdir=tmp_path, seed=0)
    assert [p.name for p in paths] == ["d2_convergence.png", "d2_convergence.pdf"]


def test_a_figure_whose_drawing_raises_is_named_and_the_others_are_drawn(tmp_path, monkeypatch):
    """A drawing that raises on valid data is an error of that figure (``FigureError``: exit 3),
    never bad input, and does not stop the figures after it."""
    figures.available()  # fills the registry
    spec = figures.FIGURES["D3"][0]

    def broken(data, seed):
        raise ValueError("planted")

    monkeypatch.setitem(
        figures.FIGURES, "D3", [dataclasses.replace(spec, draw=broken)] + figures.FIGURES["D3"][1:]
    )
    with pytest.raises(figures.FigureError, match="d3.*drawing raised ValueError: planted"):
        figures.render(["D3", "A1"], outdir=tmp_path, seed=0)
    assert [p.name for p in tmp_path.glob("a1_*.png")]  # the figure after the broken one
