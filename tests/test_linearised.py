"""numerics.analysis.linearised: the factors N, M, the polynomial/eigen/mode forms, L*, c_K, the coarse stack."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.analysis import linearised
from fastslow.numerics.model.layer import rms_norm, stack
from fastslow.numerics.model.masks import frozen_kernel, spectral_projector
from fastslow.numerics.model.weights import ModelConfig, init_model


def _model(mask="causal", T=8, P=4, d=3, L=4, seed=0, **kw):
    cfg = ModelConfig(T=T, P=P, d=d, mask=mask, slow=False, **kw)
    return init_model(cfg, L, seed)


def test_norm_jacobian_matches_finite_differences():
    x = np.array([0.3, -1.2, 2.0, 0.7])
    J = linearised.norm_jacobian(x, 1e-6)
    eps = 1e-6
    fd = np.array(
        [(rms_norm(x + eps * e) - rms_norm(x - eps * e)) / (2 * eps) for e in np.eye(4)]
    )  # row i: ∂n/∂x_i
    assert np.abs(J - fd).max() < 1e-8
    assert np.abs(J - J.T).max() == 0.0


@pytest.mark.parametrize(
    "norm,sigma,gamma",
    [
        (True, "tanh", 0.0),
        (False, "identity", 0.5),
        (True, "tanh", 0.3),
        (True, "gelu", 0.3),
        (False, "gelu", 0.0),
        (True, "relu", 0.0),  # the pre-activations here are ≥ 0.16 away from the kink at 0
        (False, "relu", 0.5),
    ],
)
def test_single_token_linearisation_is_N_plus_M(norm, sigma, gamma):
    """For T = 1 the kernel is [1], so the layer's derivative is δx (N + M)."""
    model = _model(T=1, P=1, d=3, L=1, norm=norm, sigma=sigma, gamma=gamma, h=0.5)
    cfg, p = model.config, model.layers[0]
    x = np.array([0.4, -0.9, 1.3])
    N, M = linearised.layer_factors(model, x[None])
    eps = 1e-6
    e = x.copy()
    step = lambda z: z + cfg.h * linearised.single_token_increment(cfg, p, z, e)
    fd = np.array([(step(x + eps * u) - step(x - eps * u)) / (2 * eps) for u in np.eye(3)])
    assert np.abs(fd - (N[0] + M[0])).max() < 1e-8


def test_homogeneous_trajectory_is_the_stack_on_homogeneous_input():
    model = _model(mask="block_causal")
    x0 = np.array([0.5, -1.0, 0.25])
    xs = linearised.homogeneous_trajectory(model, x0)
    X = stack(model, np.ones((8, 1)) * x0)
    assert np.abs(X - xs[-1]).max() <= 1e-14 * np.abs(X).max()


def test_homogeneous_trajectory_rejects_open_gate():
    cfg = ModelConfig(T=4, P=2, d=2)
    model = init_model(cfg, 2, 0, gate=0.3)
    with pytest.raises(ValueError, match="block 1 zero"):
        linearised.homogeneous_trajectory(model, np.ones(2))


@given(T=st.integers(1, 6), d=st.integers(1, 4), L=st.integers(1, 6), seed=st.integers(0, 1000))
def test_polynomial_form_equals_recursion_for_any_row_stochastic_kernel(T, d, L, seed):
    """No diagonalisability needed: Σ_j K^j δX C_j is the recursion for every K."""
    rng = np.random.default_rng(seed)
    K = rng.uniform(size=(T, T)) * (rng.uniform(size=(T, T)) < 0.6) + np.eye(T)
    K /= K.sum(axis=1, keepdims=True)
    N, M = rng.standard_normal((2, L, d, d)) * 0.7
    dX = rng.standard_normal((T, d))
    C = linearised.depth_polynomial(N, M)
    a = linearised.apply_depth_polynomial(K, dX, C)
    b = linearised.linearised_stack(K, dX, N, M)
    assert np.linalg.norm(a - b) <= 1e-12 * max(1.0, np.linalg.norm(b))
    lams = np.array([1.0, 0.5, -0.3])
    D = linearised.mode_products(N, M, lams)
    for lam, Dl in zip(lams, D):
        assert np.abs(sum(lam**j * C[j] for j in range(L + 1)) - Dl).max() <= 1e-12 * max(
            1.0, np.abs(Dl).max()
        )


