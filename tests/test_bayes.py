"""numerics.toy.bayes: exact filters against brute-force Bayes, laws of the block mean, validation."""

import itertools

import numpy as np
import pytest
from scipy import integrate
from scipy.special import logsumexp

from fastslow.numerics.toy.bayes import (
    hmm_future_logpdf,
    hmm_pooled_filter,
    hmm_predictive_logpdf,
    hmm_token_filter,
    kalman_future_logpdf,
    kalman_pooled_filter,
    kalman_predictive_logpdf,
    kalman_token_filter,
    mean_loglik,
    token_loglik,
)
from fastslow.numerics.toy.data import (
    Emission,
    gaussian_ar1_blocks,
    hmm_blocks,
    running_sums,
    sticky_transition,
)

CONTROLS = {
    "gaussian_scale": Emission.gaussian_scale([0.0, 0.5], [0.5, 2.0]),
    "cauchy": Emission.cauchy([-1.0, 1.0], 0.7),
    "mixture": Emission.mixture([0.0, 1.0], [-2.0, 0.5, 2.0], [0.2, 0.3, 0.5], [0.5, 0.3, 0.8]),
}
EXPONENTIAL = {
    "gaussian": Emission.gaussian([-1.0, 1.5], 0.8),
    "poisson": Emission.poisson([1.0, 4.0]),
    "bernoulli": Emission.bernoulli([0.2, 0.7]),
}


def test_kalman_token_filter_equals_gaussian_conditioning():
    P, N, rho, tau, sigma, mu = 2, 3, 0.6, 1.3, 0.7, 0.4
    x = gaussian_ar1_blocks(3, N, P, rho=rho, tau=tau, sigma=sigma, mu=mu, seed=2).x
    T = N * P
    blk = np.arange(T) // P
    cov = tau**2 * rho ** np.abs(blk[:, None] - blk[None, :]) + sigma**2 * np.eye(T)
    m, var = kalman_token_filter(x, P, rho=rho, tau=tau, sigma=sigma, mu=mu)
    lp = kalman_predictive_logpdf(x, m, var, sigma=sigma)
    for i in range(x.shape[0]):
        for t in range(T):
            S11, S12 = cov[t, t], cov[t, :t]
            K = np.linalg.solve(cov[:t, :t], S12) if t else np.zeros(0)
            mean = mu + K @ (x[i, :t] - mu)
            v = S11 - K @ S12
            want = -0.5 * (np.log(2 * np.pi * v) + (x[i, t] - mean) ** 2 / v)
            assert abs(lp[i, t] - want) < 1e-12


