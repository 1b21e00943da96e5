"""D7 — stability margin of the gate.

Statement: let ``J`` be the Jacobian of the weight-tied looped layer ``Φ`` (gate 0) at a fixed point
``X*``, with ``ρ(J) < 1`` (contractive reference: input injection ``γ > 0``), and ``G = h·∂Slow/∂X``
the linearised slow path there, so that the gated layer linearises to ``J + gG``. With the distance
to instability ``m(J) = min_{|z|=1} σ_min(zI − J)``: ``ρ(J + gG) < 1`` for every
``|g| < m(J)/‖G‖₂``, and the critical gates ``g_c^± = inf{g ≥ 0 : ρ(J ± gG) ≥ 1}`` satisfy
``g_c^± ≥ m/‖G‖₂``. Nonlinear check: the looped map ``X ← Φ_g(X)`` converges to ``X*`` for
``|g| = below·g_c`` and does not for ``|g| = above·g_c``.

The instance (``reference="origin"``): embeddings ``E = 0`` and ``norm=False``. Then ``X* = 0`` is
a fixed point of ``Φ_g`` for *every* gate (``Attn(0) = MLP(0) = Slow(0) = 0``), and the Jacobian of
the gated map there is exactly ``J + gG``: the linear statement and the nonlinear iteration are about
the same fixed point, which is why this instance is chosen. ``reference="embedding"`` uses random
embeddings (and the RMS norm if ``norm=True``): ``X*`` is found by iterating at ``g = 0``; the
linear statement is checked the same way, but the nonlinear iteration is only reported (``X*``
moves with ``g``, so ``J + gG`` is not the Jacobian at the gated fixed point).

Finding (documented, tested): with the autoregressive slow path (``slow_mask="blockcausal"``) and
any causal or block-local fast mask, ``J + gG`` is block lower-triangular in token order with
``g``-independent diagonal blocks (the slow path reads only earlier blocks, ``U_c`` shifts by one
block), so ``ρ(J + gG) = ρ(J)`` for every ``g``: ``g_c = ∞`` and the bound holds vacuously. The
gate can destabilise the linearisation only in v1's ``slow_mask="full"`` variant, which is
therefore the default instance here.

Margin computed twice: grid on the circle refined by Brent (``stability_margin``) and the
symplectic-pencil bisection (``margin_certificate``), plus a brute-force dense grid.
Negative control: ``γ = 0`` (additive injection): ``ρ(J) ≥ 1``, so ``ρ(J + gG) < 1`` already fails
at ``g = 0`` inside the would-be margin, and the looped map does not converge.
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics import _validate as v
from numerics.stability import (critical_gate, gate_spectral_radii, iterate_looped_map,
                                layer_jacobian, margin_certificate, sigma_min_on_circle,
                                slow_jacobian, spectral_radius, stability_margin)

from . import CheckResult

DEFAULTS = {
    "T": 8, "P": 4, "d": 4, "mask": "block_bidirectional", "slow_mask": "full",
    "norm": False, "gamma": 1.0, "h": 0.5, "scale": 0.5, "slow_scale": 1.0,
    "reference": "origin", "below": 0.5, "above": 1.5, "init_size": 1e-2,
    "n_iter": 5000, "n_gates": 41, "margin_tol": 1e-8, "dense_grid": 2001,
}

LIMITS = {"T": (1, 64), "d": (1, 16), "gamma": (0.0, 1e3), "h": (1e-6, 10.0),
          "scale": (0.0, 1e3), "slow_scale": (0.0, 1e3), "below": (0.0, 10.0), "above": (0.0, 100.0),
          "init_size": (0.0, 10.0), "n_iter": (1, 100_000), "n_gates": (3, 1001),
          "dense_grid": (16, 100_001)}
"""Bounds that keep a user's instance small enough to finish in seconds (``fastslow check`` rejects values outside them)."""

REFERENCES = ("origin", "embedding")


def _validate(p: dict) -> None:
    for k in ("T", "P", "d", "n_iter", "n_gates", "dense_grid"):
        v.positive_int(k, p[k])
    v.divides(p["P"], p["T"])
    if p["T"] * p["d"] > 96:
        raise ValueError(f"D7 builds dense Jacobians: T·d must be ≤ 96, got {p['T'] * p['d']}")
    v.choice("reference", p["reference"], REFERENCES)
    v.real("gamma", p["gamma"], low=0.0)
    v.real("h", p["h"], low=0.0, low_open=True)
    v.real("scale", p["scale"], low=0.0)
    v.real("slow_scale", p["slow_scale"], low=0.0)
    v.real("below", p["below"], low=0.0, high=1.0, high_open=True)
    v.real("above", p["above"], low=1.0, low_open=True)
    v.real("init_size", p["init_size"], low=0.0, low_open=True)
    v.real("margin_tol", p["margin_tol"], low=0.0, low_open=True)


def instance(p: dict, seed: int):
    """``(config, params, X*, E, fixed_point_found)`` for the parameters ``p``."""
    w_seed, e_seed, _ = np.random.SeedSequence(seed).spawn(3)
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], slow_mask=p["slow_mask"],
                         norm=bool(p["norm"]), gamma=p["gamma"], h=p["h"])
    lp = nm.init_layer(cfg, np.random.default_rng(w_seed), scale=p["scale"],
                       slow_scale=p["slow_scale"], gate=0.0)
    if p["reference"] == "origin":
        if cfg.norm:
            raise ValueError("reference='origin' needs norm=False (the RMS norm has gain 1/√ε at 0)")
        E = np.zeros((cfg.T, cfg.d))
        return cfg, lp, np.zeros((cfg.T, cfg.d)), E, True
    E = np.random.default_rng(e_seed).standard_normal((cfg.T, cfg.d))
    res = iterate_looped_map(cfg, lp, E, E, max_iter=p["n_iter"], tol=1e-13)
    return cfg, lp, res.X, E, res.status == "converged"


