"""Derivatives of the layer's pieces without argument checks, for inner loops.

The forward pass of the layer with every intermediate kept (:func:`layer_fwd`: the same
operations as :func:`numerics.model.kernels.layer`, bit for bit), and its exact tangent
(:func:`layer_jvp_cached`) and cotangent (:func:`layer_vjp_cached`) at that point, built from
the RMS norm's (:func:`norm_fwd`, :func:`norm_lin`), the softmax's (:func:`softmax_lin`) and the
attention's (:func:`attn_fwd`, :func:`attn_jvp`, :func:`attn_vjp`) derivatives;
:func:`softmax_derivative_term` measures the softmax-derivative term of the attention's tangent
alone (claim D4).

Hypotheses: arguments already checked (:mod:`numerics.model.autodiff` is the validated door);
a smooth activation where a derivative is taken (relu's ``σ'(0) = 0`` is a convention).

Oracle: finite differences and the adjoint identity ``⟨G, JVP⟩ = ⟨VJP, δ⟩`` (tests).
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model import kernels
from fastslow.numerics.model.masks import block_level_mask
from fastslow.numerics.model.weights import LayerParams, ModelConfig


def norm_fwd(cfg: ModelConfig, X: np.ndarray):
    """``(n(X), r)`` with ``r`` the row RMS (``None`` when the norm is switched off)."""
    if not cfg.norm:
        return X, None
    r = np.sqrt(np.mean(X * X, axis=-1, keepdims=True) + cfg.norm_eps)
    return X / r, r


def norm_lin(Xn: np.ndarray, r, dX: np.ndarray) -> np.ndarray:
    """The (symmetric) Jacobian of the RMS norm applied to ``dX``; identity when ``r is None``."""
    if r is None:
        return dX
    return (dX - Xn * np.mean(Xn * dX, axis=-1, keepdims=True)) / r


def softmax_lin(A: np.ndarray, dS: np.ndarray) -> np.ndarray:
    """The (self-adjoint, row-wise) softmax Jacobian ``dS ↦ A ⊙ (dS − rowsum(A ⊙ dS))``."""
    AdS = A * dS
    return AdS - A * AdS.sum(axis=-1, keepdims=True)


def attn_fwd(beta: float, Xn, Q, K, V, mask):
    Qx, Kx, Vx = Xn @ Q, Xn @ K, Xn @ V
    A = kernels.masked_softmax(beta * Qx @ Kx.T, mask)
    return {"Xn": Xn, "Qx": Qx, "Kx": Kx, "Vx": Vx, "A": A, "out": A @ Vx}


def attn_jvp(beta, c, Q, K, V, dXn, dQ, dK, dV):
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
    return softmax_lin(A, dS) @ Vx + A @ dVx


def attn_vjp(beta, c, Q, K, V, G):
    """``(G_Xn, dQ, dK, dV)`` for the cotangent ``G`` of ``A(X_n) X_n V``."""
    Xn, Qx, Kx, Vx, A = c["Xn"], c["Qx"], c["Kx"], c["Vx"], c["A"]
    GS = softmax_lin(A, G @ Vx.T)
    GQx = beta * (GS @ Kx)
    GKx = beta * (GS.T @ Qx)
    GVx = A.T @ G
    GXn = GQx @ Q.T + GKx @ K.T + GVx @ V.T
    return GXn, Xn.T @ GQx, Xn.T @ GKx, Xn.T @ GVx


def softmax_derivative_term(
    cfg: ModelConfig, p: LayerParams, X: np.ndarray, dX: np.ndarray
) -> tuple[float, float, float, float]:
    """``(‖δA · n(X)V‖_F, ‖δA‖_F, ‖n(X)V‖_F, ‖δS‖_F on the mask)`` for the first-order change
    ``δA = A ⊙ (δS − rowsum(A ⊙ δS))`` (:func:`softmax_lin`) of the attention matrix of layer
    ``p`` at ``X`` along ``dX`` (the forward pass by :func:`norm_fwd` and :func:`attn_fwd`).

    At a homogeneous ``X`` the first number vanishes in exact arithmetic (every row of ``δA`` sums
    to zero and every row of ``n(X)V`` is the same) although ``δA`` itself does not.

    Caveat: the first number is then rounding, and its value depends on the form of each
    operation. The norm's tangent is written here as ``dX/r − X·(X·dX)/(d·r³)``, equal to
    :func:`norm_lin` to rounding (not bit for bit); this is the form claim D4's recorded figures
    come from."""
    Xn, r = norm_fwd(cfg, X)
    if r is None:
        dXn = dX
    else:
        dXn = dX / r - X * (np.sum(X * dX, axis=1, keepdims=True) / (cfg.d * r**3))
    beta = cfg.score_scale
    att = attn_fwd(beta, Xn, p.Q, p.K, p.V, cfg.mask_array)
    dS = beta * ((dXn @ p.Q) @ att["Kx"].T + att["Qx"] @ (dXn @ p.K).T)
    dA = softmax_lin(att["A"], dS)
    values = att["Vx"]
    return (
        float(np.linalg.norm(dA @ values)),
        float(np.linalg.norm(dA)),
        float(np.linalg.norm(values)),
        float(np.linalg.norm(np.where(cfg.mask_array, dS, 0.0))),
    )


def layer_fwd(cfg: ModelConfig, p: LayerParams, X: np.ndarray, E: np.ndarray | None) -> dict:
    """All intermediates of ``Φ(X)``; ``c["Y"]`` is bit-identical to :func:`numerics.model.kernels.layer`.

    ``c["Z"]``, ``c["H"] = σ(Z)`` and ``c["dH"] = σ'(Z)`` are the MLP's pre-activation, activation
    and derivative (the config's :class:`~numerics.model.activations.Activation`)."""
    beta = cfg.score_scale
    Xn, r = norm_fwd(cfg, X)
    c = {"X": X, "r": r, "E": E}
    c["attn"] = att = attn_fwd(beta, Xn, p.Q, p.K, p.V, cfg.mask_array)
    Z = Xn @ p.W1
    H = cfg.activation.f(Z)
    c["Z"], c["H"], c["dH"] = Z, H, cfg.activation.df(Z)
    F = att["out"] + H @ p.W2
    if cfg.slow:
        Yb = kernels.block_mean(X, cfg.P)
        Yh, rs = norm_fwd(cfg, Yb)
        c["rs"] = rs
        c["slow_attn"] = satt = attn_fwd(
            beta, Yh, p.Qs, p.Ks, p.Vs, block_level_mask(cfg.slow_mask, cfg.N)
        )
        c["S"] = S = kernels.causal_upsample(satt["out"], cfg.P)
        F = F + p.g * S
    if cfg.gamma:
        F = F + cfg.gamma * (E - X)
    c["Y"] = X + cfg.h * F
    return c


def sigma_prime(cfg: ModelConfig, c: dict) -> np.ndarray:
    """``σ'(Z)`` at the cached pre-activation ``Z = n(X)W1`` (computed once by :func:`layer_fwd`
    with the config's activation; for relu ``σ'(0) = 0``, see :mod:`numerics.model.activations`)."""
    return c["dH"]


def layer_jvp_cached(cfg: ModelConfig, p: LayerParams, c: dict, dX, dp) -> np.ndarray:
    """``dΦ`` at the cached point; ``dX`` and ``dp`` may each be None (zero)."""
    beta = cfg.score_scale
    att = c["attn"]
    Xn = att["Xn"]
    dXn = None if dX is None else norm_lin(Xn, c["r"], dX)
    dF = attn_jvp(
        beta, att, p.Q, p.K, p.V, dXn, *((None,) * 3 if dp is None else (dp.Q, dp.K, dp.V))
    )
    dZ = np.zeros_like(c["Z"])
    if dXn is not None:
        dZ += dXn @ p.W1
    if dp is not None:
        dZ += Xn @ dp.W1
    dF = dF + (sigma_prime(cfg, c) * dZ) @ p.W2
    if dp is not None:
        dF = dF + c["H"] @ dp.W2
    if cfg.slow:
        satt = c["slow_attn"]
        dYh = None
        if dX is not None:
            dYh = norm_lin(satt["Xn"], c["rs"], kernels.block_mean(dX, cfg.P))
        dO = attn_jvp(
            beta,
            satt,
            p.Qs,
            p.Ks,
            p.Vs,
            dYh,
            *((None,) * 3 if dp is None else (dp.Qs, dp.Ks, dp.Vs)),
        )
        dF = dF + p.g * kernels.causal_upsample(dO, cfg.P)
        if dp is not None:
            dF = dF + dp.g * c["S"]
    if cfg.gamma and dX is not None:
        dF = dF - cfg.gamma * dX
    dY = cfg.h * dF
    if dX is not None:
        dY = dX + dY
    return dY


def layer_vjp_cached(cfg: ModelConfig, p: LayerParams, c: dict, G: np.ndarray):
    """``(G_X, gradient LayerParams)`` for the cotangent ``G`` of ``Φ`` at the cached point."""
    beta = cfg.score_scale
    att = c["attn"]
    Xn = att["Xn"]
    GF = cfg.h * G
    GXn, dQ, dK, dV = attn_vjp(beta, att, p.Q, p.K, p.V, GF)
    dW2 = c["H"].T @ GF
    GZ = sigma_prime(cfg, c) * (GF @ p.W2.T)
    dW1 = Xn.T @ GZ
    GXn = GXn + GZ @ p.W1.T
    GX = G + norm_lin(Xn, c["r"], GXn)
    d = cfg.d
    if cfg.slow:
        satt = c["slow_attn"]
        GO = kernels.causal_upsample_adjoint(p.g * GF, cfg.P)
        GYh, dQs, dKs, dVs = attn_vjp(beta, satt, p.Qs, p.Ks, p.Vs, GO)
        GYb = norm_lin(satt["Xn"], c["rs"], GYh)
        GX = GX + kernels.upsample(GYb, cfg.P) / cfg.P
        dg = cfg.h * float(np.vdot(G, c["S"]))
    else:
        dQs = np.zeros((d, d))
        dKs = np.zeros((d, d))
        dVs = np.zeros((d, d))
        dg = 0.0
    if cfg.gamma:
        GX = GX - cfg.gamma * GF
    return GX, LayerParams(Q=dQ, K=dK, V=dV, W1=dW1, W2=dW2, Qs=dQs, Ks=dKs, Vs=dVs, g=dg)
