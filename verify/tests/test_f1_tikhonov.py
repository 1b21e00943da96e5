"""F1: fast collapse onto block-constant states, O(ε) leading-order and O(ε²) first-order reduction.

The verdict is decided by :data:`verify.checks.f1.CLAIM` (critical manifold, normal structure,
attraction rate, the rates over their asymptotic windows, the theory reduced field against the
numerical formulas, the curvature term, the two stiff integrators are parts of it); these tests
only read it. The seeds 101–112 of the default instance run in the thorough profile.
The negative controls (the global causal mask; block_causal with the block mean as coarse variable)
run in ``verify/tests/test_negative_controls.py``. Your own system: a ``DepthFlow`` whose block pattern
misses one entry (its kernel is not doubly stochastic, so the coarse variable is a weighted mean),
the same mask with one entry across blocks, relu, no injection, and flows beyond F1's size limits.
"""

import functools
from types import SimpleNamespace

import numpy as np
import pytest

from fastslow.numerics import lapack
from fastslow.numerics.model.weights import SIGMAS, ModelConfig
from fastslow.verify.checks.f1 import (
    BASIN_TOL,
    FAST_TAU_EXTEND,
    THEORY_TOL,
    Instance,
    asymptotic_regime_resolvable,
    attraction_part,
    attraction_rate,
    attraction_rate_resolvable,
    basin_offset,
    fast_tau,
    initial_state_in_basin,
    integrator_orders,
    integrators_part,
    measurements,
    reduced_trajectory_points,
    theory_against_numerics,
)
from fastslow.verify.checks.f1.hypotheses import normally_hyperbolic
from fastslow.verify.checks.f1.integrators import deciding_eps
from fastslow.verify.checks.f1.parts import rates_resolved
from fastslow.verify.registry import CLAIMS, run_check
from fastslow.verify.systems import DepthFlow

pytestmark = pytest.mark.claim("F1")


@pytest.mark.parametrize("norm", [True, False], ids=["norm_on", "norm_off"])
def test_block_bidirectional_slopes_one_and_two_rate_and_symbolic_reduction(claim, norm):
    result = claim.main(run_check("F1", {"norm": norm}, seed=0))
    assert result.outcome == "holds", result.summary()


def test_block_causal_reduces_through_the_first_token(claim):
    result = claim.main(run_check("F1", {"mask": "block_causal"}, seed=1))
    assert result.outcome == "holds", result.summary()


def test_hold_out_instance_near_the_rms_norm_singularity(claim):
    """One block of four tokens, three features, one layer, no slow path (seed 5): the reduced
    solution passes near the singular point 0 of the RMS norm (c₂ ≈ 27), so the rate rule starts
    near ε = 2e-3 instead of 0.1."""
    params = {"T": 8, "P": 4, "d": 3, "L": 1, "gate": 0.0}
    result = claim.main(run_check("F1", params, seed=5))
    assert result.outcome == "holds", result.summary()


def test_an_asymptotic_regime_below_the_floors_is_a_limit_decided_before_any_error():
    """Seed 5 of the defaults (its reduced solution passes within 3.5e-4 of the RMS norm's
    singular point): c₂ = 516 puts the first-order regime's start at 9.7e-5, with 4 ladder points
    above ``eps_floor_first = 1e-5``; decided from the reduced flows alone (no full flow is
    integrated), so the rate rule's missing window is a limit of the check (``undecided``), not a
    counterexample and not a hypothesis of the theorem. Seed 21 (c₂ = 155, start 3.2e-4) has
    seven."""
    p = CLAIMS["F1"].resolve({})
    for seed, points in ((5, 4), (21, 7)):
        inst = Instance(p, seed)
        diag = asymptotic_regime_resolvable(inst)
        assert diag.holds is (points >= p["window"]), diag
        assert diag.value["first_order"]["points"] == points, diag
        assert diag.value["leading"]["points"] >= p["window"]
        assert inst.work == []


def test_seed_5_is_undecided_by_its_limits_not_outside_the_hypotheses():
    result = run_check("F1", {}, seed=5)
    assert result.outcome == "undecided", result.summary()
    assert "asymptotic_regime_resolvable" in result.unresolved
    assert result.hypotheses_hold


