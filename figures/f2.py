"""F2 figures: tracking error against ε (both orders, fitted slopes) and p_st(y) against a
trajectory of the coupled system, both from the F2 check at its defaults (or on your own
``GeneratorFamily``: the number of states is then your chain's)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, instance_values, verdict_json, verdict_points
from fastslow.verify.verdict import Verdict


def n_states(res: Verdict) -> int:
    """The chain's number of states: the built-in ``n_states``, or a user family's ``n``."""
    p = instance_values(res)
    return int(p["n"] if "n" in p else p["n_states"])


def window_intercept(eps, err, fit: dict) -> float:
    """The intercept of the fitted line ``log err = slope·log ε + c`` on the fit's window (the
    verdict carries the slope and the window, not the intercept): the least-squares ``c`` for the
    verdict's slope on the ε inside the window (all of them when the window is empty)."""
    eps, err = np.asarray(eps, dtype=float), np.asarray(err, dtype=float)
    w = fit.get("window") or [eps.max(), eps.min()]
    inside = (eps >= min(w)) & (eps <= max(w)) & (err > 0)
    return float(np.mean(np.log(err[inside]) - fit["slope"] * np.log(eps[inside])))


@figure("F2", "f2_tracking_error", compute=verdict_json, points=verdict_points("F2", [{}]))
def f2_tracking_error(data: list, seed: int):
    res = Verdict.from_json(data[0])
    f = res.figures
    eps = np.array(f["eps"])
    fig, ax = plt.subplots(constrained_layout=True)
    for key, fit_key, label, marker in (
        ("err_order0", "slope_order0", "|x − p_st(y)|", "o"),
        ("err_order1", "slope_order1", "|x − p_st(y) − ε h₁(y, t)|", "s"),
    ):
        err = np.array(f[key])
        fit = f[fit_key]
        ax.loglog(
            eps,
            err,
            marker,
            label=f"{label}: slope {fit['slope']:.3f} [{fit['ci95'][0]:.3f}, {fit['ci95'][1]:.3f}]",
        )
        c = window_intercept(eps, err, fit)
        ax.loglog(eps, np.exp(c) * eps ** fit["slope"], "-", lw=0.8, color="0.5")
    ax.set_xlabel("ε")
    ax.set_ylabel(f"max over t ∈ [{res.params['t0']}, {res.params['t1']}]")
    ax.set_title(
        f"F2: tracking of the equilibrium manifold ({n_states(res)}-state chain, 95% intervals)",
        fontsize=8,
    )
    ax.legend(fontsize=7)
    return fig, dict(res.params, seed=seed)


@figure("F2", "f2_manifold_and_trajectory", compute=verdict_json, points=verdict_points("F2", [{}]))
def f2_manifold_and_trajectory(data: list, seed: int):
    res = Verdict.from_json(data[0])
    s, p = res.series, res.params
    n, eps = n_states(res), s["trajectory_eps"]
    ys, P = np.asarray(s["manifold_y"]), np.asarray(s["manifold_p_st"])
    run_y, run_x = np.asarray(s["trajectory_y"]), np.asarray(s["trajectory_x"])
    fig, ax = plt.subplots(constrained_layout=True)
    for i in range(n):
        (line,) = ax.plot(ys, P[:, i], lw=1.2, label=f"p_st,{i}(y)")
        ax.plot(run_y, run_x[:, i], ".", ms=2, color=line.get_color(), alpha=0.6)
    ax.set_xlabel("y")
    ax.set_ylabel("probability")
    ax.set_title(
        f"F2: trajectory (dots, ε = {eps}) from x0 off the manifold onto p_st(y)", fontsize=8
    )
    ax.legend(fontsize=7)
    return fig, {"n_states": n, "eps": eps, "y0": p["y0"], "t1": p["t1"], "seed": seed}
