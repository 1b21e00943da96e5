"""E1's check of the optimiser that trains every run: the trainer's own first steps against
AdamW, its learning-rate schedule and its clipping written from their published rules (a
conclusion part: a misplaced bias correction trains a different model, and no loss shows it)."""

from __future__ import annotations

import math

import numpy as np

from fastslow.numerics.lm.network import Network
from fastslow.numerics.lm.params import gate_names, init_params
from fastslow.numerics.lm.train import step_windows, train

from ...reference.optim import adam_init, adamw_step
from ...verdict import Diagnostic
from .runs import Instance

OPTIM_STEPS = 6
"""Steps of the trainer replayed: the bias corrections ``1 − βᵗ`` differ at every step, and on
the short profile (40 steps, 2 of warm-up) they span the warm-up and the start of the decay."""
OPTIM_REL = 1e-12
"""Largest relative deviation allowed, per parameter array and step, and of each step's learning
rate: the two sides compute the same arithmetic in another order (measured about 1e-15); a wrong
step count in a bias correction, a β swapped, the decay on a vector or clipping by another norm
are relative changes of order 1e-3 or more."""


def reference_rate(step: int, lr: float, warmup: int, steps: int, final: float) -> float:
    """The learning rate of step ``step`` (0-based) of a linear warm-up over ``warmup`` steps to
    ``lr``, then a half cosine from ``lr`` to ``final·lr`` at the last step (written from the
    schedule E1's design states, apart from :func:`numerics.lm.optim.learning_rate`)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - 1 - warmup))
    return lr * final + lr * (1.0 - final) * (1.0 + math.cos(math.pi * progress)) / 2.0


def optimiser_check(inst: Instance) -> Diagnostic:
    """``optimiser_matches_reference``: :func:`numerics.lm.train.train` of a coupled run at the
    instance's settings (its size, batch, learning rate grid's first rate, the trainer's AdamW
    hyper-parameters) stopped after :data:`OPTIM_STEPS` steps, against a replay from the same
    initial weights on the same windows with :func:`verify.reference.optim.adamw_step` (decay on
    the matrices only), :func:`reference_rate` and the global-norm clipping ``min(1, c/‖∇‖₂)``,
    each gradient taken at the replay's own iterate. The value is the largest relative deviation
    of any parameter array after the replayed steps, and of any step's rate over the whole
    schedule (``max |rate − reference| / lr``). Caveat: the gradients are the network's own (their
    check is ``gradients_match_finite_differences``)."""
    spec = inst.spec("coupled", inst.selection_seed, float(inst.p["lr_grid"][0]))
    cfg = spec.cfg
    _, got = train(spec, inst.corpus, stop_after=OPTIM_STEPS)
    net = Network(cfg)
    ref = init_params(cfg, np.random.SeedSequence(spec.seed, spawn_key=(0,)))
    frozen = set() if cfg.gates_trained else set(gate_names(cfg))
    trained = [n for n in ref if n not in frozen]
    states = {n: adam_init(ref[n]) for n in trained}
    sch = spec.schedule()
    warmup, total = sch.warmup, spec.steps
    rate_dev = max(
        abs(r - reference_rate(s, spec.lr, warmup, total, spec.final_lr)) / spec.lr
        for s, r in enumerate(sch.rates())
    )
    for s in range(min(OPTIM_STEPS, total)):
        _, grads = net.loss_and_grad(ref, step_windows(spec, inst.corpus, s))
        norm = math.sqrt(sum(float(np.sum(np.square(grads[n]))) for n in trained))
        scale = min(1.0, spec.clip / norm) if norm > 0 else 1.0
        lr = reference_rate(s, spec.lr, warmup, total, spec.final_lr)
        for n in trained:
            ref[n] = adamw_step(
                ref[n],
                grads[n] * scale,
                states[n],
                lr,
                beta1=spec.betas[0],
                beta2=spec.betas[1],
                eps=spec.eps,
                weight_decay=spec.weight_decay if np.ndim(ref[n]) == 2 else 0.0,
            )
    param_dev = max(
        float(np.max(np.abs(got[n] - ref[n])) / max(float(np.max(np.abs(ref[n]))), 1e-300))
        for n in ref
    )
    worst = max(param_dev, rate_dev)
    return Diagnostic(
        bool(worst <= OPTIM_REL),
        worst,
        f"largest relative deviation of the trainer's parameters after {OPTIM_STEPS} steps from "
        f"AdamW, its schedule and clipping written from their rules, and of any step's rate "
        f"(of {total}): ≤ {OPTIM_REL:g}",
    )