def test_the_generic_start_is_each_blocks_coarse_state_plus_the_off_manifold_part():
    """``CouplingProblem.X0 = UY₀ + Z₀`` with ``U = I_N ⊗ 1_P``: token ``i``'s row is row
    ``i // P`` of ``Y₀`` plus row ``i`` of ``Z₀``; F1's instance starts from it (as the F1
    figures do), and ``Lᵀ`` of the block-constant part gives ``Y₀`` back."""
    p = CLAIMS["F1"].resolve({})
    inst = Instance(p, 3)
    prob = inst.problem
    P = prob.model.config.P
    assert np.array_equal(prob.X0, np.repeat(prob.Y0, P, axis=0) + prob.Z0)
    assert np.array_equal(inst.X0_generic, prob.X0)
    assert np.allclose(inst.Lt @ (prob.X0 - prob.Z0), prob.Y0, rtol=1e-14, atol=1e-14)


def test_a_metastable_start_reaches_the_manifold_later_and_is_inside_the_basin():
    """block_causal seed 40 (norm on) is still 1.3e-6 off the manifold at τ = 60, converging (a
    metastable transient, not a start outside the basin): the pure fast flow runs on, doubling τ,
    and reaches 1e-10 by τ = 120; the instance holds. The thorough sweep found it."""
    p = CLAIMS["F1"].resolve({"mask": "block_causal"})
    inst = Instance(p, 40)
    diag = initial_state_in_basin(inst)
    assert diag.holds, diag
    assert fast_tau(inst) < inst.fast_tau_reached <= FAST_TAU_EXTEND * fast_tau(inst)
    early = basin_offset(inst, inst.fast_limit(inst.X0_generic, extend=1.0)[0], inst.X0_generic)
    assert early > BASIN_TOL, early


def test_a_metastable_full_flow_is_followed_until_it_attracts_at_the_predicted_rate():
    """Seed 10 of the defaults (found by the thorough sweep): over 30 predicted time constants
    the deviation falls only to 0.63 of its start (no sample in the fit band: the rate was NaN and
    the instance "failed"); followed further (horizon doubled within the first layer) it enters
    the linear regime and decays at the predicted rate."""
    p = CLAIMS["F1"].resolve({})
    rate = attraction_rate(Instance(p, 10), p["rate_eps"])
    assert rate["horizon_predicted_constants"] > 30
    assert rate["n_fit"] >= 3
    assert abs(rate["ratio"] - 1) <= p["rate_tol"], rate["ratio"]


def test_an_attraction_rate_that_cannot_be_fitted_is_a_limit_not_a_nan():
    rate = {"ratio": None, "lambda2": 0.0, "lambda2_from": "closed form", "n_fit": 0}
    rate |= {"horizon": 0.5, "horizon_predicted_constants": 5e3}
    rate |= {"relative_deviation_at_horizon": 0.6}
    assert not attraction_rate_resolvable(rate).holds
    part = attraction_part(rate, 0.05)
    assert part.holds and isinstance(part.value, str)


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_block_causal_without_norm_attracts_at_the_slowest_mode(seed):
    """``block_causal`` has the modes λ = 1/2 and 1/3 in each block: the deviation is read on the
    spectral projector onto λ₂ = 1/2 (the whole ``(I − UB)X`` mixed in the faster mode and gave
    ratios 1.22 and 1.33). Seed 1 stays metastable long (it reaches the manifold only at τ = 480)."""
    p = CLAIMS["F1"].resolve({"mask": "block_causal", "norm": False})
    rate = attraction_rate(Instance(p, seed), p["rate_eps"])
    assert abs(rate["ratio"] - 1) <= p["rate_tol"], rate["ratio"]


def test_our_integrators_achieve_their_classical_orders_with_fixed_steps():
    orders = integrator_orders()
    assert orders["radau"]["verdict"] == "holds" and abs(orders["radau"]["slope"] - 5) < 0.05
    assert orders["rosw"]["verdict"] == "holds" and abs(orders["rosw"]["slope"] - 3) < 0.05


