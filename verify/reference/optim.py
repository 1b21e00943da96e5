"""Adam and AdamW written from their published update rules, one step at a time.

Kingma & Ba (2015), *Adam: a method for stochastic optimization*, Algorithm 1: at step
``t = 1, 2, …`` with gradient ``g_t``,

    m_t = β₁ m_{t−1} + (1 − β₁) g_t
    v_t = β₂ v_{t−1} + (1 − β₂) g_t²
    m̂_t = m_t / (1 − β₁ᵗ),    v̂_t = v_t / (1 − β₂ᵗ)
    θ_t = θ_{t−1} − α_t m̂_t / (√v̂_t + ε)

(the bias corrections use the step count ``t`` of the *current* step, both moments start at 0).

Loshchilov & Hutter (2019), *Decoupled weight decay regularization*, Algorithm 2 (AdamW): the
decay is added to the step, not to the gradient, so it never enters ``m`` or ``v``:

    θ_t = θ_{t−1} − η_t (α m̂_t / (√v̂_t + ε) + λ θ_{t−1}).

We use the convention of the common libraries (PyTorch's ``AdamW``): one scheduled learning rate
``lr_t = η_t α`` multiplies both terms, ``θ_t = θ_{t−1} − lr_t (m̂_t/(√v̂_t + ε) + λ θ_{t−1})``
(the paper's ``λ`` is ``α·λ`` here). Plain NumPy, element by element in float64; it shares no code
with :mod:`numerics` (the optimisers under test: :class:`numerics.lm.optim.AdamW`, the full-batch
Adam of :func:`numerics.toy.variational.train`, the simulation of
:func:`numerics.lm.optim.gate_noise_band`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class AdamState:
    """The first and second moments and the number of steps taken (0 before the first)."""

    m: np.ndarray
    v: np.ndarray
    t: int = 0


def adam_init(theta) -> AdamState:
    """Zero moments of ``theta``'s shape, ``t = 0``."""
    theta = np.asarray(theta, dtype=float)
    return AdamState(np.zeros_like(theta), np.zeros_like(theta), 0)


def adamw_step(
    theta,
    grad,
    state: AdamState,
    lr: float,
    *,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float = 0.0,
) -> np.ndarray:
    """One step of Adam (``weight_decay = 0``) or AdamW; returns the new ``θ`` and updates
    ``state`` (its moments and ``t``). The decay multiplies ``θ_{t−1}``, the value before the
    step."""
    theta = np.asarray(theta, dtype=float)
    g = np.asarray(grad, dtype=float)
    t = state.t + 1
    m = beta1 * state.m + (1.0 - beta1) * g
    v = beta2 * state.v + (1.0 - beta2) * g**2
    m_hat = m / (1.0 - beta1**t)
    v_hat = v / (1.0 - beta2**t)
    new = theta - lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * theta)
    state.m, state.v, state.t = m, v, t
    return new
