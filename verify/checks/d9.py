"""D9 — no shared structure: the gate is invisible in the risk.

Statement: if blocks are independent, no cross-block channel lowers the Bayes risk: the
risk-minimising slow channel is zero whatever the gate, so ``min_slow R(g)`` is constant in ``g``,
and ``∂R/∂g = 0`` at ``g = 0``; gradient training from the zero-initialised gate keeps it closed
(``|g|`` within sampling noise, shrinking like ``1/√n``) and the coupled and frozen ablations are
within run-to-run noise. With shared structure (AR(1) block means, correlation ``ρ > 0``) the risk
falls as the gate opens and the learned gate grows with ``ρ``, always below the D7 margin.

Toy (:mod:`numerics.toy.gated_predictor`): ``ŷ_{b,k} = f_{b,k} + s_b`` with the fixed within-block
Bayes estimate ``f`` and the slow state ``s_b = a·s_{b−1} + g·(c·s_{b−1} + w·ȳ_{b−1})`` (``s_0 = 0``);
squared-error risk, trained by gradient descent (Armijo backtracking) from ``g = 0``, ``w = w0``
for ``steps`` steps. The risk is an exact quadratic form in the ``N×N`` moments of the data, so
population quantities are exact and training costs nothing per sequence.

Hypothesis, decided from the data model's definition (its input), never from the moment formulas
under test: ``blocks_independent``: the latent block means are a stationary Gaussian AR(1) with
correlation ``ρ`` and variance ``τ²`` and the within-block noise is independent across blocks, so
``Cov(μ_b, μ_c) = τ² ρ^{|b−c|}`` and the blocks are independent exactly when every cross-block
covariance ``τ²|ρ|^{|b−c|}``, ``b ≠ c``, is 0. The moments ``C = E[ȳ_b ȳ_c]`` and
``D = E[R_b ȳ_c]`` of :func:`numerics.toy.gated_predictor.population_moments` are what the
conclusion tests (a wrong moment formula moves the exact population gradient off 0).

Checked (each item is a named part of the verdict):

* gradient at ``g = 0``: the exact population gradients in g and w are 0; the z-score of the mean
  of per-sequence gate gradients over ``n_grad`` sequences below the two-sided normal critical
  value at ``alpha/3`` (2.94 at the default ``alpha = 0.01``);
* learned gate: ``seeds`` independent training sets of ``n_train`` sequences; the mean learned gate
  has a ``1 − alpha/3`` t-interval containing 0; its RMS over seeds against ``n`` in ``n_grid``
  has a fitted log–log slope whose ``1 − alpha/3`` interval contains −0.5 and lies below 0 (the
  slope's standard error from the sampling noise of the RMS, :func:`decay_part`);
* ``min_w R(g, w)`` over a grid of gates in the stable range: exact population spread
  (``≤ 1e-12``), and the empirical spread in units of the standard error of the risk estimate (< 1);
* coupled vs frozen ablation (slow weight trained vs fixed at 0), test risk on fresh data per seed:
  ``|mean gap| ≤`` the run-to-run standard deviation of the frozen model's test risk;
* margin: ``J = a``, ``G = c`` (1×1), ``m(J)`` from :func:`numerics.analysis.stability.stability_margin` and
  the critical gates from :func:`numerics.analysis.stability.critical_gate`, against the closed form
  ``(1 − |a|)/|c|``;
* shared structure, for ``ρ`` in ``rhos``: learned gate (mean over seeds) strictly increasing in
  ``ρ``, every learned gate below ``m(J)/‖G‖``, population risk at the learned parameters below the
  fast-only risk for every ``ρ > 0``.

Failure rate over seeds (``alpha``, default 0.01). Three parts are tests at a stated level
(:data:`CALIBRATED_TESTS`): the z-score, the interval of the mean gate and the interval of the decay
slope, each at ``alpha/3``, so a true claim fails on at most ``alpha`` of seeds (Bonferroni; the
slope's interval is asymptotic: delta method and a normal quantile). The other sampled parts are
not calibrated tests but their margins are wide: over seeds 0–29 at the defaults the empirical
``min_w R(g)`` spread is at most 0.024 standard errors (1 required), the ablation gap at most
0.009 run-to-run SDs (1), the mean gate rises by at least 0.048 between neighbouring ρ (its 95%
half-width at most 0.008), the learned gates stay below 0.37 of the margin and the risk change at
ρ > 0 is −0.0076 on every seed. The claim declares ``failure_rate = 0.01`` (the default
``alpha``; seed sweeps allow that many failures); the seeded test fixes seed 2 and allows no
failure on it: a failure there is a reportable result, not noise to retry. Measured with the
defaults on seeds 0–29: 29 hold, seed 29 fails ``gradient_consistent_with_zero`` (z = 3.05 against
2.94: expected 0.3 such seeds of 30, at least one with probability 0.26). Before this rule
(``|z| < 3`` and two 95% intervals, the slope's from its four residual degrees of freedom: up to
≈ 11% by the union bound) the same seeds gave 27 holds and 3 fails (seed 13: the gate interval
missed 0; 20: the slope interval [−0.498, −0.337] missed −0.5; 29: z = 3.05 and the gate
interval); at ``alpha = 0.05`` with the rule below, 27 and 3 again (13, 28, 29), as many as that
rate allows (1.5 expected). The paired coupled − frozen test-risk gap on independent blocks is resolvable
(≈ +2e-5 to +4e-5 per token: the O(1/n) cost of fitting two extra parameters) but ≈ 100× below
the run-to-run standard deviation, which is the comparison the claim makes ("within run-to-run
noise").

Negative control ``shared_structure`` (``rho = 0.6``, breaks ``blocks_independent``): ``∂R/∂g ≠ 0`` at ``g = 0`` (z ≫ 3), the gate opens
(interval excludes 0, no 1/√n decay) and the ablations separate.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from fastslow.numerics import lapack
from fastslow.numerics.analysis.stability import critical_gate, stability_margin
from fastslow.numerics.toy.gated_predictor import (
    GatedToy,
    closed_form_margin,
    fast_risk_standard_error,
    jacobians,
    min_slow_risk,
    per_sequence_gate_gradient,
    population_moments,
    risk,
    risk_gradient,
    sample,
    sampled_moments,
    stack_moments,
    train,
)

from ..claim import Claim, Conclusion, Control
from ..measure import mean_interval, ratio, slope_fit
from ..model_params import model_params
from ..params import Order, Param
from ..verdict import Diagnostic, at_most

MARGIN_TOL = 1e-9
"""The margin ``m(J)/‖G‖`` matches its closed form ``(1 − |a|)/|c|`` to this (absolute), and the
critical gate lies above it up to this."""

POPULATION_SPREAD_TOL = 1e-12
"""The exact population ``min_w R(g)`` is constant over the gate grid to this (absolute)."""

GRID_FRACTION = 0.9
GRID_LIMIT = 10.0
"""The gates of ``min_slow_risk_constant`` fill ``|g| ≤ 0.9·min(m(J)/‖G‖, 10)`` (stable)."""

SCIPY_REL = 1e-10
"""The claim's intervals and t statistic agree with SciPy's to this (both exact formulas; they
differ by rounding only)."""


EMPIRICAL_CURVES = 4
"""The empirical ``min_w R(g)`` curves are those of the first four training sets."""


CALIBRATED_TESTS = (
    "gradient_consistent_with_zero",
    "gate_ci_contains_zero",
    "gate_shrinks_like_inv_sqrt_n",
)
"""The parts that are tests at a stated level: on a true claim each fails by sampling alone with
probability ``alpha/3`` (Bonferroni), so together with probability at most ``alpha``."""


def per_test_level(p: dict) -> float:
    """The false-alarm rate of each calibrated test: ``alpha / 3`` (Bonferroni)."""
    return p["alpha"] / len(CALIBRATED_TESTS)


def normal_quantile(level: float) -> float:
    """The two-sided critical value of a standard normal at false-alarm rate ``level``."""
    return float(stats.norm.ppf(1 - level / 2))


def train_from(toy: GatedToy, moments: list, p: dict):
    """One model per moment set, trained from ``g = 0``, ``w = w0`` with the claim's step rule."""
    return train(toy, stack_moments(moments), w0=p["w0"], lr=p["lr"], steps=p["steps"])


