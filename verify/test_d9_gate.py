"""D9: on independent blocks the gate gradient vanishes at g = 0, the learned gate stays within
sampling noise (shrinking like 1/√n), min over the slow weight of R(g) is constant; with shared
structure the gate opens, grows with ρ and stays below the D7 margin."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from numerics.data import gaussian_ar1_blocks
from numerics.gated_predictor import (GatedToy, empirical_moments, min_slow_risk,
                                      population_moments, risk, risk_gradient)
from verify.checks import run_check

pytestmark = pytest.mark.claim("D9")

THOROUGH = {"seeds": 48, "n_grid": (128, 256, 512, 1024, 2048, 4096, 8192, 16384),
            "n_grad": 65536, "n_test": 16384}


def test_independent_blocks_keep_the_gate_closed(claim, thorough):
    result = claim.main(run_check("D9", THOROUGH if thorough else {}, seed=2))
    f, verdict = result.figures, result.figures["verdicts"]
    assert result.hypotheses_hold
    # the gradient at g = 0: exactly 0 in population, consistent with 0 on data
    assert f["grad_g_at_0_population"] == 0.0 and f["grad_w_at_0_population"] == 0.0
    assert abs(f["grad_g_at_0_z"]) < result.tolerance["z_max"]
    # the learned gate: within sampling noise, shrinking like 1/sqrt(n)
    lo, hi = f["learned_gate_ci"]
    assert lo <= 0.0 <= hi
    slo, shi = f["gate_rms_slope_ci"]
    assert slo <= -0.5 <= shi and shi < 0, f["gate_rms_slope_ci"]
    # min over the slow weight of R(g): exactly constant in population, flat to sampling noise
    assert f["min_slow_risk_population_spread"] <= 1e-12
    assert f["min_slow_risk_empirical_spread_over_se"] < 1.0
    # coupled vs frozen ablation within run-to-run noise
    assert f["ablation_gap_over_run_sd"] <= 1.0
    # shared structure: the gate grows with rho, stays below the margin, the risk falls
    assert verdict["gate_grows_with_rho"] and verdict["gate_below_margin"]
    assert verdict["risk_falls_with_shared_structure"]
    assert abs(f["margin_over_normG"] - f["margin_closed_form"]) <= 1e-9
    assert f["critical_gate_plus"] >= f["margin_over_normG"] - 1e-9
    assert result.holds, result.summary()
    claim.figure("gate_rms_slope", f["gate_rms_slope"])
    claim.figure("gate_rms_slope_ci", f["gate_rms_slope_ci"])
    if f["ablation_gap_ci"][0] > 0:
        claim.note("paired coupled−frozen test-risk gap on independent blocks is positive "
                   f"({f['ablation_gap_mean']:.2e}: the O(1/n) overfitting cost of the extra "
                   f"parameters) but {f['ablation_gap_over_run_sd']:.3f}× the run-to-run SD")


def test_negative_control_shared_structure_opens_the_gate(claim):
    result = claim.negative(run_check("D9", {"rho": 0.6}, seed=2))
    f, verdict = result.figures, result.figures["verdicts"]
    assert not result.hypotheses_hold
    assert not result.holds
    assert f["grad_g_at_0_population"] < 0.0           # descent opens the gate (g increases)
    assert abs(f["grad_g_at_0_z"]) > 10 * result.tolerance["z_max"]
    assert f["learned_gate_ci"][0] > 0.0
    assert not verdict["gate_shrinks_like_inv_sqrt_n"]  # the gate converges to a non-zero value
    assert f["ablation_gap_ci"][1] < 0.0 and f["ablation_gap_over_run_sd"] > 3.0
    assert f["min_slow_risk_population_spread"] > 1e-3
    assert f["learned_gate_mean"] < f["margin_over_normG"]


@given(P=st.integers(1, 6), N=st.integers(2, 10), tau=st.floats(0.2, 3.0),
       sigma=st.floats(0.2, 3.0), a=st.floats(-0.9, 0.9), c=st.floats(-2.0, 2.0),
       g=st.floats(-0.9, 0.9), w=st.floats(-3.0, 3.0, allow_subnormal=False),
       rho=st.floats(0.05, 0.95))
def test_population_identities(P, N, tau, sigma, a, c, g, w, rho):
    toy = GatedToy(P=P, N=N, tau=tau, sigma=sigma, a=a, c=c)
    ind = population_moments(toy, 0.0)
    # independent blocks: zero gradient at g = 0, R >= Q, min over w is Q for every gate
    assert risk_gradient(toy, ind, 0.0, w) == (0.0, 0.0)
    assert risk(toy, ind, g, w) >= ind.Q - 1e-12 * ind.Q
    if abs(a + g * c) < 1:
        assert abs(min_slow_risk(toy, ind, g)[0] - ind.Q) <= 1e-12 * ind.Q
    # shared structure: the gate gradient at 0 is non-zero, with the sign that opens it
    sh = population_moments(toy, rho)
    dg = risk_gradient(toy, sh, 0.0, w)[0]
    if abs(w) > 1e-6:
        assert np.sign(dg) == -np.sign(w)


def test_population_risk_matches_monte_carlo():
    toy = GatedToy(P=4, N=6, tau=1.0, sigma=1.5, a=0.3, c=0.8)
    for rho in (0.0, 0.7):
        x = gaussian_ar1_blocks(40000, toy.N, toy.P, rho=rho, tau=1.0, sigma=1.5, seed=9).x
        emp, pop = empirical_moments(toy, x), population_moments(toy, rho)
        assert abs(risk(toy, emp, 0.4, 0.9) - risk(toy, pop, 0.4, 0.9)) < 0.02


def test_gate_growth_with_rho_is_a_property_of_the_parametrisation(claim):
    """Finding: the *risk* falls monotonically with ρ for every (a, c), and the learned gate stays
    below the margin, but the gate *amplitude* grows with ρ only when opening the gate does not
    fight the un-gated recurrence: with J = a = 0.3 and G = c = −1 (opening the gate lowers the
    pole a + g·c) the gate after 1000 steps rises and then falls with ρ."""
    from numerics.gated_predictor import closed_form_margin, stack_moments, train

    rhos = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95)
    out = {}
    for a, c in ((0.0, 1.0), (0.3, -1.0)):
        toy = GatedToy(P=4, N=8, a=a, c=c)
        pops = [population_moments(toy, r) for r in rhos]
        res = train(toy, stack_moments(pops), steps=1000)
        change = np.array([risk(toy, p, g, w) - p.Q for p, g, w in zip(pops, res.g, res.w)])
        assert np.all(np.diff(change) < 0)                       # the risk falls with rho
        assert np.all(np.abs(res.g) < closed_form_margin(toy))   # below the D7 margin
        assert np.all(res.stable)
        out[f"a={a},c={c}"] = np.round(res.g, 4).tolist()
    assert np.all(np.diff(out["a=0.0,c=1.0"]) > 0)
    assert not np.all(np.diff(out["a=0.3,c=-1.0"]) > 0)
    claim.figure("population_gate_by_rho_1000_steps", {"rhos": rhos, **out})
    claim.note("finding: the learned gate grows with ρ for the default toy (J = 0, G = 1) but not "
               "for every parametrisation: with J = 0.3, G = −1 the gate (population risk, 1000 "
               f"GD steps) rises then falls with ρ ({out['a=0.3,c=-1.0']}); the risk falls with ρ "
               "and the gate stays below the margin in both")
