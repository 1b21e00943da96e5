"""F1's measurements (:mod:`verify.checks.f1`): the ε-ladder and the error rates, the attraction
rate to the slow manifold, the critical manifold's residuals, the reduced trajectories, and the
theory's normal structure against the numerics.

A module of the claim unit :mod:`verify.checks.f1`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f1.claim`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from fastslow.numerics.model.coupling.drivers import (
    integrate_coupling,
)
from fastslow.numerics.model.layer import attention_kernel
from fastslow.numerics.model.masks import (
    coarse_maps,
    frozen_kernel,
    kernel_eigenvalues,
    slowest_left_eigenvectors,
)
from fastslow.theory.slow_manifold import (
    block_reduction,
)

from ...measure import (
    asymptotic_slope,
    central_difference,
    ratio,
    relative_error,
)
from .instance import (
    RATE_ORDERS,
    Instance,
    NumericReduction,
    second_eigenvalue,
    spectrum_source,
    theory_coarse_map,
)

JVP_STEP = 1e-6
"""step of that central difference."""


ATTRACTION_SAMPLES = 161
"""depths (uniform on ``[0, t_end]``) at which the deviation from the manifold is sampled."""


ATTRACTION_TOL = {"rtol": 1e-10, "atol": 1e-13}
"""tolerances of the full flow whose decay gives the attraction rate."""


ATTRACTION_FIT_BAND = (1e-6, 1e-2)
"""the decay rate is fitted where the deviation is between these fractions of its initial value
(linear regime, above the O(ε²) floor)."""


TRAJECTORY_EPS = 1e-2
"""ε of the depth trajectory in the series."""


TRAJECTORY_T = np.concatenate([np.linspace(0, 0.1, 201)[:-1], np.linspace(0.1, 1.0, 181)])
"""its depth grid: fine over the initial layer (the fast collapse), coarser after."""


TRAJECTORY_TOL = {"rtol": 1e-10, "atol": 1e-12}
"""tolerances of the trajectory's full (Rosenbrock-W) and reduced flows."""


TRAJECTORY_BLOCKS = 3
"""blocks whose feature 0 the trajectory records."""


def eps_ladder(eps_max: float, floor: float) -> np.ndarray:
    """``ε_j = eps_max · 10^(−j/4)`` from coarse to fine, down to ``floor``."""
    n = int(np.floor(4 * np.log10(eps_max / floor) + 1e-9)) + 1
    return eps_max * 10.0 ** (-np.arange(n) / 4)


def rate_window_start(ladder: np.ndarray, eps_max: float, lin_const: float, c2: float) -> int:
    """Index of the largest ladder point ``≤ min(eps_max, lin_const/c₂)`` (``len(ladder)`` if
    none): where the reduced flow is linear to ``lin_const`` under the O(ε) perturbation."""
    e_hi = min(eps_max, lin_const / c2) if c2 > 0 else eps_max
    below = np.flatnonzero(ladder <= e_hi * (1 + 1e-9))
    return int(below[0]) if below.size else len(ladder)


def error_rates(inst: Instance, linearity: dict) -> dict:
    """The rate rule, in one place: ``{order name: asymptotic_slope result + start_eps}``.

    For each order ``k`` (1 for the leading order, 2 for the first order) the ladder
    ``ε_j = eps_max · 10^(−j/4)`` down to the order's ``eps_floor_*`` is walked from the start that
    the linearity constant chooses (:func:`rate_window_start`) down to the accuracy floor
    (:meth:`Instance.accuracy`, measured at each ε), by :func:`verify.measure.asymptotic_slope`:
    the finest window of ``window`` consecutive resolved points whose local slopes spread by at
    most ``tol``, with no drift below it, is the asymptotic window, and the rate holds when the 95%
    interval of its fitted slope lies in the band ``[k − tol, k + tol]``; ``verdict`` says
    ``holds``, ``fails`` or ``unresolved`` (a limit).
    """
    p = inst.p
    results = {}
    for name, spec in RATE_ORDERS.items():
        ladder = eps_ladder(p["eps_max"], p[spec["floor"]])
        start = rate_window_start(ladder, p["eps_max"], p["lin_const"], linearity[name]["c2"])
        res = asymptotic_slope(
            ladder,
            getattr(inst, spec["error"]),
            spec["rate"],
            p[spec["tol"]],
            start=start,
            window=p["window"],
            spread=p[spec["tol"]],
            floor=lambda e, order=spec["order"]: inst.accuracy(order, e),
        )
        res["start_eps"] = float(ladder[start]) if start < len(ladder) else None
        res["floor"] = [inst.accuracy(spec["order"], e) for e in res["h"]]
        results[name] = res
    return results


