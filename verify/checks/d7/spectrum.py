"""D7's spectral parts (:mod:`verify.checks.d7`): the Jacobian's token-block structure, the spectral
radius along the gate, the stability margin by the dense minimum singular value, the critical
gates, and the curves of the figure.

A module of the claim unit :mod:`verify.checks.d7`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.d7.claim`.
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

from ...measure import ratio
from ...verdict import Diagnostic

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


SEARCH_SEEDS = 6
SEARCH_SIZE = 6
"""The margin search is also checked on :data:`SEARCH_SEEDS` seeded non-normal matrices of size
:data:`SEARCH_SIZE` (:func:`margin_search_part`): real ones and complex ones, eigenvalues spread
round the circle at radii 0.5–0.95, eigenvectors ill-conditioned, so their minima of σ_min sit at
any angle (the instance's ``J`` has its minimum near ``θ = 0`` on every seed tried, which hides a
search that never looks elsewhere)."""


def search_test_matrices(n: int = SEARCH_SIZE, count: int = SEARCH_SEEDS) -> list[np.ndarray]:
    """``count`` matrices ``S diag(λ) S⁻¹`` (seeded): ``λ`` at radii in [0.5, 0.95] and angles
    uniform on the circle (conjugate pairs for the even-indexed, real matrices), ``S`` a random
    matrix with entries of a wide spread (non-normal)."""
    out = []
    for seed in range(count):
        rng = np.random.default_rng([7, seed])
        S = rng.standard_normal((n, n)) * np.exp(rng.uniform(-1.5, 1.5, (n, n)))
        if seed % 2 == 0:  # real: S real, eigenvalues in conjugate pairs
            half = rng.uniform(0.5, 0.95, n // 2) * np.exp(1j * rng.uniform(0, np.pi, n // 2))
            lam = np.concatenate([half, half.conj()])
            blocks = np.zeros((n, n))
            for k, z in enumerate(half):
                blocks[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = [[z.real, z.imag], [-z.imag, z.real]]
            out.append(S @ blocks @ np.linalg.inv(S))
        else:
            S = S + 1j * rng.standard_normal((n, n))
            lam = rng.uniform(0.5, 0.95, n) * np.exp(1j * rng.uniform(0, 2 * np.pi, n))
            out.append(S @ np.diag(lam) @ np.linalg.inv(S))
    return out


def margin_bracket(J: np.ndarray, dense_grid: int) -> tuple[float, float]:
    """A brute-force bracket of ``m(J)``: ``σ_min(e^{iθ}I − J)`` is 1-Lipschitz in ``θ``
    (``|σ_min(A) − σ_min(B)| ≤ ‖A − B‖₂ = |e^{iθ} − e^{iθ'}| ≤ |θ − θ'|``), so on ``dense_grid``
    equally spaced angles of the full circle (spacing ``Δ``) the minimum ``s`` gives
    ``s − Δ/2 ≤ m(J) ≤ s``."""
    thetas = np.linspace(0.0, 2 * np.pi, dense_grid)
    s = float(dense_sigma_min(J, thetas).min())
    return s - (thetas[1] - thetas[0]) / 2, s


def margin_search_part(p: dict) -> tuple[dict, dict]:
    """``margin_search_checked``: on :func:`search_test_matrices`, the grid+Brent margin and the
    pencil bisection agree to ``margin_tol`` and both lie in the brute-force bracket of
    :func:`margin_bracket` (``+ 1e-12`` above): the margin search checked where the instance's
    own ``J`` would not exercise it."""
    worst_gap, outside = 0.0, []
    for k, M in enumerate(search_test_matrices()):
        m, cert = stability_margin(M), margin_certificate(M).margin
        lo, hi = margin_bracket(M, p["dense_grid"])
        worst_gap = max(worst_gap, abs(m - cert))
        if not (
            abs(m - cert) <= p["margin_tol"]
            and lo <= min(m, cert)
            and max(m, cert) <= hi + MINIMUM_SLACK
        ):
            outside.append(k)
    part = Diagnostic(
        not outside,
        {"matrices_failing": outside, "methods_abs_gap_max": worst_gap},
        f"{SEARCH_SEEDS} seeded non-normal {SEARCH_SIZE}×{SEARCH_SIZE} matrices: |m − m_pencil| ≤ "
        f"{p['margin_tol']:g} and both in [dense min − Δ/2, dense min + 1e-12]",
    )
    return {"margin_search_checked": part}, {"margin_search_methods_gap_max": worst_gap}


def margin_parts(J: np.ndarray, rho_J: float, p: dict) -> tuple[dict, dict]:
    """The margin ``m(J)`` by grid+Brent, by the pencil bisection and by a dense grid of angles:
    the parts ``margin_two_methods_agree`` and ``margin_is_a_minimum``, and their figures."""
    m = stability_margin(J)
    cert = margin_certificate(J)
    lower, dense = margin_bracket(J, p["dense_grid"])
    gap = abs(m - cert.margin)
    figures = {
        "margin": m,
        "margin_pencil": cert.margin,
        "margin_pencil_bracket": [cert.lower, cert.upper],
        "margin_dense_grid": dense,
        "margin_dense_grid_lower": lower,
        "margin_methods_abs_gap": gap,
        "one_minus_rho": 1.0 - rho_J,
    }
    parts = {
        "margin_two_methods_agree": Diagnostic(
            gap <= p["margin_tol"], gap, f"|m − m_pencil| ≤ {p['margin_tol']:g}"
        ),
        "margin_is_a_minimum": Diagnostic(
            bool(lower <= m <= dense + MINIMUM_SLACK and m <= 1.0 - rho_J + MINIMUM_SLACK),
            [m, dense, lower, 1.0 - rho_J],
            "dense-grid min − Δ/2 ≤ m ≤ dense-grid min + 1e-12 (σ_min is 1-Lipschitz in θ) and "
            "m ≤ 1 − ρ(J) + 1e-12",
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
