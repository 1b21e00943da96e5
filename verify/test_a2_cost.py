"""A2: the slow path's FLOP, counted from the products the reference executes, against the model.

Attention core: exactly 1/P². Whole slow path over whole fast layer: ≤ 1/P always, ≥ 1/P² iff
3d(P − 1) ≥ 2m. SPEC states the bracket without that condition; the counterexamples (P = 1, or a
wide MLP with P ∈ {2, 3}) are recorded as a finding. Timings are in the benchmark, not here.
"""

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, strategies as st

from numerics.cost import layer_flops, layer_ratio, layer_ratio_lower_bound_holds
from verify.checks import run_check

pytestmark = pytest.mark.claim("A2")


def test_counted_flop_equal_the_model_and_attention_costs_one_over_P_squared(claim):
    result = claim.main(run_check("A2", {}, seed=3))
    f = result.figures
    assert result.hypotheses_hold
    assert f["model_mismatches"] == {}, f["model_mismatches"]
    assert f["counted_flop"] == f["model_flop"]
    assert f["attention_ratio_exact"] == "1/16"
    assert Fraction(1, 16) <= Fraction(f["layer_ratio_exact"]) <= Fraction(1, 4)
    assert (f["products_fast"], f["products_slow"]) == (7, 5)  # 3 proj + 2 core + 2 MLP; 3 + 2
    assert result.holds, result.summary()


@given(N=st.integers(1, 8), P=st.integers(1, 8), d=st.integers(1, 9), m=st.integers(1, 20),
       mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
       seed=st.integers(0, 2**16))
def test_instrumented_count_matches_model_exactly_for_random_sizes(N, P, d, m, mask, seed):
    params = {"T": N * P, "P": P, "d": d, "m": m, "mask": mask}
    f = run_check("A2", params, seed=seed).figures
    assert f["counted_flop"] == f["model_flop"]
    assert Fraction(f["attention_ratio_exact"]) == Fraction(1, P * P)
    assert f["layer_ratio_le_1_over_P"]
    # the lower bound holds exactly when the derived condition does: no more, no less
    assert f["layer_ratio_ge_1_over_P2"] == layer_ratio_lower_bound_holds(P, d, m)


def test_bracket_over_a_grid_of_sizes_fails_exactly_where_the_condition_fails(claim):
    # T from 8 to 4096, every power-of-two P ≤ T, d from 4 to 512 (so d ≫ T occurs), m ∈ {d, 2d, 4d}
    grid = [(T, P, d, k * d) for T in (8, 64, 256, 2048, 4096) for P in (2**i for i in range(13))
            if P <= T for d in (4, 16, 64, 128, 512) for k in (1, 2, 4)]
    upper_fail, lower_fail, mismatch = [], [], []
    for T, P, d, m in grid:
        r = layer_ratio(T, P, d, m)
        if r > Fraction(1, P):
            upper_fail.append((T, P, d, m))
        low_ok = r >= Fraction(1, P * P)
        if not low_ok:
            lower_fail.append((T, P, d, m))
        if low_ok != layer_ratio_lower_bound_holds(P, d, m):
            mismatch.append((T, P, d, m))
    claim.figure("grid_configurations", len(grid))
    claim.figure("grid_upper_bound_failures", len(upper_fail))
    claim.figure("grid_lower_bound_failures", len(lower_fail))
    claim.figure("grid_lower_bound_failing_(P,m/d)", sorted({(P, m // d) for _, P, d, m in lower_fail}))
    claim.note("finding: the whole-layer bracket [1/P², 1/P] is not unconditional. The upper bound "
               "holds for all sizes; the lower bound holds iff 3d(P−1) ≥ 2m (the slow path has no MLP): "
               f"{len(lower_fail)}/{len(grid)} grid configurations fail it, all with P=1, or P=2 and "
               "m ≥ 2d, or P=3 and m > 3d; T and d ≫ T play no role.")
    assert not upper_fail
    assert not mismatch
    assert {(P, m // d) for _, P, d, m in lower_fail} == {(1, 1), (1, 2), (1, 4), (2, 2), (2, 4)}


def test_symbolic_bracket_identities():
    T, P, d, m = sp.symbols("T P d m", positive=True)
    N = T / P
    slow = 4 * N**2 * d + 6 * N * d**2
    fast = 4 * T**2 * d + 6 * T * d**2 + 4 * T * d * m
    assert sp.expand(P**2 * slow - fast - (6 * T * d**2 * (P - 1) - 4 * T * d * m)) == 0
    assert sp.expand(fast / P - slow - (4 * T**2 * d * (P - 1) / P**2 + 4 * T * d * m / P)) == 0
    # and the model in numerics.cost is these polynomials
    f = layer_flops(96, 4, 8, 20)
    vals = {T: 96, P: 4, d: 8, m: 20}
    assert f["slow_path"] == slow.subs(vals) and f["fast_layer"] == fast.subs(vals)


def test_negative_control_unpooled_slow_attention_costs_as_much_as_fast(claim):
    result = claim.negative(run_check("A2", {"pooled": False}, seed=3))
    f = result.figures
    assert not result.hypotheses_hold
    assert not result.holds
    assert f["attention_ratio_exact"] == "1/1"  # not 1/P² = 1/16: off by P² = 16
    assert set(f["model_mismatches"]) == {"slow_qkv", "slow_attention_core", "slow_path"}
    assert not f["layer_ratio_le_1_over_P"]


@pytest.mark.parametrize("P, m", [(2, 24), (3, 48), (1, 6)])
def test_negative_control_wide_mlp_puts_whole_layer_below_one_over_P_squared(claim, P, m):
    params = {"T": 12 * P, "P": P, "d": 6, "m": m}
    result = claim.negative(run_check("A2", params, seed=3))
    f = result.figures
    assert not result.hypotheses_hold
    assert f["counted_flop"] == f["model_flop"]  # the model is right, the bracket is not
    assert f["attention_ratio_exact"] == f"1/{P * P}"
    assert f["layer_ratio_times_P2"] < 1.0
    assert not result.holds
