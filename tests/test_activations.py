"""The MLP nonlinearities (numerics.model.activations) and their SymPy counterparts
(theory.linearisation): values, derivatives, the two sides against each other, user activations.

Oracles: closed forms written out with :mod:`math`; central differences (relu away from its kink);
SymPy's derivative of theory's expression, lambdified, on a grid; the analytic JVP against
differences of the forward and the VJP against the JVP (adjoint identity) for a user activation.
"""

import math

import numpy as np
import pytest
import sympy as sp

from fastslow.numerics.analysis import linearised
from fastslow.numerics.model.activations import GELU, NAMED, RELU, SIGMAS, TANH, Activation
from fastslow.numerics.model.autodiff import layer_jvp, layer_vjp
from fastslow.numerics.model.layer import attention, layer, rms_norm, slow_path
from fastslow.numerics.model.weights import ModelConfig, init_model
from fastslow.theory import linearisation

GRID = np.concatenate([np.linspace(-6.0, 6.0, 1201), [-1e-3, 1e-3, 0.5, 25.0, -25.0]])
"""Points for value and derivative comparisons; 0 itself is excluded below for relu."""

AWAY_FROM_KINK = np.abs(GRID) > 1e-6

SOFTSIGN = Activation("softsign", lambda z: z / (1 + np.abs(z)), lambda z: (1 + np.abs(z)) ** -2)
"""A user activation (NumPy pair); its SymPy counterpart is :data:`SOFTSIGN_SYMPY`."""

_u = sp.Symbol("u", real=True)
SOFTSIGN_SYMPY = sp.Lambda(_u, _u / (1 + sp.Abs(_u)))


def _math_value(name: str, z: float) -> float:
    """Each activation transcribed from its definition, one scalar at a time."""
    if name == "tanh":
        return math.tanh(z)
    if name == "relu":
        return max(z, 0.0)
    if name == "gelu":
        return 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))
    return z


def _central(f, z, step=1e-6):
    return (f(z + step) - f(z - step)) / (2 * step)


def test_the_named_activations_and_their_smoothness():
    assert SIGMAS == ("tanh", "relu", "gelu", "identity")
    assert {n: NAMED[n].smooth for n in SIGMAS} == {
        "tanh": True,
        "relu": False,
        "gelu": True,
        "identity": True,
    }
    for name in SIGMAS:
        cfg = ModelConfig(T=2, P=1, d=2, sigma=name)
        assert cfg.activation is NAMED[name] and cfg.sigma == name
    # a built-in Activation object is stored as its name (reports, theory see the name)
    assert ModelConfig(T=2, P=1, d=2, sigma=RELU).sigma == "relu"


@pytest.mark.parametrize("name", SIGMAS)
def test_values_match_the_definitions(name):
    ref = np.array([_math_value(name, float(z)) for z in GRID])
    assert np.abs(NAMED[name].f(GRID) - ref).max() <= 4e-16 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("name", SIGMAS)
def test_derivatives_match_central_differences(name):
    act = NAMED[name]
    z = GRID[AWAY_FROM_KINK] if name == "relu" else GRID
    assert np.abs(act.df(z) - _central(act.f, z)).max() < 1e-8
    assert RELU.df(np.array([0.0]))[0] == 0.0  # the convention at the kink


@pytest.mark.parametrize("name", SIGMAS)
def test_theory_expression_and_derivative_equal_numerics_on_a_grid(name):
    """SymPy's σ and σ' (exact √(2/π) and 0.044715 for gelu) against numerics' float64 ones."""
    lam, dlam = linearisation.activation(name), linearisation.activation_derivative(name)
    z = GRID[AWAY_FROM_KINK] if name == "relu" else GRID
    f = sp.lambdify(lam.variables, lam.expr, "numpy")
    df = sp.lambdify(dlam.variables, dlam.expr, "numpy")
    act = NAMED[name]
    assert np.abs(np.broadcast_to(f(z), z.shape) - act.f(z)).max() <= 1e-15 * np.abs(z).max()
    assert np.abs(np.broadcast_to(df(z), z.shape) - act.df(z)).max() <= 1e-14
    if name == "relu":  # SymPy's Heaviside(0) is 1/2, numerics' σ'(0) is 0: compare away from 0
        assert dlam(0) == sp.Rational(1, 2)


