"""The one driver: segments, breakpoints, accept/reject, counters and dense output for every method.

:func:`drive` integrates from ``stops[0]`` through ``stops[1], stops[2], …`` and lands *exactly*
on every stop (the step is clipped, never interpolated): stops are the breakpoints of
piecewise-constant parameters and, without dense output, the output times. On the way from
``stops[k-1]`` to ``stops[k]`` the problem functions get segment index ``segs[k]``, so a stage
evaluated at the right end of a segment still sees that segment's parameters (the left limit),
never the next layer's. With dense output, the times ``t_dense`` are filled from the continuous
extension of the accepted step that covers them (exactly ``y`` at a step end).

A method is its four functions (:mod:`numerics.integrators.base`); the driver calls the step,
decides acceptance (error norm ≤ 1, or every step with a fixed step size), asks the controller
(:mod:`numerics.integrators.controllers`) for the next step size and counts. Adding a method means
writing its four functions, one entry point (:func:`drive_radau` and its siblings: the driver
with the method's functions bound) and one line of :data:`METHODS`, not a loop.

**Why an entry point per method.** The method's functions reach :func:`drive` as compile-time
constants (Numba dispatchers), so the driver is compiled once per method with direct calls to
them, and only the problem's ``rhs`` and ``jac`` are first-class function arguments (one compiled
driver serves every problem). Passing the four method functions as first-class arguments too
cost about 0.2 ms per :func:`numerics.integrators.integrate` call in Numba's argument dispatch
(two signature look-ups per function argument), a tenth of a whole run of the benchmark flow.

**Compilation is lazy**: nothing is compiled at import; :func:`compiled` compiles (or loads from
Numba's on-disk cache) a method's entry point, with its driver and functions, the first time the
method is used with compiled problem functions. Python callables run the same source uncompiled
(:func:`python_functions`).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
from numba import njit, types

from fastslow.numerics.integrators import dopri5, radau, rosw
from fastslow.numerics.integrators.base import (
    C128,
    F64,
    I64,
    IW_REJECTED,
    IW_STIFF,
    JAC_TYPE,
    MAX_STEPS,
    N_ACCEPT,
    N_REJECT,
    NEWTON_RETRY,
    NEWTON_SHRINK,
    NOT_FINITE,
    O_CONTROLLER,
    O_EXPONENT,
    O_H,
    O_HFIXED,
    O_SSTOP,
    O_TSTOP,
    RHS_TYPE,
    STEP_TOO_SMALL,
    STIFF,
    SUCCESS,
    step_length,
)
from fastslow.numerics.integrators.controllers import (
    INTEGRAL,
    PREDICTIVE,
    after_accept,
    after_reject,
)

DRIVE_SIG = types.int64(
    RHS_TYPE,
    JAC_TYPE,
    F64,
    F64,
    F64,
    I64,
    F64,
    F64,
    C128,
    I64,
    types.float64[:, ::1],
    F64,
    types.float64[:, ::1],
    types.float64,
    types.int64,
    I64,
)


@njit(cache=True)
def drive(
    start, step, accept, interp, rhs, jac, y0, p, stops, segs, opt, ws, wc, iw, Yout, t_dense,
    Ydense, h0, max_steps, counters,
):  # fmt: skip
    """Integrate through ``stops`` with the method ``(start, step, accept, interp)``; the status."""
    y = y0.copy()
    ynew = np.empty(y0.size)
    cs = np.empty(2)  # the controller's memory
    h_fixed = opt[O_HFIXED]
    kind = int(opt[O_CONTROLLER])
    expo = opt[O_EXPONENT]
    Yout[0, :] = y
    jd = 0
    while jd < t_dense.size and t_dense[jd] <= stops[0]:
        Ydense[jd, :] = y
        jd += 1
    h = h0
    for s in range(1, stops.size):
        t = stops[s - 1]
        t_end = stops[s]
        seg = segs[s]
        if t_end <= t:
            Yout[s, :] = y
            continue
        h = start(rhs, jac, t, t_end - t, y, p, seg, h, opt, ws, wc, iw, counters)
        cs[0] = -1.0
        cs[1] = -1.0
        rejected = False
        while t < t_end:
            if counters[N_ACCEPT] + counters[N_REJECT] >= max_steps:
                return MAX_STEPS
            h, hs, last = step_length(t, t_end, h, h_fixed)
            if hs <= 1e-14 * max(1.0, abs(t)):
                return STEP_TOO_SMALL
            t1 = t_end if last else t + hs
            iw[IW_REJECTED] = 1 if rejected else 0
            en = step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters)
            if en == NEWTON_RETRY or en == NEWTON_SHRINK:
                if h_fixed > 0.0:
                    return NOT_FINITE
                counters[N_REJECT] += 1
                rejected = True
                if en == NEWTON_SHRINK:
                    h = hs * 0.5
                continue
            if not np.isfinite(en):
                if h_fixed > 0.0:
                    return NOT_FINITE
                en = 1e10
            if en <= 1.0 or h_fixed > 0.0:
                counters[N_ACCEPT] += 1
                h = after_accept(kind, h, hs, en, expo, rejected, last, h_fixed, cs, iw)
                while jd < t_dense.size and t_dense[jd] <= t1:  # dense outputs in (t, t1]
                    if t_dense[jd] >= t1:
                        Ydense[jd, :] = ynew
                    else:
                        interp((t_dense[jd] - t) / hs, hs, y, ynew, ws, Ydense[jd])
                    jd += 1
                accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters)
                t = t1
                y[:] = ynew
                rejected = False
                if iw[IW_STIFF] == 1 and t < t_end:  # hand over to a stiff method
                    opt[O_TSTOP] = t
                    opt[O_SSTOP] = s
                    opt[O_H] = h
                    Yout[s, :] = y
                    return STIFF
            else:
                counters[N_REJECT] += 1
                rejected = True
                h = after_reject(kind, hs, en, expo, cs, iw)
        Yout[s, :] = y
    return SUCCESS


def drive_radau(
    rhs, jac, y0, p, stops, segs, opt, ws, wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters
):  # fmt: skip
    """:func:`drive` with Radau IIA (:mod:`numerics.integrators.radau`)."""
    return drive(
        radau.start, radau.step, radau.accept, radau.interp, rhs, jac, y0, p, stops, segs, opt,
        ws, wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters,
    )  # fmt: skip


def drive_dopri5(
    rhs, jac, y0, p, stops, segs, opt, ws, wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters
):  # fmt: skip
    """:func:`drive` with Dormand–Prince 5(4) (:mod:`numerics.integrators.dopri5`)."""
    return drive(
        dopri5.start, dopri5.step, dopri5.accept, dopri5.interp, rhs, jac, y0, p, stops, segs,
        opt, ws, wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters,
    )  # fmt: skip


def drive_rosw(
    rhs, jac, y0, p, stops, segs, opt, ws, wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters
):  # fmt: skip
    """:func:`drive` with ROS34PW2 (:mod:`numerics.integrators.rosw`; no continuous extension)."""
    return drive(
        rosw.start, rosw.step, rosw.accept, rosw.interp, rhs, jac, y0, p, stops, segs, opt, ws,
        wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters,
    )  # fmt: skip


METHODS: dict[str, tuple[ModuleType, int, float, bool]] = {
    "rosw": (rosw, INTEGRAL, rosw.ERROR_EXPONENT, False),
    "radau": (radau, PREDICTIVE, 0.25, True),
    "dopri5": (dopri5, INTEGRAL, dopri5.ERROR_EXPONENT, True),
}
"""Per method: its module (``workspace``, ``start``, ``step``, ``accept``, ``interp``), its
controller, the controller's exponent, whether it has dense output."""

ENTRIES = {"rosw": drive_rosw, "radau": drive_radau, "dopri5": drive_dopri5}
"""Per method: its entry point (the driver with the method's functions bound)."""

_COMPILED: dict = {}


def python_functions(method: str):
    """The entry point of ``method`` as plain Python: the driver and the method's functions
    uncompiled (the same source; the problem functions are then Python callables)."""
    mod = METHODS[method][0]
    fns = (mod.start, mod.step, mod.accept, mod.interp)
    start, step, accept, interp = (f.py_func for f in fns)

    def entry(*args):
        return drive.py_func(start, step, accept, interp, *args)

    return entry


def compiled(method: str):
    """The entry point of ``method`` compiled (first use) or loaded from the on-disk cache; kept
    for the life of the process."""
    if method not in _COMPILED:
        _COMPILED[method] = njit(DRIVE_SIG, cache=True)(ENTRIES[method])
    return _COMPILED[method]
