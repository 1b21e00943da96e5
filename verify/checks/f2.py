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
  initial-layer transients.

Limit of the check (``undecided``, never ``fails``): ``tracking_rates_resolved``, each tracking
rate is decided above the accuracy floor measured against a second integrator (not read from the
requested ``rtol``: SciPy's LSODA raises an ``rtol`` of 1e-14 silently and levels off near 1e-12);
the limit names the measured floor.

Conclusion (each a named part of the verdict):

1. the spectrum on the grid: exactly one eigenvalue at 0 (eigenvalues used as a multiset), the
   others with ``Re λ < 0`` and the spectral gap ≥ ``gap_min``; the one-dimensional null vector
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

import time

import numpy as np
import sympy as sp

from fastslow.numerics.model.masks import frozen_kernel
from fastslow.numerics.toy import markov as mk
from fastslow.theory import markov as tm

from ..budgets import time_budget, time_hint
from ..claim import Claim, Conclusion, Control
from ..measure import (
    RATE_RESOLUTION,
    asymptotic_slope,
    at_accuracy_floor,
    ratio,
    symbolic_agrees,
)
from ..params import Order, Param
from ..reference import chains as reference_chains
from ..systems import GeneratorFamily
from ..verdict import Diagnostic, at_least, at_most

CHAINS = mk.CHAIN_KINDS
"""The fast generator: the example chain or one of its negative controls."""
SIMPLEX_TOL = 1e-8
"""Largest mass defect ``|1ᵀx − 1|`` of a trajectory that counts as on the simplex."""
LAYER_FACTOR = 1e-3
"""The initial layer is negligible when ``exp(−gap·t0/ε) ≤ LAYER_FACTOR·ε²`` at every ε."""
OTHER_METHOD = {"BDF": "Radau", "Radau": "BDF", "LSODA": "Radau"}
"""The second integrator whose run at every ε measures the achieved accuracy (:func:`accuracy`)."""
RATE_WINDOW = 4
"""Points of the rate rule's window (at most ``n_eps``)."""
ROUNDING_FLOOR = 10 * float(np.finfo(float).eps)
"""The smallest accuracy a run is credited with (probabilities of size 1)."""
NULL_ENTRY_MIN = -1e-12
"""Smallest entry of the normalised null vector that counts as a probability (rounding)."""
H1_TIME = 0.7
"""The time at which ``h_1(y, t)`` of theory and numerics are compared on the y-grid."""
H1_TOL_FACTOR = 1e3
"""``h_1`` (a group inverse applied twice) agrees to ``H1_TOL_FACTOR·manifold_tol``."""
CAUSAL_GAP, CAUSAL_GAP_TOL = 0.5, 1e-12
"""The within-block causal chain's spectral gap, exactly 1/2, to rounding."""
TRACKING_PARTS = ("tracking_order_eps", "tracking_order_eps2", "correction_reduces_error")
"""The parts measured against the theory chain's manifold (undefined for another chain)."""
NOT_THEORY_CHAIN = (
    "Q(y) is not the theory chain or has no unique null vector; tracking is undefined"
)
"""Why the parts against the theory's manifold are not computed for another chain."""
EPS_RANGE = dict(low=1e-6, high=0.5)
"""Bounds of the ε sweep's ends."""
TIMES = dict(low=0.0, high=100.0, open_low=True)
"""Bounds of the measured interval's ends."""
POSITIVE = dict(low=0.0, open_low=True)
"""Bounds of a tolerance (positive)."""
TRAJECTORY_EPS = 0.05
"""ε of the drawn trajectory (the figure's series)."""
TRAJECTORY_METHOD = "Radau"
"""Integrator of the drawn trajectory."""
TRAJECTORY_POINTS, MANIFOLD_POINTS, MANIFOLD_MARGIN = 600, 300, 0.2
"""Output times of the drawn trajectory on ``[0, t1]``; points of the drawn ``p_st(y)``, on the y
it visits widened by the margin on both sides."""


# --------------------------------------------------------------------------- the instance


def initial_conditions(seed: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Two random probability vectors on ``m`` states, from the two children of the seed."""
    x_seed, x2_seed = np.random.SeedSequence(seed).spawn(2)
    x0 = np.random.default_rng(x_seed).dirichlet(np.ones(m))
    return x0, np.random.default_rng(x2_seed).dirichlet(np.ones(m))


class CoupledChain:
    """What both kinds of instance share: the chain ``gen(y)`` (with ``gen_dy``) and the slow field
    on the checked y-grid, two initial conditions with the same ``y0``, the ε sweep, the theory's
    slow manifold ``sm`` (``None`` if it could not be derived, ``why_not`` says why) and the
    notes on what was derived how."""

    sm: tm.SlowManifold | None
    reduced_inputs: tuple | None = None  # (Q, g, y, x, t) in SymPy: the inputs, not theory's
    why_not: str = NOT_THEORY_CHAIN
    notes: tuple = ()

    def setup(self, p: dict, seed: int, chain: tuple, x0, x0b) -> None:
        """Store the parameters, ``chain = (gen, gen_dy, slow)`` and the initial conditions, and
        sample the chain on the y-grid. The instance's integrations stop when the check's CPU
        time reaches the time budget (:func:`verify.budgets.time_budget`, counted from here):
        the estimate (:meth:`F2.work`) cannot see a user slow field's stiffness."""
        self.deadline = time.process_time() + time_budget()
        self.p, self.seed = p, seed
        self.gen, self.gen_dy, self.slow = chain
        self.x0, self.x0b = x0, x0b
        self.ys = np.linspace(p["y_min"], p["y_max"], p["n_grid"])
        self.Qs = [self.gen(y) for y in self.ys]
        self.zero_tol = 1e-10 * max(1.0, max(float(np.abs(Q).max()) for Q in self.Qs))
        self.eps = np.geomspace(p["eps_min"], p["eps_max"], p["n_eps"])

    def run(self, eps: float, x0, t_eval=None, method=None) -> mk.CoupledRun:
        """The coupled system from ``(x0, y0)``, by default at the times ``0, [t0, t1]`` with the
        instance's integrator (generator checks off: the controls are not generators)."""
        p = self.p
        if t_eval is None:
            t_eval = np.concatenate([[0.0], np.linspace(p["t0"], p["t1"], p["n_t"])])
        try:
            return mk.integrate_coupled(
                self.gen,
                self.gen_dy,
                eps,
                x0,
                p["y0"],
                self.slow,
                t_eval,
                method=method or p["method"],
                rtol=p["rtol"],
                atol=p["atol"],
                require_generator=False,
                deadline=self.deadline,
            )
        except mk.DeadlineExceeded as exc:
            raise mk.DeadlineExceeded(
                f"the check ran past the time budget of {time_hint()} (CPU time) in its tracking "
                f"runs: {exc}; the estimate before the work cannot see how stiff a slow field is"
            ) from None


def symbolic_chain(kind: str, n: int, defect: float) -> sp.Matrix:
    """The chain's ``Q(y)`` written from its definition on theory's example generator
    (:func:`theory.markov.example_generator`), in the symbol ``theory.markov.y``: the chain itself,
    two disjoint copies ``Q(y)``, ``Q(−y)`` (``reducible``), ``Q − defect·I``
    (``not_generator_mass``), or one jump rate set negative with its column sum kept at zero
    (``not_generator_sign``: n = 2 the rate ``0 → 1`` = −1/4; n = 3 the rate ``1 → 2`` =
    ``−(1 + y²)/2``)."""
    Q = tm.example_generator(n)
    if kind == "irreducible":
        return Q
    if kind == "reducible":
        return sp.diag(Q, Q.subs(tm.y, -tm.y))
    if kind == "not_generator_mass":
        return Q - sp.nsimplify(defect) * sp.eye(n)
    i, j = (1, 0) if n == 2 else (2, 1)
    rate = sp.Rational(-1, 4) if n == 2 else -(1 + tm.y**2) / 2
    Q = Q.copy()
    d = rate - Q[i, j]
    Q[i, j] += d
    Q[j, j] -= d
    return Q


def chain_part(inst: CoupledChain) -> Diagnostic:
    """``generator_is_the_chain``: the numerical ``Q(y)`` under test equals the symbolic chain the
    hypotheses were decided on, on the grid, to ``manifold_tol``·max(1, max|Q|)."""
    Q, ys = inst.symbolic
    f = sp.lambdify(ys, Q, "numpy")
    dev = max(
        float(np.abs(np.array(f(float(y)), dtype=float) - Qn).max())
        for y, Qn in zip(inst.ys, inst.Qs, strict=True)
    )
    scale = max(1.0, max(float(np.abs(Qn).max()) for Qn in inst.Qs))
    return at_most(
        dev / scale,
        inst.p["manifold_tol"],
        "max over the grid of |Q_numerics(y) − Q_symbolic(y)| / max(1, max|Q|) ≤ manifold_tol",
    )


def closed_class_count(adjacency: np.ndarray) -> int:
    """The number of closed communicating classes of the jump graph ``j → i`` when
    ``adjacency[i, j]`` (i ≠ j), by transitive closure."""
    n = adjacency.shape[0]
    reach = adjacency.astype(bool) | np.eye(n, dtype=bool)  # reach[i, j]: j reaches i
    for k in range(n):
        reach = reach | (reach[:, [k]] & reach[[k], :])
    # a class is closed when every state it reaches reaches back
    closed = {
        frozenset(np.flatnonzero(reach[:, j] & reach[j, :]))
        for j in range(n)
        if all(reach[j, i] for i in np.flatnonzero(reach[:, j]))
    }
    return len(closed)


def symbolic_hypotheses(Q: sp.Matrix, ys: sp.Symbol, grid: np.ndarray) -> dict:
    """``generator_on_grid`` and ``one_closed_class_on_grid`` decided on a symbolic ``Q(y)``
    (never on the numerical generator under test): the column sums simplified exactly, the
    off-diagonal rates and the jump graph evaluated on the grid."""
    n = Q.shape[0]
    sums = [sp.simplify(sum(Q[:, j])) for j in range(n)]
    f = sp.lambdify(ys, Q, "numpy")
    vals = [np.array(f(float(y)), dtype=float) for y in grid]
    off = ~np.eye(n, dtype=bool)
    neg = max(float(np.maximum(0.0, -V[off]).max()) for V in vals)
    fsum = sp.lambdify(ys, sp.Matrix([sums]), "numpy")
    defect = max(float(np.abs(np.array(fsum(float(y)), dtype=float)).max()) for y in grid)
    exact_zero = all(sm == 0 for sm in sums)
    classes = [closed_class_count((V > 0) & off) for V in vals]
    return {
        "generator_on_grid": Diagnostic(
            neg == 0.0 and exact_zero,
            {
                "max_negative_rate": neg,
                "max_column_sum_defect": defect,
                "column_sums_exactly_zero": exact_zero,
            },
            "symbolic Q(y): every column sum simplifies to 0 and no off-diagonal rate is negative "
            "on the grid",
        ),
        "one_closed_class_on_grid": Diagnostic(
            min(classes) == max(classes) == 1,
            [min(classes), max(classes)],
            "[min, max] number of closed classes of the symbolic Q(y)'s jump graph over the grid; "
            "[1, 1] required",
        ),
    }


def reduced_solution_inside_grid(inst: CoupledChain) -> Diagnostic:
    """Hypothesis ``reduced_solution_inside_grid``: the reduced solution, ``y' = g(p_st(y), y, t)``
    from ``y0``, exists on ``[0, t1]`` and stays in the checked grid ``[y_min, y_max]``.

    Tikhonov's statement is about a reduced solution on the interval; a slow field that drives
    ``y`` off the grid, or to infinity in finite time (``y' ≈ y²``), is outside it, whatever the
    tracking runs then do. Decided from the inputs alone (``inst.reduced_inputs``: a user
    family's SymPy ``Q(y)`` and slow field, or the built-in chain's from
    :mod:`verify.reference.chains`, lambdified), never from theory or the code under test:
    ``p_st(y)`` solves ``Q(y) p = 0``, ``1ᵀp = 1`` (the last row of ``Q`` replaced by ones),
    integrated by LSODA at rtol 1e-9 with the grid's ends as terminal events. Not evaluated
    (holds, value ``None``) where ``Q(y0)`` has no unique stationary distribution: another
    hypothesis is violated there and says why."""
    from scipy.integrate import solve_ivp  # deferred: only the checks that integrate need it

    p = inst.p
    if inst.reduced_inputs is None:
        return Diagnostic(True, None, "not evaluated: a negative control's chain")
    Q, slow, ys, xs, ts = inst.reduced_inputs
    n = Q.shape[0]
    Qf, gf = sp.lambdify(ys, Q, "numpy"), sp.lambdify((ys, xs, ts), slow, "numpy")
    e_last = np.eye(n)[-1]

    def p_st(y: float) -> np.ndarray:
        """Q(y) p = 0 with 1ᵀp = 1; NaN where that has no unique solution."""
        B = np.array(Qf(y), dtype=float)
        B[-1, :] = 1.0
        try:
            return np.linalg.solve(B, e_last)
        except np.linalg.LinAlgError:
            return np.full(n, np.nan)

    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(p_st(p["y0"]))):
            return Diagnostic(
                True, None, "not evaluated: Q(y0) has no unique stationary distribution"
            )
    lo, hi = p["y_min"], p["y_max"]

    def field(t, y):
        # a blow-up leaves the grid first (terminal events); a NaN stops the integration
        with np.errstate(all="ignore"):
            return [float(gf(y[0], tuple(p_st(y[0])), t))]

    def below(t, y):
        return y[0] - lo

    def above(t, y):
        return y[0] - hi

    below.terminal = above.terminal = True  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):
        sol = solve_ivp(
            field,
            (0.0, p["t1"]),
            [p["y0"]],
            method="LSODA",
            rtol=1e-9,
            atol=1e-12,
            events=(below, above),
        )
    path = sol.y[0]
    span = [float(np.min(path)), float(np.max(path))]
    slack = 1e-9 * max(1.0, abs(lo), abs(hi))
    reached = sol.status == 0 and bool(np.all(np.isfinite(path)))
    inside = reached and lo - slack <= span[0] and span[1] <= hi + slack
    value = {"y_range": span, "t_end": float(sol.t[-1]), "t1": p["t1"]}
    if not inside:
        value["why"] = sol.message if sol.status < 0 else "left the grid"
    return Diagnostic(
        inside,
        value,
        f"the reduced solution y' = g(p_st(y), y, t) from y0 = {p['y0']:g} reaches t1 = "
        f"{p['t1']:g} inside [y_min, y_max] = [{lo:g}, {hi:g}] (from the SymPy Q(y) and slow "
        "field, LSODA)",
    )


