"""A1 — timescale and causality of the block-causal slow path.

Statement: the slow input ``Slow_l(X)`` seen by token ``t`` is constant within each block (it
changes only at block boundaries, once per ``P`` tokens), and with ``slow_mask="blockcausal"`` and a
causal fast mask the stack is autoregressive: ``out_t`` does not depend on ``X_s`` for any
``s > t``, for any weights and any gate ``g ≠ 0``.

Checked by: perturbing one input token at a time by an O(1) random row and recording
``dep[t, s] = max |Δ out_t|``. The future part (``s > t``) must be exactly zero — bitwise, because
masked entries are exact zeros in every product — so the tolerance is 0. The past part must be
non-zero (otherwise the check is vacuous). Negative control: ``slow_mask="full"`` (v1's variant)
makes block ``b`` see blocks after ``b−1`` through the shifted slow output, so some ``out_t``
depends on a later token; a non-causal fast mask (``block_bidirectional``) leaks within blocks.
"""

from __future__ import annotations

import numpy as np

import numerics as nm

from . import CheckResult

DEFAULTS = {
    "T": 16, "P": 4, "d": 4, "L": 3,
    "mask": "causal", "slow_mask": "blockcausal",
    "gate": 0.7, "scale": 1.0, "slow_scale": 1.0, "perturbation": 1.0,
}

LIMITS = {"T": (1, 256), "P": (1, 256), "d": (1, 64), "L": (1, 64), "gate": (-1e3, 1e3),
          "scale": (0.0, 1e3), "slow_scale": (0.0, 1e3), "perturbation": (1e-8, 1e3)}

CAUSAL_FAST_MASKS = ("causal", "block_causal")


def dependence_matrix(model: nm.Model, X0: np.ndarray, rng: np.random.Generator,
                      size: float = 1.0) -> np.ndarray:
    """``dep[t, s] = max_j |out_t(X0 + δ e_s) − out_t(X0)|_j`` for one random row ``δ`` per ``s``."""
    base = nm.stack(model, X0)
    T = X0.shape[0]
    dep = np.zeros((T, T))
    for s in range(T):
        X = X0.copy()
        X[s] += size * rng.standard_normal(X0.shape[1])
        dep[:, s] = np.abs(nm.stack(model, X) - base).max(axis=1)
    return dep


def build_instance(params: dict, seed: int):
    """The model (non-zero gates), input and perturbation stream of one A1 instance."""
    p = params
    w_seed, x_seed, d_seed, g_seed = np.random.SeedSequence(seed).spawn(4)
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], slow_mask=p["slow_mask"])
    model = nm.init_model(cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"])
    # a different non-zero gate per layer, of magnitude ~ gate
    gates = p["gate"] * (1.0 + 0.5 * np.random.default_rng(g_seed).uniform(-1, 1, p["L"]))
    model = model.with_gates(gates)
    X0 = np.random.default_rng(x_seed).standard_normal((cfg.T, cfg.d))
    return model, X0, np.random.default_rng(d_seed)


def check(params: dict, seed: int) -> CheckResult:
    p = params
    model, X0, perturb_rng = build_instance(p, seed)
    cfg = model.config
    gates = np.array([lp.g for lp in model.layers])
    dep = dependence_matrix(model, X0, perturb_rng, p["perturbation"])
    future = np.triu(dep, k=1)
    past = np.tril(dep)
    leaks = np.argwhere(future > 0)

    # the slow input of each layer along the trajectory is constant within every block
    traj = nm.stack_trajectory(model, X0)
    within = 0.0
    for l, lp in enumerate(model.layers):
        S = nm.slow_path(cfg, lp, traj[l]).reshape(cfg.N, cfg.P, cfg.d)
        within = max(within, float(np.abs(S - S[:, :1]).max()))
        first_block = float(np.abs(S[0]).max())

    hypotheses = p["slow_mask"] == "blockcausal" and p["mask"] in CAUSAL_FAST_MASKS \
        and bool(np.all(gates != 0))
    holds = bool(future.max() == 0.0 and within == 0.0 and past.max() > 0.0)
    figures = {
        "max_future_dependence": float(future.max()),
        "future_pairs_with_dependence": int(len(leaks)),
        "min_past_diagonal_dependence": float(np.diag(dep).min()),
        "max_past_dependence": float(past.max()),
        "slow_input_within_block_variation": within,
        "slow_input_first_block_max": first_block,
        "slow_updates_per_token": 1.0 / cfg.P,
    }
    if len(leaks):
        t, s = leaks[np.lexsort((leaks[:, 1], leaks[:, 0]))][0]
        figures["first_leak"] = {"output_token": int(t), "later_input_token": int(s),
                                 "dependence": float(dep[t, s])}
        figures["leaking_output_tokens"] = sorted({int(t) for t, _ in leaks})
    return CheckResult(
        id="A1", holds=holds, hypotheses_hold=hypotheses, figures=figures, params=dict(p),
        seed=seed, tolerance={"future_dependence_abs": 0.0, "within_block_variation_abs": 0.0},
        notes=["dependence measured by O(1) perturbations of one input token at a time; "
               "future entries must vanish exactly (bitwise)"],
    )