def exponential_decay_rate(t: np.ndarray, dev: np.ndarray) -> float:
    """``−`` the slope of the least-squares line through ``(t, log dev)``: the rate ``r`` of
    ``dev ≈ C e^{−rt}`` (a semi-log fit)."""
    return float(-np.polyfit(t, np.log(dev), 1)[0])


def spectral_projector(K: np.ndarray, eigenvalues, lam: float) -> np.ndarray:
    """The spectral projector of the diagonalizable ``K`` onto the eigenvalue ``lam``:
    ``Π_{μ ≠ λ} (K − μI)/(λ − μ)`` over the distinct eigenvalues ``μ`` (a polynomial in ``K``:
    basis-free, no eigenvector enters)."""
    out = np.eye(K.shape[0])
    for mu in eigenvalues:
        if mu != lam:
            out = out @ (K - mu * np.eye(K.shape[0])) / (lam - mu)
    return out


def slow_deviation(inst: Instance):
    """The slowest mode of the deviation from the manifold, as a function of ``X − εH₁``: it
    decays exactly at ``1 − λ₂`` under the fast flow linearised on the manifold,
    ``(K − I)/ε ⊗ I_d``. For a named mask, the spectral projector of the frozen kernel ``K`` onto
    ``λ₂`` (:func:`spectral_projector`, from the closed-form spectrum; ``I − UB`` for
    ``block_bidirectional``, the ``λ = 1/2`` mode for ``block_causal``, not the faster ``1/3``);
    for your own mask (possibly defective, with modes a few percent apart) the component along
    the left eigenspaces of the slowest eigenvalues
    (:func:`numerics.model.masks.slowest_left_eigenvectors`: an orthonormal basis of a subspace,
    so the norm does not depend on it)."""
    cfg = inst.cfg
    if isinstance(cfg.mask, str):
        Pl = spectral_projector(
            inst.K, list(kernel_eigenvalues(cfg.mask, cfg.T, cfg.P)), second_eigenvalue(inst)
        )
        return lambda D: np.linalg.norm(Pl @ D)
    W = slowest_left_eigenvectors(cfg.mask_array)
    return lambda D: np.linalg.norm(W.conj().T @ D)


