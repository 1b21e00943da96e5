"""Fixed points of a tied layer: ``X*`` with ``Φ(X*) = X*``.

A tied stack (every layer the same map ``Φ``) started at a fixed point stays there, so every layer
Jacobian along its trajectory is the same matrix ``J(X*)`` (claim D1's tied-weights statement).
:func:`tied_fixed_point` finds one by Newton's method on ``R(X) = Φ(X) − X`` with the dense layer
Jacobian of :func:`numerics.analysis.stability.layer_jacobian`, with a continuation in the
injection strength ``γ`` when plain Newton fails.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.analysis.stability import layer_jacobian
from fastslow.numerics.model.layer import layer
from fastslow.numerics.model.weights import LayerParams, ModelConfig

__all__ = ["RESIDUAL_TOL", "tied_fixed_point"]

RESIDUAL_TOL = 1e-14
"""Newton stops when ``max|Φ(X) − X| ≤ 1e-14·max(1, max|X|)``."""


def _newton(config, params, E, X, max_iter: int, damped: bool):
    """:func:`_newton_iterations`, or ``(None, nan)`` when a step cannot be computed."""
    try:
        return _newton_iterations(config, params, E, X, max_iter, damped)
    except (np.linalg.LinAlgError, FloatingPointError, ValueError):
        return None, float("nan")


def _newton_iterations(config, params, E, X, max_iter: int, damped: bool):
    """Newton's method on ``R(X) = Φ(X) − X`` from ``X`` (backtracking on ``‖R‖₂`` when
    ``damped``); ``(X*, max|R(X*)|)`` on convergence, else ``(None, max|R|)``."""
    n = X.size
    R = layer(config, params, X, E) - X
    for _ in range(max_iter):
        res = float(np.abs(R).max())
        if res <= RESIDUAL_TOL * max(1.0, float(np.abs(X).max())):
            return X, res
        step = np.linalg.solve(layer_jacobian(config, params, X, E) - np.eye(n), R.ravel())
        step = step.reshape(X.shape)
        merit, t = float(np.linalg.norm(R)), 1.0
        while True:  # backtracking on ‖R‖₂, for which the Newton step is a descent direction
            X_try = X - t * step
            R_try = layer(config, params, X_try, E) - X_try
            if not damped or np.linalg.norm(R_try) < merit or t < 1e-8:
                break
            t /= 2
        if not np.all(np.isfinite(R_try)):
            break
        X, R = X_try, R_try
    return None, float(np.abs(R).max())


def tied_fixed_point(
    config: ModelConfig,
    params: LayerParams,
    E: np.ndarray,
    X_init: np.ndarray,
    *,
    max_iter: int = 40,
) -> tuple[np.ndarray, float]:
    """``X*`` with ``Φ(X*) = X*`` by Newton's method on ``R(X) = Φ(X) − X`` (dense Jacobian).

    With the norm on and ``γ > 0`` a fixed point exists: ``X = E + (Attn + MLP + g·Slow)(X)/γ`` is a
    continuous map into a bounded set (Brouwer); without the norm none need exist. Plain Newton
    from ``X_init`` first; if it fails, continuation in ``γ``: from ``64γ`` (where the fixed point is
    ``E + O(1/γ)`` and the map is a contraction) down to ``γ`` in factors of 2, damped Newton at
    each stage from the previous solution. Returns ``(X*, max|Φ(X*) − X*|)``; raises
    ``RuntimeError`` if neither converges.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        X, res = _newton(config, params, E, X_init.copy(), max_iter, damped=False)
        if X is not None:
            return X, res
        X = E.copy()
        for k in range(6, -1, -1):
            cfg_k = config.replace(gamma=config.gamma * 2.0**k)
            X, res = _newton(cfg_k, params, E, X, max_iter, damped=True)
            if X is None:
                break
        if X is not None:
            return X, res
    raise RuntimeError(
        f"Newton's method found no fixed point of the tied layer (residual {res:.2e}); "
        "increase gamma, switch the norm on or reduce the weight scale"
    )
