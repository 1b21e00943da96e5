"""Parameter paths ``t ↦ θ(t)`` on ``[0, 1]`` and the stacks that sample them (claim D2).

A path is a callable ``t ↦ LayerParams`` that :func:`numerics.model.flow.make_rhs` accepts (with
``config=``). :func:`stack_from_path` builds the ``L``-layer stack with depth step ``h = 1/L`` whose
layer ``l`` uses ``θ(l/L)``: the forward-Euler discretisation of ``dX/dt = F(t, X)``.

* :class:`SmoothPath`: ``θ(t) = θ_a + s(t)(θ_b − θ_a)`` with ``s(t) = (1 − cos πt)/2`` (C^∞;
  ``θ_b = θ_a`` gives a constant path: tied weights, the autonomous case).
* :class:`StepPath`: piecewise constant with jumps at given times (``θ_k`` on ``[τ_k, τ_{k+1})``);
  its jumps need not lie on the grid ``l/L``.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model.weights import LayerParams, Model, ModelConfig, init_layer

__all__ = ["SmoothPath", "StepPath", "random_smooth_path", "stack_from_path", "lipschitz_estimate"]


class SmoothPath:
    """``θ(t) = θ_a + s(t)(θ_b − θ_a)``, ``s(t) = (1 − cos πt)/2`` (weights and gate)."""

    def __init__(self, theta_a: LayerParams, theta_b: LayerParams):
        for name, th in (("theta_a", theta_a), ("theta_b", theta_b)):
            if not isinstance(th, LayerParams):
                raise TypeError(f"{name} must be LayerParams, got {type(th).__name__}")
        self.theta_a, self.theta_b = theta_a, theta_b
        self._delta = theta_b.axpy(-1.0, theta_a)
        self.breakpoints = ()

    def s(self, t: float) -> float:
        return 0.5 * (1.0 - np.cos(np.pi * t))

    def __call__(self, t: float) -> LayerParams:
        return self.theta_a.axpy(self.s(t), self._delta)


class StepPath:
    """Piecewise-constant ``θ``: ``thetas[k]`` on ``[jumps[k−1], jumps[k])`` (``jumps`` sorted in (0, 1))."""

    def __init__(self, thetas, jumps):
        self.thetas = list(thetas)
        self.breakpoints = tuple(
            float(validation.real("jump", j, low=0.0, high=1.0, low_open=True, high_open=True))
            for j in jumps
        )
        if len(self.thetas) != len(self.breakpoints) + 1:
            raise ValueError(
                f"need len(thetas) = len(jumps) + 1, got {len(self.thetas)} and "
                f"{len(self.breakpoints)}"
            )
        if list(self.breakpoints) != sorted(self.breakpoints):
            raise ValueError(f"jumps must be sorted, got {self.breakpoints}")

    def __call__(self, t: float) -> LayerParams:
        return self.thetas[int(np.searchsorted(self.breakpoints, t, side="right"))]


def random_smooth_path(
    config: ModelConfig, seed, *, tied: bool = False, scale: float = 1.0, gate: float = 0.5
) -> SmoothPath:
    """A seeded smooth path between two random layers (``tied=True``: a constant path)."""
    rng = np.random.default_rng(seed)
    a = init_layer(config, rng, scale=scale, gate=gate)
    b = a if tied else init_layer(config, rng, scale=scale, gate=-gate)
    return SmoothPath(a, b)


def stack_from_path(config: ModelConfig, path, L: int, h: float | None = None) -> Model:
    """The ``L``-layer stack with layer ``l`` = ``θ(l/L)`` and depth step ``h`` (default ``1/L``)."""
    L = validation.positive_int("L", L)
    h = 1.0 / L if h is None else validation.real("h", h, low=0.0, low_open=True)
    cfg = config.replace(h=h)
    return Model(cfg, tuple(path(l / L) for l in range(L)))


def lipschitz_estimate(path, n: int) -> float:
    """``n · max_k ‖θ((k+1)/n) − θ(k/n)‖₂`` over the grid of ``[0, 1]`` with ``n`` intervals.

    For a C¹ path it converges to ``max_t ‖θ'(t)‖`` as ``n`` grows (doubling ``n`` leaves it nearly
    unchanged); a jump of size ``J`` makes it ``≥ n·J`` (doubling ``n`` doubles it).
    """
    n = validation.positive_int("n", n)
    thetas = [path(k / n).to_vector() for k in range(n + 1)]
    return float(n * max(np.linalg.norm(b - a) for a, b in zip(thetas[:-1], thetas[1:])))
