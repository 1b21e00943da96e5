"""Dormand–Prince 5(4): the explicit step, its commit (FSAL) and its continuous extension.

The step and the embedded error are those of Hairer, Nørsett & Wanner (*Solving ODEs I*, II.5,
Table 5.2; :data:`numerics.integrators.tableaux.DP_A`); the error norm is SciPy's. The continuous
extension is Hairer's ``CONTD5`` (order 4, from the seven stages of the step, no extra
right-hand-side call). Workspace: ``ws = [k (7×n) | ys (n) | err (n) | y6 (n)]``.

**Stiffness detection** (Hairer's ``DOPRI5``, as LSODA switches from Adams to BDF): after an
accepted step, ``h·λ ≈ h·‖k₇ − k₆‖/‖y₁ − y₆‖`` (``y₆`` the argument of stage 6) estimates the step's
position along the stiff direction; 15 such estimates above 3.25 (the boundary of the stability
region) without 6 consecutive ones below flag the problem as stiff (``iw[IW_STIFF]``) when
``opt[O_DETECT] = 1``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics.integrators.base import (
    IW_METHOD,
    IW_STIFF,
    N_FEV,
    O_ATOL,
    O_DETECT,
    O_RTOL,
    axpy,
    error_norm,
    initial_step,
)
from fastslow.numerics.integrators.tableaux import DP_A, DP_C, DP_DENSE, DP_E

ERROR_EXPONENT = 1.0 / 5.0
"""``1/(q + 1)`` for the embedded order ``q = 4`` (the integral controller's exponent)."""
STIFF_HLAMBDA, STIFF_COUNT, NONSTIFF_COUNT = 3.25, 15, 6
"""Hairer's DOPRI5 stiffness test: ``h·λ > 3.25`` in 15 steps, reset by 6 consecutive below."""
N_STIFF, N_NONSTIFF = IW_METHOD, IW_METHOD + 1


def workspace(n: int, m: int, mb: int, lower: bool = False) -> tuple[int, int, int]:
    """Sizes of ``(ws, wc, iw)`` for a state of size ``n``."""
    return 10 * n, 1, IW_METHOD + 2


def start(rhs, jac, t, span, y, p, seg, h, opt, ws, wc, iw, counters):
    """``k₀ = f(t, y)`` at the start of a segment; the initial step size if ``h ≤ 0``."""
    n = y.size
    k = ws[: 7 * n].reshape((7, n))
    rhs(t, y, p, seg, k[0])
    counters[N_FEV] += 1
    if h <= 0.0:
        return initial_step(y, k[0], opt[O_RTOL], opt[O_ATOL], span)
    return h


def step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """One Dormand–Prince step of size ``hs`` to ``t1``; the fifth-order solution in ``ynew``."""
    n = y.size
    k = ws[: 7 * n].reshape((7, n))
    ys = ws[7 * n : 8 * n]
    err = ws[8 * n : 9 * n]
    for i in range(1, 7):
        ys[:] = y
        for j in range(i):
            if DP_A[i, j] != 0.0:
                axpy(hs * DP_A[i, j], k[j], ys)
        ti = t1 if i >= 5 else t + DP_C[i] * hs
        if i == 5:
            ws[9 * n : 10 * n] = ys  # y₆, for the stiffness test
        rhs(ti, ys, p, seg, k[i])
    counters[N_FEV] += 6
    ynew[:] = ys  # stage 7 argument is the 5th order solution
    err[:] = 0.0
    for j in range(7):
        if DP_E[j] != 0.0:
            axpy(hs * DP_E[j], k[j], err)
    return error_norm(err, y, ynew, opt[O_RTOL], opt[O_ATOL])


def accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """First same as last: the last stage is ``f(t1, ynew)``, the next step's first; with
    ``opt[O_DETECT]``, the stiffness test."""
    n = y.size
    if opt[O_DETECT] > 0.0:
        _stiffness_test(hs, ws[5 * n : 6 * n], ws[6 * n : 7 * n], ws[9 * n : 10 * n], ynew, iw)
    ws[:n] = ws[6 * n : 7 * n]


@njit(cache=True)
def _stiffness_test(hs, k6, k7, y6, ynew, iw):
    num = 0.0
    den = 0.0
    for i in range(ynew.size):
        num += (k7[i] - k6[i]) ** 2
        den += (ynew[i] - y6[i]) ** 2
    if den > 0.0 and hs * np.sqrt(num / den) > STIFF_HLAMBDA:
        iw[N_NONSTIFF] = 0
        iw[N_STIFF] += 1
        if iw[N_STIFF] >= STIFF_COUNT:
            iw[IW_STIFF] = 1
    else:
        iw[N_NONSTIFF] += 1
        if iw[N_NONSTIFF] >= NONSTIFF_COUNT:
            iw[N_STIFF] = 0


def interp(theta, hs, y, ynew, ws, out):
    """``u(t + θ·hs)`` by Hairer's continuous extension (order 4) of the step just taken."""
    n = y.size
    k = ws[: 7 * n].reshape((7, n))
    s = 1.0 - theta
    for i in range(n):
        dy = ynew[i] - y[i]
        bspl = hs * k[0, i] - dy
        r4 = dy - hs * k[6, i] - bspl
        r5 = 0.0
        for j in range(7):
            r5 += DP_DENSE[j] * k[j, i]
        out[i] = y[i] + theta * (dy + s * (bspl + theta * (r4 + s * hs * r5)))
