"""D6's instance and measurements (:mod:`verify.checks.d6`): the seeded model on its reference
trajectory, and every measured number of parts (a)–(d): the visibility map's ranks, the Taylor
test, the ``E_d`` forcing, the kernel change, the slow coupling and the gate sweep.

A module of the claim unit :mod:`verify.checks.d6`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.d6.claim`.
"""

from __future__ import annotations

import numpy as np

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
from fastslow.numerics.model.layer import attention_kernel, slow_path, stack, stack_trajectory
from fastslow.numerics.model.masks import block_level_mask, coarse_maps, frozen_kernel
from fastslow.numerics.model.weights import Model, ModelConfig, init_model

from ...measure import (
    UNIT_ROUNDOFF,
    central_difference,
    local_slopes,
    ratio,
    relative_error,
    slope_fit,
    taylor_remainder_order,
)
from ...systems import DepthFlow
from ...user_kernels import exact_coarse_maps
from ...verdict import Diagnostic

FORMALISATIONS = ("X0_Ed", "E_Ed", "F_Ed")
"""The three formalisations of E_d forcing: input, injection target, additive forcing."""


TAYLOR_LADDER_LEN = 40
"""Ladder ``h_j = s·10^(−j/4)``, ``j = 1 … 40`` of the Taylor remainder test (ends at the rounding
floor long before ``j = 40``)."""


FD_STEP = 1e-6


GATE_SWEEP_POINTS = 5
"""Reference gates of part (d), geometric between ``g_lo`` and ``g_hi``."""


def reported_slope(x, y) -> dict:
    """The fitted log–log slope of ``y`` against ``x`` (:func:`verify.measure.slope_fit`) as D6
    reports it: slope, 95 % interval and r²."""
    fit = slope_fit(x, y)
    return {k: fit[k] for k in ("slope", "ci95", "r2")}


def with_random_qk(model: Model, rng, size: float, names=("Q", "K", "Qs", "Ks")) -> Model:
    """``model`` with random perturbations of size ``size`` added to ``Q, K, Qs, Ks`` of every
    layer (entries ``size·N(0, 1)/√d``)."""
    d = model.config.d
    layers = []
    for lp in model.layers:
        q = lp.copy()
        for n in names:
            setattr(q, n, getattr(q, n) + size * rng.standard_normal((d, d)) / np.sqrt(d))
        layers.append(q)
    return Model(model.config, tuple(layers))


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


def layer_gates_of(system: DepthFlow) -> list[float]:
    """Every layer's gate of a user flow's model, as its declaration gives them (one per layer:
    a trained stack's own, a :class:`~verify.systems.DepthFlow`'s drawn about its ``gate``)."""
    return [float(lp.g) for lp in system.model().layers]


def gates_closed(gates: list[float]) -> Diagnostic:
    """D6's hypothesis ``gate_zero``: every layer's gate is exactly 0."""
    return Diagnostic(all(g == 0.0 for g in gates), max(map(abs, gates)), "max_l |g_l| = 0")


class Instance:
    """The seeded model (every gate at ``gate``), the reference ``X_0 = E`` (homogeneous, or plus
    independent tokens), its trajectory, the maps ``R, L`` of the persistent component, the
    projector ``I − Π`` onto ``E_d`` and the random streams of the perturbations."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, qk_seed, dir_seed, *_ = np.random.SeedSequence(seed).spawn(6)
        if system is None:
            cfg = ModelConfig.from_params(p)
            self.model = init_model(
                cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"], gate=p["gate"]
            )
        else:  # your flow: its weights (its seed) and gate; the parameters it sets follow it
            self.model = system.model()
            cfg = self.model.config
            p = {**p, "L": self.model.L, "gate": float(system.gate)}
        self.gates = (
            [float(p["gate"])] * p["L"] if system is None else layer_gates_of(system)
        )  # the input: the parameter's, or your flow's own gate per layer (trained weights)
        self.p = p
        self.cfg = cfg
        rng = np.random.default_rng(x_seed)
        X0 = np.ones((cfg.T, 1)) * rng.standard_normal(cfg.d)
        if p["reference"] == "heterogeneous":
            X0 = X0 + p["heterogeneity"] * rng.standard_normal((cfg.T, cfg.d))
        self.X0, self.E = X0, X0.copy()
        self.qk_rng = np.random.default_rng(qk_seed)
        self.dir_rng = np.random.default_rng(dir_seed)
        self.traj = stack_trajectory(self.model, X0, self.E)
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
                np.linalg.norm(self.L.T @ slow_path(self.cfg, lp, self.traj[l]))
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
    Kmask = frozen_kernel(cfg.mask_array)
    pert = with_random_qk(model, inst.qk_rng, p["qk_size"])
    traj = stack_trajectory(pert, X0, E)
    f["finite_qk_state_change_rel"] = float(
        np.abs(traj - inst.traj).max() / np.abs(inst.traj).max()
    )
    f["finite_qk_kernel_deviation"] = float(
        max(
            np.abs(attention_kernel(cfg, lp, traj[l]) - Kmask).max()
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
    base = stack(model, X0, E)

    def moved(h):
        """``X_L`` with layer 0's ``V[0, 0]`` moved by ``h``."""
        return stack(Model(cfg, tuple(lp.axpy(h, t) for lp, t in zip(model.layers, dV))), X0, E)

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
        @ frozen_kernel(np.tril(np.ones((N, N), bool)))
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


def gate_sweep_applies(inst: Instance, f: dict) -> bool:
    """Part (d) is decided when the gate is visible (the slow output reaches ``Lᵀ X_L``), ``L ≥ 2``
    and the reference is homogeneous."""
    gate_visible = f["slow_output_read_by_persistent"] > 0.0
    return bool(gate_visible and inst.p["L"] >= 2 and inst.reference_homogeneous())


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