@pytest.mark.parametrize(
    "name,T,P", [("causal", 7, None), ("block_causal", 8, 4), ("block_bidirectional", 6, 3)]
)
def test_closed_form_projectors(name, T, P):
    K = frozen_kernel(name, T, P)
    projs = linearised.spectral_projectors(name, T, P)
    assert np.abs(sum(projs.values()) - np.eye(T)).max() <= 1e-12
    for lam, Pl in projs.items():
        scale = max(1.0, np.abs(Pl).max())
        assert np.abs(Pl @ Pl - Pl).max() <= 1e-12 * scale**2
        assert np.abs(K @ Pl - lam * Pl).max() <= 1e-12 * scale
    assert np.abs(projs[1.0] - spectral_projector(name, T, P)).max() == 0.0


def test_causal_eigenvectors_are_biorthogonal_exactly():
    V, W = linearised.causal_eigenvectors(20)
    assert np.array_equal(W.T @ V, np.eye(20))
    K = frozen_kernel("causal", 20)
    lam = 1.0 / np.arange(1, 21)
    assert np.abs(K @ V - V * lam).max() <= 1e-12 * np.abs(V).max()


def test_kernel_constants():
    assert linearised.kernel_constant("block_bidirectional", 8, 4) == 1.0
    assert linearised.kernel_constant("block_bidirectional", 8, 1) == 0.0
    assert linearised.kernel_constant("causal", 2) == pytest.approx(math.sqrt(2))
    assert linearised.kernel_constant("block_causal", 12, 4) == linearised.kernel_constant(
        "causal", 4
    )
    assert linearised.kernel_constant("causal", 64) > 1e25


def test_condition_number_matches_numpy_where_numpy_is_accurate():
    for T in (4, 8, 12):
        _, V = np.linalg.eig(frozen_kernel("causal", T))
        assert linearised.causal_eigenvector_condition(T) == pytest.approx(
            np.linalg.cond(V), rel=1e-6
        )


def test_saturation_depth_and_validation():
    assert linearised.saturation_depth([3.0, 0.5, 0.05, 0.2], 0.1) == 3.0
    assert linearised.saturation_depth([3.0, 2.0], 0.1) == math.inf
    with pytest.raises(ValueError, match="tau"):
        linearised.saturation_depth([1.0], 0.0)
    with pytest.raises(ValueError, match="eigenvalue 1"):
        linearised.mode_ratio(np.eye(2)[None], np.eye(2)[None], [0.5])
    with pytest.raises(ValueError, match="shape"):
        linearised.apply_depth_polynomial(np.eye(3), np.ones((3, 2)), np.ones((2, 3, 3)))


def test_mode_ratio_of_scalar_modes_is_closed_form():
    """d = 1, N = a, M = b: r(L) = max_{λ≠1} |a + λb|^L / |a + b|^L."""
    N, M = np.full((5, 1, 1), 0.4), np.full((5, 1, 1), 0.6)
    r, smin = linearised.mode_ratio(N, M, np.array([1.0, 0.5, 0.0]))
    assert np.allclose(r, 0.7 ** np.arange(1, 6), rtol=1e-14)
    assert np.allclose(smin, 1.0)


@pytest.mark.parametrize("mask", ["block_causal", "block_bidirectional"])
def test_coarse_stack_equals_stack_on_block_constant_input(mask):
    cfg = ModelConfig(T=12, P=3, d=3, mask=mask)
    model = init_model(cfg, 3, 1, gate=0.7)
    Y0 = np.random.default_rng(2).standard_normal((4, 3))
    full = stack(model, np.repeat(Y0, 3, axis=0))
    coarse = np.repeat(linearised.coarse_stack(model, Y0), 3, axis=0)
    assert np.abs(full - coarse).max() <= 1e-13 * np.abs(full).max()


def test_coarse_factorisation_is_projector_times_D1():
    dX = np.random.default_rng(0).standard_normal((8, 2))
    D1 = np.array([[1.0, 2.0], [0.5, -1.0]])
    out = linearised.coarse_factorisation("block_causal", 8, 4, dX, D1)
    assert np.abs(out - spectral_projector("block_causal", 8, 4) @ dX @ D1).max() <= 1e-14


@pytest.mark.parametrize("shape", [(4,), (2, 4), (3,), (2, 2, 3)])
def test_single_token_increment_refuses_a_state_of_another_shape(shape):
    """``x`` of shape (d,) or (n, d) only: a wrong width, or the right width with a third axis,
    is refused naming the shape."""
    cfg = ModelConfig(T=4, P=2, d=3)
    p = init_model(cfg, 1, 0).layers[0]
    x = np.ones(shape)
    if shape in ((3,),):
        assert linearised.single_token_increment(cfg, p, x).shape == (3,)
        return
    with pytest.raises(ValueError, match=r"x must have shape \(d,\) or \(n, d\) with d=3"):
        linearised.single_token_increment(cfg, p, x)
