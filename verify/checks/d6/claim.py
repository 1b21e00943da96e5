"""D6 — visible and invisible directions along the token-homogeneous trajectory.

Statement (reference ``X_0 = 1 x_0ᵀ``, ``E = X_0``, gate ``g = 0``, named mask, ``Π = R Lᵀ``):

(a) ``Q_l, K_l`` (fast) and ``Qs_l, Ks_l`` (slow) are invisible to all orders: their columns of the
    visibility map ``θ ↦ δ(Lᵀ X_L)`` (and of ``θ ↦ δX_L``) vanish, and finite ``O(1)`` perturbations
    of them leave the trajectory and every attention matrix unchanged. The visible side: ``V``
    moves ``Lᵀ X_L`` with rank between 1 and ``d`` (a homogeneous trajectory responds
    homogeneously), all parameters together with rank ≤ ``d + L``, persistent inputs ``δX_0 = RδY``
    with full rank; the gate is visible exactly when the slow path writes into a token the
    persistent component reads (not for the global ``causal`` mask: token 0 never receives it).
(b) A position-dependent perturbation with forcing in ``E_d = ker Lᵀ ⊗ R^d`` — formalised in
    :mod:`numerics.analysis.visibility` as an input perturbation ``δX_0 = (I − Π)Z``, an injection-target
    perturbation ``δE = (I − Π)Z`` (``γ > 0``) or an additive forcing ``F_l = (I − Π)Z_l`` of every
    layer — leaves ``Lᵀ X_L`` unmoved to first order. When the persistent tokens attend only to
    themselves (causal masks: first token of each block / of the sequence) it does not move at any
    order; otherwise (``block_bidirectional``: the block mean) it moves at second order (fitted
    slope 2 of the change against the perturbation size). The first-order change of the kernel
    ``δA`` annihilates the state: ``δA·X* = 0`` (rows of ``δA`` sum to zero), while ``δA ≠ 0``.
(c) The slow coupling at a homogeneous state is ``G = U_c K_s B`` (⊗ a d×d map): ``G(I − UB) = 0``
    and ``(I − UB)G = 0``. When ``Π = UB`` (``block_bidirectional``) it lies on the persistent side,
    ``G(I − Π) = 0``; when ``Π = UFᵀ`` (``block_causal``) the block mean reads part of ``E_d``:
    ``‖G(I − Π)‖₂ = √(P − 1)·‖G‖₂`` (:func:`theory.stability.block_causal_gap_ratio`, the gap)
    while ``(I − Π)G = 0``.
(d) At a reference gate ``g ≠ 0`` the ``Vs`` columns grow like ``g`` and the ``Qs, Ks`` columns like
    ``g³`` (layer 0's vanish; all vanish when ``N ≤ 2``: the only pooled token passed on by ``U_c``
    attends to itself alone): the slow kernel's change is ``O(g)``, it acts only on the ``O(g)``
    deviation of the pooled values from homogeneity, and the gate multiplies the result; fast
    ``Q, K`` stay invisible. The orders do not depend on the fast mask: for ``block_causal`` and
    ``block_bidirectional`` the states stay block-constant (the slow path writes ``U_c``-shifted
    block values, constant inside each block), on which the two masks act alike and the first token
    equals the block mean (seed 11, T = 16, P = 4, d = 6, L = 4: identical norms, local slopes
    3.054, 3.024, 3.008, 3.003, 3.001 … → 3.000 from g = 0.1 down to 1e-6). Decided when the gate is
    visible and ``L ≥ 2``. The order is the local slope of ``log‖columns‖`` against ``log g``
    between the two smallest gates of ``gate_sweep`` (the law is asymptotic: the fit over the whole
    range, reported, is biased by the ``O(g²)`` corrections at ``g_hi``; e.g. slope 0.91 instead of
    1 on some random weights). The vanishing columns are ``δA·W`` with ``W`` constant on the rows
    that ``δA`` mixes and rows of ``δA`` summing to zero: zero in exact arithmetic, rounding in
    floating point once ``g ≠ 0`` makes the states block-dependent (``4e-19`` of the map's scale on
    that instance, not bitwise 0). They are held to ``tol`` relative to the largest singular value
    of the ``V``/``Vs`` blocks at the same gate, like the ``g = 0`` columns of (a).

Hypotheses, measured on the instance: the reference is token-homogeneous (every row of ``X_0``
equal, bitwise) and every layer's gate is 0. Which branch of (b), (c) and (d) applies is read off
the instance's own matrices: the mask rows of the tokens in the support of ``L``, ``Π`` compared
with ``UB`` and ``UFᵀ``, and ``Lᵀ Slow_l(X_l)`` at the reference.

Checked by: exact JVPs (:func:`numerics.analysis.visibility.visibility_map`, one column per parameter entry
and per bundle basis vector), singular values and numerical ranks per block (:func:`block_rank`:
above ``rank_rtol`` × the block's own largest singular value and above ``1e3·u`` × the whole map's;
caveat: with depth the persistent inputs' responses fall in groups by block distance, and at
``T = 16, d = 8, L = 16`` four of them are 1.7e-15 of the map's largest, below what double precision
resolves, so that instance fails ``visible_directions``: in floating point those directions are
invisible), a Taylor-remainder cross-check of
one JVP column against the forward map (the remainder ``‖X_L(θ + he) − X_L(θ) − h·Je‖`` has order
2, decided by :func:`verify.measure.taylor_remainder_order` on a ladder of ``h`` in units of the
entry's scale; a fixed central-difference tolerance is not scale-free: its rounding error is
``≈ u‖X_L‖/(h‖Je‖)`` relative, ``1.5e-6`` at ``h = 1e-6`` for the column of seed 106, which moves
``X_L`` by only ``1.5e-4`` of its size), finite perturbations of sizes ``s`` in
``[s_min, s_max]`` with a fitted slope and its 95 % interval, dense ``∂Slow/∂X`` at every state
of the trajectory. The ``E_d`` basis is any orthonormal basis of ``ker Lᵀ`` (LAPACK's choice,
through :mod:`numerics.lapack`); it enters only through singular values and ranks, which do not
depend on it. The singular values of every block are the verdict's series ``visibility_spectra``.

Your own depth flow: a :class:`~verify.systems.DepthFlow` is checked the same way on its model
(weights from the flow's seed or trained, every layer's own gate: a flow with any ``g_l ≠ 0`` is
outside ``gate_zero``, decided from the flow before its sizes; the
reference ``x_0`` and the perturbation streams from the check's ``seed``, ``reference`` and
``gate_sweep`` as given). With a named mask nothing else changes. With a boolean mask the
statement needs the persistent component ``Π = R Lᵀ``, the spectral projector onto the eigenvalue
1, with ``L`` a stationary weighting: a *block-local* mask (no entry outside the diagonal P×P
blocks) whose blocks each have a simple eigenvalue 1 (one closed class of the block's mask graph)
gives ``R = U`` and ``L`` the blocks' stationary weightings; a mask that is not block-local is one
block, ``R = 1`` and ``L`` the stationary law of its one closed class (as the global causal mask,
``L = e_1``). ``L`` is computed in exact rational arithmetic
(:func:`verify.user_kernels.exact_coarse_maps`) and rounded once (the visibility map's own ``L``,
:func:`numerics.model.masks.coarse_maps`, is the float64 solve of the same equations). Which branch
of (b)–(d) applies is read off the matrices as for the named masks (``Π`` neither ``UB`` nor
``UFᵀ``: the gap of (c) is reported only). A block (or a non-block-local mask) with several closed
classes has no unique ``L``: bad input (exit 2, naming the block); so are ``T·d > 128`` (dense
maps) and a field of the flow beyond the bounds of D6's parameter of the same name (T, P, d,
L ≤ 16, γ in (0, 1000], gate, scale, slow_scale: γ = 0 leaves no E_d formalisation of the
injection).

Negative controls: a heterogeneous reference (``X_0`` with independent tokens). With
``block_bidirectional`` the QK columns become visible (rank > 0) and ``E_d`` forcing moves the
block mean at first order. With ``block_causal`` the persistent component (first tokens) stays
blind to ``Q, K`` even then (its conclusion part holds, reported) but the state sees them.
Needs ``N ≥ 3`` blocks for the ``g³`` law of (d) to be non-vacuous (``U_c`` drops the last
pooled token).
"""

