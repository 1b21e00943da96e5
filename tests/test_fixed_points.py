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


def test_when_plain_newton_fails_the_continuation_halves_gamma_from_64_gamma_down_to_gamma(
    monkeypatch,
):
    """The documented continuation: damped Newton at γ·2^k for k = 6, 5, …, 0, each stage from the
    previous solution, the first from ``E``; its last stage's solution is the answer."""
    cfg, lp, E = _instance()
    calls = []
    newton = fixed_points._newton

    def recorded(config, params, E_, X, max_iter, damped):
        calls.append((config.gamma, damped, X.copy()))
        if not damped:
            return None, np.inf  # plain Newton fails
        return newton(config, params, E_, X, max_iter, damped)

    monkeypatch.setattr(fixed_points, "_newton", recorded)
    X, res = fixed_points.tied_fixed_point(cfg, lp, E, E)
    assert [g for g, _, _ in calls] == [cfg.gamma] + [cfg.gamma * 2.0**k for k in range(6, -1, -1)]
    assert [d for _, d, _ in calls] == [False] + [True] * 7
    np.testing.assert_array_equal(calls[1][2], E)
    assert np.abs(layer(cfg, lp, X, E) - X).max() == res <= fixed_points.RESIDUAL_TOL * 10
