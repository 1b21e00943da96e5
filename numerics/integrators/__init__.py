"""Integrators for the depth flow ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)`` and for small test ODEs.

Four methods, compiled with Numba on first use (nothing compiles at import), all landing exactly on
breakpoints (and on output times, unless ``dense_output=True``):

* ``method="rosw"``: ROS34PW2, a Rosenbrock-W method of order 3 (embedded order 2), L-stable and
  stiffly accurate. Each step needs one matrix ``J`` (``m×m``) and one inverse of
  ``I/(hγ) − J``; ``W = J ⊗ I_k`` replaces the Jacobian. For the coupling form the stiff part is
  the frozen-kernel term, so ``J = (A(X_n) − I)/ε − γI`` is a T×T matrix acting on the token
  index: the linear algebra costs ``O(T³ + T²d)`` per step instead of ``O((Td)³)`` for the full
  Jacobian, and being a W-method the scheme keeps order 3 with this inexact ``J``
  (:mod:`numerics.model.coupling.jacobian`).
* ``method="radau"``: Radau IIA of order 5 (3-stage collocation, L-stable) with simplified Newton
  iterations on the same ``W = J ⊗ I_k`` (after SciPy's ``Radau`` / Hairer & Wanner's RADAU5:
  one real and one complex factorisation per step size, Jacobian and factorisations reused while
  Newton converges fast, starting guess from the last collocation polynomial). With an inexact
  ``J`` Newton converges more slowly but the result is the collocation solution (order 5).
* ``method="dopri5"``: Dormand–Prince 5(4), explicit, for the non-stiff case (the layer form of
  claim D2, reduced flows, ε not small).
* ``method="dop853"``: Dormand–Prince 8(5,3), explicit, for smooth non-stiff flows at tight
  tolerances (fewer calls than DOPRI5 where its longer steps are not cut by a stability limit).

:func:`integrate` takes either compiled problem functions (``rhs(t, y, p, seg, out)`` and
``jac(t, y, p, seg, J)`` with the signatures :data:`RHS_SIG`, :data:`JAC_SIG`; the fast path) or
plain Python callables ``f(t, y) -> dy/dt`` and ``jac(t, y) -> J`` (the same driver and steps
run uncompiled). It returns an :class:`IntegratorResult` with SciPy's field names and work counters.

Structure (the step proposes, the driver accepts, the controller sizes the next step): the entry
point :func:`integrate` (:mod:`~numerics.integrators.integration`), one driver
(:mod:`~numerics.integrators.driver`: segments, breakpoints, accept/reject, counters, dense
output), one module per method with its step, commit and continuous extension
(:mod:`~numerics.integrators.dopri5`, :mod:`~numerics.integrators.dop853`,
:mod:`~numerics.integrators.rosw`,
:mod:`~numerics.integrators.radau`), the step-size controllers
(:mod:`~numerics.integrators.controllers`) and the shifted linear systems by the structure of
``J`` (:mod:`~numerics.integrators.linalg`: ``(T/P, P, P)`` block inverses, triangular substitution
on ``J`` itself, dense LU). The contract between them is :mod:`~numerics.integrators.base`; what
relies on Numba's internals (the problem functions called by address, the drivers bound per
method) is in :mod:`~numerics.integrators.numba_binding`.

Which one: Radau IIA is the fastest on the coupling flow at matched error, ROS34PW2 has no Newton
iteration to fail, and both keep their order with the frozen-kernel ``W`` (tests: order 3 with a
wrong ``J``; Radau converges to the collocation solution). The block-diagonal ``W`` of block-local
masks makes the linear algebra ``O(T·P²)`` per factorisation. The measurements and the variants
tried are in ``docs/benchmarks.md`` ("Design measurements").

On the mildly stiff flow (ε = 1e-2) the explicit methods win: DOPRI5 with norm and slow path,
DOP853 without them (fewer calls at a tight matched error); ``"auto"`` runs DOPRI5 and hands over
to Radau IIA once it detects stiffness.

Caveats: ROS34PW2 and DOP853 have no continuous extension (their output times are landed on); the
error estimate is local (tolerances control the local error per unit step, as in SciPy).
"""

from __future__ import annotations

from fastslow.numerics.integrators.base import JAC_SIG, RHS_SIG
from fastslow.numerics.integrators.integration import (
    DENSE_ORDERS,
    FD_JACOBIAN_MAX_N,
    METHODS,
    ORDERS,
    IntegratorResult,
    integrate,
)

__all__ = [
    "METHODS",
    "ORDERS",
    "DENSE_ORDERS",
    "FD_JACOBIAN_MAX_N",
    "IntegratorResult",
    "integrate",
    "RHS_SIG",
    "JAC_SIG",
]