def attraction_rate(inst: Instance, eps: float) -> dict:
    """Decay rate of the slowest mode :func:`slow_deviation` of ``X(t) − εH₁`` from a generic
    start, fitted where it is within :data:`ATTRACTION_FIT_BAND` of its initial value (linear
    regime, above the O(ε²) floor), against ``(1 − λ₂)/ε + γ``.

    The flow is sampled over ``30/predicted`` (30 predicted time constants). A metastable start
    (scores that first favour the tokens' own keys, far from the frozen kernel) may not reach the
    band in that time: the horizon is then doubled, up to the first layer's depth ``1/L``, and the
    samples are laid from where the deviation first falls below the band's top (found on the
    longer horizon) over ``30/predicted`` more. ``n_fit < 3`` samples in the band (the
    deviation never reaches it before ``1/L``) is a limit of the check
    (:func:`attraction_rate_resolvable`), reported as such, never as a rate."""
    lam2 = second_eigenvalue(inst)
    predicted = (1.0 - lam2) / eps + inst.cfg.gamma
    horizon = 30.0 / predicted
    t_cap = 1.0 / inst.model.L
    X0 = inst.U @ inst.Y0 + inst.Z0
    H = eps * inst.H1(0, inst.Y0)
    deviation = slow_deviation(inst)
    lo, hi = ATTRACTION_FIT_BAND

    def sampled(t):
        res = integrate_coupling(
            inst.model, X0, eps, E=inst.E, t_eval=t, method=inst.p["method"], **ATTRACTION_TOL
        )
        return np.array([deviation(X - H) for X in res.extra["X"]])

    t_end = min(horizon, t_cap)
    t = np.linspace(0.0, t_end, ATTRACTION_SAMPLES)
    dev = sampled(t)
    while not (dev / dev[0] < hi).any() and t_end < t_cap:
        t_end = min(2.0 * t_end, t_cap)
        t = np.linspace(0.0, t_end, ATTRACTION_SAMPLES)
        dev = sampled(t)
    entry = int(np.argmax(dev / dev[0] < hi)) if (dev / dev[0] < hi).any() else 0
    if entry > 1 and t_end > horizon:  # resample the linear regime densely from just before entry
        t0 = t[entry - 1]
        t = np.unique(
            np.concatenate(
                [
                    np.linspace(0.0, t0, 9),
                    np.linspace(t0, min(t0 + horizon, t_cap), ATTRACTION_SAMPLES),
                ]
            )
        )
        dev = sampled(t)
    rel = dev / dev[0]
    sel = (rel < hi) & (rel > lo)
    out = {
        "predicted": float(predicted),
        "lambda2": lam2,
        "lambda2_from": spectrum_source(inst),
        "eps": eps,
        "t": t,
        "deviation": dev,
        "n_fit": int(sel.sum()),
        "horizon": float(t[-1]),
        "horizon_predicted_constants": float(t[-1] * predicted),
        "relative_deviation_at_horizon": float(rel[-1]),
    }
    if sel.sum() < 3:
        return {**out, "rate": None, "ratio": None}
    rate = exponential_decay_rate(t[sel], dev[sel])
    return {**out, "rate": rate, "ratio": ratio(rate, predicted)}


def critical_manifold_residuals(inst: Instance, rng) -> dict:
    """``|(A(X) − I)X|`` on block-constant states (0 to rounding for block-local masks) and on
    generic states (not 0), and the central-difference JVP of the fast part at ``UY`` against
    ``(K − I)δX`` (the softmax-derivative term ``DA[δX]·UY`` vanishes on the manifold)."""
    cfg = inst.cfg
    on, off, jvp_dev = 0.0, np.inf, 0.0
    for lp in inst.model.layers:
        X = inst.U @ rng.standard_normal(inst.Y0.shape)
        on = max(on, float(np.abs(attention_kernel(cfg, lp, X) @ X - X).max()))
        Xg = X + rng.standard_normal(X.shape)
        off = min(off, float(np.abs(attention_kernel(cfg, lp, Xg) @ Xg - Xg).max()))

        def fast(Z, lp=lp):
            return attention_kernel(cfg, lp, Z) @ Z - Z

        dX = rng.standard_normal(X.shape)
        jvp = central_difference(fast, X, dX, JVP_STEP)
        normal = (inst.K - np.eye(cfg.T)) @ dX
        dev = relative_error(jvp, normal, scale=max(1.0, np.abs(dX).max()), norm="max")
        jvp_dev = max(jvp_dev, dev)
    return {"block_constant": on, "generic": off, "normal_jvp_dev": jvp_dev}


def first_order_better(inst: Instance, first_order: dict) -> np.ndarray:
    """At every ε of the first-order window, whether the first-order error is below the
    leading-order one (the leading-order error at the same ε, cached where evaluated)."""
    w = first_order["window"]
    win = [e for e in first_order["h"] if w and w[1] <= e <= w[0]]
    return np.array([inst.error_first(e) < inst.error_leading(e) for e in win], dtype=bool)