class Instance(CoupledChain):
    """The example chain (or a control) with the slow field ``−y + cᵀx + sin t``; for a reducible
    chain the two initial conditions put all mass in one copy vs in the other; the theory's slow
    manifold of the example chain."""

    def __init__(self, p: dict, seed: int):
        self.symbolic = (symbolic_chain(p["chain"], p["n_states"], p["defect"]), tm.y)
        gen, gen_dy, c = mk.example_chain(p["n_states"], p["chain"], p["defect"])
        n, m = p["n_states"], c.size
        x0, x0b = initial_conditions(seed, m)
        if m == 2 * n:  # two blocks of states: all mass in one vs all in the other
            x0 = np.r_[x0[:n] / x0[:n].sum(), np.zeros(n)]
            x0b = np.r_[np.zeros(n), x0b[n:] / x0b[n:].sum()]
        self.setup(p, seed, (gen, gen_dy, mk.linear_slow_field(c)), x0, x0b)
        self.sm = tm.slow_manifold(n)
        if p["chain"] == "irreducible":  # a control violates another hypothesis: not evaluated
            ys, xs, ts = sp.Symbol("y", real=True), sp.symbols(f"x0:{n}"), sp.Symbol("t")
            slow = reference_chains.example_slow_field(xs, ys, ts)
            self.reduced_inputs = (reference_chains.example_chain(n, ys), slow, ys, xs, ts)