def _factor_instance(sigma, norm, seed=0):
    cfg = ModelConfig(T=1, P=1, d=3, m=4, slow=False, norm=norm, sigma=sigma, gamma=0.3, h=0.5)
    model = init_model(cfg, 1, seed)
    x = np.array([0.4, -0.9, 1.3])
    return cfg, model, x


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize(
    "np_sigma, sp_sigma",
    [(n, n) for n in SIGMAS] + [(SOFTSIGN, SOFTSIGN_SYMPY)],
    ids=list(SIGMAS) + ["user"],
)
def test_theory_factors_equal_numerics_factors(np_sigma, sp_sigma, norm):
    """The linearised layer's N, M: theory's lambdified SymPy derivation (with the SymPy σ)
    against numerics' closed form (with the NumPy σ, σ')."""
    cfg, model, x = _factor_instance(np_sigma, norm)
    p = model.layers[0]
    N, M = linearised.layer_factors(model, x[None])
    Nt, Mt = linearisation.factors_function(3, 4, norm, sp_sigma)(
        x, p.V, p.W1, p.W2, cfg.h, cfg.gamma, cfg.norm_eps
    )
    assert np.abs(N[0] - Nt).max() < 1e-13 and np.abs(M[0] - Mt).max() < 1e-13


def test_user_activation_on_the_numpy_path():
    """The layer, the JVP against central differences, the VJP against the JVP (adjoint)."""
    cfg = ModelConfig(T=6, P=3, d=3, m=4, sigma=SOFTSIGN, gamma=0.4)
    assert cfg.activation is SOFTSIGN and cfg.replace(h=0.5).activation is SOFTSIGN
    model = init_model(cfg, 2, 7, gate=0.5)
    rng = np.random.default_rng(8)
    X, E, dX, G = rng.standard_normal((4, 6, 3))
    p = model.layers[0]
    Z = rms_norm(X) @ p.W1
    ref = X + cfg.h * (attention(cfg, p, X) + SOFTSIGN.f(Z) @ p.W2 + 0.5 * slow_path(cfg, p, X))
    assert np.abs(layer(cfg, p, X, E) - ref - cfg.h * 0.4 * (E - X)).max() < 1e-14
    Y, dY = layer_jvp(cfg, p, X, dX, E=E)
    fd = _central(lambda t: layer(cfg, p, X + t * dX, E), 0.0)
    assert np.abs(dY - fd).max() < 1e-8 * np.abs(dY).max()
    GX, _ = layer_vjp(cfg, p, X, G, E=E)
    assert abs(np.vdot(G, dY) - np.vdot(GX, dX)) < 1e-12 * np.abs(G).sum() * np.abs(dY).max()


@pytest.mark.parametrize(
    "sigma, exc, match",
    [
        ("swish", ValueError, r"unknown sigma 'swish'; expected one of \['tanh', 'relu', 'gelu'"),
        (None, TypeError, r"sigma must be one of \['tanh', 'relu', 'gelu', 'identity'\]"),
        (np.tanh, TypeError, "or an Activation"),
    ],
)
def test_unknown_activations_are_bad_input_naming_the_choices(sigma, exc, match):
    with pytest.raises(exc, match=match):
        ModelConfig(T=2, P=1, d=2, sigma=sigma)


def test_user_activations_are_checked_when_built():
    with pytest.raises(ValueError, match="reserved for the built-in one"):
        ModelConfig(T=2, P=1, d=2, sigma=Activation("tanh", np.tanh, TANH.df))
    with pytest.raises(TypeError, match="df must be a NumPy function"):
        Activation("mine", np.tanh, "1 - tanh^2")
    with pytest.raises(ValueError, match="f must map a float64 array to finite values"):
        Activation("mine", lambda z: np.log(z), TANH.df)
    with pytest.raises(ValueError, match="of the same shape"):
        Activation("mine", lambda z: z.sum(), TANH.df)
    with pytest.raises(TypeError, match="smooth must be True or False"):
        Activation("mine", np.tanh, TANH.df, smooth="yes")
    assert repr(GELU) == "Activation('gelu', smooth=True)"
