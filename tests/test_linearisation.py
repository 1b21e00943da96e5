"""theory.linearisation and theory.kernels: closed forms, lambdified factors, exact projectors."""

import numpy as np
import pytest
import sympy as sp

from fastslow.theory import kernels as theory_kernels
from fastslow.theory import linearisation


def test_factors_without_norm_and_nonlinearity_are_the_weights():
    syms, N, M, Jn = linearisation.factor_matrices(2, norm=False, sigma="identity")
    h, g = syms["h"], syms["gamma"]
    assert (Jn - sp.eye(2)).is_zero_matrix
    assert (M - h * syms["V"]).is_zero_matrix
    assert sp.expand(N - (sp.eye(2) + h * (syms["W1"] * syms["W2"] - g * sp.eye(2)))).is_zero_matrix


def test_norm_jacobian_annihilates_the_state_when_eps_is_zero():
    syms, _, _, _ = linearisation.factor_matrices(3)
    x, _eps = syms["x"], syms["eps"]
    Jn = linearisation.norm_jacobian_closed_form(x, 0)
    assert (x.T * Jn).applyfunc(sp.cancel).is_zero_matrix


def test_lambdified_factors_match_the_symbolic_ones():
    rng = np.random.default_rng(0)
    x, V, W1, W2 = rng.standard_normal(2), *rng.standard_normal((3, 2, 2))
    N, M = linearisation.factors_function(2)(x, V, W1, W2, 0.5, 0.2, 1e-6)
    syms, Ns, Ms, _ = linearisation.factor_matrices(2)
    sub = {
        **dict(zip(syms["x"], x)),
        **dict(zip(syms["V"], V.ravel())),
        **dict(zip(syms["W1"], W1.ravel())),
        **dict(zip(syms["W2"], W2.ravel())),
        syms["h"]: 0.5,
        syms["gamma"]: 0.2,
        syms["eps"]: 1e-6,
    }
    assert np.abs(np.array(Ns.subs(sub), dtype=float) - N).max() < 1e-12
    assert np.abs(np.array(Ms.subs(sub), dtype=float) - M).max() < 1e-12


def test_mask_matrix():
    assert linearisation.mask_matrix("block_causal", 4, 2) == [
        [True, False, False, False],
        [True, True, False, False],
        [False, False, True, False],
        [False, False, True, True],
    ]


def test_jacobian_identity_for_a_tiny_case():
    assert linearisation.homogeneous_jacobian_residual(2, 1, "causal").is_zero_matrix


@pytest.mark.parametrize("sigma", ["relu", "gelu", sp.sin(sp.Symbol("u"))])
def test_jacobian_identity_for_other_activations(sigma):
    """relu (Max(z, 0), derivative Heaviside), gelu and a user expression in one symbol."""
    assert linearisation.homogeneous_jacobian_residual(2, 1, "causal", sigma=sigma).is_zero_matrix


def test_activations_and_their_derivatives():
    z = sp.Symbol("z", real=True)
    assert linearisation.activation("relu")(z) == sp.Max(z, 0)
    assert linearisation.activation_derivative("relu")(z) == sp.Heaviside(z)
    assert linearisation.activation_derivative("tanh")(z) == 1 - sp.tanh(z) ** 2
    assert linearisation.activation_derivative("identity")(z) == 1
    c = sp.sqrt(2 / sp.pi)
    gelu = z / 2 * (1 + sp.tanh(c * (z + sp.Rational(44715, 10**6) * z**3)))
    assert sp.simplify(linearisation.activation("gelu")(z) - gelu) == 0
    w = sp.Symbol("w")
    lam = sp.Lambda(w, w**3 + w)
    assert linearisation.activation(lam)(z) == z**3 + z == linearisation.activation(w**3 + w)(z)
    assert linearisation.activation_derivative(lam)(z) == 3 * z**2 + 1


def test_bad_activations_are_rejected_naming_the_choices():
    a, b = sp.symbols("a b")
    with pytest.raises(
        ValueError, match=r"unknown sigma 'swish'; expected one of \['tanh', 'relu'"
    ):
        linearisation.factor_matrices(2, sigma="swish")
    with pytest.raises(ValueError, match="exactly one symbol"):
        linearisation.activation(a * b)
    with pytest.raises(ValueError, match="one variable"):
        linearisation.activation(sp.Lambda((a, b), a * b))
    with pytest.raises(ValueError, match="one variable"):  # a constant: no variable at all
        linearisation.activation(sp.Lambda((), sp.Integer(1)))
    with pytest.raises(TypeError, match="NumPy counterpart"):
        linearisation.activation(np.tanh)


def test_frozen_kernels_are_row_stochastic_and_diagonalisable():
    for name, T, P in [("causal", 5, None), ("block_causal", 6, 3), ("block_bidirectional", 4, 2)]:
        K = theory_kernels.frozen_kernel(name, T, P)
        assert all(sum(K.row(t)) == 1 for t in range(T))
        projs = theory_kernels.spectral_projectors(K)
        assert all(r.is_zero_matrix for r in theory_kernels.projector_residuals(K, projs).values())


def test_jordan_block_is_rejected():
    with pytest.raises(ValueError, match="not diagonalisable"):
        theory_kernels.spectral_projectors(sp.Matrix([[1, 1], [0, 1]]))


def test_exact_kernel_constants():
    assert theory_kernels.kernel_constant("block_bidirectional", 6, 3) == 1
    assert theory_kernels.kernel_constant("causal", 2) == sp.sqrt(2)
    assert theory_kernels.kernel_constant("block_causal", 6, 2) == sp.sqrt(2)


def test_condition_number_grows():
    c = [float(theory_kernels.causal_eigenvector_condition(T)) for T in (2, 4, 8)]
    assert 1 < c[0] < c[1] < c[2]


def test_a_wrong_factor_gives_its_non_zero_jacobian_residual(monkeypatch):
    """The identity checker reports a residual that does not cancel (what a wrong factor gives)
    as its simplified value, with no error: here the value factor ``M`` transposed, so the
    residual is ``K ⊗ (Mᵀ − M)`` exactly (entries ``±h(V1 − V2)``, of no known sign)."""
    right = linearisation.factor_matrices

    def transposed_value_factor(d, m=None, norm=True, sigma="tanh"):
        syms, N, M, Jn = right(d, m, norm, sigma)
        return syms, N, M.T, Jn

    monkeypatch.setattr(linearisation, "factor_matrices", transposed_value_factor)
    R = linearisation.homogeneous_jacobian_residual(2, 2, "causal", norm=False, sigma="identity")
    syms, _, M, _ = right(2, 2, norm=False, sigma="identity")
    K = sp.Matrix([[1, 0], [sp.Rational(1, 2), sp.Rational(1, 2)]])
    assert not R.is_zero_matrix
    assert (R - sp.kronecker_product(K, M.T - M)).applyfunc(sp.expand).is_zero_matrix
