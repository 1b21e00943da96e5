"""F3: a softmax MLP trained on E_y KL(p_st ‖ φ_θ) approaches p_st (error falls with width and
steps, reaches max TV ≤ 1e-2); attention's token-mixing operator is not a generator.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from numerics import markov as mk
from numerics.layer import attention_kernel
from numerics.masks import frozen_kernel
from numerics.model import ModelConfig, init_model
from verify.checks import run_check

pytestmark = pytest.mark.claim("F3")


def _main_params(thorough):
    if thorough:
        return {"widths": (1, 2, 4, 8, 16, 32, 64), "steps": (0, 300, 1000, 3000, 10000),
                "n_seeds": 5, "attn_seeds": 20}
    return {}


def test_mlp_approaches_p_st_and_attention_operator_is_not_a_generator(claim, thorough):
    result = claim.main(run_check("F3", _main_params(thorough), seed=11))
    f, tol = result.figures, result.tolerance
    assert result.hypotheses_hold
    # (a) the error falls with width (one-sided Kendall trend test, 5% level) ...
    assert f["width_trend_kendall"]["tau"] < 0 and f["width_trend_kendall"]["p_value"] < 0.05, \
        f["width_trend_kendall"]
    # ... and with steps (median max TV over widths at each recorded step)
    by_step = list(f["median_max_tv_by_steps"].values())
    assert all(b < a for a, b in zip(by_step, by_step[1:])), by_step
    # ... and reaches the threshold; the best is far below the best constant predictor
    assert f["best_final_max_tv"] <= tol["max_tv_threshold"], f["final_max_tv_by_width"]
    assert f["best_final_max_tv"] < 0.1 * f["constant_predictor"]["max_tv"]
    # (b) the attention matrix alone is a generator (to rounding), its operators are not
    assert f["max_violation_attention_matrix"] <= 1e3 * np.finfo(float).eps
    assert f["min_violation_frozen"] > 1e6 * tol["violation_rel"]
    assert f["min_violation_linearised"] > 1e6 * tol["violation_rel"]
    gv = f["generator_violation"]
    for kind in ("frozen", "linearised"):  # both conditions break, not just one
        assert gv[kind]["negative_mass_fraction"]["min"] > 0.1
        assert gv[kind]["sum_defect_rel"]["min"] > 0.1
    # attribution on the same states: without the value map the frozen operator A ⊗ I is a
    # generator; with V = I and no norm the linearisation still is not (the dA/dX term)
    eps = np.finfo(float).eps
    assert gv["frozen_identity_value"]["negative_offdiag"]["max"] == 0.0
    assert gv["frozen_identity_value"]["sum_defect"]["max"] <= 1e3 * eps
    assert gv["linearised_identity_value_no_norm"]["negative_offdiag_rel"]["min"] > 0.1
    assert gv["linearised_identity_value_no_norm"]["sum_defect_rel"]["min"] > 0.05
    assert result.holds, result.summary()
    claim.figure("final_max_tv_by_width", f["final_max_tv_by_width"])
    claim.figure("final_mean_kl_by_width", f["final_mean_kl_by_width"])
    claim.figure("violation_frozen_median", {k: v["median"] for k, v in gv["frozen"].items()})
    claim.figure("violation_linearised_median",
                 {k: v["median"] for k, v in gv["linearised"].items()})


def test_negative_control_discontinuous_target_is_not_reached(claim):
    """Outside the F2 regime (a chain reducible at y = 0) p_st jumps; the MLP stays above the
    threshold uniformly even though training lowers the error."""
    result = claim.negative(run_check("F3", {"target": "discontinuous"}, seed=11))
    f, tol = result.figures, result.tolerance
    assert not result.hypotheses_hold and not result.holds
    assert f["best_final_max_tv"] > 10 * tol["max_tv_threshold"]
    assert not f["reaches_threshold"]


@pytest.mark.parametrize("override", [{"widths": (1,)}, {"steps": (0,)}])
def test_negative_control_width_one_or_untrained_stays_above_threshold(claim, override):
    result = claim.negative(run_check("F3", override, seed=11))
    f, tol = result.figures, result.tolerance
    assert not result.hypotheses_hold and not result.holds
    assert f["best_final_max_tv"] > 3 * tol["max_tv_threshold"], f["final_max_tv_by_width"]


def test_negative_control_homogeneous_identity_value_operator_is_a_generator(claim):
    """On a token-homogeneous state with V = I and no norm, the operator is K ⊗ I: a generator.
    The measurement returns 0 (frozen: exactly; linearised: to rounding)."""
    params = {"state": "homogeneous", "value_map": "identity", "norm": False,
              "widths": (2,), "steps": (0, 10)}  # the MLP part is not under test here
    result = claim.negative(run_check("F3", params, seed=11))
    gv = result.figures["generator_violation"]
    assert not result.hypotheses_hold and not result.holds
    assert not result.figures["attention_not_a_generator"]
    assert gv["frozen"]["negative_offdiag"]["max"] == 0.0
    assert gv["frozen"]["sum_defect"]["max"] <= 4 * np.finfo(float).eps
    assert gv["linearised"]["negative_offdiag"]["max"] <= 1e3 * np.finfo(float).eps
    assert gv["linearised"]["sum_defect"]["max"] <= 1e3 * np.finfo(float).eps


@given(mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
       blocks=st.integers(1, 3), P=st.integers(1, 3), d=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_frozen_operator_on_homogeneous_state_is_exactly_K_kron_I(mask, blocks, P, d, seed):
    T = blocks * P
    cfg = ModelConfig(T=T, P=P, d=d, mask=mask, norm=False)
    lp = init_model(cfg, 1, seed).layers[0]
    lp.V = np.eye(d)
    X = np.tile(np.random.default_rng(seed).standard_normal(d), (T, 1))
    assert np.array_equal(attention_kernel(cfg, lp, X), frozen_kernel(mask, T, P))
    M = mk.attention_mixing_operator(cfg, lp, X, "frozen")
    assert np.array_equal(M, np.kron(frozen_kernel(mask, T, P), np.eye(d)))
    viol = mk.generator_violation(M - np.eye(T * d), "row")
    assert viol["negative_offdiag"] == 0.0 and viol["sum_defect"] <= 4 * np.finfo(float).eps
