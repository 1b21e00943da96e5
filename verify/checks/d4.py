"""D4 — the linearised layer factorises along the frozen kernel's eigenbasis.

Statement: at a token-homogeneous state (``g = 0`` or no slow path; ``γ = 0`` or homogeneous ``E``)
the linearised layer is ``δX ↦ δX N_l + K δX M_l`` with the d×d matrices of
:mod:`numerics.linearised` (derived independently in :mod:`theory.linearisation`), so

    δX_L = Σ_j K^j δX_0 C_j = Σ_λ P_λ δX_0 D_λ,   D_λ = Π_l (N_l + λM_l).

Checked three ways on one instance: the polynomial form (Horner in the row-stochastic ``K``),
the eigen form with the closed-form projectors (only for ``T ≤ eig_max_T``: the causal kernel is
non-normal), and the analytic JVP through the nonlinear stack (:func:`numerics.autodiff.stack_jvp`),
with central finite differences of :func:`numerics.layer.stack` as a second, cruder oracle.
The numeric ``N_l, M_l`` are compared with the lambdified SymPy ones (``d ≤ theory_max_d``).
The softmax-derivative term ``δA·n(X)V`` of the first layer is measured directly (relative to
``‖δA‖‖n(X)V‖``: zero although ``δA ≠ 0``). Also reported (the non-normality finding): the 2-norm condition number of the causal kernel's
eigenvector matrix for each ``T`` in ``cond_Ts``: exact (closed-form eigenvectors) and as computed by
``numpy.linalg.eig`` in float64. Relative residuals are in units of ``tol`` (``fd_tol`` for finite
differences, whose truncation error is O(fd_step² times the third derivative) and rounding error
O(1e-16/fd_step)). Comparisons with the polynomial form divide by max(‖result‖, scale), where
scale = ‖δX_0‖ Σ_j ‖C_j‖₂ is the size of its terms: when the terms cancel (the Hypothesis
counterexample T = d = 1, value_gain = −1, L = 6 cancels by a factor ~1e6), float64 resolves the
sum only to rounding of that scale. ``poly_cancellation_factor`` reports scale/‖result‖.

Negative controls: a heterogeneous input (``heterogeneity > 0``) or the slow path with ``gate ≠ 0``:
the factorised prediction (built from the homogeneous single-token trajectory with ``g = 0``) no
longer matches the JVP of the actual stack.
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics import _validate as v
from numerics import linearised as lin
from numerics.autodiff import stack_jvp

from . import CheckResult

DEFAULTS = {
    "T": 8, "P": 4, "d": 4, "L": 6, "mask": "causal",
    "scale": 1.0, "value_gain": 0.0, "norm": True, "sigma": "tanh", "h": 1.0, "gamma": 0.0,
    "heterogeneity": 0.0, "slow": False, "gate": 0.0,
    "eig_max_T": 12, "theory_max_d": 4, "fd_step": 1e-5,
    "tol": 1e-10, "fd_tol": 1e-5, "report_condition": True, "cond_Ts": (8, 16, 32, 64),
}

LIMITS = {"T": (1, 128), "d": (1, 32), "L": (1, 64), "eig_max_T": (0, 24), "theory_max_d": (0, 5),
          "cond_Ts": (1, 128)}
"""Bounds that keep a user's instance small enough to finish in seconds."""


def build_model(p: dict, seed) -> nm.Model:
    """The random model of a D4/D5 instance: ``init_model`` weights at ``scale`` with
    ``V_l ← V_l + value_gain·I`` (so ``M_l ≈ h·value_gain·J_n`` dominates when the gain is large)."""
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], norm=bool(p["norm"]),
                         sigma=p["sigma"], h=p["h"], gamma=p["gamma"], slow=bool(p["slow"]))
    v.real("value_gain", p["value_gain"])
    model = nm.init_model(cfg, v.positive_int("L", p["L"]), seed, scale=p["scale"])
    layers = []
    for lp in model.layers:
        q = lp.copy()
        q.V = q.V + p["value_gain"] * np.eye(cfg.d)
        layers.append(q)
    return nm.Model(cfg, tuple(layers))