@pytest.mark.parametrize(
    "ours, reference, holds",
    [(0.5, 0.5, True), (3.8, 0.02, False), (3.8, 2.0, True), (0.5, 2.0, True)],
    ids=["agree", "ours_off", "reference_off", "reference_off_ours_fine"],
)
def test_integrator_disagreement_is_attributed(ours, reference, holds):
    """Ours off while SciPy's two methods agree: the part fails (the code under test is wrong);
    SciPy's methods off among themselves: the part holds and the limit decides (undecided)."""
    integ = {
        "ours_agree": ours <= 1,
        "reference_consistent": reference <= 1,
        "ours_deviation_in_bounds": {"radau": ours, "rosw": 0.1},
        "reference_deviation_in_bounds": reference,
        "bound": 1e-7,
        "eps": {},
    }
    assert integrators_part(integ).holds is holds


def test_the_numerical_curvature_resolves_the_theory_near_the_norm_singularity():
    """Seed 21's first-order reduced trajectory passes a block of RMS 8e-4; the plain central
    difference of the curvature missed the theory by 1.05e-6 there (its own O(step²) truncation);
    Richardson-extrapolated it agrees to a few 1e-11."""
    inst = Instance(CLAIMS["F1"].resolve({}), 21)
    th = theory_against_numerics(inst, reduced_trajectory_points(inst))
    assert th["max_rel"]["f1"] < 1e-9 < THEORY_TOL["f1"], th["max_rel"]


LAPACK_PARAMS = {"L": 1, "gate": 0.0}
"""A cheap instance for the other-answers test (one layer, no slow path)."""


@functools.cache
def _verdict_without_other_answers(control):
    return run_check("F1", LAPACK_PARAMS, control=control)


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["F1"].controls])
@pytest.mark.parametrize("lapack_seed", [1, 2])
def test_verdict_does_not_depend_on_lapack_choices(control, lapack_seed, thorough):
    """F1 calls no non-unique decomposition (λ₂ from the closed-form spectrum, the multiplicity of
    the eigenvalue 1 from the mask graph, H₁ by a linear solve): the verdict and its key figures
    are identical under other valid LAPACK answers (a second set of answers under --thorough)."""
    if lapack_seed > 1 and not thorough:
        pytest.skip("a second set of other valid answers runs under --thorough")
    base = _verdict_without_other_answers(control)
    with lapack.other_valid_answers(seed=lapack_seed):
        other = run_check("F1", LAPACK_PARAMS, control=control)
    assert other.outcome == base.outcome, other.summary()
    for key in CLAIMS["F1"].key_figures:
        assert other.figures[key] == base.figures[key], key


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="eps_floor_leading"):
        run_check("F1", {"eps_max": 0.01, "eps_floor_leading": 0.005})
    with pytest.raises(ValueError, match="eps_floor_first"):
        run_check("F1", {"eps_floor_first": 0.05})
    with pytest.raises(ValueError, match="window"):
        run_check("F1", {"window": 2})
    with pytest.raises(ValueError, match="coarse"):
        run_check("F1", {"coarse": "median"})
    with pytest.raises(ValueError, match="method"):
        run_check("F1", {"method": "euler"})
    with pytest.raises(ValueError, match="P"):
        run_check("F1", {"T": 8, "P": 3})
    with pytest.raises(ValueError, match="P"):
        run_check("F1", {"T": 5, "P": 1})
    with pytest.raises(ValueError, match="eps_max"):
        run_check("F1", {"eps_max": 0.5})


SWEEP_SETS = {
    "default": ({}, range(200)),
    "block_causal": ({"mask": "block_causal"}, range(50)),
    "norm_off": ({"norm": False}, range(50)),
}
"""The thorough sweep: the defaults on 200 seeds, ``block_causal`` and the norm off on 50 each."""
UNDECIDED_MAX = 0.05
"""At most this fraction of the sweep's seeds may be ``undecided``."""


