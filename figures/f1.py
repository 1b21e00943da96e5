"""F1 figures: reduction error against ε, the depth trajectory (fast collapse, slow drift), and
integrator work against ε.

The first two draw the F1 verdict's series (:func:`figures.verdict_json`): the errors of both
orders on the whole ε ladder with the window rule applied from its top (one check per mask and
coarse map), and the full and reduced flows along depth at ε = 1e-2. The third is a measurement of
the integrators, not a check result: right-hand-side evaluations and CPU times of each method on
the F1 problem of size ``WORK_SIZE`` (:func:`integrator_work`); its times
differ from run to run.

On your own ``DepthFlow``: one error panel per coarse map (the mask is your flow's), the depth
trajectory of the verdict on your flow, and the integrators' work on the coupling problem of your
flow's model (the start and ``E`` from the figure's seed, as the F1 check draws them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure, instance_values, verdict_json, verdict_points
from fastslow.numerics.model.coupling.drivers import integrate_coupling, integrate_coupling_scipy
from fastslow.verify.coupling_problem import coupling_problem
from fastslow.verify.registry import get_claim
from fastslow.verify.verdict import Verdict

ERROR_CASES = (
    ("block_bidirectional", "mean", "block_bidirectional, Y = BX"),
    ("block_causal", "first", "block_causal, Y = FᵀX (first token)"),
    ("causal", "mean", "negative control: causal, Y = BX"),
)
"""The panels of ``f1_error_vs_eps``: mask, coarse map and title."""

WORK_EPS = np.geomspace(1e-4, 1e-1, 7)
WORK_SIZE = {"T": 16, "P": 4, "d": 4, "L": 4}
WORK_TOL = {"rtol": 1e-6, "atol": 1e-9}


@figure(
    "F1",
    "f1_error_vs_eps",
    compute=verdict_json,
    points=verdict_points(
        "F1", [{"mask": mask, "coarse": coarse} for mask, coarse, _ in ERROR_CASES]
    ),
)
def f1_error_vs_eps(data: list, seed: int):
    """The verdicts' error ladders (both orders, window rule from the top of the ladder): one
    panel per built-in case, or on a user flow one per coarse map (a verdict that carries no
    ladder is named in a panel of its own instead)."""
    verdicts = [Verdict.from_json(d) for d in data]
    user = verdicts[0].system is not None
    if user:
        titles = [f"coarse map {v.params.get('coarse')!r}: {v.outcome}" for v in verdicts]
    else:
        titles = [title for _mask, _coarse, title in ERROR_CASES]
    drawn = [(v.series["error_ladder"], t) for v, t in zip(verdicts, titles) if _has_ladder(v)]
    missing = [f"{t}: no error ladder" for v, t in zip(verdicts, titles) if not _has_ladder(v)]
    n = max(len(drawn), 1)
    fig, axes = plt.subplots(
        1, n, figsize=(3.5 * n, 3.6), constrained_layout=True, sharey=True, squeeze=False
    )
    axes = axes[0]
    for ax, (sw, title) in zip(axes, drawn):
        for key, label, marker, fit in (
            ("err_leading", "leading", "o", sw["fit_leading"]),
            ("err_first", "first order", "s", sw["fit_first_order"]),
        ):
            # the unit's window rule from the top of the ladder (the verdict starts at lin_const/c₂)
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
        eps = np.asarray(sw["eps"])
        ax.loglog(eps, 0.5 * eps, "k:", lw=0.8, label="ε, ε²")
        ax.loglog(eps, 0.5 * eps**2, "k:", lw=0.8)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("ε")
        ax.legend(fontsize=6, loc="lower right")
    if not drawn:  # nothing to draw: the panel says why
        axes[0].text(0.5, 0.5, "\n".join(missing), ha="center", va="center", fontsize=8)
        axes[0].set_axis_off()
    elif missing:
        fig.suptitle("; ".join(missing), fontsize=7)
    axes[0].set_ylabel("‖X(1) − reduction‖ / ‖X(1)‖")
    p = instance_values(verdicts[0]) if user else get_claim("F1").defaults()
    return fig, {
        "eps": drawn[0][0]["eps"] if drawn else [],
        "T": p["T"],
        "P": p["P"],
        "d": p["d"],
        "L": p["L"],
        "gamma": p["gamma"],
        "norm": p["norm"],
        "seed": seed,
    }


def _has_ladder(verdict: Verdict) -> bool:
    return bool(verdict.series.get("error_ladder"))


@figure("F1", "f1_depth_trajectory", compute=verdict_json, points=verdict_points("F1", [{}]))
def f1_depth_trajectory(data: list, seed: int):
    """The verdict's depth trajectory: distance to the block-constant states, block means and the
    reduced flow (feature 0 of the first three blocks) at ε = 1e-2."""
    res = Verdict.from_json(data[0])
    d = res.series["depth_trajectory"]
    eps = d["eps"]
    t, dev = np.asarray(d["t"]), np.asarray(d["dev"])
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), constrained_layout=True)
    ax = axes[0]
    ax.semilogy(t, dev, label="‖(I − UB)X(t)‖")
    # λ₂ = 0 is the built-in mask's (block_bidirectional) subdominant eigenvalue, not a user mask's
    rate = "rate 1/ε (λ₂ = 0)" if res.system is None else "rate 1/ε (reference)"
    ax.semilogy(t, dev[0] * np.exp(-t / eps), "k--", lw=0.8, label=rate)
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
    mask = instance_values(res)["mask"]  # the default's name, or a user flow's own
    if isinstance(mask, list):
        mask = f"user mask {len(mask)}×{len(mask)}"
    return fig, {"eps": eps, "seed": seed, "mask": mask}


WORK_METHODS = {
    "Rosenbrock-W (Numba)": ("numba", "rosw"),
    "Radau IIA (Numba)": ("numba", "radau"),
    "DOPRI5 (Numba)": ("numba", "dopri5"),
    "SciPy LSODA": ("scipy", "LSODA"),
    "SciPy Radau": ("scipy", "Radau"),
}
"""The integrators :func:`integrator_work` runs, in order: the Numba methods of
:func:`integrate_coupling` and SciPy's through :func:`integrate_coupling_scipy` (compiled
right-hand side, dense frozen-kernel Jacobian)."""


def integrator_work(
    params: Mapping, seed: int, eps: float, *, rtol: float, atol: float, system=None
) -> dict:
    """Right-hand-side evaluations and CPU seconds of each integrator of :data:`WORK_METHODS` from
    the generic start ``X0`` of :func:`coupling_problem` ``(params, seed)`` (with a user
    ``DepthFlow``: of its model) over ``[0, 1]`` at ``ε = eps`` (all timed in this call, so that
    their ratios compare like with like). Each is run once untimed first: the first call of a
    process compiles or loads its Numba code (measured: 297 ms against 4.7 ms for Rosenbrock-W at
    one ε), which is not the work of integrating."""
    prob = coupling_problem(params, seed, model=None if system is None else system.model())
    X0 = prob.X0

    def run(kind, method):
        if kind == "numba":
            return integrate_coupling(
                prob.model,
                X0,
                eps,
                E=prob.E,
                method=method,
                rtol=rtol,
                atol=atol,
                max_steps=2_000_000,
            )
        return integrate_coupling_scipy(
            prob.model, X0, eps, E=prob.E, method=method, rtol=rtol, atol=atol, jac="dense"
        )

    nfev, times = {}, {}
    for name, (kind, method) in WORK_METHODS.items():
        run(kind, method)  # untimed: compiles, or loads Numba's cache (first call: up to 60×)
        t0 = time.process_time()
        r = run(kind, method)
        times[name] = time.process_time() - t0
        nfev[name] = int(r.nfev)
    return {"nfev": nfev, "cpu_seconds": times}


def f1_work_case(seed: int, eps: float, system=None) -> dict:
    """RHS evaluations and CPU time of each integrator over [0, 1] at one ε on the F1 problem of
    size ``WORK_SIZE``, or of a user flow's model (all timed in one call, so their ratios stay
    fair; the times are measurements and differ from run to run)."""
    if system is None:
        return integrator_work(get_claim("F1").resolve(WORK_SIZE), seed, eps, **WORK_TOL)
    out = integrator_work(get_claim("F1").defaults(), seed, eps, **WORK_TOL, system=system)
    return {**out, "size": {k: getattr(system, k) for k in ("T", "d", "L")}}


@figure(
    "F1",
    "f1_integrator_work",
    compute=f1_work_case,
    points=lambda seed: [dict(seed=seed, eps=float(e)) for e in WORK_EPS],
    system_points=lambda seed, system: [
        dict(seed=seed, eps=float(e), system=system) for e in WORK_EPS
    ],
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
    size = data[0].get("size", {k: WORK_SIZE[k] for k in ("T", "d", "L")})
    fig.suptitle(
        f"work to integrate the coupling flow over [0, 1] (T×d = {size['T']}×{size['d']}, "
        f"L = {size['L']}, rtol = {rtol:g}; "
        "SciPy with the compiled RHS and the frozen-kernel Jacobian)",
        fontsize=8,
    )
    return fig, {"eps": eps_values.tolist(), "rtol": rtol, **size, "seed": seed}
