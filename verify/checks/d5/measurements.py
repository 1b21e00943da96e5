"""D5's instance and measurements (:mod:`verify.checks.d5`): the linearised stack's modes and the
ratio ``r(L)``, the exact reference's factors, the linear and nonlinear responses, the brute-force
mode ratio of the dense products and the rounding response of the stack.

A module of the claim unit :mod:`verify.checks.d5`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.d5.claim`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastslow.numerics import lapack
from fastslow.numerics.analysis import linearised
from fastslow.numerics.analysis.stability import layer_jacobian
from fastslow.numerics.model.layer import stack, stack_trajectory
from fastslow.numerics.model.masks import coarse_maps, frozen_kernel
from fastslow.numerics.model.weights import Model

from ...measure import (
    UNIT_ROUNDOFF,
    central_difference,
    ratio,
    relative_error,
)
from ...reference import layer as reference_layer
from ...reference import spectra as reference_spectra
from ...systems import DepthFlow
from ...user_kernels import user_kernel
from ...verdict import Diagnostic


class Instance:
    """The seeded model with the comparison gate (``model_g``) and with gate 0 (``model``), the
    homogeneous input ``1 x_0ᵀ``, the tangent ``δX_0``, the block values ``Y_0`` of the coarse-stack
    comparison, and the d×d data of the homogeneous trajectory (``N_l, M_l`` and the distinct
    eigenvalues of ``K``)."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, d_seed, y_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        if system is None:
            self.model_g = linearised.random_model(p, w_seed).with_gates(p["gate"])
        else:  # your flow: its weights (its seed); its gate is the coarse-stack comparison's
            self.model_g = system.model()
        self.model = self.model_g.with_gates(0.0)
        self.cfg = self.model.config
        # a user mask: its kernel decomposed exactly (verify.user_kernels); None for a name
        self.user = None if self.cfg.mask_name else user_kernel(self.cfg.mask_array, self.cfg.P)
        self.x0 = np.random.default_rng(x_seed).standard_normal(self.cfg.d)
        self.dX0 = np.random.default_rng(d_seed).standard_normal((self.cfg.T, self.cfg.d))
        self.Y0 = np.random.default_rng(y_seed).standard_normal((self.cfg.N, self.cfg.d))
        # the d×d data of the homogeneous trajectory (g = 0)
        self.xs = linearised.homogeneous_trajectory(self.model, self.x0)
        self.N, self.M = linearised.layer_factors(self.model, self.xs)
        if self.user is None:
            self.lams = linearised.distinct_eigenvalues(self.cfg.mask_name, self.cfg.T, self.cfg.P)
        elif self.user.irrational:  # complex128: the roots of the irreducible factors
            self.lams = np.array(self.user.all_eigenvalues(), dtype=complex)
        else:
            self.lams = self.user.eigenvalues()

    @property
    def X0(self) -> np.ndarray:
        """The homogeneous input ``1 x_0ᵀ``."""
        return np.ones((self.cfg.T, 1)) * self.x0


def probe_pair(K: np.ndarray) -> tuple[int, int]:
    """``(t, s)``: the token pair of the reference probe ``δX = e_s e_iᵀ``, whose row ``t`` is
    ``K_ts e_iᵀM`` and row ``s`` is ``e_iᵀ(N + K_ss M)``: ``(1, 0)`` when ``K_10 ≠ 0`` (every named
    mask with more than one eigenvalue), else the first ``t ≠ s`` with ``K_ts ≠ 0`` in row-major
    order (a diagonalisable ``K ≠ I`` has one); ``(1, 0)`` for a diagonal ``K`` (unused there)."""
    if K.shape[0] > 1 and K[1, 0] != 0:
        return 1, 0
    off = np.argwhere((K != 0) & ~np.eye(K.shape[0], dtype=bool))
    return (int(off[0][0]), int(off[0][1])) if off.size else (1, 0)


