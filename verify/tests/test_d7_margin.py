"""D7: the gate keeps the looped map contractive for |g| < m(J)/‖G‖, g_c ≥ m/‖G‖ (tight in the
scalar/normal case), the looped nonlinear map converges below g_c and not above.

The verdict is decided by :data:`verify.checks.d7.CLAIM`; these tests only read it. The negative
controls (γ = 0, and the finding that the autoregressive slow path leaves the spectrum unchanged,
g_c = ∞) run in ``verify/tests/test_negative_controls.py``. The scalar/normal closed forms and the random
contractive maps test :mod:`numerics.analysis.stability` directly.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fastslow.numerics.analysis.stability import (
    critical_gate,
    gate_spectral_radii,
    margin_certificate,
    spectral_radius,
    stability_margin,
)
from fastslow.theory.stability import normal_critical_gates, scalar_critical_gates
from fastslow.verify.checks.d7 import claim as d7_loop
from fastslow.verify.portability import assert_same_decision, under_other_answers
from fastslow.verify.registry import CLAIMS, run_check
from fastslow.verify.strategies import linear_loops
from fastslow.verify.systems import LinearLoop

pytestmark = pytest.mark.claim("D7")


def test_gate_inside_the_margin_keeps_the_looped_layer_contractive(claim):
    claim.holds({}, seed=0)


@pytest.mark.parametrize(
    "params",
    [{"mask": "causal"}, {"reference": "embedding", "norm": True}],
    ids=["causal", "embedding_norm"],
)
def test_causal_fast_mask_and_embedding_reference(claim, params):
    claim.holds(params, seed=1)


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["D7"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """Other valid eigenvalue orders and singular-vector bases (two seeds): same outcome, same
    decided parts, same key figures to relative 1e-9 (ρ is a maximum modulus, g_c a bisection to
    1e-12; ρ's variation over gates is compared only above rounding level, 1e-6)."""
    ref, others = under_other_answers("D7", control=control)
    for other in others:
        assert_same_decision(ref, other)
        for key in CLAIMS["D7"].key_figures + ("spectral_radius_J", "max_rho_inside_margin"):
            a, b = ref.figures[key], other.figures[key]
            if key == "rho_variation_over_wide_gates":
                assert abs(a - b) <= 1e-9 * max(1.0, abs(a)) or max(a, b) < 1e-6, (key, a, b)
            else:
                assert a == b or abs(a - b) <= 1e-9 * abs(a), (key, a, b)


def test_scalar_case_is_tight_against_the_closed_form(claim):
    _, _, _, _, f = scalar_critical_gates()
    worst = 0.0
    for a in (0.0, 0.25, 0.5, 0.9):
        J, G = a * np.eye(4), np.eye(4)
        gp, gm, bound = f(a)
        m = stability_margin(J)
        assert abs(m - (1 - a)) < 1e-12
        worst = max(
            worst,
            abs(critical_gate(J, G) - gp),
            abs(critical_gate(J, G, sign=-1) - gm),
            abs(critical_gate(J, G) - m / np.linalg.norm(G, 2)),
        )
    assert worst < 1e-10
    claim.figure("scalar_case_max_abs_error_vs_sympy", worst)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 8),
    rho=st.floats(0.05, 0.97),
    normal=st.booleans(),
)
def test_margin_bound_for_random_contractive_maps(seed, n, rho, normal):
    rng = np.random.default_rng(seed)
    if normal:  # real normal J: orthogonal similarity of a block-diagonal rotation-scaling
        lam = rng.uniform(0, rho, n) * np.exp(1j * rng.uniform(0, np.pi, n))
        Qo, _ = np.linalg.qr(rng.standard_normal((n, n)))
        J = Qo @ np.diag(lam) @ Qo.T
    else:
        A = rng.standard_normal((n, n))
        J = rho * A / spectral_radius(A)
    G = rng.standard_normal((n, n))
    m = stability_margin(J)
    cert = margin_certificate(J)
    assert abs(m - cert.margin) < 1e-8
    bound = m / np.linalg.norm(G, 2)
    gates = np.concatenate([[-0.999, 0.999], rng.uniform(-0.999, 0.999, 6)]) * bound
    assert gate_spectral_radii(J, G, gates).max() < 1.0
    assert critical_gate(J, G) >= bound * (1 - 1e-9)
    assert critical_gate(J, G, sign=-1) >= bound * (1 - 1e-9)
    if normal:
        assert abs(m - (1 - spectral_radius(J))) < 1e-9
        gp, gm, _ = normal_critical_gates().numeric(np.abs(lam), np.angle(lam))
        assert abs(critical_gate(J, np.eye(n)) - gp.min()) < 1e-9


_MODEL_EXAMPLES = 6 if settings.default.max_examples <= 25 else 60


@settings(max_examples=_MODEL_EXAMPLES)
@given(
    seed=st.integers(0, 2**16),
    mask=st.sampled_from(["causal", "block_bidirectional"]),
    d=st.integers(1, 3),
    P=st.integers(1, 3),
    N=st.integers(2, 3),
)
def test_model_instances(seed, mask, d, P, N):
    result = run_check("D7", {"T": N * P, "P": P, "d": d, "mask": mask}, seed=seed)
    assume(result.outcome != "outside-hypotheses")  # a few random draws are not contractive
    assert result.outcome == "holds", result.summary()