def test_the_seed_sweep_has_no_counterexample_and_names_every_other_outcome(
    claim, thorough, check_sweep
):
    """Thorough profile: no ``fails`` and no ``error`` on the 300 instances of
    :data:`SWEEP_SETS`; every ``undecided`` seed named with the limits that decided it and every
    ``outside-hypotheses`` seed with its hypotheses (figures); ``undecided`` ≤ 5 % of the seeds."""
    if not thorough:
        pytest.skip("thorough profile only (≈ 5 s per instance)")
    counts, named, bad, n_undecided, n = {}, {}, [], 0, 0
    for name, (params, seeds) in SWEEP_SETS.items():
        verdicts = check_sweep(
            [dict(claim="F1", seed=s, **params) for s in seeds], label=f"F1 {name}"
        )
        outcomes = [v.outcome for v in verdicts]
        counts[name] = {o: outcomes.count(o) for o in sorted(set(outcomes))}
        for s, v in zip(seeds, verdicts):
            if v.outcome == "undecided":
                named[f"{name} seed {s}"] = {"undecided": v.unresolved}
            elif v.outcome == "outside-hypotheses":
                named[f"{name} seed {s}"] = {"outside-hypotheses": v.violated}
            elif v.outcome in ("fails", "error"):
                bad.append((name, s, v.summary()))
        n_undecided += outcomes.count("undecided")
        n += len(outcomes)
    claim.figure("seed_sweep_counts", counts)
    claim.figure("seed_sweep_not_holding", named)
    assert not bad, bad
    assert n_undecided <= UNDECIDED_MAX * n, counts


# ----------------------------------------------------------------------------- your own system

MISSING_ENTRY = np.array([[1, 1, 0], [1, 1, 1], [1, 1, 1]], dtype=bool)
"""Token 0 does not attend to token 2: the block kernel ``[[1/2, 1/2, 0], [1/3, 1/3, 1/3],
[1/3, 1/3, 1/3]]`` is not doubly stochastic; its stationary weighting is ``(2/5, 2/5, 1/5)``, not the
block mean, and ``λ₂ = 1/6``."""


def block_local(pattern: np.ndarray, N: int = 2) -> np.ndarray:
    """The T×T mask with ``pattern`` in each of ``N`` diagonal blocks."""
    return np.kron(np.eye(N, dtype=bool), pattern)


def flow(mask, name: str, **changes) -> DepthFlow:
    """Your flow on ``mask``: three tokens per block, two features, two layers, injection, gate."""
    kw = {**dict(P=3, d=2, L=2, gamma=1.0, gate=0.5, seed=0), **changes}
    return DepthFlow(mask, name=name, **kw)


def test_your_block_local_mask_reduces_through_its_stationary_weighting(claim):
    """The theory derives the reduction for the pattern (coarse vector (2/5, 2/5, 1/5), normal rate
    5/6) and numerics computes the stationary weighting on its own; they agree, and the rates are
    1 and 2."""
    result = claim.main(run_check("F1", system=flow(block_local(MISSING_ENTRY), "missing entry")))
    assert result.outcome == "holds", result.summary()
    assert result.system["kind"] == "DepthFlow"
    assert result.figures["coarse_variable"] == "stationary"
    assert result.figures["reduced_flow_source"] == "theory"
    assert result.figures["lambda2"] == pytest.approx(1 / 6, abs=1e-12)
    assert result.figures["theory"]["coarse_vs_numerics"] <= 1e-14


def test_your_mask_attending_across_blocks_is_outside_the_hypotheses():
    mask = block_local(MISSING_ENTRY)
    mask[0, 3] = True  # token 0 of block 0 attends to token 0 of block 1
    result = run_check("F1", system=flow(mask, "one entry across blocks"))
    assert result.outcome == "outside-hypotheses", result.summary()
    assert "fast_mask_block_local" in result.violated


@pytest.mark.parametrize(
    "changes, hypothesis",
    [
        pytest.param(
            dict(sigma="relu"),
            "mlp_nonlinearity_smooth",
            marks=pytest.mark.skipif(
                "relu" not in SIGMAS, reason="the engine has no relu yet (pluggable nonlinearity)"
            ),
        ),
        (dict(gamma=0.0), "first_order_correction_nonzero"),
    ],
    ids=["relu", "no_injection"],
)
def test_your_flow_outside_one_hypothesis_is_reported_by_it(changes, hypothesis):
    """relu has no σ'; without injection the block-constant states are exactly invariant (H₁ ≡ 0:
    no rate to measure). Each breaks only its own hypothesis."""
    result = run_check("F1", system=flow(block_local(MISSING_ENTRY), hypothesis, **changes))
    assert result.outcome == "outside-hypotheses", result.summary()
    assert result.violated == [hypothesis]