# --------------------------------------------------------------------------- the instance


class Instance:
    """The toy, the data model's population moments at ``rho``, and one seed per measurement."""

    def __init__(self, p: dict, seed: int):
        self.p = p
        self.toy = GatedToy(P=p["P"], N=p["N"], tau=p["tau"], sigma=p["sigma"], a=p["a"], c=p["c"])
        self.rho = float(p["rho"])
        self.pop = population_moments(self.toy, self.rho)
        ss = np.random.SeedSequence(seed)
        self.s_grad, s_train, s_test, self.s_grid, self.s_sweep = ss.spawn(5)
        self.train_seeds = s_train.spawn(p["seeds"])
        self.test_seeds = s_test.spawn(p["seeds"])


# --------------------------------------------------------------------------- conclusion parts


def margin_part(toy: GatedToy) -> tuple[dict, dict]:
    """The D7 margin of the slow recurrence (``J = a``, ``G = c``) and its critical gates against
    the closed form: the part ``margin_matches_closed_form`` and its figures."""
    J, G = jacobians(toy)
    m = stability_margin(J)
    margin = m / float(lapack.svdvals(G)[0]) if np.any(G) else float("inf")
    g_c_plus, g_c_minus = critical_gate(J, G, sign=+1), critical_gate(J, G, sign=-1)
    closed = closed_form_margin(toy)
    figures = {
        "J": toy.a,
        "G": toy.c,
        "stability_margin_m": m,
        "margin_over_normG": margin,
        "margin_closed_form": closed,
        "critical_gate_plus": g_c_plus,
        "critical_gate_minus": g_c_minus,
    }
    dev = abs(margin - closed) if np.isfinite(margin) else (0.0 if margin == closed else np.inf)
    part = Diagnostic(
        dev <= MARGIN_TOL and g_c_plus >= margin - MARGIN_TOL,
        {"abs_deviation": dev, "critical_gate_plus": g_c_plus, "margin": margin},
        "|m(J)/‖G‖ − (1 − |a|)/|c|| ≤ 1e-9 and critical gate (+) ≥ m(J)/‖G‖ − 1e-9",
    )
    return {"margin_matches_closed_form": part}, figures