class FamilyInstance(CoupledChain):
    """A user :class:`~verify.systems.GeneratorFamily`: its ``Q(y)``, ``∂Q/∂y`` and slow field
    lambdified from its SymPy expressions, and ``p_st``, ``h_1`` derived by theory for them."""

    def __init__(self, p: dict, seed: int, system: GeneratorFamily):
        args = (system.Q, system.slow, system.y, system.x, system.t)
        self.symbolic = (system.Q, system.y)
        self.reduced_inputs = (system.Q, system.slow, system.y, tuple(system.x), system.t)
        fn = tm.family_functions(*args)
        chain = (fn.generator, fn.generator_dy, mk.SlowField(fn.slow, fn.slow_gradient))
        self.setup(p, seed, chain, *initial_conditions(seed, system.n))
        try:
            self.sm = tm.family_slow_manifold(*args)
        except (ValueError, ArithmeticError) as exc:  # several closed classes, 1ᵀQ ≠ 0, …
            self.sm = None
            self.why_not = f"theory could not derive p_st and h_1 for this Q: {exc}"
            self.notes = (self.why_not,)
            return
        self.notes = (family_note(self.sm, p),)


def family_note(sm: tm.SlowManifold, p: dict) -> str:
    """What was derived how for a user family."""
    atoms = ", ".join(map(str, sm.atoms)) or "none"
    return (
        "your system: p_st(y) (Markov chain tree theorem) and h_1(y, t) (Q h_1 = ∂_y p_st · "
        "g(p_st, y, t), 1ᵀh_1 = 0) derived exactly for your Q and slow field g, in the field "
        f"of rational functions over ℚ of y and the atoms [{atoms}] (free generators, floats "
        "read as decimals): their residuals are exact zeros. Numerical: the null vectors of "
        f"Q(y) (SVD; against p_st ≤ {p['manifold_tol']:g}), the group-inverse h_1 (≤ "
        f"{H1_TOL_FACTOR * p['manifold_tol']:g}) and the coupled system with your g "
        f"({p['method']}, rtol {p['rtol']:g}, atol {p['atol']:g})"
    )


