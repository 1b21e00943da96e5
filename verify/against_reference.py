"""Conclusion parts that compare the implementation with the references written from the formulas
(:mod:`verify.reference`), with tolerances in units of round-off.

* :func:`layer_part`: the model computes the §1 layer: along a trajectory, each layer of the model
  and of the reference, applied to the *same* input, agree to :data:`LAYER_UNITS` units of
  round-off relative to ``max(1, max|Φ(X)|)`` (measured: below 1 unit on every mask, norm,
  nonlinearity and slow mask of ``tests/test_reference_layer.py``).
* :func:`jacobian_deviation` and :data:`JACOBIAN_UNITS`: a dense Jacobian of the implementation
  against the reference's complex-step Jacobian, in units of round-off relative to its largest
  entry (measured: below 2.1 units; D7's part ``jacobians_match_reference``).

A user nonlinearity has no formula to write down: the parts then hold and say they were not
evaluated.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.layer import stack_trajectory
from fastslow.numerics.model.weights import Model

from .measure import UNIT_ROUNDOFF
from .reference import layer as reference_layer
from .verdict import Diagnostic, at_most

LAYER_UNITS = 64
JACOBIAN_UNITS = 64


def not_evaluated(why: str) -> Diagnostic:
    return Diagnostic(True, why, why)


def layer_deviation(model: Model, X0: np.ndarray, E: np.ndarray | None = None) -> float:
    """``max_l max|Φ_l(X_l) − Φ_l^ref(X_l)| / (u·max(1, max|Φ_l^ref(X_l)|))`` along the model's
    trajectory from ``X0`` (``E`` defaults to ``X0``, as in :func:`numerics.model.layer.stack`)."""
    cfg = model.config
    s = reference_layer.setting_of(cfg)
    traj = stack_trajectory(model, X0, E)
    target = X0 if E is None else E
    worst = 0.0
    for l, p in enumerate(model.layers):
        w, g = reference_layer.weights_of(p)
        want = reference_layer.layer(s, w, g, traj[l], target)
        scale = UNIT_ROUNDOFF * max(1.0, float(np.abs(want).max()))
        worst = max(worst, float(np.abs(traj[l + 1] - want).max()) / scale)
    return worst


def layer_part(model: Model, X0: np.ndarray, E: np.ndarray | None = None) -> Diagnostic:
    """The part ``model_computes_reference_layer`` (module docstring)."""
    if not isinstance(model.config.sigma, str):
        return not_evaluated("not evaluated: a user nonlinearity has no reference formula")
    return at_most(
        layer_deviation(model, X0, E),
        LAYER_UNITS,
        f"max over layers of |Φ_l(X_l) − Φ_l^ref(X_l)| in units of u·max(1, |Φ_l^ref|) ≤ "
        f"{LAYER_UNITS} (reference written from the §1 formulas, β = 1/√d unless given)",
    )


def reference_layer_jacobian(cfg, params, X: np.ndarray, E: np.ndarray | None = None) -> np.ndarray:
    """``∂Φ/∂X`` of the reference layer at ``X`` (``E`` held fixed, default ``X``)."""
    s = reference_layer.setting_of(cfg)
    w, g = reference_layer.weights_of(params)
    target = X if E is None else E
    return reference_layer.jacobian(lambda Z: reference_layer.layer(s, w, g, Z, target), X)


def reference_slow_jacobian(cfg, params, X: np.ndarray) -> np.ndarray:
    """``∂Slow/∂X`` of the reference slow path at ``X`` (ungated, without ``h``)."""
    s = reference_layer.setting_of(cfg)
    w, _ = reference_layer.weights_of(params)
    return reference_layer.jacobian(lambda Z: reference_layer.slow_path(s, w, Z), X)


def jacobian_deviation(J: np.ndarray, J_ref: np.ndarray) -> float:
    """``max|J − J_ref| / (u·max(1e-300, max|J_ref|))``."""
    return float(np.abs(J - J_ref).max()) / (
        UNIT_ROUNDOFF * max(float(np.abs(J_ref).max()), 1e-300)
    )
