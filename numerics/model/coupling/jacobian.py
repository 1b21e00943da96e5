"""The frozen-kernel Jacobian of the coupling form, :func:`frozen_kernel_jac_nb`.

``J = (A_t(X) − I)/ε − γI`` (T×T, acting on the token index), the stiff part of the Jacobian,
which the Rosenbrock-W and Radau methods use as ``W = J ⊗ I_d``. For a block-local mask it is
written as the T×P rows of its diagonal blocks (``jac_block=P``) or as the whole T×T; for a mask
that is not block-local in row panels into ``J`` itself (:func:`_kernel_rows_into`: no T×T
temporary, a causal row only up to its diagonal). The attention weights are those of the
right-hand side (:mod:`numerics.model.coupling.rhs`).

Caveats. ``J`` omits the derivative of the softmax (``(1/ε)·DA[δX]·X``), which vanishes on the
critical manifold of a block-local mask and is bounded by ``‖(I − UB)X‖/ε`` near it, and the
Jacobian of the MLP and slow path (O(1)); the W-method keeps its order whatever is omitted, Radau
converges to its collocation solution with more Newton iterations.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics.integrators.numba_binding import COMPILED_ONLY, with_globals
from fastslow.numerics.model.coupling import layout
from fastslow.numerics.model.coupling.packing import (
    fused_offset,
    matrix_view,
    scratch_arrays,
)
from fastslow.numerics.model.coupling.rhs import (
    block_weights,
    kernel_panel,
    normed_rows,
    panel_work,
)

__all__ = ["frozen_kernel_jac_nb", "jac_for"]

JAC_BLOCK_LOCAL = JAC_OTHER_MASKS = True
"""Which branches :func:`frozen_kernel_jac_nb` holds (compile-time constants: a branch behind a
``False`` one is pruned before typing, its callees never compiled); one is off in the copies
:func:`jac_for` hands out."""


@njit(cache=True)
def frozen_kernel_jac_nb(t, y, p, seg, J):
    """``J = (A(X) − I)/ε − γI`` (T×T), the stiff part of the coupling Jacobian, as ``J ⊗ I_d``
    (signature :data:`numerics.integrators.JAC_SIG`, compiled on first use). ``J`` may be the
    T×P rows of the diagonal blocks (block-local masks, ``jac_block=P``) or the whole T×T; for a
    mask that is not block-local it is computed in place (:func:`_kernel_rows_into`, no T×T
    temporary; the rows of a causal mask only up to the diagonal)."""
    T = int(p[layout.T])
    d = int(p[layout.D])
    P = int(p[layout.P])
    Xw, XG, S, Z, v, pb, tb, zb, acc, Yb, Yh, Zs, YG, sv, sp, st = scratch_arrays(p)
    Xn = normed_rows(y.reshape((T, d)), p, Xw)
    inv_eps = 1.0 / p[layout.EPS]
    if JAC_BLOCK_LOCAL and p[layout.BLOCK_LOCAL] > 0.0:
        m = int(p[layout.M])
        np.dot(Xn, matrix_view(p, fused_offset(p, seg), d, d + m), XG)
        block_weights(Xn, XG, p, S, v, pb, tb)
        if J.shape[1] == P:  # the blocks' rows
            for i in range(T):
                for j in range(P):
                    J[i, j] = S[i, j] / p[layout.EPS]
        else:
            J[:, :] = 0.0
            for i in range(T):
                b0 = (i // P) * P
                for j in range(P):
                    J[i, b0 + j] = S[i, j] / p[layout.EPS]
    elif JAC_OTHER_MASKS:
        _kernel_rows_into(Xn, p, seg, J)
    for i in range(T):
        J[i, i % J.shape[1]] -= inv_eps + p[layout.GAMMA]


@njit(cache=True, **COMPILED_ONLY)
def _kernel_rows_into(Xn, p, seg, J):
    """``J ← A(X)/ε`` (T×T) for a mask that is not block-local, written row panel by row panel
    into ``J`` itself: no T×T temporary. Row ``i`` is computed only up to its last allowed
    column (rounded up to a multiple of 4, so the softmax sums group as over the whole row) and
    zero beyond it, so a causal mask costs half the products and exponentials of a full one. The
    same operations as :func:`kernel_panel`, then ``/ε``."""
    T = int(p[layout.T])
    XQ, XK, buf, v, pb, tb = panel_work(Xn, p, seg)
    eps = p[layout.EPS]
    rows = buf.size // T
    for r0 in range(0, T, rows):
        r1 = min(r0 + rows, T)
        S = kernel_panel(XQ, XK, p, r0, r1, buf, v, pb, tb)
        c1 = S.shape[1]
        for i in range(r0, r1):
            for j in range(c1):
                J[i, j] = S[i - r0, j] / eps
            for j in range(c1, T):
                J[i, j] = 0.0


_COPIES: dict = {}


def jac_for(p: np.ndarray):
    """The frozen-kernel Jacobian for the packed vector ``p``: a copy of
    :func:`frozen_kernel_jac_nb` holding only the branch of ``p``'s mask (block-local or not,
    :data:`JAC_OTHER_MASKS` or :data:`JAC_BLOCK_LOCAL` off; named ``frozen_kernel_jac_block`` /
    ``frozen_kernel_jac_other`` for Numba's cache), compiled on first use. On such a ``p`` it
    computes exactly what :func:`frozen_kernel_jac_nb` computes, without compiling the other
    branch (``docs/benchmarks.md``, "Times a user feels")."""
    block_local = bool(p[layout.BLOCK_LOCAL] > 0.0)
    if block_local not in _COPIES:
        name, off = (
            ("frozen_kernel_jac_block", "JAC_OTHER_MASKS")
            if block_local
            else ("frozen_kernel_jac_other", "JAC_BLOCK_LOCAL")
        )
        _COPIES[block_local] = njit(cache=True)(
            with_globals(frozen_kernel_jac_nb.py_func, name, {off: False})
        )
    return _COPIES[block_local]
