"""D6 figures: the visibility spectrum by parameter block (homogeneous vs heterogeneous reference)
and the second-order response of the block mean to E_d forcing."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.registry import get_claim, run_check
from fastslow.verify.verdict import Verdict

DEFAULTS = get_claim("D6").defaults()
"""The D6 unit's defaults: both panels are the default instance with one reference state."""
FLOOR = 1e-18
"""Exact zeros of the spectrum are drawn at this value on the log axis."""
REFERENCES = ("homogeneous", "heterogeneous")
"""The reference states, one D6 check each."""


def d6_case(seed: int, reference: str) -> dict:
    """The D6 check for one reference state: its verdict, with the visibility spectra by block as
    series (the E_d blocks' singular values do not depend on LAPACK's choice of basis of ker Lᵀ)."""
    return run_check("D6", {"reference": reference}, seed=seed).to_json()


def by_reference(seed: int) -> list[dict]:
    """One D6 check per reference state (homogeneous, heterogeneous)."""
    return [dict(seed=seed, reference=r) for r in REFERENCES]


@figure(
    "D6",
    "d6_visibility_spectrum",
    compute=d6_case,
    points=by_reference,
    no_system="drawn for the built-in instance's two reference states; no form for a user flow yet",
)
def d6_visibility_spectrum(data: list, seed: int):
    params = dict(DEFAULTS)
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8), sharey=True, constrained_layout=True)
    for ax, reference, case in zip(axes, REFERENCES, data):
        p = dict(params, reference=reference)
        series = Verdict.from_json(case).series["visibility_spectra"]
        spectra = {b: np.asarray(s, dtype=float) for b, s in series.items()}
        blocks = list(spectra)  # every block of the map, in the check's order
        top = max(s.max() for s in spectra.values() if s.size)
        for i, b in enumerate(blocks):
            s = spectra[b]
            if not s.size:
                continue
            vis = np.maximum(s, FLOOR)
            x = i + np.linspace(-0.25, 0.25, len(vis))
            ax.scatter(x, vis, s=10, color=np.where(s > 1e-9 * top, "C0", "C3"))
        ax.axhline(1e-9 * top, color="0.5", lw=0.8, ls="--", label="rank threshold")
        ax.set_yscale("log")
        ax.set_ylim(FLOOR / 3, 30 * top)
        ax.set_xticks(range(len(blocks)))
        ax.set_xticklabels(blocks, rotation=60, fontsize=7)
        ax.set_title(
            f"{reference} reference ({p['mask']}): singular values of δ(LᵀX_L)", fontsize=8
        )
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel(f"singular value (exact zeros drawn at {FLOOR:g})")
    return fig, dict(params, seed=seed)


@figure(
    "D6",
    "d6_second_order",
    compute=d6_case,
    points=by_reference,
    no_system="drawn for the built-in instance's two reference states; no form for a user flow yet",
)
def d6_second_order(data: list, seed: int):
    fig, ax = plt.subplots(figsize=(5.5, 3.8), constrained_layout=True)
    res, het = (Verdict.from_json(case) for case in data)
    s = np.array(res.figures["perturbation_sizes"])
    for i, kind in enumerate(("X0_Ed", "E_Ed", "F_Ed")):
        for verdict, style, reference in (
            (res, "o-", "homogeneous"),
            (het, "x--", "heterogeneous"),
        ):
            fit = verdict.figures["Ed_second_order_slopes"][kind]
            ax.loglog(
                s,
                verdict.figures["Ed_persistent_changes"][kind],
                style,
                color=f"C{i}",
                ms=3,
                label=f"{kind}, {reference}: slope {fit['slope']:.3f}",
            )
    ax.set_xlabel("perturbation size s (forcing in E_d)")
    ax.set_ylabel("‖Lᵀ X_L(s) − Lᵀ X_L(0)‖  (block means)")
    ax.legend(fontsize=6)
    ax.set_title("block_bidirectional: the block mean moves at second order", fontsize=8)
    return fig, dict(DEFAULTS, seed=seed)
