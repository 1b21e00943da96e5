"""F1's hypotheses (:mod:`verify.checks.f1`): each decided on the instance before the conclusion
(:data:`HYPOTHESIS_DIAGNOSTICS`), and the resolvability of the asymptotic regime.

A module of the claim unit :mod:`verify.checks.f1`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f1.claim`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fastslow.numerics.toy.markov import mask_closed_classes as closed_classes
from fastslow.theory.slow_manifold import (
    SIGMA_FUNCS,
    sigma_is_smooth,
)

from ...measure import (
    ratio,
)
from ...verdict import Diagnostic, at_most
from .instance import (
    BASIN_TOL,
    FAST_TAU_EXTEND,
    RATE_ORDERS,
    Instance,
    basin_offset,
    fast_tau,
    second_eigenvalue,
)
from .measurements import ATTRACTION_FIT_BAND, eps_ladder, rate_window_start

INVARIANCE_TOL = 1e-8
"""``‖(I − ULᵀ)R(UY₀)‖ / ‖R(UY₀)‖`` above this on some layer: the slow part moves block-constant
states off the critical manifold (otherwise it is exactly invariant and ``H₁ ≡ 0``)."""


def mask_block_local(cfg) -> Diagnostic:
    """:func:`fast_mask_block_local` of a configuration (``T``, ``P``, ``mask_array``): what a
    user flow's declaration decides before its sizes (``F1.declared_hypotheses``)."""
    T, P = cfg.T, cfg.P
    outside = cfg.mask_array & ~np.kron(np.eye(T // P, dtype=bool), np.ones((P, P), dtype=bool))
    n = int(outside.sum())
    return Diagnostic(
        n == 0, n, "number of fast-mask entries outside the diagonal P×P blocks; 0 required"
    )


def fast_mask_block_local(inst: Instance) -> Diagnostic:
    """The number of mask entries outside the diagonal ``P×P`` blocks (0 required)."""
    return mask_block_local(inst.cfg)


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


def first_order_correction_nonzero(inst: Instance) -> Diagnostic:
    """``max_l ‖(I − ULᵀ)R_l(UY₀)‖ / ‖R_l(UY₀)‖``: whether the slow part moves block-constant states
    off the critical manifold (the source of ``H₁``)."""
    X = inst.U @ inst.Y0
    Pi = inst.U @ inst.Lt
    off = 0.0
    for l in range(inst.model.L):
        R = inst.nonstiff_part(l, X)
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
