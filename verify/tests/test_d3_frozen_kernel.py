"""D3: on token-homogeneous states every attention is the frozen kernel K_mask; fast layers keep
homogeneous states homogeneous, and the stack runs the single-token map.

The verdict is decided by :data:`verify.checks.d3.CLAIM`; these tests only read it. The negative
controls (heterogeneous input, open gate with a block-local and with the global mask — the slow
path with U_c gives block 1 zero —, heterogeneous injection target) run in
``verify/tests/test_negative_controls.py``.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.verify.portability import assert_portable
from fastslow.verify.registry import get_claim, run_check
from fastslow.verify.strategies import block_local_masks, blocked_params
from fastslow.verify.systems import DepthFlow

pytestmark = pytest.mark.claim("D3")

CLAIM = get_claim("D3")


@pytest.mark.parametrize("mask", NAMED_MASKS)
def test_kernel_is_frozen_along_the_homogeneous_trajectory(claim, mask):
    result = run_check("D3", {"mask": mask, "gamma": 0.5}, seed=3)
    if mask == "causal":
        claim.main(result)
    assert result.outcome == "holds", result.summary()


DECIDING_FIGURES = (
    "max_kernel_deviation_along_depth",
    "max_kernel_deviation_fresh_qk_and_temperatures",
    "max_relative_row_spread",
    "max_relative_gap_to_single_token_map",
)
"""The measured values the four conclusion parts decide on."""


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIM.controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """D3 calls no eigen/singular-vector routine; other valid LAPACK answers change nothing: the
    same outcome, the same decided parts and bitwise the same values they decide on."""
    assert_portable(
        "D3", {"L": 2}, 3, control=control, figures=DECIDING_FIGURES, lapack_seeds=(0, 1), cond=1e16
    )


@given(
    params=blocked_params(
        dict(N=(1, 4), P=(1, 4), d=(1, 5), L=(1, 4)),
        mask=st.sampled_from(NAMED_MASKS),
        scale=st.floats(0.1, 2.0),
        qk_scale=st.floats(0.1, 10.0),
        temperatures=st.tuples(st.floats(1e-3, 1e2)),
        n_draws=st.just(1),
    ),
    seed=st.integers(0, 2**16),
)
def test_frozen_kernel_for_random_sizes_weights_and_temperatures(params, seed):
    result = run_check("D3", params, seed=seed)
    assert result.outcome == "holds", result.summary()


def test_bad_parameters_raise_clear_errors():
    with pytest.raises(ValueError, match="temperatures"):
        run_check("D3", {"temperatures": (-1.0,)}, seed=0)
    with pytest.raises(ValueError, match="P=3 must divide"):
        run_check("D3", {"P": 3}, seed=0)
    with pytest.raises(ValueError, match="n_draws"):
        CLAIM.resolve({"n_draws": 0})
    one = run_check("D3", {"L": 1}, seed=0)
    assert one.outcome == "holds" and np.isfinite(one.figures["max_relative_row_spread"])


# --------------------------------------------------------------------------- your own flow


@given(block_local_masks(), st.sampled_from(["tanh", "relu", "gelu"]), st.integers(0, 2**16))
def test_any_user_mask_freezes_to_its_own_kernel_on_a_homogeneous_state(mask, sigma, seed):
    v = run_check("D3", seed=seed, system=DepthFlow(mask=mask, P=4, d=2, L=3, sigma=sigma))
    assert v.outcome == "holds", v.summary()


def test_a_user_flow_with_an_open_gate_and_a_global_mask_is_outside_and_its_kernel_moves():
    v = run_check("D3", system=DepthFlow(mask="causal", T=6, P=3, d=3, L=3, gate=0.5))
    assert v.outcome == "outside-hypotheses" and v.violated == ["slow_path_closed"]
    assert v.figures["max_kernel_deviation_along_depth"] > 1e-3
