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

* Full flow: :func:`numerics.model.coupling.drivers.integrate_coupling` (Radau IIA by default,
  ``method="rosw"`` for ROS34PW2), untied weights (piecewise constant on ``L`` intervals,
  breakpoints hit exactly), ``γ > 0`` towards a random non-block-constant ``E``, gate ``g ≠ 0``,
  the RMS norm on or off, all drawn by :func:`verify.coupling_problem.coupling_problem`.
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

import numpy as np

from ...claim import Claim, Conclusion, Control
from ...coupling_problem import coupling_problem
from ...integrator_calibration import error_control_part
from ...model_params import model_params
from ...params import Param
from ...systems import DepthFlow
from ...verdict import Diagnostic
from .hypotheses import (
    HYPOTHESIS_DIAGNOSTICS,
    asymptotic_regime_resolvable,
    attraction_rate_resolvable,
    mask_block_local,
)
from .instance import METHODS, Instance
from .integrators import (
    INTEGRATOR_PARTS,
    ORDER_TOL,
    REFERENCE_FACTOR,
    integrator_agreement,
    verified_orders,
)
from .measurements import (
    attraction_rate,
    critical_manifold_residuals,
    depth_trajectory,
    eps_ladder,
    error_ladder,
    error_rates,
    first_order_better,
    reduced_trajectory_points,
    theory_against_numerics,
)
from .parts import (
    CRITICAL_TOL,
    CURVATURE_MIN,
    CURVATURE_ZERO,
    GENERIC_MIN,
    NORMAL_LINEAR_TOL,
    THEORY_TOL,
    attraction_part,
    critical_parts,
    first_order_better_part,
    integrators_part,
    method_note,
    orders_part,
    rate_parts,
    rates_resolved,
    reference_part,
    symbolic_parts,
    tolerances,
    verdict_figures,
)

# ----------------------------------------------------------------------------- constants

COARSE = ("auto", "mean", "first")
"""Coarse maps: ``auto`` (the first token for ``block_causal``, the stationary weighting of your own
block-local mask, the block mean otherwise)."""
OTHER_METHOD = {"radau": "rosw", "rosw": "radau"}
"""The method that cross-checks each one."""

USER_FLOW_LIMITS = ("T", "P", "d", "L", "gamma", "gate", "scale")
"""the fields of your DepthFlow checked against the bounds of F1's parameters of the same name
(the cost of the symbolic derivation and of the stiff full flows)."""
RATE_PARTS = (
    "leading_order_error_O_eps",
    "first_order_error_O_eps2",
    "first_order_better_at_every_eps",
)
"""The parts measured on the ε ladder: undecidable where no asymptotic window is resolvable (the
limits ``asymptotic_regime_resolvable`` and ``rates_resolved``)."""


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
        "error_control_calibrated": "the one-step error estimates of our Radau IIA and ROS34PW2 "
        "equal SciPy's Radau and the ROS34PW2 stability functions' (threshold rtol on y' = Ay, "
        "1e-6 relative), and identical copies of a system take the steps of one (the error norm "
        "does not depend on the dimension)",
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
    limit_governs = {
        "asymptotic_regime_resolvable": RATE_PARTS,
        "rates_resolved": RATE_PARTS,
        "reference_integrators_agree": ("integrators_agree_with_reference",),
        "attraction_rate_resolvable": ("attraction_rate",),
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
    declared_hypotheses = {"fast_mask_block_local": lambda system: mask_block_local(system.config)}
    system_terms = {
        "DepthFlow": "a block-local mask with one closed class per block (fast_mask_block_local, "
        "normally_hyperbolic: mask='block_causal' or 'block_bidirectional'), gamma > 0 "
        "(first_order_correction_nonzero: with the default gamma=0.0 the manifold is exactly "
        "invariant and there is no rate to measure; e.g. gamma=0.2), a smooth nonlinearity "
        "(mlp_nonlinearity_smooth: sigma='tanh', 'gelu' or 'identity', not 'relu') and F1's "
        "sizes (T ≤ 64, 2 ≤ P ≤ 4, d ≤ 4, L ≤ 16); any gate"
    }

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.DepthFlow` within F1's size limits (bad input otherwise;
        a flow whose fast mask is not block-local is outside the hypotheses whatever its size:
        :attr:`declared_hypotheses`)."""
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
        (:func:`~verify.coupling_problem.coupling_problem` given your model)."""
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

    def check_instruments(self, p):
        """Radau IIA's and ROS34PW2's error control against their oracles, before the runs that
        rely on it (a broken estimate would otherwise end the runs in an exception)."""
        return {"error_control_calibrated": error_control_part(("radau", "rosw"))}

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