def gradient_parts(inst: Instance) -> tuple[dict, dict]:
    """The gate gradient at ``g = 0``: exact in population, and the z-score of the mean of
    ``n_grad`` per-sequence gradients: the parts ``population_gradient_zero`` and
    ``gradient_consistent_with_zero``."""
    p, toy = inst.p, inst.toy
    gi = per_sequence_gate_gradient(toy, sample(toy, p["n_grad"], inst.rho, inst.s_grad), p["w0"])
    z = mean_interval(gi, 0.95)["z"]
    z_scipy = float(stats.ttest_1samp(gi, 0.0).statistic)
    z_max = normal_quantile(per_test_level(p))
    dg, dw = risk_gradient(toy, inst.pop, 0.0, p["w0"])
    figures = {
        "grad_g_at_0_mean": float(gi.mean()),
        "grad_g_at_0_z": z,
        "grad_g_at_0_z_max": z_max,
        "grad_g_at_0_z_scipy": z_scipy,
        "grad_g_at_0_population": dg,
        "grad_w_at_0_population": dw,
    }
    parts = {
        "population_gradient_zero": Diagnostic(
            dg == 0.0 and dw == 0.0, [dg, dw], "exact ∂R/∂g = ∂R/∂w = 0 at g = 0 (population)"
        ),
        "gradient_consistent_with_zero": Diagnostic(
            abs(z) < z_max, z, f"|z| < {z_max:.3f} (two-sided, false alarm alpha/3)"
        ),
    }
    return parts, figures