def reduced_trajectory_points(inst: Instance) -> list:
    """``[(segment, Y, ε)]`` along the first-order reduced trajectory at ``eps_max``: two depths
    per layer, off the breakpoints."""
    p = inst.p
    L = inst.model.L
    t_pts = np.sort(np.concatenate([(np.arange(L) + 0.25) / L, (np.arange(L) + 0.75) / L]))
    _, traj = inst.reduced(1, float(p["eps_max"]), inst.Y0, p["rtol"], p["atol"], t_eval=t_pts)
    return [
        (inst.segment_of(t), traj.y[:, k].reshape(inst.Y0.shape), float(p["eps_max"]))
        for k, t in enumerate(traj.t)
    ]


def symbolic_normal_structure(cfg, keys: list) -> dict:
    """From :func:`theory.slow_manifold.block_reduction` of each distinct block mask in ``keys``:
    whether the curvature is identically 0, the structural checks (a), (b), the kernel against
    numerics' ``K`` block, whether the normal Jacobian is exactly ``(K − I) ⊗ I_d``, the normal rate
    (the smallest over the blocks) and the derivations' timings."""
    P, d = cfg.P, cfg.d
    reds = {k: block_reduction(k, P, d, cfg.norm, cfg.m, cfg.sigma) for k in dict.fromkeys(keys)}
    Kn = frozen_kernel(cfg.mask_array)
    kernel_dev = 0.0
    for b, key in enumerate(keys):
        kern = np.array(reds[key].kernel.tolist(), dtype=float)
        block = Kn[b * P : (b + 1) * P, b * P : (b + 1) * P]
        kernel_dev = max(kernel_dev, float(np.abs(kern - block).max()))
    red_list = list(reds.values())
    return {
        "curvature_identically_zero": all(
            all(e == 0 for e in r.curvature_placeholders) for r in red_list
        ),
        "scores_row_constant": all(bool(r.scores_row_constant) for r in red_list),
        "softmax_rows_annihilate_ones": all(bool(r.softmax_rows_annihilate_ones) for r in red_list),
        "kernel_vs_numerics": kernel_dev,
        "normal_jacobian_is_kron": all(
            bool(r.normal_jacobian == sp.kronecker_product(r.kernel - sp.eye(P), sp.eye(d)))
            for r in red_list
        ),
        "normal_rate_symbolic": min(float(r.normal_rate) for r in red_list),
        "derive_seconds": float(sum(r.derive_seconds for r in red_list)),
        "lambdify_seconds": float(sum(r.lambdify_seconds for r in red_list)),
    }


def theory_against_numerics(inst: Instance, points) -> dict | None:
    """The theory's reduced fields (for the instance's mask, its own coarse vector) against the
    numerical formulas at ``points`` ``[(segment, Y, ε)]``: max relative deviations of ``H₁``,
    ``f0``, ``f1``, and the curvature size; with the symbolic normal structure of
    :func:`symbolic_normal_structure`. ``None`` when the theory has no derivation (a mask that is
    not a block mask, see :func:`theory_derivation`). For your own mask the coarse vectors are also
    compared with the numerical stationary weighting (``coarse_vs_numerics``) and the normal rate
    with the numerical spectrum (``normal_rate_vs_numerics``)."""
    cfg = inst.cfg
    if inst.theory_keys is None:
        return None
    Lt = theory_coarse_map(cfg, inst.theory_keys)
    K = frozen_kernel(cfg.mask, cfg.T, cfg.P) if isinstance(cfg.mask, str) else inst.K
    theory = inst.flows if inst.source == "theory" else {k: inst.theory_flow(k) for k in (0, 1)}
    num = {k: NumericReduction(k, inst, K, Lt) for k in (0, 1)}
    dev = {"H1": 0.0, "f0": 0.0, "f1": 0.0}
    curv = 0.0
    for l, Y, eps in points:
        H = num[1].H1(l, Y)
        dev["H1"] = max(dev["H1"], relative_error(theory[1].H1(l, Y), H, norm="max"))
        dev["f0"] = max(dev["f0"], relative_error(theory[0](l, Y), num[0](l, Y), norm="max"))
        dev["f1"] = max(
            dev["f1"], relative_error(theory[1](l, Y, eps), num[1](l, Y, eps), norm="max")
        )
        curv = max(curv, float(np.abs(Lt @ num[1].curvature(l, Y, H)).max()))
    out = {
        "max_rel": dev,
        "n_points": len(points),
        "curvature_max": curv,
        **symbolic_normal_structure(cfg, inst.theory_keys),
    }
    if not isinstance(cfg.mask, str):
        stationary = coarse_maps(cfg.mask_array, cfg.T, cfg.P)[1].T
        out["coarse_vs_numerics"] = float(np.abs(Lt - stationary).max())
        rate = 1.0 - second_eigenvalue(inst)
        out["normal_rate_vs_numerics"] = abs(out["normal_rate_symbolic"] - rate)
    return out


