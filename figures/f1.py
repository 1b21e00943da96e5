"""F1 figures: reduction error against ε, the depth trajectory (fast collapse, slow drift), and
integrator work against ε."""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
from scipy.integrate import solve_ivp

from figures import figure
from numerics.model.coupling import (
    coupling_rhs_nb,
    frozen_kernel_jac_nb,
    integrate_coupling,
    layer_breakpoints,
    pack_coupling,
)
from verify.checks.f1 import CLAIM, RATE_ORDERS, eps_ladder, error_sweep
from verify.measure import asymptotic_slope

ERROR_EPS = eps_ladder(CLAIM.defaults()["eps_max"], CLAIM.defaults()["eps_floor_first"])
"""The unit's ε ladder ``eps_max·10^(−j/4)`` down to the first-order floor."""
ERROR_CASES = (
    ("block_bidirectional", "mean", "block_bidirectional, Y = BX"),
    ("block_causal", "first", "block_causal, Y = FᵀX (first token)"),
    ("causal", "mean", "negative control: causal, Y = BX"),
)
"""The panels of ``f1_error_vs_eps``: mask, coarse map and title."""

TRAJECTORY_EPS = 1e-2

WORK_EPS = np.geomspace(1e-4, 1e-1, 7)
WORK_SIZE = {"T": 16, "P": 4, "d": 4, "L": 4}
WORK_TOL = {"rtol": 1e-6, "atol": 1e-9}
WORK_METHODS = (
    "Rosenbrock-W (Numba)",
    "Radau IIA (Numba)",
    "DOPRI5 (Numba)",
    "SciPy LSODA",
    "SciPy Radau",
)


def _instance(seed, **changes):
    """The unit's instance with its defaults updated by ``changes`` (validated by the unit)."""
    return CLAIM.build(CLAIM.resolve(changes), seed)


def f1_error_case(seed: int, mask: str, coarse: str, eps: float) -> dict:
    """Leading- and first-order reduction errors at t = 1 for one mask, coarse map and ε."""
    sw = error_sweep(_instance(seed, mask=mask, coarse=coarse), [eps])
    return {
        "eps": float(sw["eps"][0]),
        "err_leading": float(sw["err_leading"][0]),
        "err_first": float(sw["err_first"][0]),
    }


@figure(
    "F1",
    "f1_error_vs_eps",
    compute=f1_error_case,
    points=lambda seed: [
        dict(seed=seed, mask=mask, coarse=coarse, eps=float(e))
        for mask, coarse, _ in ERROR_CASES
        for e in ERROR_EPS
    ],
)
def f1_error_vs_eps(data: list, seed: int):
    eps = ERROR_EPS
    p = CLAIM.defaults()
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.6), constrained_layout=True, sharey=True)
    for i, (ax, (_mask, _coarse, title)) in enumerate(zip(axes, ERROR_CASES)):
        rows = data[i * len(ERROR_EPS) : (i + 1) * len(ERROR_EPS)]
        sw = {k: np.array([r[k] for r in rows]) for k in ("eps", "err_leading", "err_first")}
        for (key, label, marker), spec in zip(
            (("err_leading", "leading", "o"), ("err_first", "first order", "s")),
            RATE_ORDERS.values(),
        ):
            # the unit's window rule from the top of the ladder (the unit starts at lin_const/c₂)
            err_at = dict(zip(sw["eps"].tolist(), sw[key].tolist()))
            fit = asymptotic_slope(
                sw["eps"], err_at.__getitem__, spec["rate"], p[spec["tol"]], window=p["window"]
            )
            lo, hi = fit["ci95"]
            where = (
                f"on [{fit['window'][1]:.0e}, {fit['window'][0]:.0e}]"
                if fit["converged"]
                else "no window"
            )
            ax.loglog(
                sw["eps"],
                sw[key],
                marker + "-",
                ms=4,
                label=f"{label}: slope {fit['slope']:.2f} [{lo:.2f}, {hi:.2f}]\n{where}",
            )
        ax.loglog(eps, 0.5 * eps, "k:", lw=0.8, label="ε, ε²")
        ax.loglog(eps, 0.5 * eps**2, "k:", lw=0.8)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("ε")
        ax.legend(fontsize=6, loc="lower right")
    axes[0].set_ylabel("‖X(1) − reduction‖ / ‖X(1)‖")
    return fig, {
        "eps": eps.tolist(),
        "T": p["T"],
        "P": p["P"],
        "d": p["d"],
        "L": p["L"],
        "gamma": p["gamma"],
        "norm": p["norm"],
        "seed": seed,
    }