def reference_factors(inst: Instance) -> tuple[list, np.ndarray]:
    """``(exact distinct eigenvalues, F)`` with ``F[l, k] = N_l + λ_k M_l`` of the reference layer
    (g = 0) along its own homogeneous trajectory from ``1 x_0ᵀ``. The linearised layer at a
    homogeneous state is ``δX ↦ δX N + K δX M`` (theory, claim D4), so the probe ``δX = e_0 e_iᵀ``
    returns ``e_iᵀ(N + K_00 M)`` in row 0 and ``K_10 e_iᵀ M`` in row 1 (``K`` the reference kernel;
    ``P = 1`` or ``T = 1``: ``K = I``, only ``N + M`` is needed)."""
    cfg = inst.cfg
    s = reference_layer.setting_of(cfg)
    if inst.user is None:
        lams = reference_spectra.distinct_eigenvalues(cfg.mask_name, cfg.T, cfg.P)
    elif inst.user.irrational:  # the rational ones exact, the others to 30 digits, rounded
        lams = inst.user.all_eigenvalues()
    else:
        lams = inst.user.exact_eigenvalues()
    Kmask = s.mask / s.mask.sum(axis=1, keepdims=True)
    t, j = probe_pair(Kmask)
    X = inst.X0
    E = inst.X0
    kind = complex if any(isinstance(lam, complex) for lam in lams) else float
    F = np.empty((inst.model.L, len(lams), cfg.d, cfg.d), dtype=kind)
    for l, p in enumerate(inst.model.layers):
        w, _ = reference_layer.weights_of(p)

        def f(Z, w=w):
            return reference_layer.layer(s, w, 0.0, Z, E)

        rows_N, rows_M = [], []
        for i in range(cfg.d):
            dX = np.zeros_like(X)
            dX[j, i] = 1.0
            out = reference_layer.jvp(f, X, dX)
            if len(lams) > 1:
                Mi = out[t] / Kmask[t, j]
                rows_M.append(Mi)
                rows_N.append(out[j] - Kmask[j, j] * Mi)
            else:
                rows_N.append(out[0])
                rows_M.append(np.zeros(cfg.d))
        N, M = np.array(rows_N), np.array(rows_M)
        for k, lam in enumerate(lams):
            F[l, k] = N + (lam if isinstance(lam, complex) else float(lam)) * M
        X = f(X)
    return lams, F


def reference_mode_ratio(inst: Instance) -> tuple[list, np.ndarray]:
    """``(exact eigenvalues, r(l))`` at depths 1…L from :func:`reference_factors`:
    ``r = max_{λ≠1} ‖D_λ‖₂ / σ_min(D_1)`` (``inf`` where ``D_1`` is singular)."""
    lams, F = reference_factors(inst)
    d = inst.cfg.d
    D = [np.eye(d) for _ in lams]
    r = np.empty(F.shape[0])
    for l in range(F.shape[0]):
        D = [Dk @ F[l, k] for k, Dk in enumerate(D)]
        smin = lapack.svdvals(D[0])[-1]
        top = max((np.linalg.norm(Dk, 2) for Dk in D[1:]), default=0.0)
        r[l] = top / smin if smin > 0 else np.inf
    return lams, r


@dataclass
class Modes:
    """The d×d data of the instance at depths 1…L: ``r(l)``, ``σ_min(D_1)``, ``L*``, the kernel
    constant ``c_K``, the persistent mode product ``D_1`` and ``max_{λ≠1} ‖D_λ‖₂``."""

    r: np.ndarray
    smin1: np.ndarray
    L_star: float
    c_K: float
    D1: np.ndarray
    top: np.ndarray
    per_mode_ratios: np.ndarray


def spectrum_value(x: complex) -> str:
    """A complex eigenvalue as JSON-able data, ``"(re+imj)"``."""
    return str(complex(x))


def complex_mode_data(N: np.ndarray, M: np.ndarray, lams: np.ndarray):
    """``(r, σ_min(D_1), D_all, per-mode ratios)`` as :func:`numerics.analysis.linearised.mode_ratio`,
    ``mode_products`` and ``per_mode_ratios`` compute them, for complex eigenvalues (your mask's
    irrational block spectra): ``D_λ`` in complex128, 2-norms from singular values."""
    L, d = N.shape[0], N.shape[1]
    D_all = np.empty((L, lams.size, d, d), dtype=complex)
    D = np.broadcast_to(np.eye(d, dtype=complex), (lams.size, d, d)).copy()
    for l in range(L):
        D = D @ (N[l][None] + lams[:, None, None] * M[l][None])
        D_all[l] = D
    s = lapack.svdvals(D_all)  # (L, n_λ, d), descending
    smin1 = s[:, 0, -1]
    top = s[:, 1:, 0].max(axis=1) if lams.size > 1 else np.zeros(L)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(smin1 > 0, top / np.where(smin1 > 0, smin1, 1.0), np.inf)
        ratios = s[:, 1:, 0] / s[:, :1, -1]
    return r, smin1, D_all, ratios


