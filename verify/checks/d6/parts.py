"""D6's conclusion parts (:mod:`verify.checks.d6`): each measured number of parts (a)–(d) read
against its tolerance or the theory's prediction.

A module of the claim unit :mod:`verify.checks.d6`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.d6.claim`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from fastslow.theory.stability import block_causal_gap_ratio

from ...measure import (
    symbolic_agrees,
)
from ...verdict import Diagnostic
from .measurements import FORMALISATIONS, Instance, gate_sweep_applies

KRON_TOL = 1e-10
"""Relative residual of ``∂Slow/∂X = (U_c K_s B) ⊗ M_sᵀ``."""


FD_ROUNDING_UNITS = 10.0


FD_TRUNCATION = 1e-9
"""The central difference at h = 1e-6 must agree with the JVP within 10 of its rounding units
``eps‖X_L‖/(h‖Je‖)`` plus its truncation error (h² = 1e-12 times the third-derivative scale; 1e-9
allows a third derivative 1e3× the first): sensitive to JVP errors far below the Taylor test's
reach on well-scaled columns, and scale-free on columns that barely move X_L."""


KERNEL_CHANGE_MIN = 1e-8
"""``‖δA‖_F`` above which the kernel's first-order change counts as non-zero (non-vacuity: far above
rounding, so that the relative test ``‖δA W‖ ≤ tol·‖δA‖‖W‖`` means something; a two-token
instance has ``‖δA‖ ≈ 3e-4``)."""


EP_RESPONSE_MIN = 1e-2
"""Relative first-order response of ``Lᵀ X_L`` to a persistent input above which it counts as moving."""


GATE_SWEEP_TOL = {"Vs_slope": 0.05, "slow_qk_slope": 0.1}
"""Absolute tolerances of the local slopes 1 (Vs) and 3 (Qs, Ks) at the two smallest gates."""


GAP_THEORY_TOL = 1e-12
"""Agreement of the measured block_causal gap with √(P − 1) (:mod:`theory.stability`)."""


def qk_invisible_in_persistent_component(f: dict, tol: float) -> Diagnostic:
    """The Q, K, Qs, Ks columns of ``δ(Lᵀ X_L)``: rank 0 and every column ≤ tol."""
    max_rank = max(f["visibility_ranks"][b] for b in ("Q", "K", "Qs", "Ks"))
    return Diagnostic(
        bool(max_rank == 0 and f["qk_max_column_norm_rel"] <= tol),
        [max_rank, f["qk_max_column_norm_rel"]],
        "[max rank, max column] = [0, ≤ tol]",
    )


def qk_invisible_in_state_all_orders(f: dict, tol: float) -> Diagnostic:
    """The Q, K columns of ``δX_L``, the finite QK perturbations and ``δA`` along Q, K ≤ tol."""
    qk_state = [
        f["qk_state_max_abs_rel"],
        f["finite_qk_state_change_rel"],
        f["finite_qk_kernel_deviation"],
        f["kernel_change_along_qk"],
    ]
    return Diagnostic(
        bool(max(qk_state) <= tol),
        qk_state,
        "[state column, finite state change, finite kernel change, δA along QK] ≤ tol",
    )


def visible_directions(f: dict, d: int, L: int) -> Diagnostic:
    """``1 ≤ rank V ≤ d``, rank of all parameters ≤ ``d + L``, persistent inputs full rank and
    moving ``Lᵀ X_L``."""
    ranks = f["visibility_ranks"]
    visible = [
        ranks["V"],
        f["parameter_map_rank"],
        ranks["X0_Ep"],
        f["persistent_dim"],
        f["Ep_first_order_persistent_rel"],
    ]
    return Diagnostic(
        bool(
            1 <= ranks["V"] <= d
            and f["parameter_map_rank"] <= d + L
            and ranks["X0_Ep"] == f["persistent_dim"]
            and f["Ep_first_order_persistent_rel"] > EP_RESPONSE_MIN
        ),
        visible,
        f"[1 ≤ rank V ≤ d = {d}, rank all ≤ d + L = {d + L}, rank Ep = dim, Ep response > 1e-2]",
    )


def gate_visibility_as_predicted(f: dict) -> Diagnostic:
    """The gate's rank is ≥ 1 exactly when the slow output reaches ``Lᵀ X_L``."""
    rank, slow_read = f["visibility_ranks"]["g"], f["slow_output_read_by_persistent"]
    return Diagnostic(
        bool((rank >= 1) == (slow_read > 0.0)),
        [rank, slow_read],
        "[rank g ≥ 1] == [max_l ‖Lᵀ Slow_l(X_l)‖ > 0]",
    )


