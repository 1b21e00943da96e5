"""Dormand–Prince 5(4): the explicit step, its commit (FSAL) and its continuous extension.

The step and the embedded error are those of Hairer, Nørsett & Wanner (*Solving ODEs I*, II.5,
Table 5.2; :data:`numerics.integrators.tableaux.DP_A`); the error norm is SciPy's. The continuous
extension is Hairer's ``CONTD5`` (order 4, from the seven stages of the step, no extra
right-hand-side call). Workspace: ``ws = [k (7×n) | ys (n) | err (n)]``.
"""

from __future__ import annotations

from numerics.integrators.base import N_FEV, O_ATOL, O_RTOL, error_norm, initial_step
from numerics.integrators.tableaux import DP_A, DP_C, DP_DENSE, DP_E

ERROR_EXPONENT = 1.0 / 5.0
"""``1/(q + 1)`` for the embedded order ``q = 4`` (the integral controller's exponent)."""


def workspace(n: int, m: int, mb: int) -> tuple[int, int, int]:
    """Sizes of ``(ws, wc, iw)`` for a state of size ``n``."""
    return 9 * n, 1, 3


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
                ys += (hs * DP_A[i, j]) * k[j]
        ti = t1 if i >= 5 else t + DP_C[i] * hs
        rhs(ti, ys, p, seg, k[i])
    counters[N_FEV] += 6
    ynew[:] = ys  # stage 7 argument is the 5th order solution
    err[:] = 0.0
    for j in range(7):
        if DP_E[j] != 0.0:
            err += (hs * DP_E[j]) * k[j]
    return error_norm(err, y, ynew, opt[O_RTOL], opt[O_ATOL])


def accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """First same as last: the last stage is ``f(t1, ynew)``, the next step's first."""
    n = y.size
    ws[:n] = ws[6 * n : 7 * n]


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
