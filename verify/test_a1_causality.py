"""A1: the slow path updates once per block, and the block-causal model is autoregressive."""

import pytest
from hypothesis import given, strategies as st

from verify.checks import run_check

pytestmark = pytest.mark.claim("A1")


def test_blockcausal_model_is_autoregressive_and_slow_input_is_block_constant(claim):
    result = claim.main(run_check("A1", {}, seed=7))
    assert result.hypotheses_hold
    assert result.figures["max_future_dependence"] == 0.0, result.summary()
    assert result.figures["slow_input_within_block_variation"] == 0.0
    assert result.figures["slow_input_first_block_max"] == 0.0  # block 1 receives zero
    assert result.figures["min_past_diagonal_dependence"] > 1e-3  # the check is not vacuous
    assert result.holds


def test_negative_control_full_slow_mask_leaks_the_future(claim):
    result = claim.negative(run_check("A1", {"slow_mask": "full"}, seed=7))
    assert not result.hypotheses_hold
    assert not result.holds
    assert result.figures["max_future_dependence"] > 1e-6
    # the leak goes through the slow path, which block 0 never receives (U_c gives it zero), so
    # every leaking output lies in block 1 or later
    assert min(result.figures["leaking_output_tokens"]) >= result.params["P"]


def test_negative_control_bidirectional_fast_mask_leaks_within_blocks(claim):
    result = claim.negative(run_check("A1", {"mask": "block_bidirectional"}, seed=7))
    assert not result.holds
    leak = result.figures["first_leak"]
    assert leak["later_input_token"] // 4 == leak["output_token"] // 4


@given(T_blocks=st.integers(1, 4), P=st.integers(1, 4), d=st.integers(1, 4), L=st.integers(1, 3),
       gate=st.floats(0.05, 3.0), mask=st.sampled_from(["causal", "block_causal"]),
       seed=st.integers(0, 2**16))
def test_autoregressive_for_random_sizes_weights_and_gates(T_blocks, P, d, L, gate, mask, seed):
    params = {"T": T_blocks * P, "P": P, "d": d, "L": L, "gate": gate, "mask": mask}
    result = run_check("A1", params, seed=seed)
    assert result.figures["max_future_dependence"] == 0.0
    assert result.figures["slow_input_within_block_variation"] == 0.0
