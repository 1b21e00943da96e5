"""D2 figure: the stack with h = 1/L against the depth flow, error against h on log–log axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from figures import figure
from verify.checks import run_check


@figure("D2", "d2_convergence")
def d2_convergence(seed: int = 0):
    Ls = (8, 16, 32, 64, 128, 256, 512, 1024)
    fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    runs = [({}, "err_untied", "smooth θ(t), untied", "o-"),
            ({}, "err_tied", "tied (autonomous)", "s-"),
            ({"path": "step"}, "err_untied", "θ(t) with 3 jumps off the grid", "^-"),
            ({"h_mode": "one"}, "err_untied", "negative control: plain stack h = 1", "x-")]
    cache = {}
    for params, key, label, style in runs:
        k = tuple(sorted(params.items()))
        if k not in cache:
            cache[k] = run_check("D2", dict(params, Ls=Ls), seed=seed)
        res = cache[k]
        f = res.figures
        slope = f["slope_untied" if key == "err_untied" else "slope_tied"]
        ci = f["slope_untied_ci95" if key == "err_untied" else "slope_tied_ci95"]
        h = 1.0 / np.asarray(f["Ls"], dtype=float)
        ax.loglog(h, f[key], style, ms=4, label=f"{label}: slope {slope:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]")
    h = 1.0 / np.asarray(Ls, dtype=float)
    ax.loglog(h, 0.5 * h, "k:", lw=0.8, label="∝ h")
    ax.set_xlabel("depth step h = 1/L")
    ax.set_ylabel("‖X_L − X(1)‖ / ‖X(1)‖")
    ax.set_title("stack (forward Euler) vs depth flow dX/dt = F(t, X)", fontsize=9)
    ax.legend(fontsize=7)
    return fig, {"Ls": list(Ls), "seed": seed}
