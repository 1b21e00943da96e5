"""The language model's loss and its exact gradient with respect to every parameter.

``loss(θ) = −mean_{b,t} log softmax(n(X_L[b, t]) W_head)[y_{b,t}]`` with ``X_0 = E[x]`` and
``X_L`` the stack (:mod:`numerics.lm.batched`); ``x`` a batch of windows' first ``T`` tokens and
``y`` the next tokens. :func:`loss_and_grad` returns the loss, the gradient of every entry of the
parameter dict (:mod:`numerics.lm.params`; the gates included, also when they are held fixed)
and the per-layer gate gradients; :func:`loss` is the forward alone. Both accept a ``(B, T + 1)``
integer array of windows.

The gradient is the analytic reverse sweep: cross-entropy and head, the final RMS norm, the
layers' VJPs (:func:`numerics.lm.batched.layer_backward`, the batched
:func:`numerics.model.autodiff.stack_vjp`), and the embedding as a scatter-add (a one-hot
product). ``tests/test_lm_gradients.py`` checks every parameter against finite differences.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.lm.batched import (
    Masks,
    layer_backward,
    layer_forward,
    norm_fwd,
    norm_lin,
    proj,
)
from fastslow.numerics.lm.params import LMConfig
from fastslow.numerics.model.weights import WEIGHT_NAMES

__all__ = ["Network", "log_softmax", "flops_per_token"]


def log_softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=-1, keepdims=True)
    return Z - np.log(np.exp(Z).sum(axis=-1, keepdims=True))


class Network:
    """The loss and gradient of one :class:`~numerics.lm.params.LMConfig` (masks built once)."""

    def __init__(self, cfg: LMConfig):
        self.cfg = cfg
        self.mc = cfg.model_config()
        self.masks = Masks(self.mc)

    def _layer(self, params: dict, l: int) -> dict:
        return {n: params[f"{l}.{n}"] for n in WEIGHT_NAMES}

    def forward(self, params: dict, windows: np.ndarray):
        """``(caches, X_L)`` of the stack on the windows' first ``T`` tokens."""
        x = windows[:, :-1]
        X = params["emb"][x]
        caches = []
        for l in range(self.cfg.L):
            c = layer_forward(
                self.mc, self.masks, self._layer(params, l), X, float(params[f"{l}.g"])
            )
            caches.append(c)
            X = c["Y"]
        return caches, X

    def token_losses(self, params: dict, windows: np.ndarray) -> np.ndarray:
        """``−log p(y_{b,t})`` of every predicted token, shape ``(B, T)``."""
        _, XL = self.forward(params, windows)
        Xn, _ = norm_fwd(XL, self.cfg.norm_eps)
        logp = log_softmax(proj(Xn, params["head"]))
        y = windows[:, 1:]
        return -np.take_along_axis(logp, y[..., None], axis=-1)[..., 0]

    def loss(self, params: dict, windows: np.ndarray) -> float:
        """Mean cross-entropy (nats per character) of the windows' next tokens."""
        return float(self.token_losses(params, windows).mean())

    def loss_and_grad(self, params: dict, windows: np.ndarray):
        """``(loss, grads)``: the mean cross-entropy and its gradient (a dict like ``params``)."""
        cfg = self.cfg
        x, y = windows[:, :-1], windows[:, 1:]
        n = y.size
        caches, XL = self.forward(params, windows)
        Xn, r = norm_fwd(XL, cfg.norm_eps)
        logp = log_softmax(proj(Xn, params["head"]))
        loss = -float(np.take_along_axis(logp, y[..., None], axis=-1).sum()) / n
        Gz = np.exp(logp)
        np.put_along_axis(Gz, y[..., None], np.take_along_axis(Gz, y[..., None], axis=-1) - 1, -1)
        Gz /= n
        grads = {"head": Xn.reshape(-1, cfg.d).T @ Gz.reshape(-1, cfg.vocab)}
        G = norm_lin(Xn, r, proj(Gz, params["head"].T))
        for l in range(cfg.L - 1, -1, -1):
            G, gl = layer_backward(
                self.mc, self._layer(params, l), float(params[f"{l}.g"]), caches[l], G
            )
            for k, val in gl.items():
                grads[f"{l}.{k}"] = np.asarray(val, dtype=np.float64)
        onehot = np.zeros((x.size, cfg.vocab))
        onehot[np.arange(x.size), x.ravel()] = 1.0
        grads["emb"] = onehot.T @ G.reshape(-1, cfg.d)
        return loss, grads


def flops_per_token(cfg: LMConfig) -> dict:
    """The FLOP floor of one training token: ``6 × (matrix parameters) + 3 × (attention terms)``.

    Matrix parameters: per layer ``3d² + 2dm`` (Q, K, V, W1, W2) and the head ``dV``; with the slow
    path (coupled, frozen) ``3d²/P`` more per layer (Qs, Ks, Vs act on one pooled token per block).
    Attention terms of the forward, per token and layer: ``4Td`` (scores and mixing, computed
    densely whatever the mask) and ``4Nd/P`` for the slow path. Training is counted as three
    forwards (forward, and the two products of the backward). The embedding lookup, the
    element-wise work (softmax, norms, tanh) and the optimiser are not counted.
    """
    d, m, L, T = cfg.d, cfg.m, cfg.L, cfg.T
    params = L * (3 * d * d + 2 * d * m) + d * cfg.vocab
    attn: float = L * 4 * T * d
    if cfg.slow:
        params_slow = L * 3 * d * d / cfg.P
        attn += L * 4 * cfg.N * d / cfg.P
    else:
        params_slow = 0.0
    total = 6 * (params + params_slow) + 3 * attn
    return {
        "params": params,
        "slow_params_per_token": params_slow,
        "attention": attn,
        "total": total,
    }