def error_sweep(inst: Instance, eps_values, method: str | None = None) -> dict:
    """Errors of the leading- and first-order reductions at ``t = 1`` for each ε (the instance
    caches them per ε, so the rate rule and the series share the full flows)."""
    eps_values = np.asarray(eps_values, dtype=float)
    return {
        "eps": eps_values,
        "err_leading": np.array([inst.error_leading(e, method) for e in eps_values]),
        "err_first": np.array([inst.error_first(e, method) for e in eps_values]),
        "fibre_offset": float(np.linalg.norm(inst.Y_fib - inst.Lt @ inst.X0_generic)),
    }


def error_ladder(inst: Instance) -> dict:
    """Both orders' errors on the whole ladder ``eps_max … eps_floor_first`` and, per order, the
    window rule of :func:`verify.measure.asymptotic_slope` applied from the top of that ladder
    (``fit_leading``, ``fit_first_order``: slope, 95% interval, window, converged)."""
    p = inst.p
    sw = error_sweep(inst, eps_ladder(p["eps_max"], p["eps_floor_first"]))
    out = {k: sw[k].tolist() for k in ("eps", "err_leading", "err_first")}
    for (name, spec), key in zip(RATE_ORDERS.items(), ("err_leading", "err_first")):
        err_at = dict(zip(out["eps"], out[key]))
        fit = asymptotic_slope(
            sw["eps"], err_at.__getitem__, spec["rate"], p[spec["tol"]], window=p["window"]
        )
        out[f"fit_{name}"] = {k: fit[k] for k in ("slope", "ci95", "window", "converged")}
    return out


def depth_trajectory(inst: Instance) -> dict:
    """The full flow at ``ε = TRAJECTORY_EPS`` (Rosenbrock-W) from the generic start on
    :data:`TRAJECTORY_T`: the distance ``‖(I − UB)X(t)‖`` to the block-constant states, the level
    ``ε‖H₁‖`` of the first-order slow manifold, the layer breakpoints, and feature 0 of the block
    means and of the leading-order reduced flow from the fibre base point (first blocks)."""
    eps, t = TRAJECTORY_EPS, TRAJECTORY_T
    U, B = inst.U, inst.B
    res = integrate_coupling(
        inst.model, inst.X0_generic, eps, E=inst.E, t_eval=t, method="rosw", **TRAJECTORY_TOL
    )
    X = res.extra["X"]
    _, red = inst.reduced(0, 0.0, inst.Y_fib, t_eval=t, **TRAJECTORY_TOL)
    Yred = red.y.T.reshape(len(t), *inst.Y0.shape)
    dev = np.array([np.linalg.norm(x - U @ (B @ x)) for x in X])
    BX = np.einsum("nt,ktd->knd", B, X)
    blocks = range(min(TRAJECTORY_BLOCKS, BX.shape[1]))
    return {
        "eps": eps,
        "t": t.tolist(),
        "dev": dev.tolist(),
        "first_order_level": float(eps * np.linalg.norm(inst.H1(0, inst.Y0))),
        "breaks": np.asarray(inst.breaks, dtype=float).tolist(),
        "block_means": [BX[:, n, 0].tolist() for n in blocks],
        "reduced": [Yred[:, n, 0].tolist() for n in blocks],
    }
