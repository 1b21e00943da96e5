"""D8: for exponential-family emissions the Bayes predictive from block sums equals the one from all
tokens (1e-10), for the next and every future token, and pooling costs no log-loss.

The verdict is decided by :data:`verify.checks.d8.CLAIM`; these tests only read it. The negative
controls (latent variance, Cauchy, mixture: the gap's interval excludes 0; their allowed miss rate is
stated in :mod:`verify.checks.d8`) run in ``verify/tests/test_negative_controls.py``. The property tests
below exercise the filters of :mod:`numerics.toy.bayes` and the symbolic factorisation directly.
"""

from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.toy.bayes import token_loglik
from fastslow.numerics.toy.data import Emission, gaussian_ar1_blocks, hmm_blocks, sticky_transition
from fastslow.theory.exponential_family import FAMILIES, factorisation, likelihood_ratio
from fastslow.verify.checks import d8
from fastslow.verify.checks.d8 import compare_ar1, compare_chain, default_emission
from fastslow.verify.portability import assert_portable
from fastslow.verify.registry import CLAIMS, run_check

pytestmark = pytest.mark.claim("D8")

EXP = ("gaussian_ar1", "gaussian", "poisson", "bernoulli")


@pytest.mark.parametrize("family", EXP)
def test_block_sums_are_sufficient_for_exponential_families(claim, thorough, family):
    n_seq = 20000 if thorough else 2000
    claim.holds({"family": family, "n_seq": n_seq}, seed=3)


