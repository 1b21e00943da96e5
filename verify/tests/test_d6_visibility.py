"""D6: along the token-homogeneous trajectory Q, K are invisible to all orders, E_d forcing does not
move the persistent component at first order (block means: second order, causal masks: never), the
kernel's first-order change annihilates the state, and the slow coupling G = U_c K_s B reads and
writes only block-constant information (block_causal gap: ‖G(I − Π)‖ = √(P − 1)‖G‖).

The verdict is decided by :data:`verify.checks.d6.CLAIM`; these tests only read it. The negative
controls (heterogeneous references) run in ``verify/tests/test_negative_controls.py``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastslow.theory.stability import slow_coupling_algebra
from fastslow.verify.checks.d6 import measurements, parts
from fastslow.verify.portability import assert_same_decision, under_other_answers
from fastslow.verify.registry import CLAIMS, run_check

pytestmark = pytest.mark.claim("D6")


def test_block_bidirectional_qk_invisible_and_block_mean_moves_at_second_order(claim):
    claim.holds({}, seed=0)


@pytest.mark.parametrize("mask", ["causal", "block_causal"])
def test_causal_masks_persistent_component_never_moves(claim, mask):
    claim.holds({"mask": mask}, seed=0)


def test_gate_and_slow_values_first_order_slow_qk_third_order(claim):
    claim.holds({"mask": "block_causal"}, seed=3)


def test_weakly_visible_jvp_column(claim):
    """Seed 106: the checked V column moves X_L by only 1.5e-4 of its size, so a central difference
    at h = 1e-6 is off by rounding (1.2e-6 relative); the Taylor-remainder rule decides order 2."""
    claim.holds({}, seed=106)


def test_slow_coupling_algebra_exact_in_rationals():
    for N, P in ((2, 2), (3, 4), (4, 3)):
        out = slow_coupling_algebra(N, P)
        for key in (
            "G_times_I_minus_UB",
            "I_minus_UB_times_G",
            "I_minus_Pi_times_G",
            "gap_gram_minus_scaled_gram",
        ):
            assert out[key].is_zero_matrix, (N, P, key)


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["D6"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """Another orthonormal basis of ker Lᵀ (the E_d bundle) and other singular-vector signs (two
    seeds): same outcome, same decided parts, same ranks, key figures within 1e-9 (relative to the
    map's largest singular value for the vanishing ones)."""
    ref, others = under_other_answers("D6", control=control)
    for other in others:
        assert_same_decision(ref, other)
        assert other.figures["visibility_ranks"] == ref.figures["visibility_ranks"]
        for key in CLAIMS["D6"].key_figures:
            a, b = ref.figures[key], other.figures[key]
            assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), (key, a, b)


_EXAMPLES = 10 if settings.default.max_examples <= 25 else 150


