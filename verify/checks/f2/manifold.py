"""F2's stationary-manifold parts (:mod:`verify.checks.f2`): the generator's spectrum on the grid,
its null vectors, the stationary manifold against theory's, and the memory and simplex parts.

A module of the claim unit :mod:`verify.checks.f2`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f2.claim`.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.toy import markov

from ...measure import (
    symbolic_agrees,
)
from ...verdict import Diagnostic, at_least, at_most
from .chain import H1_TOL_FACTOR, CoupledChain

SIMPLEX_TOL = 1e-8
"""Largest mass defect ``|1ᵀx − 1|`` of a trajectory that counts as on the simplex."""


NULL_ENTRY_MIN = -1e-12
"""Smallest entry of the normalised null vector that counts as a probability (rounding)."""


H1_TIME = 0.7
"""The time at which ``h_1(y, t)`` of theory and numerics are compared on the y-grid."""


def spectrum_on_grid(inst: CoupledChain) -> dict:
    """Zero-eigenvalue counts and the spectral gap on the grid (eigenvalues as sorted multisets)."""
    lams = [markov.sorted_eigenvalues(Q) for Q in inst.Qs]
    n_zero = [int(np.sum(np.abs(lam) <= inst.zero_tol)) for lam in lams]
    rest = [float(lam[1:].real.max()) if lam.size > 1 else -np.inf for lam in lams]
    return {
        "max_zero_eigenvalues": int(max(n_zero)),
        "min_zero_eigenvalues": int(min(n_zero)),
        "max_re_nonleading_eigenvalue": max(rest),
        "min_spectral_gap": -max(rest),
    }


def not_computed(reason: str) -> Diagnostic:
    """A part that cannot be measured on this instance: it does not hold, and says why."""
    return Diagnostic(False, None, f"not computed: {reason}")


def null_vectors(inst: CoupledChain) -> list | None:
    """The normalised null vector of every ``Q(y)`` on the grid, or ``None`` unless the numerical
    null space is one-dimensional on the whole grid and the null vector could be normalised (the
    hypotheses, decided on the symbolic chain, already say it exists: the parts that need it then
    fail)."""
    try:
        null = [markov.unique_null_vector(Q) for Q in inst.Qs]
    except ValueError:  # the code under test finds no distribution on a generator of the chain
        return None
    return null if all(q is not None for q in null) else None


def spectrum_parts(inst: CoupledChain, null: list | None) -> tuple[dict, dict]:
    """Part 1: one zero eigenvalue, the others attracting (a gap > 0), and the null
    vector a probability vector; with the spectrum's figures and the irreducibility found."""
    spec = spectrum_on_grid(inst)
    dims = [markov.null_dimension(Q) for Q in inst.Qs]
    figures = {
        **spec,
        "irreducible_on_grid": bool(all(markov.is_irreducible(Q) for Q in inst.Qs)),
        "max_closed_classes": int(max(len(markov.closed_classes(Q)) for Q in inst.Qs)),
        "null_dimension_range": [min(dims), max(dims)],
    }
    parts = {
        "one_zero_eigenvalue": Diagnostic(
            spec["max_zero_eigenvalues"] == spec["min_zero_eigenvalues"] == 1,
            [spec["min_zero_eigenvalues"], spec["max_zero_eigenvalues"]],
            f"[min, max] number of eigenvalues with |λ| ≤ {inst.zero_tol:.3g}; [1, 1] required",
        ),
        "attracting_at_spectral_gap": Diagnostic(
            spec["max_re_nonleading_eigenvalue"] < 0,
            spec["min_spectral_gap"],
            "min spectral gap over the grid > 0 (every other eigenvalue has Re λ < 0)",
        ),
    }
    if null is None:
        parts["equilibrium_is_probability"] = not_computed(
            f"the null space of Q(y) is not one-dimensional on the whole grid "
            f"(dimensions {figures['null_dimension_range']})"
        )
        return parts, figures
    figures["min_null_vector_entry"] = float(min(q.min() for q in null))
    parts["equilibrium_is_probability"] = at_least(
        figures["min_null_vector_entry"],
        NULL_ENTRY_MIN,
        "min entry of the normalised null vector over the grid ≥ −1e-12",
    )
    return parts, figures


