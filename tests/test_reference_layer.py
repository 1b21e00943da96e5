"""numerics' layer, pooling, masks and linearisations against the reference written from the §1
formulas (verify.reference.layer), to a tolerance stated in units of round-off."""

import numpy as np
import pytest

from fastslow.numerics.analysis.stability import layer_jacobian, slow_jacobian
from fastslow.numerics.model import pooling
from fastslow.numerics.model.layer import layer, slow_path, stack_trajectory
from fastslow.numerics.model.masks import block_level_mask, frozen_kernel, make_mask
from fastslow.numerics.model.pooling import block_mean, causal_upsample, upsample
from fastslow.numerics.model.weights import ModelConfig, init_layer, init_model
from fastslow.verify.reference import layer as reference_layer

U = 2.0**-53
LAYER_UNITS = 64
"""One layer of numerics and of the reference on the same input agree to this many units of
round-off relative to max(1, max|Φ(X)|) (measured: below 1 unit on every setting below)."""
JACOBIAN_UNITS = 64
"""Dense Jacobians (exact JVPs against the complex step) agree to this many units relative to
their largest entry (measured: below 2.1 units)."""

SETTINGS = [
    dict(mask=mask, norm=norm, sigma=sig, slow_mask=sm)
    for mask in ("causal", "block_causal", "block_bidirectional")
    for norm, sig, sm in (
        (True, "tanh", "blockcausal"),
        (False, "gelu", "full"),
        (True, "relu", "full"),
    )
]


def test_reference_pieces_satisfy_their_defining_identities():
    T, P = 12, 3
    B, Up, Uc = (
        reference_layer.pooling(T, P),
        reference_layer.upsampling(T, P),
        reference_layer.causal_upsampling(T, P),
    )
    assert np.array_equal(B @ Up, np.eye(T // P))
    UB = Up @ B
    assert np.allclose(UB @ UB, UB) and np.allclose(UB, UB.T)
    assert np.array_equal(Uc[:P], np.zeros((P, T // P)))
    assert np.array_equal(Uc[P:, :-1], Up[:-P, :-1])  # block b receives block b − 1
    assert not Uc[:, -1].any()
    for name in ("causal", "block_causal", "block_bidirectional"):
        M = reference_layer.named_mask(name, T, P)
        assert M.any(axis=1).all()
    assert not np.triu(reference_layer.named_mask("causal", T), 1).any()
    # a token's slow input reads only completed blocks
    S = reference_layer.slow_token_mask("blockcausal", T, P)
    assert all(not S[t, (t // P) * P :].any() for t in range(T))


@pytest.mark.parametrize("name", ["causal", "block_causal", "block_bidirectional"])
def test_named_masks_are_the_reference_masks(name):
    for T, P in ((8, 2), (12, 4), (6, 1), (6, 6)):
        assert np.array_equal(make_mask(name, T, P), reference_layer.named_mask(name, T, P))
        assert np.array_equal(
            frozen_kernel(name, T, P),
            reference_layer.named_mask(name, T, P)
            / reference_layer.named_mask(name, T, P).sum(1, keepdims=True),
        )


def test_pooling_and_shift_are_the_reference_maps():
    rng = np.random.default_rng(0)
    for T, P in ((12, 3), (8, 8), (5, 1)):
        X = rng.standard_normal((T, 2))
        Y = rng.standard_normal((T // P, 2))
        assert np.allclose(block_mean(X, P), reference_layer.pooling(T, P) @ X, rtol=0, atol=4 * U)
        assert np.array_equal(upsample(Y, P), reference_layer.upsampling(T, P) @ Y)
        assert np.array_equal(causal_upsample(Y, P), reference_layer.causal_upsampling(T, P) @ Y)
        assert np.array_equal(
            pooling.causal_upsample_adjoint(X, P), reference_layer.causal_upsampling(T, P).T @ X
        )
        for sm in ("blockcausal", "full"):
            assert np.array_equal(
                block_level_mask(sm, T // P), reference_layer.slow_level_mask(sm, T // P)
            )


def test_score_scale_is_one_over_root_d_unless_given():
    for d in (1, 4, 9, 16):
        cfg = ModelConfig(T=4, P=2, d=d)
        assert cfg.score_scale == reference_layer.setting_of(cfg).score_scale == 1.0 / np.sqrt(d)
    assert ModelConfig(T=4, P=2, d=4, beta=0.3).score_scale == 0.3


@pytest.mark.parametrize("kw", SETTINGS)
def test_the_model_computes_the_reference_layer(kw):
    cfg = ModelConfig(T=16, P=4, d=8, gamma=0.3, h=0.5, **kw)
    model = init_model(cfg, 3, np.random.SeedSequence(1)).with_gates([0.7, -0.4, 1.1])
    X0 = np.random.default_rng(2).standard_normal((16, 8))
    traj = stack_trajectory(model, X0)
    s = reference_layer.setting_of(cfg)
    for l, p in enumerate(model.layers):
        w, g = reference_layer.weights_of(p)
        ref = reference_layer.layer(s, w, g, traj[l], X0)
        err = np.abs(ref - traj[l + 1]).max()
        assert err <= LAYER_UNITS * U * max(1.0, np.abs(ref).max()), (l, err)
        assert np.allclose(
            slow_path(cfg, p, traj[l]),
            reference_layer.slow_path(s, w, traj[l]),
            rtol=0,
            atol=LAYER_UNITS * U * 10,
        )


@pytest.mark.parametrize("kw", SETTINGS[:6])
def test_layer_and_slow_jacobians_are_the_reference_derivatives(kw):
    cfg = ModelConfig(T=6, P=3, d=4, gamma=0.3, h=0.5, **kw)
    lp = init_layer(cfg, np.random.default_rng(1), gate=0.6)
    X = np.random.default_rng(2).standard_normal((6, 4))
    E = np.random.default_rng(3).standard_normal((6, 4))
    s = reference_layer.setting_of(cfg)
    w, g = reference_layer.weights_of(lp)
    J, Jr = (
        layer_jacobian(cfg, lp, X, E),
        reference_layer.jacobian(lambda Z: reference_layer.layer(s, w, g, Z, E), X),
    )
    G, Gr = (
        slow_jacobian(cfg, lp, X),
        reference_layer.jacobian(lambda Z: reference_layer.slow_path(s, w, Z), X),
    )
    assert np.abs(J - Jr).max() <= JACOBIAN_UNITS * U * np.abs(Jr).max()
    assert np.abs(G - Gr).max() <= JACOBIAN_UNITS * U * np.abs(Gr).max()


def test_the_reference_sees_a_wrong_score_scale():
    """The comparison has teeth: β = 1 instead of 1/√d moves the layer far beyond round-off."""
    cfg = ModelConfig(T=8, P=2, d=8)
    model = init_model(cfg, 1, np.random.SeedSequence(4)).with_gates(0.5)
    X = np.random.default_rng(5).standard_normal((8, 8))
    w, g = reference_layer.weights_of(model.layers[0])
    wrong = reference_layer.Setting(**{**reference_layer.setting_of(cfg).__dict__, "beta": 1.0})
    assert (
        np.abs(reference_layer.layer(wrong, w, g, X) - layer(cfg, model.layers[0], X)).max() > 1e-3
    )
