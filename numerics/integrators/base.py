"""The contract between the driver, the method steps and the problem functions.

**Problem functions** are first-class Numba functions with fixed signatures, so the driver and the
steps are compiled once and cached on disk whatever the problem (a dispatcher argument would
recompile per problem):

* ``rhs(t, y, p, seg, out)`` (:data:`RHS_SIG`) writes ``f(t, y)`` into ``out`` (``y, p, out``
  flat float64; ``seg`` is the index of the segment between breakpoints the step lies in);
* ``jac(t, y, p, seg, J)`` (:data:`JAC_SIG`) writes the ``m×m`` matrix ``J`` (``W = J ⊗ I_k``
  replaces the Jacobian, ``n = m·k``, ``y`` read as an ``m×k`` row-major array) or, when the
  problem declares diagonal blocks of size ``mb < m``, the ``m×mb`` array of the blocks' rows
  (``J[i, j]`` is the entry in row ``i`` and column ``b(i) + j``, ``b(i)`` the first index of
  ``i``'s block): block-diagonal Jacobians are stored in ``O(m·mb)``.

**A method** is four functions with the uniform signatures :data:`START_SIG`, :data:`STEP_SIG`,
:data:`ACCEPT_SIG` and :data:`INTERP_SIG`. The step makes one trial and returns its error norm; it
never decides acceptance (as diffrax's ``AbstractSolver.step``, and unlike SciPy's
``OdeSolver._step_impl``, which loops over trials until one is accepted and sets the next step
size itself). The driver decides acceptance:

* ``start(rhs, jac, t, span, y, p, seg, h, opt, ws, wc, iw, counters) -> h``: at the start of a
  segment of length ``span``; returns ``h``, or the initial step size if ``h ≤ 0``;
* ``step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters) -> err``: one trial step
  of size ``hs`` from ``(t, y)`` to ``t1`` (``t + hs``, or exactly the segment end), writing
  ``ynew``; returns the error norm (≤ 1 acceptable), or :data:`NEWTON_RETRY` /
  :data:`NEWTON_SHRINK` when an implicit method's iteration failed (retry with the same step after
  refreshing ``J`` / with half the step);
* ``accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters)``: commit an accepted
  step (FSAL, Jacobian reuse, the previous step's polynomial) before ``y ← ynew``;
* ``interp(theta, hs, y, ynew, ws, out)``: the continuous extension at ``t + θ·hs`` of the step
  just accepted (dense output).

Each method owns a slice of the workspaces ``ws`` (float64), ``wc`` (complex128) and ``iw``
(int64), allocated once per run by :func:`numerics.integrators.integrate` from the method's
``workspace(n, m, mb, lower)`` (``lower``: ``J`` declared lower triangular). ``iw[IW_NITER]``, ``iw[IW_RECOMPUTE]`` and ``iw[IW_REJECTED]`` carry
what a step tells the step-size controller and what the driver tells the step; a method that
detects stiffness (DOPRI5 with ``opt[O_DETECT] = 1``) sets ``iw[IW_STIFF]`` and the driver stops
with :data:`STIFF`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

RHS_SIG = types.void(
    types.float64, types.float64[::1], types.float64[::1], types.int64, types.float64[::1]
)
JAC_SIG = types.void(
    types.float64, types.float64[::1], types.float64[::1], types.int64, types.float64[:, ::1]
)
RHS_TYPE = types.FunctionType(RHS_SIG)
JAC_TYPE = types.FunctionType(JAC_SIG)
F64 = types.float64[::1]
C128 = types.complex128[::1]
I64 = types.int64[::1]

START_SIG = types.float64(
    RHS_TYPE,
    JAC_TYPE,
    types.float64,
    types.float64,
    F64,
    F64,
    types.int64,
    types.float64,
    F64,
    F64,
    C128,
    I64,
    I64,
)
STEP_SIG = types.float64(
    RHS_TYPE,
    JAC_TYPE,
    types.float64,
    types.float64,
    types.float64,
    F64,
    F64,
    F64,
    types.int64,
    F64,
    F64,
    C128,
    I64,
    I64,
)
ACCEPT_SIG = types.void(
    RHS_TYPE,
    JAC_TYPE,
    types.float64,
    types.float64,
    F64,
    F64,
    F64,
    types.int64,
    F64,
    F64,
    C128,
    I64,
    I64,
)
INTERP_SIG = types.void(types.float64, types.float64, F64, F64, F64, F64)
METHOD_SIGS = (START_SIG, STEP_SIG, ACCEPT_SIG, INTERP_SIG)
"""The signatures of a method's ``start``, ``step``, ``accept`` and ``interp``, in that order."""
METHOD_TYPES = tuple(types.FunctionType(sig) for sig in METHOD_SIGS)
"""Their first-class function types: the one compiled driver calls a method's functions through
values of these types (:func:`numerics.integrators.numba_binding.compiled_functions`)."""

