"""A1 figure: which outputs depend on which inputs, block-causal vs full slow mask."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, instance_values, verdict_json, verdict_points
from fastslow.verify.verdict import Verdict

SLOW_MASKS = ("blockcausal", "full")


@figure(
    "A1",
    "a1_dependence",
    compute=verdict_json,
    points=verdict_points("A1", [{"slow_mask": m} for m in SLOW_MASKS]),
)
def a1_dependence(data: list, seed: int):
    """One panel per slow mask (the built-in pair; a user flow's own slow mask alone)."""
    results = [Verdict.from_json(case) for case in data]
    # the claim's defaults (the first case is slow_mask="blockcausal"), or a user flow's sizes
    params = instance_values(results[0])
    T, P = params["T"], params["P"]
    masks = SLOW_MASKS if results[0].system is None else [params["slow_mask"]]
    size = (7.5, 3.6) if len(results) > 1 else (4.6, 3.6)  # one panel: a user flow's
    fig, axes = plt.subplots(1, len(results), figsize=size, constrained_layout=True)
    axes = np.atleast_1d(axes)
    for ax, slow_mask, res in zip(axes, masks, results):
        dep = np.asarray(res.figures["dependence"])
        im = ax.imshow(np.log10(dep + 1e-17), vmin=-17, vmax=1, cmap="magma", origin="upper")
        for b in range(1, T // P):
            ax.axhline(b * P - 0.5, color="w", lw=0.5, alpha=0.6)
            ax.axvline(b * P - 0.5, color="w", lw=0.5, alpha=0.6)
        ax.plot([-0.5, T - 0.5], [-0.5, T - 0.5], color="c", lw=0.8)
        ax.set_title(
            f"slow_mask={slow_mask!r}: {res.outcome}\nmax future dep. "
            f"{res.figures['max_future_dependence']:.1e}",
            fontsize=8,
        )
        ax.grid(False)
        ax.set_xlabel("perturbed input token s")
        ax.set_ylabel("output token t")
    fig.colorbar(im, ax=axes, label="log10 max |Δ out_t|  (future: above the diagonal)")
    return fig, dict(results[0].params, seed=seed)
