"""F1's conclusion parts and reported figures (:mod:`verify.checks.f1`): each measurement read
against its tolerance, the symbolic parts, the tolerances and the figures of the verdict.

A module of the claim unit :mod:`verify.checks.f1`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f1.claim`.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.integrators.integration import ORDERS as INTEGRATOR_ORDERS
from fastslow.theory.slow_manifold import (
    sigma_is_smooth,
)

from ...measure import (
    RATE_RESOLUTION,
)
from ...verdict import Diagnostic, at_most
from .instance import COARSE_TOL, Instance
from .integrators import ORDER_TOL, REFERENCE_FACTOR

CRITICAL_TOL = 1e-12
"""max |(A(UY) − I)UY| on block-constant states (rounding)."""


GENERIC_MIN = 1e-3
"""min |(A(X) − I)X| on generic states (the critical set is not everything)."""


NORMAL_LINEAR_TOL = 1e-7
"""central-difference JVP of the fast part at UY against (K − I)δX, relative to max(1, |δX|)."""


THEORY_TOL = {"H1": 1e-10, "f0": 1e-10, "f1": 1e-8}
"""theory field against the numerical formulas, relative (order 1: the Richardson-extrapolated
central difference of the curvature, accurate to about 1e-10 where the reduced solution passes
within 1e-3 of the RMS norm's singular point, 1e-11 elsewhere)."""


CURVATURE_MIN = 1e-3
"""the attention-curvature term is visible (Q, K enter at order ε) where it is not identically 0."""


CURVATURE_ZERO = 1e-8
"""where the symbolic curvature is identically 0, the numerical one is at most this."""


NORMAL_RATE_TOL = 1e-6
"""your own mask: the theory's exact normal rate ``1 − max Re λ`` against ``1 − λ₂`` from the
numerical eigenvalues, absolute (an eigenvalue of a defective block kernel is accurate only to
about √(unit roundoff))."""


def rate_parts(p: dict, rates: dict) -> dict:
    """(c) and (d): each order's rate by the rule (a part fails only when the rule measures
    another order; an unresolved rate is the limit ``rates_resolved``)."""
    parts = {}
    for res, part, k in zip(
        rates.values(), ("leading_order_error_O_eps", "first_order_error_O_eps2"), (1, 2)
    ):
        lo, hi = res["band"]
        parts[part] = Diagnostic(
            res["verdict"] != "fails",
            {
                "verdict": res["verdict"],
                "slope": res["slope"],
                "ci95": res["ci95"],
                "window": res["window"],
            },
            f"rate rule (finest straight window above the measured accuracy floor, no drift "
            f"below it): the 95% interval is not disjoint from [{lo:g}, {hi:g}] with the "
            f"window's local slopes moving away from {k}",
        )
    return parts


def rates_resolved(p: dict, rates: dict) -> Diagnostic:
    """Limit: the rule decides each order's rate above the accuracy floor (``holds`` or
    ``fails``, not ``unresolved``)."""
    return Diagnostic(
        all(r["verdict"] != "unresolved" for r in rates.values()),
        {
            name: {
                "verdict": r["verdict"],
                "why": r["why"],
                "resolved_points": len(r["h"]),
                "finest_resolved_eps": r["h"][-1] if r["h"] else None,
                "floor_at_finest": r["floor"][-1] if r["floor"] else None,
            }
            for name, r in rates.items()
        },
        f"each order's error curve has a window of {p['window']} resolved points (error ≥ "
        f"{RATE_RESOLUTION:g} × the measured accuracy, ε ≥ its eps_floor_*) with straight local "
        "slopes, no drift below it, and an interval that decides the band; "
        + "; ".join(
            f"{name}: {r['verdict']} ({len(r['h'])} resolved points down to ε = "
            f"{r['h'][-1] if r['h'] else float('nan'):.2g}, measured floor "
            f"{r['floor'][-1] if r['floor'] else float('nan'):.2g})"
            for name, r in rates.items()
        ),
    )


def critical_parts(crit: dict) -> dict:
    """(a) the critical manifold and (b) the normal linearity of the fast part."""
    return {
        "block_constant_states_critical": at_most(
            crit["block_constant"], CRITICAL_TOL, f"max |(A(UY) − I)UY| ≤ {CRITICAL_TOL}"
        ),
        "generic_states_not_critical": Diagnostic(
            crit["generic"] > GENERIC_MIN,
            crit["generic"],
            f"min max |(A(X) − I)X| > {GENERIC_MIN}",
        ),
        "fast_part_normally_linear": at_most(
            crit["normal_jvp_dev"],
            NORMAL_LINEAR_TOL,
            f"|JVP − (K − I)δX| / max(1, |δX|) ≤ {NORMAL_LINEAR_TOL}",
        ),
    }


def attraction_part(rate: dict, rate_tol: float) -> Diagnostic:
    """(b) the measured attraction rate against ``(1 − λ₂)/ε + γ``; not measured (the limit
    :func:`attraction_rate_resolvable` decides the outcome) when no rate could be fitted."""
    r = rate["ratio"]
    rule = f"|rate/predicted − 1| ≤ {rate_tol} (λ₂ = {rate['lambda2']:g}, {rate['lambda2_from']})"
    if r is None:
        return Diagnostic(
            True, "not measured: see the limit attraction_rate_resolvable", rule + "; not measured"
        )
    return Diagnostic(bool(np.isfinite(r) and abs(r - 1.0) <= rate_tol), r, rule)


def first_order_better_part(better: np.ndarray) -> Diagnostic:
    """The first-order reduction beats the leading one at every ε of its window."""
    return Diagnostic(
        bool(better.size and better.all()),
        {"n_eps": int(better.size), "n_not_better": int((~better).sum())},
        "number of ε of the first-order window with err_first ≥ err_leading; 0 required (and a "
        "non-empty window)",
    )


def integrators_part(integ: dict) -> Diagnostic:
    """Our stiff methods agree with the reference wherever the reference agrees with itself."""
    return Diagnostic(
        integ["ours_agree"] or not integ["reference_consistent"],
        {
            "ours_vs_scipy_radau_in_bounds": integ["ours_deviation_in_bounds"],
            "scipy_bdf_vs_radau_in_bounds": integ["reference_deviation_in_bounds"],
            "bound": integ["bound"],
            "eps": integ["eps"],
        },
        "at the ε deciding each rate: ‖X_ours(1) − X_scipy_Radau(1)‖/‖X(1)‖ ≤ "
        f"{REFERENCE_FACTOR:g}·(rtol + √n·atol/‖X(1)‖) for radau and rosw, wherever SciPy's Radau "
        "and BDF agree to that bound",
    )


def orders_part(orders: dict) -> Diagnostic:
    """Our stiff methods achieve their classical order with fixed steps."""
    return Diagnostic(
        all(r["verdict"] == "holds" for r in orders.values()),
        {
            m: {"slope": r["slope"], "ci95": r["ci95"], "verdict": r["verdict"]}
            for m, r in orders.items()
        },
        f"fixed steps h = 1/2 … 1/512 on a forced pendulum: the rate rule's interval lies in "
        f"k ± {ORDER_TOL} (radau k = {INTEGRATOR_ORDERS['radau']}, rosw k = "
        f"{INTEGRATOR_ORDERS['rosw']})",
    )


def reference_part(integ: dict) -> Diagnostic:
    """Limit: the independent reference agrees with itself at the check's tolerances."""
    return at_most(
        integ["reference_deviation_in_bounds"],
        1.0,
        "SciPy's Radau vs BDF at the ε deciding each rate, in units of "
        f"{REFERENCE_FACTOR:g}·(rtol + √n·atol/‖X(1)‖): ≤ 1 (else the tolerances cannot decide)",
    )


def normal_structure_part(th: dict, lambda2: float) -> Diagnostic:
    """(b) from theory/: the structural checks, the kernel against numerics' ``K`` block, the normal
    Jacobian and the normal rate against ``1 − λ₂`` (exactly for a named mask; for your own mask to
    :data:`NORMAL_RATE_TOL`, with the coarse vector against the numerical stationary weighting to
    :data:`COARSE_TOL`)."""
    shown = ["kernel_vs_numerics", "normal_jacobian_is_kron", "normal_rate_symbolic"]
    ok = (
        th["scores_row_constant"]
        and th["softmax_rows_annihilate_ones"]
        and th["kernel_vs_numerics"] == 0.0
        and th["normal_jacobian_is_kron"]
    )
    rule = (
        "kernel = numerics' K block (float), normal Jacobian = (K − I) ⊗ I_d (exact, "
        "rational), normal rate = 1 − λ₂ (closed form)"
    )
    if "coarse_vs_numerics" in th:  # your own mask: numerics computes L and λ₂ numerically
        ok = (
            ok
            and th["normal_rate_vs_numerics"] <= NORMAL_RATE_TOL
            and th["coarse_vs_numerics"] <= COARSE_TOL
        )
        shown += ["normal_rate_vs_numerics", "coarse_vs_numerics"]
        rule = (
            "kernel = numerics' K block (float), normal Jacobian = (K − I) ⊗ I_d (exact, "
            f"rational), normal rate 1 − max Re λ (exact) = 1 − λ₂ (numerical eigenvalues) to "
            f"{NORMAL_RATE_TOL:g}, coarse vector (exact) = numerics' stationary weighting to "
            f"{COARSE_TOL:g}"
        )
    else:
        ok = ok and th["normal_rate_symbolic"] == 1.0 - lambda2
    return Diagnostic(ok, {k: th[k] for k in shown}, rule)


def symbolic_parts(th: dict | None, lambda2: float, no_theory: str) -> dict:
    """The symbolic normal structure, the theory field against the numerical formulas and the
    curvature term (all three fail, with the reason ``no_theory``, where the theory has no
    derivation)."""
    names = (
        "symbolic_normal_structure",
        "theory_agrees_with_numerical_formulas",
        "curvature_term_as_derived",
    )
    if th is None:
        why = f"no symbolic derivation: {no_theory}"
        return {name: Diagnostic(False, None, why) for name in names}
    m = th["max_rel"]
    if th["curvature_identically_zero"]:
        curvature = at_most(
            th["curvature_max"],
            CURVATURE_ZERO,
            f"symbolic curvature ≡ 0: numerical max |·| ≤ {CURVATURE_ZERO}",
        )
    else:
        curvature = Diagnostic(
            th["curvature_max"] > CURVATURE_MIN,
            th["curvature_max"],
            f"symbolic curvature ≢ 0: numerical max |Lᵀ DA[H₁]H₁| > {CURVATURE_MIN}",
        )
    return {
        "symbolic_normal_structure": normal_structure_part(th, lambda2),
        "theory_agrees_with_numerical_formulas": Diagnostic(
            all(m[k] <= THEORY_TOL[k] for k in THEORY_TOL),
            m,
            f"max relative deviation at {th['n_points']} points: H₁, f0 ≤ {THEORY_TOL['H1']:g}, "
            f"f1 ≤ {THEORY_TOL['f1']:g}",
        ),
        "curvature_term_as_derived": curvature,
    }


def rate_figures(rates: dict, linearity: dict) -> dict:
    """The measured rates, windows, evaluated ladders and linearity constants of both orders."""
    figures = {}
    for name, res in rates.items():
        figures.update(
            {
                f"slope_{name}": res["slope"],
                f"slope_{name}_ci95": res["ci95"],
                f"window_{name}": res["window"],
                f"eps_{name}": res["h"],
                f"err_{name}": res["err"],
                f"local_slopes_{name}": res["local_slopes"],
                f"window_start_{name}": res["start_eps"],
                f"c2_{name if name == 'leading' else 'first'}": linearity[name]["c2"],
            }
        )
    return figures


def verdict_figures(inst, linearity, rates, rate, crit, integ, th) -> dict:
    """Every measured number of the verdict (``full_flow_work``: the full flows it used)."""
    return {
        **rate_figures(rates, linearity),
        "linearity": linearity,
        "rho_min": min(linearity["leading"]["rho_min"], linearity["first_order"]["rho_min"]),
        "attraction_rate": rate["rate"],
        "attraction_rate_predicted": rate["predicted"],
        "attraction_rate_ratio": rate["ratio"],
        "lambda2": rate["lambda2"],
        "critical_residual_block_constant": crit["block_constant"],
        "critical_residual_generic_min": crit["generic"],
        "normal_jvp_deviation": crit["normal_jvp_dev"],
        "coarse_variable": inst.coarse,
        "reduced_flow_source": inst.source,
        "fibre_base_point_shift": float(np.linalg.norm(inst.Y_fib - inst.Lt @ inst.X0_generic)),
        "full_flow_work": list(inst.work),
        "integrator_reference": integ,
        "integrator_check_eps": integ["eps"],
        "accuracy_floor_leading": rates["leading"]["floor"],
        "accuracy_floor_first_order": rates["first_order"]["floor"],
        "rate_verdicts": {k: {"verdict": r["verdict"], "why": r["why"]} for k, r in rates.items()},
        "theory": th,
    }


def tolerances(p: dict) -> dict:
    """The tolerances the verdict used, in the units their keys state."""
    return {
        "slope_leading_ci_within": p["slope_tol0"],
        "slope_first_order_ci_within": p["slope_tol1"],
        "window_local_slope_spread": [p["slope_tol0"] / 2, p["slope_tol1"] / 2],
        "attraction_rate_rel": p["rate_tol"],
        "critical_residual_abs": CRITICAL_TOL,
        "theory_H1_rel": THEORY_TOL["H1"],
        "theory_f0_rel": THEORY_TOL["f0"],
        "theory_first_order_rel": THEORY_TOL["f1"],
        "integrators_vs_reference_in_rtol_units": REFERENCE_FACTOR,
        "rate_resolution_over_accuracy": RATE_RESOLUTION,
        "integrator_order_band": ORDER_TOL,
    }


def method_note(inst: Instance) -> str:
    """Which integrators and which reduced flows the errors come from."""
    return (
        f"full flow: numerics.integrators method={inst.p['method']!r} (radau: Radau IIA order 5; "
        "rosw: Rosenbrock-W ROS34PW2), W = ((A−I)/ε − γI) ⊗ I_d; reduced flows: DOPRI5 on "
        + (
            "theory.slow_manifold.reduced_rhs (SymPy derivation of this configuration)"
            if inst.source == "theory"
            else "the numerical block reduction (no derivation exists for this mask/coarse map)"
            if sigma_is_smooth(inst.cfg.sigma)
            else f"the numerical block reduction (no derivation exists for σ = {inst.cfg.sigma!r})"
        )
        + "; errors relative Frobenius at t = 1"
    )