# status codes (as SciPy's)
SUCCESS, MAX_STEPS, STEP_TOO_SMALL, NOT_FINITE = 0, -1, -2, -3
STIFF = 1
"""The driver stopped because the method detected stiffness (``opt[O_DETECT] = 1``); the time,
stop index and state reached are in ``opt[O_TSTOP]``, ``opt[O_SSTOP]`` and ``Yout[opt[O_SSTOP]]``.
So it stops on every status but :data:`SUCCESS`: they hold the last accepted step."""
# what a step returns instead of an error norm when its Newton iteration failed (NEWTON_NONFINITE:
# on non-finite values of the right-hand side or of the Jacobian)
NEWTON_RETRY, NEWTON_SHRINK, NEWTON_NONFINITE = -1.0, -2.0, -3.0
# counters layout
N_ACCEPT, N_REJECT, N_FEV, N_JEV, N_LU = 0, 1, 2, 3, 4
# options vector layout
O_RTOL, O_ATOL, O_HFIXED, O_M, O_MB, O_CONTROLLER, O_EXPONENT, O_DETECT, O_TSTOP, O_SSTOP, O_H = (
    range(11)
)
O_LOWER = 11
"""Options slot: 1 when the problem declared ``J`` lower triangular (``jac_lower``): the implicit
methods then keep no ``m×m`` factorisation (:mod:`numerics.integrators.linalg`)."""
N_OPT = 12
# integer slots shared by driver, steps and controllers; methods use the rest from IW_METHOD on
IW_NITER, IW_RECOMPUTE, IW_REJECTED, IW_STIFF, IW_METHOD = 0, 1, 2, 3, 4


@njit(cache=True)
def step_length(t, t_end, h, h_fixed):
    """The step to try from ``t``: ``(h, hs, last)``.

    With a fixed step, ``h`` is ``h_fixed`` shrunk so that a whole number of steps ends at
    ``t_end``. ``hs`` is the step actually taken: ``h``, or the rest of the segment when the step
    would reach (within 1e-10 relative) or pass ``t_end``, so segments end exactly on breakpoints.
    """
    if h_fixed > 0.0:
        nsub = np.ceil((t_end - t) / h_fixed - 1e-9)
        h = (t_end - t) / max(nsub, 1.0)
    last = t + h * (1.0 + 1e-10) >= t_end
    hs = t_end - t if last else h
    return h, hs, last


@njit(cache=True)
def error_norm(err, y, ynew, rtol, atol):
    """RMS of ``err / (atol + rtol·max(|y|, |ynew|))`` (SciPy's norm)."""
    s = 0.0
    for i in range(err.size):
        sc = atol + rtol * max(abs(y[i]), abs(ynew[i]))
        s += (err[i] / sc) ** 2
    return np.sqrt(s / err.size)


@njit(cache=True)
def euler_probe(y, f0, rtol, atol, span, y1):
    """The first half of :func:`initial_step`: ``(h₀, ‖f₀‖)`` and the explicit Euler step ``y1 =
    y + h₀f₀`` whose right-hand side the method then evaluates."""
    n = y.size
    d0 = 0.0
    d1 = 0.0
    for i in range(n):
        sc = atol + rtol * abs(y[i])
        d0 += (y[i] / sc) ** 2
        d1 += (f0[i] / sc) ** 2
    d0 = np.sqrt(d0 / n)
    d1 = np.sqrt(d1 / n)
    h0 = min(1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1, span)
    for i in range(n):
        y1[i] = y[i] + h0 * f0[i]
    return h0, d1


@njit(cache=True)
def initial_step(y, f0, f1, h0, d1, rtol, atol, exponent, span):
    """Hairer–Wanner's starting step size (*Solving ODEs I*, II.4; SciPy's
    ``select_initial_step``), at most ``span``, from :func:`euler_probe`'s ``(h₀, ‖f₀‖)`` and
    ``f1 = f(t + h₀, y + h₀f₀)`` (one right-hand-side call, the method's).

    With the norms scaled by ``atol + rtol·|y|`` (RMS): ``h₀ = 0.01·‖y‖/‖f₀‖`` (``10⁻⁶`` if either
    norm is below ``10⁻⁵``), the second-derivative estimate ``d₂ = ‖f1 − f₀‖/h₀``, then ``h₁ =
    (0.01/max(‖f₀‖, d₂))^exponent`` (``exponent = 1/(q + 1)``, ``q`` the order of the method's
    error estimate; ``max(10⁻⁶, 10⁻³·h₀)`` if both are below ``10⁻¹⁵``) and ``min(100·h₀, h₁)``.

    Why the second half: ``h₀`` alone ignores how fast ``f`` turns; on the depth flow it starts
    several times too small, and the integral controller, growing at most fivefold per step, pays
    for it with extra steps (DOPRI5, ε = 1e-2, first layer at rtol 1e-5: 38 steps with ``h₀``
    alone, SciPy's RK45 35 with this estimate).

    A non-finite ``‖f₀‖`` (``f(t, y)`` is ±inf or NaN) gives NaN: no step helps, and the driver
    stops with the non-finite status at ``(t, y)``."""
    if not (np.isfinite(d1) and h0 > 0.0):
        return np.nan
    n = y.size
    d2 = 0.0
    for i in range(n):
        sc = atol + rtol * abs(y[i])
        d2 += ((f1[i] - f0[i]) / sc) ** 2
    d2 = np.sqrt(d2 / n) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** exponent
    return min(100.0 * h0, h1, span)


@njit(cache=True, inline="always")
def copy_into(dst, src):
    """``dst[:] = src`` for 1-D arrays of one size, element by element: the same values, without
    the shape check of a slice assignment, whose error message (formatted shapes) costs about two
    seconds of compilation per error model in a fresh process (``docs/benchmarks.md``, "Times a
    user feels"). Inlined into its callers. The caller guarantees the sizes."""
    for i in range(src.size):
        dst[i] = src[i]


@njit(cache=True)
def axpy(a, x, y):
    """``y += a·x`` in place without a temporary (the same arithmetic as ``y += a * x``)."""
    for i in range(y.size):
        y[i] += a * x[i]
