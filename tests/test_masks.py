"""Masks, frozen kernels and their eigenvalue-1 spectral data ."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.model import masks as mk

named = st.sampled_from(mk.NAMED_MASKS)


@given(named, st.integers(1, 5), st.integers(1, 4))
def test_frozen_kernel_is_row_stochastic_and_supported_on_the_mask(name, N, P):
    T = N * P
    M = mk.make_mask(name, T, P)
    K = mk.frozen_kernel(name, T, P)
    np.testing.assert_allclose(K.sum(axis=1), 1.0, atol=1e-15)
    assert np.all(K[~M] == 0) and np.all(K[M] > 0)


@given(named, st.integers(1, 5), st.integers(1, 4))
def test_coarse_maps_give_the_spectral_projector_onto_eigenvalue_one(name, N, P):
    T = N * P
    K = mk.frozen_kernel(name, T, P)
    R, L = mk.coarse_maps(name, T, P)
    Pi = mk.spectral_projector(name, T, P)
    np.testing.assert_allclose(L.T @ R, np.eye(R.shape[1]), atol=1e-15)  # biorthogonal
    np.testing.assert_allclose(K @ R, R, atol=1e-14)  # right eigenvectors
    np.testing.assert_allclose(L.T @ K, L.T, atol=1e-14)  # left eigenvectors
    np.testing.assert_allclose(Pi @ Pi, Pi, atol=1e-14)
    np.testing.assert_allclose(K @ Pi, Pi, atol=1e-14)
    np.testing.assert_allclose(Pi @ K, Pi, atol=1e-14)  # Π commutes with K
    # Π has the multiplicity of eigenvalue 1 as rank
    assert np.linalg.matrix_rank(Pi) == mk.kernel_eigenvalues(name, T, P)[1.0]


@given(named, st.integers(1, 4), st.integers(1, 4))
def test_kernel_eigenvalues_match_the_diagonal_or_a_small_eigensolve(name, N, P):
    T = N * P
    K = mk.frozen_kernel(name, T, P)
    ev = mk.kernel_eigenvalues(name, T, P)
    assert sum(ev.values()) == T
    expected = np.sort(np.concatenate([[lam] * k for lam, k in ev.items()]))
    if name == "block_bidirectional":
        got = np.sort(np.linalg.eigvals(K).real)  # symmetric blocks: well conditioned
        np.testing.assert_allclose(got, expected, atol=1e-12)
    else:  # triangular kernels: the eigenvalues are the diagonal, exactly
        np.testing.assert_array_equal(np.sort(np.diag(K)), expected)


def test_named_spectra_match_spec():
    assert list(mk.kernel_eigenvalues("causal", 4)) == [1, 1 / 2, 1 / 3, 1 / 4]
    assert mk.kernel_eigenvalues("block_causal", 6, 3) == {1.0: 2, 0.5: 2, 1 / 3: 2}
    assert mk.kernel_eigenvalues("block_bidirectional", 6, 3) == {1.0: 2, 0.0: 4}


def test_custom_masks_are_accepted_and_checked():
    m = np.eye(3, dtype=bool)
    np.testing.assert_array_equal(mk.frozen_kernel(m), np.eye(3))
    with pytest.raises(ValueError, match=r"rows \[1\] are empty"):
        mk.as_mask(np.array([[True, False], [False, False]]), 2)
    with pytest.raises(TypeError, match="boolean"):
        mk.as_mask(np.ones((2, 2)), 2)
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        mk.as_mask(np.ones((2, 2), dtype=bool), 3)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: mk.make_mask("sliding", 4), "unknown mask 'sliding'"),
        (lambda: mk.make_mask("block_causal", 6), "needs the block size P"),
        (lambda: mk.make_mask("block_causal", 6, 4), "P=4 must divide"),
        (lambda: mk.make_mask("causal", 0), "T must be a positive integer"),
        (lambda: mk.coarse_maps("full", 4), "unknown mask"),
        (lambda: mk.frozen_kernel("causal"), "needs T"),
    ],
)
def test_bad_input_is_rejected_with_a_message_naming_it(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
