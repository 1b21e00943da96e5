"""Hypothesis diagnostics shared by several claims, computed from an instance alone."""

from __future__ import annotations

import numpy as np

from .claim import Diagnostic


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
