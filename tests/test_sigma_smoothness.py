"""The hypothesis that σ is smooth where a difference oracle differences it
(:func:`verify.diagnostics.sigma_smooth_where_differenced`), on instances where the answer is known:
a relu pre-activation exactly at its kink, one just off it, and any smooth σ."""

import dataclasses

import numpy as np
import pytest

from fastslow.numerics.model.autodiff import stack_jvp
from fastslow.numerics.model.layer import mlp_preactivations, stack
from fastslow.numerics.model.weights import Model, ModelConfig, init_layer
from fastslow.verify.diagnostics import sigma_smooth_where_differenced
from fastslow.verify.measure import central_difference, relative_error

T, D = 2, 2


def one_layer(sigma: str) -> Model:
    """One layer without norm or slow path whose first MLP pre-activation is ``X[:, 0]``
    (``W1[:, 0] = e_0``), so a state with ``X[0, 0] = 0`` puts it at relu's kink."""
    cfg = ModelConfig(T=T, P=1, d=D, norm=False, sigma=sigma, slow=False)
    lp = init_layer(cfg, np.random.default_rng(0))
    W1 = lp.W1.copy()
    W1[:, 0] = [1.0, 0.0]
    return Model(cfg, [dataclasses.replace(lp, W1=W1)])


def state(x00: float) -> np.ndarray:
    X = np.random.default_rng(1).standard_normal((T, D))
    X[0, 0] = x00
    return X


DIRECTION = np.array([[1.0, 0.0], [0.0, 0.0]])
"""Moves ``X[0, 0]``: straight through the kink when it starts at 0."""


def diagnose(model, X, step):
    stencil = [(model, X + s * step * DIRECTION) for s in (1.0, -1.0)]
    return sigma_smooth_where_differenced(model, X, stencil, what="a central difference")


def difference_vs_jvp(model, X, step):
    fd = central_difference(lambda Z: stack(model, Z), X, DIRECTION, step)
    return relative_error(fd, stack_jvp(model, X, DIRECTION)[1])


def test_at_a_relu_kink_the_hypothesis_fails_and_the_difference_is_not_the_derivative():
    model, X = one_layer("relu"), state(0.0)
    diag = diagnose(model, X, 1e-6)
    assert not diag.holds and diag.value >= 1
    # the central difference averages the two one-sided slopes; the JVP takes σ'(0) = 0
    assert difference_vs_jvp(model, X, 1e-6) > 1e-2


def test_off_the_kink_by_more_than_the_step_the_hypothesis_holds_and_the_difference_agrees():
    model, X = one_layer("relu"), state(1e-3)
    assert diagnose(model, X, 1e-6).holds
    assert difference_vs_jvp(model, X, 1e-6) < 1e-8


def test_a_stencil_reaching_across_the_kink_is_caught():
    model, X = one_layer("relu"), state(1e-3)
    diag = diagnose(model, X, 1e-2)
    assert not diag.holds and diag.value == 1
    assert difference_vs_jvp(model, X, 1e-2) > 1e-2


@pytest.mark.parametrize("sigma", ["tanh", "gelu", "identity"])
def test_a_smooth_sigma_holds_even_at_zero(sigma):
    model, X = one_layer(sigma), state(0.0)
    assert diagnose(model, X, 1e-2).holds
    assert difference_vs_jvp(model, X, 1e-6) < 1e-8


def test_preactivations_are_those_the_mlp_evaluates():
    model, X = one_layer("relu"), state(0.5)
    Z = mlp_preactivations(model, X)
    assert Z.shape == (1, T, model.config.m)
    np.testing.assert_array_equal(Z[0], X @ model.layers[0].W1)