def learned_gate_parts(inst: Instance, moms: list) -> tuple[dict, dict]:
    """The gate learned on each of the ``seeds`` training sets (moments ``moms``) and the coupled
    vs frozen ablation on fresh test data: the parts ``gate_ci_contains_zero`` and
    ``ablation_within_run_noise``."""
    p, toy = inst.p, inst.toy
    level = per_test_level(p)
    res = train_from(toy, moms, p)
    g = np.asarray(res.g)
    gm, gsd = float(g.mean()), float(g.std(ddof=1))
    half = mean_interval(g, 1 - level)["half"]
    scipy_cis = [stats.ttest_1samp(g, 0.0).confidence_interval(1 - level)]
    test = stack_moments(sampled_moments(toy, p["n_test"], inst.rho, inst.test_seeds))
    r_frozen = np.asarray(test.Q)
    gap = np.asarray(risk(toy, test, res.g, res.w)) - r_frozen
    gap_half = mean_interval(gap, 0.95)["half"]
    scipy_cis.append(stats.ttest_1samp(gap, 0.0).confidence_interval(0.95))
    run_sd = float(r_frozen.std(ddof=1))
    figures = {
        "learned_gate_mean": gm,
        "learned_gate_ci": (gm - half, gm + half),
        "learned_gate_rms": float(np.sqrt(np.mean(g * g))),
        "learned_gate_sd": gsd,
        "learned_slow_weight_mean": float(np.mean(res.w)),
        "train_risk_drop_mean": float(np.mean(res.history[0] - res.history[-1])),
        "ablation_gap_mean": float(gap.mean()),
        "ablation_gap_ci": (float(gap.mean()) - gap_half, float(gap.mean()) + gap_half),
        "run_to_run_sd": run_sd,
        "ablation_gap_over_run_sd": ratio(abs(gap.mean()), run_sd),
        "population_risk_fast_only": float(inst.pop.Q),
    }
    lo, hi = figures["learned_gate_ci"]
    parts = {
        "gate_ci_contains_zero": Diagnostic(
            lo <= 0.0 <= hi, [lo, hi], f"{1 - level:.2%} t-interval of the mean gate ∋ 0"
        ),
        "ablation_within_run_noise": at_most(
            figures["ablation_gap_over_run_sd"], 1.0, "|mean gap| / run-to-run SD ≤ 1"
        ),
    }
    figures["intervals_scipy"] = [(float(c.low), float(c.high)) for c in scipy_cis]
    return parts, figures


def rms_decay_slope(grid, gg, level: float) -> dict:
    """The least-squares slope of ``log RMS_n`` against ``log n`` (rows of ``gg``: the ``S`` gates
    learned at each ``n`` of ``grid``) with its two-sided normal interval at false-alarm rate
    ``level``; the variance of ``log RMS_n`` is ``max(ψ'(S/2)/4, (κ − 1)/(4S))`` (see
    :func:`decay_part`). Returns ``rms``, ``slope``, ``se``, ``ci``, ``kurtosis`` and
    ``se_residuals`` (the residual-based standard error, for comparison)."""
    gg = np.asarray(gg, dtype=float)
    S = gg.shape[1]
    rms = np.sqrt(np.mean(gg * gg, axis=1))
    fit = slope_fit(grid, rms)
    kurtosis = float(np.mean((gg / rms[:, None]) ** 4))
    x = np.log(np.asarray(grid, dtype=float))
    var_log_rms = max(float(special.polygamma(1, S / 2)) / 4, (kurtosis - 1.0) / (4 * S))
    se = float(np.sqrt(var_log_rms / np.sum((x - x.mean()) ** 2)))
    slope, sh = fit["slope"], normal_quantile(level) * se
    return {
        "rms": rms,
        "slope": slope,
        "se": se,
        "ci": (slope - sh, slope + sh),
        "kurtosis": kurtosis,
        "se_residuals": fit["stderr"],
    }


def scipy_part(figures: dict) -> dict:
    """``statistics_match_scipy``: the learned gate's and the ablation gap's t-intervals and the
    gradient's t statistic (:func:`verify.measure.mean_interval`) against SciPy's one-sample t test
    on the same samples (recorded by :func:`gradient_parts` and :func:`learned_gate_parts`)."""
    ours = [figures["learned_gate_ci"], figures["ablation_gap_ci"]]
    pairs = [(a, b) for o, t in zip(ours, figures["intervals_scipy"]) for a, b in zip(o, t)]
    pairs.append((figures["grad_g_at_0_z"], figures["grad_g_at_0_z_scipy"]))
    dev = max(abs(a - b) / max(abs(b), 1e-300) for a, b in pairs)
    return {
        "statistics_match_scipy": Diagnostic(
            bool(dev <= SCIPY_REL),
            dev,
            f"max relative deviation from scipy.stats.ttest_1samp ≤ {SCIPY_REL:g}",
        )
    }


