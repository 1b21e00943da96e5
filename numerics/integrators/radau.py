"""Radau IIA of order 5: the step (simplified Newton on the collocation system), its commit and its
continuous extension.

After SciPy's ``Radau`` and Hairer & Wanner's RADAU5 (*Solving ODEs II*, IV.8): three-stage
collocation at the Radau points, the Newton matrix ``W = J ⊗ I_k`` transformed so that one real
and one complex system are solved per iteration (:mod:`numerics.integrators.linalg`); ``J`` and
the factorisations are reused while Newton converges fast; the starting guess extrapolates the
previous step's collocation polynomial; the error estimate is Hairer–Wanner's (IV.8, eq. 8.20),
refined by one more right-hand-side call after a rejection. With an inexact ``J`` (the frozen
kernel of the depth flow) Newton converges more slowly but to the collocation solution (order 5).
The continuous extension is the collocation polynomial (order 3 uniformly, exact at the step
ends). The step-size controller is the predictive one
(:func:`numerics.integrators.controllers.after_accept`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics.integrators import linalg
from fastslow.numerics.integrators.base import (
    IW_METHOD,
    IW_NITER,
    IW_RECOMPUTE,
    IW_REJECTED,
    N_FEV,
    N_JEV,
    N_LU,
    NEWTON_NONFINITE,
    NEWTON_RETRY,
    NEWTON_SHRINK,
    O_ATOL,
    O_EXPONENT,
    O_LOWER,
    O_M,
    O_MB,
    O_RTOL,
    copy_into,
    euler_probe,
    initial_step,
)
from fastslow.numerics.integrators.controllers import NEWTON_MAXITER
from fastslow.numerics.integrators.numba_binding import NO_C_ENTRY
from fastslow.numerics.integrators.tableaux import (
    RADAU_C,
    RADAU_E,
    RADAU_MU_COMPLEX,
    RADAU_MU_REAL,
    RADAU_T,
    RADAU_TI,
    RADAU_VINV,
)
from fastslow.numerics.lanes import (
    abs8,
    add8,
    load8,
    max8,
    mul8,
    scale8,
    splat8,
    store8,
    sub8,
    sum8,
    vdiv8,
    zero8,
)

FRESH, HAVE_LU, HAVE_POLY, KIND = IW_METHOD, IW_METHOD + 1, IW_METHOD + 2, IW_METHOD + 3
PIVOTS = IW_METHOD + 4
N_VEC = 30  # float work vectors of size n (see _vectors)
H_LU, H_OLD, RATE = 0, 1, 2  # scalar slots at the end of the vectors

STRUCTURED = ("_error_estimate",)
"""The compiled helpers that call :mod:`numerics.integrators.linalg`: copied with the specialised
solvers when the driver is bound for one structure of ``J``
(:func:`numerics.integrators.driver.bound_driver`)."""


def workspace(n: int, m: int, mb: int, lower: bool = False) -> tuple[int, int, int]:
    """Sizes of ``(ws, wc, iw)``: ``J`` takes ``m·mb`` (``mb = m`` when ``J`` is not block
    diagonal), the real and the complex factorisation ``m·mb`` each, or ``m`` each when ``J`` is
    declared lower triangular (``lower``: only the diagonal reciprocals, no copy of ``J``); a
    full ``J`` (``mb = m``) adds the scratch of the triangular solves (``O(n + m)``)."""
    fw = 1 if lower else mb
    sw = linalg.scratch_size(m, n // m) if mb == m else 0
    return N_VEC * n + 3 + m * mb + m * fw + sw, m * fw, PIVOTS + 2 * m


@njit(cache=True, **NO_C_ENTRY)
def _vectors(ws, n):
    """Views of ``ws``: the vectors ``(f0, fi, ys, scale, iscale, fr, fcr, fci, dr, dcr, dci, ze,
    err, Zlast)``, the stage arrays ``(F, Z, Ys, W, Qp)`` (3×n; ``Ys = y + Z``, the stage values)
    and the scalars."""
    one = (
        ws[:n],
        ws[n : 2 * n],
        ws[2 * n : 3 * n],
        ws[3 * n : 4 * n],
        ws[4 * n : 5 * n],
        ws[5 * n : 6 * n],
        ws[6 * n : 7 * n],
        ws[7 * n : 8 * n],
        ws[8 * n : 9 * n],
        ws[9 * n : 10 * n],
        ws[10 * n : 11 * n],
        ws[11 * n : 12 * n],
        ws[12 * n : 13 * n],
        ws[13 * n : 14 * n],
    )
    three = (
        ws[15 * n : 18 * n].reshape((3, n)),
        ws[18 * n : 21 * n].reshape((3, n)),
        ws[21 * n : 24 * n].reshape((3, n)),
        ws[24 * n : 27 * n].reshape((3, n)),
        ws[27 * n : 30 * n].reshape((3, n)),
    )
    return one, three, ws[N_VEC * n : N_VEC * n + 3]


@njit(cache=True, **NO_C_ENTRY)
def _matrices(ws, wc, n, m, mb, lower):
    """``(J, Fr, Fc, sw)``: ``J`` (m×mb), the real and complex factorisations (m×mb, or m×1 when
    ``J`` is declared lower triangular) and the scratch of the triangular solves."""
    o = N_VEC * n + 3
    q = m * mb
    fw = 1 if lower else mb
    J = ws[o : o + q].reshape((m, mb))
    Fr = ws[o + q : o + q + m * fw].reshape((m, fw))
    return J, Fr, wc[: m * fw].reshape((m, fw)), ws[o + q + m * fw :]


@njit(cache=True, **NO_C_ENTRY)
def _mix3(M, src, out, last):
    """``out[r] = Σ_c M[r, c]·src[c]`` for the three stage rows and ``last = src[2]`` (one pass, no
    temporaries)."""
    for i in range(src.shape[1]):
        a = src[0, i]
        b = src[1, i]
        c = src[2, i]
        last[i] = c
        for r in range(3):
            out[r, i] = M[r, 0] * a + M[r, 1] * b + M[r, 2] * c


@njit(cache=True, **NO_C_ENTRY)
def _newton_start(Qp, Zlast, hs, h_old, have_poly, y, rtol, atol, Z, W, Ys, iscale):
    """The Newton iteration's starting point in one pass over ``y``: ``Z_i = u(1 + c_i·h/h_old) −
    u(1)`` from the last collocation polynomial ``u(x) − y_old = Σ_j q_j x^j`` (``Zlast = u(1) −
    y_old``) if ``have_poly``, else ``Z = 0``; ``W = T⁻¹Z``, the stage values ``Ys_i = y + Z_i``
    and ``iscale = 1/(atol + rtol·|y|)``. Eight entries at a time (:mod:`numerics.lanes`, the same
    operations per entry as the scalar loop, which takes the last ``n mod 8``)."""
    x1 = 1.0 + RADAU_C[0] * hs / h_old
    x2 = 1.0 + RADAU_C[1] * hs / h_old
    x3 = 1.0 + RADAU_C[2] * hs / h_old
    n = y.size
    n8 = n - n % 8
    Ti = RADAU_TI
    for i in range(0, n8, 8):
        if have_poly:
            q0 = load8(Qp, i)
            q1 = load8(Qp, n + i)
            q2 = load8(Qp, 2 * n + i)
            zl = load8(Zlast, i)
            a = sub8(add8(add8(scale8(q0, x1), scale8(q1, x1 * x1)), scale8(q2, x1 * x1 * x1)), zl)
            b = sub8(add8(add8(scale8(q0, x2), scale8(q1, x2 * x2)), scale8(q2, x2 * x2 * x2)), zl)
            c = sub8(add8(add8(scale8(q0, x3), scale8(q1, x3 * x3)), scale8(q2, x3 * x3 * x3)), zl)
        else:
            a = zero8()
            b = zero8()
            c = zero8()
        store8(Z, i, a)
        store8(Z, n + i, b)
        store8(Z, 2 * n + i, c)
        for r in range(3):
            w = add8(add8(scale8(a, Ti[r, 0]), scale8(b, Ti[r, 1])), scale8(c, Ti[r, 2]))
            store8(W, r * n + i, w)
        yi = load8(y, i)
        store8(Ys, i, add8(yi, a))
        store8(Ys, n + i, add8(yi, b))
        store8(Ys, 2 * n + i, add8(yi, c))
        den = add8(splat8(atol), scale8(abs8(yi), rtol))
        store8(iscale, i, vdiv8(splat8(1.0), den))
    for i in range(n8, n):
        if have_poly:
            q0 = Qp[0, i]
            q1 = Qp[1, i]
            q2 = Qp[2, i]
            zl = Zlast[i]
            a = x1 * q0 + (x1 * x1) * q1 + (x1 * x1 * x1) * q2 - zl
            b = x2 * q0 + (x2 * x2) * q1 + (x2 * x2 * x2) * q2 - zl
            c = x3 * q0 + (x3 * x3) * q1 + (x3 * x3 * x3) * q2 - zl
        else:
            a = 0.0
            b = 0.0
            c = 0.0
        Z[0, i] = a
        Z[1, i] = b
        Z[2, i] = c
        for r in range(3):
            W[r, i] = Ti[r, 0] * a + Ti[r, 1] * b + Ti[r, 2] * c
        yi = y[i]
        Ys[0, i] = yi + a
        Ys[1, i] = yi + b
        Ys[2, i] = yi + c
        iscale[i] = 1.0 / (atol + rtol * abs(yi))


@njit(cache=True, **NO_C_ENTRY)
def _newton_residual(F, W, hs, fr, fcr, fci):
    """Transformed residuals: ``fr = (T⁻¹F)_0 − (μ_r/h)W_0`` and the complex pair
    ``fc = (T⁻¹F)_1 + i(T⁻¹F)_2 − (μ_c/h)(W_1 + iW_2)``. Returns whether all of ``F`` is finite
    (``Σ (F − F)`` is 0 exactly when it is, NaN otherwise: checked in the same pass; the outputs
    are then meaningless). Eight entries at a time, the scalar loop for the last ``n mod 8``."""
    mr = RADAU_MU_REAL / hs
    mcr = RADAU_MU_COMPLEX.real / hs
    mci = RADAU_MU_COMPLEX.imag / hs
    Ti = RADAU_TI
    n = F.shape[1]
    n8 = n - n % 8
    bad8 = zero8()
    for i in range(0, n8, 8):
        f0 = load8(F, i)
        f1 = load8(F, n + i)
        f2 = load8(F, 2 * n + i)
        bad8 = add8(bad8, add8(add8(sub8(f0, f0), sub8(f1, f1)), sub8(f2, f2)))
        w0 = load8(W, i)
        w1 = load8(W, n + i)
        w2 = load8(W, 2 * n + i)
        r0 = add8(add8(scale8(f0, Ti[0, 0]), scale8(f1, Ti[0, 1])), scale8(f2, Ti[0, 2]))
        store8(fr, i, sub8(r0, scale8(w0, mr)))
        a = add8(add8(scale8(f0, Ti[1, 0]), scale8(f1, Ti[1, 1])), scale8(f2, Ti[1, 2]))
        b = add8(add8(scale8(f0, Ti[2, 0]), scale8(f1, Ti[2, 1])), scale8(f2, Ti[2, 2]))
        store8(fcr, i, sub8(a, sub8(scale8(w1, mcr), scale8(w2, mci))))
        store8(fci, i, sub8(b, add8(scale8(w2, mcr), scale8(w1, mci))))
    bad = sum8(0.0, bad8)
    for i in range(n8, n):
        f0 = F[0, i]
        f1 = F[1, i]
        f2 = F[2, i]
        bad += (f0 - f0) + (f1 - f1) + (f2 - f2)
        fr[i] = Ti[0, 0] * f0 + Ti[0, 1] * f1 + Ti[0, 2] * f2 - mr * W[0, i]
        a = Ti[1, 0] * f0 + Ti[1, 1] * f1 + Ti[1, 2] * f2
        b = Ti[2, 0] * f0 + Ti[2, 1] * f1 + Ti[2, 2] * f2
        fcr[i] = a - (mcr * W[1, i] - mci * W[2, i])
        fci[i] = b - (mcr * W[2, i] + mci * W[1, i])
    return bad == 0.0


@njit(cache=True, **NO_C_ENTRY)
def _newton_update(W, Z, Ys, y, dr, dcr, dci):
    """``W += d``, ``Z = T·W`` and the next stage values ``Ys_i = y + Z_i`` in one pass (eight
    entries at a time, the scalar loop for the last ``n mod 8``)."""
    n = W.shape[1]
    n8 = n - n % 8
    Tm = RADAU_T
    for i in range(0, n8, 8):
        w0 = add8(load8(W, i), load8(dr, i))
        w1 = add8(load8(W, n + i), load8(dcr, i))
        w2 = add8(load8(W, 2 * n + i), load8(dci, i))
        store8(W, i, w0)
        store8(W, n + i, w1)
        store8(W, 2 * n + i, w2)
        yi = load8(y, i)
        for r in range(3):
            z = add8(add8(scale8(w0, Tm[r, 0]), scale8(w1, Tm[r, 1])), scale8(w2, Tm[r, 2]))
            store8(Z, r * n + i, z)
            store8(Ys, r * n + i, add8(yi, z))
    for i in range(n8, n):
        w0 = W[0, i] + dr[i]
        w1 = W[1, i] + dcr[i]
        w2 = W[2, i] + dci[i]
        W[0, i] = w0
        W[1, i] = w1
        W[2, i] = w2
        yi = y[i]
        for r in range(3):
            z = Tm[r, 0] * w0 + Tm[r, 1] * w1 + Tm[r, 2] * w2
            Z[r, i] = z
            Ys[r, i] = yi + z


@njit(cache=True, **NO_C_ENTRY)
def _rms_scaled(v, scale):
    """``√(mean((v/scale)²))``, the squares summed in index order (eight at a time)."""
    n = v.size
    n8 = n - n % 8
    s = 0.0
    for i in range(0, n8, 8):
        q = vdiv8(load8(v, i), load8(scale, i))
        s = sum8(s, mul8(q, q))
    for i in range(n8, n):
        s += (v[i] / scale[i]) ** 2
    return np.sqrt(s / n)


def start(rhs, jac, t, span, y, p, seg, h, opt, ws, wc, iw, counters):
    """``f₀ = f(t, y)`` and ``J`` at the segment start; the initial step size if ``h ≤ 0``."""
    n = y.size
    m = int(opt[O_M])
    mb = int(opt[O_MB])
    f0 = ws[:n]
    rhs(t, y, p, seg, f0)
    counters[N_FEV] += 1
    if h <= 0.0:
        rtol, atol, expo = opt[O_RTOL], opt[O_ATOL], opt[O_EXPONENT]
        fi, ys = ws[n : 2 * n], ws[2 * n : 3 * n]
        h0, d1 = euler_probe(y, f0, rtol, atol, span, ys)
        rhs(t + h0, ys, p, seg, fi)
        counters[N_FEV] += 1
        h = initial_step(y, f0, fi, h0, d1, rtol, atol, expo, span)
    J = _matrices(ws, wc, n, m, mb, opt[O_LOWER] > 0.0)[0]
    jac(t, y, p, seg, J)
    counters[N_JEV] += 1
    iw[FRESH] = 1
    iw[HAVE_LU] = 0
    iw[HAVE_POLY] = 0
    iw[KIND] = linalg.checked_structure(J, m, mb, opt[O_LOWER] > 0.0)
    ws[N_VEC * n + H_OLD] = -1.0
    return h


def step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """One Radau IIA step of size ``hs`` to ``t1``: the error norm, or :data:`NEWTON_RETRY` (``J``
    was stale and has been refreshed) / :data:`NEWTON_SHRINK` when Newton did not converge
    (:data:`NEWTON_NONFINITE` when it met a non-finite stage value or correction)."""
    n = y.size
    m = int(opt[O_M])
    mb = int(opt[O_MB])
    k = n // m
    rtol = opt[O_RTOL]
    atol = opt[O_ATOL]
    one, three, sc = _vectors(ws, n)
    f0, fi, ys, scale, iscale, fr, fcr, fci, dr, dcr, dci, ze, err, Zlast = one
    F, Z, Ys, W, Qp = three
    J, Fr, Fc, sw = _matrices(ws, wc, n, m, mb, opt[O_LOWER] > 0.0)
    pr = iw[PIVOTS : PIVOTS + m]
    pc = iw[PIVOTS + m : PIVOTS + 2 * m]
    kind = iw[KIND]
    if iw[HAVE_LU] == 0 or hs != sc[H_LU]:
        linalg.factor_shifted(J, RADAU_MU_REAL / hs, m, mb, kind, Fr, pr)
        linalg.factor_shifted(J, RADAU_MU_COMPLEX / hs, m, mb, kind, Fc, pc)
        counters[N_LU] += 2
        iw[HAVE_LU] = 1
        sc[H_LU] = hs
    _newton_start(Qp, Zlast, hs, sc[H_OLD], iw[HAVE_POLY] == 1, y, rtol, atol, Z, W, Ys, iscale)
    newton_tol = max(10 * 2.220446049250313e-16 / rtol, min(0.03, rtol**0.5))
    converged = False
    nonfinite = False
    rate = -1.0
    dW_old = -1.0
    n_iter = 0
    for it in range(NEWTON_MAXITER):
        n_iter = it + 1
        rhs(t + RADAU_C[0] * hs, Ys[0], p, seg, F[0])
        rhs(t + RADAU_C[1] * hs, Ys[1], p, seg, F[1])
        rhs(t1, Ys[2], p, seg, F[2])
        counters[N_FEV] += 3
        if not _newton_residual(F, W, hs, fr, fcr, fci):
            nonfinite = True  # non-finite stage values: not converged
            break
        s2 = linalg.solve_pair_norm2(
            J, Fr, pr, Fc, pc, fr, fcr, fci, dr, dcr, dci, m, mb, k, kind, sw, iscale
        )
        dn = np.sqrt(s2 / (3 * n))
        if not np.isfinite(dn):  # a non-finite Jacobian (its factors) or residual
            nonfinite = True
            break
        if dW_old >= 0.0:
            rate = dn / dW_old if dW_old > 0 else 0.0
        if rate >= 0.0 and (
            rate >= 1.0 or rate ** (NEWTON_MAXITER - it) / (1.0 - rate) * dn > newton_tol
        ):
            break
        _newton_update(W, Z, Ys, y, dr, dcr, dci)
        if dn == 0.0 or (rate >= 0.0 and rate / (1.0 - rate) * dn < newton_tol):
            converged = True
            break
        dW_old = dn
    iw[IW_NITER] = n_iter
    if not converged:
        iw[HAVE_LU] = 0
        if iw[FRESH] == 0:
            jac(t, y, p, seg, J)
            counters[N_JEV] += 1
            iw[FRESH] = 1
            iw[KIND] = linalg.checked_structure(J, m, mb, opt[O_LOWER] > 0.0)
            return NEWTON_RETRY
        return NEWTON_NONFINITE if nonfinite else NEWTON_SHRINK
    iw[IW_RECOMPUTE] = 1 if (n_iter > 2 and rate > 1e-3) else 0
    en = _error_estimate(
        y, ynew, hs, f0, ze, fi, err, scale, Z, J, Fr, pr, m, mb, k, kind, sw, rtol, atol
    )
    if iw[IW_REJECTED] == 1 and en > 1.0:  # refine: one more call at y + err
        copy_into(ys, y)
        ys += err
        rhs(t, ys, p, seg, fi)
        counters[N_FEV] += 1
        fi += ze
        linalg.solve_real(J, Fr, pr, fi, err, m, mb, k, kind, sw)
        en = _rms_scaled(err, scale)
    return en


@njit(cache=True, **NO_C_ENTRY)
def _error_estimate(
    y, ynew, hs, f0, ze, fi, err, scale, Z, J, Fr, pr, m, mb, k, kind, sw, rtol, atol
):
    """The step's end ``ynew = y + Z_3``, Hairer–Wanner's estimate ``err = (μ_r/h − J)⁻¹[f(y) +
    Σ e_i Z_i/h]`` and its RMS norm scaled by ``atol + rtol·max(|y|, |ynew|)`` (``ze = Σ e_i
    Z_i/h`` and the scale kept for the refinement after a rejection); one pass before the solve
    (eight entries at a time), one after."""
    n = y.size
    n8 = n - n % 8
    E = RADAU_E
    for i in range(0, n8, 8):
        z2 = load8(Z, 2 * n + i)
        yi = load8(y, i)
        yn = add8(yi, z2)
        store8(ynew, i, yn)
        store8(scale, i, add8(splat8(atol), scale8(max8(abs8(yi), abs8(yn)), rtol)))
        e = add8(add8(scale8(load8(Z, i), E[0]), scale8(load8(Z, n + i), E[1])), scale8(z2, E[2]))
        e = vdiv8(e, splat8(hs))
        store8(ze, i, e)
        store8(fi, i, add8(load8(f0, i), e))
    for i in range(n8, n):
        z2 = Z[2, i]
        yi = y[i]
        yn = yi + z2
        ynew[i] = yn
        scale[i] = atol + rtol * max(abs(yi), abs(yn))
        e = (E[0] * Z[0, i] + E[1] * Z[1, i] + E[2] * z2) / hs
        ze[i] = e
        fi[i] = f0[i] + e
    linalg.solve_real(J, Fr, pr, fi, err, m, mb, k, kind, sw)
    return _rms_scaled(err, scale)


def accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """Keep the collocation polynomial (next starting guess), ``f₀ = f(t1, ynew)``, and refresh
    ``J`` if Newton converged slowly (else it is kept, now stale)."""
    n = y.size
    m = int(opt[O_M])
    mb = int(opt[O_MB])
    one, three, sc = _vectors(ws, n)
    Z, Qp = three[1], three[4]
    _mix3(RADAU_VINV, Z, Qp, one[13])  # q_j with Σ_j q_j c_i^j = Z_i; Zlast = Z_3
    iw[HAVE_POLY] = 1
    sc[H_OLD] = hs
    rhs(t1, ynew, p, seg, one[0])
    counters[N_FEV] += 1
    if iw[IW_RECOMPUTE] == 1:
        J = _matrices(ws, wc, n, m, mb, opt[O_LOWER] > 0.0)[0]
        jac(t1, ynew, p, seg, J)
        counters[N_JEV] += 1
        iw[FRESH] = 1
        iw[HAVE_LU] = 0
        iw[KIND] = linalg.checked_structure(J, m, mb, opt[O_LOWER] > 0.0)
    else:
        iw[FRESH] = 0


def interp(theta, hs, y, ynew, ws, out):
    """``u(t + θ·hs) = y + Σ_j q_j θ^j``, the collocation polynomial of the step just taken."""
    n = y.size
    Z = ws[18 * n : 21 * n].reshape((3, n))
    V = RADAU_VINV
    for i in range(n):
        q0 = V[0, 0] * Z[0, i] + V[0, 1] * Z[1, i] + V[0, 2] * Z[2, i]
        q1 = V[1, 0] * Z[0, i] + V[1, 1] * Z[1, i] + V[1, 2] * Z[2, i]
        q2 = V[2, 0] * Z[0, i] + V[2, 1] * Z[1, i] + V[2, 2] * Z[2, i]
        out[i] = y[i] + theta * (q0 + theta * (q1 + theta * q2))