def f1_trajectory(seed: int) -> dict:
    """The coupled flow at ε = TRAJECTORY_EPS on a depth grid: distance to the block-constant
    states, block means and the reduced flow (feature 0 of the first three blocks)."""
    eps = TRAJECTORY_EPS
    inst = _instance(seed)
    U, B = inst.U, inst.B
    t = np.concatenate([np.linspace(0, 0.1, 201)[:-1], np.linspace(0.1, 1.0, 181)])
    X0 = U @ inst.Y0 + inst.Z0
    res = integrate_coupling(inst.model, X0, eps, E=inst.E, t_eval=t, rtol=1e-10, atol=1e-12)
    X = res.extra["X"]
    Yfib = inst.Lt @ inst.fast_limit(X0)
    _, red = inst.reduced(0, 0.0, Yfib, rtol=1e-10, atol=1e-12, t_eval=t)  # the unit's order-0 flow
    Yred = red.y.T.reshape(len(t), *inst.Y0.shape)
    dev = np.array([np.linalg.norm(x - U @ (B @ x)) for x in X])
    BX = np.einsum("nt,ktd->knd", B, X)
    blocks = range(min(3, BX.shape[1]))
    return {
        "t": t.tolist(),
        "dev": dev.tolist(),
        "first_order_level": float(eps * np.linalg.norm(inst.H1(0, inst.Y0))),
        "breaks": np.asarray(inst.breaks, dtype=float).tolist(),
        "block_means": [BX[:, n, 0].tolist() for n in blocks],
        "reduced": [Yred[:, n, 0].tolist() for n in blocks],
    }


