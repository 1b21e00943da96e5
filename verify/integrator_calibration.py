"""The integrators' error control against oracles that are not the integrators themselves.

An adaptive step is accepted iff the scaled norm of its error estimate is at most 1. With ``atol``
negligible, the norm ``‖est/(rtol·max(|y₀|, |y₁|))‖_RMS`` is exactly proportional to ``1/rtol``,
so the smallest ``rtol`` at which a first step of length ``h`` (over a span ``h``) is accepted, found
by bisection in ``log rtol`` (:func:`threshold_rtol`), *is* the scaled norm of that step's error
estimate. On ``y' = Ay`` (:func:`linear_test_problem`) it is compared with

* SciPy's for DOPRI5, DOP853 and Radau IIA (``RK45``, ``DOP853``, ``Radau``: the same estimates and
  the same norm, an implementation that shares no code with ours);
* for ROS34PW2 (no SciPy counterpart), the norm of ``(R − R̂)(hA)y₀`` from the stability functions
  of its tableau with ``W = A``: the stages solve ``(I − (α + Γ) ⊗ hA)K = 1 ⊗ hAy₀`` and
  ``y₁ − ŷ₁ = Σ (b_i − b̂_i) K_i`` (the coefficients are checked exactly against the order
  conditions by ``tests/test_integrators.py``).

A constant factor in an estimate, in its filter or in the norm moves the threshold by that factor.
:func:`copies_take_the_same_steps` checks that the RMS norm does not depend on the dimension
(``k`` identical copies of a system take exactly the steps of one copy), which a norm off by ``√n``
breaks. :func:`error_control_part` is the conclusion part claims that use the integrators add
(F1 for Radau IIA and ROS34PW2, D2 for DOPRI5); ``tests/test_integrator_calibration.py`` adds the
tolerance-proportionality calibration over ``rtol = 1e-3 … 1e-10``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.integrate as si

from fastslow.numerics.integrators import tableaux
from fastslow.numerics.integrators.integration import integrate

from .verdict import Diagnostic

IMPLICIT = ("radau", "rosw")
SCIPY_METHODS = {"dopri5": si.RK45, "dop853": si.DOP853, "radau": si.Radau}
NEGLIGIBLE_ATOL = 1e-300
"""Against ``rtol·|y|``: the scaled norm is then exactly proportional to ``1/rtol``."""
THRESHOLD_REL = 1e-6
"""Our threshold ``rtol`` equals the oracle's to this (measured: 2e-8 or better; the bisection
resolves ``2^-44`` of 15 decades)."""
CALIBRATION_STEPS = ((3, 0.2), (11, 0.3))
"""``(n, h)`` of the one-step comparisons: ``n = 11`` takes the eight-lane loops and the tail."""
COPIES = 16
MAX_STEPS = 5_000
"""Each calibration run takes at most a few hundred steps (ROS34PW2 over [0, 3] at rtol = 1e-6:
the most); a broken estimate ends the run here, and the part fails, instead of running on."""


def linear_test_problem(n: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(A, y₀)``: ``A = 0.5·N(0, 1) − I`` (``n×n``), ``y₀ ~ N(0, 1)``, seeded."""
    rng = np.random.default_rng(seed)
    return 0.5 * rng.standard_normal((n, n)) - np.eye(n), rng.standard_normal(n)


def ours_accepts(method: str, A, y0, h: float, rtol: float) -> bool:
    """Our first step of length ``h`` on ``y' = Ay`` is accepted at ``rtol``."""
    kw = {"jac": lambda t, y: A} if method in IMPLICIT else {}
    r = integrate(
        lambda t, y: A @ y,
        (0.0, h),
        y0,
        method=method,
        rtol=rtol,
        atol=NEGLIGIBLE_ATOL,
        first_step=h,
        max_steps=MAX_STEPS,
        **kw,
    )
    return bool(r.success and r.nreject == 0)


def scipy_accepts(method: str, A, y0, h: float, rtol: float) -> bool:
    """SciPy's first step of length ``h`` on ``y' = Ay`` is accepted at ``rtol``."""
    kw = {"jac": A} if method == "radau" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = SCIPY_METHODS[method](
            lambda t, y: A @ y, 0.0, y0, h, rtol=rtol, atol=NEGLIGIBLE_ATOL, first_step=h, **kw
        )
        s.step()
    return bool(s.t == h)


