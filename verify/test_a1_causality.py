"""A1: the slow path updates once per block, and the block-causal model is autoregressive.

The verdict is decided by :data:`verify.checks.a1.CLAIM`; these tests only read it. The negative
controls run in ``verify/test_negative_controls.py``.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verify.registry import run_check
from verify.strategies import blocked_params

pytestmark = pytest.mark.claim("A1")


def test_blockcausal_model_is_autoregressive_and_slow_input_is_block_constant(claim):
    claim.holds({}, seed=7)


@given(
    params=blocked_params(
        dict(N=(1, 4), P=(1, 4), d=(1, 4), L=(1, 3)),
        gate=st.floats(0.05, 3.0),
        mask=st.sampled_from(["causal", "block_causal"]),
    ),
    seed=st.integers(0, 2**16),
)
def test_autoregressive_for_random_sizes_weights_and_gates(params, seed):
    result = run_check("A1", params, seed=seed)
    assert result.outcome == "holds", result.summary()