def decay_part(inst: Instance) -> tuple[dict, dict]:
    """The RMS over seeds of the learned gate against the training-set size ``n`` in ``n_grid``
    and its fitted log–log slope: the part ``gate_shrinks_like_inv_sqrt_n``.

    The slope's standard error is that of the sampling noise of the RMS, not the residuals' (four
    degrees of freedom would need a t quantile of 6.3 at the Bonferroni level of the default
    ``alpha``, and the upper end would pass 0 on a third of the seeds): with ``S`` seeds and
    Gaussian gates ``S·RMS_n²/E g²`` is χ²_S, so ``Var(log RMS_n) = ψ'(S/2)/4`` (trigamma), the
    same at every ``n``; heavier tails are covered by the delta method ``(κ − 1)/(4S)``
    (``κ = E g⁴/(E g²)²`` estimated from all gates scaled by their own ``RMS_n``), whichever is
    larger (a light-tailed estimate of κ from 96 gates is noise: it is never used to shrink the
    interval). The least-squares slope then has ``se² = v/Σ(log n − mean)²`` and a normal
    interval. Over seeds 0–29 the standardised slopes ``(slope + 0.5)/se`` have mean 0.22 and SD
    1.17 (κ̂ 2.1–3.0: nearly Gaussian gates)."""
    p, toy, S = inst.p, inst.toy, inst.p["seeds"]
    grid = tuple(int(n) for n in p["n_grid"])
    moms = []
    for n, sq in zip(grid, inst.s_grid.spawn(len(grid))):
        moms += sampled_moments(toy, n, inst.rho, sq.spawn(S))
    gg = np.asarray(train_from(toy, moms, p).g).reshape(len(grid), S)
    fit = rms_decay_slope(grid, gg, per_test_level(p))
    rms, slope, slope_ci, se = fit["rms"], fit["slope"], fit["ci"], fit["se"]
    kurtosis = fit["kurtosis"]
    figures = {
        "n_grid": grid,
        "learned_gate_rms_by_n": rms,
        "gate_rms_slope": slope,
        "gate_rms_slope_ci": slope_ci,
        "gate_rms_slope_se": se,
        "gate_rms_slope_se_residuals": fit["se_residuals"],
        "learned_gate_kurtosis": kurtosis,
    }
    part = Diagnostic(
        slope_ci[0] <= -0.5 <= slope_ci[1] and slope_ci[1] < 0,
        {"slope": slope, "ci": list(slope_ci)},
        f"{1 - per_test_level(p):.2%} interval of the slope ∋ −0.5 and upper end < 0",
    )
    return {"gate_shrinks_like_inv_sqrt_n": part}, figures


def min_slow_risk_part(inst: Instance, moms: list, margin: float) -> tuple[dict, dict]:
    """``min_w R(g, w)`` on a grid of stable gates, exact in population and on the first training
    sets, against the standard error of an empirical risk: the part ``min_slow_risk_constant``."""
    p, toy = inst.p, inst.toy
    lim = GRID_FRACTION * min(margin, GRID_LIMIT)
    gates = np.linspace(-lim, lim, p["n_gates"])
    pop_min = np.array([min_slow_risk(toy, inst.pop, gv)[0] for gv in gates])
    emp = [
        np.array([min_slow_risk(toy, mo, gv)[0] for gv in gates]) for mo in moms[:EMPIRICAL_CURVES]
    ]
    risk_se = fast_risk_standard_error(
        toy, sample(toy, p["n_train"], inst.rho, inst.train_seeds[0])
    )
    emp_spread = max(float(e.max() - e.min()) for e in emp)
    pop_spread = float(pop_min.max() - pop_min.min())
    emp_over_se = ratio(emp_spread, risk_se)
    figures = {
        "gate_grid": gates,
        "min_slow_risk_population": pop_min,
        "min_slow_risk_population_spread": pop_spread,
        "min_slow_risk_empirical_spread": emp_spread,
        "risk_standard_error": risk_se,
        "min_slow_risk_empirical_spread_over_se": emp_over_se,
    }
    part = Diagnostic(
        pop_spread <= POPULATION_SPREAD_TOL and emp_over_se < 1.0,
        {"population_spread": pop_spread, "empirical_spread_over_se": emp_over_se},
        "population spread ≤ 1e-12 and empirical spread / SE < 1",
    )
    return {"min_slow_risk_constant": part}, figures


