"""D9: on independent blocks the gate gradient vanishes at g = 0, the learned gate stays within
sampling noise (shrinking like 1/√n), min over the slow weight of R(g) is constant; with shared
structure the gate opens, grows with ρ and stays below the D7 margin.

The verdict is decided by :data:`verify.checks.d9.CLAIM`; these tests only read it. The negative
control (``shared_structure``) runs in ``verify/tests/test_negative_controls.py``.

Statistical parts and seeds: a true claim may fail on up to ``alpha`` (default 1%) of seeds: its
three calibrated tests run at ``alpha/3`` each (Bonferroni, see :mod:`verify.checks.d9`). The test
below fixes seed 2 and allows no failure on it (the other-answers test uses the same seed).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics import lapack
from fastslow.numerics.toy.gated_predictor import (
    GatedToy,
    closed_form_margin,
    empirical_moments,
    min_slow_risk,
    population_moments,
    risk,
    risk_gradient,
    sample,
    stack_moments,
    train,
)
from fastslow.verify.checks import d9
from fastslow.verify.registry import CLAIMS, run_check

pytestmark = pytest.mark.claim("D9")

THOROUGH = {
    "seeds": 48,
    "n_grid": (128, 256, 512, 1024, 2048, 4096, 8192, 16384),
    "n_grad": 65536,
    "n_test": 16384,
}


def test_independent_blocks_keep_the_gate_closed(claim, thorough):
    result = claim.main(run_check("D9", THOROUGH if thorough else {}, seed=2))
    assert result.outcome == "holds", result.summary()


def test_the_false_alarm_rate_is_split_over_the_calibrated_tests():
    """Bonferroni: the three calibrated parts run at alpha/3, so a true claim fails on at most
    alpha of seeds, which is the failure rate the claim declares (at the default alpha)."""
    unit = CLAIMS["D9"]
    p = unit.resolve({})
    assert set(d9.CALIBRATED_TESTS) <= set(unit.conclusion)
    assert d9.per_test_level(p) * len(d9.CALIBRATED_TESTS) == pytest.approx(p["alpha"])
    assert unit.failure_rate == p["alpha"]
    assert d9.normal_quantile(0.05) == pytest.approx(1.959964, abs=1e-6)


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["D9"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """Other valid LAPACK answers (eigenvalue order, singular-vector signs) leave the verdict and
    the key figures unchanged (to 1e-12: D9 consumes only eigenvalue moduli and singular values)."""
    base = run_check("D9", {}, seed=2, control=control)
    for s in (1, 2):
        with lapack.other_valid_answers(seed=s):
            other = run_check("D9", {}, seed=2, control=control)
        assert other.outcome == base.outcome, (base.summary(), other.summary())
        for key in (
            "grad_g_at_0_z",
            "learned_gate_mean",
            "gate_rms_slope",
            "sweep_max_gate_over_margin",
            "margin_over_normG",
        ):
            assert abs(other.figures[key] - base.figures[key]) <= 1e-12, key


@given(
    P=st.integers(1, 6),
    N=st.integers(2, 10),
    tau=st.floats(0.2, 3.0),
    sigma=st.floats(0.2, 3.0),
    a=st.floats(-0.9, 0.9),
    c=st.floats(-2.0, 2.0),
    g=st.floats(-0.9, 0.9),
    w=st.floats(-3.0, 3.0, allow_subnormal=False),
    rho=st.floats(0.05, 0.95),
)
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
        x = sample(toy, 40000, rho, seed=9)
        emp, pop = empirical_moments(toy, x), population_moments(toy, rho)
        assert abs(risk(toy, emp, 0.4, 0.9) - risk(toy, pop, 0.4, 0.9)) < 0.02


def test_gate_growth_with_rho_is_a_property_of_the_parametrisation(claim):
    """Finding: the *risk* falls monotonically with ρ for every (a, c), and the learned gate stays
    below the margin, but the gate *amplitude* grows with ρ only when opening the gate does not
    fight the un-gated recurrence: with J = a = 0.3 and G = c = −1 (opening the gate lowers the
    pole a + g·c) the gate after 1000 steps rises and then falls with ρ."""

    rhos = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95)
    out = {}
    for a, c in ((0.0, 1.0), (0.3, -1.0)):
        toy = GatedToy(P=4, N=8, a=a, c=c)
        pops = [population_moments(toy, r) for r in rhos]
        res = train(toy, stack_moments(pops), steps=1000)
        change = np.array([risk(toy, p, g, w) - p.Q for p, g, w in zip(pops, res.g, res.w)])
        assert np.all(np.diff(change) < 0)  # the risk falls with rho
        assert np.all(np.abs(res.g) < closed_form_margin(toy))  # below the D7 margin
        assert np.all(res.stable)
        out[f"a={a},c={c}"] = np.round(res.g, 4).tolist()
    assert np.all(np.diff(out["a=0.0,c=1.0"]) > 0)
    assert not np.all(np.diff(out["a=0.3,c=-1.0"]) > 0)
    claim.figure("population_gate_by_rho_1000_steps", {"rhos": rhos, **out})
    claim.note(
        "finding: the learned gate grows with ρ for the default toy (J = 0, G = 1) but not "
        "for every parametrisation: with J = 0.3, G = −1 the gate (population risk, 1000 "
        f"GD steps) rises then falls with ρ ({out['a=0.3,c=-1.0']}); the risk falls with ρ "
        "and the gate stays below the margin in both"
    )
