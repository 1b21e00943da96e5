"""Unit and property tests of numerics.analysis.stability (margin, critical gate, pencil certificate) and of
the closed forms in theory.stability."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import ortho_group

from fastslow.numerics.analysis.stability import (
    critical_gate,
    gate_spectral_radii,
    margin_certificate,
    sigma_min_on_circle,
    spectral_radius,
    stability_margin,
)
from fastslow.theory.stability import (
    block_causal_gap_ratio,
    normal_critical_gates,
    scalar_critical_gates,
    slow_coupling_algebra,
)


def _contractive(rng, n, rho):
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    return rho * A / spectral_radius(A)


@pytest.mark.parametrize(
    "bad", [np.zeros((2, 3)), np.zeros(3), [[np.nan]], "J", None, np.zeros((0, 0))]
)
def test_inputs_are_validated(bad):
    with pytest.raises((ValueError, TypeError)):
        stability_margin(bad)


def test_critical_gate_validates_sign_and_shapes():
    with pytest.raises(ValueError, match="sign"):
        critical_gate(np.eye(2) * 0.5, np.eye(2), sign=2)
    with pytest.raises(ValueError, match="shape"):
        critical_gate(np.eye(2) * 0.5, np.eye(3))


def test_scalar_case_matches_the_closed_form():
    _, _, _, _, f = scalar_critical_gates()
    for a in (0.0, 0.3, 0.9):
        J, G = a * np.eye(3), np.eye(3)
        gp, gm, bound = f(a)
        assert stability_margin(J) == pytest.approx(1 - a, abs=1e-12)
        assert critical_gate(J, G) == pytest.approx(gp, abs=1e-10)
        assert critical_gate(J, G, sign=-1) == pytest.approx(gm, abs=1e-10)
        assert critical_gate(J, G) == pytest.approx(bound, abs=1e-10)  # tight


@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_normal_case_matches_the_closed_form(seed, n):
    rng = np.random.default_rng(seed)
    r = rng.uniform(0, 0.95, n)
    phi = rng.uniform(0, np.pi, n)
    lam = r * np.exp(1j * phi)
    Qm = ortho_group.rvs(n, random_state=rng) if n > 1 else np.eye(1)
    J = Qm @ np.diag(lam) @ Qm.T  # complex normal matrix
    gp, gm, m = normal_critical_gates().numeric(r, phi)
    assert stability_margin(J) == pytest.approx(1 - r.max(), abs=1e-9)
    assert critical_gate(J, np.eye(n)) == pytest.approx(gp.min(), abs=1e-9)
    assert critical_gate(J, np.eye(n), sign=-1) == pytest.approx(gm.min(), abs=1e-9)


@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.floats(0.05, 0.98))
def test_margin_agrees_with_the_pencil_certificate_and_a_dense_grid(seed, n, rho):
    J = _contractive(np.random.default_rng(seed), n, rho)
    m = stability_margin(J)
    cert = margin_certificate(J)
    dense = sigma_min_on_circle(J, np.linspace(0, 2 * np.pi, 4001)).min()
    assert cert.lower - 1e-9 <= m <= cert.upper + 1e-9
    assert m <= dense + 1e-12
    assert dense - m < 1e-3 * max(m, 1e-3)  # the grid only approaches from above
    # m ≤ 1 − ρ(J) always (σ_min(zI − J) ≤ |z − λ|), equality for normal J
    assert m <= 1 - spectral_radius(J) + 1e-10


def test_triangular_coupling_never_reaches_the_circle():
    J = np.diag([0.5, 0.2, -0.4])
    G = np.tril(np.ones((3, 3)), k=-1)  # nilpotent, strictly lower: spectrum of J + gG is J's
    assert critical_gate(J, G) == float("inf")
    assert np.allclose(gate_spectral_radii(J, G, [0, 10, 100]), 0.5)


def test_critical_gate_is_zero_for_a_non_contractive_reference():
    assert critical_gate(np.diag([1.2, 0.1]), np.eye(2)) == 0.0


def test_block_causal_gap_algebra_is_exact():
    assert block_causal_gap_ratio() == __import__("sympy").sqrt(
        __import__("sympy").Symbol("P", positive=True, integer=True) - 1
    )
    for N, P in ((1, 1), (2, 3), (3, 4)):
        out = slow_coupling_algebra(N, P)
        for key in (
            "G_times_I_minus_UB",
            "I_minus_UB_times_G",
            "I_minus_Pi_times_G",
            "gap_gram_minus_scaled_gram",
        ):
            assert out[key].is_zero_matrix, (N, P, key)
        assert out["gap"].is_zero_matrix == (N == 1 or P == 1)


@pytest.mark.parametrize("N, P", [(0, 2), (2, 0), (-1, 3), (2, 1.5), (1.5, 2), ("2", 2)])
def test_slow_coupling_algebra_refuses_sizes_that_are_not_positive_integers(N, P):
    """Each size on its own: a block count of 0 beside a valid P (or the reverse) is refused,
    naming both values."""
    with pytest.raises(ValueError, match="N and P must be positive integers"):
        slow_coupling_algebra(N, P)


def test_dense_jacobians_match_central_differences():
    from fastslow.numerics.analysis.stability import layer_jacobian, slow_jacobian
    from fastslow.numerics.model import kernels
    from fastslow.numerics.model.weights import ModelConfig, init_layer

    cfg = ModelConfig(T=6, P=3, d=2, mask="causal", slow_mask="full", gamma=0.5)
    p = init_layer(cfg, np.random.default_rng(0), gate=0.4)
    X = np.random.default_rng(1).standard_normal((6, 2))
    E = np.random.default_rng(2).standard_normal((6, 2))
    J, S = layer_jacobian(cfg, p, X, E), slow_jacobian(cfg, p, X)
    h = 1e-6
    for k in range(12):
        e = np.zeros(12)
        e[k] = h
        e = e.reshape(6, 2)
        fd_layer = (kernels.layer(cfg, p, X + e, E) - kernels.layer(cfg, p, X - e, E)) / (2 * h)
        fd_slow = (kernels.slow(cfg, p, X + e) - kernels.slow(cfg, p, X - e)) / (2 * h)
        assert np.allclose(J[:, k], fd_layer.ravel(), atol=1e-7)
        assert np.allclose(S[:, k], fd_slow.ravel(), atol=1e-7)


def test_looped_iteration_statuses():
    from fastslow.numerics.analysis.stability import iterate_looped_map
    from fastslow.numerics.model.weights import ModelConfig, init_layer

    cfg = ModelConfig(
        T=2, P=1, d=1, mask="causal", norm=False, sigma="identity", slow=False, gamma=1.0, h=0.5
    )
    p = init_layer(cfg, np.random.default_rng(0), scale=0.0)  # Φ(X) = X + 0.5(E − X)
    res = iterate_looped_map(cfg, p, np.ones((2, 1)), np.zeros((2, 1)), X_ref=np.zeros((2, 1)))
    assert res.status == "converged" and res.distance < 1e-11
    cfg2 = cfg.replace(gamma=0.0)
    p2 = p.copy()
    p2.W1[:] = 2.0
    p2.W2[:] = 1.0  # Φ(X) = X + 0.5·4X/… grows
    res = iterate_looped_map(cfg2, p2, np.ones((2, 1)), max_iter=200)
    assert res.status == "diverged"


def test_the_cached_closed_forms_cannot_be_changed_by_a_caller():
    """``normal_critical_gates`` is computed once per process and shared: its fields are frozen,
    so no caller can change what the next one reads."""
    import dataclasses

    ng = normal_critical_gates()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ng.margin = 0  # type: ignore[misc]
    assert normal_critical_gates() is ng and ng.margin == 1 - ng.r


@pytest.mark.parametrize("N, P", [(2, 3), (3, 2), (4, 1)])
def test_the_exact_slow_coupling_is_the_models_slow_path_at_uniform_scores(N, P):
    """Theory's ``G = U_c K_s B`` is the model's slow path (numerics.model.kernels.slow) where it
    is linear: no norm, ``Q_s = K_s = 0`` (uniform block-causal scores) and ``V_s = I``: block
    means, averaged over the blocks up to each, handed to the *next* block."""
    from fastslow.numerics.model import kernels
    from fastslow.numerics.model.weights import ModelConfig, init_layer

    d = 2
    cfg = ModelConfig(T=N * P, P=P, d=d, norm=False)
    lp = init_layer(cfg, np.random.default_rng(0))
    lp.Qs[:], lp.Ks[:], lp.Vs[:] = 0.0, 0.0, np.eye(d)
    X = np.random.default_rng(1).standard_normal((N * P, d))
    G = np.array(slow_coupling_algebra(N, P)["G"].tolist(), dtype=float)
    np.testing.assert_allclose(kernels.slow(cfg, lp, X), G @ X, rtol=0, atol=1e-14)


def test_the_critical_gate_is_the_first_crossing_when_stability_returns_beyond_it():
    """``J + gG = [[0, 0.1 + g], [5 − g, 0]]`` has ``ρ² = |(0.1 + g)(5 − g)|``: stable at 0,
    unstable from the smaller root of ``(0.1 + g)(5 − g) = 1`` (g ≈ 0.104), stable again near
    g = 5, unstable beyond: the critical gate is the first crossing, not the last."""
    J = np.array([[0.0, 0.1], [5.0, 0.0]])
    G = np.array([[0.0, 1.0], [-1.0, 0.0]])
    first = (4.9 - np.sqrt(4.9**2 - 2.0)) / 2.0
    assert critical_gate(J, G) == pytest.approx(first, rel=1e-6)