def threshold_rtol(accepts, *args) -> float:
    """The smallest ``rtol`` at which ``accepts(*args, rtol)`` holds (bisection in ``log10 rtol``
    on ``[1e-13, 1e2]``); NaN when it is not accepted at 1e2 or already accepted at 1e-13."""
    lo, hi = -13.0, 2.0
    if not accepts(*args, 10.0**hi) or accepts(*args, 10.0**lo):
        return float("nan")
    for _ in range(44):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if accepts(*args, 10.0**mid) else (mid, hi)
    return 10.0**hi


def rosenbrock_estimate_norm(A, y0, h: float) -> float:
    """``‖(R − R̂)(hA)y₀ / max(|y₀|, |y₁|)‖_RMS`` of ROS34PW2 with ``W = A`` (module docstring)."""
    n, s = y0.size, tableaux.ROS_B.size
    Z = h * A
    M = np.eye(s * n) - np.kron(tableaux.ROS_ALPHA + tableaux.ROS_GAMMA_MATRIX, Z)
    K = np.linalg.solve(M, np.tile(Z @ y0, s)).reshape(s, n)
    y1 = y0 + tableaux.ROS_B @ K
    est = (tableaux.ROS_B - tableaux.ROS_BHAT) @ K
    return float(np.sqrt(np.mean((est / np.maximum(abs(y0), abs(y1))) ** 2)))


def estimate_deviation(method: str, n: int, h: float) -> float:
    """``|threshold/oracle − 1|`` for one step of ``method`` on :func:`linear_test_problem`."""
    A, y0 = linear_test_problem(n)
    ours = threshold_rtol(ours_accepts, method, A, y0, h)
    ref = (
        rosenbrock_estimate_norm(A, y0, h)
        if method == "rosw"
        else threshold_rtol(scipy_accepts, method, A, y0, h)
    )
    return abs(ours / ref - 1.0) if np.isfinite(ours) and ref > 0 else float("inf")


def copies_take_the_same_steps(method: str, k: int = COPIES) -> bool:
    """``k`` identical copies of a 3-dimensional system take the accepted and rejected steps of
    one copy and give its solution (to 1e-12 relative)."""
    A, y0 = linear_test_problem(3, seed=4)
    runs = []
    for M, y in ((A, y0), (np.kron(np.eye(k), A), np.tile(y0, k))):
        kw = {"jac": lambda t, y, M=M: M} if method in IMPLICIT else {}
        runs.append(
            integrate(
                lambda t, y, M=M: M @ y,
                (0.0, 3.0),
                y,
                method=method,
                rtol=1e-6,
                atol=1e-9,
                max_steps=MAX_STEPS,
                **kw,
            )
        )
    one, many = runs
    same = one.success and (one.nsteps, one.nreject) == (many.nsteps, many.nreject)
    expected = np.tile(one.y[:, -1], k)
    return bool(same and np.allclose(many.y[:, -1], expected, rtol=1e-12, atol=1e-15))


def error_control_part(methods) -> Diagnostic:
    """``error_control_calibrated``: for each of ``methods``, the one-step error estimate equals
    the oracle's (:func:`estimate_deviation` ≤ :data:`THRESHOLD_REL` at every
    :data:`CALIBRATION_STEPS`) and identical copies take the same steps."""
    worst, bad = 0.0, []
    for method in methods:
        dev = max(estimate_deviation(method, n, h) for n, h in CALIBRATION_STEPS)
        worst = max(worst, dev)
        if not (dev <= THRESHOLD_REL and copies_take_the_same_steps(method)):
            bad.append(method)
    oracle = ", ".join(
        "the stability functions" if m == "rosw" else f"SciPy's {SCIPY_METHODS[m].__name__}"
        for m in methods
    )
    return Diagnostic(
        not bad,
        {"methods_failing": bad, "estimate_rel_deviation_max": worst},
        f"{', '.join(methods)}: one-step error estimate = that of {oracle} to {THRESHOLD_REL:g} "
        f"relative (threshold rtol on y' = Ay, n = 3, 11), and {COPIES} identical copies take "
        "the steps of one",
    )
