"""The compiled step loops: Dormand–Prince 5(4) and the Rosenbrock-W method ROS34PW2.

Both loops integrate from ``stops[0]`` through ``stops[1], stops[2], …`` and land *exactly* on
every stop (the step is clipped, never interpolated): stops are the output times and the
breakpoints of piecewise-constant parameters. On the way from ``stops[k-1]`` to ``stops[k]`` the
right-hand side is called with segment index ``segs[k]``, so a stage evaluated at the right end of
a segment still sees that segment's parameters (the left limit), never the next layer's.

Problem functions are first-class Numba functions with fixed signatures, so these loops are
compiled once and cached on disk whatever the problem (a dispatcher argument would recompile per
problem):

* ``rhs(t, y, p, seg, out)`` writes ``f(t, y)`` into ``out`` (``y, p, out`` flat float64);
* ``jac(t, y, p, seg, J)`` writes an ``m×m`` matrix ``J``; the Rosenbrock-W loop uses
  ``W = J ⊗ I_k`` (``n = m·k``, ``y`` read as an ``m×k`` row-major array) in place of the Jacobian.
  If ``J`` is block diagonal with blocks of size ``mb`` (block-local masks), pass ``mb < m``: the
  loop then inverts and applies the blocks one by one (``O(m·mb²)`` instead of ``O(m³)``).
  Being a W-method, ROS34PW2 keeps order 3 for any such ``J``; a good ``J`` (the stiff part) only
  buys stability and large steps.

The same Python source runs uncompiled (``.py_func``) with plain Python callables.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from ._tableaux import (DP_A, DP_C, DP_E, ROS_A, ROS_C, ROS_CMAT, ROS_GAMMA, ROS_M, ROS_MERR)

RHS_SIG = types.void(types.float64, types.float64[::1], types.float64[::1], types.int64,
                     types.float64[::1])
JAC_SIG = types.void(types.float64, types.float64[::1], types.float64[::1], types.int64,
                     types.float64[:, ::1])
RHS_TYPE = types.FunctionType(RHS_SIG)
JAC_TYPE = types.FunctionType(JAC_SIG)

# status codes
SUCCESS, MAX_STEPS, STEP_TOO_SMALL, NOT_FINITE = 0, -1, -2, -3
# counters layout
N_ACCEPT, N_REJECT, N_FEV, N_JEV, N_LU = 0, 1, 2, 3, 4

_CORE_SIG = types.int64(RHS_TYPE, JAC_TYPE, types.float64[::1], types.float64[::1],
                        types.float64[::1], types.int64[::1], types.int64, types.int64, types.float64,
                        types.float64, types.float64, types.float64, types.int64,
                        types.float64[:, ::1], types.int64[::1])

SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 5.0


@njit(cache=True)
def _error_norm(err, y, ynew, rtol, atol):
    s = 0.0
    for i in range(err.size):
        sc = atol + rtol * max(abs(y[i]), abs(ynew[i]))
        s += (err[i] / sc) ** 2
    return np.sqrt(s / err.size)


@njit(cache=True)
def _initial_step(y, f0, rtol, atol, span):
    d0 = 0.0
    d1 = 0.0
    for i in range(y.size):
        sc = atol + rtol * abs(y[i])
        d0 += (y[i] / sc) ** 2
        d1 += (f0[i] / sc) ** 2
    d0 = np.sqrt(d0 / y.size)
    d1 = np.sqrt(d1 / y.size)
    if d0 < 1e-5 or d1 < 1e-5:
        h = 1e-6
    else:
        h = 0.01 * d0 / d1
    return min(h, span)


def _next_factor(err, exponent, rejected):
    if err == 0.0:
        fac = MAX_FACTOR
    else:
        fac = min(MAX_FACTOR, max(MIN_FACTOR, SAFETY * err ** (-exponent)))
    if rejected:
        fac = min(fac, 1.0)
    return fac


_next_factor = njit(cache=True)(_next_factor)


def _dopri5(rhs, jac, y0, p, stops, segs, m, mb, rtol, atol, h0, h_fixed, max_steps, Yout, counters):
    n = y0.size
    y = y0.copy()
    ynew = np.empty(n)
    ys = np.empty(n)
    err = np.empty(n)
    k = np.empty((7, n))
    Yout[0, :] = y
    h = h0
    exponent = 1.0 / 5.0
    for s in range(1, stops.size):
        t = stops[s - 1]
        t_end = stops[s]
        seg = segs[s]
        if t_end <= t:
            Yout[s, :] = y
            continue
        rhs(t, y, p, seg, k[0])
        counters[N_FEV] += 1
        if h <= 0.0:
            h = _initial_step(y, k[0], rtol, atol, t_end - t)
        rejected = False
        while t < t_end:
            if counters[N_ACCEPT] + counters[N_REJECT] >= max_steps:
                return MAX_STEPS
            if h_fixed > 0.0:
                nsub = np.ceil((t_end - t) / h_fixed - 1e-9)
                h = (t_end - t) / max(nsub, 1.0)
            last = t + h * (1.0 + 1e-10) >= t_end
            hs = t_end - t if last else h
            if hs <= 1e-14 * max(1.0, abs(t)):
                return STEP_TOO_SMALL
            for i in range(1, 7):
                ys[:] = y
                for j in range(i):
                    if DP_A[i, j] != 0.0:
                        ys += (hs * DP_A[i, j]) * k[j]
                ti = t_end if (i >= 5 and last) else t + DP_C[i] * hs
                rhs(ti, ys, p, seg, k[i])
            counters[N_FEV] += 6
            ynew[:] = ys                      # stage 7 argument is the 5th order solution
            err[:] = 0.0
            for j in range(7):
                if DP_E[j] != 0.0:
                    err += (hs * DP_E[j]) * k[j]
            en = _error_norm(err, y, ynew, rtol, atol)
            if not np.isfinite(en):
                if h_fixed > 0.0:
                    return NOT_FINITE
                en = 1e10
            if en <= 1.0 or h_fixed > 0.0:
                counters[N_ACCEPT] += 1
                t = t_end if last else t + hs
                y[:] = ynew
                k[0, :] = k[6]
                if h_fixed <= 0.0:
                    fac = _next_factor(en, exponent, rejected)
                    if not last or hs >= h:
                        h = hs * fac
                rejected = False
            else:
                counters[N_REJECT] += 1
                rejected = True
                h = hs * _next_factor(en, exponent, True)
        Yout[s, :] = y
    return SUCCESS


def _rosw(rhs, jac, y0, p, stops, segs, m, mb, rtol, atol, h0, h_fixed, max_steps, Yout, counters):
    n = y0.size
    kk = n // m
    y = y0.copy()
    ynew = np.empty(n)
    ys = np.empty(n)
    fi = np.empty(n)
    err = np.empty(n)
    u = np.empty((4, n))
    J = np.empty((m, m))
    M = np.empty((m, m))
    Yout[0, :] = y
    h = h0
    exponent = 1.0 / 3.0
    for s in range(1, stops.size):
        t = stops[s - 1]
        t_end = stops[s]
        seg = segs[s]
        if t_end <= t:
            Yout[s, :] = y
            continue
        if h <= 0.0:
            rhs(t, y, p, seg, fi)
            counters[N_FEV] += 1
            h = _initial_step(y, fi, rtol, atol, t_end - t)
        need_jac = True
        rejected = False
        while t < t_end:
            if counters[N_ACCEPT] + counters[N_REJECT] >= max_steps:
                return MAX_STEPS
            if h_fixed > 0.0:
                nsub = np.ceil((t_end - t) / h_fixed - 1e-9)
                h = (t_end - t) / max(nsub, 1.0)
            last = t + h * (1.0 + 1e-10) >= t_end
            hs = t_end - t if last else h
            if hs <= 1e-14 * max(1.0, abs(t)):
                return STEP_TOO_SMALL
            if need_jac:
                jac(t, y, p, seg, J)
                counters[N_JEV] += 1
                need_jac = False
            M[:, :] = -J
            for i in range(m):
                M[i, i] += 1.0 / (hs * ROS_GAMMA)
            if mb == m:
                M[:, :] = np.linalg.inv(M)
            else:                              # block-diagonal J: invert block by block
                for b0 in range(0, m, mb):
                    M[b0:b0 + mb, b0:b0 + mb] = np.linalg.inv(
                        np.ascontiguousarray(M[b0:b0 + mb, b0:b0 + mb]))
            counters[N_LU] += 1
            for i in range(4):
                ys[:] = y
                for j in range(i):
                    if ROS_A[i, j] != 0.0:
                        ys += ROS_A[i, j] * u[j]
                ti = t_end if (ROS_C[i] == 1.0 and last) else t + ROS_C[i] * hs
                rhs(ti, ys, p, seg, fi)
                for j in range(i):
                    fi += (ROS_CMAT[i, j] / hs) * u[j]
                F = fi.reshape(m, kk)
                if mb == m:
                    u[i, :] = np.dot(M, F).reshape(n)
                else:
                    ui = u[i].reshape(m, kk)
                    for b0 in range(0, m, mb):
                        ui[b0:b0 + mb] = np.dot(np.ascontiguousarray(M[b0:b0 + mb, b0:b0 + mb]),
                                                F[b0:b0 + mb])
            counters[N_FEV] += 4
            ynew[:] = y
            err[:] = 0.0
            for i in range(4):
                ynew += ROS_M[i] * u[i]
                err += ROS_MERR[i] * u[i]
            en = _error_norm(err, y, ynew, rtol, atol)
            if not np.isfinite(en):
                if h_fixed > 0.0:
                    return NOT_FINITE
                en = 1e10
            if en <= 1.0 or h_fixed > 0.0:
                counters[N_ACCEPT] += 1
                t = t_end if last else t + hs
                y[:] = ynew
                need_jac = True
                if h_fixed <= 0.0:
                    fac = _next_factor(en, exponent, rejected)
                    if not last or hs >= h:
                        h = hs * fac
                rejected = False
            else:
                counters[N_REJECT] += 1
                rejected = True
                h = hs * _next_factor(en, exponent, True)
        Yout[s, :] = y
    return SUCCESS


dopri5_loop = njit(_CORE_SIG, cache=True)(_dopri5)
rosw_loop = njit(_CORE_SIG, cache=True)(_rosw)
