"""F2: for an irreducible y-dependent generator the equilibrium manifold is p_st(y), attracting at
the spectral gap, and the coupled system tracks it at O(ε) (O(ε²) with the first-order correction).
"""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st

from numerics import markov as mk
from theory import markov as tm
from verify.checks import run_check
from verify.checks.f2 import DEFAULTS, attention_link

pytestmark = pytest.mark.claim("F2")


def _fmt(fit):
    return f"{fit['slope']:.4f} [{fit['ci95'][0]:.4f}, {fit['ci95'][1]:.4f}]"


@pytest.mark.parametrize("n_states", [3, 2])
def test_equilibrium_manifold_is_p_st_and_is_tracked_at_order_eps(claim, thorough, n_states):
    params = {"n_states": n_states}
    if thorough:
        params.update({"n_eps": 13, "n_grid": 201, "P_max": 10})
    elif n_states == 2:
        params.update({"n_eps": 5})
    result = run_check("F2", params, seed=7)
    if n_states == 3:
        claim.main(result)
    f, tol = result.figures, result.tolerance
    assert result.hypotheses_hold, result.notes
    # 1. the manifold: exact p_st vs the numeric null vector, and the same Q(y) in both modules
    assert f["generator_definition_mismatch"] <= tol["manifold_abs"]
    assert f["manifold_max_abs_error"] <= tol["manifold_abs"], f["manifold_max_abs_error"]
    assert f["h1_exact_residuals_zero"]
    assert f["h1_max_abs_error"] <= tol["h1_abs"]
    # 2. one zero eigenvalue, the rest strictly in the left half-plane
    assert f["max_zero_eigenvalues"] == f["min_zero_eigenvalues"] == 1
    assert f["max_re_nonleading_eigenvalue"] < 0 and f["min_spectral_gap"] > 1.0
    # 3. tracking slopes with 95% intervals inside the tolerance bands
    lo0, hi0 = tol["slope_order0"]
    lo1, hi1 = tol["slope_order1"]
    s0, s1 = f["slope_order0"], f["slope_order1"]
    assert lo0 <= s0["ci95"][0] and s0["ci95"][1] <= hi0, _fmt(s0)
    assert lo1 <= s1["ci95"][0] and s1["ci95"][1] <= hi1, _fmt(s1)
    assert all(b < a for a, b in zip(f["err_order0"], f["err_order1"]))  # the correction helps
    assert f["x0_dependence_at_t1"] <= tol["x0_dependence_abs"]
    assert f["mass_defect"] <= tol["simplex_abs"] and f["min_x_entry"] >= 0
    assert result.holds, result.summary()
    claim.figure(f"slope_order0_n{n_states}", _fmt(s0))
    claim.figure(f"slope_order1_n{n_states}", _fmt(s1))


def test_attention_link_uniform_for_bidirectional_first_token_for_causal(claim):
    link = attention_link(DEFAULTS["P_max"])
    s = link["summary"]
    tol = 1e-12
    assert s["max_kernel_vs_exact"] == 0.0           # numerics.masks and theory build the same K
    assert s["max_p_numeric_vs_exact"] <= tol
    assert s["bidirectional_max_p_vs_uniform"] <= tol
    assert s["bidirectional_max_block_mean_defect"] <= tol  # 1ᵀ(K − I)/P = 0: the block mean persists
    assert s["causal_max_p_vs_first_token"] <= tol
    assert s["causal_max_first_token_defect"] == 0.0       # e_1ᵀ(K − I) = 0 exactly
    assert s["causal_min_block_mean_defect"] > 0.1          # the block mean is NOT conserved
    # hypothesis actually used for block_causal: one closed class ({token 1}), not irreducibility
    assert s["bidirectional_irreducible"] and not s["causal_irreducible"]
    assert s["causal_single_closed_class"]
    for row in link["block_causal"]:  # spectrum of K − I: {0, −1/2, …, −(P−1)/P}: gap 1/2
        assert row["spectral_gap"] == pytest.approx(0.5, abs=1e-12)
    claim.figure("attention_link_causal_block_mean_defect_min", s["causal_min_block_mean_defect"])


def test_negative_control_reducible_generator_has_several_equilibria(claim):
    result = claim.negative(run_check("F2", {"chain": "reducible"}, seed=7))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    assert f["generator_on_grid"] and not f["irreducible_on_grid"]
    assert f["max_closed_classes"] == 2 and f["min_zero_eigenvalues"] == 2
    assert "closed communicating classes" in f["numeric_stationary_error"]
    # the long-time state remembers the initial condition: O(1), not O(ε)
    assert f["x0_dependence_at_t1"] > 100 * result.tolerance["x0_dependence_abs"]


def test_negative_control_column_sums_nonzero_loses_mass(claim):
    result = claim.negative(run_check("F2", {"chain": "not_generator_mass"}, seed=7))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    assert f["max_column_sum_defect"] == pytest.approx(result.params["defect"])
    assert f["max_zero_eigenvalues"] == 0       # no equilibrium but x = 0
    assert f["mass_defect"] > 0.99              # all mass lost after the layer
    assert "sums to" in f["numeric_stationary_error"]


def test_negative_control_negative_rate_leaves_the_simplex(claim):
    result = claim.negative(run_check("F2", {"chain": "not_generator_sign"}, seed=7))
    f = result.figures
    assert not result.hypotheses_hold and not result.holds
    assert f["max_negative_rate"] > 0 and f["max_column_sum_defect"] <= 1e-12  # mass conserved
    assert f["min_null_vector_entry"] < -0.01   # the equilibrium is not a probability vector
    assert f["min_x_entry"] < -0.01             # and the trajectory leaves the simplex
    assert "negative" in f["numeric_stationary_error"]


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
    assert np.abs(p - np.array([float(x) for x in exact.expr])).max() <= 1e-12
    assert all(r == 0 for r in exact.residual)
