"""numerics.toy.gated_predictor: the moment form of the risk against direct simulation, exact gradients,
the closed-form minimum over the slow weight, batched training, the margin, validation."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fastslow.numerics.analysis.stability import critical_gate, stability_margin
from fastslow.numerics.toy.data import gaussian_ar1_blocks
from fastslow.numerics.toy.gated_predictor import (
    GatedToy,
    closed_form_margin,
    empirical_moments,
    fast_estimate,
    jacobians,
    min_slow_risk,
    per_sequence_gate_gradient,
    population_moments,
    risk,
    risk_gradient,
    stack_moments,
    train,
)

TOY = GatedToy(P=3, N=5, tau=1.2, sigma=0.8, a=0.3, c=-0.7)


def _direct_risk(toy, x, g, w):
    n = x.shape[0]
    xb = x.reshape(n, toy.N, toy.P)
    yb = xb.mean(axis=2)
    s = np.zeros((n, toy.N))
    for b in range(1, toy.N):
        s[:, b] = toy.a * s[:, b - 1] + g * (toy.c * s[:, b - 1] + w * yb[:, b - 1])
    return float(((xb - fast_estimate(toy, x) - s[:, :, None]) ** 2).mean())


def test_moment_risk_equals_direct_simulation():
    x = gaussian_ar1_blocks(300, TOY.N, TOY.P, rho=0.5, tau=1.2, sigma=0.8, seed=1).x
    mom = empirical_moments(TOY, x)
    for g, w in [(0.0, 1.0), (0.4, -0.8), (-0.9, 2.0)]:
        assert abs(risk(TOY, mom, g, w) - _direct_risk(TOY, x, g, w)) < 1e-12


def test_fast_estimate_is_the_within_block_posterior_mean():
    x = np.array([[1.0, 2.0, 3.0] * 5])
    f = fast_estimate(TOY, x)
    lam = (0.8 / 1.2) ** 2
    assert f[0, 0, 0] == 0.0 and np.isclose(f[0, 0, 2], 3.0 / (2 + lam))


def test_gradients_match_central_differences():
    mom = population_moments(TOY, 0.6)
    for g, w in [(0.0, 1.0), (0.35, 0.7), (-0.5, -1.3)]:
        dg, dw = risk_gradient(TOY, mom, g, w)
        h = 1e-6
        fg = (risk(TOY, mom, g + h, w) - risk(TOY, mom, g - h, w)) / (2 * h)
        fw = (risk(TOY, mom, g, w + h) - risk(TOY, mom, g, w - h)) / (2 * h)
        assert abs(dg - fg) < 1e-7 and abs(dw - fw) < 1e-7


def test_per_sequence_gradients_average_to_the_empirical_gradient():
    x = gaussian_ar1_blocks(200, TOY.N, TOY.P, rho=0.4, tau=1.2, sigma=0.8, seed=2).x
    gi = per_sequence_gate_gradient(TOY, x, 0.9)
    assert abs(gi.mean() - risk_gradient(TOY, empirical_moments(TOY, x), 0.0, 0.9)[0]) < 1e-12


def test_min_slow_risk_equals_numerical_minimum():
    mom = population_moments(TOY, 0.7)
    for g in (0.2, -0.4, 0.8):
        best, w_star = min_slow_risk(TOY, mom, g)
        num = minimize_scalar(lambda w: risk(TOY, mom, g, w), bracket=(-5, 5), tol=1e-12)
        assert abs(best - num.fun) < 1e-10 and abs(w_star - num.x) < 1e-4
    assert min_slow_risk(TOY, mom, 0.0) == (mom.Q, 0.0)


def test_batched_training_equals_single_runs_and_frozen_stays_closed():
    moms = [population_moments(TOY, r) for r in (0.0, 0.5, 0.8)]
    batch = train(TOY, stack_moments(moms), steps=50)
    for i, m in enumerate(moms):
        one = train(TOY, m, steps=50)
        assert abs(one.g - batch.g[i]) < 1e-12 and abs(one.w - batch.w[i]) < 1e-12
    frozen = train(TOY, moms[2], w0=0.0, steps=50)
    assert frozen.g == 0.0 and frozen.w == 0.0
    assert np.all(np.diff(train(TOY, moms[2], steps=50).history) <= 0)  # monotone descent


def test_margin_matches_the_stability_module():
    J, G = jacobians(TOY)
    assert abs(stability_margin(J) / np.linalg.norm(G, 2) - closed_form_margin(TOY)) < 1e-9
    # scalar recurrence: |a + g c| = 1 at g = (1 - a)/|c| in the direction of sign(c)·g > 0
    assert abs(critical_gate(J, G, sign=-1) - (1 - TOY.a) / abs(TOY.c)) < 1e-9
    assert abs(critical_gate(J, G, sign=+1) - (1 + TOY.a) / abs(TOY.c)) < 1e-9
    assert closed_form_margin(GatedToy(P=1, N=2, c=0.0)) == float("inf")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"P": 0, "N": 2}, "P"),
        ({"P": 2, "N": 2, "tau": 0.0}, "tau"),
        ({"P": 2, "N": 2, "sigma": -1.0}, "sigma"),
        ({"P": 2, "N": 2, "a": 1.0}, "a"),
    ],
)
def test_bad_toy_raises(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        GatedToy(**kwargs)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="shape"):
        empirical_moments(TOY, np.zeros((3, 7)))
    with pytest.raises(ValueError, match="rho"):
        population_moments(TOY, 1.0)
    with pytest.raises(ValueError, match="lr"):
        train(TOY, population_moments(TOY, 0.0), lr=0.0)