def spectrum_on_grid(inst: CoupledChain) -> dict:
    """Zero-eigenvalue counts and the spectral gap on the grid (eigenvalues as sorted multisets)."""
    lams = [mk.sorted_eigenvalues(Q) for Q in inst.Qs]
    n_zero = [int(np.sum(np.abs(lam) <= inst.zero_tol)) for lam in lams]
    rest = [float(lam[1:].real.max()) if lam.size > 1 else -np.inf for lam in lams]
    return {
        "max_zero_eigenvalues": int(max(n_zero)),
        "min_zero_eigenvalues": int(min(n_zero)),
        "max_re_nonleading_eigenvalue": max(rest),
        "min_spectral_gap": -max(rest),
    }


def _not_computed(reason: str) -> Diagnostic:
    """A part that cannot be measured on this instance: it does not hold, and says why."""
    return Diagnostic(False, None, f"not computed: {reason}")


# --------------------------------------------------------------------------- 1. the spectrum


def null_vectors(inst: CoupledChain) -> list | None:
    """The normalised null vector of every ``Q(y)`` on the grid, or ``None`` unless the numerical
    null space is one-dimensional on the whole grid and the null vector could be normalised (the
    hypotheses, decided on the symbolic chain, already say it exists: the parts that need it then
    fail)."""
    try:
        null = [mk.unique_null_vector(Q) for Q in inst.Qs]
    except ValueError:  # the code under test finds no distribution on a generator of the chain
        return None
    return null if all(q is not None for q in null) else None


