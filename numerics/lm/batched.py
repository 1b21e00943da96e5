"""The layer Φ and its reverse sweep on a batch of sequences ``X ∈ R^{B×T×d}``.

The same arithmetic as the per-sequence reference (:func:`numerics.model.layer.stack`, the cached
VJP of :mod:`numerics.model.tangents`), batched: the d×d products run on ``(B·T)×d`` matrices,
the T×T×d products as ``B`` BLAS calls (``@`` on stacked arrays), the softmax in place with an
additive ``0/−∞`` mask. Weight gradients are summed over the batch. Agreement with
:func:`numerics.model.autodiff.stack_vjp` per sequence is tested to rounding
(``tests/test_lm_batched.py``); it is not bit-identical (BLAS blocks the products differently).

Caveat: like the reference, the scores are computed densely whatever the mask (the causal half
is not skipped).
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.masks import block_level_mask
from fastslow.numerics.model.weights import ModelConfig

__all__ = ["additive_mask", "layer_forward", "layer_backward"]


def additive_mask(mask: np.ndarray) -> np.ndarray:
    """``0`` where ``mask`` allows an entry, ``−∞`` elsewhere."""
    return np.where(mask, 0.0, -np.inf)


def norm_fwd(X: np.ndarray, eps: float):
    r = np.sqrt(np.mean(X * X, axis=-1, keepdims=True) + eps)
    return X / r, r


def norm_lin(Xn: np.ndarray, r: np.ndarray, dX: np.ndarray) -> np.ndarray:
    """The (symmetric) Jacobian of the row-wise RMS norm applied to ``dX``."""
    return (dX - Xn * np.mean(Xn * dX, axis=-1, keepdims=True)) / r


def proj(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``X @ W`` for stacked rows ``X`` (…×a) as one 2-D BLAS product."""
    return (X.reshape(-1, X.shape[-1]) @ W).reshape(X.shape[:-1] + (W.shape[1],))


