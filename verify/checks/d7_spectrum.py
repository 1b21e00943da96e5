"""D7's spectral parts (:mod:`verify.checks.d7`): the Jacobian's token-block structure, the spectral
radius along the gate, the stability margin by the dense minimum singular value, the critical
gates, and the curves of the figure.

Helper module of the claim unit :mod:`verify.checks.d7` (which declares the claim and decides its
verdict); the statement, hypotheses and caveats are in that module's docstring.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import lapack
from fastslow.numerics.analysis.stability import (
    critical_gate,
    gate_spectral_radii,
    margin_certificate,
    sigma_min_on_circle,
    stability_margin,
)

from ..measure import ratio
from ..verdict import Diagnostic

GATE_BISECTION_TOL = 1e-12
"""Relative tolerance of the bisection for ``g_c`` (:func:`numerics.analysis.stability.critical_gate`,
its default): it returns the midpoint of a bracket of width ``≤ GATE_BISECTION_TOL·max(1, g_c)``,
so ``g_c`` is known to half of that. ``g_c ≥ m/‖G‖₂`` is decided up to this and the margin's own
uncertainty (the two margin methods' measured gap, divided by ``‖G‖₂``): where the bound is
attained exactly (``J = 0``, ``G = 11ᵀ``: ``g_c = m/‖G‖₂ = 1/3``) the bisection lands 3.9e-13
below it."""


MINIMUM_SLACK = 1e-12
"""The margin may exceed the dense-grid minimum of σ_min and ``1 − ρ(J)`` by this (rounding)."""


INSIDE_FRACTION = 0.999
"""The gates of ``contractive_inside_margin`` fill ``|g| ≤ 0.999·m/‖G‖₂``."""


WIDE_GATES = np.linspace(-10.0, 10.0, 81)
"""Gates (in units of the gate scale) over which the variation of ``ρ(J + gG)`` is reported."""


CURVE_GATES = 801


CURVE_SPAN = 1.6


CURVE_SPAN_INFINITE = 5.0
"""The ρ(J + gG) curve of the series: 801 gates on ``[−s, s]`` with ``s = 1.6·max(g_c⁺, g_c⁻)``
over the finite critical gates (5 when none is finite)."""


CURVE_ANGLES = 1001
"""The σ_min(e^{iθ}I − J) curve of the series: 1001 angles on ``[0, 2π]``."""


def token_block_structure(J: np.ndarray, G: np.ndarray, block: int) -> dict:
    """Relative size of ``J`` above and of ``G`` on-or-above the token-block diagonal (blocks of
    ``block`` rows/columns): both 0 means ``J + gG`` is block lower-triangular with
    ``g``-independent diagonal blocks."""
    n = J.shape[0]
    b = np.arange(n) // block
    upper = b[:, None] < b[None, :]
    on_or_upper = b[:, None] <= b[None, :]
    return {
        "J_above_block_diagonal_rel": ratio(np.abs(J[upper]).max(initial=0.0), np.abs(J).max()),
        "G_on_or_above_block_diagonal_rel": ratio(
            np.abs(G[on_or_upper]).max(initial=0.0), np.abs(G).max()
        ),
        "G_max_abs": float(np.abs(G).max()),
    }


def rho_variation(J: np.ndarray, G: np.ndarray, unit: float) -> float:
    """``max − min`` of ``ρ(J + gG)`` over the gates :data:`WIDE_GATES`·``unit``."""
    rho = gate_spectral_radii(J, G, WIDE_GATES * unit)
    return float(rho.max() - rho.min())


def dense_sigma_min(J: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """``σ_min(e^{iθ}I − J)`` on the angles ``thetas`` straight from the singular values (``numerics.lapack.svdvals``, plain LAPACK: an
    evaluation independent of :func:`numerics.analysis.stability.sigma_min_on_circle`, the code
    under test; singular values are unique, so no LAPACK choice enters)."""
    n = J.shape[0]
    out = np.empty(thetas.size)
    chunk = max(1, 2**16 // max(1, n * n))
    for s in range(0, thetas.size, chunk):
        z = np.exp(1j * thetas[s : s + chunk])
        Z = z[:, None, None] * np.eye(n) - J[None]
        out[s : s + chunk] = lapack.svdvals(Z)[:, -1]
    return out


def margin_parts(J: np.ndarray, rho_J: float, p: dict) -> tuple[dict, dict]:
    """The margin ``m(J)`` by grid+Brent, by the pencil bisection and by a dense grid of angles:
    the parts ``margin_two_methods_agree`` and ``margin_is_a_minimum``, and their figures."""
    m = stability_margin(J)
    cert = margin_certificate(J)
    dense = float(dense_sigma_min(J, np.linspace(0.0, 2 * np.pi, p["dense_grid"])).min())
    gap = abs(m - cert.margin)
    figures = {
        "margin": m,
        "margin_pencil": cert.margin,
        "margin_pencil_bracket": [cert.lower, cert.upper],
        "margin_dense_grid": dense,
        "margin_methods_abs_gap": gap,
        "one_minus_rho": 1.0 - rho_J,
    }
    parts = {
        "margin_two_methods_agree": Diagnostic(
            gap <= p["margin_tol"], gap, f"|m − m_pencil| ≤ {p['margin_tol']:g}"
        ),
        "margin_is_a_minimum": Diagnostic(
            bool(m <= dense + MINIMUM_SLACK and m <= 1.0 - rho_J + MINIMUM_SLACK),
            [m, dense, 1.0 - rho_J],
            "m ≤ dense-grid min + 1e-12 and m ≤ 1 − ρ(J) + 1e-12",
        ),
    }
    return parts, figures


def gate_parts(J: np.ndarray, G: np.ndarray, m: float, m_gap: float, p: dict) -> tuple[dict, dict]:
    """ρ(J + gG) strictly inside the bound ``m/‖G‖₂`` and the critical gates ``g_c^±`` against
    it (up to the bisection's tolerance and the margin's measured uncertainty ``m_gap``,
    :data:`GATE_BISECTION_TOL`): the parts ``contractive_inside_margin``,
    ``critical_gates_above_bound`` and ``critical_gate_finite``, and their figures."""
    nG = float(np.linalg.norm(G, 2))
    bound = m / nG if nG > 0 else float("inf")
    gc_plus = critical_gate(J, G, sign=+1, tol=GATE_BISECTION_TOL)
    gc_minus = critical_gate(J, G, sign=-1, tol=GATE_BISECTION_TOL)
    gc = min(gc_plus, gc_minus)
    slack = (
        GATE_BISECTION_TOL * max(1.0, gc) / 2 + m_gap / nG if np.isfinite(gc) and nG > 0 else 0.0
    )
    inner = np.linspace(-INSIDE_FRACTION, INSIDE_FRACTION, p["n_gates"]) * (
        bound if np.isfinite(bound) else 1.0
    )
    rho_inner_max = float(gate_spectral_radii(J, G, inner).max())
    figures = {
        "norm_G": nG,
        "bound_m_over_normG": bound,
        "critical_gate_plus": gc_plus,
        "critical_gate_minus": gc_minus,
        "critical_gate": gc,
        "bound_tightness_gc_over_bound": gc / bound if bound > 0 and np.isfinite(gc) else None,
        "critical_gate_comparison_slack": slack,
        "max_rho_inside_margin": rho_inner_max,
        "rho_variation_over_wide_gates": rho_variation(
            J, G, bound if np.isfinite(bound) and bound > 0 else 1.0
        ),
    }
    parts = {
        "contractive_inside_margin": Diagnostic(
            bool(rho_inner_max < 1.0), rho_inner_max, "max ρ(J + gG) over |g| ≤ 0.999·m/‖G‖ < 1"
        ),
        "critical_gates_above_bound": Diagnostic(
            bool(gc_plus >= bound - slack and gc_minus >= bound - slack),
            [gc_minus, gc_plus, bound],
            f"[g_c⁻, g_c⁺] ≥ m/‖G‖ − {slack:.2g} (the bisection's half-bracket "
            f"{GATE_BISECTION_TOL:g}·max(1, g_c)/2 and the margin methods' gap / ‖G‖)",
        ),
        "critical_gate_finite": Diagnostic(bool(np.isfinite(gc)), gc, "min(g_c⁺, g_c⁻) < ∞"),
    }
    return parts, figures


def curves(J: np.ndarray, G: np.ndarray, gc_plus: float, gc_minus: float) -> dict:
    """The series the figure draws: ρ(J + gG) on :data:`CURVE_GATES` gates around the critical
    gates and σ_min(e^{iθ}I − J) on :data:`CURVE_ANGLES` angles of the circle."""
    finite = [g for g in (gc_plus, gc_minus) if np.isfinite(g)]
    span = CURVE_SPAN * max(finite) if finite else CURVE_SPAN_INFINITE
    gates = np.linspace(-span, span, CURVE_GATES)
    theta = np.linspace(0, 2 * np.pi, CURVE_ANGLES)
    return {
        "gates": gates.tolist(),
        "rho": np.asarray(gate_spectral_radii(J, G, gates)).tolist(),
        "theta": theta.tolist(),
        "sigma_min": np.asarray(sigma_min_on_circle(J, theta)).tolist(),
    }