def spectrum_parts(inst: CoupledChain, null: list | None) -> tuple[dict, dict]:
    """Part 1: one zero eigenvalue, the others attracting at a gap ≥ ``gap_min``, and the null
    vector a probability vector; with the spectrum's figures and the irreducibility found."""
    spec = spectrum_on_grid(inst)
    dims = [mk.null_dimension(Q) for Q in inst.Qs]
    figures = {
        **spec,
        "irreducible_on_grid": bool(all(mk.is_irreducible(Q) for Q in inst.Qs)),
        "max_closed_classes": int(max(len(mk.closed_classes(Q)) for Q in inst.Qs)),
        "null_dimension_range": [min(dims), max(dims)],
    }
    parts = {
        "one_zero_eigenvalue": Diagnostic(
            spec["max_zero_eigenvalues"] == spec["min_zero_eigenvalues"] == 1,
            [spec["min_zero_eigenvalues"], spec["max_zero_eigenvalues"]],
            f"[min, max] number of eigenvalues with |λ| ≤ {inst.zero_tol:.3g}; [1, 1] required",
        ),
        "attracting_at_spectral_gap": Diagnostic(
            spec["max_re_nonleading_eigenvalue"] < 0
            and spec["min_spectral_gap"] >= inst.p["gap_min"],
            spec["min_spectral_gap"],
            f"min gap > 0 and ≥ gap_min = {inst.p['gap_min']}",
        ),
    }
    if null is None:
        parts["equilibrium_is_probability"] = _not_computed(
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


# --------------------------------------------------------------------------- 2. the manifold


def same_generator(inst: CoupledChain) -> Diagnostic:
    """Part 2a: the numerics' ``Q(y)`` against the one the theory derived from, on the grid (rates
    of size ~1: scale 1); a chain of another size is not the theory chain (``inf``)."""
    if inst.sm is None:
        return _not_computed(inst.why_not)
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
        parts["manifold_is_p_st"] = _not_computed(inst.why_not)
        parts["first_order_correction"] = _not_computed(inst.why_not)
        return parts, figures
    p_th = np.array(sm.p_numeric(inst.ys)).T
    manifold = symbolic_agrees(
        p_th, np.array(null), tol=tol, scale=1.0, what="p_st(y) on the grid (probabilities)"
    )
    figures["manifold_max_abs_error"] = manifold.value
    parts["manifold_is_p_st"] = manifold
    h_num = np.array(
        [
            mk.first_order_correction(
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


# --------------------------------------------------------------------------- 3. the trajectories


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


def tracking_runs(inst: CoupledChain, first) -> tuple[list, list]:
    """The runs from ``x0`` at every ε of the sweep (the run ``first`` at ``eps_min`` reused),
    and the same by :data:`OTHER_METHOD` (the measured accuracy)."""
    eps_lo = float(inst.eps[0])
    other = OTHER_METHOD[inst.p["method"]]
    runs = [first if e == eps_lo else inst.run(float(e), inst.x0) for e in inst.eps]
    return runs, [inst.run(float(e), inst.x0, method=other) for e in inst.eps]


def tracking_errors(inst: CoupledChain, run, eps: float) -> tuple[float, float]:
    """Max over ``[t0, t1]`` of ``|x − p_st(y)|`` and of ``|x − p_st(y) − ε h_1(y, t)|``."""
    yy, ts, xx = run.y[1:], run.t[1:], run.x[1:]
    P_ = np.array(inst.sm.p_numeric(yy)).T
    H_ = np.array(inst.sm.h1_numeric(yy, ts)).T
    return float(np.abs(xx - P_).max()), float(np.abs(xx - P_ - eps * H_).max())


def accuracy(run, other) -> float:
    """The achieved accuracy of the run, measured: ``max |x − x_other|`` over ``[t0, t1]``
    against the run of :data:`OTHER_METHOD` at the same tolerances (at least
    :data:`ROUNDING_FLOOR`). Not read from the requested ``rtol``: SciPy's LSODA raises an
    ``rtol`` below its limit silently and levels off near 1e-12."""
    return max(float(np.abs(run.x[1:] - other.x[1:]).max()), ROUNDING_FLOOR)


def order_rate(eps, err, floor, k: int, tol: float) -> dict:
    """The rate of one tracking error by :func:`verify.measure.asymptotic_slope` over the ε sweep
    (coarse to fine, down to the measured accuracy floor), with ``at_floor``: every error within
    :data:`RATE_RESOLUTION` of its floor, i.e. ``error ≤ C·ε^k`` holds exactly
    (a degenerate instance, e.g. a ``p_st`` that does not depend on y: its errors are round-off)."""
    order = np.argsort(eps)[::-1]
    e_of = dict(zip(np.asarray(eps, float)[order], np.asarray(err, float)[order]))
    f_of = dict(zip(np.asarray(eps, float)[order], np.asarray(floor, float)[order]))
    res = asymptotic_slope(
        list(e_of),
        e_of.__getitem__,
        float(k),
        tol,
        window=min(RATE_WINDOW, len(e_of)),
        spread=tol,
        floor=f_of.__getitem__,
        resolution=RATE_RESOLUTION,
    )
    res["at_floor"] = at_accuracy_floor(err, floor, RATE_RESOLUTION)
    return res


def p_st_constant(inst: CoupledChain) -> bool:
    """Whether theory's exact ``∂_y p_st`` is identically 0 (then ``h_1 ≡ 0`` and the tracking
    errors vanish but for the initial layer: the rates are not sharp, only the bounds are claimed).

    Decided exactly, cheapest proof first: an entry that is 0 as an expression is 0; an entry
    with a value ``≠ 0`` at a point of the checked grid (50 significant digits) is not
    identically 0; only an entry that is 0 at every such point goes to ``sympy.simplify``, which
    must prove it 0 (a user family's ``∂_y p_st`` can take ``simplify`` minutes to expand)."""
    lo, hi = inst.p["y_min"], inst.p["y_max"]
    points = [sp.Float(lo + f * (hi - lo), 50) for f in (0.2113, 0.5, 0.7887)]
    return all(identically_zero(e, points) for e in inst.sm.dp)


def identically_zero(e: sp.Expr, points: list) -> bool:
    """Whether ``e`` is identically 0: by ``e == 0``, else not if it is ``≠ 0`` (beyond 1e-30 at 50
    digits) at one of ``points`` (values of its free symbols), else by ``sympy.simplify``."""
    if e == 0:
        return True
    symbols = sorted(e.free_symbols, key=str)
    for v in points:
        value = complex(e.evalf(50, subs={s: v for s in symbols}))
        if abs(value) > 1e-30:
            return False
    return sp.simplify(e) == 0


def rate_part(res: dict, k: int, what: str, degenerate: bool) -> Diagnostic:
    """An order's tracking rate: not measured to be another order (``fails`` of the rule), or,
    where ``p_st`` does not depend on y (``degenerate``, exact), every error at the accuracy
    floor (the bound ``error ≤ C·ε^k`` holds exactly)."""
    lo, hi = res["band"]
    exact = degenerate and res["at_floor"]["holds"]
    return Diagnostic(
        exact or res["verdict"] != "fails",
        {
            "verdict": "bound holds exactly (errors at the accuracy floor)"
            if exact
            else res["verdict"],
            "slope": res["slope"],
            "ci95": res["ci95"],
            "window": res["window"],
            "max_error_over_floor": res["at_floor"]["max_ratio"],
        },
        f"{what}: the rate rule's 95% interval is not disjoint from [{lo:g}, {hi:g}] with "
        f"slopes moving away from {k}, or, p_st independent of y (exact), every error ≤ "
        f"{RATE_RESOLUTION:g} × its measured accuracy (error ≤ C·ε^k exactly)",
    )


def tracking_parts(inst: CoupledChain, runs: list, others: list, gap: float) -> tuple[dict, dict]:
    """Part 3 against the theory: both tracking errors' rates over the ε sweep by the rate rule
    above the measured accuracy floor, and the correction lowering the error at every ε where
    the leading error is resolved. Also returns the limit ``tracking_rates_resolved``."""
    p = inst.p
    errors = [tracking_errors(inst, run, e) for e, run in zip(inst.eps, runs)]
    floor = [accuracy(a, b) for a, b in zip(runs, others)]
    e0, e1 = [a for a, _ in errors], [b for _, b in errors]
    r0 = order_rate(inst.eps, e0, floor, 1, p["slope_tol0"])
    r1 = order_rate(inst.eps, e1, floor, 2, p["slope_tol1"])
    degenerate = p_st_constant(inst)
    keys = ("slope", "ci95", "window", "verdict")
    figures = {
        "eps": inst.eps.tolist(),
        "err_order0": e0,
        "err_order1": e1,
        "accuracy_floor": floor,
        "nfev": [run.nfev for run in runs],
        "slope_order0": {k: r0[k] for k in keys},
        "slope_order1": {k: r1[k] for k in keys},
        "initial_layer_factor": float(np.exp(-gap * p["t0"] / inst.eps).max()),
    }
    resolved = [(a, b) for a, b, f in zip(e0, e1, floor) if a >= RATE_RESOLUTION * f]
    worst = float(max((ratio(b, a) for a, b in resolved), default=0.0))
    parts = {
        "tracking_order_eps": rate_part(r0, 1, "order-0 error", degenerate),
        "tracking_order_eps2": rate_part(r1, 2, "order-1 error", degenerate),
        "correction_reduces_error": Diagnostic(
            worst < 1.0,
            worst,
            "max err_order1/err_order0 < 1 over the ε whose order-0 error is resolved (≥ "
            f"{RATE_RESOLUTION:g} × the measured accuracy; none: the bound holds exactly)",
        ),
    }
    limit = Diagnostic(
        all(
            (degenerate and r["at_floor"]["holds"]) or r["verdict"] != "unresolved"
            for r in (r0, r1)
        ),
        {
            name: {
                "verdict": r["verdict"],
                "p_st_independent_of_y": degenerate,
                "floor_reached": r["floor_reached"],
                "why": r["why"],
                "resolved_points": len(r["h"]),
                "finest_resolved_eps": r["h"][-1] if r["h"] else None,
                "accuracy_floor_at_eps_min": floor[int(np.argmin(inst.eps))],
            }
            for name, r in (("order0", r0), ("order1", r1))
        },
        "each tracking error's rate is decided above the measured accuracy floor (a window of "
        f"resolved points, error ≥ {RATE_RESOLUTION:g} × max |x − x_other|), or, p_st "
        f"independent of y, every error sits at that floor; measured floor {min(floor):.2g} … {max(floor):.2g} "
        f"(at eps_min: {floor[int(np.argmin(inst.eps))]:.2g})",
    )
    return parts, figures, limit


def inside_grid_part(inst: CoupledChain, runs: list) -> tuple[dict, dict]:
    """Part 3: the y visited by every run lies in the checked grid ``[y_min, y_max]``."""
    p = inst.p
    y_range = [float(min(r.y.min() for r in runs)), float(max(r.y.max() for r in runs))]
    part = Diagnostic(
        p["y_min"] <= y_range[0] and y_range[1] <= p["y_max"],
        y_range,
        f"[min y, max y] visited ⊂ [{p['y_min']}, {p['y_max']}]",
    )
    return {"trajectory_inside_grid": part}, {"y_range_visited": y_range}


def drawn_trajectory(inst: CoupledChain) -> dict:
    """The figure's series: a run at ``TRAJECTORY_EPS`` over ``[0, t1]`` from ``x0`` drawn from
    the root seed (off the manifold), and ``p_st(y)`` on a grid around the y it visits."""
    p = inst.p
    x0 = np.random.default_rng(np.random.SeedSequence(inst.seed)).dirichlet(np.ones(inst.x0.size))
    t = np.linspace(0.0, p["t1"], TRAJECTORY_POINTS)
    run = inst.run(TRAJECTORY_EPS, x0, t_eval=t, method=TRAJECTORY_METHOD)
    ys = np.linspace(
        min(run.y.min(), p["y0"]) - MANIFOLD_MARGIN,
        run.y.max() + MANIFOLD_MARGIN,
        MANIFOLD_POINTS,
    )
    return {
        "trajectory_eps": TRAJECTORY_EPS,
        "trajectory_y": run.y.tolist(),
        "trajectory_x": run.x.tolist(),
        "manifold_y": ys.tolist(),
        "manifold_p_st": np.array(inst.sm.p_numeric(ys)).T.tolist(),
    }


# --------------------------------------------------------------------------- 4. attention link


def attention_link_row(kind: str, P: int) -> dict:
    """The within-block frozen kernel of size ``P`` as the generator ``(K − I)ᵀ``: numerically
    and exactly, its ``p_st``, conserved quantities, classes and gap."""
    K = frozen_kernel(kind, P, P)  # one block: T = P
    G = (K - np.eye(P)).T  # column convention
    try:
        p_num = mk.stationary_distribution(G)
    except ValueError:  # the code under test finds no distribution: every comparison fails
        p_num = np.full(P, np.inf)
    exact = tm.within_block_stationary(kind, P)
    p_ex = np.array([float(x) for x in exact["p_st"]])
    K_ex = np.array(exact["kernel"].tolist(), dtype=float)
    uniform, first = np.full(P, 1.0 / P), np.eye(P)[0]
    mean_defect = float(np.abs(uniform @ (K - np.eye(P))).max())  # d/dτ of the block mean
    first_defect = float(np.abs(first @ (K - np.eye(P))).max())  # d/dτ of the first token
    return {
        "P": P,
        "kernel_vs_exact": float(np.abs(K - K_ex).max()),
        "p_numeric_vs_exact": float(np.abs(p_num - p_ex).max()),
        "p_vs_uniform": float(np.abs(p_num - uniform).max()),
        "p_vs_first_token": float(np.abs(p_num - first).max()),
        "block_mean_conservation_defect": mean_defect,
        "first_token_conservation_defect": first_defect,
        "irreducible_numeric": mk.is_irreducible(G),
        "irreducible_exact": bool(exact["irreducible"]),
        "closed_classes": mk.closed_classes(G),
        "null_dim_exact": int(exact["null_dim"]),
        "spectral_gap": mk.spectral_gap(G),
    }


def attention_link(P_max: int) -> dict:
    """Stationary distributions of the within-block frozen kernels for ``P = 2..P_max``,
    numerically and exactly, with a summary over the block sizes."""
    out = {
        kind: [attention_link_row(kind, P) for P in range(2, P_max + 1)]
        for kind in ("block_bidirectional", "block_causal")
    }
    bi, ca = out["block_bidirectional"], out["block_causal"]
    out["summary"] = {
        "max_p_numeric_vs_exact": max(r["p_numeric_vs_exact"] for r in bi + ca),
        "max_kernel_vs_exact": max(r["kernel_vs_exact"] for r in bi + ca),
        "bidirectional_max_p_vs_uniform": max(r["p_vs_uniform"] for r in bi),
        "bidirectional_max_block_mean_defect": max(r["block_mean_conservation_defect"] for r in bi),
        "causal_max_p_vs_first_token": max(r["p_vs_first_token"] for r in ca),
        "causal_max_first_token_defect": max(r["first_token_conservation_defect"] for r in ca),
        "causal_min_block_mean_defect": min(r["block_mean_conservation_defect"] for r in ca),
        "bidirectional_irreducible": all(
            r["irreducible_numeric"] and r["irreducible_exact"] for r in bi
        ),
        "causal_irreducible": any(r["irreducible_numeric"] or r["irreducible_exact"] for r in ca),
        "causal_single_closed_class": all(
            r["closed_classes"] == [[0]] and r["null_dim_exact"] == 1 for r in ca
        ),
    }
    return out


def attention_link_parts(P_max: int, tol: float) -> tuple[dict, dict]:
    """Part 4: numerics and theory build the same kernels and ``p_st``; the bidirectional chain
    has a uniform ``p_st`` and conserves the block mean; the causal one has ``p_st = e_1``."""
    link = attention_link(P_max)
    s = link["summary"]
    gap_off = float(max(abs(r["spectral_gap"] - CAUSAL_GAP) for r in link["block_causal"]))
    parts = {
        "attention_link_matches_theory": Diagnostic(
            s["max_kernel_vs_exact"] == 0.0 and s["max_p_numeric_vs_exact"] <= tol,
            {"kernel": s["max_kernel_vs_exact"], "p_st": s["max_p_numeric_vs_exact"]},
            "max |K_numeric − K_exact| = 0 and max |p numeric − exact| ≤ manifold_tol",
        ),
        "attention_link_bidirectional_uniform": Diagnostic(
            s["bidirectional_irreducible"]
            and s["bidirectional_max_p_vs_uniform"] <= tol
            and s["bidirectional_max_block_mean_defect"] <= tol,
            {
                "p_vs_uniform": s["bidirectional_max_p_vs_uniform"],
                "block_mean_defect": s["bidirectional_max_block_mean_defect"],
                "irreducible": s["bidirectional_irreducible"],
            },
            "irreducible, max |p − 1/P| ≤ manifold_tol, max |1ᵀ(K − I)/P| ≤ manifold_tol",
        ),
        "attention_link_causal_first_token": Diagnostic(
            (not s["causal_irreducible"])
            and s["causal_single_closed_class"]
            and s["causal_max_p_vs_first_token"] <= tol
            and s["causal_max_first_token_defect"] == 0.0
            and s["causal_min_block_mean_defect"] > tol
            and gap_off <= CAUSAL_GAP_TOL,
            {
                "irreducible": s["causal_irreducible"],
                "single_closed_class": s["causal_single_closed_class"],
                "p_vs_first_token": s["causal_max_p_vs_first_token"],
                "first_token_defect": s["causal_max_first_token_defect"],
                "min_block_mean_defect": s["causal_min_block_mean_defect"],
                "max_gap_minus_half": gap_off,
            },
            "not irreducible, closed classes = [[0]], max |p − e_1| ≤ manifold_tol, "
            "e_1ᵀ(K − I) = 0, min block-mean defect > manifold_tol, |gap − 1/2| ≤ 1e-12",
        ),
    }
    return parts, {"attention_link": link}


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
            3, "states of the example chain (closed-form p_st)", choices=tuple(tm.EXAMPLE_CHAINS)
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
        "gap_min": Param(1.0, "required lower bound on the spectral gap on the grid", low=0.0),
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
        "spectral gap on the grid",
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
        "attracting_at_spectral_gap": "all other eigenvalues have Re λ < 0, and the smallest gap ≥ gap_min",
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
        gap = spectrum_on_grid(inst)["min_spectral_gap"]
        layer = np.exp(-gap * inst.p["t0"] / inst.eps) if gap > 0 else np.ones_like(inst.eps)
        worst = float(np.max(layer / (LAYER_FACTOR * inst.eps**2)))
        return {
            **symbolic_hypotheses(*inst.symbolic, inst.ys),
            "initial_layer_negligible": at_most(worst, 1.0, "max_ε exp(−gap·t0/ε) / (1e-3·ε²) ≤ 1"),
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
            sections.append(({k: _not_computed(why) for k in skipped}, {}))
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
            sections.append(({k: _not_computed(inst.why_not) for k in TRACKING_PARTS}, {}))
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
            "gap_min": p["gap_min"],
        }
        return Conclusion(
            parts, figures, tolerance, notes, series, limits={"tracking_rates_resolved": limit}
        )


CLAIM = F2()
