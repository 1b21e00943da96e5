"""D2 figure: the stack with h = 1/L against the depth flow, error against h on log–log axes.

Every depth the verdict evaluated on its doubling ladder is drawn; the asymptotic window (where the
slope is fitted) is drawn with filled markers, the pre-asymptotic points with open ones.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, verdict_json, verdict_points
from fastslow.verify.registry import CLAIMS
from fastslow.verify.verdict import Verdict

CHECKS: tuple[dict, ...] = (
    {},
    dict(CLAIMS["D2"].control("jumps_off_the_grid").params),
    dict(CLAIMS["D2"].control("plain_stack_h_one").params),
)
"""The D2 check variants (parameter overrides of the unit's defaults): the main instance and the two
negative controls, one sweep point each."""
RUNS = (
    (0, "untied", "smooth θ(t), untied", "o-"),
    (0, "tied", "tied (autonomous)", "s-"),
    (1, "untied", "negative control: θ(t) with 3 jumps off the grid", "^-"),
    (2, "untied", "negative control: plain stack h = 1", "x-"),
)
"""The curves: (index into CHECKS, path, label, style)."""


@figure(
    "D2",
    "d2_convergence",
    compute=verdict_json,
    points=verdict_points("D2", CHECKS),
)
def d2_convergence(data: list, seed: int):
    fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    results = [Verdict.from_json(case) for case in data]
    h_all: list[float] = []
    for i, name, label, style in RUNS:
        f = results[i].figures
        Ls = np.asarray(f[f"Ls_{name}"], dtype=float)
        err = np.asarray(f[f"err_{name}"], dtype=float)
        h = 1.0 / Ls
        h_all.extend(h)
        window = f[f"window_{name}"]  # [] when no asymptotic window formed (the controls)
        lo_L, hi_L = window if window else (np.inf, -np.inf)
        in_win = (Ls >= lo_L) & (Ls <= hi_L)
        slope, ci = f[f"slope_{name}"], f[f"slope_{name}_ci95"]
        fit = (
            f"slope {slope:.2f} [{ci[0]:.2f}, {ci[1]:.2f}] on L = {lo_L}–{hi_L}"
            if f[f"converged_{name}"]
            else f"no asymptotic window up to L = {int(Ls[-1])}"
        )
        (line,) = ax.loglog(h, err, style, ms=4, mfc="none", label=f"{label}: {fit}")
        ax.loglog(h[in_win], err[in_win], style[0], ms=4, color=line.get_color())
    h = np.sort(np.asarray(h_all))
    ax.loglog(h, 0.5 * h, "k:", lw=0.8, label="∝ h")
    ax.set_xlabel("depth step h = 1/L")
    ax.set_ylabel("‖X_L − X(1)‖ / ‖X(1)‖")
    ax.set_title(
        "stack (forward Euler) vs depth flow dX/dt = F(t, X); filled: asymptotic window", fontsize=9
    )
    ax.legend(fontsize=6.5, loc="center left", bbox_to_anchor=(0.0, 0.7))
    return fig, {"params": CLAIMS["D2"].defaults(), "seed": seed}
