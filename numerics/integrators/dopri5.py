"""Dormand–Prince 5(4): the explicit step, its commit (FSAL) and its continuous extension.

The step and the embedded error are those of Hairer, Nørsett & Wanner (*Solving ODEs I*, II.5,
Table 5.2; :data:`numerics.integrators.tableaux.DP_A`); the error norm is SciPy's. The continuous
extension is Hairer's ``CONTD5`` (order 4, from the seven stages of the step, no extra
right-hand-side call). Workspace: ``ws = [k (7×n) | ys (n) | y6 (n) | ‖k₇ − k₆‖², ‖y₁ − y₆‖²]``.

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
    O_EXPONENT,
    O_RTOL,
    copy_into,
    euler_probe,
    initial_step,
)
from fastslow.numerics.integrators.numba_binding import NO_C_ENTRY
from fastslow.numerics.integrators.tableaux import DP_A, DP_C, DP_DENSE, DP_E, DP_ERROR_ORDER
from fastslow.numerics.lanes import abs8, add8, load8, max8, mul8, scale8, splat8, sub8, sum8, vdiv8

ERROR_EXPONENT = 1.0 / (DP_ERROR_ORDER + 1)
"""``1/(q + 1)`` for the embedded order ``q = 4`` (the integral controller's exponent)."""
STIFF_HLAMBDA, STIFF_COUNT, NONSTIFF_COUNT = 3.25, 15, 6
"""Hairer's DOPRI5 stiffness test: ``h·λ > 3.25`` in 15 steps, reset by 6 consecutive below."""
N_STIFF, N_NONSTIFF = IW_METHOD, IW_METHOD + 1


def workspace(n: int, m: int, mb: int, lower: bool = False) -> tuple[int, int, int]:
    """Sizes of ``(ws, wc, iw)`` for a state of size ``n``."""
    return 9 * n + 2, 1, IW_METHOD + 2


def start(rhs, jac, t, span, y, p, seg, h, opt, ws, wc, iw, counters):
    """``k₀ = f(t, y)`` at the start of a segment; the initial step size if ``h ≤ 0``."""
    n = y.size
    k = ws[: 7 * n].reshape((7, n))
    rhs(t, y, p, seg, k[0])
    counters[N_FEV] += 1
    if h <= 0.0:
        rtol, atol, expo = opt[O_RTOL], opt[O_ATOL], opt[O_EXPONENT]
        ys, f1 = ws[7 * n : 8 * n], ws[8 * n : 9 * n]
        h0, d1 = euler_probe(y, k[0], rtol, atol, span, ys)
        rhs(t + h0, ys, p, seg, f1)
        counters[N_FEV] += 1
        return initial_step(y, k[0], f1, h0, d1, rtol, atol, expo, span)
    return h


def step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """One Dormand–Prince step of size ``hs`` to ``t1``; the fifth-order solution in ``ynew``.

    Each stage argument is formed in one pass over the state (all its terms at once), stage 6's
    in ``y₆`` (kept for the stiffness test) and stage 7's, the solution, directly in ``ynew``;
    the embedded error and its norm are one more pass (no error vector is stored), which also
    sums ``‖k₇ − k₆‖²`` and ``‖y₁ − y₆‖²`` for the stiffness test (kept in ``ws[9n : 9n + 2]``)."""
    n = y.size
    k0 = ws[:n]
    k1 = ws[n : 2 * n]
    k2 = ws[2 * n : 3 * n]
    k3 = ws[3 * n : 4 * n]
    k4 = ws[4 * n : 5 * n]
    k5 = ws[5 * n : 6 * n]
    k6 = ws[6 * n : 7 * n]
    ys = ws[7 * n : 8 * n]
    y6 = ws[8 * n : 9 * n]
    for i in range(n):
        ys[i] = y[i] + hs * DP_A[1, 0] * k0[i]
    rhs(t + DP_C[1] * hs, ys, p, seg, k1)
    for i in range(n):
        ys[i] = y[i] + (hs * DP_A[2, 0] * k0[i] + hs * DP_A[2, 1] * k1[i])
    rhs(t + DP_C[2] * hs, ys, p, seg, k2)
    for i in range(n):
        ys[i] = y[i] + (hs * DP_A[3, 0] * k0[i] + hs * DP_A[3, 1] * k1[i] + hs * DP_A[3, 2] * k2[i])
    rhs(t + DP_C[3] * hs, ys, p, seg, k3)
    for i in range(n):
        ys[i] = y[i] + (
            hs * DP_A[4, 0] * k0[i]
            + hs * DP_A[4, 1] * k1[i]
            + hs * DP_A[4, 2] * k2[i]
            + hs * DP_A[4, 3] * k3[i]
        )
    rhs(t + DP_C[4] * hs, ys, p, seg, k4)
    for i in range(n):
        y6[i] = y[i] + (
            hs * DP_A[5, 0] * k0[i]
            + hs * DP_A[5, 1] * k1[i]
            + hs * DP_A[5, 2] * k2[i]
            + hs * DP_A[5, 3] * k3[i]
            + hs * DP_A[5, 4] * k4[i]
        )
    rhs(t1, y6, p, seg, k5)
    for i in range(n):  # DP_A[6, 1] = 0
        d = (
            hs * DP_A[6, 0] * k0[i]
            + hs * DP_A[6, 2] * k2[i]
            + hs * DP_A[6, 3] * k3[i]
            + hs * DP_A[6, 4] * k4[i]
        )
        ynew[i] = y[i] + (d + hs * DP_A[6, 5] * k5[i])
    rhs(t1, ynew, p, seg, k6)
    counters[N_FEV] += 6
    return _error_norm_and_stiffness(
        hs, y, ynew, y6, ws, n, opt[O_RTOL], opt[O_ATOL], opt[O_DETECT] > 0.0
    )


@njit(cache=True, **NO_C_ENTRY)
def _error_norm_and_stiffness(hs, y, ynew, y6, ws, n, rtol, atol, detect):
    """SciPy's norm of the embedded error ``hs·Σ e_j k_j`` (``DP_E[1] = 0``) and, with ``detect``,
    the stiffness estimate's sums ``‖k₇ − k₆‖²``, ``‖y₁ − y₆‖²`` (stored in ``ws[9n : 9n + 2]``
    for ``accept``). Eight entries at a time (:mod:`numerics.lanes`; the sums in index order, so
    the same bits as the scalar loop, which takes the last ``n mod 8``)."""
    k0 = ws[:n]
    k2 = ws[2 * n : 3 * n]
    k3 = ws[3 * n : 4 * n]
    k4 = ws[4 * n : 5 * n]
    k5 = ws[5 * n : 6 * n]
    k6 = ws[6 * n : 7 * n]
    n8 = n - n % 8
    s = 0.0
    num = 0.0
    den = 0.0
    for i in range(0, n8, 8):
        e = add8(scale8(load8(k0, i), DP_E[0]), scale8(load8(k2, i), DP_E[2]))
        e = add8(add8(e, scale8(load8(k3, i), DP_E[3])), scale8(load8(k4, i), DP_E[4]))
        e = add8(add8(e, scale8(load8(k5, i), DP_E[5])), scale8(load8(k6, i), DP_E[6]))
        yi = load8(y, i)
        yn = load8(ynew, i)
        sc = add8(splat8(atol), scale8(max8(abs8(yi), abs8(yn)), rtol))
        q = vdiv8(scale8(e, hs), sc)
        s = sum8(s, mul8(q, q))
        if detect:
            dk = sub8(load8(k6, i), load8(k5, i))
            dy = sub8(yn, load8(y6, i))
            num = sum8(num, mul8(dk, dk))
            den = sum8(den, mul8(dy, dy))
    for i in range(n8, n):
        e = DP_E[0] * k0[i] + DP_E[2] * k2[i] + DP_E[3] * k3[i] + DP_E[4] * k4[i]
        err = hs * (e + DP_E[5] * k5[i] + DP_E[6] * k6[i])
        sc = atol + rtol * max(abs(y[i]), abs(ynew[i]))
        s += (err / sc) ** 2
        if detect:
            num += (k6[i] - k5[i]) ** 2
            den += (ynew[i] - y6[i]) ** 2
    ws[9 * n] = num
    ws[9 * n + 1] = den
    return np.sqrt(s / n)


def accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """First same as last: the last stage is ``f(t1, ynew)``, the next step's first; with
    ``opt[O_DETECT]``, the stiffness test."""
    n = y.size
    if opt[O_DETECT] > 0.0:
        _stiffness_test(hs, ws[9 * n], ws[9 * n + 1], iw)
    copy_into(ws[:n], ws[6 * n : 7 * n])


@njit(cache=True, **NO_C_ENTRY)
def _stiffness_test(hs, num, den, iw):
    """Count the accepted step as stiff when ``hs·√(num/den) > 3.25`` (``num = ‖k₇ − k₆‖²``,
    ``den = ‖y₁ − y₆‖²`` summed by :func:`step`)."""
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