@figure("F1", "f1_depth_trajectory", compute=f1_trajectory)
def f1_depth_trajectory(data: list, seed: int):
    eps = TRAJECTORY_EPS
    d = data[0]
    t, dev = np.asarray(d["t"]), np.asarray(d["dev"])
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), constrained_layout=True)
    ax = axes[0]
    ax.semilogy(t, dev, label="‖(I − UB)X(t)‖")
    ax.semilogy(t, dev[0] * np.exp(-t / eps), "k--", lw=0.8, label="rate 1/ε (λ₂ = 0)")
    ax.axhline(
        d["first_order_level"], color="C3", lw=0.8, label="ε‖H₁‖ (first-order slow manifold)"
    )
    for b in d["breaks"]:
        ax.axvline(b, color="0.6", lw=0.6)
    ax.set_ylim(dev.min() / 3, dev[0] * 3)
    ax.set_xlim(0, 0.15)
    ax.set_xlabel("depth t (initial layer; the rest of [0, 1] stays on the manifold)")
    ax.set_title(f"fast collapse onto block-constant states (ε = {eps:g})", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[1]
    for n, (bx, yred) in enumerate(zip(d["block_means"], d["reduced"])):
        ax.plot(
            t, np.asarray(bx), color=f"C{n}", lw=1.2, label=f"block {n}: (BX)₀" if n == 0 else None
        )
        ax.plot(
            t,
            np.asarray(yred),
            color=f"C{n}",
            lw=0.8,
            ls="--",
            label="reduced flow Y₀" if n == 0 else None,
        )
    for b in d["breaks"]:
        ax.axvline(b, color="0.6", lw=0.6)
    ax.set_xlabel("depth t")
    ax.set_title("slow drift of the block means vs the reduced flow (feature 0)", fontsize=8)
    ax.legend(fontsize=7)
    return fig, {"eps": eps, "seed": seed, "mask": "block_bidirectional"}


def f1_work_case(seed: int, eps: float) -> dict:
    """RHS evaluations and CPU time of each integrator over [0, 1] at one ε (all timed here, so
    their ratios stay fair)."""
    inst = _instance(seed, **WORK_SIZE)
    X0 = inst.U @ inst.Y0 + inst.Z0
    rtol, atol = WORK_TOL["rtol"], WORK_TOL["atol"]
    nfev, times = {}, {}
    edges = np.concatenate([[0.0], layer_breakpoints(inst.model.L), [1.0]])
    p = pack_coupling(inst.cfg, inst.model, eps, inst.E)
    for name, method in (
        ("Rosenbrock-W (Numba)", "rosw"),
        ("Radau IIA (Numba)", "radau"),
        ("DOPRI5 (Numba)", "dopri5"),
    ):
        t0 = time.process_time()
        r = integrate_coupling(
            inst.model, X0, eps, E=inst.E, method=method, rtol=rtol, atol=atol, max_steps=2_000_000
        )
        times[name] = time.process_time() - t0
        nfev[name] = int(r.nfev)
    for name, m in (("SciPy LSODA", "LSODA"), ("SciPy Radau", "Radau")):
        out = np.empty(X0.size)
        y, n = X0.ravel().copy(), 0
        t0 = time.process_time()
        for s in range(len(edges) - 1):

            def f(t, y, s=s):
                coupling_rhs_nb(t, np.ascontiguousarray(y), p, s, out)
                return out.copy()

            J = np.empty((inst.cfg.T, inst.cfg.T))

            def jac(t, y, s=s):
                frozen_kernel_jac_nb(t, np.ascontiguousarray(y), p, s, J)
                return np.kron(J, np.eye(inst.cfg.d))

            sol = solve_ivp(f, (edges[s], edges[s + 1]), y, method=m, rtol=rtol, atol=atol, jac=jac)
            y, n = sol.y[:, -1], n + sol.nfev
        times[name] = time.process_time() - t0
        nfev[name] = int(n)
    return {"nfev": nfev, "cpu_seconds": times}


@figure(
    "F1",
    "f1_integrator_work",
    compute=f1_work_case,
    points=lambda seed: [dict(seed=seed, eps=float(e)) for e in WORK_EPS],
)
def f1_integrator_work(data: list, seed: int):
    eps_values = WORK_EPS
    rtol = WORK_TOL["rtol"]
    rows = {name: [case["nfev"][name] for case in data] for name in WORK_METHODS}
    times = {name: [case["cpu_seconds"][name] for case in data] for name in WORK_METHODS}
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), constrained_layout=True)
    for name, marker in zip(rows, "oDsv^"):
        axes[0].loglog(eps_values, rows[name], marker + "-", ms=4, label=name)
        axes[1].loglog(eps_values, np.asarray(times[name]) * 1e3, marker + "-", ms=4, label=name)
    axes[0].loglog(eps_values, 3.0 / eps_values, "k:", lw=0.8, label="∝ 1/ε")
    axes[0].set_ylabel("right-hand-side evaluations")
    axes[1].set_ylabel("CPU time (ms)")
    for ax in axes:
        ax.set_xlabel("ε")
        ax.legend(fontsize=7)
    fig.suptitle(
        f"work to integrate the coupling flow over [0, 1] (T×d = 16×4, L = 4, rtol = {rtol:g}; "
        "SciPy with the compiled RHS and the frozen-kernel Jacobian)",
        fontsize=8,
    )
    return fig, {"eps": eps_values.tolist(), "rtol": rtol, "T": 16, "d": 4, "L": 4, "seed": seed}