from __future__ import annotations

import numpy as np

from ...claim import Claim, Conclusion, control_table
from ...model_params import model_params
from ...params import Order, Param
from ...systems import DepthFlow
from ...user_kernels import exact_coarse_maps
from ...verdict import Diagnostic
from .measurements import GATE_SWEEP_POINTS, Instance, gates_closed, layer_gates_of, measured
from .parts import (
    GATE_SWEEP_TOL,
    KRON_TOL,
    Ed_forcing_higher_orders,
    Ed_forcing_invisible_first_order,
    gate_sweep_orders,
    gate_visibility_as_predicted,
    jvp_matches_finite_differences,
    kernel_change_annihilates_state,
    qk_invisible_in_persistent_component,
    qk_invisible_in_state_all_orders,
    slow_coupling_block_constant,
    slow_coupling_gap_matches_theory,
    visible_directions,
)


def positive(default: float, meaning: str, high: float = 1.0) -> Param:
    """A float parameter in ``(0, high]`` (a step or a tolerance)."""
    return Param(default, meaning, low=0.0, high=high, open_low=True)


# ----------------------------------------------------------------------------- the claim


def jvp_layers(p: dict) -> int:
    """Layer-JVPs of the check: ``1 + GATE_SWEEP_POINTS`` visibility maps, each of ``L·8d² + 3Td``
    columns (every parameter entry of ``L`` layers, the bundle bases) through ``L`` layers."""
    T, d, L = p["T"], p["d"], p["L"]
    return (1 + GATE_SWEEP_POINTS) * L * (8 * L * d * d + 3 * T * d)