@settings(max_examples=_EXAMPLES)
@given(
    mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
    N=st.integers(1, 3),
    P=st.integers(2, 3),
    d=st.integers(2, 3),
    L=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_random_instances(mask, N, P, d, L, seed):
    result = run_check(
        "D6",
        {"T": N * P, "P": P, "d": d, "L": L, "mask": mask, "gate_sweep": (1e-3, 1e-1)},
        seed=seed,
    )
    assert result.outcome == "holds", result.summary()


def test_larger_instances(claim, thorough, check_sweep):
    """Default: one more seed per mask; --thorough: wider sizes (T = 16, d = 6, L = 4)."""
    cases = [{"mask": m} for m in ("causal", "block_causal", "block_bidirectional")]
    if thorough:
        cases += [
            {"mask": m, "T": 16, "P": 4, "d": 6, "L": 4}
            for m in ("causal", "block_causal", "block_bidirectional")
        ]
    for params, result in zip(cases, check_sweep([dict(p, claim="D6", seed=11) for p in cases])):
        assert claim.main(result).outcome == "holds", (params, result.summary())


@pytest.mark.parametrize(
    "params, name",
    [
        ({"gamma": 0.0}, "gamma"),
        ({"s_min": 0.1, "s_max": 0.01}, "s_max"),
        ({"gate_sweep": (0.1, 0.01)}, "gate_sweep"),
        ({"n_s": 2}, "n_s"),
        ({"T": 32, "d": 8}, "T"),
        ({"T": 10}, "P"),
    ],
)
def test_bad_parameters_are_rejected_before_any_work(params, name):
    with pytest.raises(ValueError, match=name):
        CLAIMS["D6"].resolve(params)


def test_persistent_inputs_stay_visible_at_depth_16_where_their_responses_spread_over_decades():
    """At T = 32, L = 16 the persistent inputs' singular values fall in groups down to 1.7e-7 of
    the block's largest (2.7e-11 of the whole map's): all 32 are resolved above rounding, so the
    rank is full; a threshold relative to the whole map's largest would have said 24."""
    v = run_check("D6", {"T": 32, "P": 4, "d": 4, "L": 16})
    assert v.outcome == "holds", v.summary()
    assert v.figures["visibility_ranks"]["X0_Ep"] == v.figures["persistent_dim"] == 32


def test_visible_directions_decides_at_the_bounds_its_rule_states():
    """The rank bounds ``1 ≤ rank V ≤ d`` and ``rank all ≤ d + L``: decided at exactly those
    values, and the rule shown to the reader states the same numbers."""

    def f(v_rank, all_rank):
        return {
            "visibility_ranks": {"V": v_rank, "X0_Ep": 2},
            "parameter_map_rank": all_rank,
            "persistent_dim": 2,
            "Ep_first_order_persistent_rel": 0.5,
        }

    d, L = 3, 5
    assert parts.visible_directions(f(3, 8), d, L).holds
    assert not parts.visible_directions(f(3, 9), d, L).holds
    assert not parts.visible_directions(f(4, 8), d, L).holds
    assert not parts.visible_directions(f(0, 8), d, L).holds
    rule = parts.visible_directions(f(3, 8), d, L).rule
    assert "rank V ≤ d = 3" in rule and "rank all ≤ d + L = 8" in rule


@pytest.mark.parametrize("scale", [0.01, 1.0])
def test_the_taylor_ladder_is_in_units_of_the_entrys_own_scale(scale):
    """The JVP's Taylor test moves ``V[0, 0]`` of layer 0 by ``h_j = s·10^(−j/4)``, ``j ≥ 1``, with
    ``s = RMS(V_0)``: the ladder scales with the weights it perturbs."""
    claim = CLAIMS["D6"]
    inst = claim.build(claim.resolve({"scale": scale}), 0)
    s = float(np.sqrt(np.mean(inst.model.layers[0].V ** 2)))
    h = measurements.taylor_test_figures(inst)["jvp_taylor_remainder"]["h"]
    assert h[0] == pytest.approx(s * 10 ** (-1 / 4), rel=1e-14)
    assert np.allclose(np.diff(np.log10(h)), -0.25, rtol=0, atol=1e-12)


def test_a_blocks_rank_counts_singular_values_above_its_own_largest_times_rtol_and_rounding():
    """``block_rank``: relative to the block's own largest singular value (``rtol``) and above the
    whole map's rounding (``1e3·u·scale``), whichever is larger; an empty block has rank 0."""
    u = np.finfo(float).eps
    assert measurements.block_rank(np.array([2.0, 1e-3, 1e-4]), 2.0, 1e-3) == 1  # 1e-3 < 2e-3
    assert measurements.block_rank(np.array([2.0, 3e-3, 1e-4]), 2.0, 1e-3) == 2
    # a block far below the whole map: its own scale decides, until rounding of the map does
    assert measurements.block_rank(np.array([1e-6, 1e-10]), 1.0, 1e-3) == 1
    assert measurements.block_rank(np.array([1e-6, 1e-8]), 1.0, 1e-3) == 2
    assert measurements.block_rank(np.array([500 * u, 100 * u]), 1.0, 1e-3) == 0
    assert measurements.block_rank(np.array([]), 1.0, 1e-3) == 0
