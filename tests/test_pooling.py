"""Pooling algebra: B U = I, U B is the orthogonal projector onto block-constant sequences,
the causal up-sampling shifts by one block, and every reshaping map equals its dense matrix."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fastslow.numerics.model import pooling

sizes = st.tuples(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4))  # N, P, d
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False)


@st.composite
def state(draw):
    N, P, d = draw(sizes)
    X = draw(arrays(np.float64, (N * P, d), elements=finite))
    return X, P


@given(state())
def test_reshaping_maps_equal_their_dense_matrices(xs):
    X, P = xs
    T = X.shape[0]
    B, U, Uc = (
        pooling.pooling_matrix(T, P),
        pooling.upsampling_matrix(T, P),
        pooling.causal_upsampling_matrix(T, P),
    )
    Y = pooling.block_mean(X, P)
    np.testing.assert_allclose(Y, B @ X, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(pooling.upsample(Y, P), U @ Y)
    np.testing.assert_array_equal(pooling.causal_upsample(Y, P), Uc @ Y)
    np.testing.assert_allclose(
        pooling.causal_upsample_adjoint(X, P), Uc.T @ X, rtol=1e-12, atol=1e-9
    )


@given(st.integers(1, 6), st.integers(1, 5))
def test_BU_is_identity_and_UB_an_orthogonal_projector(N, P):
    T = N * P
    B, U = pooling.pooling_matrix(T, P), pooling.upsampling_matrix(T, P)
    np.testing.assert_allclose(B @ U, np.eye(N), atol=1e-15)
    Pi = U @ B
    np.testing.assert_allclose(Pi @ Pi, Pi, atol=1e-14)
    np.testing.assert_allclose(Pi, Pi.T, atol=1e-15)


@given(state())
def test_block_constant_part_is_idempotent_and_keeps_the_block_means(xs):
    X, P = xs
    Z = pooling.block_constant_part(X, P)
    np.testing.assert_allclose(pooling.block_constant_part(Z, P), Z, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(
        pooling.block_mean(Z, P), pooling.block_mean(X, P), rtol=1e-12, atol=1e-9
    )


@given(state())
def test_causal_upsampling_gives_block_zero_nothing_and_block_b_the_value_of_b_minus_1(xs):
    X, P = xs
    Y = pooling.block_mean(X, P)
    Z = pooling.causal_upsample(Y, P)
    assert np.all(Z[:P] == 0)
    for b in range(1, Y.shape[0]):
        assert np.all(Z[b * P : (b + 1) * P] == Y[b - 1])


@given(state(), st.data())
def test_weighted_pooling_with_uniform_weights_is_the_block_mean_and_first_token_weights_pick(
    xs, data
):
    X, P = xs
    np.testing.assert_allclose(
        pooling.weighted_pool(X, np.full(P, 1.0 / P)),
        pooling.block_mean(X, P),
        rtol=1e-12,
        atol=1e-9,
    )
    e1 = np.zeros(P)
    e1[0] = 1.0
    np.testing.assert_array_equal(pooling.weighted_pool(X, e1), X[::P])


def test_pooling_accepts_vectors():
    x = np.arange(6.0)
    np.testing.assert_array_equal(pooling.block_mean(x, 3), [1.0, 4.0])
    np.testing.assert_array_equal(pooling.upsample(np.array([1.0, 2.0]), 2), [1, 1, 2, 2])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: pooling.block_mean(np.ones((6, 2)), 4), "P=4 must divide the sequence length T=6"),
        (lambda: pooling.block_mean(np.ones((6, 2)), 0), "P must be a positive integer, got 0"),
        (lambda: pooling.block_mean(np.ones((6, 2)), 2.0), "P must be an integer"),
        (lambda: pooling.block_mean(np.full((4, 2), np.nan), 2), "X must be finite"),
        (
            lambda: pooling.block_mean(np.ones((2, 2, 2)), 2),
            r"X must have shape \(T,\) or \(T, d\)",
        ),
        (lambda: pooling.block_mean("abc", 1), "X must be an array"),
        (lambda: pooling.upsample(np.ones(3), -1), "P must be a positive integer, got -1"),
        (lambda: pooling.weighted_pool(np.ones((4, 1)), [0.5, 0.6]), "probability vector"),
        (lambda: pooling.weighted_pool(np.ones((4, 1)), [1.5, -0.5]), "probability vector"),
        (lambda: pooling.weighted_pool(np.ones((5, 1)), [0.5, 0.5]), "must divide"),
        (lambda: pooling.pooling_matrix(5, 2), "must divide"),
    ],
)
def test_bad_input_is_rejected_with_a_message_naming_it(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
