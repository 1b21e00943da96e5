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
(weights from the flow's seed, its gate: a flow with ``gate ≠ 0`` is outside ``gate_zero``; the
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
import sympy as sp

import fastslow.numerics as nm
from fastslow.numerics import lapack
from fastslow.numerics.analysis.stability import slow_jacobian
from fastslow.numerics.analysis.visibility import (
    PARAMETER_BLOCKS,
    block_spectra,
    decaying_projector,
    forced_stack,
    forced_tangent,
    kernel_jvp,
    numerical_rank,
    persistent_component,
    visibility_map,
)
from fastslow.numerics.model import kernels
from fastslow.numerics.model.masks import block_level_mask, coarse_maps
from fastslow.theory.stability import block_causal_gap_ratio

from ..claim import Claim, Conclusion, control_table
from ..measure import (
    UNIT_ROUNDOFF,
    central_difference,
    local_slopes,
    ratio,
    relative_error,
    slope_fit,
    symbolic_agrees,
    taylor_remainder_order,
)
from ..model_params import model_params
from ..params import Order, Param
from ..systems import DepthFlow
from ..user_kernels import exact_coarse_maps
from ..verdict import Diagnostic

FORMALISATIONS = ("X0_Ed", "E_Ed", "F_Ed")
"""The three formalisations of E_d forcing: input, injection target, additive forcing."""
KRON_TOL = 1e-10
"""Relative residual of ``∂Slow/∂X = (U_c K_s B) ⊗ M_sᵀ``."""
TAYLOR_LADDER_LEN = 40
"""Ladder ``h_j = s·10^(−j/4)``, ``j = 1 … 40`` of the Taylor remainder test (ends at the rounding
floor long before ``j = 40``)."""
FD_STEP = 1e-6
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
GATE_SWEEP_POINTS = 5
"""Reference gates of part (d), geometric between ``g_lo`` and ``g_hi``."""
GATE_SWEEP_TOL = {"Vs_slope": 0.05, "slow_qk_slope": 0.1}
"""Absolute tolerances of the local slopes 1 (Vs) and 3 (Qs, Ks) at the two smallest gates."""
GAP_THEORY_TOL = 1e-12
"""Agreement of the measured block_causal gap with √(P − 1) (:mod:`theory.stability`)."""


def reported_slope(x, y) -> dict:
    """The fitted log–log slope of ``y`` against ``x`` (:func:`verify.measure.slope_fit`) as D6
    reports it: slope, 95 % interval and r²."""
    fit = slope_fit(x, y)
    return {k: fit[k] for k in ("slope", "ci95", "r2")}


def positive(default: float, meaning: str, high: float = 1.0) -> Param:
    """A float parameter in ``(0, high]`` (a step or a tolerance)."""
    return Param(default, meaning, low=0.0, high=high, open_low=True)


# ----------------------------------------------------------------------------- the instance


def with_random_qk(model: nm.Model, rng, size: float, names=("Q", "K", "Qs", "Ks")) -> nm.Model:
    """``model`` with random perturbations of size ``size`` added to ``Q, K, Qs, Ks`` of every
    layer (entries ``size·N(0, 1)/√d``)."""
    d = model.config.d
    layers = []
    for lp in model.layers:
        q = lp.copy()
        for n in names:
            setattr(q, n, getattr(q, n) + size * rng.standard_normal((d, d)) / np.sqrt(d))
        layers.append(q)
    return nm.Model(model.config, tuple(layers))


def random_Ed_direction(cfg, model, kind: str, rng, I_Pi):
    """``(dX0, dE, dF)`` of one random E_d formalisation (unit Frobenius norm; the others None)."""
    T, d = cfg.T, cfg.d
    if kind == "F_Ed":
        dF = np.array([I_Pi @ rng.standard_normal((T, d)) for _ in range(model.L)])
        return None, None, dF / np.linalg.norm(dF)
    Z = I_Pi @ rng.standard_normal((T, d))
    Z /= np.linalg.norm(Z)
    return (Z, None, None) if kind == "X0_Ed" else (None, Z, None)


def forced_by(model, X0, E, dirs, s):
    """``X_L`` with the E_d direction ``dirs = (dX0, dE, dF)`` applied at size ``s``."""
    dX0, dE, dF = dirs
    return forced_stack(
        model,
        X0 + (0 if dX0 is None else s * dX0),
        E + (0 if dE is None else s * dE),
        None if dF is None else s * dF,
    )


class Instance:
    """The seeded model (every gate at ``gate``), the reference ``X_0 = E`` (homogeneous, or plus
    independent tokens), its trajectory, the maps ``R, L`` of the persistent component, the
    projector ``I − Π`` onto ``E_d`` and the random streams of the perturbations."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, qk_seed, dir_seed, *_ = np.random.SeedSequence(seed).spawn(6)
        if system is None:
            cfg = nm.ModelConfig.from_params(p)
            self.model = nm.init_model(
                cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"], gate=p["gate"]
            )
        else:  # your flow: its weights (its seed) and gate; the parameters it sets follow it
            self.model = system.model()
            cfg = self.model.config
            p = {**p, "L": self.model.L, "gate": float(system.gate)}
        self.p = p
        self.cfg = cfg
        rng = np.random.default_rng(x_seed)
        X0 = np.ones((cfg.T, 1)) * rng.standard_normal(cfg.d)
        if p["reference"] == "heterogeneous":
            X0 = X0 + p["heterogeneity"] * rng.standard_normal((cfg.T, cfg.d))
        self.X0, self.E = X0, X0.copy()
        self.qk_rng = np.random.default_rng(qk_seed)
        self.dir_rng = np.random.default_rng(dir_seed)
        self.traj = nm.stack_trajectory(self.model, X0, self.E)
        if cfg.mask_name is None:  # your block-local mask: exact stationary weightings, rounded
            R, L = exact_coarse_maps(cfg.mask_array, cfg.P)
        else:
            R, L = coarse_maps(cfg.mask_name, cfg.T, cfg.P)
        self.R, self.L = R, L
        self.I_Pi = decaying_projector(cfg)

    # --- structure of the instance, read off its matrices --------------------------------------
    def persistent_tokens(self) -> np.ndarray:
        """Tokens read by the persistent component (the support of ``L``)."""
        return np.flatnonzero(np.any(self.L != 0, axis=1))

    def persistent_tokens_see_only_themselves(self) -> bool:
        M = self.cfg.mask_array
        return bool(all(M[t].sum() == 1 and M[t, t] for t in self.persistent_tokens()))

    def slow_output_read_by_persistent(self) -> float:
        """``max_l ‖Lᵀ Slow_l(X_l)‖`` along the trajectory: > 0 iff the gate can move ``Lᵀ X_L``."""
        return float(
            max(
                np.linalg.norm(self.L.T @ nm.slow_path(self.cfg, lp, self.traj[l]))
                for l, lp in enumerate(self.model.layers)
            )
        )

    def slow_kernel_can_move(self) -> bool:
        """Some pooled token that ``U_c`` passes on (blocks ``0 … N − 2``) attends to two or more
        pooled tokens: otherwise its slow attention weight is 1 whatever ``Qs, Ks`` (``N ≤ 2``)."""
        N = self.cfg.N
        Mb = block_level_mask(self.cfg.slow_mask, N)
        return bool(N >= 2 and Mb[: N - 1].sum(axis=1).max() >= 2)

    def reference_homogeneous(self) -> bool:
        return bool(np.all(self.X0 == self.X0[:1]))


# ----------------------------------------------------------------------------- measurements


RANK_ROUNDING_UNITS = 1e3
"""A singular value is resolved above rounding when it exceeds ``1e3·u`` times the whole map's
largest (invisible blocks sit at ≤ 2e-17 of it, measured)."""


def block_rank(s: np.ndarray, scale: float, rtol: float) -> int:
    """The rank of one input block's map: its singular values above ``rtol`` times the block's own
    largest and above rounding of the whole map (:data:`RANK_ROUNDING_UNITS`). Relative to its own
    largest because the persistent-input block's singular values fall in groups by block distance
    with depth (to 1.7e-7 of its largest at ``L = 16, T = 32``, 2.7e-11 of the whole map's): far
    above rounding, but below ``rtol`` times the whole map's largest."""
    s = np.asarray(s, dtype=float)
    own = float(s.max()) if s.size else 0.0
    return numerical_rank(s, 1.0, max(rtol * own, RANK_ROUNDING_UNITS * UNIT_ROUNDOFF * scale))


def visibility_figures(inst: Instance) -> tuple[dict, dict]:
    """Part (a): the visibility map, its block spectra and ranks, finite QK perturbations; and the
    block spectra as series."""
    p, model, cfg, X0, E = inst.p, inst.model, inst.cfg, inst.X0, inst.E
    vmap = visibility_map(model, X0, E, output="persistent")
    smap = visibility_map(model, X0, E, blocks=("Q", "K", "V", "Qs", "Ks"), output="state")
    spectra = block_spectra(vmap)
    scale = max(float(s.max()) for s in spectra.values() if s.size)
    ranks = {b: block_rank(s, scale, p["rank_rtol"]) for b, s in spectra.items()}
    all_params = np.hstack([vmap[b] for b in PARAMETER_BLOCKS])
    total_rank = numerical_rank(lapack.svdvals(all_params), scale, p["rank_rtol"])
    sscale = max(float(np.abs(smap[b]).max()) for b in smap)
    f = {
        "visibility_ranks": ranks,
        "visibility_top_singular_values": {
            b: (float(s[0]) if s.size else 0.0) for b, s in spectra.items()
        },
        "parameter_map_shape": list(all_params.shape),
        "parameter_map_rank": total_rank,
        "parameter_null_space_dim": int(all_params.shape[1] - total_rank),
        "persistent_dim": int(all_params.shape[0]),
        "qk_max_column_norm_rel": float(
            np.linalg.norm(np.hstack([vmap["Q"], vmap["K"]]), axis=0).max() / scale
        ),
        "qk_state_max_abs_rel": float(np.abs(np.hstack([smap["Q"], smap["K"]])).max() / sscale),
        "slow_qk_max_column_norm_rel": float(
            np.linalg.norm(np.hstack([vmap["Qs"], vmap["Ks"]]), axis=0).max() / scale
        ),
        "gate_rank": ranks["g"],
    }
    # finite O(1) perturbations of Q, K, Qs, Ks: trajectory and kernels unchanged (all orders)
    Kmask = nm.frozen_kernel(cfg.mask_array)
    pert = with_random_qk(model, inst.qk_rng, p["qk_size"])
    traj = nm.stack_trajectory(pert, X0, E)
    f["finite_qk_state_change_rel"] = float(
        np.abs(traj - inst.traj).max() / np.abs(inst.traj).max()
    )
    f["finite_qk_kernel_deviation"] = float(
        max(
            np.abs(nm.attention_kernel(cfg, lp, traj[l]) - Kmask).max()
            for l, lp in enumerate(pert.layers)
        )
    )
    series = {"visibility_spectra": {b: s.tolist() for b, s in spectra.items()}}
    return f, series


def taylor_test_figures(inst: Instance) -> dict:
    """Cross-check of one JVP column (entry ``V[0, 0]`` of layer 0) by the Taylor remainder.

    ``r(h) = ‖X_L(θ + h e) − X_L(θ) − h·J e‖`` is ``O(h²)`` when ``J e`` is the derivative and
    ``≈ h‖Δ‖`` (order 1) when the JVP is off by ``Δ``. The order is decided by the
    asymptotic-window rule (:func:`verify.measure.taylor_remainder_order`, first converged window,
    expected 2 ± ``slope_tol``) on the ladder ``h_j = s·10^(−j/4)``, ``j ≥ 1``, in units of the
    entry's own scale ``s = RMS(V_0)`` (1 if ``V_0 = 0``); the ladder ends where ``r`` is zero,
    never at a fixed tolerance. When ``X_L`` is affine along ``e`` (one layer on a homogeneous
    reference: ``r ≡ 0`` in exact arithmetic, pure rounding, no order) the JVP must instead equal
    the secant at the coarsest step, ``r(h_1) ≤ tol·h_1‖J e‖``. Also measured: the central
    difference at ``h = 1e-6`` with its rounding unit ``eps‖X_L‖/(h‖J e‖)`` (a column that barely
    moves ``X_L``, ``‖J e‖ ≪ ‖X_L‖``, is off by rounding alone).
    """
    model, cfg, X0, E = inst.model, inst.cfg, inst.X0, inst.E
    dV = [lp.zeros_like() for lp in model.layers]
    dV[0].V[0, 0] = 1.0
    _, jvp = forced_tangent(model, X0, E=E, dparams=dV)
    base = nm.stack(model, X0, E)

    def moved(h):
        """``X_L`` with layer 0's ``V[0, 0]`` moved by ``h``."""
        return nm.stack(
            nm.Model(cfg, tuple(lp.axpy(h, t) for lp, t in zip(model.layers, dV))), X0, E
        )

    s = float(np.sqrt(np.mean(model.layers[0].V ** 2))) or 1.0
    ladder = s * 10.0 ** (-np.arange(1, TAYLOR_LADDER_LEN + 1) / 4)
    taylor = taylor_remainder_order(
        moved, 0.0, 1.0, jvp, inst.p["slope_tol"], ladder=ladder, finest=False, resolution=None
    )
    njvp = float(np.linalg.norm(jvp))
    fd = central_difference(moved, 0.0, 1.0, FD_STEP)
    return {
        "jvp_taylor_remainder": {
            "slope": taylor["slope"],
            "ci95": taylor["ci95"],
            "holds": taylor["order_2"],
            "converged": taylor["converged"],
            "window": taylor["window"],
            "h": taylor["s"],
            "err": taylor["remainder"],
            "local_slopes": taylor["local_slopes"],
        },
        "jvp_taylor_slope": taylor["slope"],
        "jvp_secant_defect_rel": taylor["secant_defect_coarsest_rel"],
        "jvp_column_rel": ratio(njvp, float(np.linalg.norm(base))),
        "jvp_vs_fd_rel": relative_error(jvp, fd, scale=njvp),
        "jvp_vs_fd_rounding_unit": ratio(
            np.finfo(float).eps * np.linalg.norm(base), FD_STEP * njvp
        ),
    }


def forcing_figures(inst: Instance) -> dict:
    """Part (b): E_d forcing of each formalisation at first order (JVP) and at finite sizes
    ``s_min … s_max`` and 1 (the change of ``Lᵀ X_L`` and its fitted slope), and a persistent
    input's first-order response."""
    p, model, cfg, X0, E, I_Pi = inst.p, inst.model, inst.cfg, inst.X0, inst.E, inst.I_Pi
    rng = inst.dir_rng
    Lt = persistent_component
    first_order, remainder, slopes, any_order = {}, {}, {}, {}
    svals = np.geomspace(p["s_min"], p["s_max"], p["n_s"])
    base = Lt(cfg, forced_stack(model, X0, E))
    trivial = not np.any(I_Pi)
    for kind in () if trivial else FORMALISATIONS:
        dirs = random_Ed_direction(cfg, model, kind, rng, I_Pi)
        _, dXL = forced_tangent(model, X0, E=E, dX0=dirs[0], dE=dirs[1], dF=dirs[2])
        first_order[kind] = ratio(np.linalg.norm(Lt(cfg, dXL)), np.linalg.norm(dXL))
        changes = np.array(
            [np.linalg.norm(Lt(cfg, forced_by(model, X0, E, dirs, s)) - base) for s in svals]
        )
        big = np.linalg.norm(Lt(cfg, forced_by(model, X0, E, dirs, 1.0)) - base)
        any_order[kind] = ratio(max(changes.max(), big), np.linalg.norm(base))
        remainder[kind] = changes.tolist()
        if np.all(changes > 0):
            slopes[kind] = reported_slope(svals, changes)
    Zp = inst.R @ rng.standard_normal((inst.R.shape[1], cfg.d))
    _, dXLp = forced_tangent(model, X0, E=E, dX0=Zp / np.linalg.norm(Zp))
    return {
        "Ed_trivial": bool(trivial),
        "Ed_first_order_persistent_rel": first_order,
        "Ed_first_order_persistent_max_rel": max(first_order.values(), default=0.0),
        "Ep_first_order_persistent_rel": float(
            np.linalg.norm(Lt(cfg, dXLp)) / np.linalg.norm(dXLp)
        ),
        "Ed_persistent_change_any_order_rel": any_order,
        "Ed_second_order_slopes": slopes,
        "perturbation_sizes": svals.tolist(),
        "Ed_persistent_changes": remainder,
    }


def kernel_change_figures(inst: Instance) -> dict:
    """Part (b): the kernel's first-order change ``δA`` at every state of the trajectory, along an
    E_d and a random direction: ``‖δA·W‖/(‖δA‖‖W‖)`` for ``W = X, n(X)V`` and ``min ‖δA‖``; and
    ``δA`` along random ``Q, K`` directions of layer 0 at ``X_0``."""
    cfg, model, I_Pi, rng = inst.cfg, inst.model, inst.I_Pi, inst.dir_rng
    dA_X, dA_norm = 0.0, np.inf
    for l, lp in enumerate(model.layers):
        X = inst.traj[l]
        Xv = kernels.normed(cfg, X) @ lp.V
        for Z in (I_Pi @ rng.standard_normal(X.shape), rng.standard_normal(X.shape)):
            _, dA = kernel_jvp(cfg, lp, X, dX=Z)
            nA = float(np.linalg.norm(dA))
            dA_norm = min(dA_norm, nA)
            for W in (X, Xv):
                if nA > 0:
                    dA_X = max(dA_X, float(np.linalg.norm(dA @ W) / (nA * np.linalg.norm(W))))
    qk_dir = model.layers[0].zeros_like()
    qk_dir.Q[:] = rng.standard_normal(qk_dir.Q.shape)
    qk_dir.K[:] = rng.standard_normal(qk_dir.K.shape)
    return {
        "kernel_change_times_state_rel": dA_X,
        "kernel_change_min_norm": dA_norm,
        "kernel_change_along_qk": float(
            np.abs(kernel_jvp(cfg, model.layers[0], inst.X0, dparams=qk_dir)[1]).max()
        ),
    }


def slow_coupling_figures(inst: Instance) -> dict:
    """Part (c): ``∂Slow/∂X`` at every state against ``U_c K_s B ⊗ M_sᵀ``, ``UB`` and ``Π``
    (residuals relative to ``‖∂Slow/∂X‖₂``)."""
    cfg, model, I_Pi = inst.cfg, inst.model, inst.I_Pi
    T, d, P, N = cfg.T, cfg.d, cfg.P, cfg.N
    UB = np.kron(np.eye(N), np.full((P, P), 1.0 / P))
    Uc_Ks_B = (
        np.kron(np.eye(N, k=-1), np.ones((P, 1)))
        @ nm.frozen_kernel(np.tril(np.ones((N, N), bool)))
        @ np.kron(np.eye(N), np.full((1, P), 1.0 / P))
    )
    Id = np.eye(d)
    I_UB, I_Pi_d = np.kron(np.eye(T) - UB, Id), np.kron(I_Pi, Id)
    res = {"G_I_minus_UB": 0.0, "I_minus_UB_G": 0.0, "I_minus_Pi_G": 0.0, "kron_structure": 0.0}
    gap, norms = [], []
    for l, lp in enumerate(model.layers):
        S = slow_jacobian(cfg, lp, inst.traj[l])
        nS = float(np.linalg.norm(S, 2))
        norms.append(nS)
        # S = (U_c K_s B) ⊗ M_sᵀ: recover M_sᵀ from the (t, s) = (P, 0) block
        Ms_T = S[P * d : (P + 1) * d, 0:d] / Uc_Ks_B[P, 0] if N > 1 else np.zeros((d, d))
        for key, x in (
            ("G_I_minus_UB", np.linalg.norm(S @ I_UB, 2)),
            ("I_minus_UB_G", np.linalg.norm(I_UB @ S, 2)),
            ("I_minus_Pi_G", np.linalg.norm(I_Pi_d @ S, 2)),
            ("kron_structure", np.linalg.norm(S - np.kron(Uc_Ks_B, Ms_T))),
        ):
            res[key] = max(res[key], ratio(x, nS))
        gap.append(ratio(np.linalg.norm(S @ I_Pi_d, 2), nS))
    Pi = np.eye(T) - I_Pi
    F = np.kron(np.eye(N), np.eye(P)[:, :1])  # first token of each block
    U = np.kron(np.eye(N), np.ones((P, 1)))
    return {
        "slow_coupling_residuals_rel": {k: float(x) for k, x in res.items()},
        "slow_coupling_gap_rel": max(gap) if gap else 0.0,
        "slow_coupling_min_norm": min(norms),
        "slow_coupling_gap_abs_layer0": float(
            np.linalg.norm(slow_jacobian(cfg, model.layers[0], inst.X0) @ I_Pi_d, 2)
        ),
        "token_G_gap_rel": ratio(
            np.linalg.norm(Uc_Ks_B @ (np.eye(T) - Pi), 2), np.linalg.norm(Uc_Ks_B, 2)
        ),
        "Pi_minus_UB": float(np.abs(Pi - UB).max()),
        "Pi_minus_UFt": float(np.abs(Pi - U @ F.T).max()),
    }


def gate_sweep_figures(inst: Instance) -> dict:
    """Part (d): the Vs and Qs/Ks columns at reference gates ``g`` on ``gate_sweep`` (5 points).

    The columns that vanish in exact arithmetic (fast ``Q, K``; layer 0's ``Qs, Ks``; all ``Qs, Ks``
    when no passed-on pooled token can move) are measured relative to the map's scale at the same
    gate, the largest singular value of its ``V`` or ``Vs`` block (the ``O(1)`` visible
    directions), as in part (a): they are ``δA·W`` with rows of ``δA`` summing to zero and ``W``
    constant on the rows ``δA`` mixes, hence rounding (a few ``u`` relative) but not bitwise 0 once
    ``g ≠ 0`` makes the states block-dependent. The order of growth as ``g → 0`` is the local
    slope between the two smallest gates (decides); the fit over the whole range is reported (it
    is biased by the ``O(g²)`` corrections at ``g_hi``).
    """
    d = inst.cfg.d
    g_lo, g_hi = inst.p["gate_sweep"]
    gates = np.geomspace(g_lo, g_hi, GATE_SWEEP_POINTS)
    vs, qks, fq, layer0, scales = [], [], [], [], []
    for g in gates:
        vm = visibility_map(
            inst.model.with_gates(g), inst.X0, inst.E, blocks=("Q", "K", "V", "Vs", "Qs", "Ks")
        )
        scale = max(float(lapack.svdvals(vm[b])[0]) for b in ("V", "Vs"))
        scales.append(scale)
        vs.append(float(np.linalg.norm(vm["Vs"])))
        qks.append(float(np.linalg.norm(np.hstack([vm["Qs"], vm["Ks"]]))))
        fq.append(ratio(float(np.abs(np.hstack([vm["Q"], vm["K"]])).max()), scale))
        # layer 0's slow QK columns (first d² entries of each block): exactly zero in exact
        # arithmetic (X_0 is homogeneous, so are its pooled values)
        layer0.append(
            ratio(
                float(np.abs(np.hstack([vm["Qs"][:, : d * d], vm["Ks"][:, : d * d]])).max()), scale
            )
        )
    out = {
        "gates": gates.tolist(),
        "Vs_norms": vs,
        "slow_qk_norms": qks,
        "map_scales": scales,
        "fast_qk_max_rel": max(fq),
        "layer0_slow_qk_max_rel": max(layer0),
        "slow_qk_max_rel": max(ratio(q, sc) for q, sc in zip(qks, scales)),
    }
    for key, ys in (("Vs", vs), ("slow_qk", qks)):
        if min(ys) > 0:
            out[f"{key}_slope"] = {
                "slope": float(local_slopes(gates[:2], ys[:2])[0]),
                "gates": gates[:2].tolist(),
            }
            out[f"{key}_fit_whole_range"] = reported_slope(gates, ys)
    return out


def measured(inst: Instance) -> tuple[dict, dict]:
    """Every measured number of parts (a)–(d) (the figures) and the series, in the order the
    random streams are drawn (finite QK perturbations, then E_d directions and kernel changes)."""
    f, series = visibility_figures(inst)
    for more in (taylor_test_figures, forcing_figures, kernel_change_figures):
        f.update(more(inst))
    f.update(slow_coupling_figures(inst))
    f["persistent_tokens_see_only_themselves"] = inst.persistent_tokens_see_only_themselves()
    f["slow_output_read_by_persistent"] = inst.slow_output_read_by_persistent()
    f["gate_sweep"] = gate_sweep_figures(inst) if gate_sweep_applies(inst, f) else {}
    return f, series


def gate_sweep_applies(inst: Instance, f: dict) -> bool:
    """Part (d) is decided when the gate is visible (the slow output reaches ``Lᵀ X_L``), ``L ≥ 2``
    and the reference is homogeneous."""
    gate_visible = f["slow_output_read_by_persistent"] > 0.0
    return bool(gate_visible and inst.p["L"] >= 2 and inst.reference_homogeneous())


# ----------------------------------------------------------------------------- conclusion parts


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


# ----------------------------------------------------------------------------- the claim


def jvp_layers(p: dict) -> int:
    """Layer-JVPs of the check: ``1 + GATE_SWEEP_POINTS`` visibility maps, each of ``L·8d² + 3Td``
    columns (every parameter entry of ``L`` layers, the bundle bases) through ``L`` layers."""
    T, d, L = p["T"], p["d"], p["L"]
    return (1 + GATE_SWEEP_POINTS) * L * (8 * L * d * d + 3 * T * d)


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
        gates = [float(inst.p["gate"])] * inst.p["L"]  # the input
        built = [float(lp.g) for lp in inst.model.layers]
        if built != gates:  # the second measurement, through the implementation
            raise RuntimeError(f"the model's gates {built} are not the parameter gate={gates[0]}")
        return {
            "reference_token_homogeneous": Diagnostic(
                inst.reference_homogeneous(), spread, "max |X_0 − 1 x_0ᵀ| = 0 (bitwise)"
            ),
            "gate_zero": Diagnostic(
                all(g == 0.0 for g in gates), max(map(abs, gates)), "max_l |g_l| = 0"
            ),
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


def _block_local(system: DepthFlow) -> bool:
    """The flow's boolean mask has no entry outside the diagonal P×P blocks."""
    mask = np.asarray(system.mask, bool)
    blocks = np.arange(mask.shape[0]) // system.P
    return not bool(np.any(mask & (blocks[:, None] != blocks[None, :])))


CLAIM = D6()
