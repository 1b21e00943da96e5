"""D5 figures: mode ratios ‖D_λ‖/σ_min(D_1) against depth per eigenvalue with L* marked, and the
relative within-block fluctuation of the output against depth (measured vs the bound)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.registry import get_claim, run_check
from fastslow.verify.verdict import Verdict

DEFAULTS = get_claim("D5").defaults()
"""The D5 unit's defaults: every panel is a D5 instance with one mask and length changed."""

MODE_CASES = (("block_causal", 16), ("block_bidirectional", 16), ("causal", 8))
"""(mask, T) of the mode-ratio panels: the full D5 check."""
FLUCTUATION_CASES = (("block_causal", 16), ("block_bidirectional", 16))
"""(mask, T) of the fluctuation panels: the D5 check without the brute-force reference."""


def d5_case(seed: int, mask: str, T: int, brute_max_Td: int | None = None) -> dict:
    """The D5 check for one mask and length (its verdict, with the mode-ratio series)."""
    brute = {} if brute_max_Td is None else {"brute_max_Td": brute_max_Td}
    return run_check("D5", {"mask": mask, "T": T, **brute}, seed=seed).to_json()


def panels(cases, **params):
    """The sweep points of one D5 check per (mask, T) in ``cases``, with ``params``."""
    return lambda seed: [dict(seed=seed, mask=m, T=T, **params) for m, T in cases]


@figure(
    "D5",
    "d5_mode_ratios",
    compute=d5_case,
    points=panels(MODE_CASES),
    no_system="its panels are built-in (mask, T) cases; no form for a user flow yet",
)
def d5_mode_ratios(data: list, seed: int):
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4), constrained_layout=True, sharey=True)
    for ax, (mask, T), case in zip(axes, MODE_CASES, data):
        res = Verdict.from_json(case)
        lams, ratios = res.series["lams"], np.asarray(res.series["mode_ratios"])
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
    compute=d5_case,
    points=panels(FLUCTUATION_CASES, brute_max_Td=0),
    no_system="its panels are built-in (mask, T) cases; no form for a user flow yet",
)
def d5_within_block_fluctuation(data: list, seed: int):
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.4), constrained_layout=True, sharey=True)
    for ax, (mask, T), res in zip(axes, FLUCTUATION_CASES, map(Verdict.from_json, data)):
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
