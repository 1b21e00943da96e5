"""F2: for a generator Q(y) with one closed class (irreducible: the main case) the equilibrium
manifold is p_st(y), attracting at the spectral gap, and the coupled system tracks it at O(ε)
(O(ε²) with the first-order correction).

The verdict is decided by :data:`verify.checks.f2.CLAIM` (including the attention-link parts);
these tests only read it. The negative controls run in ``verify/test_negative_controls.py``.
"""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from numerics import lapack
from numerics.toy import markov as mk
from theory import markov as tm
from verify.measure import symbolic_agrees
from verify.registry import CLAIMS, run_check

pytestmark = pytest.mark.claim("F2")


@pytest.mark.parametrize("n_states", [3, 2])
def test_equilibrium_manifold_is_p_st_and_is_tracked_at_order_eps(claim, thorough, n_states):
    params = {"n_states": n_states}
    if thorough:
        params.update({"n_eps": 13, "n_grid": 201, "P_max": 10})
    elif n_states == 2:
        params.update({"n_eps": 5})
    result = claim.main(run_check("F2", params, seed=7))
    assert result.outcome == "holds", result.summary()


SMALL = {"n_eps": 3, "n_grid": 9, "n_t": 31, "P_max": 4, "eps_min": 1e-2}


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["F2"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """Other valid eigenvalue orders and singular-vector signs/bases give the same verdict and the
    same figures (to 1e-12: only rounding differs)."""
    base = run_check("F2", SMALL, seed=7, control=control)
    for s in (1, 2):
        with lapack.other_valid_answers(seed=s):
            other = run_check("F2", SMALL, seed=7, control=control)
        assert other.outcome == base.outcome, (base.summary(), other.summary())
        assert {k: d.holds for k, d in other.conclusion.items()} == {
            k: d.holds for k, d in base.conclusion.items()
        }
        for key in ("min_spectral_gap", "manifold_max_abs_error", "min_null_vector_entry"):
            if key in base.figures:
                assert abs(other.figures[key] - base.figures[key]) <= 1e-12, key
        for key in ("slope_order0", "slope_order1"):
            if key in base.figures:
                assert abs(other.figures[key]["slope"] - base.figures[key]["slope"]) <= 1e-9, key


@given(n=st.integers(2, 4), seed=st.integers(0, 2**16), zeros=st.integers(0, 3))
def test_tree_theorem_matches_numeric_null_vector_for_random_rational_generators(n, seed, zeros):
    rng = np.random.default_rng(seed)
    num = rng.integers(1, 20, size=(n, n))
    # a directed cycle keeps it irreducible; drop a few other jumps
    keep = np.ones((n, n), dtype=bool)
    for _ in range(zeros):
        i, j = rng.integers(0, n, 2)
        if i != j and (i - j) % n != 1:
            keep[i, j] = False
    Qs = sp.zeros(n, n)
    for i in range(n):
        for j in range(n):
            if i != j and keep[i, j]:
                Qs[i, j] = sp.Rational(int(num[i, j]), 7)
    for j in range(n):
        Qs[j, j] = -sum(Qs[i, j] for i in range(n) if i != j)
    exact = tm.stationary_distribution(Qs)
    Qn = np.array(Qs.tolist(), dtype=float)
    p = mk.stationary_distribution(Qn)
    agree = symbolic_agrees([float(x) for x in exact.expr], p, tol=1e-12, scale=1.0)
    assert agree.holds, agree
    assert all(r == 0 for r in exact.residual)
