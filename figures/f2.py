"""F2 figures: tracking error against ε (both orders, fitted slopes) and p_st(y) against a
trajectory of the coupled system."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from figures import figure
from numerics.toy import markov as mk
from theory import markov as tm
from verify.checks.f2 import CLAIM, chain_functions
from verify.claim import Verdict
from verify.registry import run_check

TRAJECTORY_EPS = 0.05


def f2_check(seed: int) -> dict:
    """The F2 check (tracking errors of both orders over its ε grid, with fitted slopes)."""
    return run_check("F2", {}, seed=seed).to_json()


def f2_trajectory(seed: int) -> dict:
    """A coupled trajectory at ε = TRAJECTORY_EPS from a seeded x0 and p_st(y) on a y grid around it."""
    p = CLAIM.defaults()
    n = p["n_states"]
    gen, gen_dy, c = chain_functions(p)
    x0 = np.random.default_rng(np.random.SeedSequence(seed)).dirichlet(np.ones(n))
    t = np.linspace(0.0, p["t1"], 600)
    run = mk.integrate_coupled(gen, gen_dy, TRAJECTORY_EPS, x0, p["y0"], c, t)
    sm = tm.slow_manifold(n)
    ys = np.linspace(min(run.y.min(), p["y0"]) - 0.2, run.y.max() + 0.2, 300)
    P = np.array(sm.p_numeric(ys)).T
    return {
        "ys": ys.tolist(),
        "p_st": P.tolist(),
        "y": np.asarray(run.y).tolist(),
        "x": np.asarray(run.x).tolist(),
    }


@figure("F2", "f2_tracking_error", compute=f2_check)
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
        ax.loglog(eps, np.exp(fit["intercept"]) * eps ** fit["slope"], "-", lw=0.8, color="0.5")
    ax.set_xlabel("ε")
    ax.set_ylabel(f"max over t ∈ [{res.params['t0']}, {res.params['t1']}]")
    ax.set_title(
        f"F2: tracking of the equilibrium manifold ({res.params['n_states']}-state chain, "
        "95% intervals)",
        fontsize=8,
    )
    ax.legend(fontsize=7)
    return fig, dict(res.params, seed=seed)


@figure("F2", "f2_manifold_and_trajectory", compute=f2_trajectory)
def f2_manifold_and_trajectory(data: list, seed: int):
    p = CLAIM.defaults()
    n, eps = p["n_states"], TRAJECTORY_EPS
    d = data[0]
    ys, P = np.asarray(d["ys"]), np.asarray(d["p_st"])
    run_y, run_x = np.asarray(d["y"]), np.asarray(d["x"])
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
