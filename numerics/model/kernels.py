"""The layer's pieces in plain NumPy without argument checks, for inner loops.

RMS norm, masked softmax, the attention kernel ``A(X)``, the MLP activation, the block-causal slow
path, the layer increment and map ``Φ(X) = X + h·F(X)`` (:func:`layer`), block pooling and
up-sampling by reshaping, and the coupling form's right-hand side (:func:`coupling`). The
validated reference (:mod:`numerics.model.layer`) checks the arguments and calls these.

Hypotheses: arguments already checked (shapes, finite values, a ``ModelConfig``); nothing here
validates or raises on bad input.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.masks import block_level_mask
from fastslow.numerics.model.weights import LayerParams, ModelConfig


def rms_norm(X: np.ndarray, eps: float) -> np.ndarray:
    return X / np.sqrt(np.mean(X * X, axis=-1, keepdims=True) + eps)


def masked_softmax(S: np.ndarray, mask: np.ndarray) -> np.ndarray:
    S = np.where(mask, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=-1, keepdims=True)


def normed(cfg: ModelConfig, X: np.ndarray) -> np.ndarray:
    return rms_norm(X, cfg.norm_eps) if cfg.norm else X


def kernel(cfg: ModelConfig, Xn: np.ndarray, Q: np.ndarray, K: np.ndarray, mask) -> np.ndarray:
    return masked_softmax(cfg.score_scale * (Xn @ Q) @ (Xn @ K).T, mask)


def sigma(cfg: ModelConfig, Z: np.ndarray) -> np.ndarray:
    """``σ(Z)`` element-wise with the config's activation (:mod:`numerics.model.activations`)."""
    return cfg.activation.f(Z)


def slow(cfg: ModelConfig, p: LayerParams, X: np.ndarray) -> np.ndarray:
    Yh = normed(cfg, block_mean(X, cfg.P))
    As = kernel(cfg, Yh, p.Qs, p.Ks, block_level_mask(cfg.slow_mask, cfg.N))
    return causal_upsample(As @ (Yh @ p.Vs), cfg.P)


def increment(cfg: ModelConfig, p: LayerParams, X: np.ndarray, E: np.ndarray | None) -> np.ndarray:
    Xn = normed(cfg, X)
    A = kernel(cfg, Xn, p.Q, p.K, cfg.mask_array)
    F = A @ (Xn @ p.V) + sigma(cfg, Xn @ p.W1) @ p.W2
    if cfg.slow:
        F = F + p.g * slow(cfg, p, X)
    if cfg.gamma:
        F = F + cfg.gamma * (E - X)
    return F


def layer(cfg: ModelConfig, p: LayerParams, X: np.ndarray, E: np.ndarray | None) -> np.ndarray:
    return X + cfg.h * increment(cfg, p, X, E)


def block_mean(X: np.ndarray, P: int) -> np.ndarray:
    return X.reshape((X.shape[0] // P, P) + X.shape[1:]).mean(axis=1)


def upsample(Y: np.ndarray, P: int) -> np.ndarray:
    return np.repeat(Y, P, axis=0)


def causal_upsample(Y: np.ndarray, P: int) -> np.ndarray:
    out = np.zeros((Y.shape[0] * P,) + Y.shape[1:])
    out[P:] = np.repeat(Y[:-1], P, axis=0)
    return out


def causal_upsample_adjoint(G: np.ndarray, P: int) -> np.ndarray:
    N = G.shape[0] // P
    sums = G.reshape((N, P) + G.shape[1:]).sum(axis=1)
    out = np.zeros_like(sums)
    out[:-1] = sums[1:]
    return out


def coupling(cfg: ModelConfig, p: LayerParams, X: np.ndarray, E, eps: float) -> np.ndarray:
    Xn = normed(cfg, X)
    A = kernel(cfg, Xn, p.Q, p.K, cfg.mask_array)
    out = (A @ X - X) / eps + sigma(cfg, Xn @ p.W1) @ p.W2
    if cfg.slow:
        out = out + p.g * slow(cfg, p, X)
    if cfg.gamma:
        out = out + cfg.gamma * (E - X)
    return out
