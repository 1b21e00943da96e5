"""F1's integrator checks (:mod:`verify.checks.f1`): the suite's integrators against the reference
at the deciding ε, and their orders measured on a problem with a known solution.

A module of the claim unit :mod:`verify.checks.f1`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f1.claim`.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy.integrate import solve_ivp

from fastslow.numerics.integrators.integration import ORDERS as INTEGRATOR_ORDERS
from fastslow.numerics.integrators.integration import integrate

from ...measure import (
    asymptotic_slope,
    ratio,
    relative_error,
)
from .instance import METHODS, RATE_ORDERS, Instance

REFERENCE_FACTOR = 100.0
"""Allowed disagreement of two integrators at ``t = 1``, relative to ``‖X(1)‖``:
``REFERENCE_FACTOR·(rtol + √n·atol/‖X(1)‖)``, ``n = T·d``. Each method keeps its local error per
unit step below ``atol + rtol·|x_i|`` per component, i.e. ``≤ rtol‖X‖ + √n·atol`` in the 2-norm;
the factor allows for the accumulation over the flow (a contracting flow: the local errors are
damped, not summed). Measured on the default instance at ``rtol = 1e-9`` over ε = 1e-2 … 1e-5:
our Radau IIA, our ROS34PW2, SciPy's Radau and BDF all within 4.2·rtol of each other; a Radau IIA
weight perturbed by 1e-6 relative moves our Radau 387·rtol away."""


ORDER_PROBLEM_Y0 = (1.0, 0.0)
"""The fixed-step order test's problem (:func:`integrator_orders`): a forced pendulum
``θ'' = −sin θ + 0.1·cos t`` (non-autonomous: the stage times enter) on ``[0, 1]`` from these
values; its reference solution by SciPy's DOP853 at ``rtol = 1e-13, atol = 1e-15``
(:data:`ORDER_FLOOR`)."""


ORDER_STEPS = 2.0 ** -np.arange(1, 10)
"""Its fixed steps ``h = 1/2 … 1/512`` on ``[0, 1]``."""


ORDER_FLOOR = 1e-14
"""Its accuracy floor (the reference's tolerance, rounding of the ``1/h`` steps on values of size
1): errors below ``RATE_RESOLUTION·ORDER_FLOOR`` end the ladder."""


ORDER_TOL = 0.3
"""Band of the fixed-step order: ``[k − 0.3, k + 0.3]`` (5 for Radau IIA, 3 for ROS34PW2), over a
window of :data:`ORDER_WINDOW` points."""


ORDER_WINDOW = 4


INTEGRATOR_PARTS = ("integrators_agree_with_reference", "integrators_achieve_their_order")
"""The parts that verify the integrator under test (when one fails, the check has decided)."""


def deciding_eps(p: dict, rates: dict) -> dict:
    """``{order name: ε}``: the finest ε of each order's window (the finest evaluated one where
    there is none, ``eps_max`` where none was)."""
    out = {}
    for name, res in rates.items():
        w = res["window"]
        out[name] = float(w[1]) if w else float(res["h"][-1]) if res["h"] else float(p["eps_max"])
    return out


def agreement_bound(p: dict, X: np.ndarray) -> float:
    """The allowed relative disagreement of two integrators at ``t = 1``:
    ``REFERENCE_FACTOR·(rtol + √n·atol/‖X(1)‖)`` (:data:`REFERENCE_FACTOR`)."""
    return REFERENCE_FACTOR * (p["rtol"] + np.sqrt(X.size) * ratio(p["atol"], np.linalg.norm(X)))


def integrator_agreement(inst: Instance, rates: dict) -> dict:
    """Our two stiff methods against an independent reference, SciPy's ``solve_ivp`` (its Radau
    and BDF, which share no code with ours), at the ε that decide each order's rate
    (:func:`deciding_eps`), all at the check's ``rtol``/``atol``, states at ``t = 1`` compared
    relative to ``‖X(1)‖`` against :func:`agreement_bound`.

    Attribution: ``reference_consistent`` when SciPy's two methods agree with each other;
    ``ours_agree`` when each of ours agrees with SciPy's Radau. Ours off while the reference is
    consistent: the code under test is wrong (a conclusion part fails). The reference
    inconsistent: the tolerances cannot decide this instance (a limit, ``undecided``)."""
    p = inst.p
    at_eps = deciding_eps(p, rates)
    dev_ref, dev_ours, bound, worst = 0.0, {m: 0.0 for m in METHODS}, float("inf"), {}
    for name, spec in RATE_ORDERS.items():
        e, k = at_eps[name], spec["order"]
        ref = inst.end_state(k, e, "scipy:Radau")
        b = agreement_bound(p, ref)
        bound = min(bound, b)
        d_ref = relative_error(inst.end_state(k, e, "scipy:BDF"), ref)
        dev_ref = max(dev_ref, d_ref / b)
        for m in METHODS:
            dev_ours[m] = max(dev_ours[m], relative_error(inst.end_state(k, e, m), ref) / b)
        worst[name] = {"bound": b, "scipy_bdf_vs_radau": d_ref}
    return {
        "eps": at_eps,
        "bound": bound,
        "per_order": worst,
        "reference_deviation_in_bounds": dev_ref,
        "ours_deviation_in_bounds": dev_ours,
        "reference_consistent": bool(dev_ref <= 1.0),
        "ours_agree": bool(max(dev_ours.values()) <= 1.0),
    }


def order_problem(t, y):
    """The fixed-step order test's right-hand side (:data:`ORDER_PROBLEM_Y0`)."""
    return np.array([y[1], -np.sin(y[0]) + 0.1 * np.cos(t)])


def order_problem_jacobian(t, y):
    """Its Jacobian."""
    return np.array([[0.0, 1.0], [-np.cos(y[0]), 0.0]])


@cache
def order_problem_solution() -> np.ndarray:
    """Its solution at ``t = 1`` by SciPy's DOP853 (independent of our integrators)."""
    sol = solve_ivp(
        order_problem,
        (0.0, 1.0),
        np.array(ORDER_PROBLEM_Y0),
        method="DOP853",
        rtol=1e-13,
        atol=1e-15,
    )
    return sol.y[:, -1]


def integrator_orders() -> dict:
    """``{method: asymptotic_slope result}``: the order each of our stiff methods achieves with
    fixed steps (:data:`ORDER_STEPS`) on a smooth non-stiff problem, decided by the rate
    rule against its classical order (:data:`numerics.integrators.ORDERS`) in the band
    ``± ORDER_TOL``. A wrong tableau entry (any coefficient off by 1e-6 relative breaks an order
    condition) leaves an error plateau: the order falls to what the broken condition allows."""
    exact = order_problem_solution()
    out = {}
    for m in METHODS:

        def err(h, m=m):
            r = integrate(
                order_problem,
                (0.0, 1.0),
                np.array(ORDER_PROBLEM_Y0),
                method=m,
                jac=order_problem_jacobian,
                h_fixed=float(h),
            )
            return float(np.linalg.norm(r.y[:, -1] - exact)) if r.success else float("nan")

        out[m] = asymptotic_slope(
            ORDER_STEPS,
            err,
            float(INTEGRATOR_ORDERS[m]),
            ORDER_TOL,
            window=ORDER_WINDOW,
            spread=ORDER_TOL,
            floor=ORDER_FLOOR,
        )
    return out


@cache
def verified_orders() -> dict:
    """:func:`integrator_orders`, once per process (it depends on the code only)."""
    return integrator_orders()
