"""numerics.analysis.fixed_points: Newton's tied fixed point, and what it does when a step cannot
be computed."""

from __future__ import annotations

import numpy as np
import pytest

from fastslow.numerics.analysis import fixed_points
from fastslow.numerics.model.layer import layer
from fastslow.numerics.model.weights import ModelConfig, init_model


def _instance():
    cfg = ModelConfig(T=4, P=2, d=3, gamma=0.5)
    model = init_model(cfg, 1, 0)
    E = np.random.default_rng(1).standard_normal((4, 3))
    return cfg, model.layers[0], E


def test_the_fixed_point_is_one():
    cfg, lp, E = _instance()
    X, res = fixed_points.tied_fixed_point(cfg, lp, E, E)
    assert res <= fixed_points.RESIDUAL_TOL * max(1.0, float(np.abs(X).max()))
    assert np.abs(layer(cfg, lp, X, E) - X).max() == res


@pytest.mark.parametrize("fault", [FloatingPointError, np.linalg.LinAlgError, ValueError])
def test_a_step_that_cannot_be_computed_ends_in_the_documented_error(monkeypatch, fault):
    """A layer evaluation that raises (an overflow trapped by the caller's ``np.errstate``, a
    singular Jacobian, a non-finite value refused) is no fixed point: ``RuntimeError`` with the
    advice, never the inner exception."""
    cfg, lp, E = _instance()

    def failing(*args, **kwargs):
        raise fault("cannot evaluate")

    monkeypatch.setattr(fixed_points, "layer", failing)
    with pytest.raises(RuntimeError, match="found no fixed point of the tied layer"):
        fixed_points.tied_fixed_point(cfg, lp, E, E)