@pytest.mark.parametrize(
    "sizes, named",
    [
        (dict(T=10, P=5, d=2), "P=5"),
        (dict(T=6, P=3, d=5), "d=5"),
        (dict(T=6, P=3, d=2, L=17), "L=17"),
    ],
)
def test_your_flow_beyond_the_size_limits_is_bad_input(sizes, named):
    """Refused before any work, naming the value and F1's limits."""
    system = DepthFlow("block_bidirectional", **sizes)
    with pytest.raises(ValueError, match=f"{named}.*F1 applies the limits of its own parameters"):
        run_check("F1", system=system)


def test_normal_hyperbolicity_needs_both_n_closed_classes_and_every_one_aperiodic():
    """``normally_hyperbolic`` holds only when the mask graph has exactly N closed classes *and*
    each is aperiodic: a user mask with N classes one of which has period 2 (two tokens that see
    only each other: eigenvalue −1), or with an aperiodic graph of fewer classes, violates it."""

    def inst(mask):
        return SimpleNamespace(cfg=ModelConfig(T=4, P=2, d=1, mask=np.asarray(mask, bool)))

    blocks = [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    swap = [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]  # period 2 in block 2
    one_class = [[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 1, 1], [1, 0, 1, 1]]  # block 2 leaks into 1
    assert normally_hyperbolic(inst(blocks)).holds
    d = normally_hyperbolic(inst(swap))
    assert not d.holds and d.value["closed_class_periods"] == [1, 2]
    d = normally_hyperbolic(inst(one_class))
    assert not d.holds and d.value["eigenvalue_1_multiplicity"] == 1


def test_the_deciding_eps_is_the_windows_finest_else_the_finest_evaluated_else_eps_max():
    """``deciding_eps``: where an order's rate was decided, the finest ε of its window; without a
    window, the finest ε evaluated; with none evaluated, ``eps_max``."""
    rates = {
        "windowed": {"window": [0.2, 0.02], "h": [0.2, 0.1, 0.05, 0.02, 0.01]},
        "no_window": {"window": None, "h": [0.2, 0.1, 0.05]},
        "nothing": {"window": None, "h": []},
    }
    assert deciding_eps({"eps_max": 0.3}, rates) == {
        "windowed": 0.02,
        "no_window": 0.05,
        "nothing": 0.3,
    }


def test_rates_resolved_states_each_orders_measured_floor():
    """The limit's rule names, per order, its resolved points, the finest ε and the measured
    accuracy floor there (NaN only where none was measured)."""
    rates = {
        "order0": {"verdict": "holds", "why": "", "h": [0.1, 0.05], "floor": [1e-9, 2e-9]},
        "order1": {"verdict": "unresolved", "why": "x", "h": [], "floor": []},
    }
    d = rates_resolved({"window": 5}, rates)
    assert not d.holds
    assert "order0: holds (2 resolved points down to ε = 0.05, measured floor 2e-09)" in d.rule
    assert "order1: unresolved (0 resolved points down to ε = nan, measured floor nan)" in d.rule


def test_a_start_that_never_reaches_the_band_is_followed_only_up_to_the_first_layers_depth(
    monkeypatch,
):
    """The attraction rate's horizon doubles while the deviation stays above the fit band, but
    never past ``1/L``, the first layer's depth (the flow is a different one beyond it); a
    deviation that never falls is then a limit (``n_fit < 3``), not a rate."""
    p = CLAIMS["F1"].defaults()
    inst = Instance(p, 0)
    horizons = []

    def flat(model, X0, eps, *, t_eval, **kw):
        horizons.append(float(np.max(t_eval)))
        return SimpleNamespace(extra={"X": [X0] * len(t_eval)})

    monkeypatch.setattr(measurements, "integrate_coupling", flat)
    rate = measurements.attraction_rate(inst, p["rate_eps"])
    assert rate["n_fit"] < 3 and len(horizons) > 1
    assert max(horizons) == pytest.approx(1.0 / inst.model.L)
