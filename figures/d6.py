"""D6 figures: the visibility spectrum by parameter block (homogeneous vs heterogeneous reference)
and the second-order response of the block mean to E_d forcing."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from figures import figure
from numerics.analysis.visibility import BLOCKS, block_spectra, visibility_map
from verify.checks.d6 import CLAIM, Instance
from verify.claim import Verdict
from verify.registry import run_check

DEFAULTS = CLAIM.defaults()

FLOOR = 1e-18
REFERENCES = ("homogeneous", "heterogeneous")
SECOND_ORDER_CHECKS = ({}, {"reference": "heterogeneous"})
"""The D6 checks of the second-order figure (overrides of the defaults): homogeneous, heterogeneous."""


def d6_spectrum_case(seed: int, reference: str) -> dict:
    """The singular values of the visibility map, by parameter block, for one reference state (the
    E_d blocks' singular values do not depend on LAPACK's choice of basis of ker Lᵀ)."""
    inst = Instance(CLAIM.resolve({"reference": reference}), seed)
    spectra = block_spectra(visibility_map(inst.model, inst.X0, inst.E))
    return {b: np.asarray(s).tolist() for b, s in spectra.items()}


@figure(
    "D6",
    "d6_visibility_spectrum",
    compute=d6_spectrum_case,
    points=lambda seed: [dict(seed=seed, reference=r) for r in REFERENCES],
)
def d6_visibility_spectrum(data: list, seed: int):
    params = dict(DEFAULTS)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8), sharey=True, constrained_layout=True)
    for ax, reference, case in zip(axes, REFERENCES, data):
        p = dict(params, reference=reference)
        spectra = {b: np.asarray(s, dtype=float) for b, s in case.items()}
        top = max(s.max() for s in spectra.values() if s.size)
        for i, b in enumerate(BLOCKS):
            s = spectra[b]
            if not s.size:
                continue
            vis = np.maximum(s, FLOOR)
            x = i + np.linspace(-0.25, 0.25, len(vis))
            ax.scatter(x, vis, s=10, color=np.where(s > 1e-9 * top, "C0", "C3"))
        ax.axhline(1e-9 * top, color="0.5", lw=0.8, ls="--", label="rank threshold")
        ax.set_yscale("log")
        ax.set_ylim(FLOOR / 3, 30 * top)
        ax.set_xticks(range(len(BLOCKS)))
        ax.set_xticklabels(BLOCKS, rotation=60, fontsize=7)
        ax.set_title(
            f"{reference} reference ({p['mask']}): singular values of δ(LᵀX_L)", fontsize=8
        )
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel(f"singular value (exact zeros drawn at {FLOOR:g})")
    return fig, dict(params, seed=seed)


def d6_check(seed: int, overrides: dict) -> dict:
    """The D6 check (block-mean response to E_d forcing) for one reference state."""
    return run_check("D6", overrides, seed=seed).to_json()


@figure(
    "D6",
    "d6_second_order",
    compute=d6_check,
    points=lambda seed: [dict(seed=seed, overrides=ov) for ov in SECOND_ORDER_CHECKS],
)
def d6_second_order(data: list, seed: int):
    fig, ax = plt.subplots(figsize=(5.5, 3.8), constrained_layout=True)
    res, het = (Verdict.from_json(case) for case in data)
    s = np.array(res.figures["perturbation_sizes"])
    for i, kind in enumerate(("X0_Ed", "E_Ed", "F_Ed")):
        fit = res.figures["Ed_second_order_slopes"][kind]
        ax.loglog(
            s,
            res.figures["Ed_persistent_changes"][kind],
            "o-",
            color=f"C{i}",
            ms=3,
            label=f"{kind}, homogeneous: slope {fit['slope']:.3f}",
        )
        fit_h = het.figures["Ed_second_order_slopes"][kind]
        ax.loglog(
            s,
            het.figures["Ed_persistent_changes"][kind],
            "x--",
            color=f"C{i}",
            ms=3,
            label=f"{kind}, heterogeneous: slope {fit_h['slope']:.3f}",
        )
    ax.set_xlabel("perturbation size s (forcing in E_d)")
    ax.set_ylabel("‖Lᵀ X_L(s) − Lᵀ X_L(0)‖  (block means)")
    ax.legend(fontsize=6)
    ax.set_title("block_bidirectional: the block mean moves at second order", fontsize=8)
    return fig, dict(DEFAULTS, seed=seed)
