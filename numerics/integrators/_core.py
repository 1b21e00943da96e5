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

from ._tableaux import (DP_A, DP_C, DP_E, RADAU_C, RADAU_E, RADAU_MU_COMPLEX, RADAU_MU_REAL,
                        RADAU_T, RADAU_TI, RADAU_VINV, ROS_A, ROS_C, ROS_CMAT, ROS_GAMMA, ROS_M, ROS_MERR)

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


# ----------------------------------------------------------------------------- Radau IIA (order 5)
NEWTON_MAXITER = 6


def _apply_inv(Minv, v, m, mb, kk):
    """``(Minv ⊗ I_k) v`` for a dense or block-diagonal (blocks of ``mb``) ``Minv``."""
    V = v.reshape(m, kk)
    if mb == m:
        return np.dot(np.ascontiguousarray(Minv), V).reshape(m * kk)
    out = np.empty_like(V)
    for b0 in range(0, m, mb):
        out[b0:b0 + mb] = np.dot(np.ascontiguousarray(Minv[b0:b0 + mb, b0:b0 + mb]), V[b0:b0 + mb])
    return out.reshape(m * kk)


def _invert(M, m, mb):
    if mb == m:
        return np.linalg.inv(M)
    out = np.zeros_like(M)
    for b0 in range(0, m, mb):
        out[b0:b0 + mb, b0:b0 + mb] = np.linalg.inv(np.ascontiguousarray(M[b0:b0 + mb, b0:b0 + mb]))
    return out


_apply_inv = njit(cache=True)(_apply_inv)
_invert = njit(cache=True)(_invert)


def _rms_scaled(v, scale):
    s = 0.0
    for i in range(v.size):
        s += (v[i] / scale[i]) ** 2
    return np.sqrt(s / v.size)


_rms_scaled = njit(cache=True)(_rms_scaled)


