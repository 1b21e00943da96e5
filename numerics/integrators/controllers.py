"""Step-size controllers: the next step size after a trial step; acceptance is the driver's.

A controller sees the error norm of a trial step (and what the step reports about its Newton
iteration) and returns the next step size. It does not decide acceptance: the driver accepts when
the error norm is at most 1 (or always, with a fixed step size) and then calls
:func:`after_accept` or :func:`after_reject`. (In diffrax the step-size controller's
``adapt_step_size`` decides acceptance itself and returns it with the next step; in SciPy both are
decided inside the method's ``_step_impl``.)

Two controllers, selected by ``opt[O_CONTROLLER]``:

* :data:`INTEGRAL` (explicit and Rosenbrock methods): ``h·min(5, max(0.2, 0.9·err^(−1/(q+1))))``
  with ``q`` the order of the embedded error estimate (``opt[O_EXPONENT] = 1/(q+1)``), never
  growing after a rejection (SciPy's ``RungeKutta``).
* :data:`PREDICTIVE` (Radau IIA): Gustafsson's predictive controller as in SciPy's ``Radau`` and
  Hairer–Wanner's RADAU5: ``min(1, (h/h_old)(err_old/err)^¼)·err^(−¼)`` with a safety factor that
  shrinks with the number of Newton iterations, and the step kept when it would grow by less than
  1.2 and the Jacobian is still good (so the factorisations are reused).

Both keep ``h`` when the step was shortened to land on a breakpoint (``last`` and ``hs < h``), and
fixed steps (``h_fixed > 0``) are never adapted. ``cs`` holds the controller's memory
(``[h_old, err_old]``, reset per segment by the driver).
"""

from __future__ import annotations

from numba import njit

from fastslow.numerics.integrators.base import IW_NITER, IW_RECOMPUTE
from fastslow.numerics.integrators.numba_binding import COMPILED_ONLY, NO_C_ENTRY

INTEGRAL, PREDICTIVE = 0, 1
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 5.0
NEWTON_MAXITER = 6
"""Newton iterations of an implicit step (SciPy's ``Radau``); also sets the predictive safety."""


@njit(cache=True, inline="always")
def integral_factor(err, exponent, rejected):
    """``min(5, max(0.2, 0.9·err^(−exponent)))``, at most 1 after a rejection. Inlined: called
    with ``rejected=True`` a compiled callee would be compiled once more for that constant."""
    if err == 0.0:
        fac = MAX_FACTOR
    else:
        fac = min(MAX_FACTOR, max(MIN_FACTOR, SAFETY * err ** (-exponent)))
    if rejected:
        fac = min(fac, 1.0)
    return fac


@njit(cache=True, **COMPILED_ONLY)
def _predictive_mult(hs, en, cs):
    h_old, err_old = cs[0], cs[1]
    if err_old < 0.0 or h_old < 0.0 or en == 0.0:
        return 1.0
    return hs / h_old * (err_old / en) ** 0.25


@njit(cache=True, **COMPILED_ONLY)
def _newton_safety(iw):
    return 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + iw[IW_NITER])


@njit(cache=True, **NO_C_ENTRY)
def after_accept(kind, h, hs, en, exponent, rejected, last, h_fixed, cs, iw):
    """The next step size after an accepted step of size ``hs`` with error ``en``."""
    if h_fixed > 0.0:
        return h
    if kind == INTEGRAL:
        fac = integral_factor(en, exponent, rejected)
    else:
        fac = min(1.0, _predictive_mult(hs, en, cs)) * (en**-0.25 if en > 0 else 10.0)
        fac = min(10.0, _newton_safety(iw) * fac)
        if iw[IW_RECOMPUTE] == 0 and fac < 1.2:
            fac = 1.0
        cs[0] = hs
        cs[1] = en
    if not last or hs >= h:
        return hs * fac
    return h


@njit(cache=True, **NO_C_ENTRY)
def after_reject(kind, hs, en, exponent, cs, iw):
    """The step size to retry with after a step of size ``hs`` was rejected with error ``en``."""
    if kind == INTEGRAL:
        return hs * integral_factor(en, exponent, True)
    fac = min(1.0, _predictive_mult(hs, en, cs)) * en**-0.25
    return hs * max(MIN_FACTOR, _newton_safety(iw) * fac)
