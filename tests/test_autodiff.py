"""Analytic JVPs and VJPs of the layer and the stack (numerics.model.autodiff).

Oracles:

* Richardson-extrapolated central finite differences ``(4·D(δ/2) − D(δ))/3`` of the plain forward
  (:func:`numerics.model.layer._layer`, :func:`numerics.model.layer.stack`) along a random direction, ``δ = 1e-6`` on
  O(1) inputs. The error is ``O(δ⁴·|f⁽⁵⁾|) + O(u·|f|/δ)`` with ``u = 2.2e-16``: about 1e-10 from
  rounding, so a relative tolerance of 1e-6 (max norm, relative to the largest entry of the
  derivative) leaves orders of margin. Without the extrapolation a token row of small RMS ``r``
  (the norm's curvature grows like ``1/r²``) costs about ``(δ/r)²``: measured 3e-7 at
  ``r = 1e-3``, d = 1, too close to the tolerance;
* the adjoint identity ``⟨G, J v⟩ = ⟨Jᵀ G, v⟩`` between the independent forward and reverse sweeps,
  which holds up to rounding: relative tolerance 1e-12.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model import kernels
from fastslow.numerics.model.autodiff import layer_jvp, layer_vjp, stack_jvp, stack_vjp
from fastslow.numerics.model.layer import layer, stack, stack_trajectory
from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import (
    FAST_WEIGHTS,
    SLOW_WEIGHTS,
    LayerParams,
    Model,
    ModelConfig,
    init_layer,
    init_model,
)

FD_STEP = 1e-6
FD_RTOL = 1e-6
ADJ_RTOL = 1e-12

SWITCHES = [
    {},
    {"norm": False},
    {"sigma": "identity"},
    {"slow": False},
    {"slow_mask": "full"},
    {"gamma": 0.7},
    {"beta": 0.4, "h": 0.25},
    {"mask": "block_causal", "norm": False, "sigma": "identity"},
    {"mask": "block_bidirectional", "gamma": 1.3, "slow_mask": "full"},
    {"sigma": "gelu"},
    {"sigma": "gelu", "norm": False, "gamma": 0.7},
    {"sigma": "relu"},
    {"sigma": "relu", "norm": False, "mask": "block_causal"},
]
"""Every switch; relu (not differentiable at 0) only on instances whose pre-activations stay away
from 0 by far more than the finite-difference step (:func:`_assert_away_from_kinks`)."""


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence(list(key)))


def _random_tangent(cfg, rng):
    n = init_layer(cfg, rng).to_vector().size
    return LayerParams.from_vector(rng.standard_normal(n), cfg.d, cfg.m)


def _setup(cfg, L=3, seed=0, gate=0.6, tied=False):
    rng = _rng(seed, 1)
    model = init_model(cfg, L, _rng(seed, 2).integers(2**32), gate=gate, tied=tied)
    X = rng.standard_normal((cfg.T, cfg.d))
    E = rng.standard_normal((cfg.T, cfg.d))
    return model, X, E, rng


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _pair(p_grads, dps):
    return sum(float(np.vdot(a.to_vector(), b.to_vector())) for a, b in zip(p_grads, dps))


def _richardson(f, step=FD_STEP):
    """``(4·D(δ/2) − D(δ))/3`` with ``D(δ) = (f(δ) − f(−δ))/(2δ)``: truncation error ``O(δ⁴)``."""
    D = lambda s: (f(s) - f(-s)) / (2 * s)
    return (4 * D(step / 2) - D(step)) / 3


def _assert_away_from_kinks(cfg, p, X):
    """For relu: no pre-activation ``n(X)W1`` within ``1e-3`` of the kink at 0, so a central
    difference of step ``FD_STEP`` along an O(1) direction never crosses it."""
    if cfg.sigma == "relu":
        Z = kernels.normed(cfg, X) @ p.W1
        assert np.abs(Z).min() > 1e-3, "the instance has a pre-activation at the relu kink"


def _layer_fd(cfg, p, X, E, dX, dp):
    return _richardson(lambda t: kernels.layer(cfg, p.axpy(t, dp), X + t * dX, E))


def _stack_fd(model, X, E, dX, dps):
    def f(t):
        layers = [q.axpy(t, dq) for q, dq in zip(model.layers, dps)]
        return stack(Model(model.config, layers), X + t * dX, E)

    return _richardson(f)


# --------------------------------------------------------------------------- fixed instances


@pytest.mark.parametrize(
    "switches", SWITCHES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default"
)
def test_layer_jvp_matches_central_differences_and_forward(switches):
    cfg = ModelConfig(T=8, P=2, d=3, m=5, **switches)
    model, X, E, rng = _setup(cfg)
    p = model.layers[1]
    dX, dp = rng.standard_normal(X.shape), _random_tangent(cfg, rng)
    _assert_away_from_kinks(cfg, p, X)
    Y, dY = layer_jvp(cfg, p, X, dX, dp, E=E)
    assert np.array_equal(Y, layer(cfg, p, X, E))  # same arithmetic as the forward
    assert _rel(dY, _layer_fd(cfg, p, X, E, dX, dp)) < FD_RTOL
    # the state and parameter parts add up
    _, dYx = layer_jvp(cfg, p, X, dX=dX, E=E)
    _, dYp = layer_jvp(cfg, p, X, dparams=dp, E=E)
    assert _rel(dYx + dYp, dY) < 1e-13


@pytest.mark.parametrize(
    "switches", SWITCHES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default"
)
def test_vjp_is_the_adjoint_of_the_jvp(switches):
    cfg = ModelConfig(T=8, P=2, d=3, m=5, **switches)
    model, X, E, rng = _setup(cfg, seed=3)
    p = model.layers[0]
    dX, dp, G = (
        rng.standard_normal(X.shape),
        _random_tangent(cfg, rng),
        rng.standard_normal(X.shape),
    )
    _, dY = layer_jvp(cfg, p, X, dX, dp, E=E)
    GX, gp = layer_vjp(cfg, p, X, G, E=E)
    lhs, rhs = float(np.vdot(G, dY)), float(np.vdot(GX, dX)) + _pair([gp], [dp])
    assert abs(lhs - rhs) <= ADJ_RTOL * (abs(lhs) + np.abs(G).sum() * np.abs(dY).max())

    dps = [_random_tangent(cfg, rng) for _ in range(model.L)]
    XL, dXL = stack_jvp(model, X, dX, dps, E=E)
    G0, grads = stack_vjp(model, X, G, E=E)
    assert np.array_equal(XL, stack(model, X, E))
    lhs, rhs = float(np.vdot(G, dXL)), float(np.vdot(G0, dX)) + _pair(grads, dps)
    assert abs(lhs - rhs) <= ADJ_RTOL * (abs(lhs) + np.abs(G).sum() * np.abs(dXL).max())


@pytest.mark.parametrize(
    "switches",
    SWITCHES[:6] + SWITCHES[-4:],
    ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default",
)
def test_stack_jvp_matches_central_differences(switches):
    cfg = ModelConfig(T=8, P=4, d=2, **switches)
    model, X, E, rng = _setup(cfg, L=4, seed=5)
    for p, Xl in zip(model.layers, stack_trajectory(model, X, E)):
        _assert_away_from_kinks(cfg, p, Xl)
    dX = rng.standard_normal(X.shape)
    dps = [_random_tangent(cfg, rng) for _ in range(model.L)]
    _, dXL = stack_jvp(model, X, dX, dps, E=E)
    assert _rel(dXL, _stack_fd(model, X, E, dX, dps)) < FD_RTOL


def test_vjp_entries_match_central_differences_of_the_pairing():
    """Each gradient entry (one weight entry, the gate, one state entry) against its own FD."""
    cfg = ModelConfig(T=8, P=2, d=3, gamma=0.5)
    model, X, E, rng = _setup(cfg, seed=11)
    G = rng.standard_normal(X.shape)
    G0, grads = stack_vjp(model, X, G, E=E)
    loss = lambda mdl, X0: float(np.vdot(G, stack(mdl, X0, E)))
    for l in range(model.L):
        vec = model.layers[l].to_vector()
        for k in list(rng.choice(vec.size - 1, 4, replace=False)) + [vec.size - 1]:  # + the gate
            e = np.zeros_like(vec)
            e[k] = FD_STEP

            def at(s):
                layers = list(model.layers)
                layers[l] = LayerParams.from_vector(vec + s * e, cfg.d, cfg.m)
                return loss(Model(cfg, layers), X)

            fd = (at(1) - at(-1)) / (2 * FD_STEP)
            an = grads[l].to_vector()[k]
            assert abs(fd - an) <= FD_RTOL * max(abs(an), 1.0)
    for idx in [(0, 0), (5, 2), (7, 1)]:
        e = np.zeros_like(X)
        e[idx] = FD_STEP
        fd = (loss(model, X + e) - loss(model, X - e)) / (2 * FD_STEP)
        assert abs(fd - G0[idx]) <= FD_RTOL * max(abs(G0[idx]), 1.0)


def test_injection_target_is_held_constant():
    cfg = ModelConfig(T=8, P=2, d=2, gamma=0.8)
    model, X, _, rng = _setup(cfg, seed=13)
    dX = rng.standard_normal(X.shape)
    # E=None means E frozen at X0: identical to passing E = X0 explicitly
    XL, dXL = stack_jvp(model, X, dX)
    XL2, dXL2 = stack_jvp(model, X, dX, E=X.copy())
    assert np.array_equal(XL, XL2) and np.array_equal(dXL, dXL2)
    assert np.array_equal(XL, stack(model, X))
    zero = [model.layers[0].zeros_like()] * model.L
    assert _rel(dXL, _stack_fd(model, X, X.copy(), dX, zero)) < FD_RTOL
    # ... which is not the derivative of X0 ↦ stack(model, X0) with E following X0 (γ > 0)
    moving = _richardson(lambda t: stack(model, X + t * dX))
    assert _rel(dXL, moving) > 1e-3
    # one layer with E=None: the injection is zero at the point and contributes −hγ dX
    p = model.layers[0]
    Y, dY = layer_jvp(cfg, p, X, dX)
    _, dY0 = layer_jvp(cfg.replace(gamma=0.0), p, X, dX)
    assert np.array_equal(Y, layer(cfg, p, X))
    assert _rel(dY, dY0 - cfg.h * cfg.gamma * dX) < 1e-13


def test_tied_model_gradient_is_the_sum_over_slots():
    cfg = ModelConfig(T=8, P=2, d=2)
    model, X, E, rng = _setup(cfg, L=3, seed=17, tied=True)
    assert model.tied
    G, dp = rng.standard_normal(X.shape), _random_tangent(cfg, rng)
    _, grads = stack_vjp(model, X, G, E=E)
    total = sum(gr.to_vector() for gr in grads)
    _, dXL = stack_jvp(model, X, dparams=[dp] * model.L, E=E)
    fd = _richardson(lambda t: stack(Model(cfg, (model.layers[0].axpy(t, dp),) * 3), X, E))
    assert _rel(dXL, fd) < FD_RTOL
    assert abs(np.vdot(G, dXL) - total @ dp.to_vector()) <= ADJ_RTOL * abs(np.vdot(G, dXL)) * 10


def test_slow_gradients_vanish_exactly_without_slow_path_or_with_zero_gate():
    for cfg, gate in [
        (ModelConfig(T=8, P=2, d=3, slow=False), 0.9),
        (ModelConfig(T=8, P=2, d=3), 0.0),
    ]:
        model, X, E, rng = _setup(cfg, seed=19, gate=gate)
        _, grads = stack_vjp(model, X, rng.standard_normal(X.shape))
        for gr in grads:
            for name in SLOW_WEIGHTS:
                assert np.all(getattr(gr, name) == 0.0)
            assert (gr.g == 0.0) == (not cfg.slow)
        dp = _random_tangent(cfg, rng)
        for name in FAST_WEIGHTS:
            setattr(dp, name, np.zeros_like(getattr(dp, name)))
        dp.g = 0.0
        _, dXL = stack_jvp(model, X, dparams=[dp] * model.L)
        assert np.all(dXL == 0.0)


def test_zero_tangents_give_zero():
    cfg = ModelConfig(T=4, P=2, d=2)
    model, X, _, _ = _setup(cfg, seed=23)
    Y, dY = layer_jvp(cfg, model.layers[0], X)
    assert np.all(dY == 0.0) and np.array_equal(Y, layer(cfg, model.layers[0], X))
    XL, dXL = stack_jvp(model, X, dparams=[None, None, None])
    assert np.all(dXL == 0.0) and np.array_equal(XL, stack(model, X))


# --------------------------------------------------------------------------- properties


@st.composite
def instances(draw):
    P = draw(st.integers(1, 4))
    N = draw(st.integers(1, max(1, 12 // P)))
    T, d = N * P, draw(st.integers(1, 4))
    custom = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    rng = _rng(seed, 99)
    if custom:
        mask = rng.random((T, T)) < 0.5
        mask[np.arange(T), np.arange(T)] = True
    else:
        mask = draw(st.sampled_from(NAMED_MASKS))
    cfg = ModelConfig(
        T=T,
        P=P,
        d=d,
        m=draw(st.integers(1, 4)),
        mask=mask,
        slow_mask=draw(st.sampled_from(["blockcausal", "full"])),
        norm=draw(st.booleans()),
        # the smooth activations: random instances may put a relu kink inside a difference step
        sigma=draw(st.sampled_from(["tanh", "gelu", "identity"])),
        slow=draw(st.booleans()),
        h=draw(st.sampled_from([1.0, 0.5, 0.125])),
        gamma=draw(st.sampled_from([0.0, 0.3, 1.0])),
        beta=draw(st.sampled_from([None, 0.5, 2.0])),
    )
    L = draw(st.integers(1, 3))
    gate = draw(st.floats(-1.5, 1.5, allow_nan=False, allow_subnormal=False))
    return cfg, L, gate, draw(st.booleans()), seed


@given(instances())
def test_property_jvp_vjp_against_differences_and_each_other(inst):
    cfg, L, gate, tied, seed = inst
    model, X, E, rng = _setup(cfg, L=L, seed=seed, gate=gate, tied=tied)
    dX, G = rng.standard_normal(X.shape), rng.standard_normal(X.shape)
    dps = [_random_tangent(cfg, rng) for _ in range(L)]
    if tied:
        dps = [dps[0]] * L
    XL, dXL = stack_jvp(model, X, dX, dps, E=E)
    assert np.array_equal(XL, stack(model, X, E))
    assert _rel(dXL, _stack_fd(model, X, E, dX, dps)) < FD_RTOL
    G0, grads = stack_vjp(model, X, G, E=E)
    lhs, rhs = float(np.vdot(G, dXL)), float(np.vdot(G0, dX)) + _pair(grads, dps)
    assert abs(lhs - rhs) <= ADJ_RTOL * (abs(lhs) + np.abs(G).sum() * np.abs(dXL).max())
    # one layer: the JVP against differences, the VJP against the JVP
    p = model.layers[0]
    _, dY = layer_jvp(cfg, p, X, dX, dps[0], E=E)
    assert _rel(dY, _layer_fd(cfg, p, X, E, dX, dps[0])) < FD_RTOL
    GX, gp = layer_vjp(cfg, p, X, G, E=E)
    lhs, rhs = float(np.vdot(G, dY)), float(np.vdot(GX, dX)) + _pair([gp], dps[:1])
    assert abs(lhs - rhs) <= ADJ_RTOL * (abs(lhs) + np.abs(G).sum() * np.abs(dY).max())


# --------------------------------------------------------------------------- bad inputs


@pytest.fixture
def small():
    cfg = ModelConfig(T=4, P=2, d=2)
    model, X, E, rng = _setup(cfg, L=2, seed=29)
    return cfg, model, X, rng


def test_wrong_shapes_are_rejected(small):
    cfg, model, X, rng = small
    p = model.layers[0]
    with pytest.raises(ValueError, match="dX must have shape 4×2"):
        layer_jvp(cfg, p, X, dX=np.zeros((4, 3)))
    with pytest.raises(ValueError, match="X must have shape"):
        layer_jvp(cfg, p, X[:3])
    with pytest.raises(ValueError, match="G must have shape"):
        layer_vjp(cfg, p, X, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="E must have shape"):
        layer_vjp(cfg, p, X, X, E=np.zeros(4))
    with pytest.raises(ValueError, match="dX0 must have shape"):
        stack_jvp(model, X, dX0=np.zeros(8))
    bad = p.zeros_like()
    bad.W1 = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"dparams\.W1 must have shape 2×2"):
        layer_jvp(cfg, p, X, dparams=bad)
    with pytest.raises(ValueError, match="one tangent per layer slot: expected 2, got 3"):
        stack_jvp(model, X, dparams=[None] * 3)


def test_non_finite_tangents_are_rejected(small):
    cfg, model, X, rng = small
    p = model.layers[0]
    with pytest.raises(ValueError, match="dX must be finite"):
        layer_jvp(cfg, p, X, dX=np.full(X.shape, np.nan))
    bad = p.zeros_like()
    bad.Qs = np.full((2, 2), np.inf)
    with pytest.raises(ValueError, match=r"dparams\[1\]\.Qs must be finite"):
        stack_jvp(model, X, dparams=[None, bad])
    bad = p.zeros_like()
    bad.g = float("nan")
    with pytest.raises(ValueError, match=r"dparams\.g must be finite"):
        layer_jvp(cfg, p, X, dparams=bad)
    with pytest.raises(ValueError, match="G must be finite"):
        stack_vjp(model, X, np.full(X.shape, -np.inf))


def test_wrong_types_are_rejected(small):
    cfg, model, X, rng = small
    p = model.layers[0]
    with pytest.raises(TypeError, match="config must be a ModelConfig"):
        layer_jvp({"T": 4}, p, X)
    with pytest.raises(TypeError, match="params must be LayerParams"):
        layer_vjp(cfg, p.to_vector(), X, X)
    with pytest.raises(TypeError, match="dparams must be LayerParams"):
        layer_jvp(cfg, p, X, dparams=p.to_vector())
    with pytest.raises(TypeError, match="dparams must be None or a sequence"):
        stack_jvp(model, X, dparams=p)
    with pytest.raises(TypeError, match=r"dparams\[0\] must be LayerParams"):
        stack_jvp(model, X, dparams=["a", None])
    with pytest.raises(TypeError, match="model must be a numerics.model.weights.Model"):
        stack_vjp(cfg, X, X)
    with pytest.raises(TypeError, match="dX must be an array"):
        layer_jvp(cfg, p, X, dX="zeros")
    bad = p.zeros_like()
    bad.g = "0"
    with pytest.raises(TypeError, match=r"dparams\.g must be a real number"):
        layer_jvp(cfg, p, X, dparams=bad)


def test_overflow_is_reported_not_returned():
    cfg = ModelConfig(T=4, P=2, d=2, norm=False, sigma="identity")
    model = init_model(cfg, 3, 0, scale=1e100)
    X = np.full((4, 2), 1e40)
    for call in (
        lambda: stack_vjp(model, X, X),
        lambda: stack_jvp(model, X, X),
        lambda: layer_jvp(cfg, model.layers[0], X, X),
        lambda: layer_vjp(cfg, model.layers[0], X, X),
    ):
        with pytest.raises(FloatingPointError, match="overflowing"):
            call()
    with pytest.raises(ValueError, match="magnitude"):
        stack_jvp(model, X, np.full((4, 2), 1e200))


@pytest.mark.parametrize("mask", ["causal", "block_bidirectional"])
def test_the_softmax_derivative_terms_score_change_is_the_derivative_of_the_scores(mask):
    """``softmax_derivative_term``'s ``‖δS‖`` (on the mask) is the derivative along ``dX`` of the
    scores ``β n(X)Q (n(X)K)ᵀ``, the RMS norm included (central difference at 1e-5, agreement to
    1e-7 relative); a state far from unit RMS so that the norm's ``1/r³`` term matters; and
    ``‖n(X)V‖`` is the model's."""
    from fastslow.numerics.model import tangents  # the figures' helper only this test reads

    cfg = ModelConfig(T=4, P=2, d=3, mask=mask)
    lp = init_layer(cfg, np.random.default_rng(2))
    rng = np.random.default_rng(3)
    X, dX = 3.0 * rng.standard_normal((4, 3)), rng.standard_normal((4, 3))

    def scores(Y):
        Yn = kernels.normed(cfg, Y)
        return cfg.score_scale * (Yn @ lp.Q) @ (Yn @ lp.K).T

    h = 1e-5
    dS = (scores(X + h * dX) - scores(X - h * dX)) / (2 * h)
    want = float(np.linalg.norm(np.where(cfg.mask_array, dS, 0.0)))
    _, _, nv, ds = tangents.softmax_derivative_term(cfg, lp, X, dX)
    assert ds == pytest.approx(want, rel=1e-7)
    assert nv == pytest.approx(float(np.linalg.norm(kernels.normed(cfg, X) @ lp.V)), rel=1e-14)