def mode_data(inst: Instance) -> Modes:
    """The :class:`Modes` of the instance (d×d products only)."""
    cfg, N, M, lams = inst.cfg, inst.N, inst.M, inst.lams
    if np.iscomplexobj(lams):
        r, smin1, D_all, ratios = complex_mode_data(N, M, lams)
    else:
        r, smin1 = linearised.mode_ratio(N, M, lams)
        D_all = linearised.mode_products(
            N, M, lams, all_depths=True
        )  # (L, n_λ, d, d); lams[0] == 1
        ratios = linearised.per_mode_ratios(D_all)
    top = np.array([max((np.linalg.norm(D, 2) for D in Dl[1:]), default=0.0) for Dl in D_all])
    return Modes(
        r=r,
        smin1=smin1,
        L_star=linearised.saturation_depth(r, inst.p["tau"]),
        c_K=(
            linearised.kernel_constant(cfg.mask_name, cfg.T, cfg.P)
            if inst.user is None
            else inst.user.kernel_constant()
        ),
        D1=D_all[:, 0].real,  # λ = 1: real
        top=top,
        per_mode_ratios=ratios,
    )


def within_block_fluctuation(Z: np.ndarray, N: int, P: int) -> float:
    """``‖(I − UB) Z‖ / ‖Z‖``: the part of ``Z`` that varies inside the blocks of ``P`` tokens,
    relative to ``Z``; 0 where ``Z = 0`` (nothing varies)."""
    Zb = Z.reshape(N, P, Z.shape[-1])
    size = np.linalg.norm(Z)
    return float(np.linalg.norm(Zb - Zb.mean(axis=1, keepdims=True)) / size) if size else 0.0


@dataclass
class Response:
    """The linear response ``δX_l`` at depths 1…L against the coarse prediction ``Π δX_0 D_1``:
    both sides of the bound, the prediction's norm, the relative coarse error, the within-block
    fluctuation and its bound; ``dX`` is ``δX_L``."""

    lhs: np.ndarray
    rhs: np.ndarray
    pred_norm: np.ndarray
    coarse_rel: np.ndarray
    fluct: np.ndarray
    fluct_bound: np.ndarray
    dX: np.ndarray


def linear_response(inst: Instance, modes: Modes) -> Response:
    """The :class:`Response`: the linearised recursion layer by layer against ``R Lᵀ δX_0 D_1``,
    with ``lhs = ‖δX_l − ΠδX_0D_1‖`` and ``rhs = c_K r(l) σ_min(D_1) ‖δX_0‖``."""
    cfg, L = inst.cfg, inst.model.L
    K = frozen_kernel(cfg.mask_array)
    if inst.user is None:
        R, Lm = coarse_maps(cfg.mask_name, cfg.T, cfg.P)
    elif not inst.user.several_closed_classes:  # your mask: exact stationary weightings
        R, Lm = inst.user.coarse_maps()
    else:  # several closed classes in a block: Π = P_1 (exact), R = Π, L = I (the same Π δX_0 D_1)
        R, Lm = inst.user.persistent_projector(), np.eye(cfg.T)
    coarse_in = Lm.T @ inst.dX0
    dX = inst.dX0.copy()
    lhs, rhs, fluct, fluct_bound, coarse_rel, pred_norm = (np.empty(L) for _ in range(6))
    norm0 = np.linalg.norm(inst.dX0)
    for l in range(L):
        dX = dX @ inst.N[l] + K @ (dX @ inst.M[l])
        pred = R @ (coarse_in @ modes.D1[l])
        lhs[l] = np.linalg.norm(dX - pred)
        rhs[l] = (
            modes.c_K * modes.top[l] * norm0
        )  # = c_K r(L) σ_min(D_1) ‖δX_0‖ (also when σ_min = 0)
        fluct[l] = within_block_fluctuation(dX, cfg.N, cfg.P)
        fluct_bound[l] = ratio(rhs[l], np.linalg.norm(dX))
        pred_norm[l] = np.linalg.norm(pred)
        coarse_rel[l] = ratio(lhs[l], pred_norm[l])
    return Response(lhs, rhs, pred_norm, coarse_rel, fluct, fluct_bound, dX)


