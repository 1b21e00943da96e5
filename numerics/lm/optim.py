"""AdamW with linear warm-up and cosine decay, global-norm clipping, and the gate's noise band.

* :func:`learning_rate`: ``lr·(s + 1)/w`` for the first ``w`` steps, then cosine from ``lr`` to
  ``final·lr`` at the last step.
* :func:`clip_scale`: the factor ``min(1, c/‖∇‖)`` of global-norm clipping over the trained
  parameters.
* :class:`AdamW`: ``m ← β₁m + (1−β₁)∇``, ``v ← β₂v + (1−β₂)∇²``, ``θ ← θ − η_s·(m̂/(√v̂ + ε) +
  λθ)`` with bias-corrected ``m̂, v̂`` and decoupled weight decay ``λ`` on matrices only (the
  gates are never decayed). Parameters not in ``trained`` never move (the frozen model's gates).
* :func:`gate_noise_band`: how far a scalar parameter whose gradient has **zero mean** drifts
  under this optimiser and schedule. AdamW normalises each coordinate by its running RMS, so the
  final value of such a parameter does not depend on the gradient's scale: with i.i.d. noise
  gradients it is ``≈ −Σ_s η_s ξ_s`` (ξ of unit variance), standard deviation ``≈ √(Σ η_s²)``.
  The band is computed before training by simulating the exact update on Gaussian noise; a gate
  outside it has moved by more than noise (D9's null: ``E ∂R/∂g = 0``).

Caveat of the band: it takes the gradient noise as independent between steps and ignores the
clipping factor (a common rescaling of a step's gradient); both hold approximately in training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Schedule", "learning_rate", "clip_scale", "AdamW", "gate_noise_band"]


@dataclass(frozen=True)
class Schedule:
    """Peak learning rate, warm-up steps, total steps and the final fraction of the peak."""

    lr: float
    warmup: int
    steps: int
    final: float = 0.1

    def rates(self) -> np.ndarray:
        return np.array([learning_rate(self, s) for s in range(self.steps)])


def learning_rate(sch: Schedule, step: int) -> float:
    """The learning rate of step ``step`` (0-based)."""
    if step < sch.warmup:
        return sch.lr * (step + 1) / sch.warmup
    span = max(sch.steps - 1 - sch.warmup, 1)
    frac = min((step - sch.warmup) / span, 1.0)
    return sch.lr * (sch.final + (1 - sch.final) * 0.5 * (1 + math.cos(math.pi * frac)))


def clip_scale(grads: dict, names, clip: float) -> tuple[float, float]:
    """``(norm, scale)``: the global norm of ``grads[names]`` and ``min(1, clip/norm)``."""
    norm = math.sqrt(sum(float(np.vdot(grads[n], grads[n])) for n in names))
    return norm, (1.0 if norm <= clip else clip / norm)


class AdamW:
    """AdamW over the entries ``trained`` of a parameter dict (state ``m``, ``v``, ``t``)."""

    def __init__(self, params: dict, trained, *, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0):
        self.trained = tuple(trained)
        self.b1, self.b2 = betas
        self.eps, self.wd = eps, weight_decay
        self.m = {n: np.zeros_like(params[n]) for n in self.trained}
        self.v = {n: np.zeros_like(params[n]) for n in self.trained}
        self.t = 0

    def step(self, params: dict, grads: dict, lr: float, scale: float = 1.0) -> None:
        """One update in place, with the gradients multiplied by ``scale`` (clipping)."""
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for n in self.trained:
            g = grads[n] * scale
            m, v = self.m[n], self.v[n]
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * (g * g)
            upd = (m / c1) / (np.sqrt(v / c2) + self.eps)
            if self.wd and params[n].ndim == 2:
                upd = upd + self.wd * params[n]
            params[n] -= lr * upd

    def state(self) -> dict:
        out = {f"m:{n}": a for n, a in self.m.items()}
        out.update({f"v:{n}": a for n, a in self.v.items()})
        out["t"] = np.array(self.t)
        return out

    def load(self, state: dict) -> None:
        for n in self.trained:
            self.m[n] = np.array(state[f"m:{n}"], dtype=np.float64)
            self.v[n] = np.array(state[f"v:{n}"], dtype=np.float64)
        self.t = int(state["t"])


def gate_noise_band(
    sch: Schedule,
    *,
    betas=(0.9, 0.99),
    eps: float = 1e-8,
    gates: int = 1,
    alpha: float = 0.01,
    sims: int = 4000,
    seed=0,
) -> dict:
    """The noise band of ``gates`` scalar parameters trained from 0 on zero-mean gradients.

    Simulates the AdamW update (no weight decay, unit-variance Gaussian gradients; the scale does
    not matter) over the schedule ``sims`` times; ``sd`` is the standard deviation of the final
    value and ``band = z·sd`` with ``z`` the two-sided normal quantile at ``alpha/gates``
    (Bonferroni over the gates), so under the null all gates lie within the band with
    probability ≥ ``1 − alpha``.
    """
    rng = np.random.default_rng(seed)
    b1, b2 = betas
    theta = np.zeros(sims)
    m = np.zeros(sims)
    v = np.zeros(sims)
    for s, lr in enumerate(sch.rates()):
        g = rng.standard_normal(sims)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta -= lr * (m / (1 - b1 ** (s + 1))) / (np.sqrt(v / (1 - b2 ** (s + 1))) + eps)
    sd = float(theta.std())
    z = float(stats.norm.ppf(1 - alpha / (2 * gates)))
    return {
        "sd": sd,
        "z": z,
        "band": z * sd,
        "sqrt_sum_lr2": float(np.sqrt((sch.rates() ** 2).sum())),
    }