def sweep_parts(inst: Instance, margin: float) -> tuple[dict, dict]:
    """The gate learned on shared structure, for each ``ρ`` in ``rhos``, against the margin and
    the fast-only risk: the parts ``gate_grows_with_rho``, ``gate_below_margin`` and
    ``risk_falls_with_shared_structure``."""
    p, toy, S = inst.p, inst.toy, inst.p["seeds"]
    rhos = tuple(float(r) for r in p["rhos"])
    moms = []
    for r, sq in zip(rhos, inst.s_sweep.spawn(len(rhos))):
        moms += sampled_moments(toy, p["n_train"], r, sq.spawn(S))
    rs = train_from(toy, moms, p)
    gs = np.asarray(rs.g).reshape(len(rhos), S)
    ws = np.asarray(rs.w).reshape(len(rhos), S)
    pops = [population_moments(toy, r) for r in rhos]
    rpop = train_from(toy, pops, p)
    change = np.array(
        [
            [risk(toy, pops[i], gs[i, j], ws[i, j]) - pops[i].Q for j in range(S)]
            for i in range(len(rhos))
        ]
    ).mean(axis=1)
    gmean = gs.mean(axis=1)
    over_margin = float(np.abs(gs).max() / margin)
    all_stable = bool(np.all(rs.stable))
    figures = {
        "rhos": rhos,
        "sweep_gate_mean": gmean,
        "sweep_gate_ci_half": np.array([mean_interval(row, 0.95)["half"] for row in gs]),
        "sweep_gate_population": np.asarray(rpop.g),
        "sweep_population_risk_change_mean": change,
        "sweep_max_gate_over_margin": over_margin,
        "sweep_all_stable": all_stable,
    }
    positive = [i for i, r in enumerate(rhos) if r > 0]
    parts = {
        "gate_grows_with_rho": Diagnostic(
            bool(np.all(np.diff(gmean) > 0)),
            gmean.tolist(),
            "mean learned gate strictly increasing in ρ",
        ),
        "gate_below_margin": Diagnostic(
            over_margin < 1.0 and all_stable,
            {"max_gate_over_margin": over_margin, "all_stable": all_stable},
            "max |learned gate| / (m(J)/‖G‖) < 1 and every trained model stable",
        ),
        "risk_falls_with_shared_structure": Diagnostic(
            bool(np.all(change[positive] < 0)),
            change.tolist(),
            "mean population risk change at the learned parameters < 0 for every ρ > 0",
        ),
    }
    return parts, figures


def conclusion_notes(inst: Instance, figures: dict) -> list[str]:
    """The toy and the training rule in words, and the sign of the ablation gap when resolved."""
    toy, p = inst.toy, inst.p
    notes = [
        f"toy: ŷ = f + s_b, s_b = a s_(b−1) + g (c s_(b−1) + w ȳ_(b−1)), J = a = {toy.a}, "
        f"G = c = {toy.c}; margin m(J)/‖G‖ = {figures['margin_over_normG']:.4g}",
        "risk = mean squared error per token; training = gradient descent with "
        f"backtracking from g = 0, w = {p['w0']}, {p['steps']} steps",
    ]
    if figures["ablation_gap_ci"][0] > 0:
        notes.append(
            "paired coupled−frozen test-risk gap is positive "
            f"({figures['ablation_gap_mean']:.2e}: the O(1/n) cost of fitting the extra "
            f"parameters) but {figures['ablation_gap_over_run_sd']:.3f}× the run-to-run SD"
        )
    return notes


# --------------------------------------------------------------------------- the claim


