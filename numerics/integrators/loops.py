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

from numerics.integrators.tableaux import (
    DP_A,
    DP_C,
    DP_E,
    RADAU_C,
    RADAU_E,
    RADAU_MU_COMPLEX,
    RADAU_MU_REAL,
    RADAU_T,
    RADAU_TI,
    RADAU_VINV,
    ROS_A,
    ROS_C,
    ROS_CMAT,
    ROS_GAMMA,
    ROS_M,
    ROS_MERR,
)

RHS_SIG = types.void(
    types.float64, types.float64[::1], types.float64[::1], types.int64, types.float64[::1]
)
JAC_SIG = types.void(
    types.float64, types.float64[::1], types.float64[::1], types.int64, types.float64[:, ::1]
)
RHS_TYPE = types.FunctionType(RHS_SIG)
JAC_TYPE = types.FunctionType(JAC_SIG)

# status codes
SUCCESS, MAX_STEPS, STEP_TOO_SMALL, NOT_FINITE = 0, -1, -2, -3
# counters layout
N_ACCEPT, N_REJECT, N_FEV, N_JEV, N_LU = 0, 1, 2, 3, 4

_CORE_SIG = types.int64(
    RHS_TYPE,
    JAC_TYPE,
    types.float64[::1],
    types.float64[::1],
    types.float64[::1],
    types.int64[::1],
    types.int64,
    types.int64,
    types.float64,
    types.float64,
    types.float64,
    types.float64,
    types.int64,
    types.float64[:, ::1],
    types.int64[::1],
)

SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 5.0


@njit(cache=True)
def _step_length(t, t_end, h, h_fixed):
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


@njit(cache=True)
def _step_after_accept(h, hs, en, exponent, rejected, last, h_fixed):
    """Next step size after an accepted step of the embedded-error methods (DOPRI5, ROS34PW2).

    Fixed steps keep ``h``; a final step shortened to land on a breakpoint does not shrink ``h``.
    """
    if h_fixed > 0.0:
        return h
    fac = _next_factor(en, exponent, rejected)
    if not last or hs >= h:
        return hs * fac
    return h


def _dopri5(
    rhs, jac, y0, p, stops, segs, m, mb, rtol, atol, h0, h_fixed, max_steps, Yout, counters
):
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
            h, hs, last = _step_length(t, t_end, h, h_fixed)
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
            ynew[:] = ys  # stage 7 argument is the 5th order solution
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
                h = _step_after_accept(h, hs, en, exponent, rejected, last, h_fixed)
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
            h, hs, last = _step_length(t, t_end, h, h_fixed)
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
            else:  # block-diagonal J: invert block by block
                for b0 in range(0, m, mb):
                    M[b0 : b0 + mb, b0 : b0 + mb] = np.linalg.inv(
                        np.ascontiguousarray(M[b0 : b0 + mb, b0 : b0 + mb])
                    )
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
                        ui[b0 : b0 + mb] = np.dot(
                            np.ascontiguousarray(M[b0 : b0 + mb, b0 : b0 + mb]), F[b0 : b0 + mb]
                        )
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
                h = _step_after_accept(h, hs, en, exponent, rejected, last, h_fixed)
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


def invert_into(M, m, mb, out, work):
    """``out`` ← inverse of ``M`` (dense, ``mb == m``: LAPACK) or of each diagonal block of size
    ``mb`` (Gauss–Jordan with partial pivoting in loops: the blocks are too small for LAPACK calls,
    whose per-call cost dominated). ``work`` is an ``mb×mb`` scratch of ``M``'s dtype. A singular
    block gives non-finite entries (no exception), which the Newton iteration then rejects."""
    if mb == m:
        out[:, :] = np.linalg.inv(M)
        return
    out[:, :] = 0.0
    for b0 in range(0, m, mb):
        for i in range(mb):
            for j in range(mb):
                work[i, j] = M[b0 + i, b0 + j]
                out[b0 + i, b0 + j] = 1.0 if i == j else 0.0
        for c in range(mb):
            piv = c
            big = abs(work[c, c])
            for r in range(c + 1, mb):
                if abs(work[r, c]) > big:
                    big = abs(work[r, c])
                    piv = r
            if piv != c:
                for j in range(mb):
                    tmp = work[c, j]
                    work[c, j] = work[piv, j]
                    work[piv, j] = tmp
                    tmp = out[b0 + c, b0 + j]
                    out[b0 + c, b0 + j] = out[b0 + piv, b0 + j]
                    out[b0 + piv, b0 + j] = tmp
            inv = 1.0 / work[c, c]
            for j in range(mb):
                work[c, j] *= inv
                out[b0 + c, b0 + j] *= inv
            for r in range(mb):
                if r != c:
                    f = work[r, c]
                    if f != 0.0:
                        for j in range(mb):
                            work[r, j] -= f * work[c, j]
                            out[b0 + r, b0 + j] -= f * out[b0 + c, b0 + j]


