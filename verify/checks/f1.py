"""F1 — Tikhonov along depth: collapse onto block-constant states, then slow drift.

Claim. For ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)`` with a block-local mask:
(a) the critical manifold ``{(A(X) − I)X = 0}`` is the set of block-constant states ``X = UY``;
(b) it attracts at the rate ``(1 − λ₂)/ε`` (``λ₂`` the largest eigenvalue of the frozen kernel
``K_mask`` below 1: 0 for ``block_bidirectional``, 1/2 for ``block_causal``; with injection the
deviation decays at ``(1 − λ₂)/ε + γ``); (c) ``‖X(1) − UY₀(1)‖ = O(ε)`` with
``dY₀/dt = Lᵀ R_t(UY₀)``; (d) with ``X = UY + εH₁`` and
``dY/dt = Lᵀ R_t(UY + εH₁) + ε Lᵀ DA_{UY}[H₁] H₁`` the error is O(ε²).

How it is checked.

* Full flow: :func:`numerics.integrators.coupling.integrate_coupling` (Radau IIA by default,
  ``method="rosw"`` for the Rosenbrock-W method; tight tolerances), untied weights (piecewise
  constant on ``L`` intervals, breakpoints hit exactly), ``γ > 0`` towards a random,
  non-block-constant ``E``, gate ``g ≠ 0`` (the slow path is on), the RMS norm on or off (``norm``).
  At ``ε = eps_min`` the full flow is also integrated by the other stiff method; both must give the
  same errors to 1e-3 relative.
* Reduced flows: from :func:`theory.slow_manifold.reduced_rhs`, the SymPy derivation of ``H₁``, of
  the order-0 field ``Lᵀ R(UY)`` and of the order-1 field (attention curvature included) for *the
  configuration that is integrated* (mask, ``P``, ``d``, norm on/off, the model's weights per
  layer; the slow path, which couples the blocks, is the one numerical input). ``H₁`` from the same
  derivation gives the start point of (d), ``UY₀ + εH₁``, and the reconstruction ``UY(1) + εH₁``.
  The numerical formulas (``H₁ = (I − K + Π)⁻¹(I − Π)R(UY)`` by a linear solve, the curvature
  ``DA_{UY}[H₁]H₁`` by a central difference of the attention kernel) are kept only as an
  independent cross-check, at points along the integrated reduced trajectory (a conclusion part).
* Coarse variable ``Y = LᵀX`` (``coarse="auto"``: the first token of each block for
  ``block_causal``, the block mean otherwise; ``"mean"``/``"first"`` override it, to show which one
  is right). When the mask and coarse map are not ones the theory derives (the controls), the
  reduced flows are the numerical block reduction with that coarse map — the reduction the controls
  show to be wrong.
* (c) starts from a generic ``X₀`` (off the manifold); the reduced flow starts at the base point of
  its fast fibre, ``Lᵀ X_∞`` with ``X_∞`` the end of the pure fast flow ``dX/dτ = (A(X) − I)X`` (for
  the nonlinear bidirectional kernel the block mean is *not* conserved by the fast flow, so
  ``BX₀`` would leave an O(1)·‖(I − UB)X₀‖² offset). (d) starts on the first-order slow manifold,
  ``X₀ = UY₀ + εH₁`` (the O(ε) correction of the fibre base point is not part of the claim).
* Errors at ``t = 1`` over log-spaced ``ε ∈ [eps_min, eps_max]``; the slopes of ``log err`` against
  ``log ε`` and their 95% intervals are decided by :func:`decide_slopes` (one function, so the rule
  can be replaced): ``|slope₀ − 1| ≤ slope_tol0``, ``|slope₁ − 2| ≤ slope_tol1``, each interval's
  half-width within the same tolerance (the sweep is precise enough to decide).
* The attraction rate: the decay of ``‖(I − UB)(X − εH₁)‖`` at ``ε = rate_eps``, within ``rate_tol``
  of ``(1 − λ₂)/ε + γ`` with ``λ₂`` from the closed-form spectrum
  (:func:`numerics.masks.kernel_eigenvalues`).

Hypotheses (:data:`HYPOTHESIS_DIAGNOSTICS`, one entry per hypothesis, computed from the instance):
the fast mask is block-local (no entry outside the diagonal ``P×P`` blocks), and the coarse map
``Lᵀ`` is the left eigenprojector of the frozen kernel (``‖LᵀK − Lᵀ‖ = 0`` and ``LᵀU = I``).

Negative controls: the global ``causal`` mask (not block-local; its critical manifold is the
constants, every token collapses onto the first one, so the block reduction — block mean,
block-constant manifold — is wrong: the error does not shrink with ε), and ``block_causal`` with the
block mean as coarse variable (the block mean is not a left eigenvector of the block-causal kernel).
The theory derives no reduction for either (a global mask; a coarse map that is not the kernel's),
so on them the check integrates the numerical block reduction with the given mask and coarse map:
the reduction whose failure the controls demonstrate. Their hypotheses are decided by the
diagnostics above, never by the mask's name.

Caveats: ``P ≤ 4``, ``d ≤ 4`` (the symbolic derivation, about a second per configuration,
grows quickly beyond); with the norm on and ``d = 1`` the curvature term nearly vanishes
(``n(x) ≈ sign x``), so its non-vacuity part fails there.
"""

