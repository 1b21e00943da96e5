"""Unit and property tests of numerics.analysis.visibility: bundles, the forced stack and its exact tangent,
the visibility map against finite differences, and the kernel's first-order change."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.analysis.visibility import (
    BLOCKS,
    decaying_basis,
    decaying_projector,
    forced_stack,
    forced_tangent,
    kernel_jvp,
    numerical_rank,
    persistent_basis,
    persistent_component,
    visibility_map,
)
from fastslow.numerics.model.layer import attention_kernel, stack
from fastslow.numerics.model.masks import NAMED_MASKS, coarse_maps
from fastslow.numerics.model.weights import Model, ModelConfig, init_layer, init_model


def _model(mask="block_bidirectional", T=6, P=3, d=3, L=2, gamma=0.5, seed=0, gate=0.0):
    cfg = ModelConfig(T=T, P=P, d=d, mask=mask, gamma=gamma)
    return init_model(cfg, L, seed, gate=gate)


@pytest.mark.parametrize("mask", NAMED_MASKS)
def test_bundles(mask):
    cfg = ModelConfig(T=6, P=3, d=2, mask=mask)
    Ed = decaying_basis(cfg)
    R = persistent_basis(cfg)
    _, L = coarse_maps(mask, 6, 3)
    assert Ed.shape == (6, 6 - L.shape[1])
    assert np.allclose(Ed.T @ Ed, np.eye(Ed.shape[1]))
    assert np.abs(L.T @ Ed).max() < 1e-15
    assert np.allclose(decaying_projector(cfg) @ R, 0)
    X = np.arange(12.0).reshape(6, 2)
    expected = {
        "causal": X[:1],
        "block_causal": X[[0, 3]],
        "block_bidirectional": X.reshape(2, 3, 2).mean(axis=1),
    }[mask]
    assert np.allclose(persistent_component(cfg, X), expected)


def test_forced_stack_without_forcing_is_the_stack_bit_for_bit():
    model = _model(gate=0.3)
    X0 = np.random.default_rng(1).standard_normal((6, 3))
    assert np.array_equal(forced_stack(model, X0), stack(model, X0))


@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMED_MASKS), st.floats(-1, 1))
def test_forced_tangent_matches_central_differences(seed, mask, gate):
    rng = np.random.default_rng(seed)
    model = _model(mask, seed=seed % 1000, gate=gate)
    cfg = model.config
    X0 = rng.standard_normal((cfg.T, cfg.d))
    E = rng.standard_normal((cfg.T, cfg.d))
    dX0, dE = rng.standard_normal((2, cfg.T, cfg.d))
    dF = rng.standard_normal((model.L, cfg.T, cfg.d))
    dps = [lp.zeros_like().axpy(1.0, init_layer(cfg, rng)) for lp in model.layers]
    for dp in dps:
        dp.g = 0.7
    _, tan = forced_tangent(model, X0, E=E, dX0=dX0, dparams=dps, dE=dE, dF=dF)
    h = 1e-6

    def at(s):
        m = Model(cfg, tuple(lp.axpy(s, dp) for lp, dp in zip(model.layers, dps)))
        return forced_stack(m, X0 + s * dX0, E + s * dE, s * dF)

    fd = (at(h) - at(-h)) / (2 * h)
    assert np.linalg.norm(tan - fd) <= 1e-6 * max(1.0, np.linalg.norm(tan))


def test_visibility_map_columns_match_finite_differences():
    model = _model("block_bidirectional", gate=0.2)
    cfg = model.config
    X0 = np.random.default_rng(3).standard_normal((cfg.T, cfg.d))
    vm = visibility_map(model, X0, blocks=("Q", "g", "X0_Ed", "F_Ed"), output="state")
    # column 5 of Q: layer 0, entry (1, 2) (d = 3); gate column 1: layer 1
    h = 1e-6
    for block, col, bump in (
        ("Q", 5, lambda m, s: _bump(m, 0, "Q", (1, 2), s)),
        ("g", 1, lambda m, s: _bump(m, 1, "g", None, s)),
    ):
        fd = (stack(bump(model, h), X0) - stack(bump(model, -h), X0)) / (2 * h)
        assert np.allclose(vm[block][:, col], fd.ravel(), atol=1e-7)
    assert vm["X0_Ed"].shape == (cfg.T * cfg.d, (cfg.T - cfg.N) * cfg.d)
    assert vm["F_Ed"].shape == (cfg.T * cfg.d, model.L * (cfg.T - cfg.N) * cfg.d)


def _bump(model, layer, name, idx, s):
    layers = [lp.copy() for lp in model.layers]
    if name == "g":
        layers[layer].g += s
    else:
        getattr(layers[layer], name)[idx] += s
    return Model(model.config, tuple(layers))


def test_tied_model_has_one_column_per_shared_entry():
    cfg = ModelConfig(T=4, P=2, d=2, mask="causal")
    model = init_model(cfg, 3, 0, tied=True)
    vm = visibility_map(model, np.ones((4, 2)), blocks=("V", "g"))
    assert vm["V"].shape == (2, 4) and vm["g"].shape == (2, 1)


@given(st.integers(0, 2**32 - 1), st.sampled_from(NAMED_MASKS), st.booleans())
def test_kernel_change_rows_sum_to_zero_and_match_finite_differences(seed, mask, homogeneous):
    rng = np.random.default_rng(seed)
    cfg = ModelConfig(T=6, P=3, d=3, mask=mask)
    lp = init_layer(cfg, rng)
    X = np.ones((6, 1)) * rng.standard_normal(3) if homogeneous else rng.standard_normal((6, 3))
    dX = rng.standard_normal((6, 3))
    A, dA = kernel_jvp(cfg, lp, X, dX=dX)
    assert np.allclose(A, attention_kernel(cfg, lp, X))
    assert np.abs(dA.sum(axis=1)).max() < 1e-14
    h = 1e-6
    fd = (attention_kernel(cfg, lp, X + h * dX) - attention_kernel(cfg, lp, X - h * dX)) / (2 * h)
    assert np.abs(dA - fd).max() < 1e-7
    if homogeneous:  # δA annihilates every homogeneous matrix
        assert np.abs(dA @ X).max() < 1e-13 * np.abs(X).max() * max(1.0, np.abs(dA).max())


def test_validation():
    model = _model()
    X0 = np.zeros((6, 3))
    with pytest.raises(ValueError, match="block"):
        visibility_map(model, X0, blocks=("nope",))
    with pytest.raises(ValueError, match="output"):
        visibility_map(model, X0, output="all")
    with pytest.raises(ValueError, match="shape"):
        forced_stack(model, X0, F=np.zeros((1, 6, 3)))
    # a custom mask: its stationary weighting (here the whole mask is one block: Y = the mean);
    # refused when a block's eigenvalue 1 is not simple (two closed classes: no unique L)
    custom = ModelConfig(T=2, P=1, d=1, mask=np.ones((2, 2), bool))
    assert np.allclose(persistent_component(custom, np.array([[1.0], [3.0]])), [[2.0]])
    two_classes = ModelConfig(T=2, P=2, d=1, mask=np.eye(2, dtype=bool))
    with pytest.raises(ValueError, match="not simple"):
        persistent_component(two_classes, np.zeros((2, 1)))
    assert numerical_rank([1.0, 1e-3, 1e-12], 1.0) == 2
    assert set(BLOCKS) >= {"Q", "K", "g", "X0_Ed", "E_Ed", "F_Ed"}
