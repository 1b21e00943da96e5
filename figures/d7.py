"""D7 figure: ρ(J + gG) against the gate with the margin bound m/‖G‖ and the critical gates, and
σ_min(e^{iθ}I − J) on the circle with the margin."""

from __future__ import annotations

import matplotlib.pyplot as plt

from fastslow.figures import figure, verdict_json, verdict_points
from fastslow.verify.registry import get_claim
from fastslow.verify.verdict import Verdict

DEFAULTS = get_claim("D7").defaults()
SLOW_MASKS = (("full", "-"), ("blockcausal", "--"))
"""The slow masks of the left panel and their line styles; the right panel is the default's (full)."""


@figure(
    "D7",
    "d7_gate_spectral_radius",
    compute=verdict_json,
    points=verdict_points("D7", [{"slow_mask": m} for m, _ in SLOW_MASKS]),
)
def d7_gate_spectral_radius(data: list, seed: int):
    """Both panels; on a user system one curve on the left (the system's own loop) and the right
    panel of the same verdict."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.8), constrained_layout=True)
    first = Verdict.from_json(data[0])
    user = first.system
    out = {}
    if user is None:
        for (slow_mask, style), case in zip(SLOW_MASKS, data):
            res = Verdict.from_json(case)
            label = f"slow_mask={slow_mask!r}"
            ax.plot(res.series["gates"], res.series["rho"], style, label=label)
            out[slow_mask] = res
        main = out[DEFAULTS["slow_mask"]]
    else:
        main = first
        ax.plot(main.series["gates"], main.series["rho"], "-", label=f"{user.get('name')!r}")
    f, full = main.figures, main.series
    b = f["bound_m_over_normG"]
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axvspan(-b, b, color="C2", alpha=0.2, label=f"|g| < m/‖G‖ = {b:.3f}")
    for g, lab in ((f["critical_gate_plus"], "g_c⁺"), (-f["critical_gate_minus"], "g_c⁻")):
        ax.axvline(g, color="C3", lw=0.8, ls=":")
        ax.annotate(f"{lab} = {abs(g):.3f}", (g, 1.02), fontsize=7, color="C3", ha="center")
    for key in ("above_plus", "above_minus", "below_plus", "below_minus"):
        nl = full["nonlinear"].get(key)
        if nl:
            ax.plot(
                nl["gate"], nl["rho"], "o" if nl["converged_to_reference"] else "x", color="k", ms=5
            )
    ax.set_xlabel("gate g")
    ax.set_ylabel("ρ(J + gG)")
    where = "looped layer at X* = 0" if user is None else f"your {user.get('kind')}"
    ax.set_title(f"{where} (o: nonlinear loop converges, x: it does not)", fontsize=8)
    ax.legend(fontsize=7, loc="upper center")

    ax2.plot(full["theta"], full["sigma_min"])
    ax2.axhline(f["margin"], color="C3", ls="--", label=f"m(J) = {f['margin']:.4f} (grid+Brent)")
    ax2.axhline(
        f["one_minus_rho"], color="0.5", ls=":", label=f"1 − ρ(J) = {f['one_minus_rho']:.4f}"
    )
    ax2.set_xlabel("θ")
    ax2.set_ylabel("σ_min(e^{iθ} I − J)")
    ax2.legend(fontsize=7)
    ax2.set_title("distance to instability on the unit circle", fontsize=8)
    return fig, dict(DEFAULTS if user is None else main.params, seed=seed)
