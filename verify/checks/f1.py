"""F1 — Tikhonov along depth: collapse onto block-constant states, then slow drift.

Statement (``docs/claims.md``). For ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)`` with a block-local
mask: (a) the critical manifold ``{(A(X) − I)X = 0}`` is the set of block-constant states
``X = UY``; (b) it attracts at the rate ``(1 − λ₂)/ε`` (``λ₂`` the largest eigenvalue of the frozen
kernel ``K_mask`` below 1: 0 for ``block_bidirectional``, 1/2 for ``block_causal``; with injection
the deviation decays at ``(1 − λ₂)/ε + γ``); (c) ``‖X(1) − UY₀(1)‖ = O(ε)`` with
``dY₀/dt = Lᵀ R_t(UY₀)``; (d) with ``X = UY + εH₁`` and
``dY/dt = Lᵀ R_t(UY + εH₁) + ε Lᵀ DA_{UY}[H₁] H₁`` the error is O(ε²).

Hypotheses (:data:`HYPOTHESIS_DIAGNOSTICS`: those of Tikhonov's theorem, decided on the instance
before the conclusion):

* ``fast_mask_block_local``: no mask entry outside the diagonal ``P×P`` blocks;
* ``coarse_map_is_left_eigenprojector``: ``‖LᵀK − Lᵀ‖ = 0`` and ``LᵀU = I``;
* ``normally_hyperbolic``: ``1 − λ₂ > 0``: the eigenvalue 1 of ``K`` has multiplicity exactly
  ``N`` (closed classes of the mask graph, counted exactly by Boolean reachability) and no other
  eigenvalue has modulus 1 (every closed class aperiodic);
* ``initial_state_in_basin``: the pure fast flow from ``X₀`` reaches the critical manifold,
  ``‖(I − ULᵀ)X_∞‖ ≤ 1e-10·‖X₀‖`` at ``τ =`` :func:`fast_tau`, run on (doubling ``τ``, up to
  8× that) while the end point is still off the manifold (without the norm a large score scale
  can leave the fast flow metastable, far from consensus);
* ``reduced_solution_exists``: the leading-order flow from ``Lᵀ X_∞`` and the first-order flow
  from ``Y₀`` (``ε = eps_max``) integrate to ``t = 1`` with finite values;
* ``mlp_nonlinearity_smooth``: ``σ`` is one the derivation differentiates symbolically (tanh,
  identity, gelu); ``relu`` has no ``σ'`` at 0;
* ``first_order_correction_nonzero``: ``R`` moves block-constant states off the manifold,
  ``(I − ULᵀ)R(UY₀) ≠ 0`` (relative ``> 1e-8``); with ``γ = 0`` (or ``E`` block-constant) the
  block-constant states are exactly invariant and ``H₁ ≡ 0``.

Limits of the check (:attr:`F1.limits`; one that does not hold makes the verdict ``undecided``,
never ``fails``):

* ``asymptotic_regime_resolvable``: per order, the ladder from the largest
  ``ε ≤ min(eps_max, lin_const/c₂)`` down to the order's ``eps_floor_*`` holds ``window`` points
  (:func:`asymptotic_regime_resolvable`, from the reduced flows alone, before any full flow:
  ``c₂`` is the reduced-flow linearity constant, :func:`reduced_linearity`);
* ``rates_resolved``: the rate rule decides each order above the measured accuracy floor
  (:func:`error_rates`);
* ``reference_integrators_agree``: SciPy's Radau and BDF agree with each other at the ε that
  decide the rates, to :func:`agreement_bound` (the tolerances can decide the instance).

When a part that verifies the integrator under test fails (``integrators_agree_with_reference``,
``integrators_achieve_their_order``), the check has decided (``fails``): the limits, measured with
that integrator, are then reported as superseded.

Oracle (how each part is decided):

* Full flow: :func:`numerics.model.coupling.integrate_coupling` (Radau IIA by default,
  ``method="rosw"`` for ROS34PW2), untied weights (piecewise constant on ``L`` intervals,
  breakpoints hit exactly), ``γ > 0`` towards a random non-block-constant ``E``, gate ``g ≠ 0``,
  the RMS norm on or off, all drawn by :func:`numerics.model.coupling.coupling_problem`.
* Reduced flows: from :func:`theory.slow_manifold.reduced_rhs`, the SymPy derivation of ``H₁``,
  of the order-0 field and of the order-1 field (attention curvature included) for the
  configuration that is integrated (the slow path, which couples the blocks, is the one numerical
  input). The numerical formulas (``H₁ = (I − K + Π)⁻¹(I − Π)R(UY)`` by a linear solve, the
  curvature by a Richardson-extrapolated central difference, :data:`CURVATURE_STEP`) cross-check
  them at points along the reduced trajectory (``theory_agrees_with_numerical_formulas``).
  Where the theory derives no reduction (the controls' mask or coarse map) the numerical block
  reduction with that mask and coarse map is integrated: the reduction the controls show wrong.
* Coarse variable ``Y = LᵀX`` (``coarse="auto"``: the first token of each block for
  ``block_causal``, the stationary weighting of your own block-local mask, the block mean
  otherwise). (c) starts from a generic ``X₀``, the reduced flow at the base point ``Lᵀ X_∞`` of
  its fast fibre; (d) starts on the first-order slow manifold ``UY₀ + εH₁``.
* (a): ``|(A(UY) − I)UY| ≤ 1e-12`` on block-constant states, ``> 1e-3`` on generic ones; (b) the
  central-difference JVP of the fast part at ``UY`` is ``(K − I)δX``, theory's normal Jacobian is
  ``(K − I) ⊗ I_d`` exactly, and the attraction rate: the decay of the slowest mode of
  ``X − εH₁`` (:func:`slow_deviation`: the spectral projector of ``K`` onto ``λ₂``, a polynomial
  in ``K`` from the closed-form spectrum, basis-free) at ``ε = rate_eps``, within ``rate_tol`` of
  ``(1 − λ₂)/ε + γ`` (:func:`exponential_decay_rate`).
* (c), (d): the rate rule :func:`verify.measure.asymptotic_slope` (:func:`error_rates`) on the
  ladder ``ε_j = eps_max·10^(−j/4)`` from the start :func:`rate_window_start` chooses
  (``lin_const/c₂``) down to ``eps_floor_*`` and to the accuracy floor: an error is resolved when
  it is at least :data:`verify.measure.RATE_RESOLUTION` times its achieved accuracy, measured at
  each ε as the deviation of ``X(1)`` by our two stiff methods (:meth:`Instance.accuracy`). The
  asymptotic window is the finest straight run of ``window`` resolved points with no drift below
  it; the order is accepted when the 95% interval lies in the band ``k ± slope_tol`` (1 ± 0.05,
  2 ± 0.1): a part fails only when the interval is disjoint from the band and not approaching it.
  ``first_order_better_at_every_eps``: the first-order error is below the leading one over the
  first-order window.
* The integrators: at the ε deciding each rate, our Radau IIA and ROS34PW2 against SciPy's Radau,
  with SciPy's BDF as the reference's own check (:func:`integrator_agreement`; allowed
  disagreement ``REFERENCE_FACTOR·(rtol + √n·atol/‖X(1)‖)``); and each of our methods' fixed-step
  order on a forced pendulum against SciPy's DOP853 (:func:`integrator_orders`).

Negative controls: the global ``causal`` mask (not block-local; its critical manifold is the
constants, so the block reduction's error does not shrink with ε) and ``block_causal`` with the
block mean as coarse variable (not a left eigenvector of the block-causal kernel). Their
hypotheses are decided by the diagnostics above, never by the mask's name.

Series for the figures (not part of the verdict): both orders' errors on the whole ladder with
the rule applied from its top (:func:`error_ladder`) and the flows along depth at ``ε = 1e-2``
(:func:`depth_trajectory`), computed after the verdict's measurements.

Caveats.

* The RMS norm ``n(x) = x/√(mean x² + 1e-6)`` is singular near ``x = 0``: where the reduced
  solution passes near it (``rho_min``, reported) the reduced flow is strongly nonlinear under
  O(ε) perturbations (large ``c₂``), the asymptotic regime starts at small ε and may lie below the
  floors (``undecided``: lower ``eps_floor_*`` with tighter ``rtol``/``atol``).
* ``P ≤ 4``, ``d ≤ 4`` (the cost of the symbolic derivation); with the norm on and ``d = 1`` the
  curvature term nearly vanishes (``n(x) ≈ sign x``), so its non-vacuity part fails there.
* The first-order reduced flow turns stiff as ``ε·γ²·scale²`` grows: ``eps_max·γ·max(1, scale)²
  > 1`` is bad input (:data:`STIFFNESS_MAX`); :meth:`F1.seconds_estimate` bounds the rest.
* The measurements behind the constants are in ``docs/benchmarks.md`` ("F1's check").

Your own system: a :class:`~verify.systems.DepthFlow` (``F1.systems``) is checked the same way on
its own model (mask, ``P``, ``d``, ``L``, σ, norm, γ, gate, scales and seed); the check's ``seed``
draws ``E`` and the start, and F1's other parameters apply. The theory follows your mask block by
block (each distinct ``P×P`` pattern is one exact derivation: kernel, coarse vector = stationary
weighting, normal rate, ``H₁``, reduced fields); numerics computes the stationary weighting and
``λ₂`` independently and both are compared (``coarse_vs_numerics`` ≤ 1e-14,
``normal_rate_vs_numerics`` ≤ 1e-6). The pure fast flow runs longer when the gap ``1 − λ₂`` is
below 1/2 (:func:`fast_tau`), and the attraction rate is read on the left eigenspaces of the
slowest eigenvalues (:func:`numerics.model.masks.slowest_left_eigenvectors`: exact decay at
``1 − λ₂``, defective or complex eigenvalues included). Size limits (bad input otherwise): those
of F1's parameters, ``2 ≤ T ≤ 64``, ``2 ≤ P ≤ 4``, ``d ≤ 4``, ``L ≤ 16``, ``0 ≤ γ ≤ 100``,
``|gate| ≤ 10``, ``scale ≤ 10``, and a named σ. Your flow's γ and scale do not enter the check
``eps_max·γ·max(1, scale)² ≤ 1`` nor the time estimate: choose ``eps_max`` by that rule yourself.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, cached_property

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

import fastslow.numerics as nm
from fastslow.numerics.integrators import ORDERS as INTEGRATOR_ORDERS
from fastslow.numerics.integrators import integrate
from fastslow.numerics.model.coupling_drivers import (
    integrate_coupling,
    integrate_coupling_scipy,
    layer_breakpoints,
)
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
    RATE_RESOLUTION,
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
FAST_TAU_EXTEND = 8.0
"""how far the pure fast flow may run past :func:`fast_tau` (doubling) while its end point is still
off the manifold: a metastable start approaches late. Found by the thorough sweep: block_causal
seed 40 (norm on) was 1.3e-6 off at τ = 60, converging, where the frozen-kernel rate predicts
e^{−30}."""
FAST_TOL = {"rtol": 1e-11, "atol": 1e-13}
"""tolerances of the pure fast flow."""
BASIN_TOL = 1e-10
"""``‖(I − Π)X_∞‖ / ‖X₀‖`` at the end of the pure fast flow (τ = :func:`fast_tau`)."""
INVARIANCE_TOL = 1e-8
"""``‖(I − ULᵀ)R(UY₀)‖ / ‖R(UY₀)‖`` above this on some layer: the slow part moves block-constant
states off the critical manifold (otherwise it is exactly invariant and ``H₁ ≡ 0``)."""
ROUNDING_FLOOR = 10 * float(np.finfo(float).eps)
"""The smallest accuracy an error is credited with (relative errors of states of size 1)."""
REFERENCE_FACTOR = 100.0
"""Allowed disagreement of two integrators at ``t = 1``, relative to ``‖X(1)‖``:
``REFERENCE_FACTOR·(rtol + √n·atol/‖X(1)‖)``, ``n = T·d``. Each method keeps its local error per
unit step below ``atol + rtol·|x_i|`` per component, i.e. ``≤ rtol‖X‖ + √n·atol`` in the 2-norm;
the factor allows for the accumulation over the flow (a contracting flow: the local errors are
damped, not summed). Measured on the default instance at ``rtol = 1e-9`` over ε = 1e-2 … 1e-5:
our Radau IIA, our ROS34PW2, SciPy's Radau and BDF all within 4.2·rtol of each other; a Radau IIA
weight perturbed by 1e-6 relative moves our Radau 387·rtol away."""
ORDER_PROBLEM_Y0 = (1.0, 0.0)
"""The fixed-step order test's problem (:func:`integrator_orders`): a forced pendulum
``θ'' = −sin θ + 0.1·cos t`` (non-autonomous: the stage times enter) on ``[0, 1]`` from these
values; its reference solution by SciPy's DOP853 at ``rtol = 1e-13, atol = 1e-15``
(:data:`ORDER_FLOOR`)."""
ORDER_STEPS = 2.0 ** -np.arange(1, 10)
"""Its fixed steps ``h = 1/2 … 1/512`` on ``[0, 1]``."""
ORDER_FLOOR = 1e-14
"""Its accuracy floor (the reference's tolerance, rounding of the ``1/h`` steps on values of size
1): errors below ``RATE_RESOLUTION·ORDER_FLOOR`` end the ladder."""
ORDER_TOL = 0.3
"""Band of the fixed-step order: ``[k − 0.3, k + 0.3]`` (5 for Radau IIA, 3 for ROS34PW2), over a
window of :data:`ORDER_WINDOW` points."""
ORDER_WINDOW = 4
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
        self._ends: dict = {}
        self._approx: dict = {}
        self.work: list = []
        self.fast_tau_reached = float("nan")  # set with X_inf

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
        X, self.fast_tau_reached = self.fast_limit(self.X0_generic)
        return X

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

    def fast_limit(
        self, X0: np.ndarray, extend: float = FAST_TAU_EXTEND
    ) -> tuple[np.ndarray, float]:
        """End point ``X_∞`` of the pure fast flow ``dX/dτ = (A_0(X) − I)X`` (layer 0's Q, K).

        The flow runs to ``τ =`` :func:`fast_tau`; while its end point is still more than
        :data:`BASIN_TOL`·‖X₀‖ off the manifold it runs on, doubling ``τ``, up to
        ``extend`` (:data:`FAST_TAU_EXTEND`) times :func:`fast_tau` (and at most
        :data:`FAST_TAU_MAX`): a metastable transient (tokens whose scores first favour
        themselves) delays the approach without leaving the basin. Returns the end point and the
        ``τ`` reached."""
        cfg = self.cfg.replace(gamma=0.0, slow=False)
        lp = self.model.layers[0].copy()
        lp.W2 = np.zeros_like(lp.W2)
        fast = nm.Model(cfg, (lp,))
        t0, tau, X = 0.0, fast_tau(self), X0
        tau_max = min(extend * tau, FAST_TAU_MAX)
        while True:
            res = integrate_coupling(
                fast, X, 1.0, t_span=(t0, tau), method=self.p["method"], **FAST_TOL
            )
            if not res.success:
                raise RuntimeError(f"fast flow failed: {res.message}")
            X = res.extra["X"][-1]
            if basin_offset(self, X, X0) <= BASIN_TOL or tau >= tau_max:
                break
            t0, tau = tau, min(2.0 * tau, tau_max)
        return X, tau

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

    def start(self, order: int, eps: float) -> np.ndarray:
        """The full flow's start for the order's error: the generic ``X₀`` for (c), ``UY₀ + εH₁``
        for (d)."""
        if order == 0:
            return self.X0_generic
        return self.U @ self.Y0 + eps * self.H1(0, self.Y0)

    def end_state(self, order: int, eps: float, method: str) -> np.ndarray:
        """``X(1)`` of the full flow from :meth:`start` by ``method``: one of ours
        (:data:`METHODS`) or SciPy's (``"scipy:Radau"``, ``"scipy:BDF"``); cached."""
        key = (order, float(eps), method)
        if key not in self._ends:
            X0 = self.start(order, eps)
            if method.startswith("scipy:"):
                r = integrate_coupling_scipy(
                    self.model,
                    X0,
                    eps,
                    E=self.E,
                    method=method[6:],
                    rtol=self.p["rtol"],
                    atol=self.p["atol"],
                )
                if not r.success:
                    raise RuntimeError(f"{method} failed at eps={eps:g}: {r.message}")
                self._ends[key] = r.y.reshape(X0.shape)
            else:
                self._ends[key] = self.full_flow_end(X0, eps, method)
        return self._ends[key]

    def approximation(self, order: int, eps: float) -> np.ndarray:
        """The reduction's ``X(1)``: ``UY₀(1)`` (c) or ``UY(1) + εH₁`` (d); cached per ε."""
        if order == 0:
            return self.U @ self.Y_leading_end
        key = (1, float(eps))
        if key not in self._approx:
            Y1, _ = self.reduced(1, eps, self.Y0, self.p["rtol"], self.p["atol"])
            self._approx[key] = self.U @ Y1 + eps * self.H1(self.model.L - 1, Y1)
        return self._approx[key]

    def error(self, order: int, eps: float, method: str | None = None) -> float:
        """``‖X(1) − approximation‖ / ‖X(1)‖`` of the order (0: (c), 1: (d))."""
        method = self.p["method"] if method is None else method
        return relative_error(self.approximation(order, eps), self.end_state(order, eps, method))

    def error_leading(self, eps: float, method: str | None = None) -> float:
        """(c) ``‖X(1) − UY₀(1)‖ / ‖X(1)‖`` from the generic start (cached per ε and method)."""
        return self.error(0, eps, method)

    def error_first(self, eps: float, method: str | None = None) -> float:
        """(d) ``‖X(1) − (UY(1) + εH₁)‖ / ‖X(1)‖`` from ``UY₀ + εH₁`` (cached per ε and method)."""
        return self.error(1, eps, method)

    def accuracy(self, order: int, eps: float) -> float:
        """The achieved accuracy of the order's error at ε, measured: the relative deviation of
        ``X(1)`` by our two stiff methods (orders 5 and 3, sharing no step), at least
        :data:`ROUNDING_FLOOR`."""
        a, b = (self.end_state(order, eps, m) for m in METHODS)
        return max(relative_error(a, b), ROUNDING_FLOOR)


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


def basin_offset(inst: Instance, X: np.ndarray, X0: np.ndarray) -> float:
    """``‖(I − ULᵀ)X‖ / ‖X₀‖``: how far ``X`` is from the critical manifold, relative to the start."""
    Pi = inst.U @ inst.Lt
    return relative_error(X, Pi @ X, scale=np.linalg.norm(X0))


def initial_state_in_basin(inst: Instance) -> Diagnostic:
    """``‖(I − ULᵀ)X_∞‖ / ‖X₀‖`` at the end of the pure fast flow (run on while it approaches the
    manifold, :meth:`Instance.fast_limit`)."""
    off = basin_offset(inst, inst.X_inf, inst.X0_generic)
    return at_most(
        off,
        BASIN_TOL,
        f"‖(I − ULᵀ)X_∞‖ / ‖X₀‖ ≤ {BASIN_TOL:g} at the end of the pure fast flow from X₀ "
        f"(τ = {inst.fast_tau_reached:g}: from {fast_tau(inst):g}, doubled while above the "
        f"tolerance, up to {FAST_TAU_EXTEND:g}× that)",
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
    ``ε_j = eps_max · 10^(−j/4)`` down to the order's ``eps_floor_*`` is walked from the start that
    the linearity constant chooses (:func:`rate_window_start`) down to the accuracy floor
    (:meth:`Instance.accuracy`, measured at each ε), by :func:`verify.measure.asymptotic_slope`:
    the finest window of ``window`` consecutive resolved points whose local slopes spread by at
    most ``tol``, with no drift below it, is the asymptotic window, and the rate holds when the 95%
    interval of its fitted slope lies in the band ``[k − tol, k + tol]``; ``verdict`` says
    ``holds``, ``fails`` or ``unresolved`` (a limit).
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
            spread=p[spec["tol"]],
            floor=lambda e, order=spec["order"]: inst.accuracy(order, e),
        )
        res["start_eps"] = float(ladder[start]) if start < len(ladder) else None
        res["floor"] = [inst.accuracy(spec["order"], e) for e in res["h"]]
        results[name] = res
    return results


def exponential_decay_rate(t: np.ndarray, dev: np.ndarray) -> float:
    """``−`` the slope of the least-squares line through ``(t, log dev)``: the rate ``r`` of
    ``dev ≈ C e^{−rt}`` (a semi-log fit)."""
    return float(-np.polyfit(t, np.log(dev), 1)[0])


def spectral_projector(K: np.ndarray, eigenvalues, lam: float) -> np.ndarray:
    """The spectral projector of the diagonalizable ``K`` onto the eigenvalue ``lam``:
    ``Π_{μ ≠ λ} (K − μI)/(λ − μ)`` over the distinct eigenvalues ``μ`` (a polynomial in ``K``:
    basis-free, no eigenvector enters)."""
    out = np.eye(K.shape[0])
    for mu in eigenvalues:
        if mu != lam:
            out = out @ (K - mu * np.eye(K.shape[0])) / (lam - mu)
    return out


def slow_deviation(inst: Instance):
    """The slowest mode of the deviation from the manifold, as a function of ``X − εH₁``: it
    decays exactly at ``1 − λ₂`` under the fast flow linearised on the manifold,
    ``(K − I)/ε ⊗ I_d``. For a named mask, the spectral projector of the frozen kernel ``K`` onto
    ``λ₂`` (:func:`spectral_projector`, from the closed-form spectrum; ``I − UB`` for
    ``block_bidirectional``, the ``λ = 1/2`` mode for ``block_causal``, not the faster ``1/3``);
    for your own mask (possibly defective, with modes a few percent apart) the component along
    the left eigenspaces of the slowest eigenvalues
    (:func:`numerics.model.masks.slowest_left_eigenvectors`: an orthonormal basis of a subspace,
    so the norm does not depend on it)."""
    cfg = inst.cfg
    if isinstance(cfg.mask, str):
        Pl = spectral_projector(
            inst.K, list(kernel_eigenvalues(cfg.mask, cfg.T, cfg.P)), second_eigenvalue(inst)
        )
        return lambda D: np.linalg.norm(Pl @ D)
    W = slowest_left_eigenvectors(cfg.mask_array)
    return lambda D: np.linalg.norm(W.conj().T @ D)


def attraction_rate(inst: Instance, eps: float) -> dict:
    """Decay rate of the slowest mode :func:`slow_deviation` of ``X(t) − εH₁`` from a generic
    start, fitted where it is within :data:`ATTRACTION_FIT_BAND` of its initial value (linear
    regime, above the O(ε²) floor), against ``(1 − λ₂)/ε + γ``.

    The flow is sampled over ``30/predicted`` (30 predicted time constants). A metastable start
    (scores that first favour the tokens' own keys, far from the frozen kernel) may not reach the
    band in that time: the horizon is then doubled, up to the first layer's depth ``1/L``, and the
    samples are laid from where the deviation first falls below the band's top (found on the
    longer horizon) over ``30/predicted`` more. ``n_fit < 3`` samples in the band (the
    deviation never reaches it before ``1/L``) is a limit of the check
    (:func:`attraction_rate_resolvable`), reported as such, never as a rate."""
    lam2 = second_eigenvalue(inst)
    predicted = (1.0 - lam2) / eps + inst.cfg.gamma
    horizon = 30.0 / predicted
    t_cap = 1.0 / inst.model.L
    X0 = inst.U @ inst.Y0 + inst.Z0
    H = eps * inst.H1(0, inst.Y0)
    deviation = slow_deviation(inst)
    lo, hi = ATTRACTION_FIT_BAND

    def sampled(t):
        res = integrate_coupling(
            inst.model, X0, eps, E=inst.E, t_eval=t, method=inst.p["method"], **ATTRACTION_TOL
        )
        return np.array([deviation(X - H) for X in res.extra["X"]])

    t_end = min(horizon, t_cap)
    t = np.linspace(0.0, t_end, ATTRACTION_SAMPLES)
    dev = sampled(t)
    while not (dev / dev[0] < hi).any() and t_end < t_cap:
        t_end = min(2.0 * t_end, t_cap)
        t = np.linspace(0.0, t_end, ATTRACTION_SAMPLES)
        dev = sampled(t)
    entry = int(np.argmax(dev / dev[0] < hi)) if (dev / dev[0] < hi).any() else 0
    if entry > 1 and t_end > horizon:  # resample the linear regime densely from just before entry
        t0 = t[entry - 1]
        t = np.unique(
            np.concatenate(
                [
                    np.linspace(0.0, t0, 9),
                    np.linspace(t0, min(t0 + horizon, t_cap), ATTRACTION_SAMPLES),
                ]
            )
        )
        dev = sampled(t)
    rel = dev / dev[0]
    sel = (rel < hi) & (rel > lo)
    out = {
        "predicted": float(predicted),
        "lambda2": lam2,
        "lambda2_from": spectrum_source(inst),
        "eps": eps,
        "t": t,
        "deviation": dev,
        "n_fit": int(sel.sum()),
        "horizon": float(t[-1]),
        "horizon_predicted_constants": float(t[-1] * predicted),
        "relative_deviation_at_horizon": float(rel[-1]),
    }
    if sel.sum() < 3:
        return {**out, "rate": None, "ratio": None}
    rate = exponential_decay_rate(t[sel], dev[sel])
    return {**out, "rate": rate, "ratio": ratio(rate, predicted)}


def attraction_rate_resolvable(rate: dict) -> Diagnostic:
    """Limit of the check: the deviation of :func:`attraction_rate` reaches the fit band with at
    least three samples before the first layer ends (else no rate can be fitted: a start that
    stays metastable through the layer)."""
    lo, hi = ATTRACTION_FIT_BAND
    return Diagnostic(
        rate["n_fit"] >= 3,
        {
            "n_fit": rate["n_fit"],
            "horizon": rate["horizon"],
            "predicted_time_constants": rate["horizon_predicted_constants"],
            "relative_deviation_at_horizon": rate["relative_deviation_at_horizon"],
        },
        f"≥ 3 samples of the slowest mode's deviation between {lo:g} and {hi:g} of its start "
        "before the first layer ends (horizon doubled from 30 predicted time constants)",
    )


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


INTEGRATOR_PARTS = ("integrators_agree_with_reference", "integrators_achieve_their_order")
"""The parts that verify the integrator under test (when one fails, the check has decided)."""


@cache
def verified_orders() -> dict:
    """:func:`integrator_orders`, once per process (it depends on the code only)."""
    return integrator_orders()


def deciding_eps(p: dict, rates: dict) -> dict:
    """``{order name: ε}``: the finest ε of each order's window (the finest evaluated one where
    there is none, ``eps_max`` where none was)."""
    out = {}
    for name, res in rates.items():
        w = res["window"]
        out[name] = float(w[1]) if w else float(res["h"][-1]) if res["h"] else float(p["eps_max"])
    return out


def agreement_bound(p: dict, X: np.ndarray) -> float:
    """The allowed relative disagreement of two integrators at ``t = 1``:
    ``REFERENCE_FACTOR·(rtol + √n·atol/‖X(1)‖)`` (:data:`REFERENCE_FACTOR`)."""
    return REFERENCE_FACTOR * (p["rtol"] + np.sqrt(X.size) * ratio(p["atol"], np.linalg.norm(X)))


def integrator_agreement(inst: Instance, rates: dict) -> dict:
    """Our two stiff methods against an independent reference, SciPy's ``solve_ivp`` (its Radau
    and BDF, which share no code with ours), at the ε that decide each order's rate
    (:func:`deciding_eps`), all at the check's ``rtol``/``atol``, states at ``t = 1`` compared
    relative to ``‖X(1)‖`` against :func:`agreement_bound`.

    Attribution: ``reference_consistent`` when SciPy's two methods agree with each other;
    ``ours_agree`` when each of ours agrees with SciPy's Radau. Ours off while the reference is
    consistent: the code under test is wrong (a conclusion part fails). The reference
    inconsistent: the tolerances cannot decide this instance (a limit, ``undecided``)."""
    p = inst.p
    at_eps = deciding_eps(p, rates)
    dev_ref, dev_ours, bound, worst = 0.0, {m: 0.0 for m in METHODS}, float("inf"), {}
    for name, spec in RATE_ORDERS.items():
        e, k = at_eps[name], spec["order"]
        ref = inst.end_state(k, e, "scipy:Radau")
        b = agreement_bound(p, ref)
        bound = min(bound, b)
        d_ref = relative_error(inst.end_state(k, e, "scipy:BDF"), ref)
        dev_ref = max(dev_ref, d_ref / b)
        for m in METHODS:
            dev_ours[m] = max(dev_ours[m], relative_error(inst.end_state(k, e, m), ref) / b)
        worst[name] = {"bound": b, "scipy_bdf_vs_radau": d_ref}
    return {
        "eps": at_eps,
        "bound": bound,
        "per_order": worst,
        "reference_deviation_in_bounds": dev_ref,
        "ours_deviation_in_bounds": dev_ours,
        "reference_consistent": bool(dev_ref <= 1.0),
        "ours_agree": bool(max(dev_ours.values()) <= 1.0),
    }


def order_problem(t, y):
    """The fixed-step order test's right-hand side (:data:`ORDER_PROBLEM_Y0`)."""
    return np.array([y[1], -np.sin(y[0]) + 0.1 * np.cos(t)])


def order_problem_jacobian(t, y):
    """Its Jacobian."""
    return np.array([[0.0, 1.0], [-np.cos(y[0]), 0.0]])


@cache
def order_problem_solution() -> np.ndarray:
    """Its solution at ``t = 1`` by SciPy's DOP853 (independent of our integrators)."""
    sol = solve_ivp(
        order_problem,
        (0.0, 1.0),
        np.array(ORDER_PROBLEM_Y0),
        method="DOP853",
        rtol=1e-13,
        atol=1e-15,
    )
    return sol.y[:, -1]


def integrator_orders() -> dict:
    """``{method: asymptotic_slope result}``: the order each of our stiff methods achieves with
    fixed steps (:data:`ORDER_STEPS`) on a smooth non-stiff problem, decided by the rate
    rule against its classical order (:data:`numerics.integrators.ORDERS`) in the band
    ``± ORDER_TOL``. A wrong tableau entry (any coefficient off by 1e-6 relative breaks an order
    condition) leaves an error plateau: the order falls to what the broken condition allows."""
    exact = order_problem_solution()
    out = {}
    for m in METHODS:

        def err(h, m=m):
            r = integrate(
                order_problem,
                (0.0, 1.0),
                np.array(ORDER_PROBLEM_Y0),
                method=m,
                jac=order_problem_jacobian,
                h_fixed=float(h),
            )
            return float(np.linalg.norm(r.y[:, -1] - exact)) if r.success else float("nan")

        out[m] = asymptotic_slope(
            ORDER_STEPS,
            err,
            float(INTEGRATOR_ORDERS[m]),
            ORDER_TOL,
            window=ORDER_WINDOW,
            spread=ORDER_TOL,
            floor=ORDER_FLOOR,
        )
    return out


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
    """(c) and (d): each order's rate by the rule (a part fails only when the rule measures
    another order; an unresolved rate is the limit ``rates_resolved``)."""
    parts = {}
    for res, part, k in zip(
        rates.values(), ("leading_order_error_O_eps", "first_order_error_O_eps2"), (1, 2)
    ):
        lo, hi = res["band"]
        parts[part] = Diagnostic(
            res["verdict"] != "fails",
            {
                "verdict": res["verdict"],
                "slope": res["slope"],
                "ci95": res["ci95"],
                "window": res["window"],
            },
            f"rate rule (finest straight window above the measured accuracy floor, no drift "
            f"below it): the 95% interval is not disjoint from [{lo:g}, {hi:g}] with the "
            f"window's local slopes moving away from {k}",
        )
    return parts


def rates_resolved(p: dict, rates: dict) -> Diagnostic:
    """Limit: the rule decides each order's rate above the accuracy floor (``holds`` or
    ``fails``, not ``unresolved``)."""
    return Diagnostic(
        all(r["verdict"] != "unresolved" for r in rates.values()),
        {
            name: {
                "verdict": r["verdict"],
                "why": r["why"],
                "resolved_points": len(r["h"]),
                "finest_resolved_eps": r["h"][-1] if r["h"] else None,
                "floor_at_finest": r["floor"][-1] if r["floor"] else None,
            }
            for name, r in rates.items()
        },
        f"each order's error curve has a window of {p['window']} resolved points (error ≥ "
        f"{RATE_RESOLUTION:g} × the measured accuracy, ε ≥ its eps_floor_*) with straight local "
        "slopes, no drift below it, and an interval that decides the band; "
        + "; ".join(
            f"{name}: {r['verdict']} ({len(r['h'])} resolved points down to ε = "
            f"{r['h'][-1] if r['h'] else float('nan'):.2g}, measured floor "
            f"{r['floor'][-1] if r['floor'] else float('nan'):.2g})"
            for name, r in rates.items()
        ),
    )


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
    """(b) the measured attraction rate against ``(1 − λ₂)/ε + γ``; not measured (the limit
    :func:`attraction_rate_resolvable` decides the outcome) when no rate could be fitted."""
    r = rate["ratio"]
    rule = f"|rate/predicted − 1| ≤ {rate_tol} (λ₂ = {rate['lambda2']:g}, {rate['lambda2_from']})"
    if r is None:
        return Diagnostic(
            True, "not measured: see the limit attraction_rate_resolvable", rule + "; not measured"
        )
    return Diagnostic(bool(np.isfinite(r) and abs(r - 1.0) <= rate_tol), r, rule)


def first_order_better_part(better: np.ndarray) -> Diagnostic:
    """The first-order reduction beats the leading one at every ε of its window."""
    return Diagnostic(
        bool(better.size and better.all()),
        {"n_eps": int(better.size), "n_not_better": int((~better).sum())},
        "number of ε of the first-order window with err_first ≥ err_leading; 0 required (and a "
        "non-empty window)",
    )


def integrators_part(integ: dict) -> Diagnostic:
    """Our stiff methods agree with the reference wherever the reference agrees with itself."""
    return Diagnostic(
        integ["ours_agree"] or not integ["reference_consistent"],
        {
            "ours_vs_scipy_radau_in_bounds": integ["ours_deviation_in_bounds"],
            "scipy_bdf_vs_radau_in_bounds": integ["reference_deviation_in_bounds"],
            "bound": integ["bound"],
            "eps": integ["eps"],
        },
        "at the ε deciding each rate: ‖X_ours(1) − X_scipy_Radau(1)‖/‖X(1)‖ ≤ "
        f"{REFERENCE_FACTOR:g}·(rtol + √n·atol/‖X(1)‖) for radau and rosw, wherever SciPy's Radau "
        "and BDF agree to that bound",
    )


def orders_part(orders: dict) -> Diagnostic:
    """Our stiff methods achieve their classical order with fixed steps."""
    return Diagnostic(
        all(r["verdict"] == "holds" for r in orders.values()),
        {
            m: {"slope": r["slope"], "ci95": r["ci95"], "verdict": r["verdict"]}
            for m, r in orders.items()
        },
        f"fixed steps h = 1/2 … 1/512 on a forced pendulum: the rate rule's interval lies in "
        f"k ± {ORDER_TOL} (radau k = {INTEGRATOR_ORDERS['radau']}, rosw k = "
        f"{INTEGRATOR_ORDERS['rosw']})",
    )


def reference_part(integ: dict) -> Diagnostic:
    """Limit: the independent reference agrees with itself at the check's tolerances."""
    return at_most(
        integ["reference_deviation_in_bounds"],
        1.0,
        "SciPy's Radau vs BDF at the ε deciding each rate, in units of "
        f"{REFERENCE_FACTOR:g}·(rtol + √n·atol/‖X(1)‖): ≤ 1 (else the tolerances cannot decide)",
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
        "integrator_reference": integ,
        "integrator_check_eps": integ["eps"],
        "accuracy_floor_leading": rates["leading"]["floor"],
        "accuracy_floor_first_order": rates["first_order"]["floor"],
        "rate_verdicts": {k: {"verdict": r["verdict"], "why": r["why"]} for k, r in rates.items()},
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
        "integrators_vs_reference_in_rtol_units": REFERENCE_FACTOR,
        "rate_resolution_over_accuracy": RATE_RESOLUTION,
        "integrator_order_band": ORDER_TOL,
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
            1e-5,
            "smallest ε the first-order rate rule may use (the measured accuracy floor ends the "
            "ladder earlier where the error reaches it)",
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
            0.05,
            "band of the leading-order rate: its 95% interval within [1 − tol, 1 + tol]; also "
            "the largest spread of the window's local slopes",
            low=0.0,
            high=10.0,
        ),
        "slope_tol1": Param(
            0.1,
            "band of the first-order rate: its 95% interval within [2 − tol, 2 + tol]; also the "
            "largest spread of the window's local slopes",
            low=0.0,
            high=10.0,
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
    }
    conclusion = {
        "block_constant_states_critical": f"(a) max |(A(UY) − I)UY| ≤ {CRITICAL_TOL} at random Y, every layer",
        "generic_states_not_critical": f"(a) min over layers of max |(A(X) − I)X| > {GENERIC_MIN} at generic X",
        "fast_part_normally_linear": "(b) the JVP of (A(X) − I)X at UY is (K − I)δX (central "
        f"difference, ≤ {NORMAL_LINEAR_TOL}·max(1, |δX|))",
        "symbolic_normal_structure": "(b) theory/: scores row-constant on 1yᵀ, softmax derivatives "
        "annihilate 1, kernel = numerics' K block, normal Jacobian = "
        "(K − I) ⊗ I_d (exact), normal rate 1 − λ₂",
        "attraction_rate": "(b) |measured decay rate of the slowest mode of X − εH₁ (spectral "
        "projector of K onto λ₂) / ((1 − λ₂)/ε + γ) − 1| ≤ rate_tol",
        "leading_order_error_O_eps": "(c) the leading-order error's rate is not measured to be "
        "another order than 1: the rate rule (verify.measure.asymptotic_slope) does not end "
        "'fails' in the band [1 − slope_tol0, 1 + slope_tol0] (holds when its interval lies in it)",
        "first_order_error_O_eps2": "(d) the first-order error's rate is not measured to be "
        "another order than 2 (band [2 − slope_tol1, 2 + slope_tol1])",
        "first_order_better_at_every_eps": "the first-order error is below the leading-order error at "
        "every ε of the first-order asymptotic window",
        "theory_agrees_with_numerical_formulas": "the theory reduced field agrees with the numerical formulas at points along the reduced "
        f"trajectory: H₁ and f0 to {THEORY_TOL['H1']:g}, f1 to {THEORY_TOL['f1']:g} relative",
        "curvature_term_as_derived": f"where the symbolic curvature is not identically 0, its size > "
        f"{CURVATURE_MIN} (Q, K enter at order ε); where it is, the "
        f"numerical one is ≤ {CURVATURE_ZERO}",
        "integrators_agree_with_reference": "our Radau IIA and ROS34PW2 agree with SciPy's Radau "
        f"at the ε deciding each rate to {REFERENCE_FACTOR:g}·(rtol + √n·atol/‖X(1)‖) relative, "
        "wherever SciPy's Radau and BDF agree with each other to that bound",
        "integrators_achieve_their_order": "with fixed steps on a forced pendulum our Radau IIA "
        f"shows order 5 and ROS34PW2 order 3 (rate rule, band ± {ORDER_TOL})",
    }
    limits = {
        "asymptotic_regime_resolvable": "per order, the ladder from the largest ε ≤ "
        "min(eps_max, lin_const/c₂) (c₂ the reduced flow's linearity constant, from the reduced "
        "flows alone) down to its eps_floor_* holds at least window points",
        "rates_resolved": "the rate rule decides each order above the measured accuracy floor "
        "(a window of resolved points, straight, no drift below it, an interval that decides "
        "the band)",
        "reference_integrators_agree": "SciPy's Radau and BDF agree with each other at the ε "
        f"deciding each rate to {REFERENCE_FACTOR:g}·(rtol + √n·atol/‖X(1)‖)",
        "attraction_rate_resolvable": "the slowest mode's deviation from a generic start reaches "
        "the fit band (1e-6 … 1e-2 of its start) with ≥ 3 samples before the first layer ends "
        "(a start metastable through the layer leaves no rate to fit)",
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
        layer; two per ladder point and :data:`EXTRA_FULL_FLOWS` more). For your own flow ``p``
        holds the flow's own ``T``, ``P``, ``d``, ``L``, ``gamma`` and ``scale``
        (:meth:`~verify.claim.Claim.sized`), not F1's defaults."""
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
        orders = verified_orders()
        th = theory_against_numerics(inst, reduced_trajectory_points(inst))
        parts = {
            **rate_parts(p, rates),
            **critical_parts(crit),
            "attraction_rate": attraction_part(rate, p["rate_tol"]),
            "first_order_better_at_every_eps": first_order_better_part(better),
            "integrators_agree_with_reference": integrators_part(integ),
            "integrators_achieve_their_order": orders_part(orders),
            **symbolic_parts(th, rate["lambda2"], inst.no_theory_reason),
        }
        limits = {
            "asymptotic_regime_resolvable": asymptotic_regime_resolvable(inst),
            "rates_resolved": rates_resolved(p, rates),
            "reference_integrators_agree": reference_part(integ),
            "attraction_rate_resolvable": attraction_rate_resolvable(rate),
        }
        broken = [k for k in INTEGRATOR_PARTS if not parts[k].holds]
        if broken:
            # the integrator under test is shown wrong: the check has decided (fails), and the
            # limits of its numerics, measured with that integrator, no longer say anything
            limits = {
                k: Diagnostic(True, f"superseded: {', '.join(broken)} fails", d.rule)
                for k, d in limits.items()
            }
        figures = verdict_figures(inst, linearity, rates, rate, crit, integ, th)
        figures["integrator_orders"] = {
            m: {k: r[k] for k in ("slope", "ci95", "verdict", "err")} for m, r in orders.items()
        }
        # after the verdict's measurements: the series' extra full flows are not in its work
        series = {"error_ladder": error_ladder(inst), "depth_trajectory": depth_trajectory(inst)}
        return Conclusion(
            parts,
            figures,
            tolerance=tolerances(p),
            notes=[method_note(inst)],
            series=series,
            limits=limits,
        )


CLAIM = F1()
