"""Hypothesis diagnostics shared by several claims, computed from an instance alone."""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.layer import mlp_preactivations

from .verdict import Diagnostic


def homogeneous_reference(cfg, layers, X0, E=None) -> dict:
    """The hypotheses of the frozen-kernel claims (D3, D4), read off the instance:

    * ``state_token_homogeneous``: every row of ``X0`` is the same (bitwise);
    * ``injection_homogeneous``: the injection ``γ(E − X)`` keeps that so (``γ = 0`` or ``E``
      homogeneous; ``E`` defaults to ``X0``);
    * ``slow_path_closed``: every gate of a layer with a slow path is 0 (``U_c`` gives block 1 no
      slow input, so an open gate breaks homogeneity).
    """
    spread = float(np.abs(X0 - X0[:1]).max())
    E = X0 if E is None else E
    inj = float(cfg.gamma * np.abs(E - E[:1]).max())
    gates = np.array([lp.g for lp in layers], dtype=float)
    open_gate = float(np.abs(gates).max()) if cfg.slow else 0.0
    return {
        "state_token_homogeneous": Diagnostic(
            spread == 0.0, spread, "max_t max|X_t − X_1| = 0 (bitwise)"
        ),
        "injection_homogeneous": Diagnostic(inj == 0.0, inj, "γ · max_t max|E_t − E_1| = 0"),
        "slow_path_closed": Diagnostic(
            open_gate == 0.0, open_gate, "max_l |g_l| over layers with a slow path = 0"
        ),
    }


SIGMA_SMOOTH_RULE = (
    "σ is smooth where the oracle differences it: tanh, gelu and identity everywhere; relu when no "
    "MLP pre-activation n(X_l)W1_l is 0 or changes sign between the points of the difference "
    "stencil"
)
"""The statement of the hypothesis :func:`sigma_smooth_where_differenced` decides."""


def sigma_smooth_where_differenced(model, X0, stencil, E=None, *, what: str) -> Diagnostic:
    """The hypothesis of a claim whose oracle differentiates ``σ`` (a finite difference, a
    Taylor test): ``σ`` is smooth where it is differenced.

    A smooth ``σ`` (tanh, gelu, identity: ``config.activation.smooth``) holds everywhere. For a
    non-smooth one (relu, C⁰ with a kink at 0) it holds when no MLP pre-activation ``n(X_l)W1_l``
    is 0 at the instance (``model``, ``X0``) or has another sign at any of the ``stencil`` points
    (``(model, X0)`` pairs: the outermost points of the differences; ``what`` says which), so the
    stack is smooth on the segments the differences span. The value is the number of such
    (point, entry) pairs. Caveat: an entry that crosses 0 and back between two stencil points is
    not seen (it needs a curvature of order 1/step²).
    """
    act = model.config.activation
    if act.smooth:
        return Diagnostic(True, 0, f"σ = {act.name} is smooth: every difference is of a smooth map")
    base = mlp_preactivations(model, X0, E)
    signs = np.sign(base)
    kinks = int(np.count_nonzero(base == 0.0))
    n = 0
    for m, X in stencil:
        kinks += int(np.count_nonzero(np.sign(mlp_preactivations(m, X, E)) != signs))
        n += 1
    return Diagnostic(
        kinks == 0,
        kinks,
        f"σ = {act.name} has a kink at 0: no MLP pre-activation n(X_l)W1_l is 0 or changes sign "
        f"between the instance and the {n} outermost points of {what}",
    )
