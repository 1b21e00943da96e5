"""The layer, the stack and the depth-flow right-hand sides against a direct transcription of
the layer map of numerics.model.layer with dense matrices and explicit loops (an independent second implementation)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model import pooling
from fastslow.numerics.model.flow import coupling_rhs, depth_rhs, make_rhs
from fastslow.numerics.model.layer import (
    attention_kernel,
    layer,
    layer_increment,
    masked_softmax,
    mlp,
    slow_path,
    stack,
    stack_trajectory,
)
from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import (
    SIGMAS,
    LayerParams,
    Model,
    ModelConfig,
    init_layer,
    init_model,
)


def _softmax_rows(S, mask):
    out = np.zeros_like(S)
    for t in range(S.shape[0]):
        idx = np.flatnonzero(mask[t])
        z = np.array([math.exp(S[t, s] - max(S[t, idx])) for s in idx])
        out[t, idx] = z / z.sum()
    return out


def _norm(X, cfg):
    if not cfg.norm:
        return X
    return np.array([x / math.sqrt(sum(xi * xi for xi in x) / len(x) + cfg.norm_eps) for x in X])


def _gelu_scalar(z: float) -> float:
    """The tanh approximation of GELU, transcribed from its definition."""
    return 0.5 * z * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


ACTIVATIONS = {
    "tanh": np.tanh,
    "relu": np.vectorize(lambda z: z if z > 0.0 else 0.0, otypes=[float]),
    "gelu": np.vectorize(_gelu_scalar, otypes=[float]),
    "identity": lambda z: z,
}
"""σ written out independently of numerics.model.activations."""


def dense_layer(cfg, p, X, E):
    """The layer map written out with dense B and U_c matrices."""
    beta = cfg.score_scale
    Xn = _norm(X, cfg)
    A = _softmax_rows(beta * (Xn @ p.Q) @ (Xn @ p.K).T, cfg.mask_array)
    act = ACTIVATIONS[cfg.sigma]
    F = A @ Xn @ p.V + act(Xn @ p.W1) @ p.W2
    if cfg.slow:
        B = pooling.pooling_matrix(cfg.T, cfg.P)
        Uc = pooling.causal_upsampling_matrix(cfg.T, cfg.P)
        Yh = _norm(B @ X, cfg)
        smask = (
            np.ones((cfg.N, cfg.N), bool)
            if cfg.slow_mask == "full"
            else np.tril(np.ones((cfg.N, cfg.N), bool))
        )
        As = _softmax_rows(beta * (Yh @ p.Qs) @ (Yh @ p.Ks).T, smask)
        F = F + p.g * (Uc @ As @ Yh @ p.Vs)
    F = F + cfg.gamma * (E - X)
    return X + cfg.h * F


configs = st.builds(
    lambda N, P, d, m, mask, slow_mask, norm, sigma, h, gamma, slow: ModelConfig(
        T=N * P,
        P=P,
        d=d,
        m=m,
        mask=mask,
        slow_mask=slow_mask,
        norm=norm,
        sigma=sigma,
        h=h,
        gamma=gamma,
        slow=slow,
    ),
    N=st.integers(1, 4),
    P=st.integers(1, 3),
    d=st.integers(1, 4),
    m=st.integers(1, 5),
    mask=st.sampled_from(NAMED_MASKS),
    slow_mask=st.sampled_from(["blockcausal", "full"]),
    norm=st.booleans(),
    sigma=st.sampled_from(SIGMAS),
    h=st.sampled_from([1.0, 0.25]),
    gamma=st.sampled_from([0.0, 0.5]),
    slow=st.booleans(),
)


@given(configs, st.integers(0, 2**32 - 1), st.floats(-2, 2))
def test_layer_matches_the_dense_transcription_of_the_spec(cfg, seed, g):
    rng = np.random.default_rng(seed)
    p = init_layer(cfg, rng, gate=g)
    X, E = rng.standard_normal((2, cfg.T, cfg.d))
    np.testing.assert_allclose(
        layer(cfg, p, X, E), dense_layer(cfg, p, X, E), rtol=1e-12, atol=1e-12
    )


@given(configs, st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_stack_composes_the_layers_in_depth_order(cfg, seed, L):
    model = init_model(cfg, L, seed, gate=0.3)
    rng = np.random.default_rng(seed + 1)
    X0, E = rng.standard_normal((2, cfg.T, cfg.d))
    X = X0
    for p in model.layers:
        X = dense_layer(cfg, p, X, E)
    np.testing.assert_allclose(stack(model, X0, E), X, rtol=1e-11, atol=1e-11)
    traj = stack_trajectory(model, X0, E)
    assert traj.shape == (L + 1, cfg.T, cfg.d) and np.array_equal(traj[0], X0)


def test_injection_target_defaults_to_the_input():
    cfg = ModelConfig(T=4, P=2, d=3, gamma=0.5)
    model = init_model(cfg, 2, 3)
    X0 = np.random.default_rng(0).standard_normal((4, 3))
    np.testing.assert_array_equal(stack(model, X0), stack(model, X0, X0))


def test_init_is_reproducible_and_tied_models_share_one_layer():
    cfg = ModelConfig(T=4, P=2, d=3)
    a, b = init_model(cfg, 3, 11), init_model(cfg, 3, 11)
    assert np.array_equal(a.layers[2].to_vector(), b.layers[2].to_vector())
    assert not a.tied and init_model(cfg, 3, 11, tied=True).tied
    assert not np.array_equal(a.layers[0].Q, a.layers[1].Q)


def test_layer_params_vector_round_trip_and_gates():
    cfg = ModelConfig(T=4, P=2, d=3, m=5)
    model = init_model(cfg, 2, 0).with_gates([0.1, -0.2])
    p = model.layers[1]
    q = LayerParams.from_vector(p.to_vector(), 3, 5)
    assert np.array_equal(q.to_vector(), p.to_vector()) and q.g == -0.2
    assert model.params_at(0.0) is model.layers[0] and model.params_at(1.0) is model.layers[1]


@given(st.integers(0, 2**32 - 1))
def test_coupling_rhs_is_the_kernel_generator_over_eps_plus_the_remainder(seed):
    rng = np.random.default_rng(seed)
    cfg = ModelConfig(T=6, P=3, d=2, mask="block_bidirectional", gamma=0.7)
    p = init_layer(cfg, rng, gate=0.4)
    X, E = rng.standard_normal((2, 6, 2))
    eps = 1e-2
    A = attention_kernel(cfg, p, X)
    expected = (
        (A - np.eye(6)) @ X / eps + mlp(cfg, p, X) + 0.4 * slow_path(cfg, p, X) + 0.7 * (E - X)
    )
    np.testing.assert_allclose(coupling_rhs(cfg, p, X, eps, E), expected, rtol=1e-12, atol=1e-12)
    model = Model(cfg, (p,))
    f = make_rhs(model, form="coupling", eps=eps, E=E)
    np.testing.assert_array_equal(f(0.3, X), coupling_rhs(cfg, p, X, eps, E))
    g = make_rhs(model, form="layer", E=E)
    np.testing.assert_allclose(g(0.3, X), layer_increment(cfg, p, X, E), rtol=1e-14)


def test_the_public_one_point_wrappers_are_the_functions_they_validate():
    """``depth_rhs`` (one point of ``make_rhs``) and ``masked_softmax`` (the row softmax on a mask,
    against a scalar transcription), with their one-line refusals."""
    rng = np.random.default_rng(5)
    cfg = ModelConfig(T=6, P=3, d=2, mask="block_causal", gamma=0.7)
    model = Model(cfg, (init_layer(cfg, rng, gate=0.4),))
    X, E = rng.standard_normal((2, 6, 2))
    for form, eps in (("coupling", 1e-2), ("layer", None)):
        f = make_rhs(model, form=form, eps=eps, E=E)
        np.testing.assert_array_equal(depth_rhs(model, 0.3, X, form=form, eps=eps, E=E), f(0.3, X))
    S = rng.standard_normal((5, 5))
    mask = np.tril(np.ones((5, 5), dtype=bool))
    np.testing.assert_allclose(masked_softmax(S, mask), _softmax_rows(S, mask), rtol=1e-14)
    with pytest.raises(ValueError, match="at least one entry"):
        masked_softmax(S, np.triu(mask, k=1))
    with pytest.raises(ValueError, match="boolean array of shape"):
        masked_softmax(S, mask[:4])


def _cfg():
    return ModelConfig(T=4, P=2, d=3)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: ModelConfig(T=6, P=4, d=2),
            ValueError,
            "P=4 must divide the sequence length T=6",
        ),
        (lambda: ModelConfig(T=4, P=2, d=0), ValueError, "d must be a positive integer, got 0"),
        (
            lambda: ModelConfig(T=-4, P=2, d=2),
            ValueError,
            "T must be a positive integer, got -4",
        ),
        (lambda: ModelConfig(T=4, P=2, d=2, mask="window"), ValueError, "unknown mask 'window'"),
        (
            lambda: ModelConfig(T=4, P=2, d=2, slow_mask="causal"),
            ValueError,
            "unknown slow_mask",
        ),
        (
            lambda: ModelConfig(T=4, P=2, d=2, sigma="swish"),
            ValueError,
            r"unknown sigma 'swish'; expected one of \['tanh', 'relu', 'gelu', 'identity'\]",
        ),
        (lambda: ModelConfig(T=4, P=2, d=2, sigma=np.tanh), TypeError, "sigma must be one of"),
        (lambda: ModelConfig(T=4, P=2, d=2, h=0.0), ValueError, "h must be > 0"),
        (lambda: ModelConfig(T=4, P=2, d=2, gamma=-1.0), ValueError, "gamma must be ≥ 0"),
        (
            lambda: ModelConfig(T=4, P=2, d=2, norm="yes"),
            TypeError,
            "norm must be True or False",
        ),
        (lambda: init_model(_cfg(), 0, 1), ValueError, "L must be a positive integer, got 0"),
        (
            lambda: stack(init_model(_cfg(), 1, 1), np.ones((3, 3))),
            ValueError,
            r"X0 must have shape 4×3, got \(3, 3\)",
        ),
        (
            lambda: stack(init_model(_cfg(), 1, 1), np.full((4, 3), np.inf)),
            ValueError,
            "X0 must be finite",
        ),
        (
            lambda: stack("model", np.ones((4, 3))),
            TypeError,
            "model must be a numerics.model.weights.Model",
        ),
        (
            lambda: layer(
                _cfg(),
                init_layer(_cfg(), np.random.default_rng(0)).axpy(
                    np.nan, init_layer(_cfg(), np.random.default_rng(1))
                ),
                np.ones((4, 3)),
            ),
            ValueError,
            "Q must be finite",
        ),
        (
            lambda: coupling_rhs(
                _cfg(), init_layer(_cfg(), np.random.default_rng(0)), np.ones((4, 3)), 0.0
            ),
            ValueError,
            "eps must be > 0",
        ),
        (
            lambda: coupling_rhs(
                _cfg(), init_layer(_cfg(), np.random.default_rng(0)), np.ones((4, 3)), -1e-3
            ),
            ValueError,
            "eps must be > 0",
        ),
        (
            lambda: make_rhs(init_model(_cfg(), 1, 1), form="coupling"),
            ValueError,
            "needs eps",
        ),
        (
            lambda: make_rhs(init_model(_cfg(), 1, 1), form="implicit"),
            ValueError,
            "unknown form",
        ),
        (
            lambda: make_rhs(init_model(_cfg().replace(gamma=1.0), 1, 1)),
            ValueError,
            "needs the injection target E",
        ),
    ],
)
def test_bad_input_is_rejected_with_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_weights_of_the_wrong_shape_are_rejected():
    cfg = _cfg()
    p = init_layer(cfg, np.random.default_rng(0))
    p.W1 = np.ones((3, 7))
    with pytest.raises(ValueError, match=r"W1 must have shape 3×3, got \(3, 7\)"):
        layer(cfg, p, np.ones((4, 3)))


def test_overflowing_stack_raises_instead_of_returning_nan():
    cfg = ModelConfig(T=4, P=2, d=2, norm=False, sigma="identity")
    model = init_model(cfg, 60, 0, scale=30.0)
    with pytest.raises(
        FloatingPointError, match=r"layer \d+ produced non-finite or overflowing values"
    ):
        stack(model, np.ones((4, 2)))


def test_a_ragged_array_is_refused_as_not_an_array_of_numbers():
    """NumPy's own ``ValueError`` for a ragged nested list becomes the one-line refusal naming
    the argument (a bad input, not an error of the computation)."""
    from fastslow.numerics import validation  # deferred: only this test reads the module itself

    with pytest.raises(TypeError, match="X must be an array of real numbers"):
        validation.finite_array("X", [[1.0, 2.0], [3.0]])
