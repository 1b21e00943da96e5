"""numerics.lapack: the one door to decompositions with free choices, and its other valid answers.

Portability of verdicts is proved by construction: every consumer of a non-unique decomposition
goes through :mod:`numerics.lapack` (checked here by reading the source), and the claim tests run
their instances with :func:`numerics.lapack.other_valid_answers`, which must hand out answers
that are still valid (checked here).
"""

import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow import DESIGN_PACKAGES
from fastslow.numerics import lapack

ROOT = Path(__file__).resolve().parent.parent
NON_UNIQUE = {"eig", "eigvals", "eigh", "svd", "null_space", "orth"}
"""Decompositions whose answer (or whose use) involves a choice LAPACK makes."""


def _direct_calls(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in NON_UNIQUE
        ):
            base = ast.unparse(node.func.value)
            if base.endswith("linalg"):  # np.linalg.X, numpy.linalg.X, scipy.linalg.X
                yield node.lineno, ast.unparse(node.func)


def test_every_non_unique_decomposition_goes_through_numerics_lapack():
    offenders = []
    for pkg in ("fastslow", *DESIGN_PACKAGES):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == ROOT / "numerics" / "lapack.py":
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{line}: {call}" for line, call in _direct_calls(path)
            ]
    assert not offenders, "call numerics.lapack instead:\n" + "\n".join(offenders)


def _matrices():
    """Matrices with repeated eigenvalues (block kernels), a non-normal one, and a random one."""
    P, N = 3, 2
    bidir = np.kron(np.eye(N), np.ones((P, P)) / P)
    causal = np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None]
    rnd = np.random.default_rng(0).standard_normal((4, 4))
    return [bidir, causal, rnd, np.eye(3)]


@pytest.mark.parametrize("A", _matrices())
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_other_answers_are_still_valid_decompositions(A, seed):
    with lapack.other_valid_answers(seed=seed):
        w, V = lapack.eig(A)
        assert np.abs(A @ V - V * w).max() <= 1e-10 * max(1.0, np.abs(V).max())
        assert np.allclose(
            np.sort_complex(lapack.eigvals(A)), np.sort_complex(np.linalg.eigvals(A))
        )
        S = A + A.T
        ws, Vs = lapack.eigh(S)
        assert np.allclose(Vs.T @ Vs, np.eye(len(S))) and np.allclose((Vs * ws) @ Vs.T, S)
        U, s, Vt = lapack.svd(A)
        assert np.allclose(U.T @ U, np.eye(len(U))) and np.allclose(Vt @ Vt.T, np.eye(len(Vt)))
        assert np.allclose((U[:, : s.size] * s) @ Vt[: s.size], A)
        Z = lapack.null_space(A)
        assert np.abs(A @ Z).max(initial=0.0) <= 1e-10 and np.allclose(Z.T @ Z, np.eye(Z.shape[1]))


def test_other_answers_differ_from_lapack_where_lapack_had_a_choice():
    K = np.kron(np.eye(2), np.ones((3, 3)) / 3)
    w0, V0 = lapack.eig(K)
    with lapack.other_valid_answers(seed=0, cond=1e12):
        w1, V1 = lapack.eig(K)
    assert np.linalg.cond(V1) > 1e6 * np.linalg.cond(V0)  # a nearly dependent eigenbasis
    assert not np.array_equal(w0, w1) or not np.allclose(V0, V1)


@given(st.integers(0, 2**16))
def test_basis_free_quantities_do_not_depend_on_the_answer(seed):
    """The spectral projector onto an eigenvalue, built from any valid eigenbasis, is the same."""
    K = np.kron(np.eye(2), np.ones((3, 3)) / 3)
    with lapack.other_valid_answers(seed=seed, cond=1e6):
        w, V = lapack.eig(K)
    W = np.linalg.inv(V)
    one = np.abs(w - 1) < 1e-8
    Pi = (V[:, one] @ W[one]).real
    assert np.allclose(Pi, np.kron(np.eye(2), np.ones((3, 3)) / 3), atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_radau_transform_does_not_depend_on_lapacks_eigenvectors(seed):
    from fastslow.numerics.integrators import tableaux

    mu, lam, T, Ti = tableaux._radau_transform()
    with lapack.other_valid_answers(seed=seed):
        mu2, lam2, T2, Ti2 = tableaux._radau_transform()
    assert mu2 == pytest.approx(mu, rel=1e-14) and lam2 == pytest.approx(lam, rel=1e-14)
    assert np.allclose(T2, T, rtol=1e-12, atol=1e-14) and np.allclose(
        Ti2, Ti, rtol=1e-12, atol=1e-14
    )


def test_the_clusters_of_equal_values_partition_every_index():
    """Other valid answers mix the eigenvectors within each cluster of equal eigenvalues: the
    clusters partition the indices (each index in exactly one; equal values together, in order
    of first appearance), so every eigenvalue's vectors can be mixed, however they are ordered."""
    alt = lapack._Alternatives(0, 10.0)
    w = np.array([1.0, 2.0, 1.0, 3.0, 2.0 + 1e-14, 5.0])
    groups = alt._clusters(w)
    assert [g.tolist() for g in groups] == [[0, 2], [1, 4], [3], [5]]
    rng = np.random.default_rng(7)
    for _ in range(20):
        w = rng.integers(0, 4, size=9).astype(float)
        groups = alt._clusters(w)
        assert sorted(i for g in groups for i in g) == list(range(9))
        assert all(len(set(w[g])) == 1 for g in groups) and len(groups) == len(set(w))
