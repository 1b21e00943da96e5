"""Error control of the four integrators, calibrated on problems with known solutions.

Three oracles, none of them the code under test:

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
import scipy.integrate as si
import scipy.linalg

from fastslow.numerics.integrators import integrate
from fastslow.numerics.integrators import tableaux as tb

IMPLICIT = ("radau", "rosw")
SCIPY = {"dopri5": si.RK45, "dop853": si.DOP853, "radau": si.Radau}
ATOL = 1e-300
"""Negligible against ``rtol·|y|``: the scaled norm is then exactly proportional to ``1/rtol``."""


def _linear(n=3, seed=0):
    rng = np.random.default_rng(seed)
    A = 0.5 * rng.standard_normal((n, n)) - np.eye(n)
    return A, rng.standard_normal(n)


def _ours_accepts(method, A, y0, h, rtol):
    kw = {"jac": lambda t, y: A} if method in IMPLICIT else {}
    r = integrate(
        lambda t, y: A @ y, (0.0, h), y0, method=method, rtol=rtol, atol=ATOL, first_step=h, **kw
    )
    assert r.success
    return r.nreject == 0


def _scipy_accepts(method, A, y0, h, rtol):
    kw = {"jac": A} if method == "radau" else {}
    s = SCIPY[method](lambda t, y: A @ y, 0.0, y0, h, rtol=rtol, atol=ATOL, first_step=h, **kw)
    s.step()
    return s.t == h


def _threshold(accepts, *args) -> float:
    """The smallest ``rtol`` at which the first step is accepted (bisection in ``log10 rtol``)."""
    lo, hi = -13.0, 2.0
    assert accepts(*args, 10.0**hi) and not accepts(*args, 10.0**lo)
    for _ in range(44):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if accepts(*args, 10.0**mid) else (mid, hi)
    return 10.0**hi


@pytest.mark.parametrize("method", ["dopri5", "dop853", "radau"])
@pytest.mark.parametrize(("n", "h"), [(3, 0.2), (3, 0.5), (11, 0.3)])
def test_one_step_error_estimate_equals_scipys(method, n, h):
    """Our threshold tolerance equals SciPy's to 1e-6 relative (measured: 2e-8 or better); ``n =
    11`` takes the eight-lane loops and the scalar tail."""
    A, y0 = _linear(n)
    with np.errstate(all="ignore"):
        ours = _threshold(_ours_accepts, method, A, y0, h)
        ref = _threshold(_scipy_accepts, method, A, y0, h)
    assert ours == pytest.approx(ref, rel=1e-6), (ours, ref)


def _rosw_estimate_norm(A, y0, h) -> float:
    """``‖(R − R̂)(hA)y₀ / max(|y₀|, |y₁|)‖_RMS`` from the stability functions of the tableau: the
    stages ``K`` of a Rosenbrock method with ``W = A`` on ``y' = Ay`` solve
    ``(I − (α + Γ) ⊗ hA) K = 1 ⊗ hAy₀``, ``y₁ = y₀ + Σ b_i K_i``, ``ŷ₁ = y₀ + Σ b̂_i K_i``."""
    n, s = y0.size, tb.ROS_B.size
    Z = h * A
    M = np.eye(s * n) - np.kron(tb.ROS_ALPHA + tb.ROS_GAMMA_MATRIX, Z)
    K = np.linalg.solve(M, np.tile(Z @ y0, s)).reshape(s, n)
    y1 = y0 + tb.ROS_B @ K
    est = (tb.ROS_B - tb.ROS_BHAT) @ K
    return float(np.sqrt(np.mean((est / np.maximum(abs(y0), abs(y1))) ** 2)))


@pytest.mark.parametrize(("n", "h"), [(3, 0.05), (3, 0.5), (11, 0.2)])
def test_one_step_rosenbrock_estimate_equals_the_stability_functions(n, h):
    """ROS34PW2's threshold tolerance equals the norm of ``(R − R̂)(hA)y₀`` to 1e-6 relative."""
    A, y0 = _linear(n)
    ours = _threshold(_ours_accepts, "rosw", A, y0, h)
    assert ours == pytest.approx(_rosw_estimate_norm(A, y0, h), rel=1e-6)


@pytest.mark.parametrize("method", ["dopri5", "dop853", "radau", "rosw"])
def test_identical_copies_take_the_same_steps(method):
    """``k = 16`` identical copies of a 3-dimensional system take the steps of one copy: same
    accepted and rejected steps, and the same solution (to rounding)."""
    A, y0 = _linear(seed=4)
    big = np.kron(np.eye(16), A)
    runs = []
    for M, y in ((A, y0), (big, np.tile(y0, 16))):
        kw = {"jac": lambda t, y, M=M: M} if method in IMPLICIT else {}
        runs.append(
            integrate(
                lambda t, y, M=M: M @ y, (0.0, 3.0), y, method=method, rtol=1e-6, atol=1e-9, **kw
            )
        )
    one, many = runs
    assert (one.nsteps, one.nreject) == (many.nsteps, many.nreject)
    np.testing.assert_allclose(
        many.y[:, -1].reshape(16, 3), np.tile(one.y[:, -1], (16, 1)), rtol=1e-12, atol=1e-15
    )


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