def same_generator(inst: CoupledChain) -> Diagnostic:
    """Part 2a: the numerics' ``Q(y)`` against the one the theory derived from, on the grid (rates
    of size ~1: scale 1); a chain of another size is not the theory chain (``inf``)."""
    if inst.sm is None:
        return not_computed(inst.why_not)
    n, tol = inst.sm.Q.shape[0], inst.p["manifold_tol"]
    what = "Q(y) on the grid (scale 1)"
    if inst.Qs[0].shape != (n, n):
        return Diagnostic(
            False, float("inf"), f"{what}: not the theory chain's size {n}×{n} (error inf)"
        )
    Q_th = [np.array(inst.sm.Q_numeric(y), dtype=float) for y in inst.ys]
    return symbolic_agrees(Q_th, inst.Qs, tol=tol, scale=1.0, what=what)


def manifold_parts(inst: CoupledChain, same: Diagnostic, null: list | None) -> tuple[dict, dict]:
    """Part 2: the same generator in theory and numerics; the normalised null vector against the
    exact ``p_st(y)`` (tree theorem); ``h_1`` of theory (exact residuals) against the numerical
    group-inverse formula. The last two only for the theory chain with a unique null vector."""
    sm, tol = inst.sm, inst.p["manifold_tol"]
    figures = {"generator_definition_mismatch": same.value}
    parts = {"same_generator_as_theory": same}
    if not (same.holds and null is not None):
        parts["manifold_is_p_st"] = not_computed(inst.why_not)
        parts["first_order_correction"] = not_computed(inst.why_not)
        return parts, figures
    p_th = np.array(sm.p_numeric(inst.ys)).T
    manifold = symbolic_agrees(
        p_th, np.array(null), tol=tol, scale=1.0, what="p_st(y) on the grid (probabilities)"
    )
    figures["manifold_max_abs_error"] = manifold.value
    parts["manifold_is_p_st"] = manifold
    h_num = np.array(
        [
            markov.first_order_correction(
                Q, inst.gen_dy(y), inst.slow, y, H1_TIME, require_generator=False
            )
            for y, Q in zip(inst.ys, inst.Qs)
        ]
    )
    h_th = np.array(sm.h1_numeric(inst.ys, np.full_like(inst.ys, H1_TIME))).T
    h1 = symbolic_agrees(h_th, h_num, tol=H1_TOL_FACTOR * tol, scale=1.0, what="h_1(y, t)")
    figures["h1_max_abs_error"] = h1.value
    exact_zero = bool(all(r == 0 for r in sm.residual_invariance) and sm.residual_sum == 0)
    parts["first_order_correction"] = Diagnostic(
        exact_zero and h1.holds,
        {"exact_residuals_zero": exact_zero, "h1_max_abs_error": h1.value},
        "exact residuals = 0 and max |h1 numeric − exact| ≤ 1e3·manifold_tol",
    )
    return parts, figures


def memory_and_simplex_parts(inst: CoupledChain, ra, rb) -> tuple[dict, dict]:
    """Part 3 without the theory, at ``eps_min``: the runs from two initial conditions end
    ≤ ``eps_min`` apart, and the first stays on the simplex after the layer."""
    eps_lo = float(inst.eps[0])
    figures = {
        "x0_dependence_at_t1": float(np.abs(ra.x[-1] - rb.x[-1]).max()),
        "mass_defect": float(np.abs(ra.x[1:].sum(axis=1) - 1.0).max()),
        "min_x_entry": float(ra.x[1:].min()),
    }
    parts = {
        "no_memory_of_x0": at_most(
            figures["x0_dependence_at_t1"], eps_lo, "max |x_a(t1) − x_b(t1)| ≤ eps_min"
        ),
        "stays_on_simplex": Diagnostic(
            figures["mass_defect"] <= SIMPLEX_TOL and figures["min_x_entry"] >= 0.0,
            {"mass_defect": figures["mass_defect"], "min_x_entry": figures["min_x_entry"]},
            "max |1ᵀx − 1| ≤ 1e-8 and min x ≥ 0 on [t0, t1]",
        ),
    }
    return parts, figures
