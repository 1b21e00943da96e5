"""The layer map ``Φ_l`` and the stack ``X_0 → X_L``: the plain NumPy reference path.

::

    Attn_l(X) = softmax_mask( β n(X) Q_l (n(X) K_l)ᵀ ) n(X) V_l
    MLP_l(X)  = σ( n(X) W1_l ) W2_l
    Slow_l(X) = U_c · softmax_slowmask( β Ŷ Qs_l (Ŷ Ks_l)ᵀ ) Ŷ Vs_l,   Ŷ = n(B X)
    F_l(X)    = Attn_l(X) + MLP_l(X) + g_l·Slow_l(X) + γ(E − X)
    Φ_l(X)    = X + h·F_l(X)

``β = 1/√d`` unless the config says otherwise; ``σ`` is the config's activation
(:mod:`numerics.model.activations`: ``"tanh"``, ``"relu"``, ``"gelu"``, ``"identity"`` or a user
:class:`~numerics.model.activations.Activation`; this path evaluates any of them). The T×T×d
products go through BLAS (``@``). The public functions validate their inputs; the underscored ones are the unvalidated kernels that
the JVPs, gradients and integrators call in their inner loops.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model import kernels
from fastslow.numerics.model.weights import LayerParams, Model, ModelConfig

__all__ = [
    "rms_norm",
    "masked_softmax",
    "attention_kernel",
    "attention",
    "mlp",
    "slow_path",
    "layer_increment",
    "layer",
    "stack",
    "stack_trajectory",
    "mlp_preactivations",
]


# --------------------------------------------------------------------------- unvalidated kernels


# --------------------------------------------------------------------------- validation helpers

STATE_LIMIT = 1e150
"""Largest magnitude a state entry may have: squares (RMS norm) and scores stay below overflow."""


def check_state(cfg: ModelConfig, X, name: str = "X") -> np.ndarray:
    X = validation.finite_array(name, X, shape=(cfg.T, cfg.d))
    big = np.abs(X).max(initial=0.0)
    if big >= STATE_LIMIT:
        raise ValueError(
            f"{name} has an entry of magnitude {big:.3g}; expected magnitudes below "
            f"{STATE_LIMIT:.0e} (squares must not overflow float64)"
        )
    return X


def check_embeddings(cfg: ModelConfig, E, X0: np.ndarray) -> np.ndarray | None:
    """``E`` defaults to the initial state (injection towards the input embeddings)."""
    if E is None:
        return X0.copy() if cfg.gamma else None
    return check_state(cfg, E, "E")


def check_layer_params(cfg: ModelConfig, p) -> LayerParams:
    if not isinstance(p, LayerParams):
        raise TypeError(f"params must be LayerParams, got {type(p).__name__}")
    return p.shapes_ok(cfg.d, int(cfg.m))  # type: ignore[arg-type]  # m is resolved in __post_init__


def check_model(model) -> Model:
    if not isinstance(model, Model):
        raise TypeError(f"model must be a numerics.model.weights.Model, got {type(model).__name__}")
    return model


# --------------------------------------------------------------------------- public functions


def rms_norm(X, eps: float = 1e-6) -> np.ndarray:
    """Row-wise RMS normalisation ``x / √(mean(x²) + eps)``."""
    X = validation.finite_array("X", X)
    eps = validation.real("eps", eps, low=0.0, low_open=True)
    return kernels.rms_norm(X, eps)


def masked_softmax(S, mask) -> np.ndarray:
    """Row-wise softmax of the scores ``S`` restricted to ``mask`` (zero outside it).

    ``mask`` is a boolean array of the same shape with every row non-empty.
    """
    S = validation.finite_array("S", S, ndim=2)
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != S.shape:
        raise ValueError(
            f"mask must be a boolean array of shape {S.shape}, got {mask.dtype} {mask.shape}"
        )
    if not mask.any(axis=1).all():
        raise ValueError("every mask row must allow at least one entry")
    return kernels.masked_softmax(S, mask)


def attention_kernel(config: ModelConfig, params: LayerParams, X) -> np.ndarray:
    """The fast attention matrix ``A(X) = softmax_mask(β n(X)Q (n(X)K)ᵀ)`` (T×T, row-stochastic)."""
    p = check_layer_params(config, params)
    X = check_state(config, X)
    return kernels.kernel(config, kernels.normed(config, X), p.Q, p.K, config.mask_array)


def attention(config: ModelConfig, params: LayerParams, X) -> np.ndarray:
    """``Attn(X) = A(X) n(X) V``."""
    p = check_layer_params(config, params)
    X = check_state(config, X)
    Xn = kernels.normed(config, X)
    return kernels.kernel(config, Xn, p.Q, p.K, config.mask_array) @ (Xn @ p.V)


def mlp(config: ModelConfig, params: LayerParams, X) -> np.ndarray:
    """``MLP(X) = σ(n(X) W1) W2``."""
    p = check_layer_params(config, params)
    X = check_state(config, X)
    return kernels.sigma(config, kernels.normed(config, X) @ p.W1) @ p.W2


def slow_path(config: ModelConfig, params: LayerParams, X) -> np.ndarray:
    """``Slow(X) = U_c softmax_slowmask(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs`` with ``Ŷ = n(BX)`` (ungated)."""
    p = check_layer_params(config, params)
    X = check_state(config, X)
    return kernels.slow(config, p, X)


def layer_increment(config: ModelConfig, params: LayerParams, X, E=None) -> np.ndarray:
    """``F(X) = Attn(X) + MLP(X) + g·Slow(X) + γ(E − X)`` (``E`` defaults to ``X``: no injection)."""
    p = check_layer_params(config, params)
    X = check_state(config, X)
    E = check_state(config, E, "E") if E is not None else (X if config.gamma else None)
    return kernels.increment(config, p, X, E)


def layer(config: ModelConfig, params: LayerParams, X, E=None) -> np.ndarray:
    """One layer ``Φ(X) = X + h·F(X)``."""
    return np.asarray(X, dtype=np.float64) + config.h * layer_increment(config, params, X, E)


def stack(model: Model, X0, E=None) -> np.ndarray:
    """The stack ``X_L = Φ_{L−1} ∘ ⋯ ∘ Φ_0 (X_0)``.

    ``E`` (the injection target) defaults to ``X_0``; it only matters when ``γ > 0``.
    """
    return stack_trajectory(model, X0, E)[-1]


def stack_trajectory(model: Model, X0, E=None) -> np.ndarray:
    """All states ``[X_0, X_1, …, X_L]`` as an array of shape ``(L+1, T, d)``."""
    model = check_model(model)
    cfg = model.config
    X = check_state(cfg, X0, "X0")
    E = check_embeddings(cfg, E, X)
    out = np.empty((model.L + 1, cfg.T, cfg.d))
    out[0] = X
    with np.errstate(over="ignore", invalid="ignore"):
        for l, p in enumerate(model.layers):
            X = kernels.layer(cfg, p, X, E)
            if not np.all(np.abs(X) < STATE_LIMIT):  # also catches inf and NaN
                raise FloatingPointError(
                    f"layer {l} produced non-finite or overflowing values "
                    f"(|X| ≥ {STATE_LIMIT:.0e}); reduce the weight scale, the "
                    "depth step h or the depth L"
                )
            out[l + 1] = X
    return out


def mlp_preactivations(model: Model, X0, E=None) -> np.ndarray:
    """The MLP pre-activations ``Z_l = n(X_l) W1_l`` of every layer along the stack from ``X0``,
    shape ``(L, T, m)``: where ``σ`` is evaluated. For a non-smooth ``σ`` (relu) the stack is
    smooth in its inputs and weights exactly as long as no entry of any ``Z_l`` is 0 or changes
    sign; comparing sign patterns at two points tells whether a straight segment between them
    crosses a kink (up to an even number of crossings of one entry within the segment)."""
    traj = stack_trajectory(model, X0, E)
    cfg = model.config
    return np.stack(
        [kernels.normed(cfg, X) @ p.W1 for X, p in zip(traj[:-1], model.layers, strict=True)]
    )
