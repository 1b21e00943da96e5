"""F2's tracking parts (:mod:`verify.checks.f2`): the coupled flow against the reduced one over an
ε-ladder by two integrators, the orders ε and ε² of the error, the reduced solution inside the grid,
and the drawn trajectory.

A module of the claim unit :mod:`verify.checks.f2`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f2.claim`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ...measure import (
    RATE_RESOLUTION,
    ROUNDING_FLOOR,
    asymptotic_slope,
    at_accuracy_floor,
    ratio,
)
from ...verdict import Diagnostic
from .chain import CoupledChain

OTHER_METHOD = {"BDF": "Radau", "Radau": "BDF", "LSODA": "Radau"}
"""The second integrator whose run at every ε measures the achieved accuracy (:func:`accuracy`)."""


RATE_WINDOW = 4
"""Points of the rate rule's window (at most ``n_eps``)."""


TRAJECTORY_EPS = 0.05
"""ε of the drawn trajectory (the figure's series)."""


TRAJECTORY_METHOD = "Radau"
"""Integrator of the drawn trajectory."""


TRAJECTORY_POINTS, MANIFOLD_POINTS, MANIFOLD_MARGIN = 600, 300, 0.2
"""Output times of the drawn trajectory on ``[0, t1]``; points of the drawn ``p_st(y)``, on the y
it visits widened by the margin on both sides."""


def tracking_runs(inst: CoupledChain, first) -> tuple[list, list]:
    """The runs from ``x0`` at every ε of the sweep (the run ``first`` at ``eps_min`` reused),
    and the same by :data:`OTHER_METHOD` (the measured accuracy)."""
    eps_lo = float(inst.eps[0])
    other = OTHER_METHOD[inst.p["method"]]
    runs = [first if e == eps_lo else inst.run(float(e), inst.x0) for e in inst.eps]
    return runs, [inst.run(float(e), inst.x0, method=other) for e in inst.eps]


def tracking_errors(inst: CoupledChain, run, eps: float) -> tuple[float, float]:
    """Max over ``[t0, t1]`` of ``|x − p_st(y)|`` and of ``|x − p_st(y) − ε h_1(y, t)|``."""
    yy, ts, xx = run.y[1:], run.t[1:], run.x[1:]
    P_ = np.array(inst.sm.p_numeric(yy)).T
    H_ = np.array(inst.sm.h1_numeric(yy, ts)).T
    return float(np.abs(xx - P_).max()), float(np.abs(xx - P_ - eps * H_).max())


def accuracy(run, other) -> float:
    """The achieved accuracy of the run, measured: ``max |x − x_other|`` over ``[t0, t1]``
    against the run of :data:`OTHER_METHOD` at the same tolerances (at least
    :data:`verify.measure.ROUNDING_FLOOR`). Not read from the requested ``rtol``: SciPy's LSODA raises an
    ``rtol`` below its limit silently and levels off near 1e-12."""
    return max(float(np.abs(run.x[1:] - other.x[1:]).max()), ROUNDING_FLOOR)


def order_rate(eps, err, floor, k: int, tol: float) -> dict:
    """The rate of one tracking error by :func:`verify.measure.asymptotic_slope` over the ε sweep
    (coarse to fine, down to the measured accuracy floor), with ``at_floor``: every error within
    :data:`RATE_RESOLUTION` of its floor, i.e. ``error ≤ C·ε^k`` holds exactly
    (a degenerate instance, e.g. a ``p_st`` that does not depend on y: its errors are round-off)."""
    order = np.argsort(eps)[::-1]
    e_of = dict(zip(np.asarray(eps, float)[order], np.asarray(err, float)[order]))
    f_of = dict(zip(np.asarray(eps, float)[order], np.asarray(floor, float)[order]))
    res = asymptotic_slope(
        list(e_of),
        e_of.__getitem__,
        float(k),
        tol,
        window=min(RATE_WINDOW, len(e_of)),
        spread=tol,
        floor=f_of.__getitem__,
        resolution=RATE_RESOLUTION,
    )
    res["at_floor"] = at_accuracy_floor(err, floor, RATE_RESOLUTION)
    return res


def identically_zero(e: sp.Expr, points: list) -> bool:
    """Whether ``e`` is identically 0: by ``e == 0``, else not if it is ``≠ 0`` (beyond 1e-30 at 50
    digits) at one of ``points`` (values of its free symbols), else by ``sympy.simplify``."""
    if e == 0:
        return True
    symbols = sorted(e.free_symbols, key=str)
    for v in points:
        value = complex(e.evalf(50, subs={s: v for s in symbols}))
        if abs(value) > 1e-30:
            return False
    return sp.simplify(e) == 0


def p_st_constant(inst: CoupledChain) -> bool:
    """Whether theory's exact ``∂_y p_st`` is identically 0 (then ``h_1 ≡ 0`` and the tracking
    errors vanish but for the initial layer: the rates are not sharp, only the bounds are claimed).

    Decided exactly, cheapest proof first: an entry that is 0 as an expression is 0; an entry
    with a value ``≠ 0`` at a point of the checked grid (50 significant digits) is not
    identically 0; only an entry that is 0 at every such point goes to ``sympy.simplify``, which
    must prove it 0 (a user family's ``∂_y p_st`` can take ``simplify`` minutes to expand)."""
    lo, hi = inst.p["y_min"], inst.p["y_max"]
    points = [sp.Float(lo + f * (hi - lo), 50) for f in (0.2113, 0.5, 0.7887)]
    return all(identically_zero(e, points) for e in inst.sm.dp)