from __future__ import annotations

from functools import cached_property
from typing import Callable

import numpy as np

import numerics as nm
from numerics.integrators import integrate
from numerics.integrators.coupling import integrate_coupling, layer_breakpoints
from numerics.masks import coarse_maps, frozen_kernel, kernel_eigenvalues

from ..claim import Claim, Conclusion, Control, Diagnostic, Param, at_most
from ..rates import slope_fit

COARSE = ("auto", "mean", "first")
METHODS = ("radau", "rosw")
OTHER_METHOD = {"radau": "rosw", "rosw": "radau"}

CRITICAL_TOL = 1e-12
"""max |(A(UY) − I)UY| on block-constant states (rounding)."""
GENERIC_MIN = 1e-3
"""min |(A(X) − I)X| on generic states (the critical set is not everything)."""
NORMAL_LINEAR_TOL = 1e-7
"""central-difference JVP of the fast part at UY against (K − I)δX, relative to max(1, |δX|)."""
THEORY_TOL = {"H1": 1e-10, "f0": 1e-10, "f1": 1e-6}
"""theory field against the numerical formulas, relative (order 1: central-difference error)."""
CURVATURE_STEP = 1e-6
"""relative step of the central difference of the attention kernel: the truncation error is
O(step²) and, where the kernel's third derivative is large, 1e-5 leaves a few 1e-6 relative; at
1e-6 the rounding error stays near 1e-11."""
CURVATURE_MIN = 1e-3
"""the attention-curvature term is visible (Q, K enter at order ε) where it is not identically 0."""
CURVATURE_ZERO = 1e-8
INTEGRATOR_RTOL = 1e-3
"""errors from the two stiff integrators at eps_min agree to this relative tolerance."""


# ----------------------------------------------------------------------------- reductions