def Ed_forcing_invisible_first_order(f: dict, tol: float) -> Diagnostic:
    """The E_d blocks have rank 0 and a random direction of each moves ``Lᵀ X_L`` by ≤ tol."""
    max_rank = max((f["visibility_ranks"][k] for k in FORMALISATIONS), default=0)
    first = f["Ed_first_order_persistent_rel"]
    return Diagnostic(
        bool(max_rank == 0 and all(x <= tol for x in first.values())),
        [max_rank, f["Ed_first_order_persistent_max_rel"]],
        "[max rank of the E_d blocks, max first-order response] = [0, ≤ tol]",
    )


def Ed_forcing_higher_orders(f: dict, tol: float, slope_tol: float) -> tuple[Diagnostic, list]:
    """Self-attending persistent tokens: no change of ``Lᵀ X_L`` at any order (≤ tol up to size
    1); otherwise the fitted slope of the change is 2 ± slope_tol (or no change at any order)."""
    self_only = f["persistent_tokens_see_only_themselves"]
    any_order, slopes = f["Ed_persistent_change_any_order_rel"], f["Ed_second_order_slopes"]
    notes = []
    if f["Ed_trivial"]:
        holds = True
        notes.append("E_d = {0} for this instance (P = 1 or T = 1): part (b) is vacuous")
    elif self_only:
        holds = all(x <= tol for x in any_order.values())
    else:
        holds = all(
            (k in slopes and abs(slopes[k]["slope"] - 2.0) <= slope_tol) or any_order[k] <= tol
            for k in FORMALISATIONS
        )
    part = Diagnostic(
        bool(holds),
        {
            "persistent_tokens_see_only_themselves": self_only,
            "any_order": any_order,
            "slopes": {k: v["slope"] for k, v in slopes.items()},
        },
        "self-attending persistent tokens: any order ≤ tol; else slope 2 ± slope_tol",
    )
    return part, notes


def kernel_change_annihilates_state(f: dict, mask: np.ndarray, tol: float) -> Diagnostic:
    """``‖δA·W‖ ≤ tol·‖δA‖‖W‖`` at every layer, with ``‖δA‖`` above 1e-8 whenever some token
    attends to two (the test is not vacuous)."""
    two_token_rows = bool(np.any(mask.sum(axis=1) >= 2))
    holds = f["kernel_change_times_state_rel"] <= tol and (
        not two_token_rows or f["kernel_change_min_norm"] > KERNEL_CHANGE_MIN
    )
    return Diagnostic(
        bool(holds),
        [f["kernel_change_times_state_rel"], f["kernel_change_min_norm"]],
        f"[‖δA W‖/(‖δA‖‖W‖) ≤ tol, min ‖δA‖ > {KERNEL_CHANGE_MIN:g} if a token attends to two]",
    )


def slow_coupling_block_constant(f: dict, tol: float) -> Diagnostic:
    """``G(I − UB) = 0``, ``(I − UB)G = 0`` (≤ tol) and ``G = (U_c K_s B) ⊗ M_sᵀ`` (≤ 1e-10)."""
    r = f["slow_coupling_residuals_rel"]
    return Diagnostic(
        bool(
            r["G_I_minus_UB"] <= tol
            and r["I_minus_UB_G"] <= tol
            and r["kron_structure"] <= KRON_TOL
        ),
        [r["G_I_minus_UB"], r["I_minus_UB_G"], r["kron_structure"]],
        "[‖G(I − UB)‖, ‖(I − UB)G‖] ≤ tol·‖G‖, Kronecker residual ≤ 1e-10",
    )


