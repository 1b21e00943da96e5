"""A small softmax MLP ``φ_θ(y)`` trained to minimise ``E_y KL(p(y) ‖ φ_θ(y))`` (claim F3).

Model (one hidden layer, tanh)::

    z = tanh(u W1 + b1),    logits = z W2 + b2,    φ_θ(y) = softmax(logits),    u = y / y_scale

with ``W1 ∈ R^{k×m}`` (k inputs, width m), ``W2 ∈ R^{m×n}`` (n outputs). The loss over a batch
``(Y, P)`` (rows ``P_b`` are probability vectors, zeros allowed) is the mean KL divergence

::

    L(θ) = (1/B) Σ_b Σ_i P_bi (log P_bi − log φ_θ(Y_b)_i),      ∂L/∂logits_b = (φ_θ(Y_b) − P_b)/B,

and the gradients are back-propagated by hand (:func:`kl_loss_and_grad`; checked against finite
differences in ``tests/test_variational.py``). :func:`train` runs full-batch Adam.

Error measures on a held-out grid (:func:`approximation_error`): mean and max KL, and max total
variation ``½‖p − φ‖₁`` (Pinsker: ``TV ≤ √(KL/2)``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from fastslow.numerics import validation

__all__ = [
    "PARAM_NAMES",
    "init_mlp",
    "mlp_probs",
    "kl_loss_and_grad",
    "train",
    "approximation_error",
]

PARAM_NAMES = ("W1", "b1", "W2", "b2")


def init_mlp(width: int, n_out: int, seed, n_in: int = 1, scale: float = 1.0) -> dict:
    """Gaussian weights of standard deviation ``scale/√fan_in``, zero biases except ``b1``
    (uniform in ``[−scale, scale]`` so that tanh units split the input range)."""
    width = validation.positive_int("width", width)
    n_out = validation.positive_int("n_out", n_out)
    n_in = validation.positive_int("n_in", n_in)
    scale = validation.real("scale", scale, low=0.0)
    rng = np.random.default_rng(seed)
    return {
        "W1": rng.standard_normal((n_in, width)) * scale * 2.0 / np.sqrt(n_in),
        "b1": rng.uniform(-scale, scale, width) * 2.0,
        "W2": rng.standard_normal((width, n_out)) * scale / np.sqrt(width),
        "b2": np.zeros(n_out),
    }


def _forward(params: dict, U: np.ndarray):
    Z = np.tanh(U @ params["W1"] + params["b1"])
    S = Z @ params["W2"] + params["b2"]
    S = S - S.max(axis=1, keepdims=True)
    E = np.exp(S)
    logq = S - np.log(E.sum(axis=1, keepdims=True))
    return Z, logq


def _inputs(Y) -> np.ndarray:
    Y = validation.finite_array("Y", Y)
    return Y.reshape(-1, 1) if Y.ndim == 1 else Y


def mlp_probs(params: dict, Y) -> np.ndarray:
    """``φ_θ(Y)``: one probability vector per row of ``Y`` (a 1-D array means scalar inputs)."""
    return np.exp(_forward(params, _inputs(Y))[1])


def kl_loss_and_grad(params: dict, Y, P) -> tuple[float, dict]:
    """Mean KL divergence ``(1/B) Σ_b KL(P_b ‖ φ_θ(Y_b))`` and its gradient (analytic backprop)."""
    U = _inputs(Y)
    P = validation.finite_array("P", P, shape=(U.shape[0], params["W2"].shape[1]))
    return _kl_loss_and_grad(params, U, P)


def _kl_loss_and_grad(params: dict, U: np.ndarray, P: np.ndarray) -> tuple[float, dict]:
    B = U.shape[0]
    Z, logq = _forward(params, U)
    loss = float((xlogy(P, P).sum() - (P * logq).sum()) / B)
    dS = (np.exp(logq) * P.sum(axis=1, keepdims=True) - P) / B
    dZ = dS @ params["W2"].T
    dA = dZ * (1.0 - Z * Z)
    grads = {"W2": Z.T @ dS, "b2": dS.sum(axis=0), "W1": U.T @ dA, "b1": dA.sum(axis=0)}
    return loss, grads


def train(
    params: dict,
    Y,
    P,
    steps: int,
    lr: float = 1e-2,
    betas=(0.9, 0.999),
    adam_eps: float = 1e-8,
    final_lr_ratio: float = 1.0,
    record=(),
) -> tuple[dict, dict]:
    """Full-batch Adam on the mean KL.

    The step size follows a cosine schedule from ``lr`` down to ``lr·final_lr_ratio`` at ``steps``
    (``final_lr_ratio=1``: constant). Returns the trained parameters (a copy) and
    ``{"loss": loss before each step, "snapshots": {step: params after that many steps}}`` for the
    steps listed in ``record`` (0 records the initial parameters).
    """
    steps = validation.nonneg_int("steps", steps)
    lr = validation.real("lr", lr, low=0.0, low_open=True)
    ratio = validation.real("final_lr_ratio", final_lr_ratio, low=0.0, high=1.0)
    b1, b2 = betas
    U = _inputs(Y)
    P = validation.finite_array("P", P, shape=(U.shape[0], np.shape(params["W2"])[1]))
    # one flat vector with views per parameter: Adam updates the whole vector at once
    shapes = {k: np.shape(params[k]) for k in PARAM_NAMES}
    sizes = [int(np.prod(shapes[k])) for k in PARAM_NAMES]
    flat = np.concatenate([np.asarray(params[k], dtype=np.float64).ravel() for k in PARAM_NAMES])
    offs = np.cumsum([0] + sizes)
    theta = {k: flat[offs[i] : offs[i + 1]].reshape(shapes[k]) for i, k in enumerate(PARAM_NAMES)}
    gflat = np.empty_like(flat)
    m = np.zeros_like(flat)
    s = np.zeros_like(flat)
    record = set(int(r) for r in record)
    snaps = {0: {k: a.copy() for k, a in theta.items()}} if 0 in record else {}
    losses = np.empty(steps)
    for it in range(1, steps + 1):
        loss, g = _kl_loss_and_grad(theta, U, P)
        losses[it - 1] = loss
        for i, k in enumerate(PARAM_NAMES):
            gflat[offs[i] : offs[i + 1]] = g[k].ravel()
        m *= b1
        m += (1 - b1) * gflat
        s *= b2
        s += (1 - b2) * gflat * gflat
        step = lr * (ratio + (1 - ratio) * 0.5 * (1 + np.cos(np.pi * (it - 1) / max(steps, 1))))
        flat -= (step / (1 - b1**it)) * m / (np.sqrt(s / (1 - b2**it)) + adam_eps)
        if it in record:
            snaps[it] = {k: a.copy() for k, a in theta.items()}
    return {k: a.copy() for k, a in theta.items()}, {"loss": losses, "snapshots": snaps}


def approximation_error(params: dict, Y, P) -> dict:
    """``mean_kl``, ``max_kl`` and ``max_tv = max_b ½‖P_b − φ_θ(Y_b)‖₁`` on the grid ``(Y, P)``."""
    U = _inputs(Y)
    P = validation.finite_array("P", P, shape=(U.shape[0], params["W2"].shape[1]))
    _, logq = _forward(params, U)
    kl = xlogy(P, P).sum(axis=1) - (P * logq).sum(axis=1)
    tv = 0.5 * np.abs(P - np.exp(logq)).sum(axis=1)
    return {"mean_kl": float(kl.mean()), "max_kl": float(kl.max()), "max_tv": float(tv.max())}