def apply_into(Minv, v, out, m, mb, kk):
    """``out = (Minv ⊗ I_k) v`` for a dense or block-diagonal (blocks of ``mb``) real ``Minv``."""
    if mb == m:
        out[:] = np.dot(Minv, v.reshape((m, kk))).reshape(m * kk)
        return
    acc = np.empty(kk)
    for b0 in range(0, m, mb):
        for i in range(b0, b0 + mb):
            acc[:] = 0.0
            for j in range(b0, b0 + mb):
                a = Minv[i, j]
                for k in range(kk):
                    acc[k] += a * v[j * kk + k]
            out[i * kk : (i + 1) * kk] = acc


def apply_complex_into(Mre, Mim, vre, vim, ore, oim, m, mb, kk):
    """``o = ((Mre + i·Mim) ⊗ I_k)(vre + i·vim)`` in real arithmetic."""
    if mb == m:
        Vr = vre.reshape((m, kk))
        Vi = vim.reshape((m, kk))
        ore[:] = (np.dot(Mre, Vr) - np.dot(Mim, Vi)).reshape(m * kk)
        oim[:] = (np.dot(Mre, Vi) + np.dot(Mim, Vr)).reshape(m * kk)
        return
    accr = np.empty(kk)
    acci = np.empty(kk)
    for b0 in range(0, m, mb):
        for i in range(b0, b0 + mb):
            accr[:] = 0.0
            acci[:] = 0.0
            for j in range(b0, b0 + mb):
                a = Mre[i, j]
                b = Mim[i, j]
                for k in range(kk):
                    xr = vre[j * kk + k]
                    xi = vim[j * kk + k]
                    accr[k] += a * xr - b * xi
                    acci[k] += a * xi + b * xr
            ore[i * kk : (i + 1) * kk] = accr
            oim[i * kk : (i + 1) * kk] = acci


def _mix3(M, src, out):
    """``out[r] = Σ_c M[r, c]·src[c]`` for the three stage rows (no temporaries)."""
    for i in range(src.shape[1]):
        a = src[0, i]
        b = src[1, i]
        c = src[2, i]
        for r in range(3):
            out[r, i] = M[r, 0] * a + M[r, 1] * b + M[r, 2] * c


def _extrapolate(Qp, Zlast, hs, h_old, Z0):
    """Starting guess ``Z0_i = u(1 + c_i·h/h_old) − u(1)`` from the last collocation polynomial
    ``u(x) − y_old = Σ_j q_j x^j`` (``Zlast = u(1) − y_old``)."""
    for r in range(3):
        x = 1.0 + RADAU_C[r] * hs / h_old
        x2 = x * x
        x3 = x2 * x
        for i in range(Zlast.size):
            Z0[r, i] = x * Qp[0, i] + x2 * Qp[1, i] + x3 * Qp[2, i] - Zlast[i]


def _factor(J, hs, m, mb, Mr, Mcre, Mcim, Areal, Acplx, Cinv, wr, wc):
    """``Mr = (μ_r/h − J)⁻¹`` and ``Mc = (μ_c/h − J)⁻¹`` (split into real and imaginary parts)."""
    mur = RADAU_MU_REAL / hs
    muc = RADAU_MU_COMPLEX / hs
    for i in range(m):
        for j in range(m):
            Areal[i, j] = -J[i, j]
            Acplx[i, j] = -J[i, j]
        Areal[i, i] += mur
        Acplx[i, i] += muc
    invert_into(Areal, m, mb, Mr, wr)
    invert_into(Acplx, m, mb, Cinv, wc)
    for i in range(m):
        for j in range(m):
            Mcre[i, j] = Cinv[i, j].real
            Mcim[i, j] = Cinv[i, j].imag


