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
writing its four functions and one line of :data:`METHODS`, not a loop.

**Compilation is lazy**: nothing is compiled at import. One compiled driver
(:func:`compiled_drive`) serves every method: it calls the method's functions, as the problem's,
through their addresses (:mod:`numerics.integrators.numba_binding`), so it is compiled (or loaded
from Numba's on-disk cache) once, and a method's functions the first time the method is used with
compiled problem functions (:func:`bound_driver`). Python callables run the same source
uncompiled (:func:`drive` itself, ``bound_driver(method, compiled=False)``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import NamedTuple

import numpy as np
from numba import njit, types

from fastslow.numerics.integrators import dop853, dopri5, linalg, radau, rosw
from fastslow.numerics.integrators.base import (
    C128,
    F64,
    I64,
    IW_REJECTED,
    IW_STIFF,
    MAX_STEPS,
    METHOD_SIGS,
    N_ACCEPT,
    N_REJECT,
    NEWTON_NONFINITE,
    NEWTON_RETRY,
    NEWTON_SHRINK,
    NOT_FINITE,
    O_CONTROLLER,
    O_EXPONENT,
    O_H,
    O_HFIXED,
    O_SSTOP,
    O_TSTOP,
    STEP_TOO_SMALL,
    STIFF,
    SUCCESS,
    copy_into,
    step_length,
)
from fastslow.numerics.integrators.controllers import (
    INTEGRAL,
    PREDICTIVE,
    after_accept,
    after_reject,
)
from fastslow.numerics.integrators.numba_binding import (
    NO_C_ENTRY,
    compile_bound,
    compile_for_addresses,
    compiled_functions,
    function_addresses,
    python_functions,
    with_globals,
)

DRIVE_SIG = types.int64(
    I64,
    F64,
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
"""The signature of the compiled driver (:func:`compiled_drive`); its first argument holds the
addresses of the problem's ``rhs`` and ``jac`` and of the method's ``start``, ``step``,
``accept`` and ``interp``, three each
(:func:`numerics.integrators.numba_binding.function_addresses`)."""


def no_interp(theta, hs, y, ynew, ws, out):
    """The continuous extension of a method that has none (never called: refused upfront)."""
    out[:] = np.nan


functions_of = python_functions
"""How :func:`drive` reads its functions from its first argument: the Python driver's tuple as it
is; :func:`compiled_drive`'s copy rebuilds them from their addresses."""


def drive(
    fns, y, ynew, p, stops, segs, opt, ws, wc, iw, Yout, t_dense, Ydense, h0, max_steps, counters
):  # fmt: skip
    """Integrate through ``stops`` with the method whose functions ``fns`` gives; the status.
    ``fns`` holds the problem's ``rhs`` and ``jac`` and the method's ``start``, ``step``,
    ``accept`` and ``interp``: the functions themselves (this Python driver) or their addresses
    (:func:`compiled_drive`, :func:`numerics.integrators.numba_binding.function_addresses`). ``y``
    holds the initial state and is overwritten with the current one, ``ynew`` is the step's
    result: both the caller's (cache-line aligned, as the workspaces), because the right-hand
    side reads them."""
    rhs, jac, start, step, accept, interp = functions_of(fns)
    cs = np.empty(2)  # the controller's memory
    nonfinite = False  # the last rejected step met a non-finite value
    h_fixed = opt[O_HFIXED]
    kind = int(opt[O_CONTROLLER])
    expo = opt[O_EXPONENT]
    copy_into(Yout[0], y)
    jd = 0
    while jd < t_dense.size and t_dense[jd] <= stops[0]:
        copy_into(Ydense[jd], y)
        jd += 1
    h = h0
    for s in range(1, stops.size):
        t = stops[s - 1]
        t_end = stops[s]
        seg = segs[s]
        if t_end <= t:
            copy_into(Yout[s], y)
            continue
        if h <= 1e-14 * max(1.0, abs(t)):  # after a segment of one tiny step: estimate afresh
            h = 0.0
        h = start(rhs, jac, t, t_end - t, y, p, seg, h, opt, ws, wc, iw, counters)
        cs[0] = -1.0
        cs[1] = -1.0
        rejected = False
        while t < t_end:
            if counters[N_ACCEPT] + counters[N_REJECT] >= max_steps:
                return stopped(MAX_STEPS, t, s, y, opt, Yout)
            h, hs, last = step_length(t, t_end, h, h_fixed)
            if not np.isfinite(hs):  # the starting step of a non-finite f(t, y): no step helps
                return stopped(NOT_FINITE, t, s, y, opt, Yout)
            # a step of the whole rest of a segment is always tried once, however short (a span
            # of one ulp is one step); shrinking below the spacing of t is a failure
            if hs <= 1e-14 * max(1.0, abs(t)) and (rejected or not last):
                status = NOT_FINITE if nonfinite else STEP_TOO_SMALL
                return stopped(status, t, s, y, opt, Yout)
            t1 = t_end if last else t + hs
            iw[IW_REJECTED] = 1 if rejected else 0
            en = step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters)
            if en == NEWTON_RETRY or en == NEWTON_SHRINK or en == NEWTON_NONFINITE:
                nonfinite = en == NEWTON_NONFINITE
                if h_fixed > 0.0:
                    return stopped(NOT_FINITE, t, s, y, opt, Yout)
                counters[N_REJECT] += 1
                rejected = True
                if en != NEWTON_RETRY:
                    h = hs * 0.5
                continue
            nonfinite = not np.isfinite(en)
            if nonfinite:  # shrink: an explicit stage may overflow at too large a step
                if h_fixed > 0.0:
                    return stopped(NOT_FINITE, t, s, y, opt, Yout)
                en = 1e10
            if en <= 1.0 or h_fixed > 0.0:
                counters[N_ACCEPT] += 1
                h = after_accept(kind, h, hs, en, expo, rejected, last, h_fixed, cs, iw)
                while jd < t_dense.size and t_dense[jd] <= t1:  # dense outputs in (t, t1]
                    if t_dense[jd] >= t1:
                        copy_into(Ydense[jd], ynew)
                    else:
                        interp((t_dense[jd] - t) / hs, hs, y, ynew, ws, Ydense[jd])
                    jd += 1
                accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters)
                t = t1
                copy_into(y, ynew)
                rejected = False
                if iw[IW_STIFF] == 1 and t < t_end:  # hand over to a stiff method
                    opt[O_TSTOP] = t
                    opt[O_SSTOP] = s
                    opt[O_H] = h
                    copy_into(Yout[s], y)
                    return STIFF
            else:
                counters[N_REJECT] += 1
                rejected = True
                h = after_reject(kind, hs, en, expo, cs, iw)
        copy_into(Yout[s], y)
    return SUCCESS


def stopped(status, t, s, y, opt, Yout):
    """``status``, with the last accepted step kept where the caller reads it (as for
    :data:`STIFF`): its time in ``opt[O_TSTOP]``, its stop index in ``opt[O_SSTOP]``, its state in
    ``Yout[s]``. Plain Python in the Python driver (nothing to compile for it); inlined into the
    compiled one (:data:`_STOPPED_INLINE`)."""
    opt[O_TSTOP] = t
    opt[O_SSTOP] = s
    copy_into(Yout[s], y)
    return status


_STOPPED_INLINE = njit(cache=True, inline="always")(stopped)
""":func:`stopped` for :func:`compiled_drive`, inlined: called there with constant statuses, a
compiled callee would be compiled once per constant (Numba types a constant argument as a
literal)."""


EXPLICIT = ("dopri5", "dop853")
"""The methods that never solve a linear system (their driver is never specialised)."""

METHODS: dict[str, tuple[ModuleType, int, float, bool]] = {
    "rosw": (rosw, INTEGRAL, rosw.ERROR_EXPONENT, False),
    "radau": (radau, PREDICTIVE, 0.25, True),
    "dopri5": (dopri5, INTEGRAL, dopri5.ERROR_EXPONENT, True),
    "dop853": (dop853, INTEGRAL, dop853.ERROR_EXPONENT, False),
}
"""Per method: its module (``workspace``, ``start``, ``step``, ``accept`` and, if it has a
continuous extension, ``interp``), its controller, the controller's exponent, dense output."""

METHOD_FUNCTIONS = ("start", "step", "accept", "interp")
"""A method's functions, in the order :func:`drive` reads them from its first argument (after the
problem's ``rhs`` and ``jac``); their signatures are :data:`numerics.integrators.base.METHOD_SIGS`."""

_DRIVE: list[Callable] = []


def compiled_drive() -> Callable:
    """:func:`drive` compiled for :data:`DRIVE_SIG` on first use (or loaded from Numba's on-disk
    cache), kept for the process: a copy named ``drive_compiled`` whose first argument is the
    functions' addresses. Every method and every structure of ``J`` runs this one driver."""
    if not _DRIVE:
        bound = {"functions_of": compiled_functions, "stopped": _STOPPED_INLINE}
        copy = with_globals(drive, "drive_compiled", bound)
        _DRIVE.append(compile_bound(copy, DRIVE_SIG))
    return _DRIVE[0]


class BoundMethod(NamedTuple):
    """A method ready to run (:func:`bound_driver`): the driver, the method's ``start``,
    ``step``, ``accept`` and ``interp`` (compiled dispatchers or Python functions) and, for the
    compiled driver, their addresses (twelve integers, three per function, in that order)."""

    drive: Callable
    functions: tuple
    addresses: tuple[int, ...]


_BOUND: dict[tuple[str, bool, str], BoundMethod] = {}


def _interp_of(module: ModuleType):
    return getattr(module, "interp", no_interp)


def _suffix(structure: str) -> str:
    return "" if structure == "all" else f"_{structure}"


def _by_kind(name: str, copies: dict) -> Callable:
    """A Python function calling ``copies[kind]`` with its arguments, ``kind`` being the argument of
    that name of the function ``name`` (the Python driver on a full ``J``, whose structure,
    :data:`numerics.integrators.linalg.LOWER` or :data:`~numerics.integrators.linalg.DENSE`, is
    known only at run time: each structure's copy is compiled when first met)."""
    pos = next(iter(copies.values())).py_func.__code__.co_varnames.index("kind")

    def call(*args):
        return copies[int(args[pos])](*args)

    call.__name__ = call.__qualname__ = name
    return call


def _python_full(mod: ModuleType) -> dict:
    """The globals binding the Python driver's ``linalg`` (and the method's ``STRUCTURED``
    helpers) to :func:`_by_kind` dispatchers over the ``lower`` copies and the ``dense`` ones as
    :func:`numerics.integrators.linalg.dense_for_python` gives them."""
    parts = {linalg.LOWER: "lower", linalg.DENSE: "dense"}
    ns = ModuleType("linalg_by_kind")
    ns.checked_structure = linalg.checked_structure
    for name in linalg.SOLVERS:
        copies = {
            linalg.LOWER: getattr(linalg.specialised("lower"), name),
            linalg.DENSE: getattr(linalg.dense_for_python(), name),
        }
        setattr(ns, name, _by_kind(name, copies))
    bound: dict = {"linalg": ns}
    for name in getattr(mod, "STRUCTURED", ()):
        helper = getattr(mod, name).py_func
        copies = {
            kind: njit(cache=True, **NO_C_ENTRY)(
                with_globals(helper, f"{name}_{s}", {"linalg": linalg.specialised(s)})
            )
            for kind, s in parts.items()
        }
        bound[name] = _by_kind(name, copies)
    return bound


def _structured(mod: ModuleType, fns: tuple, structure: str, compiled: bool = True) -> tuple:
    """``fns`` (the method's plain ``start``, ``step``, ``accept``, ``interp``) as copies whose
    ``linalg`` is :func:`numerics.integrators.linalg.specialised` for ``structure``, with the
    method's compiled helpers that solve (its ``STRUCTURED``) copied the same way; ``fns`` itself
    for ``"all"``. Copies are named ``<name>_<structure>`` (one on-disk cache entry each)."""
    if structure == "all":
        return fns
    if structure == "full" and not compiled:  # the structure is decided per call, in Python
        bound = _python_full(mod)
        return tuple(with_globals(f, f"{f.__name__}{_suffix(structure)}", bound) for f in fns)
    bound = {"linalg": linalg.specialised(structure)}
    for name in getattr(mod, "STRUCTURED", ()):
        helper = getattr(mod, name).py_func
        bound[name] = njit(cache=True, **NO_C_ENTRY)(
            with_globals(helper, f"{name}{_suffix(structure)}", dict(bound))
        )
    return tuple(with_globals(f, f"{f.__name__}{_suffix(structure)}", bound) for f in fns)


def bound_driver(method: str, compiled: bool = True, structure: str = "all") -> BoundMethod:
    """``method``'s ``start``, ``step``, ``accept`` and ``interp`` with the driver that runs them:
    compiled for their signatures (:data:`numerics.integrators.base.METHOD_SIGS`) on first use (or
    loaded from Numba's on-disk cache) with their addresses for :func:`compiled_drive` (and no
    Python entry: :func:`numerics.integrators.numba_binding.compile_for_addresses`), or, with
    ``compiled=False``, the plain Python functions for :func:`drive` itself, running the same
    source. Kept for the life of the process.

    The method's functions are *passed by address*, as the problem's ``rhs`` and ``jac`` are:
    the compiled driver rebuilds first-class function values from three integers each
    (:func:`numerics.integrators.numba_binding.compiled_functions`) and calls them with Numba's
    calling convention, so their exceptions propagate. Nothing is unboxed per call (as a
    dispatcher passed as an argument would be) and nothing is linked into the driver (as
    functions bound as a driver copy's globals were, each copy re-optimising and re-emitting
    its method's whole step code on first use): one driver, compiled once, runs every method.

    Caveat: with an empty cache the first call of a method compiles its functions (seconds for an
    implicit method, ``docs/benchmarks.md``); afterwards they are loaded from the cache.

    ``structure`` (one of :data:`numerics.integrators.linalg.STRUCTURES`, for an implicit method)
    binds solvers holding only the linear-algebra paths of that structure of ``J``
    (:func:`numerics.integrators.linalg.structure_of` gives it from the sizes), so that a first
    run compiles a fraction of them (``docs/benchmarks.md``, "Times a user feels"); the compiled
    copies are named ``<function>_<structure>``. ``"all"`` (the default, and what the explicit
    methods always use) holds every path."""
    if method in EXPLICIT:
        structure = "all"  # the explicit methods never solve
    key = (method, compiled, structure)
    if key not in _BOUND:
        mod = METHODS[method][0]
        fns: tuple = (mod.start, mod.step, mod.accept, _interp_of(mod))
        fns = _structured(mod, fns, structure, compiled)
        if not compiled:
            _BOUND[key] = BoundMethod(drive, fns, ())
        else:
            fns = tuple(compile_for_addresses(f, s) for s, f in zip(METHOD_SIGS, fns, strict=True))
            addresses = tuple(
                a for f, s in zip(fns, METHOD_SIGS, strict=True) for a in function_addresses(f, s)
            )
            _BOUND[key] = BoundMethod(compiled_drive(), fns, addresses)
    return _BOUND[key]
