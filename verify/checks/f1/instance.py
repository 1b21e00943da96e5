"""F1's instance (:mod:`verify.checks.f1`): the coupling problem at one ε-family, its coarse map,
the theory's and the numerical reduction, the fast relaxation time and the reduced flow's linearity.

A module of the claim unit :mod:`verify.checks.f1`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f1.claim`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from fastslow.numerics.integrators.integration import integrate
from fastslow.numerics.model import kernels
from fastslow.numerics.model.coupling.drivers import (
    integrate_coupling,
    integrate_coupling_scipy,
    layer_breakpoints,
)
from fastslow.numerics.model.layer import (
    attention_kernel,
    check_layer_params,
    check_state,
    mlp,
    slow_path,
)
from fastslow.numerics.model.masks import (
    coarse_maps,
    frozen_kernel,
    kernel_eigenvalues,
    subdominant_eigenvalue,
)
from fastslow.numerics.model.weights import Model
from fastslow.theory.slow_manifold import (
    MASKS,
    SIGMA_FUNCS,
    block_patterns,
    coarse_vector,
    reduced_rhs,
    sigma_is_smooth,
)

from ...coupling_problem import CouplingProblem, coupling_problem
from ...measure import (
    ROUNDING_FLOOR,
    relative_error,
    richardson_difference,
)

METHODS = ("radau", "rosw")
"""Stiff integrators of the full flow."""


CURVATURE_STEP = 4e-6
"""relative step of the Richardson-extrapolated central difference of the attention kernel
(steps 4e-6 and 2e-6): truncation O(step⁴), rounding about 3u/step. The plain central difference
at 1e-6 left a truncation error of 1.05e-6 relative in f1 (it fell exactly as step²: 1.05e-2,
1.05e-4, 1.05e-6, 1.05e-8 at steps 1e-4 … 1e-7) where the first-order reduced trajectory of F1
seed 21 passes a block of RMS 8e-4 (the norm's third derivative ∝ RMS⁻³ there), so the old
tolerance of 1e-6 failed on the numerical side, not the theory's; extrapolated it is 3e-10 at
1e-5, 6e-11 at 2e-6."""


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


COARSE_TOL = 1e-14
"""your own mask: the numerical stationary weighting against the theory's exact coarse vector, max
absolute deviation (one small linear solve per block: rounding)."""


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


def basin_offset(inst: Instance, X: np.ndarray, X0: np.ndarray) -> float:
    """``‖(I − ULᵀ)X‖ / ‖X₀‖``: how far ``X`` is from the critical manifold, relative to the start."""
    Pi = inst.U @ inst.Lt
    return relative_error(X, Pi @ X, scale=np.linalg.norm(X0))


def fast_tau(inst: Instance) -> float:
    """The length of the pure fast flow: :data:`FAST_TAU` when ``1 − λ₂ ≥ 1/2`` (every named mask)
    or when there is no gap (``normally_hyperbolic`` fails), else ``FAST_TAU/(2(1 − λ₂))`` up to
    :data:`FAST_TAU_MAX`, so that ``e^{−(1 − λ₂)τ}`` is ``e^{−30}`` whatever your mask's gap."""
    gap = 1.0 - second_eigenvalue(inst)
    if gap >= 0.5 or gap <= 0.0:
        return FAST_TAU
    return min(FAST_TAU * 0.5 / gap, FAST_TAU_MAX)


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
        R = self.inst.nonstiff_part(l, self.inst.U @ Y)
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
            lambda X: attention_kernel(inst.cfg, lp, X), inst.U @ Y, H, CURVATURE_STEP / nH
        )
        return dA @ H

    def __call__(self, l: int, Y: np.ndarray, eps: float = 0.0) -> np.ndarray:
        """``dY/dt`` of the order-0 or order-1 reduced flow on layer segment ``l``."""
        inst = self.inst
        Y = np.asarray(Y, dtype=float).reshape(inst.Y0.shape)
        X = inst.U @ Y
        if self.order == 0:
            return self.Lt @ inst.nonstiff_part(l, X)
        H = self.H1(l, Y)
        return self.Lt @ (inst.nonstiff_part(l, X + eps * H) + eps * self.curvature(l, Y, H))


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
        self.problem = prob
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
        """``{order: f(segment, Y, eps)}``: the reduced right-hand sides that are integrated (the
        theory's when it derives this mask and coarse map, else the numerical block reduction)."""
        if self.source == "theory":
            return {k: self.theory_flow(k) for k in (0, 1)}
        return {k: NumericReduction(k, self, self.K, self.Lt) for k in (0, 1)}

    def theory_flow(self, order: int):
        """The reduced right-hand side of ``order`` from :func:`theory.slow_manifold.reduced_rhs`
        for this model (the slow path is the numerical input)."""
        cfg, model = self.cfg, self.model
        layers = [(lp.Q, lp.K, lp.W1, lp.W2) for lp in model.layers]
        # the layers validated once here (not at each of the flow's ~10⁴ calls), the state per call
        checked = [check_layer_params(cfg, lp) for lp in model.layers]

        def gated_slow(l, X):
            return checked[l].g * kernels.slow(cfg, checked[l], check_state(cfg, X))

        slow = gated_slow if cfg.slow else None
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

    def nonstiff_part(self, l: int, X: np.ndarray) -> np.ndarray:
        """The non-stiff part ``R_t(X) = γ(E − X) + MLP_t(X) + g·Slow_t(X)`` of the coupling form on
        layer segment ``l``."""
        lp = self.model.layers[l]
        out = mlp(self.cfg, lp, X) + self.cfg.gamma * (self.E - X)
        if self.cfg.slow and lp.g:
            out = out + lp.g * slow_path(self.cfg, lp, X)
        return out

    def H1(self, l: int, Y: np.ndarray) -> np.ndarray:
        """``H₁`` (T×d) at ``UY`` on layer segment ``l``, from the reduction that is integrated."""
        return np.asarray(self.flows[1].H1(l, Y), dtype=float)

    def segment_of(self, t: float) -> int:
        """The layer segment of depth ``t``."""
        return min(int(np.searchsorted(self.breaks, t, side="right")), self.model.L - 1)

    def reduced_result(
        self, order: int, eps: float, Y0: np.ndarray, rtol: float, atol: float, t_eval=None
    ):
        """The integration result of the reduced flow of the given order (0 or 1) on ``[0, 1]``."""
        f = self.flows[order]
        shape = Y0.shape
        return integrate(
            lambda t, y: np.asarray(f(self.segment_of(t), y.reshape(shape), eps)).ravel(),
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
        """The generic (off-manifold) start of (c): ``UY₀ + Z₀`` (the problem's
        :attr:`~verify.coupling_problem.CouplingProblem.X0`, as the F1 figures start from)."""
        return self.problem.X0

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
        fast = Model(cfg, (lp,))
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
        :data:`verify.measure.ROUNDING_FLOOR`."""
        a, b = (self.end_state(order, eps, m) for m in METHODS)
        return max(relative_error(a, b), ROUNDING_FLOOR)