def test_seed_sweep(claim, thorough, check_sweep):
    """Several seeds and both contractive fast masks (many more under --thorough); draws whose
    reference is not contractive are outside the hypotheses and skipped."""
    seeds = range(12) if thorough else range(2)
    points = [
        dict(claim="D7", seed=s, mask=m) for s in seeds for m in ("causal", "block_bidirectional")
    ]
    inside = [r for r in check_sweep(points) if r.outcome != "outside-hypotheses"]
    assert inside, "every draw of the sweep was outside the hypotheses"
    for result in inside:
        assert claim.main(result).outcome == "holds", result.summary()
    ratios = [r.figures["critical_gate"] / r.figures["bound_m_over_normG"] for r in inside]
    claim.figure("gc_over_bound_range_seed_sweep", [min(ratios), max(ratios)])


@pytest.mark.parametrize(
    "params, name",
    [
        ({"below": 1.0}, "below"),  # a fraction of g_c: [0, 1)
        ({"above": 1.0}, "above"),  # a multiple of g_c: (1, 100]
        ({"norm": True}, "norm"),  # reference='origin' needs norm=False
        ({"T": 10, "P": 4}, "P"),
        ({"T": 32, "d": 4}, "T"),  # dense Jacobians: T·d ≤ 96
    ],
)
def test_bad_parameters_are_rejected_before_any_work(params, name):
    with pytest.raises(ValueError, match=name):
        CLAIMS["D7"].resolve(params)


# --------------------------------------------------------------------------- your own loop


def _non_normal_loop(rho: float, seed: int = 11, n: int = 6) -> LinearLoop:
    """J = S diag(λ) S⁻¹ with a strongly non-normal S, spectral radius ``rho``; G standard normal."""
    rng = np.random.default_rng(seed)
    S = np.eye(n) + 2.0 * np.triu(rng.standard_normal((n, n)), 1)
    lam = rho * np.array([1.0, -0.875, 0.625, 0.375, -0.25, 0.125])[:n]
    return LinearLoop(S @ np.diag(lam) @ np.linalg.inv(S), rng.standard_normal((n, n)))


@pytest.mark.claim("D7")
def test_a_non_normal_user_loop_holds_with_a_margin_far_below_one_minus_rho(claim):
    """The bound uses m(J), not 1 − ρ(J): for a non-normal J the margin is much smaller."""
    v = claim.main(run_check("D7", system=_non_normal_loop(0.8)))
    assert v.outcome == "holds", v.summary()
    assert v.figures["margin"] < 0.1 * v.figures["one_minus_rho"]
    assert v.system["kind"] == "LinearLoop"


@pytest.mark.claim("D7")
def test_a_user_loop_with_spectral_radius_above_one_is_outside_the_hypotheses():
    v = run_check("D7", system=_non_normal_loop(1.2))
    assert v.outcome == "outside-hypotheses" and v.violated == ["reference_contractive"]


@pytest.mark.claim("D7")
def test_a_user_gate_that_cannot_move_the_spectrum_is_outside_the_hypotheses():
    """J lower triangular and G strictly lower triangular: J + gG keeps J's diagonal, so ρ is the
    same for every g and the critical gate is infinite (the bound holds only vacuously)."""
    rng = np.random.default_rng(2)
    J = np.tril(rng.standard_normal((4, 4)), -1) + np.diag([0.5, -0.3, 0.2, 0.1])
    v = run_check("D7", system=LinearLoop(J, np.tril(rng.standard_normal((4, 4)), -1)))
    assert v.outcome == "outside-hypotheses" and v.violated == ["gate_moves_spectrum"]
    assert not v.conclusion["critical_gate_finite"].holds


@settings(max_examples=8, deadline=None)
@given(linear_loops(spectral_radius=0.9))
def test_d7_holds_or_names_the_unmoved_spectrum_on_random_contractive_loops(loop):
    v = run_check("D7", system=loop)
    assert v.outcome in ("holds", "outside-hypotheses"), v.summary()
    if v.outcome == "outside-hypotheses":
        assert v.violated == ["gate_moves_spectrum"]


def test_a_bound_attained_exactly_holds():
    """``J = 0``, ``G = 11ᵀ`` (3×3): ``ρ(gG) = 3|g|``, so ``g_c = m/‖G‖₂ = 1/3`` exactly; the
    bisection lands 3.9e-13 below it, within its own half-bracket: the bound holds."""
    v = run_check("D7", system=LinearLoop(np.zeros((3, 3)), np.ones((3, 3))))
    assert v.outcome == "holds", v.summary()
    assert v.figures["critical_gate"] == pytest.approx(1 / 3, rel=1e-11)
    assert v.figures["critical_gate_comparison_slack"] < 1e-11


def test_the_loop_budget_follows_the_rate_only_for_a_contraction():
    """Iterations a loop gets: ``n_iter`` for a rate ρ ≥ 1 or ρ ≤ 0 (no contraction to count on),
    else enough for the rate to shrink the start to the step tolerance three times over, between
    ``n_iter`` and the cap; the tiniest start does not make a diverging loop run longer."""
    p = {"n_iter": 5, "init_size": 1e-13}
    assert d7_loop.loop_budget(1.5, p) == 5 and d7_loop.loop_budget(1.0, p) == 5
    assert d7_loop.loop_budget(0.0, {**p, "init_size": 1e-2}) == 5
    need = 3.0 * np.log(d7_loop.LOOP_STEP_TOL / 1e-2) / np.log(0.9)
    expected = int(min(max(5, need), d7_loop.LOOP_MAX_ITER))
    assert d7_loop.loop_budget(0.9, {**p, "init_size": 1e-2}) == expected > 5