def nonlinear_response(inst: Instance, dX: np.ndarray) -> tuple[float, list, Diagnostic]:
    """The nonlinear stack by central differences of step ``eta`` along ``δX_0`` (the injection
    target stays at ``1 x_0ᵀ``): its relative deviation from the linear ``δX_L``, its within-block
    fluctuation at every depth, and the limit ``nonlinear_response_resolved``.

    The limit: a central difference carries a rounding error of about ``u·‖X_L‖/η``; where that
    exceeds ``fd_tol`` times the response (the larger of ``‖δX_L‖`` and the difference's own
    size, so that a response zeroed by a bug on one side is still compared), the comparison
    cannot be decided at ``fd_tol``: a response that died out (one token, one channel, ten
    contracting layers: ``‖δX_L‖ = 7e-12``) is ``undecided``, not a counterexample."""
    cfg = inst.cfg
    E = inst.X0 if cfg.gamma else None  # the injection target is not perturbed

    def trajectory(X):
        return stack_trajectory(inst.model, X, E)

    eta, fd_tol = inst.p["eta"], inst.p["fd_tol"]
    dtraj = central_difference(trajectory, inst.X0, inst.dX0, eta)
    fluct = [within_block_fluctuation(Z, cfg.N, cfg.P) for Z in dtraj[1:]]
    size = max(float(np.linalg.norm(trajectory(inst.X0)[-1])), 1.0)
    floor = float(np.finfo(float).eps) * size / eta
    response = max(float(np.linalg.norm(dX)), float(np.linalg.norm(dtraj[-1])))
    limit = Diagnostic(
        floor <= fd_tol * response,
        {"rounding_level": floor, "response": response, "fd_tol": fd_tol},
        "u·max(‖X_L‖, 1)/η ≤ fd_tol · max(‖δX_L‖, ‖central difference‖)",
    )
    return relative_error(dtraj[-1], dX), fluct, limit


def modes_from_dense(prod: np.ndarray, projectors: dict, T: int, d: int) -> dict:
    """``{λ: D_λ}`` read off a dense depth product: ``D_λ[i, :] = wᵀ δX_L(v e_iᵀ)`` with ``v`` a
    right and ``w`` a left eigenvector of ``K`` for ``λ`` (``wᵀv = 1``) taken from ``P_λ``."""
    out = {}
    for lam, Pl in projectors.items():
        i, j = np.unravel_index(np.argmax(np.abs(Pl)), Pl.shape)
        vv = Pl[:, j]
        w = Pl[i, :] / Pl[i, j]
        G = prod @ np.kron(vv[:, None], np.eye(d))  # (Td, d): column i is vec δX_L(v e_iᵀ)
        out[lam] = np.einsum("t,tji->ij", w, G.reshape(T, d, d))
    return out


def brute_force_mode_ratio(model: Model, traj: np.ndarray, projs: dict) -> np.ndarray:
    """``r(L)`` at depths 1…L from the dense product of the layer Jacobians along ``traj``, the
    modes read off with the spectral projectors ``projs``."""
    cfg = model.config
    prod = np.eye(cfg.T * cfg.d)
    r = np.empty(model.L)
    for l, p in enumerate(model.layers):
        prod = layer_jacobian(cfg, p, traj[l]) @ prod
        D = modes_from_dense(prod, projs, cfg.T, cfg.d)
        smin = lapack.svdvals(D[1.0])[-1]
        top = max((np.linalg.norm(D[lam], 2) for lam in D if lam != 1.0), default=0.0)
        r[l] = top / smin
    return r


def block_local(mask: np.ndarray, P: int) -> int:
    """Number of mask entries ``(t, s)`` outside the diagonal P×P blocks (0: block-local)."""
    mask = np.asarray(mask, bool)
    blocks = np.arange(mask.shape[0]) // P
    return int(np.sum(mask & (blocks[:, None] != blocks[None, :])))


ROUNDING_PROBES = 3
"""Random relative-``u`` input changes whose largest response is taken."""


ROUNDING_PROBE_SEED = 5
"""The seed of the rounding probes (the verdict does not depend on the instance's streams)."""


def stack_rounding_response(model: Model, X0: np.ndarray, out: np.ndarray, scale: float) -> float:
    """``max_k max|stack(X0 ⊙ (1 + u ξ_k)) − stack(X0)| / scale`` over :data:`ROUNDING_PROBES`
    standard normal ``ξ_k`` (a fixed seed): how much the stack amplifies a rounding-size change of
    its input."""
    rng = np.random.default_rng(np.random.SeedSequence(ROUNDING_PROBE_SEED))
    worst = 0.0
    for _ in range(ROUNDING_PROBES):
        moved = stack(model, X0 * (1.0 + UNIT_ROUNDOFF * rng.standard_normal(X0.shape)))
        worst = max(worst, float(np.abs(moved - out).max()))
    return ratio(worst, scale)
