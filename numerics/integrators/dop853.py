"""Dormand–Prince 8(5,3): the explicit step of order 8 and its commit (FSAL).

The step, the coefficients and the error estimate are those of Hairer's ``DOP853`` (*Solving ODEs
I*, II.10) as SciPy's ``DOP853`` computes them: twelve stages, the thirteenth evaluation
``f(t + h, y₁)`` shared with the next step (first same as last), and the error norm

    ``err = h·‖e₅‖² / √(n·(‖e₅‖² + 0.01·‖e₃‖²))``

from the fifth- and third-order embedded differences ``e₅ = Σ E5_j k_j``, ``e₃ = Σ E3_j k_j``
(scaled by ``atol + rtol·max(|y|, |y₁|)``), which behaves as an error of order 7 (the controller's
exponent is ``1/8``). Workspace: ``ws = [k (13×n) | ys (n)]``.

Where it pays: a smooth, non-stiff flow at a tight tolerance, where eleven right-hand-side calls
per step buy steps several times longer than DOPRI5's (on the depth flow without norm and slow
path at ε = 1e-2 and matched error 1e-6, about 10 % fewer calls than DOPRI5). Near a
stability limit (the full flow at ε = 1e-2) it takes more calls than DOPRI5. Caveats: no
continuous extension (output times are landed on) and no stiffness detection (``method="auto"``
is DOPRI5's).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics.integrators.base import (
    IW_METHOD,
    N_FEV,
    O_ATOL,
    O_EXPONENT,
    O_RTOL,
    copy_into,
    euler_probe,
    initial_step,
)
from fastslow.numerics.integrators.numba_binding import NO_C_ENTRY
from fastslow.numerics.integrators.tableaux import DOP_A, DOP_C, DOP_E3, DOP_E5, DOP_ERROR_ORDER
from fastslow.numerics.lanes import (
    abs8,
    add8,
    load8,
    max8,
    mul8,
    scale8,
    splat8,
    store8,
    sum8,
    vdiv8,
    zero8,
)

ERROR_EXPONENT = 1.0 / (DOP_ERROR_ORDER + 1)
"""``1/(q + 1)`` for the error estimate's order ``q = 7`` (the integral controller's exponent)."""
N_STAGES = 12


def workspace(n: int, m: int, mb: int, lower: bool = False) -> tuple[int, int, int]:
    """Sizes of ``(ws, wc, iw)`` for a state of size ``n``."""
    return 14 * n, 1, IW_METHOD


def start(rhs, jac, t, span, y, p, seg, h, opt, ws, wc, iw, counters):
    """``k₀ = f(t, y)`` at the start of a segment; the initial step size if ``h ≤ 0``."""
    n = y.size
    rhs(t, y, p, seg, ws[:n])
    counters[N_FEV] += 1
    if h <= 0.0:
        rtol, atol, expo = opt[O_RTOL], opt[O_ATOL], opt[O_EXPONENT]
        ys, f1 = ws[13 * n : 14 * n], ws[n : 2 * n]
        h0, d1 = euler_probe(y, ws[:n], rtol, atol, span, ys)
        rhs(t + h0, ys, p, seg, f1)
        counters[N_FEV] += 1
        return initial_step(y, ws[:n], f1, h0, d1, rtol, atol, expo, span)
    return h


@njit(cache=True, **NO_C_ENTRY)
def stage_argument(y, k, n, row, hs, out):
    """``out = y + hs·Σ_{j<row} A[row, j]·k_j``, stage ``row``'s argument, in one pass over the state,
    eight entries at a time (:mod:`numerics.lanes`; the scalar loop, the same operations per
    entry, takes the last ``n mod 8``)."""
    n8 = n - n % 8
    for i in range(0, n8, 8):
        acc = zero8()
        for j in range(row):
            a = DOP_A[row, j]
            if a != 0.0:
                acc = add8(acc, scale8(load8(k, j * n + i), a))
        store8(out, i, add8(load8(y, i), scale8(acc, hs)))
    for i in range(n8, n):
        acc = 0.0
        for j in range(row):
            a = DOP_A[row, j]
            if a != 0.0:
                acc = acc + k[j * n + i] * a
        out[i] = y[i] + acc * hs


def step(rhs, jac, t, hs, t1, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """One DOP853 step of size ``hs`` to ``t1``: the eighth-order solution in ``ynew`` and its error
    norm, and ``k₁₂ = f(t1, ynew)`` (the next step's first stage if this one is accepted)."""
    n = y.size
    ys = ws[13 * n : 14 * n]
    for s in range(1, N_STAGES):
        stage_argument(y, ws, n, s, hs, ys)
        rhs(t + DOP_C[s] * hs, ys, p, seg, ws[s * n : (s + 1) * n])
    en = solution_and_error_norm(hs, y, ynew, ws, n, opt[O_RTOL], opt[O_ATOL])
    rhs(t1, ynew, p, seg, ws[N_STAGES * n : (N_STAGES + 1) * n])
    counters[N_FEV] += N_STAGES
    return en


@njit(cache=True, **NO_C_ENTRY)
def solution_and_error_norm(hs, y, ynew, k, n, rtol, atol):
    """``ynew = y + hs·Σ b_j k_j`` and, in the same pass over the stages, SciPy's ``DOP853`` error
    norm ``h·‖e₅‖²/√(n·(‖e₅‖² + 0.01·‖e₃‖²))`` (0 when both vanish; the scale ``atol +
    rtol·max(|y|, |ynew|)``), the sums in index order. Eight entries at a time, the scalar loop
    (the same operations per entry) for the last ``n mod 8``."""
    n8 = n - n % 8
    s5 = 0.0
    s3 = 0.0
    for i in range(0, n8, 8):
        acc = zero8()
        e5 = zero8()
        e3 = zero8()
        for j in range(N_STAGES):
            kj = load8(k, j * n + i)
            if DOP_A[N_STAGES, j] != 0.0:
                acc = add8(acc, scale8(kj, DOP_A[N_STAGES, j]))
            if DOP_E5[j] != 0.0 or DOP_E3[j] != 0.0:
                e5 = add8(e5, scale8(kj, DOP_E5[j]))
                e3 = add8(e3, scale8(kj, DOP_E3[j]))
        yi = load8(y, i)
        yn = add8(yi, scale8(acc, hs))
        store8(ynew, i, yn)
        sc = add8(splat8(atol), scale8(max8(abs8(yi), abs8(yn)), rtol))
        q5 = vdiv8(e5, sc)
        q3 = vdiv8(e3, sc)
        s5 = sum8(s5, mul8(q5, q5))
        s3 = sum8(s3, mul8(q3, q3))
    for i in range(n8, n):
        acc = 0.0
        e5 = 0.0
        e3 = 0.0
        for j in range(N_STAGES):
            kj = k[j * n + i]
            if DOP_A[N_STAGES, j] != 0.0:
                acc = acc + kj * DOP_A[N_STAGES, j]
            if DOP_E5[j] != 0.0 or DOP_E3[j] != 0.0:
                e5 = e5 + kj * DOP_E5[j]
                e3 = e3 + kj * DOP_E3[j]
        yn = y[i] + acc * hs
        ynew[i] = yn
        sc = atol + rtol * max(abs(y[i]), abs(yn))
        s5 += (e5 / sc) ** 2
        s3 += (e3 / sc) ** 2
    if s5 == 0.0 and s3 == 0.0:
        return 0.0
    return hs * s5 / np.sqrt(n * (s5 + 0.01 * s3))


def accept(rhs, jac, t1, hs, y, ynew, p, seg, opt, ws, wc, iw, counters):
    """First same as last: ``k₁₂ = f(t1, ynew)`` is the next step's ``k₀``."""
    n = y.size
    copy_into(ws[:n], ws[N_STAGES * n : (N_STAGES + 1) * n])
