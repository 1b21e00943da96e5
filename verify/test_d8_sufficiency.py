"""D8: for exponential-family emissions the Bayes predictive from block sums equals the one from all
tokens (1e-10); for the negative controls pooling costs log-loss (interval excluding 0)."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st

from numerics.bayes import token_loglik
from numerics.data import Emission, gaussian_ar1_blocks, hmm_blocks, sticky_transition
from theory.exponential_family import FAMILIES, factorisation, likelihood_ratio
from verify.checks import run_check
from verify.checks.d8 import compare_ar1, compare_chain

pytestmark = pytest.mark.claim("D8")

EXP = ("gaussian_ar1", "gaussian", "poisson", "bernoulli")
CONTROLS = ("gaussian_scale", "cauchy", "mixture")
DIFF_KEYS = ("max_abs_next_token_logpdf_diff", "max_abs_posterior_diff", "max_abs_future_logpdf_diff",
             "max_abs_theory_posterior_diff")


def test_block_sums_are_sufficient_for_exponential_families(claim, thorough):
    n_seq = 20000 if thorough else 2000
    summary = {}
    for fam in EXP:
        params = {"family": fam, "n_seq": n_seq}
        result = run_check("D8", params, seed=3)
        if fam == "poisson":
            claim.main(result)
        f = result.figures
        tol = result.tolerance["max_abs_diff"]
        assert result.hypotheses_hold
        for key in DIFF_KEYS:
            if key in f:
                assert f[key] / tol <= 1.0, (fam, key, f[key])
        assert f["future_pairs_compared"] > 0
        assert abs(f["gap_mean"]) / tol <= 1.0
        assert result.holds, result.summary()
        summary[fam] = {"max_diff": max(f[k] for k in DIFF_KEYS if k in f),
                        "gap_mean": f["gap_mean"], "gap_ci": f["gap_ci"]}
    claim.figure("exponential_family_max_abs_diff", summary)


def test_negative_controls_pooling_loses_log_loss(claim, thorough):
    n_seq = 20000 if thorough else 3000
    summary = {}
    for fam in CONTROLS:
        result = claim.negative(run_check("D8", {"family": fam, "n_seq": n_seq}, seed=3))
        f = result.figures
        assert not result.hypotheses_hold
        assert not result.holds
        lo, hi = f["gap_ci"]
        assert lo > 0, (fam, f["gap_ci"])               # strictly higher expected log-loss
        assert f["logloss_pooled"] > f["logloss_full"]
        summary[fam] = {"gap_mean": f["gap_mean"], "gap_ci": f["gap_ci"]}
    claim.figure("control_logloss_gap_nats_per_token", summary)
    claim.note("controls: latent variance N(0, s_z²), Cauchy (Student-t ν=1) with latent location, "
               "two-component Gaussian mixture with latent location; pooled predictor exact")


def test_independent_blocks_are_a_special_case():
    # stay = 0: i.i.d. block states; rho = 0: independent AR(1) block means
    for params in ({"family": "poisson", "stay": 0.0}, {"family": "gaussian_ar1", "rho": 0.0}):
        result = run_check("D8", dict(params, n_seq=500), seed=5)
        assert result.holds, result.summary()


@given(family=st.sampled_from(["gaussian", "poisson", "bernoulli"]), P=st.integers(1, 6),
       N=st.integers(1, 5), K=st.integers(1, 4), stay=st.floats(0.0, 0.99),
       seed=st.integers(0, 2**16), data=st.data())
def test_sufficiency_property_over_random_chains(family, P, N, K, stay, seed, data):
    rng = np.random.default_rng(seed)
    if family == "gaussian":
        em = Emission.gaussian(rng.normal(0, 2, K), data.draw(st.floats(0.2, 3.0)))
    elif family == "poisson":
        em = Emission.poisson(rng.uniform(0.1, 8.0, K))
    else:
        em = Emission.bernoulli(rng.uniform(0.03, 0.97, K))
    A = sticky_transition(K, stay) if K > 1 else np.ones((1, 1))
    A = 0.5 * A + 0.5 * rng.dirichlet(np.ones(K), size=K)   # a generic row-stochastic matrix
    x = hmm_blocks(40, N, P, em, A, seed=seed).x
    res = compare_chain(em, A, x, P, n_future=8)
    diff = max(np.abs(res["lp_full"] - res["lp_pool"]).max(), res["max_abs_posterior_diff"],
               res["max_abs_future_logpdf_diff"], res["max_abs_theory_posterior_diff"])
    assert diff <= 1e-10


@given(P=st.integers(1, 8), N=st.integers(1, 6), rho=st.floats(-0.99, 0.99),
       tau=st.floats(0.1, 5.0), sigma=st.floats(0.1, 5.0), seed=st.integers(0, 2**16))
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
        assert f["theta"] not in f["log_h"].free_symbols            # h(x) carries no parameter
        assert f["log_g"].free_symbols <= {f["S"], f["theta"], sp.Symbol("sigma", positive=True)}
        assert likelihood_ratio(fam, 4)["d_dtheta"] == 0, fam        # ratio free of the parameter
    # control: latent variance; two samples with the same sum, different sums of squares
    lr = likelihood_ratio("gaussian_scale", 4)
    point = dict(zip(lr["xs"] + lr["ys"], [0, 1, 2, 3, 3, 3, 0]))  # Σx² = 14 vs 18
    point.update({lr["theta"]: 1, sp.Symbol("m", real=True): 0})
    val = float(lr["d_dtheta"].subs(point))
    assert abs(val) > 1.0
    claim.figure("control_gaussian_scale_dlogratio_ds", val)


def test_symbolic_factors_match_numeric_token_likelihoods():
    rng = np.random.default_rng(0)
    cases = {"gaussian": (Emission.gaussian([0.7], 1.3), rng.normal(0.7, 1.3, 4), 0.7),
             "poisson": (Emission.poisson([2.5]), rng.poisson(2.5, 4).astype(float), 2.5),
             "bernoulli": (Emission.bernoulli([0.3]), np.array([0.0, 1.0, 1.0, 0.0]), 0.3)}
    for fam, (em, x, theta) in cases.items():
        f = factorisation(fam, 4)
        subs = dict(zip(f["xs"], [sp.nsimplify(t) for t in x]))
        subs[f["theta"]] = sp.nsimplify(theta)
        subs[sp.Symbol("sigma", positive=True)] = sp.nsimplify(1.3)
        sym = float((f["log_h"] + f["log_g"].subs(f["S"], sum(f["xs"]))).subs(subs).evalf(30))
        num = float(token_loglik(em, x).sum())
        assert abs(sym - num) <= 1e-12 * max(1.0, abs(num)), (fam, sym, num)