def rate_part(res: dict, k: int, what: str, degenerate: bool) -> Diagnostic:
    """An order's tracking rate: not measured to be another order (``fails`` of the rule), or,
    where ``p_st`` does not depend on y (``degenerate``, exact), every error at the accuracy
    floor (the bound ``error ≤ C·ε^k`` holds exactly)."""
    lo, hi = res["band"]
    exact = degenerate and res["at_floor"]["holds"]
    return Diagnostic(
        exact or res["verdict"] != "fails",
        {
            "verdict": "bound holds exactly (errors at the accuracy floor)"
            if exact
            else res["verdict"],
            "slope": res["slope"],
            "ci95": res["ci95"],
            "window": res["window"],
            "max_error_over_floor": res["at_floor"]["max_ratio"],
        },
        f"{what}: the rate rule's 95% interval is not disjoint from [{lo:g}, {hi:g}] with "
        f"slopes moving away from {k}, or, p_st independent of y (exact), every error ≤ "
        f"{RATE_RESOLUTION:g} × its measured accuracy (error ≤ C·ε^k exactly)",
    )


def tracking_parts(inst: CoupledChain, runs: list, others: list, gap: float) -> tuple[dict, dict]:
    """Part 3 against the theory: both tracking errors' rates over the ε sweep by the rate rule
    above the measured accuracy floor, and the correction lowering the error at every ε where
    the leading error is resolved. Also returns the limit ``tracking_rates_resolved``."""
    p = inst.p
    errors = [tracking_errors(inst, run, e) for e, run in zip(inst.eps, runs)]
    floor = [accuracy(a, b) for a, b in zip(runs, others)]
    e0, e1 = [a for a, _ in errors], [b for _, b in errors]
    r0 = order_rate(inst.eps, e0, floor, 1, p["slope_tol0"])
    r1 = order_rate(inst.eps, e1, floor, 2, p["slope_tol1"])
    degenerate = p_st_constant(inst)
    keys = ("slope", "ci95", "window", "verdict")
    figures = {
        "eps": inst.eps.tolist(),
        "err_order0": e0,
        "err_order1": e1,
        "accuracy_floor": floor,
        "nfev": [run.nfev for run in runs],
        "slope_order0": {k: r0[k] for k in keys},
        "slope_order1": {k: r1[k] for k in keys},
        "initial_layer_factor": float(np.exp(-gap * p["t0"] / inst.eps).max()),
    }
    resolved = [(a, b) for a, b, f in zip(e0, e1, floor) if a >= RATE_RESOLUTION * f]
    worst = float(max((ratio(b, a) for a, b in resolved), default=0.0))
    parts = {
        "tracking_order_eps": rate_part(r0, 1, "order-0 error", degenerate),
        "tracking_order_eps2": rate_part(r1, 2, "order-1 error", degenerate),
        "correction_reduces_error": Diagnostic(
            worst < 1.0,
            worst,
            "max err_order1/err_order0 < 1 over the ε whose order-0 error is resolved (≥ "
            f"{RATE_RESOLUTION:g} × the measured accuracy; none: the bound holds exactly)",
        ),
    }
    limit = Diagnostic(
        all(
            (degenerate and r["at_floor"]["holds"]) or r["verdict"] != "unresolved"
            for r in (r0, r1)
        ),
        {
            name: {
                "verdict": r["verdict"],
                "p_st_independent_of_y": degenerate,
                "floor_reached": r["floor_reached"],
                "why": r["why"],
                "resolved_points": len(r["h"]),
                "finest_resolved_eps": r["h"][-1] if r["h"] else None,
                "accuracy_floor_at_eps_min": floor[int(np.argmin(inst.eps))],
            }
            for name, r in (("order0", r0), ("order1", r1))
        },
        "each tracking error's rate is decided above the measured accuracy floor (a window of "
        f"resolved points, error ≥ {RATE_RESOLUTION:g} × max |x − x_other|), or, p_st "
        f"independent of y, every error sits at that floor; measured floor {min(floor):.2g} … {max(floor):.2g} "
        f"(at eps_min: {floor[int(np.argmin(inst.eps))]:.2g})",
    )
    return parts, figures, limit


def inside_grid_part(inst: CoupledChain, runs: list) -> tuple[dict, dict]:
    """Part 3: the y visited by every run lies in the checked grid ``[y_min, y_max]``."""
    p = inst.p
    y_range = [float(min(r.y.min() for r in runs)), float(max(r.y.max() for r in runs))]
    part = Diagnostic(
        p["y_min"] <= y_range[0] and y_range[1] <= p["y_max"],
        y_range,
        f"[min y, max y] visited ⊂ [{p['y_min']}, {p['y_max']}]",
    )
    return {"trajectory_inside_grid": part}, {"y_range_visited": y_range}


def drawn_trajectory(inst: CoupledChain) -> dict:
    """The figure's series: a run at ``TRAJECTORY_EPS`` over ``[0, t1]`` from ``x0`` drawn from
    the root seed (off the manifold), and ``p_st(y)`` on a grid around the y it visits."""
    p = inst.p
    x0 = np.random.default_rng(np.random.SeedSequence(inst.seed)).dirichlet(np.ones(inst.x0.size))
    t = np.linspace(0.0, p["t1"], TRAJECTORY_POINTS)
    run = inst.run(TRAJECTORY_EPS, x0, t_eval=t, method=TRAJECTORY_METHOD)
    ys = np.linspace(
        min(run.y.min(), p["y0"]) - MANIFOLD_MARGIN,
        run.y.max() + MANIFOLD_MARGIN,
        MANIFOLD_POINTS,
    )
    return {
        "trajectory_eps": TRAJECTORY_EPS,
        "trajectory_y": run.y.tolist(),
        "trajectory_x": run.x.tolist(),
        "manifold_y": ys.tolist(),
        "manifold_p_st": np.array(inst.sm.p_numeric(ys)).T.tolist(),
    }
