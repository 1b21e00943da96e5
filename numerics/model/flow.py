"""The continuous depth flow.

Two right-hand sides on ``t ∈ [0, 1]`` with parameters ``θ(t)``:

* ``form="layer"``: ``dX/dt = F(t, X)`` with ``F`` the layer increment of :mod:`numerics.model.layer`;
  the stack with ``h = 1/L`` is its forward-Euler discretisation (claim D2).
* ``form="coupling"``: ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)``, ``R_t = γ(E − X) + MLP_t + g·Slow_t``:
  attention with identity value map as a fast coupling on timescale ``ε`` (claims F1, F2).

``θ(t)`` comes from a :class:`~numerics.model.weights.Model` (piecewise constant on ``L`` intervals, the
untied stack: a non-autonomous flow with breakpoints at ``l/L``) or from any callable
``t ↦ LayerParams`` (smooth paths).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model import kernels
from fastslow.numerics.model.layer import check_state
from fastslow.numerics.model.weights import LayerParams, Model, ModelConfig

FORMS = ("layer", "coupling")

__all__ = ["FORMS", "coupling_rhs", "depth_rhs", "make_rhs"]


def coupling_rhs(config: ModelConfig, params: LayerParams, X, eps: float, E=None) -> np.ndarray:
    """``(1/ε)(A(X) − I)X + R(X)`` for one parameter set. ``ε > 0`` is required."""
    eps = validation.real("eps", eps, low=0.0, low_open=True)
    X = check_state(config, X)
    if not isinstance(params, LayerParams):
        raise TypeError(f"params must be LayerParams, got {type(params).__name__}")
    params.shapes_ok(config.d, int(config.m))  # type: ignore[arg-type]  # resolved in __post_init__
    E = check_state(config, E, "E") if E is not None else (X if config.gamma else None)
    return kernels.coupling(config, params, X, E, eps)


def make_rhs(
    theta,
    *,
    form: str = "layer",
    eps: float | None = None,
    E=None,
    config: ModelConfig | None = None,
) -> Callable[[float, np.ndarray], np.ndarray]:
    """Return ``f(t, X) -> dX/dt`` (arrays of shape (T, d)) for the depth flow.

    Args:
        theta: a :class:`Model` (piecewise-constant untied weights) or a callable
            ``t ↦ LayerParams`` (then ``config`` is required).
        form: ``"layer"`` or ``"coupling"``.
        eps: timescale ratio ``ε > 0``; required for ``form="coupling"``.
        E: injection target (T×d); required when ``γ > 0``.
    """
    validation.choice("form", form, FORMS)
    if isinstance(theta, Model):
        cfg = theta.config
        params_at = theta.params_at
    elif callable(theta):
        if not isinstance(config, ModelConfig):
            raise TypeError("a callable theta needs config=ModelConfig(...)")
        cfg, params_at = config, theta
    else:
        raise TypeError(
            f"theta must be a Model or a callable t -> LayerParams, got {type(theta).__name__}"
        )
    if form == "coupling":
        if eps is None:
            raise ValueError("form='coupling' needs eps > 0")
        eps = validation.real("eps", eps, low=0.0, low_open=True)
    if cfg.gamma:
        if E is None:
            raise ValueError("gamma > 0 needs the injection target E (T×d)")
        E = check_state(cfg, E, "E")

    if form == "layer":

        def f(t, X):
            return kernels.increment(cfg, params_at(t), X, E)
    else:

        def f(t, X):
            return kernels.coupling(cfg, params_at(t), X, E, eps)

    return f


def depth_rhs(
    theta,
    t: float,
    X,
    *,
    form: str = "layer",
    eps: float | None = None,
    E=None,
    config: ModelConfig | None = None,
) -> np.ndarray:
    """``dX/dt`` at one point ``(t, X)``; see :func:`make_rhs`."""
    t = validation.real("t", t)
    f = make_rhs(theta, form=form, eps=eps, E=E, config=config)
    cfg = theta.config if isinstance(theta, Model) else config
    if cfg is None:  # make_rhs has already rejected this; kept for the type checker
        raise TypeError("config is required when theta is not a Model")
    return f(t, check_state(cfg, X))