class D9(Claim):
    id = "D9"
    title = "Independent blocks close the gate"
    abstract = (
        "if neighbouring blocks carry no shared structure ... the gate amplitude is invisible "
        "in the prediction risk"
    )
    statement = (
        "With independent blocks min_slow R(g) is constant in g and ∂R/∂g = 0 at g = 0, so "
        "the learned gate stays within sampling noise (∝ 1/√n); shared structure opens it."
    )
    params = {
        "rho": Param(
            0.0,
            "block correlation of the instance's data (AR(1) block means)",
            low=-1.0,
            high=1.0,
            open_low=True,
            open_high=True,
        ),
        **model_params(P=dict(high=64)),
        "N": Param(8, "blocks per sequence", low=2, high=64),
        "tau": Param(1.0, "SD of the block means", low=1e-6, high=1e6),
        "sigma": Param(1.0, "SD of the token noise", low=1e-6, high=1e6),
        "a": Param(
            0.0,
            "un-gated slow recurrence J = a (stable: |a| < 1)",
            low=-1.0,
            high=1.0,
            open_low=True,
            open_high=True,
        ),
        "c": Param(1.0, "gated coupling G = c", low=-1e3, high=1e3),
        "w0": Param(1.0, "initial slow weight (non-zero)", low=-1e3, high=1e3),
        "lr": Param(1.0, "initial step of the backtracking gradient descent", low=1e-8, high=1e3),
        "steps": Param(300, "gradient steps", low=1, high=20_000),
        "n_train": Param(2048, "training sequences per seed", low=8, high=1 << 17),
        "n_test": Param(4096, "test sequences per seed", low=8, high=1 << 18),
        "n_grad": Param(16384, "sequences for the gradient z-score", low=8, high=1 << 20),
        "seeds": Param(16, "independent training sets", low=2, high=256),
        "n_grid": Param(
            (128, 256, 512, 1024, 2048, 4096),
            "training-set sizes of the 1/√n fit (distinct, ≥ 3)",
            low=8,
            high=1 << 16,
            min_len=3,
        ),
        "rhos": Param(
            (0.0, 0.2, 0.4, 0.6, 0.8, 0.9),
            "correlations of the shared-structure sweep (strictly increasing, in [0, 1))",
            low=0.0,
            high=1.0,
            open_high=True,
            min_len=2,
        ),
        "n_gates": Param(19, "gates of the min_w R(g) grid", low=3, high=1001),
        "alpha": Param(
            0.01,
            "false-alarm rate of the verdict on a true claim: the three calibrated tests (z-score, "
            "gate interval, slope interval) run at alpha/3 each (Bonferroni)",
            low=0.0,
            high=0.5,
            open_low=True,
        ),
    }
    hypotheses = {
        "blocks_independent": "the data model's cross-block covariances vanish: max_{b ≠ c} "
        "τ²|ρ|^{|b−c|} = 0 (AR(1) block means)",
    }
    hypothesis_sources = {"blocks_independent": "input"}
    conclusion = {
        "population_gradient_zero": "exact population ∂R/∂g and ∂R/∂w at g = 0 are 0",
        "gradient_consistent_with_zero": "|z| of the mean per-sequence gate gradient below the "
        "two-sided normal critical value at alpha/3",
        "gate_ci_contains_zero": "the (1 − alpha/3) t-interval of the mean learned gate contains 0",
        "statistics_match_scipy": "the t-intervals (learned gate, ablation gap) and the gradient's "
        "t statistic equal SciPy's one-sample t test (ttest_1samp, its confidence_interval) to "
        f"{SCIPY_REL:g} relative",
        "gate_shrinks_like_inv_sqrt_n": "the (1 − alpha/3) interval of the log–log slope of RMS "
        "gate vs n (standard error from the RMS's sampling noise) contains −0.5 and lies below 0",
        "min_slow_risk_constant": "population spread of min_w R(g) ≤ 1e-12 and empirical spread "
        "< 1 standard error of the risk estimate",
        "ablation_within_run_noise": "|mean coupled − frozen test risk| ≤ run-to-run SD",
        "margin_matches_closed_form": "m(J)/‖G‖ = (1 − |a|)/|c| (1e-9) and the critical gate ≥ it",
        "gate_grows_with_rho": "the mean learned gate is strictly increasing over rhos",
        "gate_below_margin": "every learned gate of the sweep < m(J)/‖G‖, all trained models stable",
        "risk_falls_with_shared_structure": "population risk at the learned parameters < the "
        "fast-only risk for every ρ > 0 of rhos",
    }
    controls = (
        Control(
            "shared_structure",
            {"rho": 0.6},
            breaks="blocks_independent",
            meaning="correlated block means: ∂R/∂g ≠ 0 at g = 0, the gate opens, no 1/√n decay, "
            "the ablations separate",
            seed=2,
        ),
    )
    key_figures = (
        "grad_g_at_0_z",
        "learned_gate_mean",
        "gate_rms_slope",
        "sweep_max_gate_over_margin",
    )
    failure_rate = 0.01
    """The default ``alpha``: at most this share of seeds fails on a true claim (Bonferroni over
    the calibrated tests; the other sampled parts have margins of 40× or more, module docstring)."""

    orders = (Order(("rhos",), "the correlations of the shared-structure sweep"),)

    def validate(self, p):
        if p["w0"] == 0:
            raise ValueError(
                "parameter w0=0: expected a non-zero value (with g = 0 and w = 0 every "
                "gradient vanishes)"
            )
        if len(set(p["n_grid"])) != len(p["n_grid"]):
            raise ValueError(f"parameter n_grid={p['n_grid']}: expected distinct sizes")

    def memory_bytes(self, p):
        """About four float64 arrays of ``n × T`` for the largest sample (the sequences, their
        running sums, residuals and fast estimates); six are counted."""
        n = max(p["n_grad"], p["n_train"], p["n_test"], max(p["n_grid"]))
        return 6 * 8 * n * p["P"] * p["N"]

    def work(self, p):
        """The training (``steps`` gradient steps for each of ``seeds × (1 + len(n_grid) +
        2·len(rhos))`` moment sets: the training sets, the 1/√n grid, the sweep and its population
        fits) and the sampling (every sampled token, and the tokens of the gradient sample)."""
        sets = p["seeds"] * (1 + len(p["n_grid"]) + 2 * len(p["rhos"]))
        per_seed = p["n_train"] + p["n_test"] + sum(p["n_grid"]) + len(p["rhos"]) * p["n_train"]
        T = p["P"] * p["N"]
        return {
            "start": 1,
            "moment_step": sets * p["steps"],
            "sampled_token": T * p["seeds"] * per_seed,
            "gradient_token": T * p["n_grad"],
        }

    instance = Instance

    def diagnose(self, inst):
        toy = inst.toy
        lags = np.arange(1, toy.N)
        cross = float(np.max(toy.tau**2 * np.abs(inst.rho) ** lags)) if lags.size else 0.0
        return {
            "blocks_independent": Diagnostic(
                cross == 0.0,
                {"max_cross_block_covariance": cross},
                "max_{b ≠ c} τ²|ρ|^{|b−c|} = 0: the AR(1) block means of the data model are "
                "independent (from its definition, not from the moment formulas)",
            )
        }

    def conclude(self, inst):
        p = inst.p
        moms = sampled_moments(inst.toy, p["n_train"], inst.rho, inst.train_seeds)
        parts, figures = margin_part(inst.toy)
        margin = figures["margin_over_normG"]
        for more_parts, more_figures in (
            gradient_parts(inst),
            learned_gate_parts(inst, moms),
            decay_part(inst),
            min_slow_risk_part(inst, moms, margin),
            sweep_parts(inst, margin),
        ):
            parts.update(more_parts)
            figures.update(more_figures)
        parts.update(scipy_part(figures))
        return Conclusion(
            parts,
            figures,
            tolerance={
                "alpha_family": p["alpha"],
                "alpha_per_test": per_test_level(p),
                "population_spread_abs": POPULATION_SPREAD_TOL,
                "empirical_spread_over_se": 1.0,
                "ablation_gap_over_run_sd": 1.0,
                "margin_abs": MARGIN_TOL,
            },
            notes=conclusion_notes(inst, figures),
        )


CLAIM = D9()
