"""F2's instances (:mod:`verify.checks.f2`): the coupled chain ``ε dx/dt = Q(y) x`` with its slow
variable, built from a named chain (theory's example generator, :func:`symbolic_chain`) or from your
own generator family, and the hypotheses decided on the symbolic generator.

A module of the claim unit :mod:`verify.checks.f2`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f2.claim`.
"""

from __future__ import annotations

import time

import numpy as np
import sympy as sp

from fastslow.numerics.toy import markov
from fastslow.theory import markov as theory_markov

from ...budgets import time_budget, time_hint
from ...reference import chains as reference_chains
from ...systems import GeneratorFamily
from ...verdict import Diagnostic, at_most, not_evaluated

H1_TOL_FACTOR = 1e3
"""``h_1`` (a group inverse applied twice) agrees to ``H1_TOL_FACTOR·manifold_tol``."""


NOT_THEORY_CHAIN = (
    "Q(y) is not the theory chain or has no unique null vector; tracking is undefined"
)
"""Why the parts against the theory's manifold are not computed for another chain."""


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

    sm: theory_markov.SlowManifold | None
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

    def run(self, eps: float, x0, t_eval=None, method=None) -> markov.CoupledRun:
        """The coupled system from ``(x0, y0)``, by default at the times ``0, [t0, t1]`` with the
        instance's integrator (generator checks off: the controls are not generators)."""
        p = self.p
        if t_eval is None:
            t_eval = np.concatenate([[0.0], np.linspace(p["t0"], p["t1"], p["n_t"])])
        try:
            return markov.integrate_coupled(
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
        except markov.DeadlineExceeded as exc:
            raise markov.DeadlineExceeded(
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
    Q = theory_markov.example_generator(n)
    if kind == "irreducible":
        return Q
    if kind == "reducible":
        return sp.diag(Q, Q.subs(theory_markov.y, -theory_markov.y))
    if kind == "not_generator_mass":
        return Q - sp.nsimplify(defect) * sp.eye(n)
    i, j = (1, 0) if n == 2 else (2, 1)
    rate = sp.Rational(-1, 4) if n == 2 else -(1 + theory_markov.y**2) / 2
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
    (:func:`~verify.verdict.not_evaluated`: holds, shown as not evaluated) where ``Q(y0)`` has no
    unique stationary distribution (another hypothesis is violated there and says why) and for a
    negative control's chain."""
    from scipy.integrate import solve_ivp  # deferred: only the checks that integrate need it

    p = inst.p
    if inst.reduced_inputs is None:
        return not_evaluated("a negative control's chain")
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
            return not_evaluated("Q(y0) has no unique stationary distribution")
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
        self.symbolic = (symbolic_chain(p["chain"], p["n_states"], p["defect"]), theory_markov.y)
        gen, gen_dy, c = markov.example_chain(p["n_states"], p["chain"], p["defect"])
        n, m = p["n_states"], c.size
        x0, x0b = initial_conditions(seed, m)
        if m == 2 * n:  # two blocks of states: all mass in one vs all in the other
            x0 = np.r_[x0[:n] / x0[:n].sum(), np.zeros(n)]
            x0b = np.r_[np.zeros(n), x0b[n:] / x0b[n:].sum()]
        self.setup(p, seed, (gen, gen_dy, markov.linear_slow_field(c)), x0, x0b)
        self.sm = theory_markov.slow_manifold(n)
        if p["chain"] == "irreducible":  # a control violates another hypothesis: not evaluated
            ys, xs, ts = sp.Symbol("y", real=True), sp.symbols(f"x0:{n}"), sp.Symbol("t")
            slow = reference_chains.example_slow_field(xs, ys, ts)
            self.reduced_inputs = (reference_chains.example_chain(n, ys), slow, ys, xs, ts)


def family_note(sm: theory_markov.SlowManifold, p: dict) -> str:
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


class FamilyInstance(CoupledChain):
    """A user :class:`~verify.systems.GeneratorFamily`: its ``Q(y)``, ``∂Q/∂y`` and slow field
    lambdified from its SymPy expressions, and ``p_st``, ``h_1`` derived by theory for them."""

    def __init__(self, p: dict, seed: int, system: GeneratorFamily):
        args = (system.Q, system.slow, system.y, system.x, system.t)
        self.symbolic = (system.Q, system.y)
        self.reduced_inputs = (system.Q, system.slow, system.y, tuple(system.x), system.t)
        fn = theory_markov.family_functions(*args)
        chain = (fn.generator, fn.generator_dy, markov.SlowField(fn.slow, fn.slow_gradient))
        self.setup(p, seed, chain, *initial_conditions(seed, system.n))
        try:
            self.sm = theory_markov.family_slow_manifold(*args)
        except (ValueError, ArithmeticError) as exc:  # several closed classes, 1ᵀQ ≠ 0, …
            self.sm = None
            self.why_not = f"theory could not derive p_st and h_1 for this Q: {exc}"
            self.notes = (self.why_not,)
            return
        self.notes = (family_note(self.sm, p),)
