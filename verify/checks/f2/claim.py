"""F2 — linear generator: the equilibrium manifold is the stationary distribution.

Statement: if the fast dynamics is ``ε dx/dt = Q(y) x`` with ``Q(y)`` a generator (column
convention) with exactly one closed communicating class for every y (irreducibility is the main
case), the equilibrium manifold on the simplex is the graph of ``φ(y) = p_st(y)``; every other
eigenvalue has negative real part (it attracts at the spectral gap), and the coupled system
``y' = −y + cᵀx + sin t`` tracks it: after the initial layer ``x(t) − p_st(y(t)) = O(ε)``, and
``x(t) − p_st(y(t)) − ε h_1(y(t), t) = O(ε²)``.

Hypotheses ``generator_on_grid`` and ``one_closed_class_on_grid`` are decided on a *symbolic*
``Q(y)``, never on the numerical generator under test: for the built-in chains, the chain written
from its definition on theory's example generator (:func:`symbolic_chain`, source ``theory``); for
a user :class:`~verify.systems.GeneratorFamily`, its SymPy ``Q`` (its input). A numerical ``Q(y)``
that differs from it fails the conclusion part ``same_generator_as_theory``:

* ``generator_on_grid``: every column sum simplifies to 0 exactly and no off-diagonal rate is
  negative on the sampled y-grid;
* ``one_closed_class_on_grid``: the jump graph of every ``Q(y)`` has exactly one closed
  communicating class. This is the hypothesis actually used: the within-block causal chain of the
  attention link is *not* irreducible (token 1 is absorbing) yet has a unique ``p_st``;
  irreducibility is reported as a figure;
* ``initial_layer_negligible``: with the smallest spectral gap on the grid,
  ``exp(−gap·t0/ε) ≤ 1e-3·ε²`` for every ε of the sweep, so errors measured after ``t0`` are not
  initial-layer transients. A system it puts outside is told the ``t0`` that would bring it in
  (:func:`t0_needed`).

Limit of the check (``undecided``, never ``fails``): ``tracking_rates_resolved``, each tracking
rate is decided above the accuracy floor measured against a second integrator (not read from the
requested ``rtol``: SciPy's LSODA raises an ``rtol`` of 1e-14 silently and levels off near 1e-12);
the limit names the measured floor.

Conclusion (each a named part of the verdict):

1. the spectrum on the grid: exactly one eigenvalue at 0 (eigenvalues used as a multiset), the
   others with ``Re λ < 0`` (a spectral gap > 0: how large a gap the measured ε need is the
   hypothesis ``initial_layer_negligible``, decided from the system's own gap, never a bound of
   the conclusion); the one-dimensional null vector
   normalised by its sum is a probability vector (min entry ≥ −1e-12);
2. the manifold: ``p_st(y)`` of ``theory.markov`` (Markov chain tree theorem, exact) against the
   normalised numerical null vector of ``Q(y)`` (≤ ``manifold_tol``), after checking that both
   modules define the same ``Q(y)``; ``h_1`` of theory (exact algebra, residuals exactly 0) against
   the numerical group-inverse formula (≤ 1e3·``manifold_tol``);
3. tracking: the coupled system integrated (BDF, analytic Jacobian, rtol 1e-10) for ε log-spaced in
   ``[eps_min, eps_max]``, and again by a second integrator (:data:`OTHER_METHOD`) whose deviation
   is the achieved accuracy; errors are maxima over ``t ∈ [t0, t1]``; each order's rate by the rate
   rule (:func:`verify.measure.asymptotic_slope`: the finest straight window of resolved points,
   an error resolved at :data:`RATE_RESOLUTION` times its measured accuracy) in the bands
   ``1 ± slope_tol0`` and ``2 ± slope_tol1`` (a part fails only when the rate is measured to be
   another order); where theory's ``∂_y p_st ≡ 0`` (exact) the errors sit at the accuracy floor
   and the bounds ``error ≤ C·ε^k`` hold exactly; the correction lowers the error at every ε where
   the order-0 error is resolved; the trajectory stays on the simplex and inside the checked y-grid; two initial
   conditions with the same ``y0`` end ≤ ``eps_min`` apart (no memory of x0). Tracking is measured
   against the theory chain's manifold, so it is only defined when ``Q(y)`` is that chain (part 2);
   otherwise the tracking parts are recorded as not holding, with the reason;
4. the attention link: the within-block frozen kernels as generators ``(K − I)ᵀ`` for
   ``P = 2..P_max``: uniform ``p_st`` and a conserved block mean for ``block_bidirectional``
   (irreducible); ``e_1`` and a conserved first token, a non-conserved block mean (defect > manifold_tol,
   the tolerance that decides conservation in the bidirectional chain: its exact value
   ``max_j |H_P − H_j − 1|/P`` falls like ``log P/P``, 0.0956 at ``P = 32``, so no fixed number works),
   not irreducible but one closed class, spectral gap 1/2, for ``block_causal``; numerically
   (``numerics.model.masks.frozen_kernel``) and exactly (``theory.markov``).

The check also carries the figure's trajectory (``series``): one run of the coupled system at
``ε = 0.05`` from a random ``x0`` off the manifold, and ``p_st(y)`` around the y it visits.

Portability: eigenvalues are consumed as a sorted multiset, null vectors only when the numerical
null space is one-dimensional, normalised by their sum (sign- and basis-free).

Your own system: a :class:`~verify.systems.GeneratorFamily` ``(Q, slow, y, x, t)`` is checked the
same way on its own chain and slow field ``y' = slow(y, x, t)``. Derived symbolically
(``theory.markov.family_slow_manifold``): ``p_st`` by the tree theorem and ``h_1`` for that ``Q``
and that slow field, exactly, in the field of rational functions over ℚ of ``y`` and the
expressions' atoms (``exp(r·y)`` as powers of one ``exp(y/L)``, roots, trigonometric or any
other functions, constants — free generators; floats read as decimals), so both residuals are
exact zero tests; the verdict's notes list the atoms. Numerical, with the built-in tolerances:
hypotheses and spectrum from ``Q(y)`` on the grid; the null vectors against ``p_st``
(``manifold_tol``); the group-inverse ``h_1`` (1e3·``manifold_tol``); the coupled system with
``Q``, ``∂Q/∂y``, the slow field and its gradient lambdified from the SymPy expressions
(``theory.markov.family_functions``); tracking against the derived ``p_st`` and ``h_1``. Where
theory cannot derive ``p_st`` (several closed classes; columns not summing to 0 identically) the
parts against it are not computed and the notes say why: there is no numerical fallback.
``n_states``, ``chain`` and ``defect`` do not apply.

Negative controls (``chain=``): ``reducible`` (two disjoint copies of the chain: two closed
classes, a two-dimensional set of equilibria, the long-time x remembers the initial condition);
``not_generator_mass`` (``Q − defect·I``: ``1ᵀQ ≠ 0``, mass decays, the only equilibrium is 0);
``not_generator_sign`` (one negative jump rate, mass conserved: the null vector has a negative
entry and the trajectory leaves the simplex).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from fastslow.numerics.toy import markov
from fastslow.theory import markov as theory_markov

from ...claim import Claim, Conclusion, Control
from ...params import Order, Param
from ...systems import GeneratorFamily
from ...verdict import Diagnostic
from .attention import attention_link_parts
from .chain import (
    H1_TOL_FACTOR,
    FamilyInstance,
    Instance,
    chain_part,
    reduced_solution_inside_grid,
    symbolic_hypotheses,
)
from .manifold import (
    SIMPLEX_TOL,
    manifold_parts,
    memory_and_simplex_parts,
    not_computed,
    null_vectors,
    same_generator,
    spectrum_on_grid,
    spectrum_parts,
)
from .tracking import drawn_trajectory, inside_grid_part, tracking_parts, tracking_runs

CHAINS = markov.CHAIN_KINDS
"""The fast generator: the example chain or one of its negative controls."""
LAYER_FACTOR = 1e-3
"""The initial layer is negligible when ``exp(−gap·t0/ε) ≤ LAYER_FACTOR·ε²`` at every ε."""
TRACKING_PARTS = ("tracking_order_eps", "tracking_order_eps2", "correction_reduces_error")
"""The parts measured against the theory chain's manifold (undefined for another chain)."""
EPS_RANGE = dict(low=1e-6, high=0.5)
"""Bounds of the ε sweep's ends."""
TIMES = dict(low=0.0, high=100.0, open_low=True)
"""Bounds of the measured interval's ends."""
POSITIVE = dict(low=0.0, open_low=True)
"""Bounds of a tolerance (positive)."""