def slow_coupling_gap_matches_theory(f: dict, P: int, tol: float) -> tuple[Diagnostic, list]:
    """The gap ``‖G(I − Π)‖/‖G‖``: ≤ tol when ``Π = UB``; ``√(P − 1)`` (SymPy,
    :func:`theory.stability.block_causal_gap_ratio`) when ``Π = UFᵀ``, with ``(I − Π)G`` ≤ tol;
    reported only otherwise (the global causal mask) or when ``G = 0``."""
    gap, r = f["slow_coupling_gap_rel"], f["slow_coupling_residuals_rel"]
    notes = []
    if f["slow_coupling_min_norm"] == 0.0:
        holds, rule = True, "G = 0 (N = 1: U_c drops the only pooled token): vacuous"
    elif f["Pi_minus_UB"] <= 1e-15:
        holds, rule = gap <= tol, "Π = UB: gap ≤ tol"
    elif f["Pi_minus_UFt"] == 0.0:
        theory = float(
            block_causal_gap_ratio().subs(sp.Symbol("P", positive=True, integer=True), P)
        )
        agrees = symbolic_agrees(theory, gap, tol=GAP_THEORY_TOL, scale=1.0, what="gap")
        holds = agrees.holds and r["I_minus_Pi_G"] <= tol
        rule = f"Π = UFᵀ: gap = √(P − 1) = {theory:.12g} to 1e-12, (I − Π)G ≤ tol"
        notes.append(
            f"gap: Π = UFᵀ and the block mean reads E_d: ‖G(I − Π)‖/‖G‖ = {gap:.12g} "
            f"= √(P − 1) (P = {P}); G still writes only into E_p ((I − Π)G = 0)"
        )
    else:
        holds, rule = True, "Π is neither UB nor UFᵀ: reported only"
        notes.append(
            "Π = 1e_1ᵀ (global causal mask): the slow coupling also writes into E_d "
            f"(‖(I − Π)G‖/‖G‖ = {r['I_minus_Pi_G']:.3g}); the gate is invisible"
        )
    return Diagnostic(bool(holds), gap, rule), notes


def jvp_matches_finite_differences(f: dict, tol: float, slope_tol: float) -> Diagnostic:
    """The checked JVP column is the derivative: Taylor remainder of order 2 (or, ``X_L`` affine
    along it, secant defect at ``h_1`` ≤ tol), and the central difference at ``h = 1e-6`` within
    its rounding and truncation allowance."""
    allowance = FD_ROUNDING_UNITS * f["jvp_vs_fd_rounding_unit"] + FD_TRUNCATION
    taylor = f["jvp_taylor_remainder"]
    return Diagnostic(
        bool(
            (taylor["holds"] or f["jvp_secant_defect_rel"] <= tol)
            and f["jvp_vs_fd_rel"] <= allowance
        ),
        [
            f["jvp_taylor_slope"],
            taylor["ci95"],
            f["jvp_secant_defect_rel"],
            f["jvp_vs_fd_rel"],
            allowance,
        ],
        f"([Taylor remainder order 2: asymptotic-window slope, 95 % interval in "
        f"2 ± {slope_tol:g}] or [affine along e: secant defect at h_1 ≤ tol]) and "
        f"central difference at h = 1e-6 within {FD_ROUNDING_UNITS:g} rounding units "
        f"u‖X_L‖/(h‖Je‖) + {FD_TRUNCATION:g}",
    )


def gate_sweep_orders(inst: Instance, f: dict, tol: float) -> Diagnostic:
    """Part (d), when it applies: Vs columns ∝ g, Qs/Ks ∝ g³ (or ≤ tol when no passed-on pooled
    token can move), layer 0's slow QK and the fast QK columns ≤ tol."""
    rule = (
        "[Vs slope 1 ± 0.05, Qs/Ks slope 3 ± 0.1 (or their columns ≤ tol when they cannot move), "
        "layer-0 slow QK ≤ tol, fast QK ≤ tol], columns relative to the largest V/Vs singular "
        "value at each gate"
    )
    if not gate_sweep_applies(inst, f):
        return Diagnostic(True, "not applicable (gate invisible, L = 1 or heterogeneous)", rule)
    sw = f["gate_sweep"]
    if inst.slow_kernel_can_move():  # Qs, Ks ∝ g³
        slow_qk_ok = (
            "slow_qk_slope" in sw
            and abs(sw["slow_qk_slope"]["slope"] - 3.0) < GATE_SWEEP_TOL["slow_qk_slope"]
        )
    else:  # every passed-on pooled token sees only itself
        slow_qk_ok = sw["slow_qk_max_rel"] <= tol
    holds = bool(
        sw["fast_qk_max_rel"] <= tol
        and sw["layer0_slow_qk_max_rel"] <= tol
        and slow_qk_ok
        and "Vs_slope" in sw
        and abs(sw["Vs_slope"]["slope"] - 1.0) < GATE_SWEEP_TOL["Vs_slope"]
    )
    value = [
        sw.get("Vs_slope", {}).get("slope"),
        sw.get("slow_qk_slope", {}).get("slope", sw["slow_qk_max_rel"]),
        sw["layer0_slow_qk_max_rel"],
        sw["fast_qk_max_rel"],
    ]
    return Diagnostic(holds, value, rule)