def softmax_derivative_term(cfg: nm.ModelConfig, p: nm.LayerParams, X: np.ndarray,
                            dX: np.ndarray) -> tuple[float, float, float]:
    """``(‖δA · n(X)V‖_F, ‖δA‖_F, ‖n(X)V‖_F)`` for the first-order change ``δA`` of the attention
    matrix along ``dX`` (written out from SPEC §1: ``δA = A ⊙ (δS − rowsum(A ⊙ δS))``).

    At a homogeneous ``X`` the first number vanishes (every row of ``δA`` sums to zero and every row
    of ``n(X)V`` is the same) although ``δA`` itself does not.
    """
    d = cfg.d
    if cfg.norm:
        r = np.sqrt(np.mean(X * X, axis=1, keepdims=True) + cfg.norm_eps)
        Xn = X / r
        dXn = dX / r - X * (np.sum(X * dX, axis=1, keepdims=True) / (d * r ** 3))
    else:
        Xn, dXn = X, dX
    beta = cfg.score_scale
    S = beta * (Xn @ p.Q) @ (Xn @ p.K).T
    dS = beta * ((dXn @ p.Q) @ (Xn @ p.K).T + (Xn @ p.Q) @ (dXn @ p.K).T)
    A = nm.masked_softmax(S, cfg.mask_array)
    AdS = A * dS
    dA = AdS - A * AdS.sum(axis=1, keepdims=True)
    values = Xn @ p.V
    return (float(np.linalg.norm(dA @ values)), float(np.linalg.norm(dA)),
            float(np.linalg.norm(values)))


def _rel(a: np.ndarray, b: np.ndarray, scale: float = 0.0) -> float:
    """‖a − b‖ / max(‖b‖, scale): relative error, or error in units of a rounding ``scale``."""
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), scale, 1e-300))