# --------------------------------------------------------------------------- the claim


NFEV_FLOOR = 1000
"""Work estimate: evaluations of one tracking run at ``rtol = 1e-12`` when ε is not small."""
NFEV_SMALL_EPS = 1.25e5
"""Work estimate: the extra evaluations of one run at ``ε = 1e-6``, ``rtol = 1e-12``; they grow
like ``ε^−1.4``."""
TOLERANCE_POWER = 0.55
"""Work estimate: evaluations grow like ``(1e-12/rtol)^0.55``."""


def tracking_evaluations(p: dict) -> float:
    """Field evaluations of the ``n_eps`` tracking runs (an upper bound: the larger of the
    ``rtol`` and ``atol`` factors)."""
    eps = np.geomspace(p["eps_min"], p["eps_max"], p["n_eps"])
    tighter = max(1e-12 / p["rtol"], 1e-14 / p["atol"], 1e-3) ** TOLERANCE_POWER
    return float(np.sum(NFEV_FLOOR + NFEV_SMALL_EPS * (1e-6 / eps) ** 1.4) * tighter)


def t0_needed(gap: float, eps: np.ndarray) -> float:
    """The smallest ``t0`` with ``exp(−gap·t0/ε) ≤ LAYER_FACTOR·ε²`` at every ``ε`` of ``eps``:
    ``max_ε ε·ln(1/(LAYER_FACTOR·ε²))/gap`` (``inf`` without a gap)."""
    if not gap > 0:
        return float("inf")
    return float(np.max(eps * np.log(1.0 / (LAYER_FACTOR * eps**2)) / gap))