def theory_reduction_applies(mask, Lt: np.ndarray, T: int, P: int) -> bool:
    """Whether ``theory.slow_manifold`` derives this reduction: a named block mask and ``Lᵀ`` the
    derivation's coarse vector in every block (compared as matrices)."""
    from theory.slow_manifold import MASKS, coarse_vector

    if not (isinstance(mask, str) and mask in MASKS):
        return False
    Lv = np.array([float(v) for v in coarse_vector(mask, P)])
    return bool(np.array_equal(Lt, np.kron(np.eye(T // P), Lv[None, :])))


class NumericReduction:
    """The block reduction from the numerical formulas: ``H₁`` by a linear solve with the frozen
    kernel ``K`` and ``Π = U Lᵀ``, the curvature ``DA_{UY}[H₁]H₁`` by a central difference of the
    attention kernel. Same call shape as :class:`theory.slow_manifold.ReducedRHS`."""

    def __init__(self, order: int, inst: "Instance", K: np.ndarray, Lt: np.ndarray):
        self.order, self.inst, self.Lt = order, inst, Lt
        T = inst.cfg.T
        self.Pi = inst.U @ Lt
        self.M = np.eye(T) - K + self.Pi          # invertible: I − K on E_d, I on the range of Π

    def H1(self, l: int, Y: np.ndarray) -> np.ndarray:
        R = self.inst.R(l, self.inst.U @ Y)
        return np.linalg.solve(self.M, R - self.Pi @ R)

    def curvature(self, l: int, Y: np.ndarray, H: np.ndarray) -> np.ndarray:
        """``DA_{UY}[H] H`` by a central difference of the attention kernel (T×d)."""
        inst = self.inst
        lp = inst.model.layers[l]
        X = inst.U @ Y
        nH = np.linalg.norm(H)
        if nH == 0.0:
            return np.zeros_like(H)
        delta = CURVATURE_STEP / nH
        Ap = nm.attention_kernel(inst.cfg, lp, X + delta * H)
        Am = nm.attention_kernel(inst.cfg, lp, X - delta * H)
        return ((Ap - Am) / (2 * delta)) @ H

    def __call__(self, l: int, Y: np.ndarray, eps: float = 0.0) -> np.ndarray:
        inst = self.inst
        Y = np.asarray(Y, dtype=float).reshape(inst.Y0.shape)
        X = inst.U @ Y
        if self.order == 0:
            return self.Lt @ inst.R(l, X)
        H = self.H1(l, Y)
        return self.Lt @ (inst.R(l, X + eps * H) + eps * self.curvature(l, Y, H))


# ----------------------------------------------------------------------------- the instance

class Instance:
    """A seeded F1 instance: model, injection target, initial data, coarse map, reduced flows."""

    def __init__(self, p: dict, seed: int):
        w_seed, e_seed, x_seed, c_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        self.seed = seed
        self.cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], gamma=p["gamma"],
                                  norm=p["norm"])
        self.model = nm.init_model(self.cfg, p["L"], w_seed, scale=p["scale"], gate=p["gate"])
        T, P, d, N = self.cfg.T, self.cfg.P, self.cfg.d, self.cfg.N
        self.E = np.random.default_rng(e_seed).standard_normal((T, d))
        rx = np.random.default_rng(x_seed)
        self.Y0 = p["x_scale"] * rx.standard_normal((N, d))
        self.Z0 = p["x_scale"] * rx.standard_normal((T, d))      # off-manifold part of X₀
        self.check_rng_seed = c_seed
        self.U = np.kron(np.eye(N), np.ones((P, 1)))
        self.B = self.U.T / P
        coarse = p["coarse"]
        if coarse == "auto":
            coarse = "first" if p["mask"] == "block_causal" else "mean"
        self.coarse = coarse
        self.Lt = self.B if coarse == "mean" else coarse_maps("block_causal", T, P)[1].T
        # the frozen kernel of the instance's own mask matrix
        self.K = frozen_kernel(self.cfg.mask_array)
        self.breaks = layer_breakpoints(self.model.L)
        self.source = "theory" if theory_reduction_applies(self.cfg.mask, self.Lt, T, P) else "numerics"

    @cached_property
    def flows(self) -> dict:
        """``{order: f(seg, Y, eps)}``: the reduced right-hand sides that are integrated (the
        theory's when it derives this mask and coarse map, else the numerical block reduction)."""
        if self.source == "theory":
            return {k: self._theory_rhs(k) for k in (0, 1)}
        return {k: NumericReduction(k, self, self.K, self.Lt) for k in (0, 1)}

    def _theory_rhs(self, order: int):
        from theory.slow_manifold import reduced_rhs

        cfg, model = self.cfg, self.model
        layers = [(lp.Q, lp.K, lp.W1, lp.W2) for lp in model.layers]
        slow = (lambda l, X: model.layers[l].g * nm.slow_path(cfg, model.layers[l], X)) if cfg.slow else None
        return reduced_rhs(order, cfg.mask, cfg.P, cfg.d, cfg.norm, layers, self.E, cfg.score_scale,
                           cfg.gamma, slow, norm_eps=cfg.norm_eps, m=cfg.m, sigma=cfg.sigma)

    # R_t(X) = γ(E − X) + MLP_t(X) + g·Slow_t(X), from the public numerics functions
    def R(self, l: int, X: np.ndarray) -> np.ndarray:
        lp = self.model.layers[l]
        out = nm.mlp(self.cfg, lp, X) + self.cfg.gamma * (self.E - X)
        if self.cfg.slow and lp.g:
            out = out + lp.g * nm.slow_path(self.cfg, lp, X)
        return out

    def H1(self, l: int, Y: np.ndarray) -> np.ndarray:
        """``H₁`` (T×d) at ``UY`` on layer segment ``l``, from the reduction that is integrated."""
        return np.asarray(self.flows[1].H1(l, Y), dtype=float)

    def seg(self, t: float) -> int:
        return min(int(np.searchsorted(self.breaks, t, side="right")), self.model.L - 1)

    def reduced(self, order: int, eps: float, Y0: np.ndarray, rtol: float, atol: float, t_eval=None):
        """Integrate the reduced flow of the given order (0 or 1) to ``t = 1``."""
        f = self.flows[order]
        shape = Y0.shape
        res = integrate(lambda t, y: np.asarray(f(self.seg(t), y.reshape(shape), eps)).ravel(),
                        (0.0, 1.0), Y0, method="dopri5", rtol=rtol, atol=atol, t_eval=t_eval,
                        breakpoints=self.breaks)
        if not res.success:
            raise RuntimeError(f"reduced flow failed: {res.message}")
        return res.y[:, -1].reshape(shape), res

    def fast_limit(self, X0: np.ndarray) -> np.ndarray:
        """End point of the pure fast flow ``dX/dτ = (A_0(X) − I)X`` (layer 0's Q, K)."""
        cfg = self.cfg.replace(gamma=0.0, slow=False)
        lp = self.model.layers[0].copy()
        lp.W2 = np.zeros_like(lp.W2)
        fast = nm.Model(cfg, (lp,))
        res = integrate_coupling(fast, X0, 1.0, t_span=(0.0, 40.0), rtol=1e-11, atol=1e-13,
                                 method=self.p["method"])
        if not res.success:
            raise RuntimeError(f"fast flow failed: {res.message}")
        return res.extra["X"][-1]


# ----------------------------------------------------------------------------- hypotheses

def fast_mask_block_local(inst: Instance) -> Diagnostic:
    T, P = inst.cfg.T, inst.cfg.P
    outside = inst.cfg.mask_array & ~np.kron(np.eye(T // P, dtype=bool), np.ones((P, P), dtype=bool))
    n = int(outside.sum())
    return Diagnostic(n == 0, n, "number of fast-mask entries outside the diagonal P×P blocks; 0 required")


def coarse_map_is_left_eigenprojector(inst: Instance) -> Diagnostic:
    left = float(np.abs(inst.Lt @ inst.K - inst.Lt).max())
    normal = float(np.abs(inst.Lt @ inst.U - np.eye(inst.cfg.N)).max())
    return Diagnostic(left <= 1e-14 and normal <= 1e-14, {"|LᵀK − Lᵀ|": left, "|LᵀU − I|": normal},
                      "max |LᵀK − Lᵀ| ≤ 1e-14 and max |LᵀU − I| ≤ 1e-14 (K the frozen kernel of "
                      "the mask matrix, U the block-constant states)")


HYPOTHESIS_DIAGNOSTICS: dict[str, tuple[str, Callable[[Instance], Diagnostic]]] = {
    "fast_mask_block_local": (
        "the fast mask is block-local: no mask entry outside the diagonal P×P blocks",
        fast_mask_block_local),
    "coarse_map_is_left_eigenprojector": (
        "the coarse map Lᵀ is the left eigenprojector of the frozen kernel K of the mask: "
        "‖LᵀK − Lᵀ‖ = 0 and LᵀU = I",
        coarse_map_is_left_eigenprojector),
}
"""``{hypothesis: (meaning, diagnostic(inst))}``: adding a hypothesis of Tikhonov's theorem is one
entry here (the claim's ``hypotheses`` and ``diagnose`` read this table)."""


# ----------------------------------------------------------------------------- measurements

def error_sweep(inst: Instance, eps_values, method: str | None = None) -> dict:
    """Errors of the leading- and first-order reductions at ``t = 1`` for each ε, with work counts."""
    p = inst.p
    method = p["method"] if method is None else method
    U = inst.U
    X0_generic = U @ inst.Y0 + inst.Z0
    Xinf = inst.fast_limit(X0_generic)
    Yfib = inst.Lt @ Xinf
    Y0_red, _ = inst.reduced(0, 0.0, Yfib, p["rtol"], p["atol"])
    lead, first, work = [], [], []
    last_seg = inst.model.L - 1
    for eps in eps_values:
        r0 = integrate_coupling(inst.model, X0_generic, eps, E=inst.E, rtol=p["rtol"],
                                atol=p["atol"], method=method)
        X0m = U @ inst.Y0 + eps * inst.H1(0, inst.Y0)
        r1 = integrate_coupling(inst.model, X0m, eps, E=inst.E, rtol=p["rtol"], atol=p["atol"],
                                method=method)
        if not (r0.success and r1.success):
            raise RuntimeError(f"full flow failed: {r0.message}; {r1.message}")
        X1 = r0.extra["X"][-1]
        lead.append(np.linalg.norm(X1 - U @ Y0_red) / np.linalg.norm(X1))
        Y1, _ = inst.reduced(1, eps, inst.Y0, p["rtol"], p["atol"])
        X1m = r1.extra["X"][-1]
        approx = U @ Y1 + eps * inst.H1(last_seg, Y1)
        first.append(np.linalg.norm(X1m - approx) / np.linalg.norm(X1m))
        work.append({"eps": eps, "steps": r0.nsteps, "rejected": r0.nreject, "nfev": r0.nfev,
                     "njev": r0.njev})
    return {"eps": np.asarray(eps_values), "err_leading": np.asarray(lead),
            "err_first": np.asarray(first), "work": work,
            "fibre_offset": float(np.linalg.norm(Yfib - inst.Lt @ X0_generic))}


def second_eigenvalue(inst: Instance) -> float:
    """``λ₂``: the largest eigenvalue of the frozen kernel below 1 (closed form,
    :func:`numerics.masks.kernel_eigenvalues`), 0 if 1 is the only one."""
    eigs = kernel_eigenvalues(inst.p["mask"], inst.cfg.T, inst.cfg.P)
    below = [lam for lam in eigs if lam < 1.0]
    return float(max(below)) if below else 0.0


def attraction_rate(inst: Instance, eps: float, n_t: int = 161) -> dict:
    """Decay rate of ``‖(I − UB)(X(t) − εH₁)‖`` from a generic start, fitted where it is
    between 1e-2 and 1e-6 of its initial value (linear regime, above the O(ε²) floor)."""
    p = inst.p
    lam2 = second_eigenvalue(inst)
    predicted = (1.0 - lam2) / eps + inst.cfg.gamma
    t_end = min(30.0 / predicted, 1.0 / inst.model.L)
    t = np.linspace(0.0, t_end, n_t)
    X0 = inst.U @ inst.Y0 + inst.Z0
    res = integrate_coupling(inst.model, X0, eps, E=inst.E, t_eval=t, rtol=1e-10, atol=1e-13,
                             method=p["method"])
    H = eps * inst.H1(0, inst.Y0)
    Pperp = np.eye(inst.cfg.T) - inst.U @ inst.B
    dev = np.array([np.linalg.norm(Pperp @ (X - H)) for X in res.extra["X"]])
    rel = dev / dev[0]
    sel = (rel < 1e-2) & (rel > 1e-6)
    out = {"predicted": float(predicted), "lambda2": lam2, "eps": eps, "t": t, "deviation": dev,
           "n_fit": int(sel.sum())}
    if sel.sum() < 3:
        return {**out, "rate": float("nan"), "ratio": float("nan")}
    rate = -np.polyfit(t[sel], np.log(dev[sel]), 1)[0]
    return {**out, "rate": float(rate), "ratio": float(rate / predicted)}


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
        h = 1e-6
        jvp = (fast(X + h * dX) - fast(X - h * dX)) / (2 * h)
        dev = float(np.abs(jvp - (inst.K - np.eye(cfg.T)) @ dX).max() / max(1.0, np.abs(dX).max()))
        jvp_dev = max(jvp_dev, dev)
    return {"block_constant": on, "generic": off, "normal_jvp_dev": jvp_dev}


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def theory_against_numerics(inst: Instance, points) -> dict | None:
    """The theory's reduced fields (for the instance's mask, its own coarse vector) against the
    numerical formulas at ``points`` ``[(segment, Y, ε)]``: max relative deviations of ``H₁``,
    ``f0``, ``f1``, and the curvature size. ``None`` when the theory has no derivation (a mask
    that is not a block mask)."""
    from theory.slow_manifold import MASKS, block_reduction, coarse_vector

    cfg = inst.cfg
    if not (isinstance(cfg.mask, str) and cfg.mask in MASKS):
        return None
    Lv = np.array([float(v) for v in coarse_vector(cfg.mask, cfg.P)])
    Lt = np.kron(np.eye(cfg.N), Lv[None, :])
    K = frozen_kernel(cfg.mask, cfg.T, cfg.P)
    theory = inst.flows if inst.source == "theory" else {k: inst._theory_rhs(k) for k in (0, 1)}
    num = {k: NumericReduction(k, inst, K, Lt) for k in (0, 1)}
    red = block_reduction(cfg.mask, cfg.P, cfg.d, cfg.norm, cfg.m, cfg.sigma)
    dev = {"H1": 0.0, "f0": 0.0, "f1": 0.0}
    curv = 0.0
    for l, Y, eps in points:
        H = num[1].H1(l, Y)
        dev["H1"] = max(dev["H1"], _rel(theory[1].H1(l, Y), H))
        dev["f0"] = max(dev["f0"], _rel(theory[0](l, Y), num[0](l, Y)))
        dev["f1"] = max(dev["f1"], _rel(theory[1](l, Y, eps), num[1](l, Y, eps)))
        curv = max(curv, float(np.abs(Lt @ num[1].curvature(l, Y, H)).max()))
    import sympy as sp

    kern = np.array(red.kernel.tolist(), dtype=float)
    P, d = cfg.P, cfg.d
    jac_exact = red.normal_jacobian == sp.kronecker_product(red.kernel - sp.eye(P), sp.eye(d))
    return {
        "max_rel": dev, "n_points": len(points), "curvature_max": curv,
        "curvature_identically_zero": bool(all(e == 0 for e in red.curvature_placeholders)),
        "scores_row_constant": bool(red.scores_row_constant),
        "softmax_rows_annihilate_ones": bool(red.softmax_rows_annihilate_ones),
        "kernel_vs_numerics": float(np.abs(kern - frozen_kernel(cfg.mask, P, P)).max()),
        "normal_jacobian_is_kron": bool(jac_exact),
        "normal_rate_symbolic": float(red.normal_rate),
        "derive_seconds": float(red.derive_seconds), "lambdify_seconds": float(red.lambdify_seconds),
    }


def decide_slopes(eps, err0, err1, p: dict) -> tuple[dict, dict]:
    """The slope rule, in one place: ``(parts, figures)``.

    Fits ``log err`` against ``log ε`` (:func:`verify.checks.f2.slope_fit`, 95% t interval);
    leading order holds when ``|slope₀ − 1| ≤ slope_tol0``, first order when
    ``|slope₁ − 2| ≤ slope_tol1``, and the fits decide when each interval's half-width is within
    its tolerance.
    """
    fit0, fit1 = slope_fit(eps, err0), slope_fit(eps, err1)
    tol0, tol1 = p["slope_tol0"], p["slope_tol1"]
    hw0 = (fit0["ci95"][1] - fit0["ci95"][0]) / 2
    hw1 = (fit1["ci95"][1] - fit1["ci95"][0]) / 2
    parts = {
        "leading_order_error_O_eps": Diagnostic(abs(fit0["slope"] - 1.0) <= tol0, fit0["slope"],
                                                f"|slope of leading-order error − 1| ≤ {tol0}"),
        "first_order_error_O_eps2": Diagnostic(abs(fit1["slope"] - 2.0) <= tol1, fit1["slope"],
                                               f"|slope of first-order error − 2| ≤ {tol1}"),
        "slope_fits_decide": Diagnostic(hw0 <= tol0 and hw1 <= tol1, [hw0, hw1],
                                        f"95% half-widths [leading, first] ≤ [{tol0}, {tol1}]"),
    }
    figures = {"slope_leading": fit0["slope"], "slope_leading_ci95": fit0["ci95"],
               "slope_first_order": fit1["slope"], "slope_first_order_ci95": fit1["ci95"],
               "slope_leading_ci_halfwidth": hw0, "slope_first_order_ci_halfwidth": hw1}
    return parts, figures


# ----------------------------------------------------------------------------- the claim

class F1(Claim):
    id = "F1"
    title = "Tikhonov along depth"
    abstract = "a fast-slow, singularly perturbed flow along depth"
    statement = ("For block-local masks the critical manifold is the block-constant states, "
                 "attracting at rate (1 − λ₂)/ε; the reduced flow is O(ε)-accurate and the "
                 "first-order one O(ε²).")
    params = {
        "T": Param(6, "tokens (a multiple of P)", low=2, high=64),
        "P": Param(3, "tokens per block (≥ 2: a block with fast dynamics; ≤ 4: the symbolic "
                      "derivation's cost)", low=2, high=4),
        "d": Param(2, "features (≤ 4: the symbolic derivation's cost)", low=1, high=4),
        "L": Param(2, "layers (piecewise-constant weights on L depth intervals)", low=1, high=16),
        "mask": Param("block_bidirectional", "fast attention mask", choices=tuple(nm.NAMED_MASKS)),
        "coarse": Param("auto", "coarse map Lᵀ: auto (first token for block_causal, block mean "
                                "otherwise), mean or first", choices=COARSE),
        "norm": Param(True, "RMS norm before attention, MLP and slow path"),
        "gamma": Param(1.0, "injection strength γ", low=0.0, high=100.0),
        "gate": Param(0.5, "gate g of every layer (0 switches the slow path off)", low=-10.0, high=10.0),
        "scale": Param(1.0, "scale of the weights", low=0.0, high=10.0),
        "x_scale": Param(1.0, "scale of the initial data", low=1e-3, high=10.0),
        "eps_min": Param(1e-3, "smallest ε of the sweep", low=1e-6, high=0.3),
        "eps_max": Param(1e-1, "largest ε of the sweep (≤ 0.3: the asymptotic regime)",
                         low=1e-6, high=0.3),
        "n_eps": Param(5, "number of log-spaced ε values", low=3, high=40),
        "rate_eps": Param(1e-4, "ε at which the attraction rate is measured", low=1e-7, high=1e-1),
        "rate_tol": Param(0.05, "allowed |measured/predicted attraction rate − 1|", low=0.0, high=1.0),
        "method": Param("radau", "stiff integrator of the full flow (the other one cross-checks)",
                        choices=METHODS),
        "rtol": Param(1e-9, "relative tolerance of the flows", low=1e-13, high=1e-3),
        "atol": Param(1e-11, "absolute tolerance of the flows", low=1e-15, high=1e-3),
        "slope_tol0": Param(0.1, "allowed |slope₀ − 1| and largest 95% half-width", low=0.0, high=10.0),
        "slope_tol1": Param(0.2, "allowed |slope₁ − 2| and largest 95% half-width", low=0.0, high=10.0),
    }
    hypotheses = {name: meaning for name, (meaning, _) in HYPOTHESIS_DIAGNOSTICS.items()}
    conclusion = {
        "block_constant_states_critical": f"(a) max |(A(UY) − I)UY| ≤ {CRITICAL_TOL} at random Y, every layer",
        "generic_states_not_critical": f"(a) min over layers of max |(A(X) − I)X| > {GENERIC_MIN} at generic X",
        "fast_part_normally_linear": "(b) the JVP of (A(X) − I)X at UY is (K − I)δX (central "
                                     f"difference, ≤ {NORMAL_LINEAR_TOL}·max(1, |δX|))",
        "symbolic_normal_structure": "(b) theory/: scores row-constant on 1yᵀ, softmax derivatives "
                                     "annihilate 1, kernel = numerics' K block, normal Jacobian = "
                                     "(K − I) ⊗ I_d (exact), normal rate 1 − λ₂",
        "attraction_rate": "(b) |measured decay rate of (I − UB)(X − εH₁) / ((1 − λ₂)/ε + γ) − 1| ≤ rate_tol",
        "leading_order_error_O_eps": "(c) |slope of the leading-order error − 1| ≤ slope_tol0",
        "first_order_error_O_eps2": "(d) |slope of the first-order error − 2| ≤ slope_tol1",
        "slope_fits_decide": "both slopes' 95% half-widths are within their tolerances",
        "first_order_better_at_every_eps": "the first-order error is below the leading-order error at every ε",
        "theory_agrees_with_numerical_formulas":
            "the theory reduced field agrees with the numerical formulas at points along the reduced "
            f"trajectory: H₁ and f0 to {THEORY_TOL['H1']:g}, f1 to {THEORY_TOL['f1']:g} relative",
        "curvature_term_as_derived": f"where the symbolic curvature is not identically 0, its size > "
                                     f"{CURVATURE_MIN} (Q, K enter at order ε); where it is, the "
                                     f"numerical one is ≤ {CURVATURE_ZERO}",
        "integrators_agree": f"at eps_min the errors from the other stiff method agree to "
                             f"{INTEGRATOR_RTOL:g} relative",
    }
    controls = (
        Control("global_causal_mask", {"mask": "causal", "n_eps": 3}, breaks="fast_mask_block_local",
                meaning="the global causal mask couples all blocks: its critical manifold is the "
                        "constants, so the block reduction's error stays O(1)", seed=0),
        Control("block_causal_block_mean", {"mask": "block_causal", "coarse": "mean", "n_eps": 3},
                breaks="coarse_map_is_left_eigenprojector",
                meaning="the block mean is not the coarse variable of block_causal (its kernel is "
                        "not doubly stochastic): the error does not shrink with ε", seed=1),
    )
    key_figures = ("slope_leading", "slope_first_order", "attraction_rate_ratio")

    def validate(self, p):
        if p["T"] % p["P"]:
            raise ValueError(f"parameter P={p['P']} must divide T={p['T']}")
        if not p["eps_min"] < p["eps_max"]:
            raise ValueError(f"parameter eps_min={p['eps_min']} must be below eps_max={p['eps_max']}")

    def build(self, p, seed):
        return Instance(p, seed)

    def diagnose(self, inst):
        return {name: fn(inst) for name, (_, fn) in HYPOTHESIS_DIAGNOSTICS.items()}

    def conclude(self, inst):
        p = inst.p
        eps_values = np.geomspace(p["eps_min"], p["eps_max"], p["n_eps"])
        sweep = error_sweep(inst, eps_values)
        other = error_sweep(inst, eps_values[:1], method=OTHER_METHOD[p["method"]])
        rate = attraction_rate(inst, p["rate_eps"])
        crit = critical_manifold_residuals(inst, np.random.default_rng(inst.check_rng_seed))
        slope_parts, slope_figs = decide_slopes(sweep["eps"], sweep["err_leading"], sweep["err_first"], p)
        # points along the first-order reduced trajectory at eps_max (two per layer, off the breaks)
        L = inst.model.L
        t_pts = np.sort(np.concatenate([(np.arange(L) + 0.25) / L, (np.arange(L) + 0.75) / L]))
        _, traj = inst.reduced(1, float(eps_values[-1]), inst.Y0, p["rtol"], p["atol"], t_eval=t_pts)
        points = [(inst.seg(t), traj.y[:, k].reshape(inst.Y0.shape), float(eps_values[-1]))
                  for k, t in enumerate(traj.t)]
        th = theory_against_numerics(inst, points)
        integ_dev = max(_rel(other["err_leading"], sweep["err_leading"][:1]),
                        _rel(other["err_first"], sweep["err_first"][:1]))
        figures = {
            **slope_figs,
            "eps": sweep["eps"], "err_leading": sweep["err_leading"], "err_first_order": sweep["err_first"],
            "attraction_rate": rate["rate"], "attraction_rate_predicted": rate["predicted"],
            "attraction_rate_ratio": rate["ratio"], "lambda2": rate["lambda2"],
            "critical_residual_block_constant": crit["block_constant"],
            "critical_residual_generic_min": crit["generic"],
            "normal_jvp_deviation": crit["normal_jvp_dev"],
            "coarse_variable": inst.coarse, "reduced_flow_source": inst.source,
            "fibre_base_point_shift": sweep["fibre_offset"],
            "full_flow_work": sweep["work"],
            "integrator_error_deviation_eps_min": integ_dev,
            "theory": th,
        }
        parts = dict(slope_parts)
        parts["block_constant_states_critical"] = at_most(
            crit["block_constant"], CRITICAL_TOL, f"max |(A(UY) − I)UY| ≤ {CRITICAL_TOL}")
        parts["generic_states_not_critical"] = Diagnostic(
            crit["generic"] > GENERIC_MIN, crit["generic"], f"min max |(A(X) − I)X| > {GENERIC_MIN}")
        parts["fast_part_normally_linear"] = at_most(
            crit["normal_jvp_dev"], NORMAL_LINEAR_TOL, f"|JVP − (K − I)δX| / max(1, |δX|) ≤ {NORMAL_LINEAR_TOL}")
        ratio = rate["ratio"]
        parts["attraction_rate"] = Diagnostic(
            bool(np.isfinite(ratio) and abs(ratio - 1.0) <= p["rate_tol"]), ratio,
            f"|rate/predicted − 1| ≤ {p['rate_tol']} (λ₂ = {rate['lambda2']:g}, closed form)")
        better = np.asarray(sweep["err_first"]) < np.asarray(sweep["err_leading"])
        parts["first_order_better_at_every_eps"] = Diagnostic(
            bool(better.all()), int((~better).sum()), "number of ε with err_first ≥ err_leading; 0 required")
        parts["integrators_agree"] = at_most(
            integ_dev, INTEGRATOR_RTOL, f"{p['method']} vs {OTHER_METHOD[p['method']]} at eps_min: "
                                        f"max relative error deviation ≤ {INTEGRATOR_RTOL}")
        if th is None:
            why = "no symbolic derivation: the mask is not a block mask"
            parts["symbolic_normal_structure"] = Diagnostic(False, None, why)
            parts["theory_agrees_with_numerical_formulas"] = Diagnostic(False, None, why)
            parts["curvature_term_as_derived"] = Diagnostic(False, None, why)
        else:
            sym_ok = (th["scores_row_constant"] and th["softmax_rows_annihilate_ones"]
                      and th["kernel_vs_numerics"] == 0.0 and th["normal_jacobian_is_kron"]
                      and th["normal_rate_symbolic"] == 1.0 - rate["lambda2"])
            parts["symbolic_normal_structure"] = Diagnostic(
                sym_ok, {k: th[k] for k in ("kernel_vs_numerics", "normal_jacobian_is_kron",
                                            "normal_rate_symbolic")},
                "kernel = numerics' K block (float), normal Jacobian = (K − I) ⊗ I_d (exact, "
                "rational), normal rate = 1 − λ₂ (closed form)")
            m = th["max_rel"]
            parts["theory_agrees_with_numerical_formulas"] = Diagnostic(
                all(m[k] <= THEORY_TOL[k] for k in THEORY_TOL), m,
                f"max relative deviation at {th['n_points']} points: H₁, f0 ≤ {THEORY_TOL['H1']:g}, "
                f"f1 ≤ {THEORY_TOL['f1']:g}")
            if th["curvature_identically_zero"]:
                parts["curvature_term_as_derived"] = at_most(
                    th["curvature_max"], CURVATURE_ZERO, "symbolic curvature ≡ 0: numerical max |·| "
                                                         f"≤ {CURVATURE_ZERO}")
            else:
                parts["curvature_term_as_derived"] = Diagnostic(
                    th["curvature_max"] > CURVATURE_MIN, th["curvature_max"],
                    f"symbolic curvature ≢ 0: numerical max |Lᵀ DA[H₁]H₁| > {CURVATURE_MIN}")
        notes = [f"full flow: numerics.integrators method={p['method']!r} (radau: Radau IIA order 5; "
                 "rosw: Rosenbrock-W ROS34PW2), W = ((A−I)/ε − γI) ⊗ I_d; reduced flows: DOPRI5 on "
                 + ("theory.slow_manifold.reduced_rhs (SymPy derivation of this configuration)"
                    if inst.source == "theory" else
                    "the numerical block reduction (no derivation exists for this mask/coarse map)")
                 + "; errors relative Frobenius at t = 1"]
        tolerance = {"slope_leading_abs": p["slope_tol0"], "slope_first_order_abs": p["slope_tol1"],
                     "attraction_rate_rel": p["rate_tol"], "critical_residual_abs": CRITICAL_TOL,
                     "theory_H1_rel": THEORY_TOL["H1"], "theory_f0_rel": THEORY_TOL["f0"],
                     "theory_first_order_rel": THEORY_TOL["f1"], "integrators_rel": INTEGRATOR_RTOL}
        return Conclusion(parts, figures, tolerance=tolerance, notes=notes)


CLAIM = F1()
