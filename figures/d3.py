"""D3 figure: deviation of the attention matrix from K_mask along depth, homogeneous vs
heterogeneous inputs and with the slow path open."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, instance_values, verdict_json, verdict_points
from fastslow.verify.registry import get_claim
from fastslow.verify.verdict import Verdict

PARAMS = dict(get_claim("D3").defaults(), L=8)
"""The D3 defaults, with a deeper stack."""
CASES: tuple[tuple[str, dict], ...] = (
    ("homogeneous, g = 0", {}),
    ("homogeneous, slow path g = 0.5", {"slow": True, "gate": 0.5}),
    ("heterogeneity 1e-3", {"heterogeneity": 1e-3}),
    ("heterogeneity 0.5", {"heterogeneity": 0.5}),
)
"""The curves: (label, overrides of PARAMS), one sweep point each. On your own ``DepthFlow`` the
curves are those whose overrides the flow does not set (the heterogeneity), on the flow's own
mask, depth and gate."""


def curve_label(res: Verdict) -> str:
    """A curve's label from its verdict: the input's heterogeneity and the slow path's gate."""
    p = instance_values(res)
    het = p.get("heterogeneity", 0.0)
    label = "homogeneous" if het == 0 else f"heterogeneity {het:g}"
    gate = p.get("gate", 0.0)
    return f"{label}, g = {gate:g}" if p.get("slow", True) and gate else f"{label}, g = 0"


@figure(
    "D3",
    "d3_frozen_kernel",
    compute=verdict_json,
    points=verdict_points("D3", [dict(PARAMS, **ov) for _, ov in CASES]),
)
def d3_frozen_kernel(data: list, seed: int):
    fig, ax = plt.subplots(constrained_layout=True)
    results = [Verdict.from_json(case) for case in data]
    user = results[0].system is not None
    labels = [curve_label(r) for r in results] if user else [label for label, _ in CASES]
    for label, res in zip(labels, results):
        dev = np.maximum(np.array(res.figures["kernel_deviation_by_layer"]), 1e-18)
        ax.semilogy(np.arange(len(dev)), dev, "o-", ms=3, label=label)
    ax.axhline(res.tolerance["kernel_abs"], color="k", ls=":", lw=0.8, label="tolerance")
    ax.set_xlabel("layer l")
    ax.set_ylabel("max |A_l(X_l) − K_mask|  (floor 1e-18 = exact)")
    p = instance_values(results[0])
    mask = f"user {p['T']}×{p['T']}" if isinstance(p["mask"], list) else p["mask"]
    ax.set_title(
        f"D3: the kernel is frozen on homogeneous states ({mask} mask, T={p['T']})", fontsize=9
    )
    ax.legend(fontsize=7)
    return fig, dict(results[0].params if user else PARAMS, seed=seed)
