"""Robustness: the public API and the command line under invalid and extreme inputs.

Every call must end in a correct result or a clear ``ValueError``/``TypeError`` (or
``FloatingPointError`` for an overflowing stack) — never a silent NaN, a stray exception type,
a RuntimeWarning or a hang.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastslow.cli import main
from fastslow.numerics.model.layer import stack
from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import ModelConfig, init_model

weird_numbers = st.one_of(
    st.integers(-10, 40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 1e-300, 1e300, True, None, "3", 2.5]),
)


@given(
    T=weird_numbers,
    P=weird_numbers,
    d=weird_numbers,
    h=weird_numbers,
    gamma=weird_numbers,
    mask=st.sampled_from(list(NAMED_MASKS) + ["bogus", 3]),
)
def test_model_config_accepts_or_rejects_cleanly(T, P, d, h, gamma, mask):
    try:
        cfg = ModelConfig(T=T, P=P, d=d, h=h, gamma=gamma, mask=mask)
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return
    assert cfg.T % cfg.P == 0 and cfg.h > 0 and cfg.gamma >= 0


magnitudes = st.sampled_from([1e-300, 1e-8, 1.0, 1e4, 1e100, 1e149, 1e151, 1e300])


@settings(max_examples=40)
@given(
    N=st.integers(1, 4),
    P=st.integers(1, 4),
    d=st.integers(1, 4),
    L=st.integers(1, 12),
    x_scale=magnitudes,
    w_scale=st.sampled_from([0.0, 1e-6, 1.0, 30.0, 1e4]),
    norm=st.booleans(),
    gamma=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 99),
)
def test_stack_returns_finite_values_or_a_clear_error(
    N, P, d, L, x_scale, w_scale, norm, gamma, seed
):
    cfg = ModelConfig(T=N * P, P=P, d=d, norm=norm, gamma=gamma, sigma="identity")
    model = init_model(cfg, L, seed, scale=w_scale, gate=0.5)
    X0 = x_scale * np.random.default_rng(seed).standard_normal((cfg.T, d))
    try:
        out = stack(model, X0)
    except (ValueError, FloatingPointError) as exc:
        assert "magnitude" in str(exc) or "overflowing" in str(exc)
        return
    assert np.all(np.isfinite(out))


@settings(max_examples=30)
@given(
    key=st.sampled_from(["T", "P", "d", "L", "gate", "mask", "slow_mask", "scale", "nope"]),
    value=st.sampled_from(
        [
            "0",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e-300",
            "1e300",
            "",
            "x",
            "2.5",
            "true",
            "causal",
            "full",
            "7",
        ]
    ),
)
def test_check_command_exits_with_a_verdict_code_or_2_on_any_parameter(key, value):
    code = main(
        ["check", "A1", "--param", f"{key}={value}", "--param", "T=8", "--param", "P=2"]
        if key not in ("T", "P")
        else ["check", "A1", "--param", f"{key}={value}"]
    )
    assert code in (0, 1, 2, 4)


@pytest.mark.parametrize("args", [["check"], ["nonsense"], ["check", "A1", "--seed", "x"], []])
def test_argument_errors_exit_2(args):
    assert main(args) == 2


def _claim_keys():
    from fastslow.verify.registry import CLAIMS

    return [(c, k) for c, unit in CLAIMS.items() if unit.implemented for k in unit.params]


@settings(max_examples=20)
@given(
    claim_key=st.sampled_from(_claim_keys()),
    value=st.sampled_from(["-1", "nan", "inf", "1e300", "x", ""]),
)
def test_every_claim_check_exits_with_a_verdict_code_or_2_on_extreme_parameters(claim_key, value):
    claim, key = claim_key
    assert main(["check", claim, "--param", f"{key}={value}"]) in (0, 1, 2, 4)
