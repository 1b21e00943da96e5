"""E1's check of the hand-written gradients that train every run, against central differences of
the loss itself (a conclusion part: a wrong gradient trains a different model)."""

from __future__ import annotations

import numpy as np

from fastslow.numerics.lm.network import Network
from fastslow.numerics.lm.params import gate_names, init_params

from ...verdict import Diagnostic, at_most
from .runs import lm_config

GRAD_STEP = 1e-4
"""Step of the central differences of :func:`gradient_check` (on O(1) unit directions)."""
GRAD_TOL = 1e-7
"""``|fd − ⟨∇, u⟩| ≤ GRAD_TOL·max(‖∇‖₂, 1e-3)`` per parameter array: Richardson-extrapolated central
differences ``(4D(δ/2) − D(δ))/3`` err by ``O(δ⁴) + O(u·|loss|/δ)`` ≈ 4e-12 absolute, at most
4e-9 relative to the ``1e-3`` floor (measured: 3e-9 on a short-profile gate, 3e-10 at the paper
size); a wrong sign or a dropped term in any gradient is ``O(1)`` relative."""
GRAD_GATES = (0.0, 0.5)
"""The gate values the gradients are checked at: closed (where the runs start) and open (every
slow gradient non-zero)."""


def gradient_check(inst) -> Diagnostic:
    """The hand-written gradients that train every run (:meth:`numerics.lm.network.Network.
    loss_and_grad`) against central differences of the loss itself, at the coupled model's initial
    weights (the instance's size and selection seed) with every gate at each of
    :data:`GRAD_GATES`, on two training windows: for each parameter array (embedding, head, each
    layer's weights and gate) the directional derivative along one seeded random unit direction.
    The value is the largest ``|fd − ⟨∇, u⟩| / max(‖∇‖₂, 1e-3)`` (:data:`GRAD_TOL`). Caveat: it
    checks the derivative of the forward pass as written, not the forward pass (the other parts
    and the negative control speak for that)."""
    cfg = lm_config(inst.p, "coupled")
    rng = np.random.default_rng(np.random.SeedSequence(inst.seed, spawn_key=(10,)))
    starts = rng.integers(0, inst.corpus.train.size - cfg.T - 1, 2)
    windows = np.stack([inst.corpus.train[s : s + cfg.T + 1] for s in starts]).astype(np.int64)
    net = Network(cfg)
    base = init_params(cfg, np.random.SeedSequence(inst.selection_seed, spawn_key=(0,)))
    worst: dict = {}
    for g in GRAD_GATES:
        params = {k: np.array(v, dtype=float, copy=True) for k, v in base.items()}
        for name in gate_names(cfg):
            params[name] = np.array(g)
        _, grads = net.loss_and_grad(params, windows)
        for name, arr in params.items():
            u = rng.standard_normal(arr.shape)
            u /= max(float(np.linalg.norm(u)), 1e-300)

            def loss_at(h, name=name, u=u):
                q = dict(params)
                q[name] = params[name] + h * u
                return net.loss(q, windows)

            def D(h):
                return (loss_at(h) - loss_at(-h)) / (2 * h)

            fd = (4 * D(GRAD_STEP / 2) - D(GRAD_STEP)) / 3
            an = np.asarray(grads[name], dtype=float)
            err = abs(fd - float(np.vdot(an, u))) / max(float(np.linalg.norm(an)), 1e-3)
            key = f"{name} @ g={g:g}"
            worst[key] = float(err)
    top = max(worst, key=worst.__getitem__)
    return at_most(
        worst[top],
        GRAD_TOL,
        f"max over parameter arrays and gates {GRAD_GATES} of |fd − ⟨∇, u⟩| / max(‖∇‖, 1e-3) ≤ "
        f"{GRAD_TOL:g} (Richardson central differences, step {GRAD_STEP:g}, one random unit "
        f"direction per array; largest at {top})",
    )
