"""numerics.toy.data: block-sequence generators (shapes, seeding, laws, argument validation)."""

import numpy as np
import pytest

from fastslow.numerics.toy.data import (
    CONTROL_FAMILIES,
    EXPONENTIAL_FAMILIES,
    Emission,
    block_sums,
    gaussian_ar1_blocks,
    hmm_blocks,
    independent_transition,
    running_sums,
    stationary_distribution,
    sticky_transition,
)

EMISSIONS = {
    "gaussian": Emission.gaussian([-1.0, 2.0], 0.5),
    "poisson": Emission.poisson([1.0, 4.0]),
    "bernoulli": Emission.bernoulli([0.2, 0.7]),
    "gaussian_scale": Emission.gaussian_scale([0.0, 1.0], [0.5, 2.0]),
    "cauchy": Emission.cauchy([-1.0, 1.0], 0.3),
    "mixture": Emission.mixture([0.0, 1.0], [-2.0, 2.0], [0.3, 0.7], [0.5, 0.5]),
}


def test_families_are_partitioned():
    assert set(EMISSIONS) == set(EXPONENTIAL_FAMILIES) | set(CONTROL_FAMILIES)
    assert all(EMISSIONS[f].exponential_family for f in EXPONENTIAL_FAMILIES)
    assert not any(EMISSIONS[f].exponential_family for f in CONTROL_FAMILIES)


def test_shapes_and_seeding():
    d = gaussian_ar1_blocks(5, 3, 4, rho=0.5, seed=1)
    assert d.x.shape == (5, 12) and d.latent.shape == (5, 3) and d.blocks.shape == (5, 3, 4)
    assert np.array_equal(d.x, gaussian_ar1_blocks(5, 3, 4, rho=0.5, seed=1).x)
    assert not np.array_equal(d.x, gaussian_ar1_blocks(5, 3, 4, rho=0.5, seed=2).x)
    ss = np.random.SeedSequence(7)
    a = hmm_blocks(4, 3, 2, EMISSIONS["poisson"], sticky_transition(2, 0.5), seed=ss)
    b = hmm_blocks(
        4, 3, 2, EMISSIONS["poisson"], sticky_transition(2, 0.5), seed=np.random.SeedSequence(7)
    )
    assert np.array_equal(a.x, b.x) and a.latent.dtype.kind == "i"


def test_ar1_moments():
    rho, tau, sigma = 0.7, 1.5, 0.5
    d = gaussian_ar1_blocks(40000, 4, 3, rho=rho, tau=tau, sigma=sigma, mu=2.0, seed=3)
    eta = d.latent
    assert abs(eta.mean() - 2.0) < 0.03
    assert abs(eta[:, 3].var() / tau**2 - 1) < 0.03
    c = np.corrcoef(eta[:, 1], eta[:, 2])[0, 1]
    assert abs(c - rho) < 0.02
    resid = d.blocks - eta[:, :, None]
    assert abs(resid.std() - sigma) < 0.01


def test_hmm_chain_and_emissions():
    A = np.array([[0.9, 0.1], [0.3, 0.7]])
    pi = stationary_distribution(A)
    assert np.allclose(pi @ A, pi) and np.allclose(pi, [0.75, 0.25])
    for fam, em in EMISSIONS.items():
        d = hmm_blocks(20000, 3, 5, em, A, seed=4)
        z = d.latent
        assert abs((z[:, 0] == 0).mean() - 0.75) < 0.02, fam
        stay0 = ((z[:, 1] == 0) & (z[:, 0] == 0)).sum() / (z[:, 0] == 0).sum()
        assert abs(stay0 - 0.9) < 0.02, fam
        blocks = d.blocks
        if fam != "cauchy":
            mean0 = blocks[z == 0].mean()
            want = {
                "gaussian": -1.0,
                "poisson": 1.0,
                "bernoulli": 0.2,
                "gaussian_scale": 0.0,
                "mixture": 0.0 + 0.3 * -2.0 + 0.7 * 2.0,
            }[fam]
            assert abs(mean0 - want) < 0.05, fam
        else:
            assert abs(np.median(blocks[z == 1]) - 1.0) < 0.02
    bern = hmm_blocks(100, 2, 3, EMISSIONS["bernoulli"], A, seed=1).x
    assert set(np.unique(bern)) <= {0.0, 1.0}


def test_transitions():
    assert np.allclose(independent_transition([0.2, 0.8]), [[0.2, 0.8], [0.2, 0.8]])
    S = sticky_transition(3, 0.6)
    assert np.allclose(S.sum(axis=1), 1) and np.isclose(S[0, 0], 0.6 + 0.4 / 3)


def test_block_and_running_sums():
    x = np.arange(12.0).reshape(2, 6)
    assert np.array_equal(block_sums(x, 3), [[3, 12], [21, 30]])
    rs = running_sums(x, 3)
    assert rs.shape == (2, 2, 4)
    assert np.array_equal(rs[0, 1], [0, 3, 7, 12])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gaussian_ar1_blocks(0, 2, 2, rho=0.1), "n_seq"),
        (lambda: gaussian_ar1_blocks(2, 2, 2.5, rho=0.1), "P"),
        (lambda: gaussian_ar1_blocks(2, 2, 2, rho=1.0), "rho"),
        (lambda: gaussian_ar1_blocks(2, 2, 2, rho=-1.2), "rho"),
        (lambda: gaussian_ar1_blocks(2, 2, 2, rho=0.1, tau=-1.0), "tau"),
        (lambda: gaussian_ar1_blocks(2, 2, 2, rho=0.1, sigma=0.0), "sigma"),
        (lambda: gaussian_ar1_blocks(2, 2, 2, rho=0.1, seed=-1), "seed"),
        (
            lambda: hmm_blocks(2, 2, 2, EMISSIONS["poisson"], [[0.5, 0.6], [0.5, 0.5]]),
            "row-stochastic",
        ),
        (lambda: hmm_blocks(2, 2, 2, EMISSIONS["poisson"], [[1.5, -0.5], [0.5, 0.5]]), "negative"),
        (lambda: hmm_blocks(2, 2, 2, EMISSIONS["poisson"], [[1.0]]), "states"),
        (lambda: hmm_blocks(2, 2, 2, EMISSIONS["poisson"], [[1.0, 0.0]]), "square"),
        (
            lambda: hmm_blocks(2, 2, 2, EMISSIONS["poisson"], np.eye(2), initial=[0.5, 0.6]),
            "initial",
        ),
        (lambda: hmm_blocks(2, 2, 2, "poisson", np.eye(2)), "Emission"),
        (lambda: Emission.poisson([1.0, 0.0]), "rates"),
        (lambda: Emission.bernoulli([0.0, 0.5]), "probs"),
        (lambda: Emission.bernoulli([0.5, 1.0]), "probs"),
        (lambda: Emission.gaussian([0.0], sigma=-1.0), "sigma"),
        (lambda: Emission.gaussian_scale([0.0, 1.0], [1.0, -1.0]), "scales"),
        (lambda: Emission.gaussian_scale([0.0, 1.0], [1.0]), "same length"),
        (lambda: Emission.mixture([0.0], [-1, 1], [0.5, 0.6], [1, 1]), "sum to 1"),
        (lambda: Emission.gaussian([np.nan]), "finite"),
        (lambda: Emission.gaussian([]), "at least one"),
        (lambda: sticky_transition(2, 1.0), "stay"),
        (lambda: block_sums(np.zeros((2, 5)), 2), "divide"),
    ],
)
def test_bad_arguments_raise(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
