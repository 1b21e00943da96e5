"""ROS34PW2, a Rosenbrock-W method: the step and its commit.

Rang & Angermann (2005): 4 stages, order 3 with an embedded order-2 solution, L-stable and
stiffly accurate, of order 3 for *any* matrix ``W = J ⊗ I_k`` used in place of the Jacobian. In
Hairer–Wanner's form (:mod:`numerics.integrators.tableaux`) a step solves
``(I/(hγ) − J) u_i = f(t + α_i h, y + Σ_j a_ij u_j) + Σ_j (c_ij/h) u_j`` and sets
``y₁ = y + Σ m_i u_i``.

Being a W-method, it keeps ``J`` across steps: ``J`` is evaluated at the start of a segment and
re-evaluated only after a rejected step with a ``J`` from an earlier point (a stale ``J`` costs
accuracy of nothing but stability); ``I/(hγ) − J`` is factorised only when ``J`` or ``h``
changed (:mod:`numerics.integrators.linalg`, block by block for block-diagonal ``J``).
Workspace: ``ws = [u (4×n) | ys | fi | err | h_lu | J | F | scratch]``, ``iw = [.., fresh, kind, have_lu |
pivots]``.
"""

from __future__ import annotations

from numba import njit

from fastslow.numerics.integrators import linalg
from fastslow.numerics.integrators.base import (
    IW_METHOD,
    IW_REJECTED,
    N_FEV,
    N_JEV,
    N_LU,
    O_ATOL,
    O_EXPONENT,
    O_LOWER,
    O_M,
    O_MB,
    O_RTOL,
    axpy,
    copy_into,
    error_norm,
    euler_probe,
    initial_step,
)
from fastslow.numerics.integrators.numba_binding import NO_C_ENTRY
from fastslow.numerics.integrators.tableaux import (
    ROS_A,
    ROS_C,
    ROS_CMAT,
    ROS_ERROR_ORDER,
    ROS_GAMMA,
    ROS_M,
    ROS_MERR,
)

ERROR_EXPONENT = 1.0 / (ROS_ERROR_ORDER + 1)
"""``1/(q + 1)`` for the embedded order ``q = 2`` (the integral controller's exponent)."""
FRESH, KIND, HAVE_LU = IW_METHOD, IW_METHOD + 1, IW_METHOD + 2
PIVOTS = IW_METHOD + 3


def workspace(n: int, m: int, mb: int, lower: bool = False) -> tuple[int, int, int]:
    """Sizes of ``(ws, wc, iw)``: ``J`` takes ``m·mb`` (``mb = m`` when not block diagonal), its
    factorisation ``m·mb``, or ``m`` when ``J`` is declared lower triangular (``lower``: the
    diagonal reciprocals, no copy of ``J``); a full ``J`` adds the triangular solves' scratch."""
    fw = 1 if lower else mb
    sw = linalg.scratch_size(m, n // m) if mb == m else 0
    return 7 * n + 1 + m * mb + m * fw + sw, 1, PIVOTS + m


@njit(cache=True, **NO_C_ENTRY)
def _matrices(ws, n, m, mb, lower):
    """``(J, F, sw)``: ``J`` (m×mb), its factorisation (m×mb, or m×1 when declared lower) and the
    scratch of the triangular solves."""
    o = 7 * n + 1
    fw = 1 if lower else mb
    J = ws[o : o + m * mb].reshape((m, mb))
    return J, ws[o + m * mb : o + m * mb + m * fw].reshape((m, fw)), ws[o + m * mb + m * fw :]


def start(rhs, jac, t, span, y, p, seg, h, opt, ws, wc, iw, counters):
    """Evaluate ``J`` at the segment start; the initial step size if ``h ≤ 0``."""
    n = y.size
    m = int(opt[O_M])
    mb = int(opt[O_MB])
    J = _matrices(ws, n, m, mb, opt[O_LOWER] > 0.0)[0]
    jac(t, y, p, seg, J)
    counters[N_JEV] += 1
    iw[FRESH] = 1
    iw[HAVE_LU] = 0
    iw[KIND] = linalg.checked_structure(J, m, mb, opt[O_LOWER] > 0.0)
    if h <= 0.0:
        fi = ws[5 * n : 6 * n]
        rhs(t, y, p, seg, fi)
        counters[N_FEV] += 1
        rtol, atol, expo = opt[O_RTOL], opt[O_ATOL], opt[O_EXPONENT]
        ys, f1 = ws[4 * n : 5 * n], ws[6 * n : 7 * n]
        h0, d1 = euler_probe(y, fi, rtol, atol, span, ys)
        rhs(t + h0, ys, p, seg, f1)
        counters[N_FEV] += 1
        return initial_step(y, fi, f1, h0, d1, rtol, atol, expo, span)
    return h


def step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """One ROS34PW2 step of size ``hs`` to ``t1``; the third-order solution in ``ynew``."""
    n = y.size
    m = int(opt[O_M])
    mb = int(opt[O_MB])
    k = n // m
    u = ws[: 4 * n].reshape((4, n))
    ys = ws[4 * n : 5 * n]
    fi = ws[5 * n : 6 * n]
    err = ws[6 * n : 7 * n]
    J, F, sw = _matrices(ws, n, m, mb, opt[O_LOWER] > 0.0)
    piv = iw[PIVOTS : PIVOTS + m]
    if iw[IW_REJECTED] == 1 and iw[FRESH] == 0:  # a stale J may be why: refresh it
        jac(t, y, p, seg, J)
        counters[N_JEV] += 1
        iw[FRESH] = 1
        iw[HAVE_LU] = 0
        iw[KIND] = linalg.checked_structure(J, m, mb, opt[O_LOWER] > 0.0)
    if iw[HAVE_LU] == 0 or hs != ws[7 * n]:
        linalg.factor_shifted(J, 1.0 / (hs * ROS_GAMMA), m, mb, iw[KIND], F, piv)
        counters[N_LU] += 1
        iw[HAVE_LU] = 1
        ws[7 * n] = hs
    for i in range(4):
        copy_into(ys, y)
        for j in range(i):
            if ROS_A[i, j] != 0.0:
                axpy(ROS_A[i, j], u[j], ys)
        ti = t1 if ROS_C[i] == 1.0 else t + ROS_C[i] * hs
        rhs(ti, ys, p, seg, fi)
        for j in range(i):
            axpy(ROS_CMAT[i, j] / hs, u[j], fi)
        linalg.solve_real(J, F, piv, fi, u[i], m, mb, k, iw[KIND], sw)
    counters[N_FEV] += 4
    copy_into(ynew, y)
    err[:] = 0.0
    for i in range(4):
        axpy(ROS_M[i], u[i], ynew)
        axpy(ROS_MERR[i], u[i], err)
    return error_norm(err, y, ynew, opt[O_RTOL], opt[O_ATOL])


def accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """Keep ``J`` (a W-method): it is now from an earlier point."""
    iw[FRESH] = 0
