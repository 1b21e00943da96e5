"""Unit and property tests of the softmax MLP (numerics.toy.variational, claim F3)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.toy import variational


def _problem(seed, B=7, n=3):
    rng = np.random.default_rng(seed)
    Y = rng.uniform(-1, 1, B)
    P = rng.dirichlet(np.ones(n), B)
    P[0] = np.eye(n)[0]  # zeros in the target are allowed
    return Y, P


@given(width=st.integers(1, 6), n=st.integers(2, 4), seed=st.integers(0, 2**16))
def test_gradient_matches_central_differences(width, n, seed):
    Y, P = _problem(seed, n=n)
    theta = variational.init_mlp(width, n, seed)
    _, g = variational.kl_loss_and_grad(theta, Y, P)
    h = 1e-6
    for k in variational.PARAM_NAMES:
        for idx in np.ndindex(theta[k].shape):
            old = theta[k][idx]
            theta[k][idx] = old + h
            lp, _ = variational.kl_loss_and_grad(theta, Y, P)
            theta[k][idx] = old - h
            lm, _ = variational.kl_loss_and_grad(theta, Y, P)
            theta[k][idx] = old
            assert abs((lp - lm) / (2 * h) - g[k][idx]) <= 1e-7


def test_loss_is_zero_at_the_model_itself_and_probabilities_sum_to_one():
    theta = variational.init_mlp(4, 3, 0)
    Y = np.linspace(-1, 1, 11)
    Q = variational.mlp_probs(theta, Y)
    assert np.allclose(Q.sum(axis=1), 1.0, atol=1e-15) and Q.min() > 0
    loss, _ = variational.kl_loss_and_grad(theta, Y, Q)
    assert abs(loss) <= 1e-15
    err = variational.approximation_error(theta, Y, Q)
    assert err["max_tv"] <= 1e-15


def test_training_lowers_the_loss_and_records_snapshots():
    Y = np.linspace(-1, 1, 20)
    P = variational.mlp_probs(variational.init_mlp(3, 3, 9), Y)  # a target inside the model class
    theta0 = variational.init_mlp(8, 3, 1)
    theta, hist = variational.train(theta0, Y, P, 200, lr=1e-2, record=(0, 50, 200))
    assert set(hist["snapshots"]) == {0, 50, 200}
    assert all(np.array_equal(hist["snapshots"][0][k], theta0[k]) for k in variational.PARAM_NAMES)
    assert all(np.array_equal(hist["snapshots"][200][k], theta[k]) for k in variational.PARAM_NAMES)
    final, _ = variational.kl_loss_and_grad(theta, Y, P)
    assert final < 0.1 * hist["loss"][0]
    same, h0 = variational.train(theta0, Y, P, 0)
    assert (
        all(np.array_equal(same[k], theta0[k]) for k in variational.PARAM_NAMES)
        and h0["loss"].size == 0
    )


def test_pinsker_bound_on_errors():
    Y, P = _problem(5, B=30)
    err = variational.approximation_error(variational.init_mlp(3, 3, 2), Y, P)
    assert err["max_tv"] <= np.sqrt(err["max_kl"] / 2) + 1e-15
    assert err["mean_kl"] <= err["max_kl"]


def test_validation_errors():
    with pytest.raises(ValueError, match="width"):
        variational.init_mlp(0, 3, 0)
    theta = variational.init_mlp(2, 3, 0)
    with pytest.raises(ValueError, match="shape"):
        variational.kl_loss_and_grad(theta, np.zeros(4), np.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="lr"):
        variational.train(theta, np.zeros(4), np.full((4, 3), 1 / 3), 10, lr=0.0)
    with pytest.raises(ValueError, match="steps"):
        variational.train(theta, np.zeros(4), np.full((4, 3), 1 / 3), -1)


def test_both_generator_conditions_must_break_for_both_conditions_break():
    """F3's control condition: *both* the negative off-diagonal rate and the row-sum defect beyond
    ``tol`` on every sampled state; one of them alone is not enough."""
    from fastslow.verify.checks import f3  # the one predicate tested here

    def g(neg, defect):
        return {"negative_offdiag_rel": {"min": neg}, "sum_defect_rel": {"min": defect}}

    assert f3.both_conditions_break(g(0.2, 0.3), 0.1)
    assert not f3.both_conditions_break(g(0.2, 0.05), 0.1)
    assert not f3.both_conditions_break(g(0.05, 0.3), 0.1)
