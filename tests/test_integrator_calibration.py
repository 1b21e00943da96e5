"""Error control of the four integrators, calibrated on problems with known solutions.

Three oracles, none of them the code under test (the first two are
:mod:`verify.integrator_calibration`, which claims F1 and D2 also run as their part
``error_control_calibrated``):

1. **The error estimate of one step**, from the threshold tolerance: a first step of length ``h``
   (span ``h``, ``atol`` negligible) is accepted iff ``‖est/max(|y₀|, |y₁|)‖_RMS ≤ rtol``, so the
   smallest accepted ``rtol`` (found by bisection) *is* the scaled norm of the estimate. It must
   equal SciPy's (``RK45``, ``DOP853`` and ``Radau`` use the same estimates and norm) and, for
   ROS34PW2, the norm of ``(R − R̂)(hA)y₀`` on ``y' = Ay`` from the stability functions
   ``R(z) = 1 + z·bᵀ(I − z(α + Γ))⁻¹1`` of the tableau (whose coefficients
   ``tests/test_integrators.py`` checks against the order conditions). A constant factor in an
   estimate, in its filter or in the norm moves the threshold by that factor.
2. **The norm does not depend on the dimension**: the RMS norm of ``k`` identical copies of a
   system equals that of one copy, so integrating the copies takes exactly the same steps (a norm
   off by ``√n``, or a sum for a mean, changes them).
3. **Tolerance proportionality over 1e-3 … 1e-10**: the achieved relative global error at the end
   on ``y' = Ay`` (``expm``), a stiff linear system (eigenvalues −1 … −1e4, implicit methods) and
   the logistic equation (closed form) behaves like ``C·rtol^e`` with ``e = p/(q + 1)`` for a
   method of order ``p`` whose estimate is ``O(h^{q+1})``: ``e = 1`` for DOPRI5 (5/5), DOP853
   (8/8) and ROS34PW2 (3/3), ``e = 5/4`` for Radau IIA (order 5, estimate ``O(h⁴)``). The fitted
   exponent lies within :data:`EXPONENT_TOL` of ``e`` and every ``error/rtol^e`` within
   :data:`LEVEL_BAND` (measured ``C`` between 6e-3 and 7 on these problems): an estimate too small
   by a factor 5 or more, or too large by a factor 20 or more, leaves the band.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from fastslow.numerics.integrators.integration import integrate
from fastslow.verify import integrator_calibration

IMPLICIT = integrator_calibration.IMPLICIT


@pytest.mark.parametrize("method", ["dopri5", "dop853", "radau", "rosw"])
@pytest.mark.parametrize(("n", "h"), [(3, 0.05), (3, 0.2), (3, 0.5), (11, 0.3)])
def test_one_step_error_estimate_equals_the_oracles(method, n, h):
    """Our threshold tolerance equals SciPy's (DOPRI5, DOP853, Radau IIA) or the norm of
    ``(R − R̂)(hA)y₀`` (ROS34PW2) to 1e-6 relative (measured: 2e-8 or better); ``n = 11`` takes the
    eight-lane loops and the scalar tail. (DOP853 at ``h = 0.05`` sits at SciPy's ``rtol`` floor
    2.2e-14 and is skipped.)"""
    if method == "dop853" and h < 0.1:
        pytest.skip("the estimate is below SciPy's smallest rtol")
    assert (
        integrator_calibration.estimate_deviation(method, n, h)
        <= integrator_calibration.THRESHOLD_REL
    )


@pytest.mark.parametrize("method", ["dopri5", "dop853", "radau", "rosw"])
def test_identical_copies_take_the_same_steps(method):
    """16 identical copies of a 3-dimensional system take the steps of one copy: same accepted
    and rejected steps, and the same solution (to rounding)."""
    assert integrator_calibration.copies_take_the_same_steps(method)


def test_the_claims_error_control_part_holds_for_every_method():
    part = integrator_calibration.error_control_part(("dopri5", "dop853", "radau", "rosw"))
    assert part.holds, part.value


# --------------------------------------------------------------------------- proportionality

RTOLS = 10.0 ** -np.arange(3, 11)
EXPONENT = {"dopri5": 1.0, "dop853": 1.0, "rosw": 1.0, "radau": 1.25}
"""``p/(q + 1)``: the method's order over the order of its local error estimate."""
EXPONENT_TOL = 0.15
LEVEL_BAND = (1e-3, 1e1)
MAX_STEPS = 40_000
"""About 2.5 times the most any of these runs takes (ROS34PW2 on the linear problem at rtol =
1e-10: 15 549 steps; Radau IIA at most 1 530): a broken estimate ends the run, not the test
session."""


def _linear_problem():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 4))
    A = A - A.T - 0.5 * np.eye(4)  # rotation with decay
    y0 = rng.standard_normal(4)
    return (lambda t, y: A @ y), (lambda t, y: A), y0, 3.0, scipy.linalg.expm(3.0 * A) @ y0


def _stiff_problem():
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    A = Q @ np.diag(-np.logspace(0, 4, 4)) @ Q.T
    y0 = rng.standard_normal(4)
    return (lambda t, y: A @ y), (lambda t, y: A), y0, 2.0, scipy.linalg.expm(2.0 * A) @ y0


def _logistic_problem():
    r, K, T = 1.5, 2.0, 4.0
    y0 = np.array([0.1, 0.5])
    exact = K * y0 * np.exp(r * T) / (K + y0 * (np.exp(r * T) - 1))
    return (
        (lambda t, y: r * y * (1 - y / K)),
        (lambda t, y: np.diag(r * (1 - 2 * y / K))),
        y0,
        T,
        exact,
    )


CASES = (
    [("linear", _linear_problem, m) for m in ("dopri5", "dop853", "radau", "rosw")]
    + [("stiff", _stiff_problem, m) for m in IMPLICIT]
    + [("logistic", _logistic_problem, m) for m in ("dopri5", "dop853", "radau", "rosw")]
)


@pytest.mark.parametrize(
    ("name", "problem", "method"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES]
)
def test_global_error_is_proportional_to_the_tolerance(name, problem, method):
    """Achieved relative error ``e(rtol)`` at the end (``atol = 1e-6·rtol``): the slope of
    ``log e`` against ``log rtol`` within ``EXPONENT ± 0.15`` and every ``e/rtol^EXPONENT`` in
    ``[1e-3, 1e1]``."""
    f, jac, y0, T, exact = problem()
    errs = []
    for rtol in RTOLS:
        kw = {"jac": jac} if method in IMPLICIT else {}
        r = integrate(
            f, (0.0, T), y0, method=method, rtol=rtol, atol=rtol * 1e-6, max_steps=MAX_STEPS, **kw
        )
        assert r.success, (rtol, r.message)
        errs.append(float(np.sqrt(np.mean(((r.y[:, -1] - exact) / exact) ** 2))))
    errs = np.array(errs)
    e = EXPONENT[method]
    slope = float(np.polyfit(np.log(RTOLS), np.log(errs), 1)[0])
    level = errs / RTOLS**e
    assert abs(slope - e) <= EXPONENT_TOL, (slope, errs)
    assert LEVEL_BAND[0] <= level.min() and level.max() <= LEVEL_BAND[1], level
