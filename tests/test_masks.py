"""Masks, frozen kernels and their eigenvalue-1 spectral data ."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

from fastslow.numerics.model import masks
from fastslow.theory import kernels as theory_kernels

named = st.sampled_from(masks.NAMED_MASKS)


@given(named, st.integers(1, 5), st.integers(1, 4))
def test_frozen_kernel_is_row_stochastic_and_supported_on_the_mask(name, N, P):
    T = N * P
    M = masks.make_mask(name, T, P)
    K = masks.frozen_kernel(name, T, P)
    np.testing.assert_allclose(K.sum(axis=1), 1.0, atol=1e-15)
    assert np.all(K[~M] == 0) and np.all(K[M] > 0)


@given(named, st.integers(1, 5), st.integers(1, 4))
def test_coarse_maps_give_the_spectral_projector_onto_eigenvalue_one(name, N, P):
    T = N * P
    K = masks.frozen_kernel(name, T, P)
    R, L = masks.coarse_maps(name, T, P)
    Pi = masks.spectral_projector(name, T, P)
    np.testing.assert_allclose(L.T @ R, np.eye(R.shape[1]), atol=1e-15)  # biorthogonal
    np.testing.assert_allclose(K @ R, R, atol=1e-14)  # right eigenvectors
    np.testing.assert_allclose(L.T @ K, L.T, atol=1e-14)  # left eigenvectors
    np.testing.assert_allclose(Pi @ Pi, Pi, atol=1e-14)
    np.testing.assert_allclose(K @ Pi, Pi, atol=1e-14)
    np.testing.assert_allclose(Pi @ K, Pi, atol=1e-14)  # Π commutes with K
    # Π has the multiplicity of eigenvalue 1 as rank
    assert np.linalg.matrix_rank(Pi) == masks.kernel_eigenvalues(name, T, P)[1.0]


@given(named, st.integers(1, 4), st.integers(1, 4))
def test_kernel_eigenvalues_match_the_diagonal_or_a_small_eigensolve(name, N, P):
    T = N * P
    K = masks.frozen_kernel(name, T, P)
    ev = masks.kernel_eigenvalues(name, T, P)
    assert sum(ev.values()) == T
    expected = np.sort(np.concatenate([[lam] * k for lam, k in ev.items()]))
    if name == "block_bidirectional":
        got = np.sort(np.linalg.eigvals(K).real)  # symmetric blocks: well conditioned
        np.testing.assert_allclose(got, expected, atol=1e-12)
    else:  # triangular kernels: the eigenvalues are the diagonal, exactly
        np.testing.assert_array_equal(np.sort(np.diag(K)), expected)


def test_named_spectra_match_spec():
    assert list(masks.kernel_eigenvalues("causal", 4)) == [1, 1 / 2, 1 / 3, 1 / 4]
    assert masks.kernel_eigenvalues("block_causal", 6, 3) == {1.0: 2, 0.5: 2, 1 / 3: 2}
    assert masks.kernel_eigenvalues("block_bidirectional", 6, 3) == {1.0: 2, 0.0: 4}


def test_custom_masks_are_accepted_and_checked():
    m = np.eye(3, dtype=bool)
    np.testing.assert_array_equal(masks.frozen_kernel(m), np.eye(3))
    with pytest.raises(ValueError, match=r"rows \[1\] are empty"):
        masks.as_mask(np.array([[True, False], [False, False]]), 2)
    with pytest.raises(TypeError, match="boolean"):
        masks.as_mask(np.ones((2, 2)), 2)
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        masks.as_mask(np.ones((2, 2), dtype=bool), 3)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: masks.make_mask("sliding", 4), "unknown mask 'sliding'"),
        (lambda: masks.make_mask("block_causal", 6), "needs the block size P"),
        (lambda: masks.make_mask("block_causal", 6, 4), "P=4 must divide"),
        (lambda: masks.make_mask("causal", 0), "T must be a positive integer"),
        (lambda: masks.coarse_maps("full", 4), "unknown mask"),
        (lambda: masks.frozen_kernel("causal"), "needs T"),
    ],
)
def test_bad_input_is_rejected_with_a_message_naming_it(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# --------------------------------------------------------------------------- your own block-local mask


@st.composite
def block_local_masks(draw):
    """``(mask, P)``: N blocks of P tokens, each with its own random pattern (rows non-empty;
    diagonal not forced, so periodic and several-closed-class blocks occur)."""
    P, N = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    mask = np.zeros((N * P, N * P), dtype=bool)
    for b in range(N):
        rows = [draw(st.lists(st.booleans(), min_size=P, max_size=P)) for _ in range(P)]
        block = np.array(rows, dtype=bool)
        block[~block.any(axis=1), draw(st.integers(0, P - 1))] = True
        mask[b * P : (b + 1) * P, b * P : (b + 1) * P] = block
    return mask, P


@settings(max_examples=40, deadline=None)
@given(block_local_masks())
def test_stationary_weighting_of_a_custom_mask_is_the_theorys_exact_left_eigenvector(drawn):
    """numerics (one linear solve per block) against theory (exact null space): the same weighting,
    the same blocks refused (eigenvalue 1 not simple), and ``λ₂`` against the exact normal rate."""
    mask, P = drawn
    T = mask.shape[0]
    blocks = [theory_kernels.frozen_kernel(mask[b : b + P, b : b + P]) for b in range(0, T, P)]
    try:
        expected = [theory_kernels.stationary_weighting(K) for K in blocks]
    except ValueError:
        with pytest.raises(ValueError, match="not simple"):
            masks.stationary_weighting(mask, P)
        return
    R, L = masks.coarse_maps(mask, T, P)
    K = masks.frozen_kernel(mask)
    for b, Lb in enumerate(expected):
        np.testing.assert_allclose(
            L[b * P : (b + 1) * P, b], np.array(Lb, dtype=float).ravel(), atol=1e-14
        )
    np.testing.assert_allclose(L.T @ K, L.T, atol=1e-14)
    np.testing.assert_allclose(L.T @ R, np.eye(T // P), atol=1e-14)
    rate = min(float(theory_kernels.normal_rate(Kb)) for Kb in blocks)
    k = max(jordan_size_bound(Kb) for Kb in blocks)
    tol = max(1e-6, 10 * np.finfo(float).eps ** (1 / k))  # a k-fold eigenvalue moves by u^(1/k)
    assert abs((1.0 - masks.subdominant_eigenvalue(mask)) - rate) < tol


def jordan_size_bound(K) -> int:
    """The algebraic multiplicity of ``K``'s eigenvalue of largest real part other than one
    eigenvalue 1, exactly (roots of the characteristic polynomial); it bounds the size of its
    Jordan blocks, and a block of size ``k`` moves that eigenvalue by ``u^(1/k)`` under a rounding
    ``u`` of ``K`` (LAPACK's backward-stable answer), whatever the LAPACK."""
    roots = K.charpoly().all_roots()
    roots.remove(1)
    if not roots:
        return 1
    top = max(roots, key=lambda r: complex(r.evalf(30)).real)
    return roots.count(top)


@settings(max_examples=25, deadline=None)
@given(block_local_masks())
def test_the_slowest_left_eigenvectors_decay_at_one_minus_lambda2(drawn):
    """``‖Wᴴ e^{(K − I)τ} x‖ = e^{−(1 − λ₂)τ} ‖Wᴴ x‖`` for the slowest left eigenvectors ``W``,
    defective kernels included (up to their √u eigenvalue accuracy)."""
    mask, P = drawn
    K = masks.frozen_kernel(mask)
    W = masks.slowest_left_eigenvectors(mask)
    if W.shape[1] == 0:
        return
    lam2 = masks.subdominant_eigenvalue(mask)
    x = np.random.default_rng(0).standard_normal(K.shape[0])
    tau = 3.0
    E = expm((K - np.eye(K.shape[0])) * tau)
    decay = np.linalg.norm(W.conj().T @ (E @ x)) / np.linalg.norm(W.conj().T @ x)
    assert decay == pytest.approx(np.exp(-(1.0 - lam2) * tau), rel=1e-5)
    U = np.kron(np.eye(K.shape[0] // P), np.ones((P, 1)))
    assert np.allclose(W.conj().T @ U, 0)  # blind to the block-constant states


def test_the_stationary_weighting_of_a_pattern_that_is_not_doubly_stochastic():
    pattern = np.array([[1, 1, 0], [1, 1, 1], [1, 1, 1]], dtype=bool)
    mask = np.kron(np.eye(2, dtype=bool), pattern)
    L = masks.stationary_weighting(mask, 3)
    np.testing.assert_allclose(L[:3, 0], [0.4, 0.4, 0.2], rtol=1e-15)
    np.testing.assert_allclose(
        masks.spectral_projector(mask, P=3) @ masks.frozen_kernel(mask),
        masks.spectral_projector(mask, P=3),
        atol=1e-15,
    )
    assert masks.subdominant_eigenvalue(mask) == pytest.approx(1 / 6, abs=1e-14)
    assert masks.is_block_local(mask, 3) and not masks.is_block_local(mask, 2)


@pytest.mark.parametrize(
    "mask, match",
    [
        (np.ones((4, 4), dtype=bool), "attends across blocks"),
        (np.eye(4, dtype=bool), "not simple"),
    ],
    ids=["across_blocks", "two_closed_classes"],
)
def test_a_custom_mask_without_a_block_weighting_is_refused(mask, match):
    with pytest.raises(ValueError, match=match):
        masks.coarse_maps(mask, 4, 2)


@pytest.mark.parametrize(
    "pattern",
    [[], [[True, False]], [[True], [True, True]], np.ones((2, 3), dtype=bool)],
    ids=["empty", "one_row_of_two", "ragged", "rectangular"],
)
def test_a_mask_pattern_that_is_not_square_is_refused(pattern):
    """theory.kernels.pattern_matrix refuses an empty or non-square pattern in one line (a
    cosmic-ray survivor let a non-square one through to a later IndexError)."""
    with pytest.raises(ValueError, match="non-empty square matrix"):
        theory_kernels.pattern_matrix(pattern)