def _newton_residual(F, W, hs, fr, fcr, fci):
    """Transformed residuals: ``fr = (T⁻¹F)_0 − (μ_r/h)W_0`` and the complex pair
    ``fc = (T⁻¹F)_1 + i(T⁻¹F)_2 − (μ_c/h)(W_1 + iW_2)``. Returns whether all of ``F`` is finite
    (checked first, without a temporary array; nothing is written otherwise)."""
    for r in range(3):
        for i in range(F.shape[1]):
            if not np.isfinite(F[r, i]):
                return False
    mr = RADAU_MU_REAL / hs
    mcr = RADAU_MU_COMPLEX.real / hs
    mci = RADAU_MU_COMPLEX.imag / hs
    for i in range(F.shape[1]):
        f0 = F[0, i]
        f1 = F[1, i]
        f2 = F[2, i]
        fr[i] = RADAU_TI[0, 0] * f0 + RADAU_TI[0, 1] * f1 + RADAU_TI[0, 2] * f2 - mr * W[0, i]
        a = RADAU_TI[1, 0] * f0 + RADAU_TI[1, 1] * f1 + RADAU_TI[1, 2] * f2
        b = RADAU_TI[2, 0] * f0 + RADAU_TI[2, 1] * f1 + RADAU_TI[2, 2] * f2
        fcr[i] = a - (mcr * W[1, i] - mci * W[2, i])
        fci[i] = b - (mcr * W[2, i] + mci * W[1, i])
    return True


def _newton_norm(dr, dcr, dci, iscale):
    """RMS norm of the three transformed increments, ``iscale = 1/(atol + rtol·|y|)``."""
    s = 0.0
    for i in range(dr.size):
        a = dr[i] * iscale[i]
        b = dcr[i] * iscale[i]
        c = dci[i] * iscale[i]
        s += a * a + b * b + c * c
    return np.sqrt(s / (3 * dr.size))


def _newton_update(W, Z, dr, dcr, dci):
    for i in range(W.shape[1]):
        W[0, i] += dr[i]
        W[1, i] += dcr[i]
        W[2, i] += dci[i]
        for r in range(3):
            Z[r, i] = RADAU_T[r, 0] * W[0, i] + RADAU_T[r, 1] * W[1, i] + RADAU_T[r, 2] * W[2, i]


def _rms_scaled(v, scale):
    s = 0.0
    for i in range(v.size):
        s += (v[i] / scale[i]) ** 2
    return np.sqrt(s / v.size)


invert_into = njit(cache=True, error_model="numpy")(invert_into)
apply_into = njit(cache=True)(apply_into)
apply_complex_into = njit(cache=True)(apply_complex_into)
_factor = njit(cache=True)(_factor)
_newton_residual = njit(cache=True)(_newton_residual)
_newton_norm = njit(cache=True)(_newton_norm)
_newton_update = njit(cache=True)(_newton_update)
_mix3 = njit(cache=True)(_mix3)
_extrapolate = njit(cache=True)(_extrapolate)
_rms_scaled = njit(cache=True)(_rms_scaled)