def _block_local(system: DepthFlow) -> bool:
    """The flow's boolean mask has no entry outside the diagonal P×P blocks."""
    mask = np.asarray(system.mask, bool)
    blocks = np.arange(mask.shape[0]) // system.P
    return not bool(np.any(mask & (blocks[:, None] != blocks[None, :])))


class D6(Claim):
    id = "D6"
    title = "Visible and invisible directions"
    abstract = (
        "Weight perturbations supported on the decaying bundle move neither the persistent "
        "component ... nor the frozen kernel to first order"
    )
    statement = (
        "Along the homogeneous trajectory (g = 0) Q, K are invisible to all orders, E_d "
        "forcing leaves Lᵀ X_L unmoved to first order, and the slow coupling G "
        "reads/writes only block-constant information (block_causal gap: "
        "‖G(I − Π)‖ = √(P − 1)‖G‖)."
    )
    params = {
        **model_params(
            T=dict(default=12, high=64),
            P=dict(high=64),
            d=dict(high=16),
            L=dict(default=3, high=16),
            mask="block_bidirectional",
            gamma=dict(
                default=0.5,
                meaning="input injection γ (> 0: the E_Ed formalisation needs it)",
                high=1e3,
                open_low=True,
            ),
            scale=dict(high=1e3),
            slow_scale=dict(high=1e3),
            gate=dict(meaning="gate of every layer at the reference", low=-1e3, high=1e3),
        ),
        "reference": Param(
            "homogeneous",
            "reference input: X_0 = 1x_0ᵀ, or plus independent tokens",
            choices=("homogeneous", "heterogeneous"),
        ),
        "heterogeneity": Param(
            1.0, "size of the independent token part (heterogeneous reference)", low=0.0, high=1e3
        ),
        "qk_size": Param(1.0, "size of the finite Q, K, Qs, Ks perturbation", low=0.0, high=1e3),
        "s_min": Param(1e-3, "smallest finite E_d perturbation", low=1e-8, high=1.0),
        "s_max": Param(1e-1, "largest finite E_d perturbation (> s_min)", low=1e-8, high=1.0),
        "n_s": Param(
            9, "finite perturbation sizes (≥ 3 for a slope with an interval)", low=3, high=50
        ),
        "rank_rtol": Param(
            1e-9,
            "numerical rank threshold relative to each block's largest singular value",
            low=0.0,
            high=1.0,
            open_low=True,
            open_high=True,
        ),
        "tol": positive(1e-12, "relative tolerance of the vanishing quantities", high=1e-3),
        "slope_tol": positive(
            0.1,
            "absolute tolerance of the slopes 2 (E_d second order, Taylor remainder of the JVP)",
        ),
        "gate_sweep": Param(
            (1e-3, 1e-1),
            "reference gates g_lo < g_hi of part (d)",
            low=1e-8,
            high=1.0,
            min_len=2,
            max_len=2,
        ),
    }
    hypotheses = {
        "reference_token_homogeneous": "every row of X_0 is equal (bitwise): X_0 = 1x_0ᵀ",
        "gate_zero": "every layer's gate is 0 at the reference",
    }
    hypothesis_sources = {
        "reference_token_homogeneous": "input",
        "gate_zero": "input",
    }
    conclusion = {
        "qk_invisible_in_persistent_component": "Q, K, Qs, Ks columns of δ(Lᵀ X_L): numerical rank 0 and max column norm ≤ tol "
        "(relative to the map's largest singular value)",
        "qk_invisible_in_state_all_orders": "Q, K columns of δX_L ≤ tol; O(1) finite Q, K, Qs, Ks perturbations change neither the "
        "trajectory nor any attention matrix (≤ tol); δA along Q, K ≤ tol",
        "visible_directions": "1 ≤ rank V ≤ d, rank of all parameters ≤ d + L, persistent inputs "
        "δX_0 = RδY full rank and moving Lᵀ X_L (relative response > 1e-2)",
        "gate_visibility_as_predicted": "rank g ≥ 1 iff max_l ‖Lᵀ Slow_l(X_l)‖ > 0",
        "Ed_forcing_invisible_first_order": "the E_d blocks (X0_Ed, E_Ed, F_Ed) have rank 0 and a "
        "random direction of each moves Lᵀ X_L by ≤ tol at first "
        "order",
        "Ed_forcing_higher_orders": "persistent tokens that attend only to themselves: no change "
        "at any order (≤ tol up to size 1); otherwise a fitted slope "
        "2 ± slope_tol (or no change at any order)",
        "kernel_change_annihilates_state": "‖δA·W‖ ≤ tol·‖δA‖‖W‖ for W = X, X_nV at every layer, "
        "with ‖δA‖ > 1e-8 whenever some token attends to two",
        "slow_coupling_block_constant": "G(I − UB) = 0 and (I − UB)G = 0 (≤ tol), and "
        "G = (U_c K_s B) ⊗ M_sᵀ (≤ 1e-10)",
        "slow_coupling_gap_matches_theory": "‖G‖ > 0 and Π = UB: gap ≤ tol; Π = UFᵀ: gap = √(P − 1) "
        "to 1e-12 and (I − Π)G ≤ tol; otherwise reported only",
        "jvp_matches_finite_differences": "Taylor remainder of a V column, ‖X_L(θ + he) − X_L(θ) − "
        "h·Je‖, of order 2 (asymptotic-window slope, 95 % "
        "interval in 2 ± slope_tol) on h = RMS(V_0)·10^(−j/4), "
        "j ≥ 1; or, X_L affine along e, the remainder at h_1 "
        "≤ tol·h_1‖Je‖",
        "gate_sweep_orders": "when the gate is visible and L ≥ 2 on a homogeneous reference: Vs "
        "columns ∝ g (local slope at the two smallest gates 1 ± 0.05), Qs, Ks "
        "∝ g³ (3 ± 0.1; ≤ tol when every pooled token passed on by U_c "
        "attends only to itself, N ≤ 2), layer 0's slow QK and fast Q, K "
        "columns ≤ tol; "
        "vanishing columns relative to the largest singular value of the V or "
        "Vs block at the same gate",
    }
    controls = control_table(
        (
            (
                "heterogeneous_reference",
                {"reference": "heterogeneous"},
                "reference_token_homogeneous",
                "independent tokens: Q, K become visible in the block means and E_d "
                "forcing moves them at first order",
            ),
            (
                "heterogeneous_reference_block_causal",
                {"reference": "heterogeneous", "mask": "block_causal"},
                "reference_token_homogeneous",
                "independent tokens with block_causal: the first tokens stay blind to Q, K "
                "(that part holds, reported) but the state sees them",
            ),
        ),
        seed=0,
    )
    key_figures = (
        "qk_max_column_norm_rel",
        "parameter_map_rank",
        "Ed_first_order_persistent_max_rel",
        "slow_coupling_gap_rel",
    )

    orders = (
        Order(("s_min", "s_max"), "the finite E_d perturbations run from s_min to s_max"),
        Order(("gate_sweep",), "the reference gates g_lo < g_hi of part (d)"),
    )

    def validate(self, p):
        if p["T"] * p["d"] > 128:
            raise ValueError(
                f"parameters T={p['T']}, d={p['d']}: D6 builds dense maps, T·d must "
                f"be ≤ 128, got {p['T'] * p['d']}"
            )

    def work(self, p):
        """:func:`jvp_layers` layer-JVPs of ``T²·d`` attention units each (the finite
        perturbations, the Taylor ladder and the dense ``∂Slow/∂X`` are small beside them)."""
        T, d, layers = p["T"], p["d"], jvp_layers(p)
        return {"start": 1, "layer_jvp": layers, "attention": layers * T * T * d}

    instance = Instance

    systems = (DepthFlow,)
    declared_hypotheses = {"gate_zero": lambda system: gates_closed(layer_gates_of(system))}
    system_terms = {
        "DepthFlow": "gate=0.0, the default (gate_zero: the homogeneous trajectory needs the slow "
        "path closed), gamma > 0 (D6's own range for γ: the default gamma=0.0 is refused, pass "
        "e.g. gamma=0.5), T·d ≤ 128, and a mask with one closed class per block (the maps R, L "
        "exist; named masks do)"
    }

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.DepthFlow` within D6's parameter bounds with ``T·d ≤ 128``
        and a named mask, or a boolean mask with one closed class per block (per mask when it is
        not block-local); bad input otherwise (the maps ``R, L`` of the statement do not
        exist)."""
        super().accepts(system)
        system.within_limits(self.id, self.params)
        T, d = int(system.T or 0), int(system.d)
        if T * d > 128:
            raise ValueError(
                f"{system.name}: T={T}, d={d}: D6 builds dense maps, T·d must be ≤ 128, got {T * d}"
            )
        if isinstance(system.mask, str):
            return
        try:
            exact_coarse_maps(system.mask, system.P)
        except ValueError as exc:
            where = "block" if _block_local(system) else "mask (not block-local: one block)"
            raise ValueError(
                f"{system.name}: D6 on your mask: {exc}; the statement's Π = R Lᵀ needs one "
                f"closed class per {where}"
            ) from None

    def build_system(self, p, seed, system):
        """The D6 instance of your flow (its model and gate; the reference and the
        perturbations from ``seed``)."""
        return Instance(p, seed, system)

    def diagnose(self, inst):
        spread = float(np.abs(inst.X0 - inst.X0[:1]).max())
        gates = inst.gates  # the input
        built = [float(lp.g) for lp in inst.model.layers]
        if built != gates:  # the second measurement, through the implementation
            raise RuntimeError(f"the model's gates {built} are not the input's {gates}")
        return {
            "reference_token_homogeneous": Diagnostic(
                inst.reference_homogeneous(), spread, "max |X_0 − 1 x_0ᵀ| = 0 (bitwise)"
            ),
            "gate_zero": gates_closed(gates),
        }

    def conclude(self, inst):
        p, cfg = inst.p, inst.cfg
        tol = p["tol"]
        f, series = measured(inst)
        higher, higher_notes = Ed_forcing_higher_orders(f, tol, p["slope_tol"])
        gap, gap_notes = slow_coupling_gap_matches_theory(f, cfg.P, tol)
        notes = higher_notes + gap_notes
        if f["persistent_tokens_see_only_themselves"] and not inst.reference_homogeneous():
            notes.append(
                "persistent tokens attend only to themselves: Q, K stay invisible in "
                "Lᵀ X_L even on a heterogeneous reference"
            )
        parts = {
            "qk_invisible_in_persistent_component": qk_invisible_in_persistent_component(f, tol),
            "qk_invisible_in_state_all_orders": qk_invisible_in_state_all_orders(f, tol),
            "visible_directions": visible_directions(f, cfg.d, p["L"]),
            "gate_visibility_as_predicted": gate_visibility_as_predicted(f),
            "Ed_forcing_invisible_first_order": Ed_forcing_invisible_first_order(f, tol),
            "Ed_forcing_higher_orders": higher,
            "kernel_change_annihilates_state": kernel_change_annihilates_state(
                f, cfg.mask_array, tol
            ),
            "slow_coupling_block_constant": slow_coupling_block_constant(f, tol),
            "slow_coupling_gap_matches_theory": gap,
            "jvp_matches_finite_differences": jvp_matches_finite_differences(
                f, tol, p["slope_tol"]
            ),
            "gate_sweep_orders": gate_sweep_orders(inst, f, tol),
        }
        return Conclusion(
            parts,
            f,
            tolerance={
                "relative": tol,
                "rank_rtol": p["rank_rtol"],
                "slope_abs": p["slope_tol"],
                "kron_structure_rel": KRON_TOL,
                "taylor_remainder_order_abs": p["slope_tol"],
                "gate_sweep_vanishing_rel": tol,
                **GATE_SWEEP_TOL,
            },
            notes=notes,
            series=series,
        )


CLAIM = D6()
