"""A1: the slow path updates once per block, and the block-causal model is autoregressive.

The verdict is decided by :data:`verify.checks.a1.CLAIM`; these tests only read it. The negative
controls run in ``verify/tests/test_negative_controls.py``.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.verify.registry import run_check
from fastslow.verify.strategies import blocked_params
from fastslow.verify.systems import DepthFlow

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


def _holey_causal_mask(T: int = 8) -> np.ndarray:
    """Causal with holes: every token sees itself and the even tokens before it."""
    mask = np.tril(np.ones((T, T), dtype=bool))
    mask[:, 1::2] &= np.eye(T, dtype=bool)[:, 1::2]
    return mask


def test_a_user_flow_with_a_holey_causal_mask_is_autoregressive(claim):
    flow = DepthFlow(mask=_holey_causal_mask(), P=2, d=3, L=3, gate=0.7, seed=4)
    v = claim.main(run_check("A1", system=flow))
    assert v.outcome == "holds", v.summary()


def test_a_user_mask_with_one_future_entry_is_outside_the_hypotheses_and_leaks():
    mask = _holey_causal_mask()
    mask[2, 5] = True
    v = run_check("A1", system=DepthFlow(mask=mask, P=2, d=3, L=3, gate=0.7, seed=4))
    assert v.outcome == "outside-hypotheses" and v.violated == ["fast_mask_causal"]
    assert "no_future_dependence" in v.failed_parts  # the leak is measured, not assumed
