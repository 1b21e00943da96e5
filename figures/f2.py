"""F2 figures: tracking error against ε (both orders, fitted slopes) and p_st(y) against a
trajectory of the coupled system."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from figures import figure
from numerics import markov as mk
from theory import markov as tm
from verify.checks import run_check
from verify.checks.f2 import DEFAULTS, chain_functions


@figure("F2", "f2_tracking_error")
def f2_tracking_error(seed: int = 0):
    res = run_check("F2", {}, seed=seed)
    f = res.figures
    eps = np.array(f["eps"])
    fig, ax = plt.subplots(constrained_layout=True)
    for key, fit_key, label, marker in (("err_order0", "slope_order0", "|x − p_st(y)|", "o"),
                                        ("err_order1", "slope_order1",
                                         "|x − p_st(y) − ε h₁(y, t)|", "s")):
        err = np.array(f[key])
        fit = f[fit_key]
        ax.loglog(eps, err, marker, label=f"{label}: slope {fit['slope']:.3f} "
                  f"[{fit['ci95'][0]:.3f}, {fit['ci95'][1]:.3f}]")
        ax.loglog(eps, np.exp(fit["intercept"]) * eps ** fit["slope"], "-", lw=0.8, color="0.5")
    ax.set_xlabel("ε")
    ax.set_ylabel(f"max over t ∈ [{res.params['t0']}, {res.params['t1']}]")
    ax.set_title(f"F2: tracking of the equilibrium manifold ({res.params['n_states']}-state chain, "
                 "95% intervals)", fontsize=8)
    ax.legend(fontsize=7)
    return fig, dict(res.params, seed=seed)


@figure("F2", "f2_manifold_and_trajectory")
def f2_manifold_and_trajectory(seed: int = 0):
    p = dict(DEFAULTS)
    n, eps = p["n_states"], 0.05
    gen, gen_dy, c = chain_functions(p)
    x0 = np.random.default_rng(np.random.SeedSequence(seed)).dirichlet(np.ones(n))
    t = np.linspace(0.0, p["t1"], 600)
    run = mk.integrate_coupled(gen, gen_dy, eps, x0, p["y0"], c, t)
    sm = tm.slow_manifold(n)
    ys = np.linspace(min(run.y.min(), p["y0"]) - 0.2, run.y.max() + 0.2, 300)
    P = np.array(sm.p_numeric(ys)).T
    fig, ax = plt.subplots(constrained_layout=True)
    for i in range(n):
        line, = ax.plot(ys, P[:, i], lw=1.2, label=f"p_st,{i}(y)")
        ax.plot(run.y, run.x[:, i], ".", ms=2, color=line.get_color(), alpha=0.6)
    ax.set_xlabel("y")
    ax.set_ylabel("probability")
    ax.set_title(f"F2: trajectory (dots, ε = {eps}) from x0 off the manifold onto p_st(y)",
                 fontsize=8)
    ax.legend(fontsize=7)
    return fig, {"n_states": n, "eps": eps, "y0": p["y0"], "t1": p["t1"], "seed": seed}
