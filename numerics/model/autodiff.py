"""Exact forward- and reverse-mode derivatives of the layer ``Φ`` and of the stack.

Hand-written analytic derivatives of the NumPy reference forward in :mod:`numerics.model.layer`
(no finite differences, no tracing)::

    Φ(X) = X + h·[ Attn(X) + MLP(X) + g·Slow(X) + γ(E − X) ]

* :func:`layer_jvp` — ``(Φ(X), dΦ)`` along a state tangent ``dX`` and/or a parameter tangent
  ``dθ`` (a :class:`~numerics.model.weights.LayerParams` holding a tangent for every weight and the gate);
* :func:`stack_jvp` — ``(X_L, dX_L)`` of the stack, one parameter tangent per layer slot;
* :func:`layer_vjp` — ``(∂⟨G, Φ(X)⟩/∂X, ∂⟨G, Φ(X)⟩/∂θ)``;
* :func:`stack_vjp` — ``(∂⟨G, X_L⟩/∂X_0, [∂⟨G, X_L⟩/∂θ_l for every layer slot l])``.

The pieces (row-wise, ``r = √(mean(x²) + ε_n)``, ``n = x/r``, ``A = softmax_mask(S)``):

* RMS norm: ``dn = (dx − n·mean(n·dx))/r``; its Jacobian is symmetric, so the VJP is the same map.
* Softmax: ``dA = A ⊙ (dS − rowsum(A ⊙ dS))``, VJP ``G_S = A ⊙ (G_A − rowsum(A ⊙ G_A))``.
  Masked entries have ``A = 0`` exactly, so they never contribute.
* Scores ``S = β (X_n Q)(X_n K)ᵀ``, the MLP ``σ(X_n W1) W2`` (``σ'`` the derivative ``df`` of the
  config's :class:`~numerics.model.activations.Activation`: ``1 − tanh²`` for tanh, the Heaviside
  step with ``σ'(0) = 0`` for relu, 1 for identity), and the
  slow path ``U_c · softmax(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs`` with ``Ŷ = n(B X)``; ``B`` and ``U_c`` are linear
  (``Bᵀ G = U G / P`` and ``U_cᵀ``) and are applied by reshaping.

Conventions and caveats:

* **The injection target ``E`` is a constant input.** Derivatives never move ``E``. In
  :func:`~numerics.model.layer.stack`, ``E`` defaults to ``X_0``; here too, but the derivative with
  respect to ``X_0`` is taken with ``E`` frozen at the value of ``X_0`` (so it is *not* the
  derivative of ``X0 ↦ stack(model, X0)`` when ``γ > 0``; pass ``E`` explicitly to the forward to
  compare with finite differences). Likewise :func:`layer_jvp`/:func:`layer_vjp` with ``E=None``
  freeze ``E`` at the value of ``X`` (the injection term is zero at the point, its derivative is
  ``−hγ·dX``), which is what a layer inside :func:`stack_jvp` sees with the default ``E``.
* **Tied models.** A :class:`~numerics.model.weights.Model` with tied weights shares one parameter object
  across the ``L`` slots. :func:`stack_jvp` takes one tangent per slot (pass the same tangent in
  every slot for a tied direction); :func:`stack_vjp` returns one gradient per slot, and the
  gradient with respect to the shared parameters is their **sum** over the slots.
* **The gate and the slow weights.** With ``config.slow = False`` the slow path is absent: the
  gate and the slow-weight tangents have no effect and their gradients are exactly zero. With
  ``slow = True`` the slow path's reverse sweep starts from ``g·h·G``; at ``g = 0`` every slow-weight
  gradient is exactly ``0.0`` (zeros propagate exactly through the linear reverse sweep, claim A3),
  and the gate gradient is computed as ``∂⟨G, Φ⟩/∂g = h·⟨G, Slow(X)⟩`` in exactly that arithmetic.
* **Non-smooth activations.** For relu (``config.activation.smooth`` False) the JVP and VJP are
  the derivative wherever no pre-activation ``n(X)W1`` is exactly 0, and a one-sided derivative
  (``σ'(0) = 0``) there; finite-difference comparisons must stay away from those kinks.
* Every public function validates its arguments (shapes, finiteness, types); tangents and
  cotangents must be finite. The underscored functions skip validation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model import tangents
from fastslow.numerics.model.layer import STATE_LIMIT, check_layer_params, check_model, check_state
from fastslow.numerics.model.weights import WEIGHT_NAMES, LayerParams, Model, ModelConfig

__all__ = ["layer_jvp", "stack_jvp", "layer_vjp", "stack_vjp"]


# --------------------------------------------------------------------------- primitives


# --------------------------------------------------------------------------- one layer, cached


# --------------------------------------------------------------------------- validation


def _check_config(config) -> ModelConfig:
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    return config


def _check_tangent_params(cfg: ModelConfig, dp, name: str) -> LayerParams | None:
    if dp is None:
        return None
    if not isinstance(dp, LayerParams):
        raise TypeError(
            f"{name} must be LayerParams (a parameter tangent) or None, got {type(dp).__name__}"
        )
    want = {"W1": (cfg.d, cfg.m), "W2": (cfg.m, cfg.d)}
    arrays = {
        n: validation.finite_array(f"{name}.{n}", getattr(dp, n), shape=want.get(n, (cfg.d, cfg.d)))
        for n in WEIGHT_NAMES
    }
    return LayerParams(**arrays, g=validation.real(f"{name}.g", dp.g))


def _check_point(cfg, params, X, E, xname: str):
    p = check_layer_params(cfg, params)
    X = check_state(cfg, X, xname)
    E = check_state(cfg, E, "E") if E is not None else (X.copy() if cfg.gamma else None)
    return p, X, E


def _check_finite_out(Y: np.ndarray, what: str) -> None:
    """Raise like :func:`numerics.model.layer.stack_trajectory` when values overflow (or are NaN)."""
    if not np.all(np.abs(Y) < STATE_LIMIT):  # also catches inf and NaN
        raise FloatingPointError(
            f"{what} produced non-finite or overflowing values "
            f"(|value| ≥ {STATE_LIMIT:.0e}); reduce the weight scale, the "
            "depth step h or the depth L"
        )


# --------------------------------------------------------------------------- public functions


def layer_jvp(config: ModelConfig, params: LayerParams, X, dX=None, dparams=None, E=None):
    """``(Φ(X), dΦ)``: the layer and its directional derivative.

    ``dΦ = ∂Φ/∂X·dX + ∂Φ/∂θ·dθ`` with ``dX`` a T×d state tangent and ``dparams`` a
    :class:`~numerics.model.weights.LayerParams` of tangents (every weight and the gate ``g``); ``None``
    means a zero tangent. ``E`` is a constant (``None``: frozen at the value of ``X``, so the
    injection term is zero at the point and contributes ``−hγ·dX``). ``Φ(X)`` is bit-identical to
    :func:`numerics.model.layer.layer` (with the same ``E``).
    """
    cfg = _check_config(config)
    p, X, E = _check_point(cfg, params, X, E, "X")
    dX = None if dX is None else check_state(cfg, dX, "dX")
    dp = _check_tangent_params(cfg, dparams, "dparams")
    with np.errstate(over="ignore", invalid="ignore"):
        c = tangents.layer_fwd(cfg, p, X, E)
        _check_finite_out(c["Y"], "the layer")
        dY = (
            np.zeros_like(X)
            if dX is None and dp is None
            else tangents.layer_jvp_cached(cfg, p, c, dX, dp)
        )
    _check_finite_out(dY, "the layer JVP")
    return c["Y"], dY


def layer_vjp(config: ModelConfig, params: LayerParams, X, G, E=None):
    """``(∂⟨G, Φ(X)⟩/∂X, ∂⟨G, Φ(X)⟩/∂θ)``: the gradient of ``⟨G, Φ(X)⟩`` (Frobenius pairing).

    The parameter gradient is a :class:`~numerics.model.weights.LayerParams` (every weight and ``g``).
    ``E`` is a constant, as in :func:`layer_jvp`. The gate entry is ``h·⟨G, Slow(X)⟩`` exactly
    (zero when ``config.slow`` is False, like every slow-weight entry).
    """
    cfg = _check_config(config)
    p, X, E = _check_point(cfg, params, X, E, "X")
    G = check_state(cfg, G, "G")
    with np.errstate(over="ignore", invalid="ignore"):
        c = tangents.layer_fwd(cfg, p, X, E)
        _check_finite_out(c["Y"], "the layer")
        GX, grad = tangents.layer_vjp_cached(cfg, p, c, G)
    _check_finite_out(GX, "the layer VJP")
    return GX, grad


def _check_stack_tangents(model: Model, dparams) -> list:
    if dparams is None:
        return [None] * model.L
    if isinstance(dparams, LayerParams) or not isinstance(dparams, Sequence):
        raise TypeError(
            f"dparams must be None or a sequence of {model.L} LayerParams tangents "
            f"(one per layer slot), got {type(dparams).__name__}"
        )
    if len(dparams) != model.L:
        raise ValueError(
            f"dparams must hold one tangent per layer slot: expected {model.L}, got {len(dparams)}"
        )
    return [
        _check_tangent_params(model.config, dp, f"dparams[{l}]") for l, dp in enumerate(dparams)
    ]


def _trajectory_caches(model: Model, X0: np.ndarray, E) -> list:
    caches, X = [], X0
    for l, p in enumerate(model.layers):
        c = tangents.layer_fwd(model.config, p, X, E)
        caches.append(c)
        X = c["Y"]
        _check_finite_out(X, f"layer {l}")
    return caches


def stack_jvp(model: Model, X0, dX0=None, dparams=None, E=None):
    """``(X_L, dX_L)``: the stack and its directional derivative (forward mode).

    ``dX_L = J_{L−1}(⋯(J_0 dX_0 + ∂_θΦ_0·dθ_0)⋯) + ∂_θΦ_{L−1}·dθ_{L−1}`` with ``J_l = ∂Φ_l/∂X`` at
    the trajectory. ``dparams`` is ``None`` or a sequence of ``L`` :class:`LayerParams` tangents,
    one per layer slot (entries may be ``None``); for a tied model pass the same tangent in every
    slot to move the shared weights. ``E`` defaults to ``X_0`` as in
    :func:`numerics.model.layer.stack` and is held constant: ``dX_0`` does not move it.
    ``X_L`` is bit-identical to :func:`numerics.model.layer.stack`.
    """
    model = check_model(model)
    cfg = model.config
    X0 = check_state(cfg, X0, "X0")
    E = check_state(cfg, E, "E") if E is not None else (X0.copy() if cfg.gamma else None)
    dX = None if dX0 is None else check_state(cfg, dX0, "dX0")
    dps = _check_stack_tangents(model, dparams)
    X = X0
    with np.errstate(over="ignore", invalid="ignore"):
        for l, (p, dp) in enumerate(zip(model.layers, dps)):
            c = tangents.layer_fwd(cfg, p, X, E)
            X = c["Y"]
            _check_finite_out(X, f"layer {l}")
            if dX is not None or dp is not None:
                dX = tangents.layer_jvp_cached(cfg, p, c, dX, dp)
                _check_finite_out(dX, f"the JVP of layer {l}")
    if dX is None:
        dX = np.zeros_like(X)
    _check_finite_out(dX, "the stack JVP")
    return X, dX


def stack_vjp(model: Model, X0, G, E=None):
    """``(∂⟨G, X_L⟩/∂X_0, [∂⟨G, X_L⟩/∂θ_l for l = 0 … L−1])`` (reverse mode).

    One :class:`LayerParams` gradient per layer slot. For a tied model the gradient with respect
    to the shared parameters is the **sum** of the ``L`` slot gradients. ``E`` defaults to ``X_0``
    and is held constant (the returned ``∂/∂X_0`` does not include the path through ``E``).
    """
    model = check_model(model)
    cfg = model.config
    X0 = check_state(cfg, X0, "X0")
    G = check_state(cfg, G, "G")
    E = check_state(cfg, E, "E") if E is not None else (X0.copy() if cfg.gamma else None)
    grads = [None] * model.L
    with np.errstate(over="ignore", invalid="ignore"):
        caches = _trajectory_caches(model, X0, E)
        for l in range(model.L - 1, -1, -1):
            G, grads[l] = tangents.layer_vjp_cached(cfg, model.layers[l], caches[l], G)
            _check_finite_out(G, f"the VJP of layer {l}")
    _check_finite_out(G, "the stack VJP")
    return G, grads
