"""D5 figures: mode ratios ‖D_λ‖/σ_min(D_1) against depth per eigenvalue with L* marked, and the
relative within-block fluctuation of the output against depth (measured vs the bound)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import numerics as nm
from figures import figure
from numerics import lapack
from numerics.analysis import linearised as lin
from verify.claim import Verdict
from verify.registry import get_claim, run_check

DEFAULTS = get_claim("D5").defaults()
"""The D5 unit's defaults: every panel is a D5 instance with one mask and length changed."""

MODE_CASES = (("block_causal", 16), ("block_bidirectional", 16), ("causal", 8))
FLUCTUATION_CASES = (("block_causal", 16), ("block_bidirectional", 16))


def _mode_ratios(params: dict, seed: int):
    """Per-eigenvalue ratios ‖D_λ‖₂/σ_min(D_1) at depths 1…L for the D5 instance of ``seed``."""
    w_seed, x_seed, _, _ = np.random.SeedSequence(seed).spawn(4)
    model = nm.init_model(
        nm.ModelConfig.from_params(params),
        params["L"],
        w_seed,
        scale=params["scale"],
        value_gain=params["value_gain"],
    ).with_gates(0.0)
    cfg = model.config
    x0 = np.random.default_rng(x_seed).standard_normal(cfg.d)
    xs = lin.homogeneous_trajectory(model, x0)
    N, M = lin.layer_factors(model, xs)
    lams = lin.distinct_eigenvalues(cfg.mask_name, cfg.T, cfg.P)
    D = lin.mode_products(N, M, lams, all_depths=True)
    s = lapack.svdvals(D)
    return lams, s[:, 1:, 0] / s[:, :1, -1]


def mode_ratio_case(seed: int, mask: str, T: int) -> dict:
    """The D5 check and the per-eigenvalue mode ratios for one mask and length."""
    res = run_check("D5", {"mask": mask, "T": T}, seed=seed)
    lams, ratios = _mode_ratios(res.params, seed)
    return {"check": res.to_json(), "lams": np.asarray(lams).tolist(), "ratios": ratios.tolist()}


def fluctuation_case(seed: int, mask: str, T: int) -> dict:
    """The D5 check (no brute-force reference) for one mask and length."""
    return run_check("D5", {"mask": mask, "T": T, "brute_max_Td": 0}, seed=seed).to_json()


@figure(
    "D5",
    "d5_mode_ratios",
    compute=mode_ratio_case,
    points=lambda seed: [dict(seed=seed, mask=m, T=T) for m, T in MODE_CASES],
)
def d5_mode_ratios(data: list, seed: int):
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4), constrained_layout=True, sharey=True)
    for ax, (mask, T), case in zip(axes, MODE_CASES, data):
        res = Verdict.from_json(case["check"])
        lams, ratios = case["lams"], np.asarray(case["ratios"])
        depth = np.arange(1, ratios.shape[0] + 1)
        for k, lam in enumerate(lams[1:]):
            ax.semilogy(depth, ratios[:, k], lw=1, label=f"λ = {lam:.3g}")
        ax.semilogy(depth, res.figures["r_by_depth"], "k--", lw=1.2, label="r(L)")
        ax.axhline(res.params["tau"], color="grey", ls=":", lw=0.8, label="τ")
        Ls = res.figures["L_star"]
        if np.isfinite(Ls):
            ax.axvline(Ls, color="r", lw=0.8, label=f"L* = {int(Ls)}")
        ax.set_title(f"{mask} (T={T}), c_K={res.figures['kernel_constant']:.3g}", fontsize=8)
        ax.set_xlabel("depth L")
        ax.legend(fontsize=6, ncol=2)
    axes[0].set_ylabel("‖D_λ‖₂ / σ_min(D_1)")
    return fig, {"params": dict(DEFAULTS), "cases": [list(c) for c in MODE_CASES], "seed": seed}


@figure(
    "D5",
    "d5_within_block_fluctuation",
    compute=fluctuation_case,
    points=lambda seed: [dict(seed=seed, mask=m, T=T) for m, T in FLUCTUATION_CASES],
)
def d5_within_block_fluctuation(data: list, seed: int):
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.4), constrained_layout=True, sharey=True)
    for ax, (mask, T), case in zip(axes, FLUCTUATION_CASES, data):
        res = Verdict.from_json(case)
        f = res.figures
        depth = np.arange(1, len(f["within_block_fluctuation_by_depth"]) + 1)
        lin_f = np.array(f["within_block_fluctuation_by_depth"])
        ax.semilogy(depth[lin_f > 0], lin_f[lin_f > 0], "o-", ms=2.5, label="linearised")
        ax.semilogy(
            depth,
            f["within_block_fluctuation_nonlinear_by_depth"],
            "x",
            ms=4,
            label="nonlinear stack (central differences)",
        )
        ax.semilogy(
            depth,
            f["within_block_fluctuation_bound_by_depth"],
            "k--",
            lw=1,
            label="bound c_K r(L) σ_min(D_1)‖δX_0‖/‖δX_L‖",
        )
        ax.axhline(np.finfo(float).eps, color="grey", ls=":", lw=0.8, label="float64 eps")
        ax.axhline(
            res.params["eta"] * 1e-4,
            color="orange",
            ls=":",
            lw=0.8,
            label="~ finite-difference floor",
        )
        if np.isfinite(f["L_star"]):
            ax.axvline(f["L_star"], color="r", lw=0.8, label=f"L* = {int(f['L_star'])}")
        ax.set_title(f"{mask} (T={T}, P={res.params['P']})", fontsize=8)
        ax.set_xlabel("depth L")
        ax.legend(fontsize=6)
    axes[0].set_ylabel("‖(I − UB) δX_L‖ / ‖δX_L‖")
    return fig, {
        "params": dict(DEFAULTS),
        "cases": [list(c) for c in FLUCTUATION_CASES],
        "seed": seed,
    }
