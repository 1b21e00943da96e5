"""numerics.model.cost: the FLOP model's algebra and its input checks (the count itself is claim A2's)."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model.cost import (
    attention_ratio,
    layer_flops,
    layer_ratio,
    layer_ratio_lower_bound_holds,
    matmul_flops,
)


def test_pieces_for_one_size():
    f = layer_flops(T=8, P=2, d=3, m=5)
    assert matmul_flops(2, 3, 4) == 48
    assert (f["fast_qkv"], f["fast_scores"], f["fast_mixing"], f["mlp"]) == (432, 384, 384, 480)
    assert (f["slow_qkv"], f["slow_scores"], f["slow_mixing"]) == (216, 96, 96)
    assert f["fast_layer"] == 432 + 768 + 480 and f["slow_path"] == 216 + 192
    assert f["layer"] == f["fast_layer"] + f["slow_path"]
    assert layer_flops(8, 2, 3)["mlp"] == 4 * 8 * 3 * 3  # m defaults to d


@given(N=st.integers(1, 64), P=st.integers(1, 64), d=st.integers(1, 256), k=st.integers(1, 8))
def test_ratios_and_the_exact_lower_bound_condition(N, P, d, k):
    T, m = N * P, k * d // 2 + 1
    assert attention_ratio(T, P, d) == Fraction(1, P * P)
    r = layer_ratio(T, P, d, m)
    assert r <= Fraction(1, P)
    assert (r >= Fraction(1, P * P)) == layer_ratio_lower_bound_holds(P, d, m)


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="P=3 must divide the sequence length T=8"):
        layer_flops(8, 3, 4)
    with pytest.raises(ValueError, match="d must be a positive integer"):
        layer_ratio(8, 2, 0)
    with pytest.raises(TypeError, match="m must be an integer"):
        layer_flops(8, 2, 4, m=2.5)
    with pytest.raises(TypeError, match="P must be an integer"):
        layer_ratio_lower_bound_holds(True, 4)