def initial_layer_part(inst) -> Diagnostic:
    """``initial_layer_negligible`` from the system's smallest spectral gap on the grid and the
    measured interval's start ``t0``; its rule names the ``t0`` that would bring the system in
    (a time-scale requirement decided from the system, never a bound of the conclusion)."""
    gap = spectrum_on_grid(inst)["min_spectral_gap"]
    layer = np.exp(-gap * inst.p["t0"] / inst.eps) if gap > 0 else np.ones_like(inst.eps)
    worst = float(np.max(layer / (LAYER_FACTOR * inst.eps**2)))
    need = t0_needed(gap, inst.eps)
    rule = f"max_ε exp(−gap·t0/ε) / (1e-3·ε²) ≤ 1 (gap {gap:.4g}, t0 = {inst.p['t0']:.4g}"
    if worst > 1.0 and np.isfinite(need):
        grow = " and t1 above it" if need >= inst.p["t1"] else ""
        rule += f"; the parameter t0 ≥ {need:.4g}{grow} would bring it in)"
    elif worst > 1.0:
        rule += "; no spectral gap: no t0 brings it in)"
    else:
        rule += f"; needs t0 ≥ {need:.4g})"
    return Diagnostic(bool(worst <= 1.0), worst, rule)


class F2(Claim):
    id = "F2"
    title = "Equilibrium manifold = stationary distribution"
    abstract = (
        "under a linear-generator assumption ... the equilibrium manifold x = φ(y) is exactly "
        "the master-equation stationary distribution p_st(y)"
    )
    statement = (
        "If ε dx/dt = Q(y)x with Q(y) a generator with one closed class (irreducible: the "
        "main case) for every y, the equilibrium manifold is p_st(y), attracting at the "
        "spectral gap, tracked to O(ε) (O(ε²) with the correction)."
    )
    params = {
        "n_states": Param(
            3,
            "states of the example chain (closed-form p_st)",
            choices=tuple(theory_markov.EXAMPLE_CHAINS),
        ),
        "chain": Param(
            "irreducible", "the fast generator Q(y): the example chain or a control", choices=CHAINS
        ),
        "eps_min": Param(1e-3, "smallest ε of the sweep", **EPS_RANGE),
        "eps_max": Param(1e-1, "largest ε of the sweep (a small parameter)", **EPS_RANGE),
        "n_eps": Param(
            7, "number of ε values (≥ 3 to fit a slope with an interval)", low=3, high=40
        ),
        "t0": Param(1.0, "errors are maxima over t ∈ [t0, t1] (after the initial layer)", **TIMES),
        "t1": Param(4.0, "end of the measured interval", **TIMES),
        "n_t": Param(121, "output times in [t0, t1]", low=2, high=10_000),
        "y0": Param(0.5, "initial slow variable", low=-3.0, high=3.0),
        "y_min": Param(-2.0, "lower end of the checked y-grid", low=-5.0, high=5.0),
        "y_max": Param(2.0, "upper end of the checked y-grid", low=-5.0, high=5.0),
        "n_grid": Param(41, "points of the y-grid", low=2, high=10_000),
        "method": Param("BDF", "stiff integrator", choices=("Radau", "BDF", "LSODA")),
        "rtol": Param(1e-10, "integrator relative tolerance", low=1e-14, high=1e-2),
        "atol": Param(1e-12, "integrator absolute tolerance", low=1e-16, high=1e-2),
        "manifold_tol": Param(1e-12, "max |p_st numeric − exact| allowed", **POSITIVE),
        "slope_tol0": Param(
            0.05,
            "band of the order-0 rate: its 95% interval within 1 ± slope_tol0 (also the largest "
            "spread of the window's local slopes)",
            **POSITIVE,
        ),
        "slope_tol1": Param(
            0.1,
            "band of the order-1 rate: its 95% interval within 2 ± slope_tol1 (also the largest "
            "spread of the window's local slopes)",
            **POSITIVE,
        ),
        "defect": Param(1.0, "column-sum defect of the not_generator_mass control", **POSITIVE),
        "P_max": Param(6, "largest block size of the attention link", low=2, high=64),
    }
    hypothesis_sources = {
        "generator_on_grid": "theory",
        "one_closed_class_on_grid": "theory",
        "initial_layer_negligible": "implementation",
        "reduced_solution_inside_grid": "reference",
    }
    hypotheses = {
        "generator_on_grid": "every Q(y) on the grid has off-diagonal rates ≥ 0 and zero column sums",
        "one_closed_class_on_grid": "the jump graph of every Q(y) on the grid has exactly one closed "
        "communicating class",
        "initial_layer_negligible": "exp(−gap·t0/ε) ≤ 1e-3·ε² for every ε, gap = the smallest "
        "spectral gap on the grid (when it does not hold, the rule names the t0 that would bring "
        "the system in: t0 ≥ max_ε ε·ln(1e3/ε²)/gap)",
        "reduced_solution_inside_grid": "the reduced solution y' = g(p_st(y), y, t) from y0 exists "
        "on [0, t1] and stays in [y_min, y_max] (no blow-up, no exit from the checked grid)",
    }
    limits = {
        "tracking_rates_resolved": "each tracking error's rate is decided by the rate rule above "
        "the accuracy floor measured against a second integrator (or every error sits at it: "
        "the bound holds exactly)",
    }
    conclusion = {
        "generator_is_the_chain": "the numerical Q(y) equals the symbolic chain (theory's, or the "
        "user's SymPy Q) on the grid to manifold_tol (else the runs are not made)",
        "one_zero_eigenvalue": "every Q(y) on the grid has exactly one eigenvalue at 0",
        "attracting_at_spectral_gap": "all other eigenvalues have Re λ < 0 (a spectral gap > 0 "
        "on the grid; how large a gap the measured ε need is the hypothesis "
        "initial_layer_negligible)",
        "equilibrium_is_probability": "the 1-D null vector normalised by its sum has entries ≥ −1e-12",
        "same_generator_as_theory": "numerics and theory define the same Q(y) (≤ manifold_tol)",
        "manifold_is_p_st": "max |null vector − exact p_st(y)| ≤ manifold_tol on the grid",
        "first_order_correction": "h_1: exact residuals are 0 and numeric vs exact ≤ 1e3·manifold_tol",
        "tracking_order_eps": "the order-0 error's rate is not measured to be another order than 1 "
        "(rate rule above the measured accuracy floor, band 1 ± slope_tol0), or the error sits at "
        "that floor at every ε (error ≤ C·ε exactly)",
        "tracking_order_eps2": "the order-1 error's rate is not measured to be another order than "
        "2 (band 2 ± slope_tol1), or it sits at the accuracy floor (error ≤ C·ε² exactly)",
        "correction_reduces_error": "the order-1 error is below the order-0 error at every ε where "
        "the order-0 error is resolved",
        "stays_on_simplex": "mass defect ≤ 1e-8 and min entry ≥ 0 after the layer (ε = eps_min)",
        "trajectory_inside_grid": "the y visited by the trajectories lies in [y_min, y_max]",
        "no_memory_of_x0": "two initial conditions with the same y0 end ≤ eps_min apart",
        "attention_link_matches_theory": "numerics and theory build the same kernels (exactly) and "
        "the same p_st (≤ manifold_tol)",
        "attention_link_bidirectional_uniform": "block_bidirectional: irreducible, p_st uniform, "
        "block mean conserved (≤ manifold_tol)",
        "attention_link_causal_first_token": "block_causal: not irreducible, one closed class, "
        "p_st = e_1, first token conserved exactly, block mean "
        "not (defect > manifold_tol on every block size), gap 1/2 (± 1e-12)",
    }
    controls = tuple(
        Control(chain, {"chain": chain}, breaks=breaks, meaning=meaning, seed=7)
        for chain, breaks, meaning in (
            (
                "reducible",
                "one_closed_class_on_grid",
                "two disjoint copies of the chain: two closed classes, two equilibria, the "
                "long-time state remembers x0",
            ),
            (
                "not_generator_mass",
                "generator_on_grid",
                "Q − defect·I: columns do not sum to 0, mass decays, the only equilibrium is 0",
            ),
            (
                "not_generator_sign",
                "generator_on_grid",
                "one negative jump rate (mass conserved): the null vector has a negative "
                "entry and the trajectory leaves the simplex",
            ),
        )
    )
    key_figures = ("slope_order0", "slope_order1", "min_spectral_gap", "manifold_max_abs_error")

    orders = (
        Order(("eps_min", "eps_max"), "the ε sweep runs from eps_min up to eps_max"),
        Order(("t0", "t1"), "errors are measured over [t0, t1]"),
        Order(("y_min", "y_max"), "the checked y-grid is [y_min, y_max]"),
        Order(
            ("y_min", "y0", "y_max"),
            "the trajectory starts at y0, which must lie on the checked y-grid",
            strict=False,
        ),
    )

    def work(self, p):
        """The tracking runs (:func:`tracking_evaluations` stiff evaluations and ``n_t`` output
        times each), the y-grid (``n_grid`` points) and the attention link (``P²`` entries of one
        exact row for ``P = 2..P_max``). Caveat for a user family: the evaluations a tracking run
        needs depend on how stiff its slow field is, which no count before the work can see (its
        number of states barely matters; docs/benchmarks.md); its integrations stop at the time
        budget instead (:meth:`CoupledChain.setup`: outcome ``error``, naming the budget)."""
        return {
            "start": 1,
            "stiff_evaluation": tracking_evaluations(p),
            "output_time": p["n_eps"] * p["n_t"],
            "grid_point": p["n_grid"],
            "link_entry": sum(P * P for P in range(2, p["P_max"] + 1)),
        }

    instance = Instance
    systems = (GeneratorFamily,)
    system_terms = {
        "GeneratorFamily": "Q(y) a generator on the grid [y_min, y_max] (off-diagonal rates ≥ 0, "
        "columns summing to 0: generator_on_grid) with one closed class (one_closed_class_on_grid), "
        "a measured interval that starts after the initial layer (initial_layer_negligible: "
        "t0 ≥ max_ε ε·ln(1e3/ε²)/gap for your chain's smallest spectral gap; the verdict names "
        "the t0 it needs), a reduced solution from y0 that stays in [y_min, y_max] up to t1 "
        "(reduced_solution_inside_grid), and a slow field rational in x"
    }

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.GeneratorFamily` whose slow field is a rational function of
        the fast state ``x`` (any function of ``y`` and ``t``): the exact derivation of ``h_1``
        (:func:`theory.markov.family_slow_manifold`) substitutes ``x = p_st(y)`` in the field of
        rational functions, and reads a non-rational function of ``x`` (``sin(x0)``) as a free
        atom, so ``h_1`` would keep ``x`` unsubstituted. Bad input otherwise, before any work."""
        super().accepts(system)
        if not sp.sympify(system.slow).is_rational_function(*system.x):
            raise ValueError(
                f"{system.name}: slow = {system.slow} is not a rational function of the fast "
                f"state {', '.join(map(str, system.x))}; F2 derives h_1 exactly by substituting "
                "x = p_st(y) in rational functions (functions of y and t are allowed)"
            )

    def build_system(self, p, seed, system):
        return FamilyInstance(p, seed, system)

    def diagnose(self, inst):
        return {
            **symbolic_hypotheses(*inst.symbolic, inst.ys),
            "initial_layer_negligible": initial_layer_part(inst),
            "reduced_solution_inside_grid": reduced_solution_inside_grid(inst),
        }

    def conclude(self, inst):
        p, tol = inst.p, inst.p["manifold_tol"]
        eps_lo = float(inst.eps[0])
        null = null_vectors(inst)
        same = same_generator(inst)
        chain = chain_part(inst)
        spectrum = spectrum_parts(inst, null)
        sections = [
            ({"generator_is_the_chain": chain}, {}),
            spectrum,
            manifold_parts(inst, same, null),
        ]
        if not chain.holds:  # the code under test integrates another chain: nothing to measure
            why = "the numerical Q(y) is not the chain the hypotheses were decided on"
            skipped = (
                "no_memory_of_x0",
                "stays_on_simplex",
                *TRACKING_PARTS,
                "trajectory_inside_grid",
            )
            sections.append(({k: not_computed(why) for k in skipped}, {}))
            sections.append(attention_link_parts(p["P_max"], tol))
            parts, figures = {}, {}
            for section_parts, section_figures in sections:
                parts.update(section_parts)
                figures.update(section_figures)
            # no run was made, so no rate is left undecided: the failed parts decide (fails)
            superseded = Diagnostic(True, None, f"no tracking run was made: {why}")
            return Conclusion(
                parts,
                figures,
                {"manifold_abs": tol},
                [why, *inst.notes],
                limits={"tracking_rates_resolved": superseded},
            )
        ra, rb = inst.run(eps_lo, inst.x0), inst.run(eps_lo, inst.x0b)
        sections.append(memory_and_simplex_parts(inst, ra, rb))
        runs, series = [ra, rb], {}
        limit = Diagnostic(True, "not applicable: tracking is not measured", "")
        if same.holds and null is not None:  # the theory chain: its manifold is defined
            tracked, others = tracking_runs(inst, ra)
            *section, limit = tracking_parts(inst, tracked, others, spectrum[1]["min_spectral_gap"])
            sections.append(tuple(section))
            runs += tracked
            series = drawn_trajectory(inst)
        else:
            sections.append(({k: not_computed(inst.why_not) for k in TRACKING_PARTS}, {}))
        sections.append(inside_grid_part(inst, runs))
        sections.append(attention_link_parts(p["P_max"], tol))
        parts, figures = {}, {}
        for section_parts, section_figures in sections:
            parts.update(section_parts)
            figures.update(section_figures)
        notes = [
            "within-block block_causal chain: not irreducible (token 1 absorbing, others "
            "transient) but exactly one closed class, so p_st = e_1 is unique; the "
            "hypothesis used is 'one closed class', of which irreducibility is the special "
            "case",
            *inst.notes,
        ]
        tolerance = {
            "manifold_abs": tol,
            "h1_abs": H1_TOL_FACTOR * tol,
            "slope_order0": [1 - p["slope_tol0"], 1 + p["slope_tol0"]],
            "slope_order1": [2 - p["slope_tol1"], 2 + p["slope_tol1"]],
            "x0_dependence_abs": eps_lo,
            "simplex_abs": SIMPLEX_TOL,
            "zero_eigenvalue_abs": inst.zero_tol,
        }
        return Conclusion(
            parts, figures, tolerance, notes, series, limits={"tracking_rates_resolved": limit}
        )


CLAIM = F2()
