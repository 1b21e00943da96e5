"""D2 figure: the stack with h = 1/L against the depth flow, error against h on log–log axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from figures import figure
from verify.claim import Verdict
from verify.registry import CLAIMS, run_check

LS = (8, 16, 32, 64, 128, 256, 512, 1024)
CHECKS = ({}, dict(CLAIMS["D2"].control("jumps_off_the_grid").params),
          dict(CLAIMS["D2"].control("plain_stack_h_one").params))
"""The D2 check variants (parameter overrides): the main instance and the two negative controls,
one sweep point each."""
RUNS = ((0, "err_untied", "smooth θ(t), untied", "o-"),
        (0, "err_tied", "tied (autonomous)", "s-"),
        (1, "err_untied", "negative control: θ(t) with 3 jumps off the grid", "^-"),
        (2, "err_untied", "negative control: plain stack h = 1", "x-"))
"""The curves: (index into CHECKS, error key, label, style)."""


def d2_case(seed: int, overrides: dict) -> dict:
    """The D2 check (stack vs depth flow over all depths LS) for one variant of its parameters."""
    return run_check("D2", dict(overrides, Ls=LS), seed=seed).to_json()


@figure("D2", "d2_convergence", compute=d2_case,
        points=lambda seed: [dict(seed=seed, overrides=ov) for ov in CHECKS])
def d2_convergence(data: list, seed: int):
    fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    results = [Verdict.from_json(case) for case in data]
    for i, key, label, style in RUNS:
        f = results[i].figures
        slope = f["slope_untied" if key == "err_untied" else "slope_tied"]
        ci = f["slope_untied_ci95" if key == "err_untied" else "slope_tied_ci95"]
        h = 1.0 / np.asarray(f["Ls"], dtype=float)
        ax.loglog(h, f[key], style, ms=4, label=f"{label}: slope {slope:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]")
    h = 1.0 / np.asarray(LS, dtype=float)
    ax.loglog(h, 0.5 * h, "k:", lw=0.8, label="∝ h")
    ax.set_xlabel("depth step h = 1/L")
    ax.set_ylabel("‖X_L − X(1)‖ / ‖X(1)‖")
    ax.set_title("stack (forward Euler) vs depth flow dX/dt = F(t, X)", fontsize=9)
    ax.legend(fontsize=7)
    return fig, {"Ls": list(LS), "seed": seed}