def test_hmm_token_filter_equals_path_enumeration():
    P, N = 2, 3
    A = np.array([[0.8, 0.2], [0.4, 0.6]])
    init = np.array([0.3, 0.7])
    for em in list(EXPONENTIAL.values()) + list(CONTROLS.values()):
        x = hmm_blocks(2, N, P, em, A, initial=init, seed=5).x
        w = hmm_token_filter(x, P, em, A, initial=init)
        lp = hmm_predictive_logpdf(em, w, x)
        ll = token_loglik(em, x)  # (n, T, K)
        for i in range(2):
            for t in range(N * P):
                # log p(x_{≤t}) − log p(x_{<t}) by summing over all block-state paths
                def joint(upto):
                    tot = []
                    for path in itertools.product(range(2), repeat=N):
                        lw = np.log(init[path[0]]) + sum(
                            np.log(A[path[b - 1], path[b]]) for b in range(1, N)
                        )
                        lw += sum(ll[i, s, path[s // P]] for s in range(upto))
                        tot.append(lw)
                    return logsumexp(tot)

                assert abs(lp[i, t] - (joint(t + 1) - joint(t))) < 1e-12


@pytest.mark.parametrize("name", list(CONTROLS) + ["gaussian"])
def test_mean_law_integrates_to_one_and_matches_monte_carlo(name):
    em = CONTROLS.get(name) or EXPONENTIAL[name]
    rng = np.random.default_rng(0)
    for k in (1, 3):
        for z in range(2):
            dens = lambda y: float(np.exp(mean_loglik(em, np.array([k * y]), k)[0, z]))
            total = integrate.quad(dens, -np.inf, np.inf, limit=400)[0]  # density of the mean
            assert abs(total - 1.0) < 1e-6, (name, k, z, total)
            # Monte Carlo: P(mean ≤ q) for the sampled means vs the integrated density
            means = em.sample(rng, np.full(20000, z), k).mean(axis=1)
            q = float(np.median(means))
            cdf = integrate.quad(dens, -np.inf, q, limit=400)[0]
            assert abs(cdf - 0.5) < 0.015, (name, k, z, cdf)


def test_discrete_sum_laws_are_normalised():
    for name in ("poisson", "bernoulli"):
        em = EXPONENTIAL[name]
        for k in (1, 4):
            top = k if name == "bernoulli" else 80
            s = np.arange(top + 1, dtype=float)
            p = np.exp(mean_loglik(em, s, k)).sum(axis=0)
            assert np.allclose(p, 1.0, atol=1e-12)


def test_fisher_neyman_identity_and_its_failure_for_controls():
    rng = np.random.default_rng(1)
    for name, em in {**EXPONENTIAL, **CONTROLS}.items():
        x = em.sample(rng, np.zeros(50, dtype=np.int64), 4)  # 50 blocks of 4 tokens
        diff = token_loglik(em, x).sum(axis=1) - mean_loglik(em, x.sum(axis=1), 4)  # (50, K)
        spread = np.ptp(diff, axis=1).max()  # z-dependence of h
        if name in EXPONENTIAL:
            assert spread < 1e-10, name
        else:
            assert spread > 1e-2, name


def test_pooled_filters_agree_for_exponential_families_and_not_for_controls():
    A = sticky_transition(2, 0.7)
    for name, em in {**EXPONENTIAL, **CONTROLS}.items():
        x = hmm_blocks(30, 4, 3, em, A, seed=8).x
        w1 = hmm_token_filter(x, 3, em, A)
        w2 = hmm_pooled_filter(running_sums(x, 3), 3, em, A)
        d = np.abs(w1 - w2).max()
        assert (d < 1e-12) if name in EXPONENTIAL else (d > 1e-2), name
    x = gaussian_ar1_blocks(30, 4, 3, rho=-0.5, seed=1).x
    m1, v1 = kalman_token_filter(x, 3, rho=-0.5)
    m2, v2 = kalman_pooled_filter(running_sums(x, 3), 3, rho=-0.5)
    assert np.abs(m1 - m2).max() < 1e-12 and np.abs(v1 - v2).max() < 1e-12


def test_future_tables_diagonal_is_next_token_and_poisson_predictive_normalises():
    A = sticky_transition(2, 0.7)
    em = EXPONENTIAL["poisson"]
    x = hmm_blocks(3, 3, 2, em, A, seed=1).x
    w = hmm_token_filter(x, 2, em, A)
    F = hmm_future_logpdf(em, w, x, 2, A)
    assert np.allclose(np.diagonal(F, axis1=1, axis2=2), hmm_predictive_logpdf(em, w, x))
    assert np.all(np.isneginf(F[:, 3, :3]))
    grid = np.arange(80.0)
    tot = np.exp(hmm_predictive_logpdf(em, np.broadcast_to(w[0, 4], (80, 2)), grid)).sum()
    assert abs(tot - 1) < 1e-12
    xg = gaussian_ar1_blocks(2, 3, 2, rho=0.5, seed=1).x
    m, v = kalman_token_filter(xg, 2, rho=0.5)
    Fg = kalman_future_logpdf(xg, m, v, 2, rho=0.5)
    assert np.allclose(np.diagonal(Fg, axis1=1, axis2=2), kalman_predictive_logpdf(xg, m, v))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: kalman_token_filter(np.zeros((2, 5)), 2, rho=0.1), "divide"),
        (lambda: kalman_token_filter(np.zeros((2, 4)), 2, rho=1.0), "rho"),
        (lambda: kalman_pooled_filter(np.zeros((2, 2, 4)), 2, rho=0.1), "P\\+1"),
        (lambda: token_loglik(EXPONENTIAL["poisson"], [1.5]), "Poisson"),
        (lambda: token_loglik(EXPONENTIAL["bernoulli"], [2.0]), "Bernoulli"),
        (lambda: mean_loglik(EXPONENTIAL["bernoulli"], [5.0], 4), "integers in range"),
        (lambda: mean_loglik(EXPONENTIAL["poisson"], [1.0], -1), "non-negative"),
        (
            lambda: hmm_token_filter(np.zeros((1, 4)), 2, EXPONENTIAL["poisson"], np.eye(3)),
            "states",
        ),
        (
            lambda: hmm_predictive_logpdf(EXPONENTIAL["poisson"], np.ones((1, 3)), np.zeros(1)),
            "shape",
        ),
        (lambda: token_loglik("poisson", [1.0]), "Emission"),
    ],
)
def test_bad_arguments_raise(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
