"""F1 — Tikhonov along depth: collapse onto block-constant states, then slow drift.

Statement (``docs/claims.md``). For ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)`` with a block-local
mask: (a) the critical manifold ``{(A(X) − I)X = 0}`` is the set of block-constant states
``X = UY``; (b) it attracts at the rate ``(1 − λ₂)/ε`` (``λ₂`` the largest eigenvalue of the frozen
kernel ``K_mask`` below 1: 0 for ``block_bidirectional``, 1/2 for ``block_causal``; with injection
the deviation decays at ``(1 − λ₂)/ε + γ``); (c) ``‖X(1) − UY₀(1)‖ = O(ε)`` with
``dY₀/dt = Lᵀ R_t(UY₀)``; (d) with ``X = UY + εH₁`` and
``dY/dt = Lᵀ R_t(UY + εH₁) + ε Lᵀ DA_{UY}[H₁] H₁`` the error is O(ε²).

How it is checked.

* Full flow: :func:`numerics.model.coupling.integrate_coupling` (Radau IIA by default,
  ``method="rosw"`` for the Rosenbrock-W method; tight tolerances), untied weights (piecewise
  constant on ``L`` intervals, breakpoints hit exactly), ``γ > 0`` towards a random,
  non-block-constant ``E``, gate ``g ≠ 0`` (the slow path is on), the RMS norm on or off (``norm``),
  all drawn by :func:`numerics.model.coupling.coupling_problem`. At the finest ε of each order's
  asymptotic window the full flow is also integrated by the other stiff method; both must give the
  same error to 1e-3 relative.
* Reduced flows: from :func:`theory.slow_manifold.reduced_rhs`, the SymPy derivation of ``H₁``, of
  the order-0 field ``Lᵀ R(UY)`` and of the order-1 field (attention curvature included) for *the
  configuration that is integrated* (mask, ``P``, ``d``, norm on/off, the model's weights per
  layer; the slow path, which couples the blocks, is the one numerical input). ``H₁`` from the same
  derivation gives the start point of (d), ``UY₀ + εH₁``, and the reconstruction ``UY(1) + εH₁``.
  The numerical formulas (``H₁ = (I − K + Π)⁻¹(I − Π)R(UY)`` by a linear solve, the curvature
  ``DA_{UY}[H₁]H₁`` by a central difference of the attention kernel) are kept only as an
  independent cross-check, at points along the integrated reduced trajectory (a conclusion part).
* Coarse variable ``Y = LᵀX`` (``coarse="auto"``: the first token of each block for
  ``block_causal``, the stationary weighting of your own block-local mask, the block mean
  otherwise; ``"mean"``/``"first"`` override it, to show which one is right). When the mask and coarse map are not ones the theory derives (the controls), the
  reduced flows are the numerical block reduction with that coarse map — the reduction the controls
  show to be wrong.
* (c) starts from a generic ``X₀`` (off the manifold); the reduced flow starts at the base point of
  its fast fibre, ``Lᵀ X_∞`` with ``X_∞`` the end of the pure fast flow ``dX/dτ = (A(X) − I)X``
  (for the nonlinear bidirectional kernel the block mean is *not* conserved by the fast flow, so
  ``BX₀`` would leave an O(1)·‖(I − UB)X₀‖² offset). (d) starts on the first-order slow manifold,
  ``X₀ = UY₀ + εH₁`` (the O(ε) correction of the fibre base point is not part of the claim).
* Rates, by the asymptotic-window rule fixed in advance (:func:`error_rates`, through
  :func:`verify.measure.asymptotic_slope`): for order ``k`` (1 for (c), 2 for (d), tolerance
  ``slope_tol0``/``slope_tol1``) the errors at ``t = 1`` are evaluated lazily on the ladder
  ``ε_j = eps_max·10^(−j/4)``, from its largest point ``≤ min(eps_max, lin_const/c₂)`` down to the
  order's floor (``eps_floor_leading``, ``eps_floor_first``: below 1e-4 the first-order error meets
  the integrator floor at rtol 1e-9); the asymptotic window is the first run of ``window``
  consecutive points whose local slopes spread by at most ``tol/2``, and the rate holds when the
  95% interval of the slope fitted there lies in ``[k − tol, k + tol]``. ``c₂`` is the
  reduced-flow linearity constant (:func:`reduced_linearity`), computed from the reduced flows
  alone before any error: from the order's start point ``S`` (``Lᵀ X_∞`` for (c), ``Y₀`` for (d)),
  ``D(ε) = Y₁^ε(1) − Y₀(1)``, ``D₁`` its Richardson slope at ``e₀ = 1e-6``,
  ``ν(ε) = ‖D(ε) − εD₁‖ / ‖εD₁‖``, ``c₂ = ν(1e-3)/1e-3``; it chooses where the ladder starts
  (where the reduced flow is linear to ``lin_const`` under O(ε) perturbations), and the
  hypothesis ``asymptotic_regime_resolvable`` asks that ``window`` ladder points lie between
  that start and the order's floor.
* The attraction rate: the decay of ``‖(I − UB)(X − εH₁)‖`` at ``ε = rate_eps``, within ``rate_tol``
  of ``(1 − λ₂)/ε + γ`` with ``λ₂`` from the closed-form spectrum
  (:func:`numerics.model.masks.kernel_eigenvalues`; for your own mask the numerical one); the rate
  is the slope of a semi-log fit (:func:`exponential_decay_rate`). For your own mask the deviation
  is measured along the left eigenvectors of the slowest eigenvalues (:func:`slow_deviation`).

Hypotheses (:data:`HYPOTHESIS_DIAGNOSTICS`, one entry per hypothesis of Tikhonov's theorem,
computed from the instance before the conclusion):

* ``fast_mask_block_local``: no mask entry outside the diagonal ``P×P`` blocks;
* ``coarse_map_is_left_eigenprojector``: ``‖LᵀK − Lᵀ‖ = 0`` and ``LᵀU = I``;
* ``normally_hyperbolic``: ``1 − λ₂ > 0`` — the eigenvalue 1 of ``K`` has multiplicity exactly
  ``N`` (the number of closed classes of the mask graph, counted exactly by Boolean reachability)
  and no other eigenvalue has modulus 1 (every closed class aperiodic). Among the unit's masks only
  the global ``causal`` mask breaks it (one closed class for ``N`` blocks), and that mask already
  breaks block-locality: no parameter breaks it alone;
* ``initial_state_in_basin``: the pure fast flow from ``X₀`` reaches the critical manifold,
  ``‖(I − ULᵀ)X_∞‖ ≤ 1e-10·‖X₀‖`` at ``τ = FAST_TAU`` (longer for your own mask when its gap
  ``1 − λ₂`` is below 1/2: :func:`fast_tau`). With the norm on, the scores are bounded and
  every ``X₀`` is attracted; without it a very large ``scale``/``x_scale`` could make the softmax
  nearly hard and the collapse too slow, but no control is known to break it;
* ``reduced_solution_exists``: the leading-order flow from ``Lᵀ X_∞`` and the first-order flow from
  ``Y₀`` (``ε = eps_max``) integrate to ``t = 1`` with finite values. ``R`` is bounded (normed,
  saturating MLP) or Lipschitz on the unit's parameter ranges, so no parameter is known to break it;
  it is there so that a blow-up would be reported as outside the hypotheses, not as a wrong rate;
* ``mlp_nonlinearity_smooth``: ``σ`` is one the derivation differentiates symbolically (tanh,
  identity, gelu: analytic). The first-order slow manifold expands ``R`` in ε (``σ'``) and the
  O(ε²) error needs ``σ''``; ``relu`` (no derivative at 0) is outside. The built-in instances use
  tanh; a user flow can break it;
* ``first_order_correction_nonzero``: ``R`` moves block-constant states off the manifold,
  ``(I − ULᵀ)R(UY₀) ≠ 0`` (relative ``> 1e-8``). With ``γ = 0`` (or ``E`` block-constant) it does
  not: the MLP acts row by row and the slow path is block-constant, so the block-constant states
  are exactly invariant, ``H₁ ≡ 0``, the reduced flow is exact on them and the first-order error
  sits at the integrator floor — the claim holds there trivially but has no rate to measure (the
  check used to report ``fails``). The built-in instances have ``γ = 1``; ``gamma=0`` breaks it;
* ``asymptotic_regime_resolvable``: for each order, the ladder from the largest
  ``ε ≤ min(eps_max, lin_const/c₂)`` down to the order's floor holds at least ``window`` points
  (:func:`asymptotic_regime_resolvable`, from the reduced flows alone, before any error). This is
  a hypothesis of the measurement, not of Tikhonov's theorem: with fewer points the rate rule
  cannot find a window whatever the errors are, and the check used to report ``fails``. Found by
  a seed sweep of the defaults (seeds 0–39: 37 holds, 2 fails, 1 outside): on seeds 5 and 21 the
  first-order reduced solution passes within ``rho_min`` = 3.5e-4 and 6.0e-4 of the RMS norm's
  singular point (block RMS, against ``√1e-6 = 1e-3``), ``c₂`` = 516 and 155 (≤ 7.5 on the
  seeds that hold), so the asymptotic regime starts at ``lin_const/c₂`` = 9.7e-5 and 3.2e-4: no
  ladder point and three at or above ``eps_floor_first = 1e-4``; above it the first-order error bends
  (local slopes 1.3–1.9 between 1e-2 and 1e-3). Not a counterexample: seed 5 with
  ``eps_floor_first = eps_floor_leading = 1e-6, rtol = 1e-12, atol = 1e-14`` holds, first-order
  slope 2.054 (95% interval [2.026, 2.082]) over [5.6e-5, 5.6e-6], in 100 s.

Negative controls: the global ``causal`` mask (not block-local; its critical manifold is the
constants, every token collapses onto the first one, so the block reduction — block mean,
block-constant manifold — is wrong: the error does not shrink with ε), and ``block_causal`` with the
block mean as coarse variable (the block mean is not a left eigenvector of the block-causal kernel).
The theory derives no reduction for either (a global mask; a coarse map that is not the kernel's),
so on them the check integrates the numerical block reduction with the given mask and coarse map:
the reduction whose failure the controls demonstrate. Their hypotheses are decided by the
diagnostics above, never by the mask's name.

Series for the figures (not part of the verdict): the errors of both orders on the whole ladder
from ``eps_max`` down to ``eps_floor_first`` with the window rule applied from the top of that
ladder (:func:`error_ladder`), and the full and reduced flows along depth at ``ε = 1e-2``
(:func:`depth_trajectory`). They are computed after the verdict's measurements; their full flows
are not counted in ``full_flow_work``.

Caveats.

* The RMS norm ``n(x) = x/√(mean x² + 1e-6)`` is singular near ``x = 0``. When the reduced solution
  passes near it (``rho_min``, the smallest block RMS along the reduced solutions, is reported:
  0.009–0.1 on the instances where a fixed window ``[1e-3, 1e-1]`` failed) the reduced flow is
  strongly nonlinear under O(ε) perturbations (``c₂`` 27–74 there, ≤ 7.5 elsewhere) and the error
  curve bends until ε is well below ``lin_const/c₂``; the fast subsystem is not the cause (the
  collapse from ``X₀`` proceeds at exactly ``1 − λ₂``, and the attraction at ``UY`` is
  ``(K − I) ⊗ I_d`` whatever the score scale). The rule therefore starts lower on the ladder there;
  an instance whose reduced solution comes closer still needs ε below the floors and is outside
  ``asymptotic_regime_resolvable`` (lower the floors, with tighter tolerances, to decide it).
  Near that point the norm's third derivative grows like RMS⁻³, which is why the numerical
  curvature of the cross-check is Richardson-extrapolated (:data:`CURVATURE_STEP`): seed 21's
  trajectory passes a block of RMS 8e-4 and the plain central difference missed ``THEORY_TOL`` by
  its own truncation error.
* ``P ≤ 4``, ``d ≤ 4`` (the symbolic derivation, about a second per configuration, grows quickly
  beyond); with the norm on and ``d = 1`` the curvature term nearly vanishes (``n(x) ≈ sign x``),
  so its non-vacuity part fails there.

Your own system: a :class:`~verify.systems.DepthFlow` (``F1.systems``) is checked the same way on
its own model (its mask, ``P``, ``d``, ``L``, σ, norm, γ, gate, scales and seed:
:meth:`~verify.systems.DepthFlow.model`); the check's ``seed`` draws ``E`` and the start as for the
built-in instance, and F1's other parameters (ε ladder, tolerances, method) apply. The theory
follows your mask, block by block (a T×T block-local mask may give each block its own P×P pattern;
each distinct pattern is one derivation). Symbolically, exact (``theory.kernels``,
``theory.slow_manifold``): each block's kernel ``K`` (1/count on the pattern), its coarse vector
``L`` (the stationary weighting: the left eigenvector of the eigenvalue 1 with ``Lᵀ1 = 1`` — not the
block mean when ``K`` is not doubly stochastic), the projector ``Π = 1Lᵀ``, the normal rate
``1 − max Re λ`` over the other eigenvalues, the normal Jacobian ``(K − I) ⊗ I_d``, ``H₁`` and the
first-order reduced field with its attention-curvature term, all in generic entries of one block.
Numerically: the model's weights, the N blocks and the layers assembled from the lambdified block
fields, the slow path, and, independently in ``numerics``, the stationary weighting
(:func:`numerics.model.masks.stationary_weighting`, one linear solve per block) and ``λ₂``
(:func:`numerics.model.masks.subdominant_eigenvalue`, numerical eigenvalues); the check integrates
with the numerical ``Lᵀ`` and compares it with the theory's (``coarse_vs_numerics`` ≤ 1e-14, and the
reduced flows are the theory's only then) and the two normal rates (``normal_rate_vs_numerics`` ≤
1e-6). Every hypothesis is decided on your flow: a mask that attends across blocks is outside
``fast_mask_block_local``, a block with several closed classes outside ``normally_hyperbolic``,
relu outside ``mlp_nonlinearity_smooth``, ``γ = 0`` (the DepthFlow default) outside
``first_order_correction_nonzero``. Two measurements adapt to your spectrum: the pure fast flow
runs longer when the gap ``1 − λ₂`` is below 1/2 (:func:`fast_tau`), and the attraction rate is
read from the deviation's component along the left eigenvectors of the slowest eigenvalues
(:func:`numerics.model.masks.slowest_left_eigenvectors`: it decays exactly at ``1 − λ₂``, complex
or defective eigenvalues included), because a random pattern often has modes within a few percent
of the slowest one, which a fit of the whole deviation mixes. The model parameters of the verdict
(``T``, ``P``, ``mask``, …) are F1's defaults; the instance's are your flow's (the verdict's
``system``). Size limits, checked before any work (bad input otherwise): those of F1's parameters,
``2 ≤ T ≤ 64``, ``2 ≤ P ≤ 4``, ``d ≤ 4``, ``L ≤ 16``, ``0 ≤ γ ≤ 100``, ``|gate| ≤ 10``,
``scale ≤ 10``, and a named σ (the compiled full flow evaluates no user activation). Where your
first-order error is small (a few 1e-7 at the finest ε of its window) the two integrators disagree
by more than 1e-3 relative at ``rtol = 1e-9``: pass ``rtol=1e-11, atol=1e-13``. Your flow's γ and
scale do not enter the check ``eps_max·γ·max(1, scale)² ≤ 1`` nor the time estimate (they read
F1's parameters): choose ``eps_max`` by that rule yourself.

Time. Most of a check is the reduced flows (DOPRI5 on Python fields, about 12 000 evaluations at
the defaults) and, the first time in a process, the symbolic derivation and the compilation. The
first-order reduced flow turns stiff as ``ε·γ²·scale²`` grows, which made ``scale=10 gamma=100
gate=10`` run for hours (one flow at ε = 0.1 failed after 6·10⁶ evaluations): such a ladder is now
bad input (:data:`STIFFNESS_MAX`, with the largest admissible ``eps_max`` in the message), and
:meth:`F1.seconds_estimate` bounds the rest (parameters beyond the time budget, 600 s by default,
are bad input). Measured on a 2-core machine shared with other jobs: the defaults 1.7–4.3 s warm,
28 s cold.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np
import sympy as sp

import fastslow.numerics as nm
from fastslow.numerics.integrators import integrate
from fastslow.numerics.model.coupling_drivers import integrate_coupling, layer_breakpoints
from fastslow.numerics.model.masks import (
    coarse_maps,
    frozen_kernel,
    kernel_eigenvalues,
    slowest_left_eigenvectors,
    subdominant_eigenvalue,
)
from fastslow.numerics.toy.markov import mask_closed_classes as closed_classes
from fastslow.theory.slow_manifold import (
    MASKS,
    SIGMA_FUNCS,
    block_patterns,
    block_reduction,
    coarse_vector,
    reduced_rhs,
    sigma_is_smooth,
)

from ..claim import Claim, Conclusion, Control
from ..coupling_problem import CouplingProblem, coupling_problem
from ..measure import (
    asymptotic_slope,
    central_difference,
    ratio,
    relative_error,
    richardson_difference,
)
from ..model_params import model_params
from ..params import Param
from ..systems import DepthFlow
from ..verdict import Diagnostic, at_most

# ----------------------------------------------------------------------------- constants

COARSE = ("auto", "mean", "first")
"""Coarse maps: ``auto`` (the first token for ``block_causal``, the stationary weighting of your own
block-local mask, the block mean otherwise)."""
METHODS = ("radau", "rosw")
"""Stiff integrators of the full flow."""
OTHER_METHOD = {"radau": "rosw", "rosw": "radau"}
"""The method that cross-checks each one."""

CRITICAL_TOL = 1e-12
"""max |(A(UY) − I)UY| on block-constant states (rounding)."""
GENERIC_MIN = 1e-3
"""min |(A(X) − I)X| on generic states (the critical set is not everything)."""
NORMAL_LINEAR_TOL = 1e-7
"""central-difference JVP of the fast part at UY against (K − I)δX, relative to max(1, |δX|)."""
JVP_STEP = 1e-6
"""step of that central difference."""
THEORY_TOL = {"H1": 1e-10, "f0": 1e-10, "f1": 1e-8}
"""theory field against the numerical formulas, relative (order 1: the Richardson-extrapolated
central difference of the curvature, accurate to about 1e-10 where the reduced solution passes
within 1e-3 of the RMS norm's singular point, 1e-11 elsewhere)."""
CURVATURE_STEP = 4e-6
"""relative step of the Richardson-extrapolated central difference of the attention kernel
(steps 4e-6 and 2e-6): truncation O(step⁴), rounding about 3u/step. The plain central difference
at 1e-6 left a truncation error of 1.05e-6 relative in f1 (it fell exactly as step²: 1.05e-2,
1.05e-4, 1.05e-6, 1.05e-8 at steps 1e-4 … 1e-7) where the first-order reduced trajectory of F1
seed 21 passes a block of RMS 8e-4 (the norm's third derivative ∝ RMS⁻³ there), so the old
tolerance of 1e-6 failed on the numerical side, not the theory's; extrapolated it is 3e-10 at
1e-5, 6e-11 at 2e-6."""
CURVATURE_MIN = 1e-3
"""the attention-curvature term is visible (Q, K enter at order ε) where it is not identically 0."""
CURVATURE_ZERO = 1e-8
"""where the symbolic curvature is identically 0, the numerical one is at most this."""
FAST_TAU = 60.0
"""length of the pure fast flow that defines ``X_∞``: near the manifold it contracts at
``1 − λ₂ ≥ 1/2`` for every named mask, so ``e^{−(1 − λ₂)τ} ≤ e^{−30} ≈ 1e-13``. For your own mask
with a smaller gap the flow runs ``FAST_TAU/(2(1 − λ₂))`` (the same ``e^{−30}``), at most
``FAST_TAU_MAX`` (:func:`fast_tau`)."""
FAST_TAU_MAX = 6000.0
"""the longest pure fast flow (a gap ``1 − λ₂`` down to 0.005)."""
FAST_TOL = {"rtol": 1e-11, "atol": 1e-13}
"""tolerances of the pure fast flow."""
BASIN_TOL = 1e-10
"""``‖(I − Π)X_∞‖ / ‖X₀‖`` at the end of the pure fast flow (τ = :func:`fast_tau`)."""
INVARIANCE_TOL = 1e-8
"""``‖(I − ULᵀ)R(UY₀)‖ / ‖R(UY₀)‖`` above this on some layer: the slow part moves block-constant
states off the critical manifold (otherwise it is exactly invariant and ``H₁ ≡ 0``)."""
INTEGRATOR_RTOL = 1e-3
"""errors from the two stiff integrators at the finest ε of each window agree to this relative tolerance."""
COARSE_TOL = 1e-14
"""your own mask: the numerical stationary weighting against the theory's exact coarse vector, max
absolute deviation (one small linear solve per block: rounding)."""
NORMAL_RATE_TOL = 1e-6
"""your own mask: the theory's exact normal rate ``1 − max Re λ`` against ``1 − λ₂`` from the
numerical eigenvalues, absolute (an eigenvalue of a defective block kernel is accurate only to
about √(unit roundoff))."""
USER_FLOW_LIMITS = ("T", "P", "d", "L", "gamma", "gate", "scale")
"""the fields of your DepthFlow checked against the bounds of F1's parameters of the same name
(the cost of the symbolic derivation and of the stiff full flows)."""

LINEARITY_TOL = {"rtol": 1e-12, "atol": 1e-14}
"""DOPRI5 tolerances of the reduced flows in :func:`reduced_linearity`."""
LINEARITY_E0 = 1e-6
"""ε of the Richardson estimate of the first-order sensitivity ``D₁``."""
LINEARITY_EPS = 1e-3
"""ε at which the linearity defect ``ν`` is measured (``c₂ = ν(LINEARITY_EPS)/LINEARITY_EPS``)."""
RHO_GRID = 101
"""depths (uniform on [0, 1]) at which the block RMS of the reduced solutions is sampled."""

RATE_ORDERS = {
    "leading": {
        "order": 0,
        "rate": 1.0,
        "tol": "slope_tol0",
        "floor": "eps_floor_leading",
        "error": "error_leading",
    },
    "first_order": {
        "order": 1,
        "rate": 2.0,
        "tol": "slope_tol1",
        "floor": "eps_floor_first",
        "error": "error_first",
    },
}
"""The two rates of the claim: (c) leading order ``O(ε)``, (d) first order ``O(ε²)``."""

ATTRACTION_SAMPLES = 161
"""depths (uniform on ``[0, t_end]``) at which the deviation from the manifold is sampled."""
ATTRACTION_TOL = {"rtol": 1e-10, "atol": 1e-13}
"""tolerances of the full flow whose decay gives the attraction rate."""
ATTRACTION_FIT_BAND = (1e-6, 1e-2)
"""the decay rate is fitted where the deviation is between these fractions of its initial value
(linear regime, above the O(ε²) floor)."""

TRAJECTORY_EPS = 1e-2
"""ε of the depth trajectory in the series."""
TRAJECTORY_T = np.concatenate([np.linspace(0, 0.1, 201)[:-1], np.linspace(0.1, 1.0, 181)])
"""its depth grid: fine over the initial layer (the fast collapse), coarser after."""
TRAJECTORY_TOL = {"rtol": 1e-10, "atol": 1e-12}
"""tolerances of the trajectory's full (Rosenbrock-W) and reduced flows."""
TRAJECTORY_BLOCKS = 3
"""blocks whose feature 0 the trajectory records."""


STIFFNESS_MAX = 1.0
"""``eps_max·γ·max(1, scale)²`` at most this (:meth:`F1.validate`): the first-order reduced flow,
integrated by DOPRI5, turns stiff as ``ε·γ²·scale²`` grows (its curvature term ``ε·DA[H₁]H₁``
has ``H₁ ∝ γ`` and scores ∝ scale²). A sufficient condition found by measurement on seed 0: at
``γ = 100`` one flow took 116 000 evaluations at ε = 0.01 and failed after 6·10⁶ (490 s) at
ε = 0.1; with ``scale = gate = 10`` too, more than 3 minutes at ε = 1e-3 against 0.4 s at 1e-4.
Conservative for ``γ ≤ 1`` (``scale = 10`` at ε = 0.1: 2 600 evaluations)."""
NFEV_BASE = 400
"""Work estimate: reduced-field evaluations of one DOPRI5 reduced flow at ``rtol = 1e-9`` where
it is not stiff, growing like ``rtol^(−1/5)``."""
NFEV_STIFF = 1500
"""Work estimate: the stiff part of one first-order reduced flow, evaluations per
``ε·γ²·max(1, scale)²`` (bounded by :data:`STIFFNESS_MAX`)."""
EXTRA_REDUCED_FLOWS = 12
"""Work estimate: reduced flows besides one per ladder point (linearity constants, existence,
trajectory, the other method's ε, the series)."""
EXTRA_FULL_FLOWS = 6
"""Work estimate: full flows besides two per ladder point (the other method, the attraction
rate, the depth trajectory, the pure fast flow)."""


# ----------------------------------------------------------------------------- reductions


def theory_derivation(cfg) -> tuple[list | None, str]:
    """``(keys, why)``: the per-block masks the theory derives a reduction for (a name of
    :data:`theory.slow_manifold.MASKS` or a P×P within-block pattern per block,
    :func:`theory.slow_manifold.block_patterns`), or ``None`` and the reason there is none: the
    mask attends across blocks, a block's eigenvalue 1 is not simple (no unique coarse vector), or
    ``σ`` has no symbolic derivative (:func:`theory.slow_manifold.sigma_is_smooth`)."""
    if isinstance(cfg.mask, str) and cfg.mask not in MASKS:
        return None, "the mask is not a block mask"
    try:
        keys = block_patterns(cfg.mask, cfg.P, cfg.T)
        for key in dict.fromkeys(keys):
            coarse_vector(key, cfg.P)
    except ValueError as exc:
        return None, f"the mask has no block reduction ({exc})"
    if not sigma_is_smooth(cfg.sigma):
        return None, (
            f"σ = {cfg.sigma!r} has no symbolic derivative (the derivation differentiates "
            f"{', '.join(SIGMA_FUNCS)})"
        )
    return keys, ""


def theory_coarse_map(cfg, keys: list) -> np.ndarray:
    """``Lᵀ`` (N×T) from the theory's coarse vector of each block (exact rationals as floats)."""
    P, N = cfg.P, cfg.N
    if all(k == keys[0] for k in keys):
        Lv = np.array([float(v) for v in coarse_vector(keys[0], P)])
        return np.kron(np.eye(N), Lv[None, :])
    Lt = np.zeros((N, cfg.T))
    for b, key in enumerate(keys):
        Lt[b, b * P : (b + 1) * P] = [float(v) for v in coarse_vector(key, P)]
    return Lt


def coarse_deviation(cfg, Lt: np.ndarray, keys: list | None) -> float:
    """``max |Lᵀ − Lᵀ_theory|``: the coarse map that is integrated against the theory's (inf when
    the theory derives none). For a named mask both are closed forms, compared exactly."""
    if keys is None:
        return float("inf")
    return float(np.abs(Lt - theory_coarse_map(cfg, keys)).max())


def theory_reduction_applies(cfg, Lt: np.ndarray, keys: list | None) -> bool:
    """Whether ``theory.slow_manifold`` derives this reduction: the theory has a derivation
    (:func:`theory_derivation`) and ``Lᵀ`` is its coarse vector in every block: exactly for a named
    mask, to :data:`COARSE_TOL` for your own (the numerical stationary weighting)."""
    dev = coarse_deviation(cfg, Lt, keys)
    return bool(dev == 0.0 if isinstance(cfg.mask, str) else dev <= COARSE_TOL)


class NumericReduction:
    """The block reduction from the numerical formulas: ``H₁`` by a linear solve with the frozen
    kernel ``K`` and ``Π = U Lᵀ``, the curvature ``DA_{UY}[H₁]H₁`` by a central difference of the
    attention kernel. Same call shape as :class:`theory.slow_manifold.ReducedRHS`."""

    def __init__(self, order: int, inst: Instance, K: np.ndarray, Lt: np.ndarray):
        self.order, self.inst, self.Lt = order, inst, Lt
        T = inst.cfg.T
        self.Pi = inst.U @ Lt
        self.M = np.eye(T) - K + self.Pi  # invertible: I − K on E_d, I on the range of Π

    def H1(self, l: int, Y: np.ndarray) -> np.ndarray:
        """``H₁ = (I − K + Π)⁻¹(I − Π)R(UY)`` (T×d) on layer segment ``l`` (the least-squares
        solution where ``I − K + Π`` is singular: a mask outside ``normally_hyperbolic``)."""
        R = self.inst.R(l, self.inst.U @ Y)
        try:
            return np.linalg.solve(self.M, R - self.Pi @ R)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(self.M, R - self.Pi @ R, rcond=None)[0]

    def curvature(self, l: int, Y: np.ndarray, H: np.ndarray) -> np.ndarray:
        """``DA_{UY}[H] H`` by a central difference of the attention kernel (T×d)."""
        inst = self.inst
        lp = inst.model.layers[l]
        nH = np.linalg.norm(H)
        if nH == 0.0:
            return np.zeros_like(H)
        dA = richardson_difference(
            lambda X: nm.attention_kernel(inst.cfg, lp, X), inst.U @ Y, H, CURVATURE_STEP / nH
        )
        return dA @ H

    def __call__(self, l: int, Y: np.ndarray, eps: float = 0.0) -> np.ndarray:
        """``dY/dt`` of the order-0 or order-1 reduced flow on layer segment ``l``."""
        inst = self.inst
        Y = np.asarray(Y, dtype=float).reshape(inst.Y0.shape)
        X = inst.U @ Y
        if self.order == 0:
            return self.Lt @ inst.R(l, X)
        H = self.H1(l, Y)
        return self.Lt @ (inst.R(l, X + eps * H) + eps * self.curvature(l, Y, H))


# ----------------------------------------------------------------------------- the instance


def auto_coarse(cfg) -> str:
    """The coarse variable of ``coarse="auto"``: the first token for ``block_causal``, the
    stationary weighting of your own mask when it is block-local with a simple eigenvalue 1 in every
    block, the block mean otherwise."""
    if isinstance(cfg.mask, str):
        return "first" if cfg.mask == "block_causal" else "mean"
    try:
        coarse_maps(cfg.mask_array, cfg.T, cfg.P)
    except ValueError:
        return "mean"
    return "stationary"


def coarse_map(cfg, coarse: str, B: np.ndarray) -> np.ndarray:
    """``Lᵀ`` (N×T) of a coarse variable: the block mean ``B``, the first token of each block, or
    the stationary weighting of the mask (:func:`numerics.model.masks.coarse_maps`)."""
    if coarse == "mean":
        return B
    if coarse == "first":
        return coarse_maps("block_causal", cfg.T, cfg.P)[1].T
    return coarse_maps(cfg.mask_array, cfg.T, cfg.P)[1].T


class Instance:
    """A seeded F1 instance: model, injection target, initial data, coarse map, reduced flows
    (``problem``: your flow's, ``coupling_problem(q, seed, model=system.model())``; the built-in
    one by default)."""

    def __init__(self, p: dict, seed: int, problem: CouplingProblem | None = None):
        prob = coupling_problem(p, seed) if problem is None else problem
        self.p, self.seed = p, seed
        self.model, self.cfg = prob.model, prob.model.config
        self.E, self.Y0, self.Z0 = prob.E, prob.Y0, prob.Z0
        self.check_rng_seed = prob.spare_seed
        P = self.cfg.P
        self.U = prob.U
        self.B = self.U.T / P
        self.coarse = auto_coarse(self.cfg) if p["coarse"] == "auto" else p["coarse"]
        self.Lt = coarse_map(self.cfg, self.coarse, self.B)
        # the frozen kernel of the instance's own mask matrix
        self.K = frozen_kernel(self.cfg.mask_array)
        self.breaks = layer_breakpoints(self.model.L)
        self.theory_keys, self.no_theory_reason = theory_derivation(self.cfg)
        self.source = (
            "theory"
            if theory_reduction_applies(self.cfg, self.Lt, self.theory_keys)
            else "numerics"
        )
        self._errors: dict = {}
        self.work: list = []

    # -- the reduced flows

    @cached_property
    def flows(self) -> dict:
        """``{order: f(seg, Y, eps)}``: the reduced right-hand sides that are integrated (the
        theory's when it derives this mask and coarse map, else the numerical block reduction)."""
        if self.source == "theory":
            return {k: self.theory_flow(k) for k in (0, 1)}
        return {k: NumericReduction(k, self, self.K, self.Lt) for k in (0, 1)}

    def theory_flow(self, order: int):
        """The reduced right-hand side of ``order`` from :func:`theory.slow_manifold.reduced_rhs`
        for this model (the slow path is the numerical input)."""
        cfg, model = self.cfg, self.model
        layers = [(lp.Q, lp.K, lp.W1, lp.W2) for lp in model.layers]
        slow = (
            (lambda l, X: model.layers[l].g * nm.slow_path(cfg, model.layers[l], X))
            if cfg.slow
            else None
        )
        return reduced_rhs(
            order,
            cfg.mask,
            cfg.P,
            cfg.d,
            cfg.norm,
            layers,
            self.E,
            cfg.score_scale,
            cfg.gamma,
            slow,
            norm_eps=cfg.norm_eps,
            m=cfg.m,
            sigma=cfg.sigma,
        )

    def R(self, l: int, X: np.ndarray) -> np.ndarray:
        """``R_t(X) = γ(E − X) + MLP_t(X) + g·Slow_t(X)`` on layer segment ``l``."""
        lp = self.model.layers[l]
        out = nm.mlp(self.cfg, lp, X) + self.cfg.gamma * (self.E - X)
        if self.cfg.slow and lp.g:
            out = out + lp.g * nm.slow_path(self.cfg, lp, X)
        return out

    def H1(self, l: int, Y: np.ndarray) -> np.ndarray:
        """``H₁`` (T×d) at ``UY`` on layer segment ``l``, from the reduction that is integrated."""
        return np.asarray(self.flows[1].H1(l, Y), dtype=float)

    def seg(self, t: float) -> int:
        """The layer segment of depth ``t``."""
        return min(int(np.searchsorted(self.breaks, t, side="right")), self.model.L - 1)

    def reduced_result(
        self, order: int, eps: float, Y0: np.ndarray, rtol: float, atol: float, t_eval=None
    ):
        """The integration result of the reduced flow of the given order (0 or 1) on ``[0, 1]``."""
        f = self.flows[order]
        shape = Y0.shape
        return integrate(
            lambda t, y: np.asarray(f(self.seg(t), y.reshape(shape), eps)).ravel(),
            (0.0, 1.0),
            Y0,
            method="dopri5",
            rtol=rtol,
            atol=atol,
            t_eval=t_eval,
            breakpoints=self.breaks,
        )

    def reduced(
        self, order: int, eps: float, Y0: np.ndarray, rtol: float, atol: float, t_eval=None
    ):
        """Integrate the reduced flow of the given order (0 or 1) to ``t = 1``."""
        res = self.reduced_result(order, eps, Y0, rtol, atol, t_eval)
        if not res.success:
            raise RuntimeError(f"reduced flow failed: {res.message}")
        return res.y[:, -1].reshape(Y0.shape), res

    @cached_property
    def linearity(self) -> dict:
        """``{order name: reduced_linearity(...)}``: the linearity constants ``c₂`` of both
        orders, from the reduced flows alone (the hypothesis ``asymptotic_regime_resolvable`` and
        the rate rule read them)."""
        return {name: reduced_linearity(self, spec["order"]) for name, spec in RATE_ORDERS.items()}

    # -- the start points

    @cached_property
    def X0_generic(self) -> np.ndarray:
        """The generic (off-manifold) start of (c): ``UY₀ + Z₀``."""
        return self.U @ self.Y0 + self.Z0

    @cached_property
    def X_inf(self) -> np.ndarray:
        """End of the pure fast flow from :attr:`X0_generic` (shared by the basin diagnostic and
        the start point of the leading-order reduced flow)."""
        return self.fast_limit(self.X0_generic)

    @cached_property
    def Y_fib(self) -> np.ndarray:
        """Base point ``Lᵀ X_∞`` of the fast fibre through :attr:`X0_generic`."""
        return self.Lt @ self.X_inf

    @cached_property
    def leading_solution(self):
        """The leading-order reduced flow from the fibre base point (integration result; the
        existence diagnostic reads it, :attr:`Y_leading_end` requires it to have succeeded)."""
        return self.reduced_result(0, 0.0, self.Y_fib, self.p["rtol"], self.p["atol"])

    @cached_property
    def Y_leading_end(self) -> np.ndarray:
        """``Y₀(1)`` of the leading-order reduced flow from the fibre base point."""
        res = self.leading_solution
        if not res.success:
            raise RuntimeError(f"reduced flow failed: {res.message}")
        return res.y[:, -1].reshape(self.Y0.shape)

    def fast_limit(self, X0: np.ndarray) -> np.ndarray:
        """End point ``X_∞`` of the pure fast flow ``dX/dτ = (A_0(X) − I)X`` (layer 0's Q, K) at
        ``τ =`` :func:`fast_tau`."""
        cfg = self.cfg.replace(gamma=0.0, slow=False)
        lp = self.model.layers[0].copy()
        lp.W2 = np.zeros_like(lp.W2)
        fast = nm.Model(cfg, (lp,))
        res = integrate_coupling(
            fast, X0, 1.0, t_span=(0.0, fast_tau(self)), method=self.p["method"], **FAST_TOL
        )
        if not res.success:
            raise RuntimeError(f"fast flow failed: {res.message}")
        return res.extra["X"][-1]

    # -- the full flow and the errors

    def full_flow_end(self, X0: np.ndarray, eps: float, method: str) -> np.ndarray:
        """``X(1)`` of the full flow from ``X0`` (its work is recorded in :attr:`work`)."""
        r = integrate_coupling(
            self.model, X0, eps, E=self.E, rtol=self.p["rtol"], atol=self.p["atol"], method=method
        )
        if not r.success:
            raise RuntimeError(f"full flow failed at eps={eps:g}: {r.message}")
        self.work.append(
            {
                "eps": float(eps),
                "method": method,
                "steps": r.nsteps,
                "rejected": r.nreject,
                "nfev": r.nfev,
                "njev": r.njev,
            }
        )
        return r.extra["X"][-1]

    def error_leading(self, eps: float, method: str | None = None) -> float:
        """(c) ``‖X(1) − UY₀(1)‖ / ‖X(1)‖`` from the generic start (cached per ε and method)."""
        method = self.p["method"] if method is None else method
        key = (0, float(eps), method)
        if key not in self._errors:
            X1 = self.full_flow_end(self.X0_generic, eps, method)
            self._errors[key] = relative_error(self.U @ self.Y_leading_end, X1)
        return self._errors[key]

    def error_first(self, eps: float, method: str | None = None) -> float:
        """(d) ``‖X(1) − (UY(1) + εH₁)‖ / ‖X(1)‖`` from ``UY₀ + εH₁`` (cached per ε and method)."""
        method = self.p["method"] if method is None else method
        key = (1, float(eps), method)
        if key not in self._errors:
            X1 = self.full_flow_end(self.U @ self.Y0 + eps * self.H1(0, self.Y0), eps, method)
            Y1, _ = self.reduced(1, eps, self.Y0, self.p["rtol"], self.p["atol"])
            approx = self.U @ Y1 + eps * self.H1(self.model.L - 1, Y1)
            self._errors[key] = relative_error(approx, X1)
        return self._errors[key]


# ----------------------------------------------------------------------------- hypotheses


def fast_mask_block_local(inst: Instance) -> Diagnostic:
    """The number of mask entries outside the diagonal ``P×P`` blocks (0 required)."""
    T, P = inst.cfg.T, inst.cfg.P
    outside = inst.cfg.mask_array & ~np.kron(
        np.eye(T // P, dtype=bool), np.ones((P, P), dtype=bool)
    )
    n = int(outside.sum())
    return Diagnostic(
        n == 0, n, "number of fast-mask entries outside the diagonal P×P blocks; 0 required"
    )


def coarse_map_is_left_eigenprojector(inst: Instance) -> Diagnostic:
    """``max |LᵀK − Lᵀ|`` and ``max |LᵀU − I|`` (both 0 to rounding)."""
    left = float(np.abs(inst.Lt @ inst.K - inst.Lt).max())
    normal = float(np.abs(inst.Lt @ inst.U - np.eye(inst.cfg.N)).max())
    return Diagnostic(
        left <= 1e-14 and normal <= 1e-14,
        {"|LᵀK − Lᵀ|": left, "|LᵀU − I|": normal},
        "max |LᵀK − Lᵀ| ≤ 1e-14 and max |LᵀU − I| ≤ 1e-14 (K the frozen kernel of "
        "the mask matrix, U the block-constant states)",
    )


def second_eigenvalue(inst: Instance) -> float:
    """``λ₂``: the largest eigenvalue of the frozen kernel below 1 (closed form for a named mask,
    :func:`numerics.model.masks.kernel_eigenvalues`; for your own mask the largest real part of the
    other eigenvalues, numerically, :func:`numerics.model.masks.subdominant_eigenvalue`), 0 if 1 is
    the only one."""
    cfg = inst.cfg
    if not isinstance(cfg.mask, str):
        return subdominant_eigenvalue(cfg.mask_array)
    eigs = kernel_eigenvalues(cfg.mask, cfg.T, cfg.P)
    below = [lam for lam in eigs if lam < 1.0]
    return float(max(below)) if below else 0.0


def spectrum_source(inst: Instance) -> str:
    """Where :func:`second_eigenvalue` comes from, in words."""
    return "closed form" if isinstance(inst.cfg.mask, str) else "numerical eigenvalues"


def normally_hyperbolic(inst: Instance) -> Diagnostic:
    """The multiplicity of the eigenvalue 1 of ``K`` (closed classes) against ``N``, and the
    periods of the closed classes (all 1 required)."""
    classes = closed_classes(inst.cfg.mask_array)
    n_closed, N = len(classes), inst.cfg.N
    aperiodic = all(c["period"] == 1 for c in classes)
    return Diagnostic(
        n_closed == N and aperiodic,
        {
            "eigenvalue_1_multiplicity": n_closed,
            "blocks": N,
            "closed_class_periods": [c["period"] for c in classes],
            "spectral_gap_1_minus_lambda2": 1.0 - second_eigenvalue(inst),
        },
        "the eigenvalue 1 of K has multiplicity exactly N (closed classes of the "
        "mask graph, counted exactly) and no other eigenvalue of modulus 1 (every "
        "closed class aperiodic), i.e. 1 − λ₂ > 0; the gap is reported from the "
        + ("closed-form spectrum" if isinstance(inst.cfg.mask, str) else "numerical spectrum"),
    )


def initial_state_in_basin(inst: Instance) -> Diagnostic:
    """``‖(I − ULᵀ)X_∞‖ / ‖X₀‖`` at the end of the pure fast flow."""
    Pi = inst.U @ inst.Lt
    off = relative_error(inst.X_inf, Pi @ inst.X_inf, scale=np.linalg.norm(inst.X0_generic))
    return at_most(
        off,
        BASIN_TOL,
        f"‖(I − ULᵀ)X_∞‖ / ‖X₀‖ ≤ {BASIN_TOL:g} at the end of the pure "
        f"fast flow from X₀ (τ = {fast_tau(inst):g})",
    )


def fast_tau(inst: Instance) -> float:
    """The length of the pure fast flow: :data:`FAST_TAU` when ``1 − λ₂ ≥ 1/2`` (every named mask)
    or when there is no gap (``normally_hyperbolic`` fails), else ``FAST_TAU/(2(1 − λ₂))`` up to
    :data:`FAST_TAU_MAX`, so that ``e^{−(1 − λ₂)τ}`` is ``e^{−30}`` whatever your mask's gap."""
    gap = 1.0 - second_eigenvalue(inst)
    if gap >= 0.5 or gap <= 0.0:
        return FAST_TAU
    return min(FAST_TAU * 0.5 / gap, FAST_TAU_MAX)


def first_order_correction_nonzero(inst: Instance) -> Diagnostic:
    """``max_l ‖(I − ULᵀ)R_l(UY₀)‖ / ‖R_l(UY₀)‖``: whether the slow part moves block-constant states
    off the critical manifold (the source of ``H₁``)."""
    X = inst.U @ inst.Y0
    Pi = inst.U @ inst.Lt
    off = 0.0
    for l in range(inst.model.L):
        R = inst.R(l, X)
        off = max(off, ratio(np.linalg.norm(R - Pi @ R), np.linalg.norm(R)))
    return Diagnostic(
        off > INVARIANCE_TOL,
        off,
        f"max over layers of ‖(I − ULᵀ)R(UY₀)‖ / ‖R(UY₀)‖ > {INVARIANCE_TOL:g}: R moves "
        "block-constant states off the manifold (γ > 0 towards a non-block-constant E)",
    )


def mlp_nonlinearity_smooth(inst: Instance) -> Diagnostic:
    """Whether ``σ`` is one the derivation differentiates symbolically (analytic): the first-order
    slow manifold expands ``R`` in ``ε`` (``σ'``) and its O(ε²) error needs ``σ''``."""
    sigma = inst.cfg.sigma
    return Diagnostic(
        sigma_is_smooth(sigma),
        sigma if isinstance(sigma, str) else repr(sigma),
        f"σ is one of {', '.join(SIGMA_FUNCS)} (analytic, differentiated symbolically); relu "
        "(no derivative at 0) is not",
    )


def reduced_solution_exists(inst: Instance) -> Diagnostic:
    """Whether both reduced flows reach ``t = 1`` with finite values (and how large they get)."""
    p = inst.p
    ok, ends = True, {}
    for name, res in (
        ("leading", inst.leading_solution),
        ("first_order", inst.reduced_result(1, p["eps_max"], inst.Y0, p["rtol"], p["atol"])),
    ):
        finite = bool(res.success and np.all(np.isfinite(res.y)) and res.t[-1] == 1.0)
        ok = ok and finite
        ends[name] = {
            "reached_t": float(res.t[-1]),
            "finite": finite,
            "max_abs": float(np.abs(res.y).max()),
        }
    return Diagnostic(
        ok,
        ends,
        "the leading-order flow from Lᵀ X_∞ and the first-order flow from "
        "Y₀ (ε = eps_max) integrate to t = 1 with finite values",
    )


def asymptotic_regime_resolvable(inst: Instance) -> Diagnostic:
    """Per order, the ladder points the rate rule can use: from where it starts (the largest
    ``ε ≤ min(eps_max, lin_const/c₂)``, :func:`rate_window_start`) down to the order's floor;
    ``window`` of them are needed. Computed from the reduced flows alone (``c₂``), before any
    error: with fewer points the rule cannot find a window whatever the errors are, so the rate
    is not measurable on this instance at these floors (lower ``eps_floor_*`` with tighter
    ``rtol``/``atol``), which is not a counterexample."""
    p = inst.p
    rule = (
        f"per order, ladder points from min(eps_max, lin_const/c₂) down to its floor (leading "
        f"≥ {p['eps_floor_leading']:g}, first ≥ {p['eps_floor_first']:g}) ≥ window = "
        f"{p['window']} (where H₁ ≢ 0)"
    )
    if not first_order_correction_nonzero(inst).holds:
        # H₁ ≡ 0: the reduced flows of both orders coincide, c₂ measures rounding, and
        # first_order_correction_nonzero already says there is no rate to measure
        return Diagnostic(True, "not applicable: H₁ ≡ 0", rule)
    try:
        lin = inst.linearity
    except RuntimeError as exc:  # a reduced flow that does not integrate: no regime to resolve
        return Diagnostic(False, f"c₂ not computed: {exc}", rule)
    value = {}
    for name, spec in RATE_ORDERS.items():
        ladder = eps_ladder(p["eps_max"], p[spec["floor"]])
        start = rate_window_start(ladder, p["eps_max"], p["lin_const"], lin[name]["c2"])
        value[name] = {
            "points": len(ladder) - start,
            "start_eps": float(ladder[start]) if start < len(ladder) else None,
            "c2": lin[name]["c2"],
            "D1_norm": lin[name]["D1_norm"],
        }
    return Diagnostic(all(v["points"] >= p["window"] for v in value.values()), value, rule)


HYPOTHESIS_DIAGNOSTICS: dict[str, tuple[str, Callable[[Instance], Diagnostic]]] = {
    "fast_mask_block_local": (
        "the fast mask is block-local: no mask entry outside the diagonal P×P blocks",
        fast_mask_block_local,
    ),
    "coarse_map_is_left_eigenprojector": (
        "the coarse map Lᵀ is the left eigenprojector of the frozen kernel K of the mask: "
        "‖LᵀK − Lᵀ‖ = 0 and LᵀU = I",
        coarse_map_is_left_eigenprojector,
    ),
    "normally_hyperbolic": (
        "the critical manifold attracts uniformly: 1 − λ₂ > 0, i.e. the eigenvalue 1 of the "
        "frozen kernel has multiplicity exactly N (one closed class of the mask graph per block) "
        "and no other eigenvalue has modulus 1",
        normally_hyperbolic,
    ),
    "initial_state_in_basin": (
        f"the pure fast flow from X₀ reaches the critical manifold: ‖(I − ULᵀ)X_∞‖ ≤ "
        f"{BASIN_TOL:g}·‖X₀‖",
        initial_state_in_basin,
    ),
    "reduced_solution_exists": (
        "the leading- and first-order reduced flows integrate to t = 1 with finite values",
        reduced_solution_exists,
    ),
    "mlp_nonlinearity_smooth": (
        "the MLP nonlinearity σ is smooth (C²): the first-order slow manifold needs σ' and its "
        "O(ε²) error σ''",
        mlp_nonlinearity_smooth,
    ),
    "first_order_correction_nonzero": (
        "the slow part R moves block-constant states off the critical manifold (injection γ > 0 "
        "towards a non-block-constant E); otherwise the manifold is exactly invariant, H₁ ≡ 0, "
        "the reduction is exact and its errors sit at the integrator floor: no rate to measure",
        first_order_correction_nonzero,
    ),
    "asymptotic_regime_resolvable": (
        "the asymptotic regime of each order lies above its floor: the ladder from the largest "
        "ε ≤ lin_const/c₂ (c₂ the reduced flow's linearity constant, from the reduced flows "
        "alone) down to the floor holds at least window points; otherwise no rate can be "
        "measured at these floors (lower them, with tighter tolerances)",
        asymptotic_regime_resolvable,
    ),
}
"""``{hypothesis: (meaning, diagnostic(inst))}``: adding a hypothesis of Tikhonov's theorem is one
entry here (the claim's ``hypotheses`` and ``diagnose`` read this table)."""


# ----------------------------------------------------------------------------- measurements


def eps_ladder(eps_max: float, floor: float) -> np.ndarray:
    """``ε_j = eps_max · 10^(−j/4)`` from coarse to fine, down to ``floor``."""
    n = int(np.floor(4 * np.log10(eps_max / floor) + 1e-9)) + 1
    return eps_max * 10.0 ** (-np.arange(n) / 4)


def block_rms_min(Y_path: np.ndarray, shape) -> float:
    """``min_{t, k} rms(y_k(t))`` along a reduced solution (columns of ``Y_path`` are times): the
    distance of the tokens ``y_k`` to the singular point 0 of the RMS norm."""
    Y = Y_path.T.reshape(-1, *shape)
    return float(np.sqrt((Y**2).mean(axis=-1)).min())


def reduced_linearity(inst: Instance, order: int) -> dict:
    """The reduced-flow linearity constant ``c₂`` of the order-``k`` rate (``k = order + 1``).

    Both reduced flows start at the order's start point ``S`` (the fibre base point ``Lᵀ X_∞`` for
    the leading order, ``Y₀`` for the first order). ``D(ε) = Y₁^ε(1) − Y₀(1)`` (first-order reduced
    flow at ε minus the leading one); ``D₁ = (4D(e₀) − D(2e₀))/(2e₀)`` (Richardson, ``e₀ = 1e-6``);
    ``ν(ε) = ‖D(ε) − εD₁‖ / ‖εD₁‖`` and ``c₂ = ν(1e-3)/1e-3``: how far from linear the reduced
    dynamics is under O(ε) perturbations. It is computed from the reduced flows alone, before any
    error, and only chooses where the rate rule starts (:func:`rate_window_start`). Also returns
    ``rho_min``, the smallest block RMS along the two solutions that are compared.
    """
    S = inst.Y_fib if order == 0 else inst.Y0
    rt, at = LINEARITY_TOL["rtol"], LINEARITY_TOL["atol"]
    t_grid = np.linspace(0.0, 1.0, RHO_GRID)
    Y0_end, path0 = inst.reduced(0, 0.0, S, rt, at, t_eval=t_grid)
    e0 = LINEARITY_E0
    Ya, _ = inst.reduced(1, e0, S, rt, at)
    Yb, _ = inst.reduced(1, 2 * e0, S, rt, at)
    D1 = (4 * (Ya - Y0_end) - (Yb - Y0_end)) / (2 * e0)
    Ye, path1 = inst.reduced(1, LINEARITY_EPS, S, rt, at, t_eval=t_grid)
    nu = relative_error(Ye - Y0_end, LINEARITY_EPS * D1)
    return {
        "c2": nu / LINEARITY_EPS,
        "nu": nu,
        "D1_norm": float(np.linalg.norm(D1)),
        "rho_min": min(block_rms_min(path0.y, S.shape), block_rms_min(path1.y, S.shape)),
    }


def rate_window_start(ladder: np.ndarray, eps_max: float, lin_const: float, c2: float) -> int:
    """Index of the largest ladder point ``≤ min(eps_max, lin_const/c₂)`` (``len(ladder)`` if
    none): where the reduced flow is linear to ``lin_const`` under the O(ε) perturbation."""
    e_hi = min(eps_max, lin_const / c2) if c2 > 0 else eps_max
    below = np.flatnonzero(ladder <= e_hi * (1 + 1e-9))
    return int(below[0]) if below.size else len(ladder)


def error_rates(inst: Instance, linearity: dict) -> dict:
    """The rate rule, in one place: ``{order name: asymptotic_slope result + start_eps}``.

    For each order ``k`` (1 for the leading order, 2 for the first order) the ladder
    ``ε_j = eps_max · 10^(−j/4)`` down to the order's floor is walked from the start that the
    linearity constant chooses (:func:`rate_window_start`), evaluating the error lazily, by
    :func:`verify.measure.asymptotic_slope`: the first window of ``window`` consecutive points whose
    local slopes spread by at most ``tol/2`` is the asymptotic window, and the rate holds when the
    95% interval of its fitted slope lies in ``[k − tol, k + tol]``.
    """
    p = inst.p
    results = {}
    for name, spec in RATE_ORDERS.items():
        ladder = eps_ladder(p["eps_max"], p[spec["floor"]])
        start = rate_window_start(ladder, p["eps_max"], p["lin_const"], linearity[name]["c2"])
        res = asymptotic_slope(
            ladder,
            getattr(inst, spec["error"]),
            spec["rate"],
            p[spec["tol"]],
            start=start,
            window=p["window"],
        )
        res["start_eps"] = float(ladder[start]) if start < len(ladder) else None
        results[name] = res
    return results


def exponential_decay_rate(t: np.ndarray, dev: np.ndarray) -> float:
    """``−`` the slope of the least-squares line through ``(t, log dev)``: the rate ``r`` of
    ``dev ≈ C e^{−rt}`` (a semi-log fit)."""
    return float(-np.polyfit(t, np.log(dev), 1)[0])


def slow_deviation(inst: Instance):
    """The deviation from the manifold whose decay gives the attraction rate, as a function of
    ``X − εH₁``: ``(I − UB)·`` for a named mask (its modes are well separated); for your own mask
    its component along the left eigenvectors of the slowest eigenvalues
    (:func:`numerics.model.masks.slowest_left_eigenvectors`), which decays exactly at ``1 − λ₂``
    where several of your kernel's modes lie within a few percent of the slowest rate (the whole
    deviation mixes them in the fitted band)."""
    if isinstance(inst.cfg.mask, str):
        Pperp = np.eye(inst.cfg.T) - inst.U @ inst.B
        return lambda D: np.linalg.norm(Pperp @ D)
    W = slowest_left_eigenvectors(inst.cfg.mask_array)
    return lambda D: np.linalg.norm(W.conj().T @ D)


def attraction_rate(inst: Instance, eps: float) -> dict:
    """Decay rate of the deviation :func:`slow_deviation` of ``X(t) − εH₁`` from a generic start
    (``‖(I − UB)(X(t) − εH₁)‖`` for a named mask), fitted where it is within
    :data:`ATTRACTION_FIT_BAND` of its initial value (linear regime, above the O(ε²) floor),
    against ``(1 − λ₂)/ε + γ``."""
    lam2 = second_eigenvalue(inst)
    predicted = (1.0 - lam2) / eps + inst.cfg.gamma
    t_end = min(30.0 / predicted, 1.0 / inst.model.L)
    t = np.linspace(0.0, t_end, ATTRACTION_SAMPLES)
    X0 = inst.U @ inst.Y0 + inst.Z0
    res = integrate_coupling(
        inst.model, X0, eps, E=inst.E, t_eval=t, method=inst.p["method"], **ATTRACTION_TOL
    )
    H = eps * inst.H1(0, inst.Y0)
    deviation = slow_deviation(inst)
    dev = np.array([deviation(X - H) for X in res.extra["X"]])
    rel = dev / dev[0]
    lo, hi = ATTRACTION_FIT_BAND
    sel = (rel < hi) & (rel > lo)
    out = {
        "predicted": float(predicted),
        "lambda2": lam2,
        "lambda2_from": spectrum_source(inst),
        "eps": eps,
        "t": t,
        "deviation": dev,
        "n_fit": int(sel.sum()),
    }
    if sel.sum() < 3:
        return {**out, "rate": float("nan"), "ratio": float("nan")}
    rate = exponential_decay_rate(t[sel], dev[sel])
    return {**out, "rate": rate, "ratio": ratio(rate, predicted)}


def critical_manifold_residuals(inst: Instance, rng) -> dict:
    """``|(A(X) − I)X|`` on block-constant states (0 to rounding for block-local masks) and on
    generic states (not 0), and the central-difference JVP of the fast part at ``UY`` against
    ``(K − I)δX`` (the softmax-derivative term ``DA[δX]·UY`` vanishes on the manifold)."""
    cfg = inst.cfg
    on, off, jvp_dev = 0.0, np.inf, 0.0
    for lp in inst.model.layers:
        X = inst.U @ rng.standard_normal(inst.Y0.shape)
        on = max(on, float(np.abs(nm.attention_kernel(cfg, lp, X) @ X - X).max()))
        Xg = X + rng.standard_normal(X.shape)
        off = min(off, float(np.abs(nm.attention_kernel(cfg, lp, Xg) @ Xg - Xg).max()))

        def fast(Z, lp=lp):
            return nm.attention_kernel(cfg, lp, Z) @ Z - Z

        dX = rng.standard_normal(X.shape)
        jvp = central_difference(fast, X, dX, JVP_STEP)
        normal = (inst.K - np.eye(cfg.T)) @ dX
        dev = relative_error(jvp, normal, scale=max(1.0, np.abs(dX).max()), norm="max")
        jvp_dev = max(jvp_dev, dev)
    return {"block_constant": on, "generic": off, "normal_jvp_dev": jvp_dev}


def first_order_better(inst: Instance, first_order: dict) -> np.ndarray:
    """At every ε of the first-order window, whether the first-order error is below the
    leading-order one (the leading-order error at the same ε, cached where evaluated)."""
    w = first_order["window"]
    win = [e for e in first_order["h"] if w and w[1] <= e <= w[0]]
    return np.array([inst.error_first(e) < inst.error_leading(e) for e in win], dtype=bool)


def integrator_agreement(inst: Instance, rates: dict) -> dict:
    """The largest relative deviation of the error from the other stiff method, at the finest ε of
    each order's window (``eps_max`` where there is none), and those ε."""
    p = inst.p
    other = OTHER_METHOD[p["method"]]
    dev, at_eps = 0.0, {}
    for name, spec in RATE_ORDERS.items():
        w = rates[name]["window"]
        e = float(w[1]) if w else float(p["eps_max"])
        err_of = getattr(inst, spec["error"])
        at_eps[name] = e
        dev = max(dev, relative_error(err_of(e, other), err_of(e), norm="max"))
    return {"deviation": dev, "eps": at_eps, "other": other}


def reduced_trajectory_points(inst: Instance) -> list:
    """``[(segment, Y, ε)]`` along the first-order reduced trajectory at ``eps_max``: two depths
    per layer, off the breakpoints."""
    p = inst.p
    L = inst.model.L
    t_pts = np.sort(np.concatenate([(np.arange(L) + 0.25) / L, (np.arange(L) + 0.75) / L]))
    _, traj = inst.reduced(1, float(p["eps_max"]), inst.Y0, p["rtol"], p["atol"], t_eval=t_pts)
    return [
        (inst.seg(t), traj.y[:, k].reshape(inst.Y0.shape), float(p["eps_max"]))
        for k, t in enumerate(traj.t)
    ]


def theory_against_numerics(inst: Instance, points) -> dict | None:
    """The theory's reduced fields (for the instance's mask, its own coarse vector) against the
    numerical formulas at ``points`` ``[(segment, Y, ε)]``: max relative deviations of ``H₁``,
    ``f0``, ``f1``, and the curvature size; with the symbolic normal structure of
    :func:`symbolic_normal_structure`. ``None`` when the theory has no derivation (a mask that is
    not a block mask, see :func:`theory_derivation`). For your own mask the coarse vectors are also
    compared with the numerical stationary weighting (``coarse_vs_numerics``) and the normal rate
    with the numerical spectrum (``normal_rate_vs_numerics``)."""
    cfg = inst.cfg
    if inst.theory_keys is None:
        return None
    Lt = theory_coarse_map(cfg, inst.theory_keys)
    K = frozen_kernel(cfg.mask, cfg.T, cfg.P) if isinstance(cfg.mask, str) else inst.K
    theory = inst.flows if inst.source == "theory" else {k: inst.theory_flow(k) for k in (0, 1)}
    num = {k: NumericReduction(k, inst, K, Lt) for k in (0, 1)}
    dev = {"H1": 0.0, "f0": 0.0, "f1": 0.0}
    curv = 0.0
    for l, Y, eps in points:
        H = num[1].H1(l, Y)
        dev["H1"] = max(dev["H1"], relative_error(theory[1].H1(l, Y), H, norm="max"))
        dev["f0"] = max(dev["f0"], relative_error(theory[0](l, Y), num[0](l, Y), norm="max"))
        dev["f1"] = max(
            dev["f1"], relative_error(theory[1](l, Y, eps), num[1](l, Y, eps), norm="max")
        )
        curv = max(curv, float(np.abs(Lt @ num[1].curvature(l, Y, H)).max()))
    out = {
        "max_rel": dev,
        "n_points": len(points),
        "curvature_max": curv,
        **symbolic_normal_structure(cfg, inst.theory_keys),
    }
    if not isinstance(cfg.mask, str):
        stationary = coarse_maps(cfg.mask_array, cfg.T, cfg.P)[1].T
        out["coarse_vs_numerics"] = float(np.abs(Lt - stationary).max())
        rate = 1.0 - second_eigenvalue(inst)
        out["normal_rate_vs_numerics"] = abs(out["normal_rate_symbolic"] - rate)
    return out


def symbolic_normal_structure(cfg, keys: list) -> dict:
    """From :func:`theory.slow_manifold.block_reduction` of each distinct block mask in ``keys``:
    whether the curvature is identically 0, the structural checks (a), (b), the kernel against
    numerics' ``K`` block, whether the normal Jacobian is exactly ``(K − I) ⊗ I_d``, the normal rate
    (the smallest over the blocks) and the derivations' timings."""
    P, d = cfg.P, cfg.d
    reds = {k: block_reduction(k, P, d, cfg.norm, cfg.m, cfg.sigma) for k in dict.fromkeys(keys)}
    Kn = frozen_kernel(cfg.mask_array)
    kernel_dev = 0.0
    for b, key in enumerate(keys):
        kern = np.array(reds[key].kernel.tolist(), dtype=float)
        block = Kn[b * P : (b + 1) * P, b * P : (b + 1) * P]
        kernel_dev = max(kernel_dev, float(np.abs(kern - block).max()))
    red_list = list(reds.values())
    return {
        "curvature_identically_zero": all(
            all(e == 0 for e in r.curvature_placeholders) for r in red_list
        ),
        "scores_row_constant": all(bool(r.scores_row_constant) for r in red_list),
        "softmax_rows_annihilate_ones": all(bool(r.softmax_rows_annihilate_ones) for r in red_list),
        "kernel_vs_numerics": kernel_dev,
        "normal_jacobian_is_kron": all(
            bool(r.normal_jacobian == sp.kronecker_product(r.kernel - sp.eye(P), sp.eye(d)))
            for r in red_list
        ),
        "normal_rate_symbolic": min(float(r.normal_rate) for r in red_list),
        "derive_seconds": float(sum(r.derive_seconds for r in red_list)),
        "lambdify_seconds": float(sum(r.lambdify_seconds for r in red_list)),
    }


# ----------------------------------------------------------------------------- series (figures)


def error_sweep(inst: Instance, eps_values, method: str | None = None) -> dict:
    """Errors of the leading- and first-order reductions at ``t = 1`` for each ε (the instance
    caches them per ε, so the rate rule and the series share the full flows)."""
    eps_values = np.asarray(eps_values, dtype=float)
    return {
        "eps": eps_values,
        "err_leading": np.array([inst.error_leading(e, method) for e in eps_values]),
        "err_first": np.array([inst.error_first(e, method) for e in eps_values]),
        "fibre_offset": float(np.linalg.norm(inst.Y_fib - inst.Lt @ inst.X0_generic)),
    }


def error_ladder(inst: Instance) -> dict:
    """Both orders' errors on the whole ladder ``eps_max … eps_floor_first`` and, per order, the
    window rule of :func:`verify.measure.asymptotic_slope` applied from the top of that ladder
    (``fit_leading``, ``fit_first_order``: slope, 95% interval, window, converged)."""
    p = inst.p
    sw = error_sweep(inst, eps_ladder(p["eps_max"], p["eps_floor_first"]))
    out = {k: sw[k].tolist() for k in ("eps", "err_leading", "err_first")}
    for (name, spec), key in zip(RATE_ORDERS.items(), ("err_leading", "err_first")):
        err_at = dict(zip(out["eps"], out[key]))
        fit = asymptotic_slope(
            sw["eps"], err_at.__getitem__, spec["rate"], p[spec["tol"]], window=p["window"]
        )
        out[f"fit_{name}"] = {k: fit[k] for k in ("slope", "ci95", "window", "converged")}
    return out


def depth_trajectory(inst: Instance) -> dict:
    """The full flow at ``ε = TRAJECTORY_EPS`` (Rosenbrock-W) from the generic start on
    :data:`TRAJECTORY_T`: the distance ``‖(I − UB)X(t)‖`` to the block-constant states, the level
    ``ε‖H₁‖`` of the first-order slow manifold, the layer breakpoints, and feature 0 of the block
    means and of the leading-order reduced flow from the fibre base point (first blocks)."""
    eps, t = TRAJECTORY_EPS, TRAJECTORY_T
    U, B = inst.U, inst.B
    res = integrate_coupling(
        inst.model, inst.X0_generic, eps, E=inst.E, t_eval=t, method="rosw", **TRAJECTORY_TOL
    )
    X = res.extra["X"]
    _, red = inst.reduced(0, 0.0, inst.Y_fib, t_eval=t, **TRAJECTORY_TOL)
    Yred = red.y.T.reshape(len(t), *inst.Y0.shape)
    dev = np.array([np.linalg.norm(x - U @ (B @ x)) for x in X])
    BX = np.einsum("nt,ktd->knd", B, X)
    blocks = range(min(TRAJECTORY_BLOCKS, BX.shape[1]))
    return {
        "eps": eps,
        "t": t.tolist(),
        "dev": dev.tolist(),
        "first_order_level": float(eps * np.linalg.norm(inst.H1(0, inst.Y0))),
        "breaks": np.asarray(inst.breaks, dtype=float).tolist(),
        "block_means": [BX[:, n, 0].tolist() for n in blocks],
        "reduced": [Yred[:, n, 0].tolist() for n in blocks],
    }


# ----------------------------------------------------------------------------- conclusion parts


def rate_parts(p: dict, rates: dict) -> dict:
    """(c), (d) and the existence of both asymptotic windows."""
    r0, r1 = rates["leading"], rates["first_order"]
    tol0, tol1 = p["slope_tol0"], p["slope_tol1"]
    return {
        "leading_order_error_O_eps": Diagnostic(
            r0["holds"],
            {"slope": r0["slope"], "ci95": r0["ci95"], "window": r0["window"]},
            f"95% interval of the slope over the asymptotic window ⊂ [1 − {tol0}, 1 + {tol0}]",
        ),
        "first_order_error_O_eps2": Diagnostic(
            r1["holds"],
            {"slope": r1["slope"], "ci95": r1["ci95"], "window": r1["window"]},
            f"95% interval of the slope over the asymptotic window ⊂ [2 − {tol1}, 2 + {tol1}]",
        ),
        "asymptotic_windows_found": Diagnostic(
            r0["converged"] and r1["converged"],
            {"leading": r0["window"], "first_order": r1["window"]},
            f"for each order, {p['window']} consecutive ladder points above its floor "
            f"(leading ≥ {p['eps_floor_leading']:g}, first ≥ {p['eps_floor_first']:g}) whose "
            "local slopes spread ≤ tol/2",
        ),
    }


def critical_parts(crit: dict) -> dict:
    """(a) the critical manifold and (b) the normal linearity of the fast part."""
    return {
        "block_constant_states_critical": at_most(
            crit["block_constant"], CRITICAL_TOL, f"max |(A(UY) − I)UY| ≤ {CRITICAL_TOL}"
        ),
        "generic_states_not_critical": Diagnostic(
            crit["generic"] > GENERIC_MIN,
            crit["generic"],
            f"min max |(A(X) − I)X| > {GENERIC_MIN}",
        ),
        "fast_part_normally_linear": at_most(
            crit["normal_jvp_dev"],
            NORMAL_LINEAR_TOL,
            f"|JVP − (K − I)δX| / max(1, |δX|) ≤ {NORMAL_LINEAR_TOL}",
        ),
    }


def attraction_part(rate: dict, rate_tol: float) -> Diagnostic:
    """(b) the measured attraction rate against ``(1 − λ₂)/ε + γ``."""
    r = rate["ratio"]
    return Diagnostic(
        bool(np.isfinite(r) and abs(r - 1.0) <= rate_tol),
        r,
        f"|rate/predicted − 1| ≤ {rate_tol} (λ₂ = {rate['lambda2']:g}, {rate['lambda2_from']})",
    )


def first_order_better_part(better: np.ndarray) -> Diagnostic:
    """The first-order reduction beats the leading one at every ε of its window."""
    return Diagnostic(
        bool(better.size and better.all()),
        {"n_eps": int(better.size), "n_not_better": int((~better).sum())},
        "number of ε of the first-order window with err_first ≥ err_leading; 0 required (and a "
        "non-empty window)",
    )


def integrators_part(integ: dict, method: str) -> Diagnostic:
    """The two stiff integrators give the same errors."""
    return at_most(
        integ["deviation"],
        INTEGRATOR_RTOL,
        f"{method} vs {integ['other']} at the finest ε of each order's "
        f"window: max relative error deviation ≤ {INTEGRATOR_RTOL}",
    )


def normal_structure_part(th: dict, lambda2: float) -> Diagnostic:
    """(b) from theory/: the structural checks, the kernel against numerics' ``K`` block, the normal
    Jacobian and the normal rate against ``1 − λ₂`` (exactly for a named mask; for your own mask to
    :data:`NORMAL_RATE_TOL`, with the coarse vector against the numerical stationary weighting to
    :data:`COARSE_TOL`)."""
    shown = ["kernel_vs_numerics", "normal_jacobian_is_kron", "normal_rate_symbolic"]
    ok = (
        th["scores_row_constant"]
        and th["softmax_rows_annihilate_ones"]
        and th["kernel_vs_numerics"] == 0.0
        and th["normal_jacobian_is_kron"]
    )
    rule = (
        "kernel = numerics' K block (float), normal Jacobian = (K − I) ⊗ I_d (exact, "
        "rational), normal rate = 1 − λ₂ (closed form)"
    )
    if "coarse_vs_numerics" in th:  # your own mask: numerics computes L and λ₂ numerically
        ok = (
            ok
            and th["normal_rate_vs_numerics"] <= NORMAL_RATE_TOL
            and th["coarse_vs_numerics"] <= COARSE_TOL
        )
        shown += ["normal_rate_vs_numerics", "coarse_vs_numerics"]
        rule = (
            "kernel = numerics' K block (float), normal Jacobian = (K − I) ⊗ I_d (exact, "
            f"rational), normal rate 1 − max Re λ (exact) = 1 − λ₂ (numerical eigenvalues) to "
            f"{NORMAL_RATE_TOL:g}, coarse vector (exact) = numerics' stationary weighting to "
            f"{COARSE_TOL:g}"
        )
    else:
        ok = ok and th["normal_rate_symbolic"] == 1.0 - lambda2
    return Diagnostic(ok, {k: th[k] for k in shown}, rule)


def symbolic_parts(th: dict | None, lambda2: float, no_theory: str) -> dict:
    """The symbolic normal structure, the theory field against the numerical formulas and the
    curvature term (all three fail, with the reason ``no_theory``, where the theory has no
    derivation)."""
    names = (
        "symbolic_normal_structure",
        "theory_agrees_with_numerical_formulas",
        "curvature_term_as_derived",
    )
    if th is None:
        why = f"no symbolic derivation: {no_theory}"
        return {name: Diagnostic(False, None, why) for name in names}
    m = th["max_rel"]
    if th["curvature_identically_zero"]:
        curvature = at_most(
            th["curvature_max"],
            CURVATURE_ZERO,
            f"symbolic curvature ≡ 0: numerical max |·| ≤ {CURVATURE_ZERO}",
        )
    else:
        curvature = Diagnostic(
            th["curvature_max"] > CURVATURE_MIN,
            th["curvature_max"],
            f"symbolic curvature ≢ 0: numerical max |Lᵀ DA[H₁]H₁| > {CURVATURE_MIN}",
        )
    return {
        "symbolic_normal_structure": normal_structure_part(th, lambda2),
        "theory_agrees_with_numerical_formulas": Diagnostic(
            all(m[k] <= THEORY_TOL[k] for k in THEORY_TOL),
            m,
            f"max relative deviation at {th['n_points']} points: H₁, f0 ≤ {THEORY_TOL['H1']:g}, "
            f"f1 ≤ {THEORY_TOL['f1']:g}",
        ),
        "curvature_term_as_derived": curvature,
    }


# ----------------------------------------------------------------------------- figures, notes


def rate_figures(rates: dict, linearity: dict) -> dict:
    """The measured rates, windows, evaluated ladders and linearity constants of both orders."""
    figures = {}
    for name, res in rates.items():
        figures.update(
            {
                f"slope_{name}": res["slope"],
                f"slope_{name}_ci95": res["ci95"],
                f"window_{name}": res["window"],
                f"eps_{name}": res["h"],
                f"err_{name}": res["err"],
                f"local_slopes_{name}": res["local_slopes"],
                f"window_start_{name}": res["start_eps"],
                f"c2_{name if name == 'leading' else 'first'}": linearity[name]["c2"],
            }
        )
    return figures


def verdict_figures(inst, linearity, rates, rate, crit, integ, th) -> dict:
    """Every measured number of the verdict (``full_flow_work``: the full flows it used)."""
    return {
        **rate_figures(rates, linearity),
        "linearity": linearity,
        "rho_min": min(linearity["leading"]["rho_min"], linearity["first_order"]["rho_min"]),
        "attraction_rate": rate["rate"],
        "attraction_rate_predicted": rate["predicted"],
        "attraction_rate_ratio": rate["ratio"],
        "lambda2": rate["lambda2"],
        "critical_residual_block_constant": crit["block_constant"],
        "critical_residual_generic_min": crit["generic"],
        "normal_jvp_deviation": crit["normal_jvp_dev"],
        "coarse_variable": inst.coarse,
        "reduced_flow_source": inst.source,
        "fibre_base_point_shift": float(np.linalg.norm(inst.Y_fib - inst.Lt @ inst.X0_generic)),
        "full_flow_work": list(inst.work),
        "integrator_error_deviation": integ["deviation"],
        "integrator_check_eps": integ["eps"],
        "theory": th,
    }


def tolerances(p: dict) -> dict:
    """The tolerances the verdict used, in the units their keys state."""
    return {
        "slope_leading_ci_within": p["slope_tol0"],
        "slope_first_order_ci_within": p["slope_tol1"],
        "window_local_slope_spread": [p["slope_tol0"] / 2, p["slope_tol1"] / 2],
        "attraction_rate_rel": p["rate_tol"],
        "critical_residual_abs": CRITICAL_TOL,
        "theory_H1_rel": THEORY_TOL["H1"],
        "theory_f0_rel": THEORY_TOL["f0"],
        "theory_first_order_rel": THEORY_TOL["f1"],
        "integrators_rel": INTEGRATOR_RTOL,
    }


def method_note(inst: Instance) -> str:
    """Which integrators and which reduced flows the errors come from."""
    return (
        f"full flow: numerics.integrators method={inst.p['method']!r} (radau: Radau IIA order 5; "
        "rosw: Rosenbrock-W ROS34PW2), W = ((A−I)/ε − γI) ⊗ I_d; reduced flows: DOPRI5 on "
        + (
            "theory.slow_manifold.reduced_rhs (SymPy derivation of this configuration)"
            if inst.source == "theory"
            else "the numerical block reduction (no derivation exists for this mask/coarse map)"
            if sigma_is_smooth(inst.cfg.sigma)
            else f"the numerical block reduction (no derivation exists for σ = {inst.cfg.sigma!r})"
        )
        + "; errors relative Frobenius at t = 1"
    )


# ----------------------------------------------------------------------------- the claim


class F1(Claim):
    id = "F1"
    title = "Tikhonov along depth"
    abstract = "a fast-slow, singularly perturbed flow along depth"
    statement = (
        "For block-local masks the critical manifold is the block-constant states, "
        "attracting at rate (1 − λ₂)/ε; the reduced flow is O(ε)-accurate and the "
        "first-order one O(ε²)."
    )
    params = {
        **model_params(
            T=dict(default=6, low=2, high=64),
            P=dict(
                default=3,
                meaning="tokens per block (≥ 2: a block with fast dynamics; ≤ 4: the symbolic "
                "derivation's cost)",
                low=2,
                high=4,
            ),
            d=dict(default=2, meaning="features (≤ 4: the symbolic derivation's cost)", high=4),
            L=dict(
                default=2,
                meaning="layers (piecewise-constant weights on L depth intervals)",
                high=16,
            ),
            mask="block_bidirectional",
        ),
        "coarse": Param(
            "auto",
            "coarse map Lᵀ: auto (first token for block_causal, the stationary weighting of "
            "your own block-local mask, block mean otherwise), mean or first",
            choices=COARSE,
        ),
        **model_params(
            norm=dict(meaning="RMS norm before attention, MLP and slow path"),
            gamma=dict(
                default=1.0,
                meaning="injection strength γ (eps_max·γ·max(1, scale)² ≤ 1)",
            ),
            gate=dict(
                default=0.5,
                meaning="gate g of every layer (0 switches the slow path off)",
                low=-10.0,
                high=10.0,
            ),
            scale=dict(meaning="scale of the weights", high=10.0),
        ),
        "x_scale": Param(1.0, "scale of the initial data", low=1e-3, high=10.0),
        "eps_max": Param(
            1e-1,
            "largest ε of the ladder ε_j = eps_max·10^(−j/4) (≤ 0.3: the asymptotic regime; "
            "≤ 1/(γ·max(1, scale)²): the first-order reduced flow stays non-stiff)",
            low=1e-6,
            high=0.3,
        ),
        "eps_floor_leading": Param(
            1e-5, "smallest ε the leading-order rate rule may use", low=1e-8, high=0.3
        ),
        "eps_floor_first": Param(
            1e-4,
            "smallest ε the first-order rate rule may use (its error "
            "reaches the integrator floor at rtol 1e-9 below)",
            low=1e-8,
            high=0.3,
        ),
        "window": Param(5, "ladder points per asymptotic window (one decade at 5)", low=3, high=17),
        "lin_const": Param(
            0.05,
            "the rate rule starts at the largest ladder ε ≤ lin_const/c₂ "
            "(c₂ the reduced-flow linearity constant)",
            low=1e-6,
            high=10.0,
        ),
        "rate_eps": Param(1e-4, "ε at which the attraction rate is measured", low=1e-7, high=1e-1),
        "rate_tol": Param(
            0.05, "allowed |measured/predicted attraction rate − 1|", low=0.0, high=1.0
        ),
        "method": Param(
            "radau",
            "stiff integrator of the full flow (the other one cross-checks)",
            choices=METHODS,
        ),
        "rtol": Param(1e-9, "relative tolerance of the flows", low=1e-13, high=1e-3),
        "atol": Param(1e-11, "absolute tolerance of the flows", low=1e-15, high=1e-3),
        "slope_tol0": Param(
            0.1, "allowed |slope₀ − 1| and largest 95% half-width", low=0.0, high=10.0
        ),
        "slope_tol1": Param(
            0.2, "allowed |slope₁ − 2| and largest 95% half-width", low=0.0, high=10.0
        ),
    }
    hypotheses = {name: meaning for name, (meaning, _) in HYPOTHESIS_DIAGNOSTICS.items()}
    hypothesis_sources = {
        "fast_mask_block_local": "implementation",
        "coarse_map_is_left_eigenprojector": "implementation",
        "normally_hyperbolic": "implementation",
        "initial_state_in_basin": "implementation",
        "reduced_solution_exists": "implementation",
        "mlp_nonlinearity_smooth": "input",
        "first_order_correction_nonzero": "implementation",
        "asymptotic_regime_resolvable": "implementation",
    }
    conclusion = {
        "block_constant_states_critical": f"(a) max |(A(UY) − I)UY| ≤ {CRITICAL_TOL} at random Y, every layer",
        "generic_states_not_critical": f"(a) min over layers of max |(A(X) − I)X| > {GENERIC_MIN} at generic X",
        "fast_part_normally_linear": "(b) the JVP of (A(X) − I)X at UY is (K − I)δX (central "
        f"difference, ≤ {NORMAL_LINEAR_TOL}·max(1, |δX|))",
        "symbolic_normal_structure": "(b) theory/: scores row-constant on 1yᵀ, softmax derivatives "
        "annihilate 1, kernel = numerics' K block, normal Jacobian = "
        "(K − I) ⊗ I_d (exact), normal rate 1 − λ₂",
        "attraction_rate": "(b) |measured decay rate of (I − UB)(X − εH₁) / ((1 − λ₂)/ε + γ) − 1| ≤ rate_tol",
        "leading_order_error_O_eps": "(c) the 95% interval of the leading-order error's slope over its "
        "asymptotic window lies in [1 − slope_tol0, 1 + slope_tol0]",
        "first_order_error_O_eps2": "(d) the 95% interval of the first-order error's slope over its "
        "asymptotic window lies in [2 − slope_tol1, 2 + slope_tol1]",
        "asymptotic_windows_found": "each order's error curve has an asymptotic window (window "
        "consecutive ladder points, local slopes spread ≤ tol/2) above "
        "its floor",
        "first_order_better_at_every_eps": "the first-order error is below the leading-order error at "
        "every ε of the first-order asymptotic window",
        "theory_agrees_with_numerical_formulas": "the theory reduced field agrees with the numerical formulas at points along the reduced "
        f"trajectory: H₁ and f0 to {THEORY_TOL['H1']:g}, f1 to {THEORY_TOL['f1']:g} relative",
        "curvature_term_as_derived": f"where the symbolic curvature is not identically 0, its size > "
        f"{CURVATURE_MIN} (Q, K enter at order ε); where it is, the "
        f"numerical one is ≤ {CURVATURE_ZERO}",
        "integrators_agree": f"at the finest ε of each order's window the error from the other "
        f"stiff method agrees to {INTEGRATOR_RTOL:g} relative",
    }
    controls = (
        Control(
            "global_causal_mask",
            {"mask": "causal"},
            breaks="fast_mask_block_local",
            meaning="the global causal mask couples all blocks: its critical manifold is the "
            "constants, so the block reduction's error stays O(1)",
            seed=0,
        ),
        Control(
            "block_causal_block_mean",
            {"mask": "block_causal", "coarse": "mean"},
            breaks="coarse_map_is_left_eigenprojector",
            meaning="the block mean is not the coarse variable of block_causal (its kernel is "
            "not doubly stochastic): the error does not shrink with ε",
            seed=1,
        ),
    )
    key_figures = (
        "slope_leading",
        "slope_leading_ci95",
        "slope_first_order",
        "slope_first_order_ci95",
        "window_leading",
        "window_first_order",
        "attraction_rate_ratio",
    )
    instance = Instance
    systems = (DepthFlow,)

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.DepthFlow` within F1's size limits (bad input otherwise)."""
        super().accepts(system)
        for key in USER_FLOW_LIMITS:
            try:
                self.params[key].validate(key, getattr(system, key))
            except ValueError as exc:
                raise ValueError(
                    f"{system.name}: {exc}. F1 applies the limits of its own parameters to your "
                    "DepthFlow (T ≤ 64, 2 ≤ P ≤ 4, d ≤ 4, L ≤ 16, 0 ≤ γ ≤ 100, |gate| ≤ 10, "
                    "scale ≤ 10): the symbolic derivation of each block and the stiff full flows"
                ) from None
        if not isinstance(system.sigma, str):
            raise ValueError(
                f"{system.name}: sigma {system.sigma!r} is not a named activation; F1 integrates "
                "the full flow with the compiled right-hand side, which evaluates only the named ones"
            )

    def build_system(self, p, seed, system):
        """The F1 instance of your flow: its model (mask, sizes, σ, norm, γ, gate, scales, seed)
        with the injection target and the start of the check's ``seed``
        (:func:`~numerics.model.coupling.coupling_problem` given your model)."""
        fields = ("T", "P", "d", "L", "mask", "norm", "gamma", "gate", "scale", "sigma")
        q = {**p, **{k: getattr(system, k) for k in fields}}
        return Instance(q, seed, coupling_problem(p, seed, model=system.model()))

    def validate(self, p):
        stiff = p["gamma"] * max(1.0, p["scale"]) ** 2
        if p["eps_max"] * stiff > STIFFNESS_MAX:
            raise ValueError(
                f"parameters eps_max={p['eps_max']:g}, gamma={p['gamma']:g}, "
                f"scale={p['scale']:g}: expected eps_max·γ·max(1, scale)² ≤ {STIFFNESS_MAX:g}, "
                f"i.e. eps_max ≤ {STIFFNESS_MAX / stiff:.3g} (beyond it the first-order reduced "
                "flow is stiff: at γ = 100, ε = 0.1 its integration failed after 6·10⁶ "
                "evaluations, 490 s)"
            )
        for floor in ("eps_floor_leading", "eps_floor_first"):
            n = len(eps_ladder(p["eps_max"], p[floor])) if p[floor] <= p["eps_max"] else 0
            if n < p["window"]:
                raise ValueError(
                    f"parameter {floor}={p[floor]:g}: expected at most eps_max·10^(−(window − 1)/4) "
                    f"= {p['eps_max'] * 10 ** (-(p['window'] - 1) / 4):g} (a ladder from "
                    f"eps_max={p['eps_max']:g} must hold window={p['window']} points)"
                )

    def work(self, p):
        """The first check's symbolic derivation and compilation, the reduced flows (Python
        fields of ``T·d`` units; one per first-order ladder point and :data:`EXTRA_REDUCED_FLOWS`
        more, each :data:`NFEV_BASE` evaluations scaled by ``(1e-9/rtol)^(1/5)``, plus the stiff
        part :data:`NFEV_STIFF`·ε·γ²·max(1, scale)² summed over the ladder and three flows at
        ``eps_max``) and the full flows (compiled, ``L`` layers, a dense LU of size ``T·d`` per
        layer; two per ladder point and :data:`EXTRA_FULL_FLOWS` more). For your own flow the
        model's sizes are those of F1's parameters, not your flow's."""
        ladder = eps_ladder(p["eps_max"], min(p["eps_floor_first"], p["eps_max"]))
        deep = eps_ladder(p["eps_max"], min(p["eps_floor_leading"], p["eps_max"]))
        n_flows = len(ladder) + EXTRA_REDUCED_FLOWS
        stiffness = p["gamma"] ** 2 * max(1.0, p["scale"]) ** 2
        stiff = NFEV_STIFF * stiffness * (ladder.sum() + 3 * p["eps_max"])
        nfev = n_flows * NFEV_BASE * (1e-9 / p["rtol"]) ** 0.2 + stiff
        full = len(ladder) + len(deep) + EXTRA_FULL_FLOWS
        T, d, L = p["T"], p["d"], p["L"]
        return {
            "start": 1,
            "compile": 1,
            "derivation": 1,
            "python_call": nfev,
            "field_unit": nfev * T * d,
            "full_flow": full,
            "full_flow_layer": full * L,
            "factor_cube": full * L * (T * d) ** 3,
        }

    def diagnose(self, inst):
        return {name: fn(inst) for name, (_, fn) in HYPOTHESIS_DIAGNOSTICS.items()}

    def conclude(self, inst):
        p = inst.p
        # the reduced-flow linearity constants (reduced flows only): where the rate rule starts
        linearity = inst.linearity
        rates = error_rates(inst, linearity)
        rate = attraction_rate(inst, p["rate_eps"])
        crit = critical_manifold_residuals(inst, np.random.default_rng(inst.check_rng_seed))
        better = first_order_better(inst, rates["first_order"])
        integ = integrator_agreement(inst, rates)
        th = theory_against_numerics(inst, reduced_trajectory_points(inst))
        parts = {
            **rate_parts(p, rates),
            **critical_parts(crit),
            "attraction_rate": attraction_part(rate, p["rate_tol"]),
            "first_order_better_at_every_eps": first_order_better_part(better),
            "integrators_agree": integrators_part(integ, p["method"]),
            **symbolic_parts(th, rate["lambda2"], inst.no_theory_reason),
        }
        figures = verdict_figures(inst, linearity, rates, rate, crit, integ, th)
        # after the verdict's measurements: the series' extra full flows are not in its work
        series = {"error_ladder": error_ladder(inst), "depth_trajectory": depth_trajectory(inst)}
        return Conclusion(
            parts,
            figures,
            tolerance=tolerances(p),
            notes=[method_note(inst)],
            series=series,
        )


CLAIM = F1()
