"""``integrate``: an initial-value problem solved by one of the compiled methods.

:func:`integrate` checks its arguments, turns the problem functions into the driver's calling
convention (:func:`_problem_functions`: compiled ones as they are, Python callables wrapped, a
forward-difference Jacobian when none is given and the size allows it), merges breakpoints and
output times into the driver's stops, allocates the aligned workspaces, runs the method's bound
driver (:func:`numerics.integrators.driver.bound_driver`) once, or twice for ``method="auto"``
(DOPRI5 with stiffness detection, then Radau IIA from where stiffness was detected), and returns
an :class:`IntegratorResult` with SciPy's field names and work counters.

Oracle: SciPy's ``solve_ivp`` and exact solutions (``tests/test_integrators.py``).

Caveat: the options travel to the compiled driver as one float64 vector (the ``O_*`` slots of
:mod:`numerics.integrators.base`), which the driver also writes back (where ``auto``'s explicit
run stopped); on the Python side they are the named :class:`_Run` of one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from fastslow.numerics import validation
from fastslow.numerics.integrators import driver, linalg
from fastslow.numerics.integrators.base import (
    JAC_SIG,
    MAX_STEPS,
    N_ACCEPT,
    N_FEV,
    N_JEV,
    N_LU,
    N_OPT,
    N_REJECT,
    NOT_FINITE,
    O_ATOL,
    O_CONTROLLER,
    O_DETECT,
    O_EXPONENT,
    O_H,
    O_HFIXED,
    O_LOWER,
    O_M,
    O_MB,
    O_RTOL,
    O_SSTOP,
    O_TSTOP,
    RHS_SIG,
    STEP_TOO_SMALL,
    STIFF,
    SUCCESS,
)
from fastslow.numerics.integrators.numba_binding import function_addresses, is_compiled
from fastslow.numerics.integrators.tableaux import DOP_ORDER, DP_ORDER, RADAU_ORDER, ROS_ORDER
from fastslow.numerics.lanes import aligned_zeros

METHODS = ("auto", "rosw", "radau", "dopri5", "dop853")
EXPLICIT = ("dopri5", "dop853")
"""The methods that never call ``jac``."""
ORDERS = {"rosw": ROS_ORDER, "radau": RADAU_ORDER, "dopri5": DP_ORDER, "dop853": DOP_ORDER}
"""Classical order of each method (the slope a fixed-step convergence test must show)."""
DENSE_ORDERS = {"radau": 3, "dopri5": 4}
"""Order of the continuous extension (dense output) of the methods that have one."""

__all__ = [
    "METHODS",
    "EXPLICIT",
    "ORDERS",
    "DENSE_ORDERS",
    "FD_JACOBIAN_MAX_N",
    "IntegratorResult",
    "integrate",
    "zero_jac",
]

_MESSAGES = {
    SUCCESS: "The solver successfully reached the end of the integration interval.",
    MAX_STEPS: "Maximum number of steps reached.",
    STEP_TOO_SMALL: "Required step size is less than spacing between numbers.",
    NOT_FINITE: "The solution became non-finite.",
}


@dataclass
class IntegratorResult:
    """Result of :func:`integrate`, with SciPy's ``OdeResult`` field names.

    Attributes:
        t: output times (``t_eval``, or ``[t0, t1]``), shape ``(K,)``.
        y: states at ``t``, shape ``(n, K)`` as in SciPy.
        status: 0 success, −1 max steps, −2 step too small, −3 non-finite (the right-hand side or
            the Jacobian gave a non-finite value that no shorter step avoids). On a failure ``t``
            and ``y`` end with the last accepted step (after the output times passed before it).
        message, success: as in SciPy.
        nfev, njev, nlu: right-hand-side and Jacobian evaluations, matrix factorisations (inverses).
        nsteps, nreject: accepted and rejected steps.
        method: the method name; ``compiled``: whether the compiled driver ran.
    """

    t: np.ndarray
    y: np.ndarray
    status: int
    message: str
    success: bool
    nfev: int
    njev: int
    nlu: int
    nsteps: int
    nreject: int
    method: str
    compiled: bool
    extra: dict = field(default_factory=dict)


def _stops(t0: float, t1: float, t_eval, breakpoints, t_start: float):
    """Merge output times and breakpoints after ``t_start`` into ``stops`` (from ``t_start``) with
    the segment index (in the edges of the whole span ``[t0, t1]``) of each interval."""
    edges = np.array([t0, *sorted({float(b) for b in breakpoints if t0 < b < t1}), t1])
    stops = edges if t_eval is None else np.union1d(edges, t_eval)
    stops = np.concatenate(([t_start], stops[stops > t_start]))
    # the segment of the interval (stops[k-1], stops[k]] is the one containing its midpoint
    segs = np.zeros(stops.size, dtype=np.int64)
    segs[1:] = np.searchsorted(edges, 0.5 * (stops[:-1] + stops[1:]), side="right") - 1
    return stops, segs, edges


def _real_result(name: str, value, shape: tuple) -> np.ndarray:
    """What a Python ``fun`` or ``jac`` returned, as float64 of exactly ``shape`` (``(n,)`` for
    ``fun``, ``(m, m)`` for ``jac``): ``ValueError`` for another shape (never broadcast: a
    length-1 result is not ``n`` equal values), ``TypeError`` for complex, boolean or non-numeric
    values (never cast). Non-finite values pass: the driver stops on them with status −3."""
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.shape != shape:
        raise ValueError(
            f"{name} returned shape {arr.shape}, expected {shape} (nothing is broadcast)"
        )
    if arr.dtype.kind not in "fiu":
        what = {"c": "complex", "b": "boolean"}.get(arr.dtype.kind, f"dtype {arr.dtype}")
        raise TypeError(f"{name} returned {what} values, expected real numbers (nothing is cast)")
    return arr.astype(np.float64, copy=False)


def _forward_difference_jacobian(fun, t: float, y: np.ndarray) -> np.ndarray:
    """``∂f/∂y`` at ``(t, y)`` by forward differences, step ``√u·max(|y_j|, 1)`` per column."""
    f0 = _real_result("fun", fun(t, y), y.shape)
    J = np.empty((f0.size, y.size))
    for j in range(y.size):
        step = np.sqrt(np.finfo(float).eps) * max(abs(y[j]), 1.0)
        yj = y.copy()
        yj[j] += step
        J[:, j] = (_real_result("fun", fun(t, yj), y.shape) - f0) / (yj[j] - y[j])
    return J


def _block_rows(J: np.ndarray, mb: int) -> np.ndarray:
    """The ``m×mb`` rows of the diagonal blocks of the ``m×m`` matrix ``J``."""
    m = J.shape[0]
    return J.reshape(m // mb, mb, m // mb, mb)[
        np.arange(m // mb), :, np.arange(m // mb), :
    ].reshape(m, mb)


FD_JACOBIAN_MAX_N = 256
"""Largest ``n`` for which ``jac=None`` builds a dense forward-difference Jacobian of a Python
``fun`` by itself: it costs ``n + 1`` calls of ``fun`` and an ``n×n`` factorisation per Jacobian,
a small multiple of a structured Jacobian's cost up to this size and many times it beyond
(measured on the depth flow: ``docs/benchmarks.md``). Above it ``jac=None`` is refused;
``jac="fd"`` asks for the dense difference anyway."""


def _problem_functions(fun, jac, method: str, n: int, m: int, mb: int, edges, fd_fevals: list):
    """``(rhs, jac_fn)`` in the driver's calling convention: a compiled problem as it is, a Python
    one wrapped (left limits at segment ends; a forward-difference Jacobian when ``jac`` is None,
    counting its calls in ``fd_fevals[0]``; the blocks' rows when ``mb < m``). Refuses a missing
    Jacobian that cannot be built."""
    jac_fn: Any
    compiled = is_compiled(fun)
    implicit = method not in EXPLICIT
    if isinstance(jac, str) and jac not in ("zero", "fd"):
        raise ValueError(f"jac={jac!r}: expected a callable, None, 'fd' or 'zero'")
    if implicit and jac is None and not compiled and m == n and n > FD_JACOBIAN_MAX_N:
        raise ValueError(
            f"jac=None with n={n} unknowns would build a dense forward-difference Jacobian ({n + 1} "
            f"calls of fun and an {n}×{n} factorisation each; on the depth flow at n = 512 about "
            "15× the run with the frozen-kernel Jacobian): pass jac=callable with jac_size (and "
            "jac_block) for a structured Jacobian, jac='fd' to accept the dense difference, or "
            "jac='zero'"
        )
    if jac == "fd":
        jac = None
    if implicit and jac is None and (compiled or m != n):
        why = "a compiled rhs" if compiled else f"jac_size={m} < n={n}"
        raise ValueError(
            f"method={method!r} needs a Jacobian and none can be built by finite differences for "
            f"{why}: pass jac=... (the frozen-kernel Jacobian for the depth flow, "
            "numerics.model.coupling.jacobian.frozen_kernel_jac_nb), or jac='zero' to use J = 0 on purpose"
        )
    if compiled:  # compiled for RHS_SIG and JAC_SIG by function_addresses if need be
        if jac is None or jac == "zero" or not implicit:  # an explicit method never calls jac
            return fun, _compiled_zero_jac()
        if is_compiled(jac):
            return fun, jac
        raise TypeError("a compiled rhs needs a compiled jac (signature JAC_SIG) or 'zero'")
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    left = np.nextafter(edges[1:], -np.inf)  # left limit at each segment's right end

    def rhs(t, y, p_, seg, out):
        out[:] = _real_result("fun", fun(min(t, left[seg]), y), (n,))

    def full_jac(t, y):
        if jac is None:
            fd_fevals[0] += n + 1
            return _forward_difference_jacobian(fun, t, y)
        return _real_result("jac", jac(t, y), (m, m))

    if jac == "zero" or not implicit:
        jac_fn = zero_jac
    else:

        def jac_fn(t, y, p_, seg, J):
            Jf = full_jac(min(t, left[seg]), y)
            J[:, :] = Jf if mb == m else _block_rows(Jf, mb)

    return rhs, jac_fn


class _Run(NamedTuple):
    """One :func:`integrate` call's checked problem and options, shared by its driver runs (two
    for ``method="auto"``); ``fd_fevals[0]`` counts the calls of a forward-difference Jacobian."""

    fun: Any
    jac: Any
    t0: float
    t1: float
    t_eval: np.ndarray | None
    dense: bool
    breakpoints: Any
    p: np.ndarray
    rtol: float
    atol: float
    h_fixed: float
    m: int
    mb: int
    lower: bool
    max_steps: int
    fd_fevals: list


def integrate(
    fun,
    t_span,
    y0,
    *,
    method: str = "auto",
    jac=None,
    jac_size: int | None = None,
    jac_block: int | None = None,
    jac_lower: bool = False,
    p=None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    t_eval=None,
    dense_output: bool = False,
    breakpoints=(),
    first_step: float | None = None,
    h_fixed: float | None = None,
    max_steps: int = 1_000_000,
) -> IntegratorResult:
    """Integrate ``dy/dt = f(t, y)`` from ``t_span[0]`` to ``t_span[1]`` (forward in time).

    Args:
        fun: a compiled ``rhs(t, y, p, seg, out)`` (signature :data:`RHS_SIG`) or a Python
            callable ``f(t, y) -> array`` returning real numbers of shape ``(n,)`` exactly
            (another shape is a ``ValueError``, never broadcast; complex or boolean values a
            ``TypeError``, never cast). A non-finite value (±inf, NaN), at ``t0``, at a
            breakpoint or anywhere, ends the run with status −3 and the last good state.
        y0: initial state, real (complex or boolean entries are a ``TypeError``, never cast;
            flattened to 1-D; the result keeps the flat shape).
        method: ``"auto"`` (the default: DOPRI5 with Hairer's stiffness detection, handing over
            to Radau IIA once the problem is found stiff, as LSODA switches from Adams to BDF;
            ``extra["switched_at"]`` is the time of the switch or ``None``), ``"rosw"`` (stiff,
            Rosenbrock-W ROS34PW2), ``"radau"`` (stiff, Radau IIA order 5), ``"dopri5"``
            (explicit, order 5) or ``"dop853"`` (explicit, order 8; no dense output).
        jac: for ``"rosw"``, ``"radau"`` and ``"auto"``: a compiled ``jac(t, y, p, seg, J)`` writing ``J``
            (``m×m``, or its blocks' rows ``m×mb`` with ``jac_block=mb``), or a Python callable
            ``jac(t, y) -> J`` (``m×m``). The method uses ``J ⊗ I_k`` with ``k = n/m``.
            ``None`` (the default) never silently drops the Jacobian: with a Python ``fun`` and
            ``n ≤`` :data:`FD_JACOBIAN_MAX_N` it is a forward-difference Jacobian of ``fun``
            (``n×n``, ``n`` extra calls per Jacobian, step ``√u·max(|y_j|, 1)``; counted in
            ``extra["fd_fevals"]``); above that size (where it costs many times a structured
            Jacobian), with a compiled ``fun``, or with ``jac_size < n``, it is a ``ValueError``
            asking for ``jac``. ``jac="fd"`` asks for the dense forward difference at any size. ``jac="zero"`` asks
            for ``J = 0`` on purpose (a valid W-method for non-stiff problems, order kept, but
            the step size is then limited by stability). Ignored by the explicit methods.
        jac_size: ``m`` (default ``n``); must divide ``n``.
        jac_block: if ``J`` is block diagonal with blocks of this size (dividing ``m``), it is
            stored as its blocks' rows and factorised block by block (``O(m·mb)`` memory,
            ``O(m·mb²)`` per factorisation); a compiled ``jac`` then writes the ``m×mb`` rows. A
            lower-triangular ``J`` (causal masks) is detected and solved by substitution.
        jac_lower: ``J`` (``m×m``, no ``jac_block``) is lower triangular (a causal mask): no
            ``m×m`` factorisation is allocated (``m²`` floats and ``m²`` complex numbers fewer);
            a ``J`` with an entry above its diagonal is then a ``ValueError``.
        p: flat float64 parameter vector passed to compiled problem functions.
        rtol, atol: local error tolerances (RMS norm, as SciPy).
        t_eval: output times inside ``t_span``: the steps land on them exactly, or, with
            ``dense_output=True`` (``"radau"``, ``"dopri5"``), they are read from the continuous
            extension of the step covering them (no step is shortened for them).
        breakpoints: times where the right-hand side may jump (piecewise-constant weights): the
            integration restarts there, and stages at the right end of a segment see the left limit
            (compiled problems get the segment index ``seg``; Python callables are evaluated at the
            largest float below the breakpoint).
        h_fixed: take fixed steps of at most this size (no error control), for order tests.

    A span (or a gap between output times or breakpoints) shorter than the spacing of floats
    around ``t`` is integrated in one step of its length; the step is shrunk below that spacing
    only on rejection, which is status −2 (−3 when the rejected steps met non-finite values).

    Returns:
        :class:`IntegratorResult`.
    """
    validation.choice("method", method, METHODS)
    if not (isinstance(t_span, (tuple, list, np.ndarray)) and len(t_span) == 2):
        raise ValueError(f"t_span must be a pair (t0, t1), got {t_span!r}")
    t0 = validation.real("t_span[0]", t_span[0])
    t1 = validation.real("t_span[1]", t_span[1], low=t0, low_open=True)
    y0 = validation.finite_array("y0", y0).ravel().copy()
    n = y0.size
    if n == 0:
        raise ValueError("y0 must be non-empty")
    rtol = validation.real("rtol", rtol, low=0.0, low_open=True)
    atol = validation.real("atol", atol, low=0.0, low_open=True)
    m = n if jac_size is None else validation.positive_int("jac_size", jac_size)
    if n % m:
        raise ValueError(f"jac_size={m} must divide the state size n={n}")
    mb = m if jac_block is None else validation.positive_int("jac_block", jac_block)
    if m % mb:
        raise ValueError(f"jac_block={mb} must divide jac_size={m}")
    if jac_lower and mb != m:
        raise ValueError("jac_lower=True is for a full m×m Jacobian: drop jac_block")
    if t_eval is not None:
        t_eval = validation.finite_array("t_eval", t_eval, ndim=1)
        if np.any(t_eval < t0) or np.any(t_eval > t1) or np.any(np.diff(t_eval) < 0):
            raise ValueError(f"t_eval must be sorted and inside [{t0}, {t1}]")
    if dense_output and method not in (*DENSE_ORDERS, "auto"):
        raise ValueError(
            f"dense_output: {method!r} has no continuous extension (use {DENSE_ORDERS})"
        )
    h0 = (
        0.0
        if first_step is None
        else validation.real("first_step", first_step, low=0.0, low_open=True)
    )
    hf = 0.0 if h_fixed is None else validation.real("h_fixed", h_fixed, low=0.0, low_open=True)
    if hf > 0.0 and first_step is None:
        h0 = hf  # no starting-step estimate (and its right-hand-side call) for fixed steps
    spec = _Run(
        fun=fun,
        jac=jac,
        t0=t0,
        t1=t1,
        t_eval=t_eval,
        dense=dense_output,
        breakpoints=breakpoints,
        p=np.zeros(1) if p is None else np.ascontiguousarray(p, dtype=np.float64).ravel(),
        rtol=rtol,
        atol=atol,
        h_fixed=hf,
        m=m,
        mb=mb,
        lower=bool(jac_lower),
        max_steps=validation.positive_int("max_steps", max_steps),
        fd_fevals=[0],
    )
    extra: dict = {}
    if method != "auto":
        status, t_out, y_out, counters, _ = _run(method, spec, t0, y0, h0, detect=False)
    else:
        _problem_functions(fun, jac, "radau", n, m, mb, np.array([t0, t1]), [0])  # refuse early
        status, t_out, y_out, counters, opt = _run("dopri5", spec, t0, y0, h0, detect=True)
        extra["switched_at"] = None
        if status == STIFF:  # hand over to Radau IIA from where stiffness was detected
            t_s, y_s = float(opt[O_TSTOP]), y_out[-1]
            status, t2, y2, c2, _ = _run("radau", spec, t_s, y_s, float(opt[O_H]), detect=False)
            t_out, y_out = np.concatenate([t_out[:-1], t2]), np.concatenate([y_out[:-1], y2])
            counters = counters + c2
            extra["switched_at"] = t_s
    if spec.fd_fevals[0]:
        extra["fd_fevals"] = spec.fd_fevals[0]
    return IntegratorResult(
        t=t_out,
        y=y_out.T.copy(),
        status=status,
        message=_MESSAGES[status],
        success=status == SUCCESS,
        nfev=int(counters[N_FEV]),
        njev=int(counters[N_JEV]),
        nlu=int(counters[N_LU]),
        nsteps=int(counters[N_ACCEPT]),
        nreject=int(counters[N_REJECT]),
        method=method,
        compiled=is_compiled(fun),
        extra=extra,
    )


def _run(method: str, spec: _Run, t_start: float, y_start: np.ndarray, h0: float, detect: bool):
    """One driver run of ``method`` from ``(t_start, y_start)`` to ``spec.t1`` with the output
    times of ``spec`` after ``t_start`` (and ``t0`` itself when starting there); segment indices
    are those of the whole span. Returns ``(status, t_out, y_out, counters, opt)``; after
    :data:`STIFF` the outputs end with the state reached at ``opt[O_TSTOP]``."""
    t0, t1, t_eval = spec.t0, spec.t1, spec.t_eval
    fun, n, m, mb = spec.fun, y_start.size, spec.m, spec.mb
    outs = np.asarray([t0, t1] if t_eval is None else t_eval, dtype=float)
    outs = outs[outs >= t_start] if t_start == t0 else outs[outs > t_start]
    landed = None if spec.dense or t_eval is None else outs  # t0 and t1 are edges anyway
    stops, segs, edges = _stops(t0, t1, landed, spec.breakpoints, t_start)
    t_dense = outs if spec.dense else np.empty(0)
    counters = np.zeros(5, dtype=np.int64)
    Yout = np.empty((stops.size, n))
    Ydense = np.full((t_dense.size, n), np.nan)
    rhs, jac_fn = _problem_functions(fun, spec.jac, method, n, m, mb, edges, spec.fd_fevals)
    mod, controller, exponent, _ = driver.METHODS[method]
    compiled = is_compiled(fun)
    structure = linalg.structure_of(m, mb, n // m, spec.lower)  # the solver paths this run needs
    bound = driver.bound_driver(method, compiled=compiled, structure=structure)
    opt = np.zeros(N_OPT)
    opt[[O_RTOL, O_ATOL, O_HFIXED, O_M, O_MB, O_CONTROLLER, O_EXPONENT, O_DETECT, O_LOWER]] = [
        spec.rtol, spec.atol, spec.h_fixed, m, mb, controller, exponent, float(detect),
        float(spec.lower),
    ]  # fmt: skip
    nws, nwc, niw = mod.workspace(n, m, mb, spec.lower)
    ws, wc, iw = aligned_zeros(nws), aligned_zeros(nwc, np.complex128), np.zeros(niw, np.int64)
    y, ynew = aligned_zeros(n), aligned_zeros(n)  # what the right-hand side reads: on cache lines
    y[:] = y_start
    fns: Any = (rhs, jac_fn, *bound.functions)  # the Python driver calls them
    if compiled:  # the compiled one, their addresses
        addresses = (
            *function_addresses(rhs, RHS_SIG),
            *function_addresses(jac_fn, JAC_SIG),
            *bound.addresses,
        )
        fns = np.array(addresses, dtype=np.int64)
    args = (fns, y, ynew, spec.p, stops, segs, opt, ws, wc, iw, Yout, t_dense, Ydense)
    # the driver decides on non-finite values itself (status −3, or a shorter step); the Python
    # driver's NumPy scalars would also warn (or raise, under a caller's errstate) on them
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        status = int(bound.drive(*args, h0, np.int64(spec.max_steps), counters))
    # on any status but SUCCESS the driver stopped at its last accepted step (opt[O_TSTOP])
    if spec.dense:
        reached = t1 if status == SUCCESS else opt[O_TSTOP]
        t_out, y_out = t_dense[t_dense <= reached], Ydense[t_dense <= reached]
    else:
        out_index = np.searchsorted(stops, outs)
        done = stops.size if status == SUCCESS else int(opt[O_SSTOP])
        t_out, y_out = stops[out_index[out_index < done]], Yout[out_index[out_index < done]]
    if status == STIFF or (status != SUCCESS and (t_out.size == 0 or t_out[-1] < opt[O_TSTOP])):
        t_out = np.append(t_out, opt[O_TSTOP])
        y_out = np.concatenate([y_out, Yout[int(opt[O_SSTOP])][None]])
    return status, t_out, y_out, counters, opt


def zero_jac(t, y, p, seg, J):
    """``J = 0``: what ``jac="zero"`` asks for, and what the explicit methods get (they never call
    their ``jac``)."""
    J[:, :] = 0.0


_ZERO_JAC: list = []


def _compiled_zero_jac():
    """:func:`zero_jac` compiled for :data:`JAC_SIG` on first use (or loaded from Numba's cache),
    kept for the process."""
    if not _ZERO_JAC:
        _ZERO_JAC.append(njit(JAC_SIG, cache=True)(zero_jac))
    return _ZERO_JAC[0]