def check(params: dict, seed: int) -> CheckResult:
    p = dict(params)
    for key in ("tol", "fd_tol", "fd_step"):
        v.real(key, p[key], low=0.0, low_open=True)
    v.real("heterogeneity", p["heterogeneity"], low=0.0)
    v.real("gate", p["gate"])
    v.nonneg_int("eig_max_T", p["eig_max_T"])
    v.nonneg_int("theory_max_d", p["theory_max_d"])
    for T in p["cond_Ts"]:
        v.positive_int("cond_Ts entry", T)
    w_seed, x_seed, d_seed = np.random.SeedSequence(seed).spawn(3)
    model = build_model(p, w_seed)
    cfg = model.config
    if cfg.mask_name is None:
        raise ValueError("D4 needs a named mask")
    gated = model.with_gates(p["gate"])
    rng = np.random.default_rng(x_seed)
    x0 = rng.standard_normal(cfg.d)
    X0 = np.ones((cfg.T, 1)) * x0 + p["heterogeneity"] * rng.standard_normal((cfg.T, cfg.d))
    dX0 = np.random.default_rng(d_seed).standard_normal((cfg.T, cfg.d))
    K = nm.frozen_kernel(cfg.mask_array)

    # prediction: homogeneous single-token trajectory of the ungated model
    ungated = model.with_gates(0.0)
    xs = lin.homogeneous_trajectory(ungated, x0)
    N, M = lin.layer_factors(ungated, xs)
    C = lin.depth_polynomial(N, M)
    poly = lin.apply_depth_polynomial(K, dX0, C)
    rec = lin.linearised_stack(K, dX0, N, M)

    # the actual stack
    _, jvp = stack_jvp(gated, X0, dX0)
    s = p["fd_step"]
    E = X0 if cfg.gamma else None              # hold the injection target fixed, as stack_jvp does
    fd = (nm.stack(gated, X0 + s * dX0, E) - nm.stack(gated, X0 - s * dX0, E)) / (2 * s)

    term, dA_norm, v_norm = softmax_derivative_term(cfg, gated.layers[0], X0, dX0)
    # Rounding scale of the polynomial form Σ_j K^j δX_0 C_j: the size of its terms. When the
    # terms cancel (e.g. N_l + λM_l ≈ 0), float64 can only resolve the sum to ~1e-16 of this
    # scale, so comparisons with it are relative to max(‖result‖, scale).
    poly_scale = float(np.linalg.norm(dX0) * sum(np.linalg.norm(Cj, 2) for Cj in C))
    figures = {
        "softmax_derivative_term_rel": term / max(dA_norm * v_norm, 1e-300),
        "softmax_derivative_dA_norm": dA_norm,
        "poly_vs_jvp_rel": _rel(poly, jvp, poly_scale),
        "poly_vs_recursion_rel": _rel(poly, rec, poly_scale),
        "poly_cancellation_factor": poly_scale / max(float(np.linalg.norm(jvp)), 1e-300),
        "poly_vs_finite_difference_rel": _rel(poly, fd),
        "jvp_vs_finite_difference_rel": _rel(jvp, fd),
        "norm_dXL": float(np.linalg.norm(jvp)),
    }
    lams = lin.distinct_eigenvalues(cfg.mask_name, cfg.T, cfg.P)
    if cfg.T <= p["eig_max_T"]:
        projs = lin.spectral_projectors(cfg.mask_name, cfg.T, cfg.P)
        D = dict(zip(lams, lin.mode_products(N, M, lams)))
        D = {lam: D[min(D, key=lambda m: abs(m - lam))] for lam in projs}
        eig = lin.eigen_form(projs, dX0, D)
        figures["eigen_form_vs_poly_rel"] = _rel(eig, poly, poly_scale)
        # the same with numpy.linalg.eig's eigenvectors (what one must not rely on at large T)
        w, Vn = np.linalg.eig(K)
        Wn = np.linalg.inv(Vn)
        coeff = np.stack([np.real(sum(C[j] * wk ** j for j in range(C.shape[0]))) for wk in w])
        eig_np = np.real(sum(np.outer(Vn[:, k], Wn[k]) @ dX0 @ coeff[k] for k in range(cfg.T)))
        figures["numpy_eig_form_vs_poly_rel"] = _rel(eig_np, poly)
    figures["kernel_constant"] = lin.kernel_constant(cfg.mask_name, cfg.T, cfg.P)

    if cfg.d <= p["theory_max_d"]:
        from theory.linearisation import factors_function
        f = factors_function(cfg.d, cfg.m, cfg.norm, cfg.sigma)
        dev = 0.0
        for l, lp in enumerate(ungated.layers):
            Nt, Mt = f(xs[l], lp.V, lp.W1, lp.W2, cfg.h, cfg.gamma, cfg.norm_eps)
            dev = max(dev, _rel(Nt, N[l]), _rel(Mt, M[l]) if np.any(M[l]) else 0.0)
        figures["theory_vs_numerics_factors_rel"] = dev

    conds = {}
    for T in (p["cond_Ts"] if p["report_condition"] else ()):
        _, Vn = np.linalg.eig(nm.frozen_kernel("causal", T))
        conds[str(T)] = {"exact": lin.causal_eigenvector_condition(T),
                         "numpy_eig_float64": float(np.linalg.cond(Vn))}
    if conds:
        figures["causal_eigenvector_condition"] = conds

    tol, fd_tol = p["tol"], p["fd_tol"]
    hypotheses = p["heterogeneity"] == 0 and (not cfg.slow or p["gate"] == 0)
    holds = (figures["poly_vs_jvp_rel"] <= tol and figures["poly_vs_recursion_rel"] <= tol
             and figures["softmax_derivative_term_rel"] <= tol
             and figures["poly_vs_finite_difference_rel"] <= fd_tol
             and figures.get("eigen_form_vs_poly_rel", 0.0) <= tol
             and figures.get("theory_vs_numerics_factors_rel", 0.0) <= tol)
    notes = ["relative Frobenius residuals; the eigen form uses closed-form (binomial) eigenvectors "
             f"and is only evaluated for T ≤ {p['eig_max_T']}",
             "causal eigenvector condition: exact value from the closed forms vs numpy.linalg.eig "
             "(float64 saturates near 1e20 while the exact value keeps growing ~4^T)"]
    return CheckResult(id="D4", holds=bool(holds), hypotheses_hold=bool(hypotheses),
                       figures=figures, params=p, seed=seed,
                       tolerance={"rel": tol, "finite_difference_rel": fd_tol}, notes=notes)
