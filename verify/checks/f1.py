"""F1 — Tikhonov along depth: collapse onto block-constant states, then slow drift.

Statement (SPEC §2, F1). For ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)`` with a block-local mask:
(a) the critical manifold ``{(A(X) − I)X = 0}`` is the set of block-constant states ``X = UY``;
(b) it attracts at the rate ``(1 − λ₂)/ε`` (``λ₂ = 0`` for ``block_bidirectional``, ``1/2`` for
``block_causal``; with injection the deviation decays at ``(1 − λ₂)/ε + γ``), measured from the
decay of ``(I − UB)(X − εH₁)``; (c) ``‖X(1) − UY₀(1)‖ = O(ε)`` with ``dY₀/dt = Lᵀ R_t(UY₀)``;
(d) with ``X = UY + εH₁`` and ``dY/dt = Lᵀ R_t(UY + εH₁) + ε Lᵀ DA_{UY}[H₁] H₁`` the error is O(ε²).

How it is checked.

* Full flow: :func:`numerics.integrators.coupling.integrate_coupling` (Radau IIA by default,
  ``method="rosw"`` for the Rosenbrock-W method; tight tolerances), untied weights (piecewise
  constant on ``L`` intervals, breakpoints hit exactly),
  ``γ > 0`` towards a random, non-block-constant ``E``, gate ``g ≠ 0`` (the slow path is on).
* Coarse variable ``Y = LᵀX`` with ``Π = U Lᵀ`` the spectral projector of ``K_mask``
  (:func:`numerics.masks.coarse_maps`): the block mean for ``block_bidirectional``, the first token of
  each block for ``block_causal``; ``coarse="mean"``/``"first"`` overrides it (to show which one is
  right). ``H₁ = (I − K + Π)⁻¹(I − Π) R_t(UY)`` (on ``E_d``, ``I − K`` is invertible; for
  ``block_bidirectional`` this is ``γ(I − UB)E``), computed from :mod:`numerics`; the curvature term
  ``DA_{UY}[H₁]H₁`` by a central difference of the attention kernel.
* (c) starts from a generic ``X₀`` (off the manifold); the reduced flow starts at the base point of
  its fast fibre, ``Lᵀ X_∞`` with ``X_∞`` the end of the pure fast flow ``dX/dτ = (A(X) − I)X`` (for
  the nonlinear bidirectional kernel the block mean is *not* conserved by the fast flow, so
  ``BX₀`` would leave an O(1)·‖(I − UB)X₀‖² offset). (d) starts on the first-order slow manifold,
  ``X₀ = UY₀ + εH₁`` (the O(ε) correction of the fibre base point is not part of the claim).
* Errors at ``t = 1`` over log-spaced ``ε ∈ [eps_min, eps_max]``, slopes of ``log err`` against
  ``log ε`` with 95% intervals; holds when ``|slope₀ − 1| ≤ 0.1``, ``|slope₁ − 2| ≤ 0.2``, each
  interval's half-width is within the same tolerance (the sweep is precise enough to decide), and the
  measured attraction rate is within ``rate_tol`` of the prediction.
* Symbolic cross-check (``theory_check``): :func:`theory.slow_manifold.slow_manifold` derives, for one
  block of ``theory_P`` tokens of width ``theory_d`` (no norm), the normal Jacobian, ``H₁``, the
  reduced flow and the curvature term; they are compared with the numerical versions at a random point.

Negative control: the global ``causal`` mask. Its critical manifold is the constants (every token
collapses onto the first one), so the *block* reduction (block mean, block-constant manifold) is
wrong: the error does not shrink with ε (slope ≈ 0).
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics.integrators import integrate
from numerics.integrators.coupling import integrate_coupling, layer_breakpoints
from numerics.masks import coarse_maps, frozen_kernel

from . import CheckResult
from .f2 import slope_fit

DEFAULTS = {
    "T": 6, "P": 3, "d": 2, "L": 2,
    "mask": "block_bidirectional", "coarse": "auto",
    "gamma": 1.0, "gate": 0.5, "scale": 1.0, "x_scale": 1.0,
    "eps_min": 1e-3, "eps_max": 1e-1, "n_eps": 5,
    "rate_eps": 1e-4, "rate_tol": 0.05,
    "method": "radau", "rtol": 1e-9, "atol": 1e-11,
    "slope_tol0": 0.1, "slope_tol1": 0.2,
    "theory_check": True, "theory_P": 2, "theory_d": 2,
}

LIMITS = {"T": (1, 64), "P": (1, 64), "d": (1, 16), "L": (1, 16), "gamma": (0.0, 100.0),
          "gate": (-10.0, 10.0), "scale": (0.0, 10.0), "x_scale": (1e-3, 10.0),
          "eps_min": (1e-6, 1.0), "eps_max": (1e-6, 1.0), "n_eps": (3, 40), "rate_eps": (1e-7, 1e-1),
          "rate_tol": (0.0, 1.0), "rtol": (1e-13, 1e-3), "atol": (1e-15, 1e-3),
          "slope_tol0": (0.0, 10.0), "slope_tol1": (0.0, 10.0), "theory_P": (1, 3),
          "theory_d": (1, 2)}

BLOCK_LOCAL = ("block_bidirectional", "block_causal")
COARSE = ("auto", "mean", "first")
METHODS = ("radau", "rosw")


# ----------------------------------------------------------------------------- the instance

class Instance:
    """A seeded F1 instance: model, injection target, initial data, coarse maps, ``H₁``."""

    def __init__(self, p: dict, seed: int):
        nm_mask = p["mask"]
        if nm_mask not in nm.NAMED_MASKS:
            raise ValueError(f"mask must be one of {list(nm.NAMED_MASKS)}, got {nm_mask!r}")
        if p["method"] not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {p['method']!r}")
        if p["coarse"] not in COARSE:
            raise ValueError(f"coarse must be one of {list(COARSE)}, got {p['coarse']!r}")
        if not p["eps_min"] < p["eps_max"]:
            raise ValueError(f"need eps_min < eps_max, got {p['eps_min']} and {p['eps_max']}")
        ss = np.random.SeedSequence(seed)
        w_seed, e_seed, x_seed = ss.spawn(3)
        self.p = p
        self.cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=nm_mask, gamma=p["gamma"])
        self.model = nm.init_model(self.cfg, p["L"], w_seed, scale=p["scale"], gate=p["gate"])
        T, P, d, N = self.cfg.T, self.cfg.P, self.cfg.d, self.cfg.N
        self.E = np.random.default_rng(e_seed).standard_normal((T, d))
        rx = np.random.default_rng(x_seed)
        self.Y0 = p["x_scale"] * rx.standard_normal((N, d))
        self.Z0 = p["x_scale"] * rx.standard_normal((T, d))      # off-manifold part of X₀
        self.U = np.kron(np.eye(N), np.ones((P, 1)))
        self.B = self.U.T / P
        coarse = p["coarse"]
        if coarse == "auto":
            coarse = "first" if nm_mask == "block_causal" else "mean"
        self.coarse = coarse
        self.Lt = self.B if coarse == "mean" else coarse_maps("block_causal", T, P)[1].T
        self.Pi = self.U @ self.Lt
        # K of the block-local structure: the frozen kernel of the mask (for causal: the block
        # reduction pretends the blocks are separate, which is the violated hypothesis)
        K = frozen_kernel(nm_mask, T, P)
        self.K = K
        self.Hsolve = np.linalg.inv(np.eye(T) - K + self.Pi)
        self.breaks = layer_breakpoints(self.model.L)

    # R_t(X) = γ(E − X) + MLP_t(X) + g·Slow_t(X), from the public numerics functions
    def R(self, l: int, X: np.ndarray) -> np.ndarray:
        lp = self.model.layers[l]
        out = nm.mlp(self.cfg, lp, X) + self.cfg.gamma * (self.E - X)
        if self.cfg.slow and lp.g:
            out = out + lp.g * nm.slow_path(self.cfg, lp, X)
        return out

    def H1(self, l: int, Y: np.ndarray) -> np.ndarray:
        R = self.R(l, self.U @ Y)
        return self.Hsolve @ (R - self.Pi @ R)

    def curvature(self, l: int, Y: np.ndarray, H: np.ndarray) -> np.ndarray:
        """``DA_{UY}[H] H`` by a central difference of the attention kernel."""
        lp = self.model.layers[l]
        X = self.U @ Y
        nH = np.linalg.norm(H)
        if nH == 0.0:
            return np.zeros_like(H)
        delta = 1e-5 / nH
        Ap = nm.attention_kernel(self.cfg, lp, X + delta * H)
        Am = nm.attention_kernel(self.cfg, lp, X - delta * H)
        return ((Ap - Am) / (2 * delta)) @ H

    def seg(self, t: float) -> int:
        return int(np.searchsorted(self.breaks, t, side="right"))

    def reduced(self, order: int, eps: float, Y0: np.ndarray, rtol: float, atol: float):
        """Integrate the reduced flow of the given order (0 or 1) to ``t = 1``."""
        N, d = Y0.shape

        def f(t, y):
            l = self.seg(t)
            Y = y.reshape(N, d)
            if order == 0:
                return (self.Lt @ self.R(l, self.U @ Y)).ravel()
            H = self.H1(l, Y)
            return (self.Lt @ (self.R(l, self.U @ Y + eps * H) + eps * self.curvature(l, Y, H))).ravel()

        res = integrate(f, (0.0, 1.0), Y0, method="dopri5", rtol=rtol, atol=atol,
                        breakpoints=self.breaks)
        if not res.success:
            raise RuntimeError(f"reduced flow failed: {res.message}")
        return res.y[:, -1].reshape(N, d), res

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


# ----------------------------------------------------------------------------- measurements

def error_sweep(inst: Instance, eps_values) -> dict:
    """Errors of the leading- and first-order reductions at ``t = 1`` for each ε, with work counts."""
    p = inst.p
    U = inst.U
    X0_generic = U @ inst.Y0 + inst.Z0
    Xinf = inst.fast_limit(X0_generic)
    Yfib = inst.Lt @ Xinf
    Y0_red, _ = inst.reduced(0, 0.0, Yfib, p["rtol"], p["atol"])
    lead, first, work = [], [], []
    last_seg = inst.model.L - 1
    for eps in eps_values:
        r0 = integrate_coupling(inst.model, X0_generic, eps, E=inst.E, rtol=p["rtol"],
                                atol=p["atol"], method=p["method"])
        X1 = r0.extra["X"][-1]
        lead.append(np.linalg.norm(X1 - U @ Y0_red) / np.linalg.norm(X1))
        X0m = U @ inst.Y0 + eps * inst.H1(0, inst.Y0)
        r1 = integrate_coupling(inst.model, X0m, eps, E=inst.E, rtol=p["rtol"], atol=p["atol"],
                                method=p["method"])
        Y1, _ = inst.reduced(1, eps, inst.Y0, p["rtol"], p["atol"])
        X1m = r1.extra["X"][-1]
        approx = U @ Y1 + eps * inst.H1(last_seg, Y1)
        first.append(np.linalg.norm(X1m - approx) / np.linalg.norm(X1m))
        if not (r0.success and r1.success):
            raise RuntimeError("full flow failed")
        work.append({"eps": eps, "steps": r0.nsteps, "rejected": r0.nreject, "nfev": r0.nfev,
                     "njev": r0.njev})
    return {"eps": np.asarray(eps_values), "err_leading": np.asarray(lead),
            "err_first": np.asarray(first), "work": work,
            "fibre_offset": float(np.linalg.norm(Yfib - inst.Lt @ X0_generic))}


def attraction_rate(inst: Instance, eps: float, n_t: int = 161) -> dict:
    """Decay rate of ``‖(I − UB)(X(t) − εH₁)‖`` from a generic start, fitted where it is
    between 1e-2 and 1e-6 of its initial value (linear regime, above the O(ε²) floor)."""
    p = inst.p
    lam2 = sorted(set(np.round(np.linalg.eigvals(inst.K).real, 12)), reverse=True)
    lam2 = lam2[1] if len(lam2) > 1 else 0.0
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
    if sel.sum() < 3:
        return {"rate": float("nan"), "predicted": predicted, "ratio": float("nan"), "lambda2": lam2,
                "t": t, "deviation": dev}
    fit = np.polyfit(t[sel], np.log(dev[sel]), 1)
    rate = -fit[0]
    return {"rate": float(rate), "predicted": float(predicted), "ratio": float(rate / predicted),
            "lambda2": float(lam2), "eps": eps, "t": t, "deviation": dev, "n_fit": int(sel.sum())}


def theory_agreement(mask: str, P: int, d: int, gamma: float, seed) -> dict:
    """Compare the SymPy derivation (one block, no norm) with numerics at a random point."""
    from theory.slow_manifold import slow_manifold

    sm = slow_manifold(mask, P, d, False)
    rng = np.random.default_rng(seed)
    cfg = nm.ModelConfig(T=P, P=P, d=d, mask=mask, gamma=gamma, norm=False, slow=False)
    lp = nm.init_layer(cfg, rng)
    y = rng.standard_normal(d)
    E = rng.standard_normal((P, d))
    beta = cfg.score_scale
    args = (y, E, lp.Q, lp.K, lp.W1, lp.W2, beta, gamma)
    X = np.ones((P, 1)) * y
    K = frozen_kernel(mask, P, P)
    Lt = coarse_maps(mask, P, P)[1].T
    Pi = np.ones((P, 1)) @ Lt

    def R(X):
        return nm.mlp(cfg, lp, X) + gamma * (E - X)

    H = np.linalg.solve(np.eye(P) - K + Pi, (np.eye(P) - Pi) @ R(X))

    def dA(H, h=1e-5):
        s = h / np.linalg.norm(H)
        return (nm.attention_kernel(cfg, lp, X + s * H) - nm.attention_kernel(cfg, lp, X - s * H)) / (2 * s)

    def dR(H, h=1e-5):
        s = h / np.linalg.norm(H)
        return (R(X + s * H) - R(X - s * H)) / (2 * s)

    curv = Lt @ dA(H) @ H
    red1 = Lt @ (dR(H) + dA(H) @ H)
    Jnum = np.kron(K - np.eye(P), np.eye(d))

    def rel(a, b):
        return float(np.abs(np.asarray(a, float) - b).max() / max(np.abs(b).max(), 1e-300))

    Jsym = np.array(sm.normal_jacobian.tolist(), dtype=float)
    return {
        "mask": mask, "P": P, "d": d,
        "critical_residual_symbolic_zero": bool(all(e == 0 for e in sm.critical_residual)),
        "normal_jacobian_vs_kron": rel(Jsym, Jnum),
        "normal_rate_symbolic": float(sm.normal_rate),
        "H1_rel": rel(sm.H1_fn(*args), H),
        "reduced0_rel": rel(sm.reduced0_fn(*args), (Lt @ R(X)).ravel()),
        "reduced1_rel": rel(sm.reduced1_fn(*args), red1.ravel()),
        "curvature_rel": rel(sm.curvature_fn(*args), curv.ravel()),
        "curvature_norm": float(np.abs(curv).max()),
    }


def critical_manifold_residuals(inst: Instance, rng) -> dict:
    """``‖(A(X) − I)X‖`` on block-constant states (must be 0 to rounding for block-local masks) and
    on generic states (must not be)."""
    on, off = 0.0, np.inf
    for lp in inst.model.layers:
        X = inst.U @ rng.standard_normal(inst.Y0.shape)
        on = max(on, float(np.abs(nm.attention_kernel(inst.cfg, lp, X) @ X - X).max()))
        Xg = X + rng.standard_normal(X.shape)
        off = min(off, float(np.abs(nm.attention_kernel(inst.cfg, lp, Xg) @ Xg - Xg).max()))
    return {"block_constant": on, "generic": off}


def check(params: dict, seed: int) -> CheckResult:
    p = params
    inst = Instance(p, seed)
    eps_values = np.geomspace(p["eps_min"], p["eps_max"], p["n_eps"])
    sweep = error_sweep(inst, eps_values)
    fit0 = slope_fit(sweep["eps"], sweep["err_leading"])
    fit1 = slope_fit(sweep["eps"], sweep["err_first"])
    rate = attraction_rate(inst, p["rate_eps"])
    crit = critical_manifold_residuals(inst, np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[3]))
    natural = "first" if p["mask"] == "block_causal" else "mean"
    # hypotheses: a block-local mask, the coarse variable Y = LᵀX of its kernel, ε small
    hypotheses = p["mask"] in BLOCK_LOCAL and inst.coarse == natural and p["eps_max"] <= 0.3
    figures = {
        "slope_leading": fit0["slope"], "slope_leading_ci95": fit0["ci95"],
        "slope_first_order": fit1["slope"], "slope_first_order_ci95": fit1["ci95"],
        "eps": sweep["eps"], "err_leading": sweep["err_leading"], "err_first_order": sweep["err_first"],
        "attraction_rate": rate["rate"], "attraction_rate_predicted": rate["predicted"],
        "attraction_rate_ratio": rate["ratio"], "lambda2": rate["lambda2"],
        "critical_residual_block_constant": crit["block_constant"],
        "critical_residual_generic_min": crit["generic"],
        "coarse_variable": inst.coarse, "fibre_base_point_shift": sweep["fibre_offset"],
        "full_flow_work": sweep["work"],
    }
    # a fit decides only if its 95% interval is narrower than the tolerance band
    hw0 = (fit0["ci95"][1] - fit0["ci95"][0]) / 2
    hw1 = (fit1["ci95"][1] - fit1["ci95"][0]) / 2
    figures["slope_leading_ci_halfwidth"] = hw0
    figures["slope_first_order_ci_halfwidth"] = hw1
    ok = (abs(fit0["slope"] - 1.0) <= p["slope_tol0"] and abs(fit1["slope"] - 2.0) <= p["slope_tol1"]
          and hw0 <= p["slope_tol0"] and hw1 <= p["slope_tol1"]
          and np.isfinite(rate["ratio"]) and abs(rate["ratio"] - 1.0) <= p["rate_tol"]
          and crit["block_constant"] <= 1e-12)
    notes = [f"full flow: numerics.integrators method={p['method']!r} (radau: Radau IIA order 5; rosw: "
             "Rosenbrock-W ROS34PW2), W = ((A−I)/ε − γI) ⊗ I_d; reduced flows: DOPRI5; errors "
             "relative Frobenius at t = 1"]
    if p["theory_check"] and p["mask"] in BLOCK_LOCAL:
        th = theory_agreement(p["mask"], p["theory_P"], p["theory_d"], p["gamma"],
                              np.random.SeedSequence(seed).spawn(5)[4])
        figures["theory"] = th
        th_ok = (th["critical_residual_symbolic_zero"] and th["normal_jacobian_vs_kron"] < 1e-12
                 and max(th["H1_rel"], th["reduced0_rel"]) < 1e-10
                 and max(th["reduced1_rel"], th["curvature_rel"]) < 1e-6)
        ok = ok and th_ok
    return CheckResult(
        id="F1", holds=bool(ok), hypotheses_hold=bool(hypotheses), figures=figures, params=dict(p),
        seed=seed,
        tolerance={"slope_leading_abs": p["slope_tol0"], "slope_first_order_abs": p["slope_tol1"],
                   "attraction_rate_rel": p["rate_tol"], "critical_residual_abs": 1e-12,
                   "theory_H1_rel": 1e-10, "theory_first_order_rel": 1e-6},
        notes=notes)