def _radau(rhs, jac, y0, p, stops, segs, m, mb, rtol, atol, h0, h_fixed, max_steps, Yout, counters):
    """Radau IIA of order 5 with simplified Newton on ``W = J ⊗ I_k`` (after SciPy's ``Radau``,
    Hairer & Wanner IV.8): Jacobian and factorisations are reused while Newton converges fast."""
    n = y0.size
    kk = n // m
    y = y0.copy()
    f0 = np.empty(n)
    fi = np.empty(n)
    F = np.empty((3, n))
    Z = np.zeros((3, n))
    W = np.zeros((3, n))
    ynew = np.empty(n)
    scale = np.empty(n)
    J = np.empty((m, m))
    eye = np.eye(m)
    Yout[0, :] = y
    h = h0
    newton_tol = max(10 * 2.220446049250313e-16 / rtol, min(0.03, rtol ** 0.5))
    for s in range(1, stops.size):
        t = stops[s - 1]
        t_end = stops[s]
        seg = segs[s]
        if t_end <= t:
            Yout[s, :] = y
            continue
        rhs(t, y, p, seg, f0)
        counters[N_FEV] += 1
        if h <= 0.0:
            h = _initial_step(y, f0, rtol, atol, t_end - t)
        jac(t, y, p, seg, J)
        counters[N_JEV] += 1
        current_jac = True
        have_lu = False
        h_lu = 0.0
        Mr = np.empty((m, m))
        Mc = np.empty((m, m), dtype=np.complex128)
        h_old = -1.0
        err_old = -1.0
        rejected = False
        have_poly = False
        Qp = np.zeros((3, n))
        Zlast = np.zeros(n)                    # collocation polynomial of the last accepted step
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
            # starting guess: extrapolate the last collocation polynomial u(x) = y_old + Σ q_j x^j
            Z0 = np.zeros((3, n))
            if have_poly:
                for i in range(3):
                    x = 1.0 + RADAU_C[i] * hs / h_old
                    Z0[i] = x * Qp[0] + x * x * Qp[1] + x * x * x * Qp[2] - Zlast
            if not have_lu or hs != h_lu:
                Mr = _invert(RADAU_MU_REAL / hs * eye - J, m, mb)
                Mc = _invert(RADAU_MU_COMPLEX / hs * eye - J.astype(np.complex128), m, mb)
                counters[N_LU] += 2
                have_lu = True
                h_lu = hs
            # simplified Newton for the collocation system, from Z = 0
            for i in range(n):
                scale[i] = atol + rtol * abs(y[i])
            Z[:, :] = Z0
            for i in range(3):
                W[i] = RADAU_TI[i, 0] * Z0[0] + RADAU_TI[i, 1] * Z0[1] + RADAU_TI[i, 2] * Z0[2]
            converged = False
            rate = -1.0
            dW_old = -1.0
            n_iter = 0
            for k in range(NEWTON_MAXITER):
                n_iter = k + 1
                for i in range(3):
                    ti = t_end if (i == 2 and last) else t + RADAU_C[i] * hs
                    ys = y + Z[i]
                    rhs(ti, ys, p, seg, F[i])
                counters[N_FEV] += 3
                if not np.all(np.isfinite(F)):
                    break
                fr = RADAU_TI[0, 0] * F[0] + RADAU_TI[0, 1] * F[1] + RADAU_TI[0, 2] * F[2] \
                    - (RADAU_MU_REAL / hs) * W[0]
                fc = (RADAU_TI[1, 0] + 1j * RADAU_TI[2, 0]) * F[0] \
                    + (RADAU_TI[1, 1] + 1j * RADAU_TI[2, 1]) * F[1] \
                    + (RADAU_TI[1, 2] + 1j * RADAU_TI[2, 2]) * F[2] \
                    - (RADAU_MU_COMPLEX / hs) * (W[1] + 1j * W[2])
                dr = _apply_inv(Mr, fr, m, mb, kk)
                dc = _apply_inv(Mc, fc, m, mb, kk)
                dn = 0.0
                for i in range(n):
                    dn += (dr[i] / scale[i]) ** 2 + (dc[i].real / scale[i]) ** 2 \
                        + (dc[i].imag / scale[i]) ** 2
                dn = np.sqrt(dn / (3 * n))
                if dW_old >= 0.0:
                    rate = dn / dW_old if dW_old > 0 else 0.0
                if rate >= 0.0 and (rate >= 1.0 or
                                    rate ** (NEWTON_MAXITER - k) / (1.0 - rate) * dn > newton_tol):
                    break
                W[0] += dr
                W[1] += dc.real
                W[2] += dc.imag
                for i in range(3):
                    Z[i] = RADAU_T[i, 0] * W[0] + RADAU_T[i, 1] * W[1] + RADAU_T[i, 2] * W[2]
                if dn == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dn < newton_tol):
                    converged = True
                    break
                dW_old = dn
            if not converged:
                if h_fixed > 0.0:
                    return NOT_FINITE
                counters[N_REJECT] += 1
                if not current_jac:
                    jac(t, y, p, seg, J)
                    counters[N_JEV] += 1
                    current_jac = True
                else:
                    h = hs * 0.5
                have_lu = False
                rejected = True
                continue
            ynew[:] = y + Z[2]
            ze = (RADAU_E[0] * Z[0] + RADAU_E[1] * Z[1] + RADAU_E[2] * Z[2]) / hs
            err = _apply_inv(Mr, f0 + ze, m, mb, kk)
            for i in range(n):
                scale[i] = atol + rtol * max(abs(y[i]), abs(ynew[i]))
            en = _rms_scaled(err, scale)
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
            if rejected and en > 1.0:
                rhs(t, y + err, p, seg, fi)
                counters[N_FEV] += 1
                err = _apply_inv(Mr, fi + ze, m, mb, kk)
                en = _rms_scaled(err, scale)
            if h_fixed > 0.0 or en <= 1.0:
                counters[N_ACCEPT] += 1
                recompute_jac = n_iter > 2 and rate > 1e-3
                if h_fixed <= 0.0:
                    if err_old < 0.0 or h_old < 0.0 or en == 0.0:
                        mult = 1.0
                    else:
                        mult = hs / h_old * (err_old / en) ** 0.25
                    fac = min(1.0, mult) * (en ** -0.25 if en > 0 else 10.0)
                    fac = min(10.0, safety * fac)
                    if not recompute_jac and fac < 1.2:
                        fac = 1.0
                    if not last or hs >= h:
                        h = hs * fac
                h_old = hs
                err_old = en
                Qp = np.dot(RADAU_VINV, Z)           # q_j with Σ_j q_j c_i^j = Z_i
                Zlast = Z[2].copy()
                have_poly = True
                t = t_end if last else t + hs
                y[:] = ynew
                rhs(t, y, p, seg, f0)
                counters[N_FEV] += 1
                if recompute_jac:
                    jac(t, y, p, seg, J)
                    counters[N_JEV] += 1
                    current_jac = True
                    have_lu = False
                else:
                    current_jac = False
                rejected = False
            else:
                counters[N_REJECT] += 1
                if err_old < 0.0 or h_old < 0.0 or en == 0.0:
                    mult = 1.0
                else:
                    mult = hs / h_old * (err_old / en) ** 0.25
                fac = min(1.0, mult) * en ** -0.25
                h = hs * max(MIN_FACTOR, safety * fac)
                rejected = True
        Yout[s, :] = y
    return SUCCESS


radau_loop = njit(_CORE_SIG, cache=True)(_radau)