def wgrad(X: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``Σ_batch Xᵀ G`` as one 2-D BLAS product."""
    return X.reshape(-1, X.shape[-1]).T @ G.reshape(-1, G.shape[-1])


def softmax_rows_(S: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``S`` in place (``−∞`` entries become exactly 0)."""
    S -= S.max(axis=-1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=-1, keepdims=True)
    return S


def attn_fwd(beta: float, Xn, Q, K, V, neg) -> dict:
    Qx, Kx, Vx = proj(Xn, Q), proj(Xn, K), proj(Xn, V)
    S = (beta * Qx) @ Kx.transpose(0, 2, 1)
    S += neg
    A = softmax_rows_(S)
    return {"Xn": Xn, "Qx": Qx, "Kx": Kx, "Vx": Vx, "A": A, "out": A @ Vx}


def attn_bwd(beta: float, c: dict, Q, K, V, G):
    """``(G_Xn, dQ, dK, dV)`` for the cotangent ``G`` of ``A(X_n) X_n V`` (summed over the batch)."""
    Xn, Qx, Kx, Vx, A = c["Xn"], c["Qx"], c["Kx"], c["Vx"], c["A"]
    GS = A * (G @ Vx.transpose(0, 2, 1))
    GS -= A * GS.sum(axis=-1, keepdims=True)
    GQx = beta * (GS @ Kx)
    GKx = beta * (GS.transpose(0, 2, 1) @ Qx)
    GVx = A.transpose(0, 2, 1) @ G
    GXn = proj(GQx, Q.T) + proj(GKx, K.T) + proj(GVx, V.T)
    return GXn, wgrad(Xn, GQx), wgrad(Xn, GKx), wgrad(Xn, GVx)


def block_mean(X: np.ndarray, P: int) -> np.ndarray:
    B, T, d = X.shape
    return X.reshape(B, T // P, P, d).mean(axis=2)


def causal_upsample(Y: np.ndarray, P: int) -> np.ndarray:
    """``U_c``: block ``b`` receives ``Y[b − 1]``, block 0 receives zero."""
    B, N, d = Y.shape
    out = np.zeros((B, N * P, d))
    out[:, P:] = np.repeat(Y[:, :-1], P, axis=1)
    return out


def causal_upsample_adjoint(G: np.ndarray, P: int) -> np.ndarray:
    B, T, d = G.shape
    sums = G.reshape(B, T // P, P, d).sum(axis=2)
    out = np.zeros_like(sums)
    out[:, :-1] = sums[:, 1:]
    return out


class Masks:
    """The additive masks of a config: fast (T×T) and slow (N×N, block level)."""

    def __init__(self, cfg: ModelConfig):
        self.fast = additive_mask(cfg.mask_array)
        self.slow = additive_mask(block_level_mask(cfg.slow_mask, cfg.N))


def layer_forward(cfg: ModelConfig, masks: Masks, p: dict, X: np.ndarray, g: float) -> dict:
    """All intermediates of ``Φ(X)`` for a batch ``X`` (B×T×d); ``c["Y"]`` is the output.

    ``p`` maps the weight names (``"Q"`` … ``"Vs"``) to arrays; ``g`` is the gate. The slow
    path is computed iff ``cfg.slow``.
    """
    beta = cfg.score_scale
    Xn, r = norm_fwd(X, cfg.norm_eps)
    c: dict = {"r": r}
    c["attn"] = att = attn_fwd(beta, Xn, p["Q"], p["K"], p["V"], masks.fast)
    Z = proj(Xn, p["W1"])
    H = cfg.activation.f(Z)
    c["H"], c["dH"] = H, cfg.activation.df(Z)
    F = att["out"] + proj(H, p["W2"])
    if cfg.slow:
        Yh, rs = norm_fwd(block_mean(X, cfg.P), cfg.norm_eps)
        c["rs"] = rs
        c["slow_attn"] = satt = attn_fwd(beta, Yh, p["Qs"], p["Ks"], p["Vs"], masks.slow)
        c["S"] = S = causal_upsample(satt["out"], cfg.P)
        F = F + g * S
    c["Y"] = X + cfg.h * F
    return c


def layer_backward(cfg: ModelConfig, p: dict, g: float, c: dict, G: np.ndarray):
    """``(G_X, grads)`` for the cotangent ``G`` of ``Φ``'s output; ``grads`` maps the weight names
    and ``"g"`` to gradients summed over the batch (slow entries exactly 0 when ``cfg.slow`` is
    False)."""
    beta, d = cfg.score_scale, cfg.d
    att = c["attn"]
    Xn = att["Xn"]
    GF = cfg.h * G
    GXn, dQ, dK, dV = attn_bwd(beta, att, p["Q"], p["K"], p["V"], GF)
    grads = {"Q": dQ, "K": dK, "V": dV, "W2": wgrad(c["H"], GF)}
    GZ = c["dH"] * proj(GF, p["W2"].T)
    grads["W1"] = wgrad(Xn, GZ)
    GXn += proj(GZ, p["W1"].T)
    GX = G + norm_lin(Xn, c["r"], GXn)
    if cfg.slow:
        satt = c["slow_attn"]
        GO = causal_upsample_adjoint(g * GF, cfg.P)
        GYh, grads["Qs"], grads["Ks"], grads["Vs"] = attn_bwd(
            beta, satt, p["Qs"], p["Ks"], p["Vs"], GO
        )
        GYb = norm_lin(satt["Xn"], c["rs"], GYh)
        GX += np.repeat(GYb, cfg.P, axis=1) / cfg.P
        grads["g"] = cfg.h * float(np.vdot(G, c["S"]))
    else:
        for n in ("Qs", "Ks", "Vs"):
            grads[n] = np.zeros((d, d))
        grads["g"] = 0.0
    return GX, grads
