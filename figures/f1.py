"""F1 figures: reduction error against ε, the depth trajectory (fast collapse, slow drift), and
integrator work against ε."""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
from scipy.integrate import solve_ivp

from figures import figure
from numerics.integrators import integrate
from numerics.integrators.coupling import (coupling_rhs_nb, frozen_kernel_jac_nb, integrate_coupling,
                                           layer_breakpoints, pack_coupling)
from verify.checks import resolve_params
from verify.checks.f1 import DEFAULTS, LIMITS, Instance, error_sweep
from verify.checks.f2 import slope_fit


def _instance(seed, **changes):
    return Instance(resolve_params(DEFAULTS, changes, LIMITS), seed)


@figure("F1", "f1_error_vs_eps")
def f1_error_vs_eps(seed: int = 0):
    eps = np.geomspace(1e-3, 1e-1, 7)
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.6), constrained_layout=True, sharey=True)
    cases = [("block_bidirectional", "mean", "block_bidirectional, Y = BX"),
             ("block_causal", "first", "block_causal, Y = FᵀX (first token)"),
             ("causal", "mean", "negative control: causal, Y = BX")]
    for ax, (mask, coarse, title) in zip(axes, cases):
        inst = _instance(seed, mask=mask, coarse=coarse)
        sw = error_sweep(inst, eps)
        for key, label, marker in (("err_leading", "leading order", "o"),
                                   ("err_first", "first order (+εH₁, curvature)", "s")):
            fit = slope_fit(sw["eps"], sw[key])
            lo, hi = fit["ci95"]
            ax.loglog(sw["eps"], sw[key], marker + "-", ms=4,
                      label=f"{label}: slope {fit['slope']:.2f} [{lo:.2f}, {hi:.2f}]")
        ax.loglog(eps, 0.5 * eps, "k:", lw=0.8, label="ε, ε²")
        ax.loglog(eps, 0.5 * eps**2, "k:", lw=0.8)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("ε")
        ax.legend(fontsize=6.5)
    axes[0].set_ylabel("‖X(1) − reduction‖ / ‖X(1)‖")
    return fig, {"eps": eps.tolist(), "T": DEFAULTS["T"], "P": DEFAULTS["P"], "d": DEFAULTS["d"],
                 "L": DEFAULTS["L"], "gamma": DEFAULTS["gamma"], "seed": seed}


@figure("F1", "f1_depth_trajectory")
def f1_depth_trajectory(seed: int = 0):
    eps = 1e-2
    inst = _instance(seed)
    U, B = inst.U, inst.B
    t = np.concatenate([np.linspace(0, 0.1, 201)[:-1], np.linspace(0.1, 1.0, 181)])
    X0 = U @ inst.Y0 + inst.Z0
    res = integrate_coupling(inst.model, X0, eps, E=inst.E, t_eval=t, rtol=1e-10, atol=1e-12)
    X = res.extra["X"]
    Yfib = inst.Lt @ inst.fast_limit(X0)
    red = integrate(lambda s, y: (inst.Lt @ inst.R(inst.seg(s), U @ y.reshape(inst.Y0.shape))).ravel(),
                    (0.0, 1.0), Yfib, method="dopri5", t_eval=t, rtol=1e-10, atol=1e-12,
                    breakpoints=inst.breaks)
    Yred = red.y.T.reshape(len(t), *inst.Y0.shape)
    dev = np.array([np.linalg.norm(x - U @ (B @ x)) for x in X])
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), constrained_layout=True)
    ax = axes[0]
    ax.semilogy(t, dev, label="‖(I − UB)X(t)‖")
    ax.semilogy(t, dev[0] * np.exp(-t / eps), "k--", lw=0.8, label="rate 1/ε (λ₂ = 0)")
    ax.axhline(eps * np.linalg.norm(inst.H1(0, inst.Y0)), color="C3", lw=0.8,
               label="ε‖H₁‖ (first-order slow manifold)")
    for b in inst.breaks:
        ax.axvline(b, color="0.6", lw=0.6)
    ax.set_ylim(dev.min() / 3, dev[0] * 3)
    ax.set_xlim(0, 0.15)
    ax.set_xlabel("depth t (initial layer; the rest of [0, 1] stays on the manifold)")
    ax.set_title(f"fast collapse onto block-constant states (ε = {eps:g})", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[1]
    BX = np.einsum("nt,ktd->knd", B, X)
    for n in range(min(3, BX.shape[1])):
        ax.plot(t, BX[:, n, 0], color=f"C{n}", lw=1.2, label=f"block {n}: (BX)₀" if n == 0 else None)
        ax.plot(t, Yred[:, n, 0], color=f"C{n}", lw=0.8, ls="--",
                label="reduced flow Y₀" if n == 0 else None)
    for b in inst.breaks:
        ax.axvline(b, color="0.6", lw=0.6)
    ax.set_xlabel("depth t")
    ax.set_title("slow drift of the block means vs the reduced flow (feature 0)", fontsize=8)
    ax.legend(fontsize=7)
    return fig, {"eps": eps, "seed": seed, "mask": "block_bidirectional"}


@figure("F1", "f1_integrator_work")
def f1_integrator_work(seed: int = 0):
    inst = _instance(seed, T=16, P=4, d=4, L=4)
    eps_values = np.geomspace(1e-4, 1e-1, 7)
    X0 = inst.U @ inst.Y0 + inst.Z0
    rtol, atol = 1e-6, 1e-9
    rows = {"Rosenbrock-W (Numba)": [], "Radau IIA (Numba)": [], "DOPRI5 (Numba)": [],
            "SciPy LSODA": [], "SciPy Radau": []}
    times = {k: [] for k in rows}
    edges = np.concatenate([[0.0], layer_breakpoints(inst.model.L), [1.0]])
    for eps in eps_values:
        p = pack_coupling(inst.cfg, inst.model, eps, inst.E)
        for name, method in (("Rosenbrock-W (Numba)", "rosw"), ("Radau IIA (Numba)", "radau"),
                             ("DOPRI5 (Numba)", "dopri5")):
            t0 = time.process_time()
            r = integrate_coupling(inst.model, X0, eps, E=inst.E, method=method, rtol=rtol,
                                   atol=atol, max_steps=2_000_000)
            times[name].append(time.process_time() - t0)
            rows[name].append(r.nfev)
        for name, m in (("SciPy LSODA", "LSODA"), ("SciPy Radau", "Radau")):
            out = np.empty(X0.size)
            y, nfev = X0.ravel().copy(), 0
            t0 = time.process_time()
            for s in range(len(edges) - 1):
                def f(t, y, s=s):
                    coupling_rhs_nb(t, np.ascontiguousarray(y), p, s, out)
                    return out.copy()
                J = np.empty((inst.cfg.T, inst.cfg.T))

                def jac(t, y, s=s):
                    frozen_kernel_jac_nb(t, np.ascontiguousarray(y), p, s, J)
                    return np.kron(J, np.eye(inst.cfg.d))
                sol = solve_ivp(f, (edges[s], edges[s + 1]), y, method=m, rtol=rtol, atol=atol,
                                jac=jac)
                y, nfev = sol.y[:, -1], nfev + sol.nfev
            times[name].append(time.process_time() - t0)
            rows[name].append(nfev)
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
    fig.suptitle(f"work to integrate the coupling flow over [0, 1] (T×d = 16×4, L = 4, rtol = {rtol:g}; "
                 "SciPy with the compiled RHS and the frozen-kernel Jacobian)", fontsize=8)
    return fig, {"eps": eps_values.tolist(), "rtol": rtol, "T": 16, "d": 4, "L": 4, "seed": seed}