def _radau(rhs, jac, y0, p, stops, segs, m, mb, rtol, atol, h0, h_fixed, max_steps, Yout, counters):
    """Radau IIA of order 5 with simplified Newton on ``W = J ⊗ I_k`` (after SciPy's ``Radau``,
    Hairer & Wanner IV.8): Jacobian and factorisations are reused while Newton converges fast.
    All work arrays are allocated once; the block-diagonal inverses and products are loops."""
    n = y0.size
    kk = n // m
    y = y0.copy()
    f0 = np.empty(n)
    fi = np.empty(n)
    F = np.empty((3, n))
    Z = np.zeros((3, n))
    Z0 = np.zeros((3, n))
    W = np.zeros((3, n))
    ys = np.empty(n)
    ynew = np.empty(n)
    scale = np.empty(n)
    iscale = np.empty(n)
    fr = np.empty(n)
    fcr = np.empty(n)
    fci = np.empty(n)
    dr = np.empty(n)
    dcr = np.empty(n)
    dci = np.empty(n)
    ze = np.empty(n)
    err = np.empty(n)
    J = np.empty((m, m))
    Mr = np.empty((m, m))
    Mcre = np.empty((m, m))
    Mcim = np.empty((m, m))
    Areal = np.empty((m, m))
    Acplx = np.empty((m, m), dtype=np.complex128)
    Cinv = np.empty((m, m), dtype=np.complex128)
    wr = np.empty((mb, mb))
    wc = np.empty((mb, mb), dtype=np.complex128)
    Qp = np.zeros((3, n))
    Zlast = np.zeros(n)  # collocation polynomial of the last accepted step
    Yout[0, :] = y
    h = h0
    newton_tol = max(10 * 2.220446049250313e-16 / rtol, min(0.03, rtol**0.5))
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
        h_old = -1.0
        err_old = -1.0
        rejected = False
        have_poly = False
        while t < t_end:
            if counters[N_ACCEPT] + counters[N_REJECT] >= max_steps:
                return MAX_STEPS
            h, hs, last = _step_length(t, t_end, h, h_fixed)
            if hs <= 1e-14 * max(1.0, abs(t)):
                return STEP_TOO_SMALL
            # starting guess: extrapolate the last collocation polynomial u(x) = y_old + Σ q_j x^j
            if have_poly:
                _extrapolate(Qp, Zlast, hs, h_old, Z0)
            else:
                Z0[:, :] = 0.0
            if not have_lu or hs != h_lu:
                _factor(J, hs, m, mb, Mr, Mcre, Mcim, Areal, Acplx, Cinv, wr, wc)
                counters[N_LU] += 2
                have_lu = True
                h_lu = hs
            # simplified Newton for the collocation system
            for i in range(n):
                iscale[i] = 1.0 / (atol + rtol * abs(y[i]))
            Z[:, :] = Z0
            _mix3(RADAU_TI, Z0, W)
            converged = False
            rate = -1.0
            dW_old = -1.0
            n_iter = 0
            for k in range(NEWTON_MAXITER):
                n_iter = k + 1
                for i in range(3):
                    ti = t_end if (i == 2 and last) else t + RADAU_C[i] * hs
                    ys[:] = y
                    ys += Z[i]
                    rhs(ti, ys, p, seg, F[i])
                counters[N_FEV] += 3
                if not _newton_residual(F, W, hs, fr, fcr, fci):
                    break  # non-finite stage values: not converged
                apply_into(Mr, fr, dr, m, mb, kk)
                apply_complex_into(Mcre, Mcim, fcr, fci, dcr, dci, m, mb, kk)
                dn = _newton_norm(dr, dcr, dci, iscale)
                if dW_old >= 0.0:
                    rate = dn / dW_old if dW_old > 0 else 0.0
                if rate >= 0.0 and (
                    rate >= 1.0 or rate ** (NEWTON_MAXITER - k) / (1.0 - rate) * dn > newton_tol
                ):
                    break
                _newton_update(W, Z, dr, dcr, dci)
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
            ynew[:] = y
            ynew += Z[2]
            for i in range(n):
                ze[i] = (RADAU_E[0] * Z[0, i] + RADAU_E[1] * Z[1, i] + RADAU_E[2] * Z[2, i]) / hs
                fi[i] = f0[i] + ze[i]
            apply_into(Mr, fi, err, m, mb, kk)
            for i in range(n):
                scale[i] = atol + rtol * max(abs(y[i]), abs(ynew[i]))
            en = _rms_scaled(err, scale)
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
            if rejected and en > 1.0:
                ys[:] = y
                ys += err
                rhs(t, ys, p, seg, fi)
                counters[N_FEV] += 1
                fi += ze
                apply_into(Mr, fi, err, m, mb, kk)
                en = _rms_scaled(err, scale)
            if h_fixed > 0.0 or en <= 1.0:
                counters[N_ACCEPT] += 1
                recompute_jac = n_iter > 2 and rate > 1e-3
                if h_fixed <= 0.0:
                    if err_old < 0.0 or h_old < 0.0 or en == 0.0:
                        mult = 1.0
                    else:
                        mult = hs / h_old * (err_old / en) ** 0.25
                    fac = min(1.0, mult) * (en**-0.25 if en > 0 else 10.0)
                    fac = min(10.0, safety * fac)
                    if not recompute_jac and fac < 1.2:
                        fac = 1.0
                    if not last or hs >= h:
                        h = hs * fac
                h_old = hs
                err_old = en
                _mix3(RADAU_VINV, Z, Qp)  # q_j with Σ_j q_j c_i^j = Z_i
                Zlast[:] = Z[2]
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
                fac = min(1.0, mult) * en**-0.25
                h = hs * max(MIN_FACTOR, safety * fac)
                rejected = True
        Yout[s, :] = y
    return SUCCESS


radau_loop = njit(_CORE_SIG, cache=True)(_radau)
