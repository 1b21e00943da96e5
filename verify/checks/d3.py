"""D3 — the frozen kernel on token-homogeneous states.

Statement: on ``X = 1_T xᵀ`` every softmax attention returns ``K_mask`` (mask rows divided by their
counts), whatever ``Q, K``, the temperature ``β`` and the depth; the fast layer maps homogeneous
states to homogeneous states when ``γ = 0`` or ``E`` is homogeneous, so the whole stack runs the
single-token map ``x_{l+1} = x_l + h f_l(x_l)`` and every layer sees ``K_mask``.

Caveat (documented, tested): the slow path with ``U_c`` does **not** keep homogeneous states
homogeneous when ``g ≠ 0``: block 1 receives zero while every later block receives the slow output
of the previous block, so after one layer block 1 differs from the rest (and from then on the kernel
is no longer frozen).

Checked by: along the stack trajectory from ``1 x_0ᵀ``, the attention matrix of every layer against
``K_mask``; on each visited state, ``n_draws`` fresh ``(Q, K)`` at scale ``qk_scale`` and each
temperature in ``temperatures``; the states against ``1 x_lᵀ`` with ``x_l`` from the single-token
map (an independent computation). Everything in absolute units of ``tol``.
Negative controls: ``heterogeneity > 0`` (the kernel then depends on ``Q, K`` and ``β``);
``slow=True`` with ``gate ≠ 0`` (homogeneity lost after layer 1); heterogeneous ``E`` with ``γ > 0``.
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics import _validate as v
from numerics.linearised import homogeneous_trajectory

from . import CheckResult

DEFAULTS = {
    "T": 16, "P": 4, "d": 4, "L": 4, "mask": "causal",
    "scale": 1.0, "qk_scale": 3.0, "temperatures": (0.1, 1.0, 10.0), "n_draws": 3,
    "heterogeneity": 0.0, "slow": False, "gate": 0.0, "gamma": 0.0, "e_homogeneous": True,
    "tol": 1e-12,
}

LIMITS = {"T": (1, 256), "d": (1, 64), "L": (1, 64), "n_draws": (1, 20), "qk_scale": (0.0, 1e6),
          "scale": (0.0, 1e3), "temperatures": (1e-12, 1e6)}
"""Bounds that keep a user's instance small enough to finish in seconds."""


def _validate(p: dict) -> None:
    v.positive_int("L", p["L"])
    v.positive_int("n_draws", p["n_draws"])
    v.real("scale", p["scale"], low=0.0)
    v.real("qk_scale", p["qk_scale"], low=0.0)
    v.real("heterogeneity", p["heterogeneity"], low=0.0)
    v.real("gate", p["gate"])
    v.real("tol", p["tol"], low=0.0, low_open=True)
    if not p["temperatures"]:
        raise ValueError("temperatures must be a non-empty tuple of positive numbers")
    for b in p["temperatures"]:
        v.real("temperature", b, low=0.0, low_open=True)


def check(params: dict, seed: int) -> CheckResult:
    p = dict(params)
    _validate(p)
    w_seed, x_seed, qk_seed, e_seed = np.random.SeedSequence(seed).spawn(4)
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], slow=bool(p["slow"]),
                         gamma=p["gamma"])
    model = nm.init_model(cfg, p["L"], w_seed, scale=p["scale"], gate=p["gate"])
    rng = np.random.default_rng(x_seed)
    x0 = rng.standard_normal(cfg.d)
    X0 = np.ones((cfg.T, 1)) * x0 + p["heterogeneity"] * rng.standard_normal((cfg.T, cfg.d))
    erng = np.random.default_rng(e_seed)
    e = erng.standard_normal(cfg.d)
    E = np.ones((cfg.T, 1)) * e if p["e_homogeneous"] else erng.standard_normal((cfg.T, cfg.d))
    Kmask = nm.frozen_kernel(cfg.mask_array)

    traj = nm.stack_trajectory(model, X0, E)
    kernel_dev_depth = [float(np.abs(nm.attention_kernel(cfg, lp, traj[l]) - Kmask).max())
                        for l, lp in enumerate(model.layers)]

    # fresh Q, K and temperatures on every visited state
    qk_rng = np.random.default_rng(qk_seed)
    dev_qk, spread_qk = 0.0, 0.0
    for l in range(model.L):
        kernels = []
        for _ in range(p["n_draws"]):
            lp = nm.init_layer(cfg, qk_rng, scale=p["qk_scale"])
            for beta in p["temperatures"]:
                A = nm.attention_kernel(cfg.replace(beta=float(beta)), lp, traj[l])
                kernels.append(A)
                dev_qk = max(dev_qk, float(np.abs(A - Kmask).max()))
        spread_qk = max(spread_qk, max(float(np.abs(A - kernels[0]).max()) for A in kernels))

    scale_of = np.abs(traj).max(axis=(1, 2)) + 1e-300
    row_spread = [float(np.abs(traj[l] - traj[l][:1]).max() / scale_of[l])
                  for l in range(model.L + 1)]
    figures = {
        "max_kernel_deviation_along_depth": max(kernel_dev_depth),
        "kernel_deviation_by_layer": kernel_dev_depth,
        "max_kernel_deviation_fresh_qk_and_temperatures": dev_qk,
        "max_kernel_spread_between_qk_draws": spread_qk,
        "max_relative_row_spread": max(row_spread),
        "relative_row_spread_by_depth": row_spread,
    }
    gates_on = cfg.slow and p["gate"] != 0
    if not gates_on:
        xs = homogeneous_trajectory(model, x0, e)
        figures["max_relative_gap_to_single_token_map"] = float(
            np.abs(traj - xs[:, None, :]).max() / scale_of.max())
    else:
        X1 = traj[1].reshape(cfg.N, cfg.P, cfg.d)
        figures["slow_first_layer_within_block_spread"] = float(np.abs(X1 - X1[:, :1]).max())
        figures["slow_first_layer_block1_vs_block2"] = float(np.abs(X1[0, 0] - X1[min(1, cfg.N - 1), 0]).max())
    hypotheses = p["heterogeneity"] == 0 and not gates_on and (p["gamma"] == 0 or p["e_homogeneous"])
    tol = p["tol"]
    holds = (figures["max_kernel_deviation_along_depth"] <= tol and dev_qk <= tol
             and figures["max_relative_row_spread"] <= tol
             and figures.get("max_relative_gap_to_single_token_map", 0.0) <= tol)
    notes = ["kernel deviations are absolute (entries of K_mask are in [0, 1]); row spreads are "
             "relative to max|X_l|"]
    if gates_on:
        notes.append("slow path on with g ≠ 0: U_c gives block 1 zero, so after one layer block 1 "
                     "differs from the later blocks and the state is no longer homogeneous")
    return CheckResult(id="D3", holds=bool(holds), hypotheses_hold=bool(hypotheses), figures=figures,
                       params=p, seed=seed,
                       tolerance={"kernel_abs": tol, "row_spread_rel": tol,
                                  "single_token_gap_rel": tol},
                       notes=notes)
