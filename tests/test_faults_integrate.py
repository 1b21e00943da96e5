"""Fault injection for ``integrate`` (issue #37): its inputs validated (real, shapes exact, nothing
broadcast or cast), and a right-hand side that is ±inf or NaN at ``t0`` or at a breakpoint ends
the run with status −3 and the last good state, in all five methods, Python and compiled."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numba import njit

from fastslow.numerics.integrators.base import RHS_SIG
from fastslow.numerics.integrators.integration import integrate

METHODS = ("rosw", "radau", "dopri5", "dop853", "auto")
Y0 = np.array([1.0, 2.0])


def run(fun, method, y0=Y0, **kw):
    """``integrate`` on ``[0, 1]`` with every warning an error (a cast is never silent)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return integrate(fun, (0.0, 1.0), y0, method=method, **kw)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_a_right_hand_side_non_finite_at_t0_is_status_3_at_y0(method, value):
    r = run(lambda t, y: np.full_like(y, value), method)
    assert r.status == -3 and not r.success and "non-finite" in r.message
    assert r.t.tolist() == [0.0] and r.y[:, -1].tolist() == Y0.tolist()


def test_a_newton_iteration_that_cannot_converge_with_finite_values_ends_step_too_small():
    """``y' = −1000·sign(y)`` from ``y = 1`` reaches 0 at ``t = 1e-3``; there Radau IIA's stage
    equations have no solution at any step (the field flips sign across 0), so Newton fails at
    every step size with finite values: the run ends with status −2 (step too small) at 1e-3, not
    −3 (which would say a value was non-finite)."""
    r = run(lambda t, y: -1e3 * np.sign(y), "radau", y0=np.array([1.0]), jac="zero")
    assert r.status == -2 and "non-finite" not in r.message, (r.status, r.message)
    assert r.t[-1] == pytest.approx(1e-3) and np.all(np.isfinite(r.y)) and r.nreject > 10
    # each attempt after a failure has a new matrix (its step halved, or its Jacobian refreshed
    # at the same step), so each factorises it: two LUs (real and complex system) per attempt
    assert r.njev >= 2 and r.nlu == 2 * (r.nsteps + r.nreject), (r.nlu, r.nsteps, r.nreject)
    # and each attempt stops as soon as its iteration is seen not to contract (rate ≥ 1 at the
    # second iteration here): two iterations of three stage evaluations, plus the start's three
    assert r.nfev <= 6 * (r.nsteps + r.nreject) + 3, (r.nfev, r.nsteps, r.nreject)


@njit(RHS_SIG)
def inf_everywhere_nb(t, y, p, seg, out):
    for i in range(y.size):
        out[i] = np.inf


@pytest.mark.parametrize("method", METHODS)
def test_a_compiled_right_hand_side_infinite_at_t0_is_status_3_too(method):
    r = run(inf_everywhere_nb, method, jac="zero")
    assert r.compiled and r.status == -3 and r.t.tolist() == [0.0]
    assert r.y[:, -1].tolist() == Y0.tolist()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_a_right_hand_side_non_finite_exactly_at_a_breakpoint_stops_there(method, value):
    def fun(t, y):
        return np.full_like(y, value) if t == 0.5 else -y

    r = run(fun, method, breakpoints=[0.5], t_eval=[0.0, 0.25, 0.5, 1.0])
    assert r.status == -3
    assert r.t[-1] == 0.5 and np.all(np.isfinite(r.y))
    assert np.all(np.diff(r.t) > 0), r.t  # the stop is an output time once, not twice
    np.testing.assert_allclose(r.y[:, -1], np.exp(-0.5) * Y0, rtol=1e-4)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "fun, y0, error, message",
    [
        (lambda t, y: -y + 0j, Y0, TypeError, "fun returned complex values"),
        (lambda t, y: -y, [1.0 + 0j, 2.0], TypeError, "y0 has complex entries"),
        (lambda t, y: -y, [True, False], TypeError, "y0 is boolean"),
        (lambda t, y: y > 0, Y0, TypeError, "fun returned boolean values"),
        (lambda t, y: np.array([-1.0]), Y0, ValueError, r"shape \(1,\), expected \(2,\)"),
        (lambda t, y: -np.vstack([y, y]), Y0, ValueError, r"shape \(2, 2\), expected \(2,\)"),
        (lambda t, y: -y[:, None], Y0, ValueError, r"shape \(2, 1\)"),
    ],
    ids=["complex rhs", "complex y0", "boolean y0", "boolean rhs", "length-1 rhs", "2-D", "column"],
)
def test_inputs_and_results_are_never_cast_or_broadcast(method, fun, y0, error, message):
    with pytest.raises(error, match=message):
        run(fun, method, y0=y0)


@pytest.mark.parametrize("method", ["rosw", "radau"])
def test_a_jacobian_of_the_wrong_shape_or_kind_is_refused(method):
    with pytest.raises(ValueError, match=r"jac returned shape \(4,\)"):
        run(lambda t, y: -y, method, jac=lambda t, y: -np.eye(2).ravel())
    with pytest.raises(TypeError, match="jac returned complex"):
        run(lambda t, y: -y, method, jac=lambda t, y: -np.eye(2) + 0j)


def test_an_attempt_that_meets_a_non_finite_stage_value_stops_at_once():
    """``f`` is +inf after t = 1/2: Radau IIA's attempts across it meet a non-finite stage value
    and are rejected at their first evaluation (three stages), not iterated to Newton's limit;
    the run ends non-finite just before 1/2. Evaluations: at most ``NEWTON_MAXITER`` iterations
    of three stages and one end-point call per accepted step, three per rejection, three to start."""
    from fastslow.numerics.integrators import controllers  # the Newton limit of the methods

    def f(t, y):
        return np.full_like(y, np.inf) if t > 0.5 else -y

    r = run(f, "radau", y0=np.array([1.0]), jac="zero")
    assert r.status == -3 and 0.49 < r.t[-1] <= 0.5 and r.nreject > 10
    bound = (3 * controllers.NEWTON_MAXITER + 1) * r.nsteps + 3 * r.nreject + 3
    assert r.nfev <= bound, (r.nfev, bound, r.nsteps, r.nreject)


@pytest.mark.parametrize("method", ["dopri5", "rosw", "radau"])
def test_a_first_step_below_the_spacing_of_t_is_step_too_small_not_non_finite(method):
    """At t = 1e20 the spacing of floats is 16384: the first step the problem asks for is below
    what t can resolve, so the run stops at once with status −2 (nothing non-finite was met)."""
    r = integrate(lambda t, y: -1e-3 * y, (1e20, 1e20 + 1e8), np.array([1.0]), method=method)
    assert r.status == -2 and "non-finite" not in r.message and r.t.tolist() == [1e20]
