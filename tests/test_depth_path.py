"""Depth paths θ(t) (numerics.model.depth_path): D2's smooth and tied paths and the step path."""

import numpy as np
import pytest

from fastslow.numerics.model.depth_path import (
    SmoothPath,
    StepPath,
    lipschitz_estimate,
    random_smooth_path,
    stack_from_path,
)
from fastslow.numerics.model.weights import ModelConfig


def cfg():
    return ModelConfig(T=4, P=2, d=3, mask="causal")


def test_a_random_smooth_path_moves_from_one_layer_to_another_and_a_tied_one_stays():
    """By default the path joins two different random layers (its gate from +gate to −gate) along
    s(t) = (1 − cos πt)/2; ``tied=True`` is the constant path at the first of them."""
    moving = random_smooth_path(cfg(), 5, gate=0.5)
    assert moving(0.0).g == 0.5 and moving(1.0).g == -0.5
    a, b = moving(0.0).to_vector(), moving(1.0).to_vector()
    mid = moving(0.5).to_vector()
    assert np.allclose(mid, (a + b) / 2, rtol=0, atol=1e-15) and not np.allclose(a, b)
    tied = random_smooth_path(cfg(), 5, tied=True, gate=0.5)
    assert np.array_equal(tied(0.3).to_vector(), a) and np.array_equal(tied(1.0).to_vector(), a)
    assert lipschitz_estimate(tied, 64) == 0.0
    # max_t |θ'(t)| = (π/2)‖θ_b − θ_a‖ for s(t) = (1 − cos πt)/2, approached as the grid refines
    lip = lipschitz_estimate(moving, 4096)
    assert lip == pytest.approx(np.pi / 2 * np.linalg.norm(b - a), rel=1e-6)


def test_a_step_path_jumps_at_its_breakpoints_and_a_stack_samples_the_path_on_its_grid():
    p = [random_smooth_path(cfg(), s, tied=True)(0.0) for s in (1, 2)]
    step = StepPath(p, [0.4])
    assert step(0.39) is p[0] and step(0.4) is p[1] and step(1.0) is p[1]
    assert lipschitz_estimate(step, 64) >= 64 * np.linalg.norm(
        p[1].to_vector() - p[0].to_vector()
    ) * (1 - 1e-12)
    model = stack_from_path(cfg(), step, 5)
    assert model.config.h == 0.2 and [l is p[1] for l in model.layers] == [
        False,
        False,
        True,
        True,
        True,
    ]
    with pytest.raises(TypeError, match="theta_a must be LayerParams"):
        SmoothPath(None, p[0])