def test_independent_blocks_are_a_special_case(claim):
    # stay = 0: i.i.d. block states; rho = 0: independent AR(1) block means
    for params in ({"family": "poisson", "stay": 0.0}, {"family": "gaussian_ar1", "rho": 0.0}):
        result = claim.main(run_check("D8", dict(params, n_seq=500), seed=5))
        assert result.outcome == "holds", result.summary()


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["D8"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """D8 calls no eigen- or singular-value decomposition (its filters are forward recursions):
    inside other valid LAPACK answers the verdict and every figure are identical (two seeds)."""
    assert_portable(
        "D8", {"n_seq": 300} if control is None else {"n_seq": 3000}, 3, control=control
    )


SEEDS = st.integers(0, 2**16)


@st.composite
def random_chain_designs(draw):
    """An exponential-family emission with random parameters on ``K ≤ 4`` latent states and a
    generic row-stochastic transition matrix (half sticky, half random)."""
    family = draw(st.sampled_from(["gaussian", "poisson", "bernoulli"]))
    K, stay, seed = draw(st.integers(1, 4)), draw(st.floats(0.0, 0.99)), draw(SEEDS)
    rng = np.random.default_rng(seed)
    if family == "gaussian":
        em = Emission.gaussian(rng.normal(0, 2, K), draw(st.floats(0.2, 3.0)))
    elif family == "poisson":
        em = Emission.poisson(rng.uniform(0.1, 8.0, K))
    else:
        em = Emission.bernoulli(rng.uniform(0.03, 0.97, K))
    A = sticky_transition(K, stay) if K > 1 else np.ones((1, 1))
    return em, 0.5 * A + 0.5 * rng.dirichlet(np.ones(K), size=K), seed


@given(design=random_chain_designs(), P=st.integers(1, 6), N=st.integers(1, 5))
def test_sufficiency_property_over_random_chains(design, P, N):
    em, A, seed = design
    x = hmm_blocks(40, N, P, em, A, seed=seed).x
    res = compare_chain(em, A, x, P, n_future=8)
    diff = max(
        np.abs(res["lp_full"] - res["lp_pool"]).max(),
        res["max_abs_posterior_diff"],
        res["max_abs_future_logpdf_diff"],
        res["max_abs_theory_posterior_diff"],
    )
    assert diff <= 1e-10


@given(
    P=st.integers(1, 8),
    N=st.integers(1, 6),
    rho=st.floats(-0.99, 0.99),
    tau=st.floats(0.1, 5.0),
    sigma=st.floats(0.1, 5.0),
    seed=SEEDS,
)
def test_sufficiency_property_kalman(P, N, rho, tau, sigma, seed):
    x = gaussian_ar1_blocks(40, N, P, rho=rho, tau=tau, sigma=sigma, seed=seed).x
    res = compare_ar1(x, P, rho, tau, sigma, n_future=8)
    assert np.abs(res["lp_full"] - res["lp_pool"]).max() <= 1e-10
    assert res["max_abs_posterior_diff"] <= 1e-10 * max(1.0, tau * tau)
    assert res["max_abs_future_logpdf_diff"] <= 1e-10


def test_symbolic_fisher_neyman_factorisation(claim):
    for fam in FAMILIES:
        f = factorisation(fam, 4)
        assert f["residual"] == 0, fam
        assert f["theta"] not in f["log_h"].free_symbols  # h(x) carries no parameter
        assert f["log_g"].free_symbols <= {f["S"], f["theta"], sp.Symbol("sigma", positive=True)}
        assert likelihood_ratio(fam, 4)["d_dtheta"] == 0, fam  # ratio free of the parameter
    # control: latent variance; two samples with the same sum, different sums of squares
    lr = likelihood_ratio("gaussian_scale", 4)
    point = dict(zip(lr["xs"] + lr["ys"], [0, 1, 2, 3, 3, 3, 0]))  # Σx² = 14 vs 18
    point.update({lr["theta"]: 1, sp.Symbol("m", real=True): 0})
    val = float(lr["d_dtheta"].subs(point))
    assert abs(val) > 1.0
    claim.figure("control_gaussian_scale_dlogratio_ds", val)


def test_symbolic_factors_match_numeric_token_likelihoods():
    rng = np.random.default_rng(0)
    cases = {
        "gaussian": (Emission.gaussian([0.7], 1.3), rng.normal(0.7, 1.3, 4), 0.7),
        "poisson": (Emission.poisson([2.5]), rng.poisson(2.5, 4).astype(float), 2.5),
        "bernoulli": (Emission.bernoulli([0.3]), np.array([0.0, 1.0, 1.0, 0.0]), 0.3),
    }
    for fam, (em, x, theta) in cases.items():
        f = factorisation(fam, 4)
        subs = dict(zip(f["xs"], [sp.nsimplify(t) for t in x]))
        subs[f["theta"]] = sp.nsimplify(theta)
        subs[sp.Symbol("sigma", positive=True)] = sp.nsimplify(1.3)
        sym = float((f["log_h"] + f["log_g"].subs(f["S"], sum(f["xs"]))).subs(subs).evalf(30))
        num = float(token_loglik(em, x).sum())
        assert abs(sym - num) <= 1e-12 * max(1.0, abs(num)), (fam, sym, num)


@pytest.mark.parametrize(
    "params, name",
    [
        ({"K": 1}, "K"),
        ({"n_future": 0}, "n_future"),
        ({"n_seq": 1}, "n_seq"),
        ({"family": "laplace"}, "family"),
        ({"stay": 1.0}, "stay"),
        ({"rho": -1.0}, "rho"),
    ],
)
def test_bad_parameters_are_rejected_before_any_work(params, name):
    with pytest.raises(ValueError, match=name):
        CLAIMS["D8"].resolve(params)


def test_the_default_emissions_states_are_symmetric_about_the_familys_centre():
    """Three states at ``u = −1, 0, 1``: the documented parameters of each family."""
    tau, sigma = 0.5, 2.0
    em = default_emission("gaussian", 3, tau, sigma)
    np.testing.assert_allclose(em["means"], [-0.75, 0.0, 0.75], rtol=0, atol=1e-15)
    assert em["sigma"].tolist() == [2.0]
    np.testing.assert_allclose(
        default_emission("poisson", 3)["rates"], np.exp([0.0, 1.0, 2.0]), rtol=1e-15
    )
    np.testing.assert_allclose(
        default_emission("bernoulli", 3)["probs"], [0.15, 0.5, 0.85], rtol=1e-15
    )
    assert default_emission("gaussian", 1)["means"].tolist() == [0.0]


def test_token_values_are_at_most_n_max_distinct_sorted_observed_values():
    """The token values the symbolic oracle is evaluated at: every distinct observed value when
    there are at most ``n_max``, else ``n_max`` of them spread over the sorted range (first and
    last included); never a repeated or unobserved value."""
    x = np.array([[3.0, 1.0, 3.0], [2.0, 5.0, 1.0]])
    fake = SimpleNamespace(data=SimpleNamespace(x=x))
    assert d8.Instance.token_values(fake, n_max=10).tolist() == [1.0, 2.0, 3.0, 5.0]
    many = SimpleNamespace(data=SimpleNamespace(x=np.arange(1000.0)))
    vals = d8.Instance.token_values(many, n_max=7)
    assert vals.size == 7 and np.all(np.diff(vals) > 0) and vals[0] == 0 and vals[-1] == 999