def check(params: dict, seed: int) -> CheckResult:
    p = dict(params)
    _validate(p)
    _, _, i_seed = np.random.SeedSequence(seed).spawn(3)
    cfg, lp, Xs, E, found = instance(p, seed)
    J = layer_jacobian(cfg, lp, Xs, E)
    G = cfg.h * slow_jacobian(cfg, lp, Xs)
    rho_J = spectral_radius(J)
    m = stability_margin(J)
    cert = margin_certificate(J)
    dense = float(sigma_min_on_circle(J, np.linspace(0.0, 2 * np.pi, p["dense_grid"])).min())
    nG = float(np.linalg.norm(G, 2))
    bound = m / nG if nG > 0 else float("inf")
    gc_plus = critical_gate(J, G, sign=+1)
    gc_minus = critical_gate(J, G, sign=-1)
    gc = min(gc_plus, gc_minus)

    # ρ(J + gG) on a grid of gates strictly inside the margin
    inner = np.linspace(-0.999, 0.999, p["n_gates"]) * (bound if np.isfinite(bound) else 1.0)
    rho_inner = gate_spectral_radii(J, G, inner)
    wide = np.linspace(-10.0, 10.0, 81) * (bound if np.isfinite(bound) and bound > 0 else 1.0)
    rho_wide = gate_spectral_radii(J, G, wide)

    margin_agree = abs(m - cert.margin) <= p["margin_tol"] and m <= dense + 1e-12
    linear_holds = bool(rho_inner.max() < 1.0 and gc_plus >= bound and gc_minus >= bound)

    # nonlinear looped map around X*
    X_init = Xs + p["init_size"] * np.random.default_rng(i_seed).standard_normal(Xs.shape)

    def budget(rho: float) -> int:
        """Iterations the linear rate ρ needs to shrink the initial offset to the step tolerance
        (three times over), at least ``n_iter`` and at most 200 000."""
        if rho >= 1.0 or rho <= 0.0:
            return p["n_iter"]
        need = 3.0 * np.log(1e-12 / p["init_size"]) / np.log(rho)
        return int(min(max(p["n_iter"], need), 200_000))

    nonlinear = {}
    res0 = iterate_looped_map(cfg, lp, X_init, E, X_ref=Xs, max_iter=budget(rho_J), tol=1e-12)
    nonlinear["zero_gate"] = {"gate": 0.0, "rho": rho_J, "status": res0.status,
                              "converged_to_reference": bool(res0.status == "converged"
                                                             and res0.distance < 1e-8),
                              "iterations": res0.iterations, "distance_to_reference": res0.distance}
    nonlinear_ok = nonlinear["zero_gate"]["converged_to_reference"]
    for sign, gcs in ((+1, gc_plus), (-1, gc_minus)):
        if not np.isfinite(gcs) or gcs == 0.0:
            continue
        for label, factor in (("below", p["below"]), ("above", p["above"])):
            q = lp.copy()
            q.g = sign * factor * gcs
            rho_g = float(spectral_radius(J + q.g * G))
            res = iterate_looped_map(cfg, q, X_init, E, X_ref=Xs, max_iter=budget(rho_g), tol=1e-12)
            to_ref = res.status == "converged" and res.distance < 1e-8
            key = f"{label}_{'plus' if sign > 0 else 'minus'}"
            nonlinear[key] = {"gate": float(q.g), "rho": rho_g,
                              "status": res.status, "converged_to_reference": bool(to_ref),
                              "iterations": res.iterations, "distance_to_reference": res.distance}
            if p["reference"] == "origin":
                nonlinear_ok &= to_ref if label == "below" else not to_ref

    hypotheses = bool(rho_J < 1.0 and found)
    holds = bool(linear_holds and margin_agree and nonlinear_ok)
    figures = {
        "spectral_radius_J": rho_J,
        "margin": m,
        "margin_pencil": cert.margin,
        "margin_pencil_bracket": [cert.lower, cert.upper],
        "margin_dense_grid": dense,
        "margin_methods_abs_gap": abs(m - cert.margin),
        "one_minus_rho": 1.0 - rho_J,
        "norm_G": nG,
        "bound_m_over_normG": bound,
        "critical_gate_plus": gc_plus,
        "critical_gate_minus": gc_minus,
        "critical_gate": gc,
        "bound_tightness_gc_over_bound": gc / bound if bound > 0 and np.isfinite(gc) else None,
        "max_rho_inside_margin": float(rho_inner.max()),
        "rho_variation_over_wide_gates": float(rho_wide.max() - rho_wide.min()),
        "nonlinear": nonlinear,
        "fixed_point_found": bool(found),
        "fixed_point_norm": float(np.linalg.norm(Xs)),
        "dimension": int(J.shape[0]),
    }
    notes = []
    if not np.isfinite(gc):
        notes.append("ρ(J + gG) never reaches 1: J + gG is block lower-triangular in token order "
                     "with g-independent diagonal blocks (autoregressive slow path), g_c = ∞; the "
                     "bound holds vacuously")
    if p["reference"] == "embedding":
        notes.append("nonlinear iteration reported only: X* moves with g off the origin")
    return CheckResult(
        id="D7", holds=holds, hypotheses_hold=hypotheses, figures=figures, params=dict(p),
        seed=seed, tolerance={"margin_methods_abs": p["margin_tol"], "fixed_point_distance": 1e-8,
                              "loop_step_fro": 1e-12},
        notes=notes,
    )
