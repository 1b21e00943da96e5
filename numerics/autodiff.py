"""Exact forward- and reverse-mode derivatives of the layer ``Φ`` and of the stack (SPEC §1).

Hand-written analytic derivatives of the NumPy reference forward in :mod:`numerics.layer`
(no finite differences, no tracing)::

    Φ(X) = X + h·[ Attn(X) + MLP(X) + g·Slow(X) + γ(E − X) ]

* :func:`layer_jvp` — ``(Φ(X), dΦ)`` along a state tangent ``dX`` and/or a parameter tangent
  ``dθ`` (a :class:`~numerics.model.LayerParams` holding a tangent for every weight and the gate);
* :func:`stack_jvp` — ``(X_L, dX_L)`` of the stack, one parameter tangent per layer slot;
* :func:`layer_vjp` — ``(∂⟨G, Φ(X)⟩/∂X, ∂⟨G, Φ(X)⟩/∂θ)``;
* :func:`stack_vjp` — ``(∂⟨G, X_L⟩/∂X_0, [∂⟨G, X_L⟩/∂θ_l for every layer slot l])``.

The pieces (row-wise, ``r = √(mean(x²) + ε_n)``, ``n = x/r``, ``A = softmax_mask(S)``):

* RMS norm: ``dn = (dx − n·mean(n·dx))/r``; its Jacobian is symmetric, so the VJP is the same map.
* Softmax: ``dA = A ⊙ (dS − rowsum(A ⊙ dS))``, VJP ``G_S = A ⊙ (G_A − rowsum(A ⊙ G_A))``.
  Masked entries have ``A = 0`` exactly, so they never contribute.
* Scores ``S = β (X_n Q)(X_n K)ᵀ``, the MLP ``σ(X_n W1) W2`` (``σ' = 1 − tanh²`` or 1), and the
  slow path ``U_c · softmax(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs`` with ``Ŷ = n(B X)``; ``B`` and ``U_c`` are linear
  (``Bᵀ G = U G / P`` and ``U_cᵀ``) and are applied by reshaping.

Conventions and caveats:

* **The injection target ``E`` is a constant input.** Derivatives never move ``E``. In
  :func:`~numerics.layer.stack`, ``E`` defaults to ``X_0``; here too, but the derivative with
  respect to ``X_0`` is taken with ``E`` frozen at the value of ``X_0`` (so it is *not* the
  derivative of ``X0 ↦ stack(model, X0)`` when ``γ > 0``; pass ``E`` explicitly to the forward to
  compare with finite differences). Likewise :func:`layer_jvp`/:func:`layer_vjp` with ``E=None``
  freeze ``E`` at the value of ``X`` (the injection term is zero at the point, its derivative is
  ``−hγ·dX``), which is what a layer inside :func:`stack_jvp` sees with the default ``E``.
* **Tied models.** A :class:`~numerics.model.Model` with tied weights shares one parameter object
  across the ``L`` slots. :func:`stack_jvp` takes one tangent per slot (pass the same tangent in
  every slot for a tied direction); :func:`stack_vjp` returns one gradient per slot, and the
  gradient with respect to the shared parameters is their **sum** over the slots.
* **The gate and the slow weights.** With ``config.slow = False`` the slow path is absent: the
  gate and the slow-weight tangents have no effect and their gradients are exactly zero. With
  ``slow = True`` the slow path's reverse sweep starts from ``g·h·G``; at ``g = 0`` every slow-weight
  gradient is exactly ``0.0`` (zeros propagate exactly through the linear reverse sweep, claim A3),
  and the gate gradient is computed as ``∂⟨G, Φ⟩/∂g = h·⟨G, Slow(X)⟩`` in exactly that arithmetic.
* Every public function validates its arguments (shapes, finiteness, types); tangents and
  cotangents must be finite. The underscored functions skip validation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import _validate as v
from .layer import STATE_LIMIT, _check_layer_params, _check_model, _check_state, _masked_softmax
from .masks import block_level_mask
from .model import WEIGHT_NAMES, LayerParams, Model, ModelConfig
from .pooling import _block_mean, _causal_upsample, _causal_upsample_adjoint, _upsample

__all__ = ["layer_jvp", "stack_jvp", "layer_vjp", "stack_vjp"]


# --------------------------------------------------------------------------- primitives

def _norm_fwd(cfg: ModelConfig, X: np.ndarray):
    """``(n(X), r)`` with ``r`` the row RMS (``None`` when the norm is switched off)."""
    if not cfg.norm:
        return X, None
    r = np.sqrt(np.mean(X * X, axis=-1, keepdims=True) + cfg.norm_eps)
    return X / r, r


def _norm_lin(Xn: np.ndarray, r, dX: np.ndarray) -> np.ndarray:
    """The (symmetric) Jacobian of the RMS norm applied to ``dX``; identity when ``r is None``."""
    if r is None:
        return dX
    return (dX - Xn * np.mean(Xn * dX, axis=-1, keepdims=True)) / r


def _softmax_lin(A: np.ndarray, dS: np.ndarray) -> np.ndarray:
    """The (self-adjoint, row-wise) softmax Jacobian ``dS ↦ A ⊙ (dS − rowsum(A ⊙ dS))``."""
    AdS = A * dS
    return AdS - A * AdS.sum(axis=-1, keepdims=True)


def _attn_fwd(beta: float, Xn, Q, K, V, mask):
    Qx, Kx, Vx = Xn @ Q, Xn @ K, Xn @ V
    A = _masked_softmax(beta * Qx @ Kx.T, mask)
    return {"Xn": Xn, "Qx": Qx, "Kx": Kx, "Vx": Vx, "A": A, "out": A @ Vx}


def _attn_jvp(beta, c, Q, K, V, dXn, dQ, dK, dV):
    """Tangent of ``A(X_n) X_n V`` along ``dXn`` (may be None) and weight tangents (may be None)."""
    Xn, Qx, Kx, Vx, A = c["Xn"], c["Qx"], c["Kx"], c["Vx"], c["A"]
    dQx = np.zeros_like(Qx)
    dKx = np.zeros_like(Kx)
    dVx = np.zeros_like(Vx)
    if dXn is not None:
        dQx += dXn @ Q
        dKx += dXn @ K
        dVx += dXn @ V
    if dQ is not None:
        dQx += Xn @ dQ
        dKx += Xn @ dK
        dVx += Xn @ dV
    dS = beta * (dQx @ Kx.T + Qx @ dKx.T)
    return _softmax_lin(A, dS) @ Vx + A @ dVx


def _attn_vjp(beta, c, Q, K, V, G):
    """``(G_Xn, dQ, dK, dV)`` for the cotangent ``G`` of ``A(X_n) X_n V``."""
    Xn, Qx, Kx, Vx, A = c["Xn"], c["Qx"], c["Kx"], c["Vx"], c["A"]
    GS = _softmax_lin(A, G @ Vx.T)
    GQx = beta * (GS @ Kx)
    GKx = beta * (GS.T @ Qx)
    GVx = A.T @ G
    GXn = GQx @ Q.T + GKx @ K.T + GVx @ V.T
    return GXn, Xn.T @ GQx, Xn.T @ GKx, Xn.T @ GVx


# --------------------------------------------------------------------------- one layer, cached

def _layer_fwd(cfg: ModelConfig, p: LayerParams, X: np.ndarray, E: np.ndarray | None) -> dict:
    """All intermediates of ``Φ(X)``; ``c["Y"]`` is bit-identical to :func:`numerics.layer._layer`."""
    beta = cfg.score_scale
    Xn, r = _norm_fwd(cfg, X)
    c = {"X": X, "r": r, "E": E}
    c["attn"] = att = _attn_fwd(beta, Xn, p.Q, p.K, p.V, cfg.mask_array)
    Z = Xn @ p.W1
    H = np.tanh(Z) if cfg.sigma == "tanh" else Z
    c["Z"], c["H"] = Z, H
    F = att["out"] + H @ p.W2
    if cfg.slow:
        Yb = _block_mean(X, cfg.P)
        Yh, rs = _norm_fwd(cfg, Yb)
        c["rs"] = rs
        c["slow_attn"] = satt = _attn_fwd(beta, Yh, p.Qs, p.Ks, p.Vs,
                                          block_level_mask(cfg.slow_mask, cfg.N))
        c["S"] = S = _causal_upsample(satt["out"], cfg.P)
        F = F + p.g * S
    if cfg.gamma:
        F = F + cfg.gamma * (E - X)
    c["Y"] = X + cfg.h * F
    return c


def _sigma_prime(cfg: ModelConfig, c: dict) -> np.ndarray | float:
    return 1.0 - c["H"] * c["H"] if cfg.sigma == "tanh" else 1.0


def _layer_jvp_cached(cfg: ModelConfig, p: LayerParams, c: dict, dX, dp) -> np.ndarray:
    """``dΦ`` at the cached point; ``dX`` and ``dp`` may each be None (zero)."""
    beta = cfg.score_scale
    att = c["attn"]
    Xn = att["Xn"]
    dXn = None if dX is None else _norm_lin(Xn, c["r"], dX)
    dF = _attn_jvp(beta, att, p.Q, p.K, p.V, dXn,
                   *((None,) * 3 if dp is None else (dp.Q, dp.K, dp.V)))
    dZ = np.zeros_like(c["Z"])
    if dXn is not None:
        dZ += dXn @ p.W1
    if dp is not None:
        dZ += Xn @ dp.W1
    dF = dF + (_sigma_prime(cfg, c) * dZ) @ p.W2
    if dp is not None:
        dF = dF + c["H"] @ dp.W2
    if cfg.slow:
        satt = c["slow_attn"]
        dYh = None
        if dX is not None:
            dYh = _norm_lin(satt["Xn"], c["rs"], _block_mean(dX, cfg.P))
        dO = _attn_jvp(beta, satt, p.Qs, p.Ks, p.Vs, dYh,
                       *((None,) * 3 if dp is None else (dp.Qs, dp.Ks, dp.Vs)))
        dF = dF + p.g * _causal_upsample(dO, cfg.P)
        if dp is not None:
            dF = dF + dp.g * c["S"]
    if cfg.gamma and dX is not None:
        dF = dF - cfg.gamma * dX
    dY = cfg.h * dF
    if dX is not None:
        dY = dX + dY
    return dY


def _layer_vjp_cached(cfg: ModelConfig, p: LayerParams, c: dict, G: np.ndarray):
    """``(G_X, gradient LayerParams)`` for the cotangent ``G`` of ``Φ`` at the cached point."""
    beta = cfg.score_scale
    att = c["attn"]
    Xn = att["Xn"]
    GF = cfg.h * G
    GXn, dQ, dK, dV = _attn_vjp(beta, att, p.Q, p.K, p.V, GF)
    dW2 = c["H"].T @ GF
    GZ = _sigma_prime(cfg, c) * (GF @ p.W2.T)
    dW1 = Xn.T @ GZ
    GXn = GXn + GZ @ p.W1.T
    GX = G + _norm_lin(Xn, c["r"], GXn)
    d = cfg.d
    if cfg.slow:
        satt = c["slow_attn"]
        GO = _causal_upsample_adjoint(p.g * GF, cfg.P)
        GYh, dQs, dKs, dVs = _attn_vjp(beta, satt, p.Qs, p.Ks, p.Vs, GO)
        GYb = _norm_lin(satt["Xn"], c["rs"], GYh)
        GX = GX + _upsample(GYb, cfg.P) / cfg.P
        dg = cfg.h * float(np.vdot(G, c["S"]))
    else:
        dQs = np.zeros((d, d))
        dKs = np.zeros((d, d))
        dVs = np.zeros((d, d))
        dg = 0.0
    if cfg.gamma:
        GX = GX - cfg.gamma * GF
    return GX, LayerParams(Q=dQ, K=dK, V=dV, W1=dW1, W2=dW2, Qs=dQs, Ks=dKs, Vs=dVs, g=dg)


# --------------------------------------------------------------------------- validation

def _check_config(config) -> ModelConfig:
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    return config


def _check_tangent_params(cfg: ModelConfig, dp, name: str) -> LayerParams | None:
    if dp is None:
        return None
    if not isinstance(dp, LayerParams):
        raise TypeError(f"{name} must be LayerParams (a parameter tangent) or None, "
                        f"got {type(dp).__name__}")
    want = {"W1": (cfg.d, cfg.m), "W2": (cfg.m, cfg.d)}
    arrays = {n: v.finite_array(f"{name}.{n}", getattr(dp, n), shape=want.get(n, (cfg.d, cfg.d)))
              for n in WEIGHT_NAMES}
    return LayerParams(**arrays, g=v.real(f"{name}.g", dp.g))


def _check_point(cfg, params, X, E, xname: str):
    p = _check_layer_params(cfg, params)
    X = _check_state(cfg, X, xname)
    E = _check_state(cfg, E, "E") if E is not None else (X.copy() if cfg.gamma else None)
    return p, X, E


def _check_finite_out(Y: np.ndarray, what: str) -> None:
    """Raise like :func:`numerics.layer.stack_trajectory` when values overflow (or are NaN)."""
    if not np.all(np.abs(Y) < STATE_LIMIT):  # also catches inf and NaN
        raise FloatingPointError(f"{what} produced non-finite or overflowing values "
                                 f"(|value| ≥ {STATE_LIMIT:.0e}); reduce the weight scale, the "
                                 "depth step h or the depth L")


# --------------------------------------------------------------------------- public functions

def layer_jvp(config: ModelConfig, params: LayerParams, X, dX=None, dparams=None, E=None):
    """``(Φ(X), dΦ)``: the layer and its directional derivative.

    ``dΦ = ∂Φ/∂X·dX + ∂Φ/∂θ·dθ`` with ``dX`` a T×d state tangent and ``dparams`` a
    :class:`~numerics.model.LayerParams` of tangents (every weight and the gate ``g``); ``None``
    means a zero tangent. ``E`` is a constant (``None``: frozen at the value of ``X``, so the
    injection term is zero at the point and contributes ``−hγ·dX``). ``Φ(X)`` is bit-identical to
    :func:`numerics.layer.layer` (with the same ``E``).
    """
    cfg = _check_config(config)
    p, X, E = _check_point(cfg, params, X, E, "X")
    dX = None if dX is None else _check_state(cfg, dX, "dX")
    dp = _check_tangent_params(cfg, dparams, "dparams")
    with np.errstate(over="ignore", invalid="ignore"):
        c = _layer_fwd(cfg, p, X, E)
        _check_finite_out(c["Y"], "the layer")
        dY = np.zeros_like(X) if dX is None and dp is None else _layer_jvp_cached(cfg, p, c, dX, dp)
    _check_finite_out(dY, "the layer JVP")
    return c["Y"], dY


def layer_vjp(config: ModelConfig, params: LayerParams, X, G, E=None):
    """``(∂⟨G, Φ(X)⟩/∂X, ∂⟨G, Φ(X)⟩/∂θ)``: the gradient of ``⟨G, Φ(X)⟩`` (Frobenius pairing).

    The parameter gradient is a :class:`~numerics.model.LayerParams` (every weight and ``g``).
    ``E`` is a constant, as in :func:`layer_jvp`. The gate entry is ``h·⟨G, Slow(X)⟩`` exactly
    (zero when ``config.slow`` is False, like every slow-weight entry).
    """
    cfg = _check_config(config)
    p, X, E = _check_point(cfg, params, X, E, "X")
    G = _check_state(cfg, G, "G")
    with np.errstate(over="ignore", invalid="ignore"):
        c = _layer_fwd(cfg, p, X, E)
        _check_finite_out(c["Y"], "the layer")
        GX, grad = _layer_vjp_cached(cfg, p, c, G)
    _check_finite_out(GX, "the layer VJP")
    return GX, grad


def _check_stack_tangents(model: Model, dparams) -> list:
    if dparams is None:
        return [None] * model.L
    if isinstance(dparams, LayerParams) or not isinstance(dparams, Sequence):
        raise TypeError(f"dparams must be None or a sequence of {model.L} LayerParams tangents "
                        f"(one per layer slot), got {type(dparams).__name__}")
    if len(dparams) != model.L:
        raise ValueError(f"dparams must hold one tangent per layer slot: expected {model.L}, "
                         f"got {len(dparams)}")
    return [_check_tangent_params(model.config, dp, f"dparams[{l}]")
            for l, dp in enumerate(dparams)]


def _trajectory_caches(model: Model, X0: np.ndarray, E) -> list:
    caches, X = [], X0
    for l, p in enumerate(model.layers):
        c = _layer_fwd(model.config, p, X, E)
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
    :func:`numerics.layer.stack` and is held constant: ``dX_0`` does not move it.
    ``X_L`` is bit-identical to :func:`numerics.layer.stack`.
    """
    model = _check_model(model)
    cfg = model.config
    X0 = _check_state(cfg, X0, "X0")
    E = _check_state(cfg, E, "E") if E is not None else (X0.copy() if cfg.gamma else None)
    dX = None if dX0 is None else _check_state(cfg, dX0, "dX0")
    dps = _check_stack_tangents(model, dparams)
    X = X0
    with np.errstate(over="ignore", invalid="ignore"):
        for l, (p, dp) in enumerate(zip(model.layers, dps)):
            c = _layer_fwd(cfg, p, X, E)
            X = c["Y"]
            _check_finite_out(X, f"layer {l}")
            if dX is not None or dp is not None:
                dX = _layer_jvp_cached(cfg, p, c, dX, dp)
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
    model = _check_model(model)
    cfg = model.config
    X0 = _check_state(cfg, X0, "X0")
    G = _check_state(cfg, G, "G")
    E = _check_state(cfg, E, "E") if E is not None else (X0.copy() if cfg.gamma else None)
    grads = [None] * model.L
    with np.errstate(over="ignore", invalid="ignore"):
        caches = _trajectory_caches(model, X0, E)
        for l in range(model.L - 1, -1, -1):
            G, grads[l] = _layer_vjp_cached(cfg, model.layers[l], caches[l], G)
            _check_finite_out(G, f"the VJP of layer {l}")
    _check_finite_out(G, "the stack VJP")
    return G, grads
