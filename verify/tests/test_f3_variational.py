"""F3: a softmax MLP trained on E_y KL(p_st ‖ φ_θ) approaches p_st (error falls with width and
steps, reaches max TV ≤ 1e-2); attention's token-mixing operator is not a generator.

The verdict is decided by :data:`verify.checks.f3.CLAIM`; these tests only read it. The negative
controls run in ``verify/tests/test_negative_controls.py``.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model.layer import attention_kernel
from fastslow.numerics.model.masks import frozen_kernel
from fastslow.numerics.model.weights import ModelConfig, init_model
from fastslow.numerics.toy import markov, variational
from fastslow.verify.checks.f3 import value_map_generator_form_violation
from fastslow.verify.portability import assert_portable
from fastslow.verify.registry import CLAIMS, run_check

pytestmark = pytest.mark.claim("F3")


def _main_params(thorough):
    if thorough:
        return {
            "widths": (1, 2, 4, 8, 16, 32, 64),
            "steps": (0, 300, 1000, 3000, 10000),
            "n_seeds": 5,
            "attn_seeds": 20,
        }
    return {}


def test_mlp_approaches_p_st_and_attention_operator_is_not_a_generator(claim, thorough):
    result = claim.main(run_check("F3", _main_params(thorough), seed=11))
    assert result.outcome == "holds", result.summary()


SMALL = {
    "widths": (2, 4),
    "steps": (0, 50),
    "n_seeds": 3,  # 2 widths × 2 seeds could not show the width trend (bad input)
    "n_train": 16,
    "n_test": 20,
    "attn_seeds": 2,
}


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["F3"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """F3 calls no non-unique decomposition; other valid LAPACK answers leave the verdict and the
    figures bitwise unchanged."""
    params = SMALL if control is None else {"n_train": 16, "n_test": 20, "attn_seeds": 2}
    assert_portable(
        "F3",
        params,
        11,
        control=control,
        figures=("best_final_max_tv", "min_violation_frozen", "min_violation_linearised"),
    )


@given(
    mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
    blocks=st.integers(1, 3),
    P=st.integers(1, 3),
    d=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_frozen_operator_on_homogeneous_state_is_exactly_K_kron_I(mask, blocks, P, d, seed):
    T = blocks * P
    cfg = ModelConfig(T=T, P=P, d=d, mask=mask, norm=False)
    lp = init_model(cfg, 1, seed).layers[0]
    lp.V = np.eye(d)
    X = np.tile(np.random.default_rng(seed).standard_normal(d), (T, 1))
    assert np.array_equal(attention_kernel(cfg, lp, X), frozen_kernel(mask, T, P))
    M = markov.attention_mixing_operator(cfg, lp, X, "frozen")
    assert np.array_equal(M, np.kron(frozen_kernel(mask, T, P), np.eye(d)))
    viol = markov.generator_violation(M - np.eye(T * d), "row")
    assert viol["negative_offdiag"] == 0.0 and viol["sum_defect"] <= 4 * np.finfo(float).eps


def test_bad_parameters_raise_naming_them():
    with pytest.raises(ValueError, match="violation_tol"):
        CLAIMS["F3"].resolve({"violation_tol": 1e-15})  # below T·d·eps = 32·eps
    with pytest.raises(ValueError, match="steps"):
        CLAIMS["F3"].resolve({"steps": (300, 0)})
    with pytest.raises(ValueError, match="y_max"):
        CLAIMS["F3"].resolve({"y_min": 1.0, "y_max": -1.0})


@given(d=st.integers(2, 4), seed=st.integers(0, 2**16))
def test_frozen_operator_is_a_generator_iff_value_map_has_the_generator_form(d, seed):
    """A ⊗ Vᵀ − I is a generator for a non-negative V with unit column sums (V ≠ I in general),
    and the hypothesis value_map_breaks_generator_form measures exactly that form."""
    cfg = ModelConfig(T=4, P=2, d=d, mask="causal", norm=True)
    rng = np.random.default_rng(seed)
    lp = init_model(cfg, 1, seed).layers[0]
    X = rng.standard_normal((4, d))
    V = rng.random((d, d))
    lp.V = V / V.sum(axis=0)
    A = attention_kernel(cfg, lp, X)
    vf = value_map_generator_form_violation(lp.V, A)
    assert vf["negative_rel"] == 0.0 and vf["column_sum_defect_rel"] <= d * np.finfo(float).eps
    viol = markov.generator_violation(
        markov.attention_mixing_operator(cfg, lp, X, "frozen") - np.eye(4 * d), "row"
    )
    assert viol["negative_offdiag"] == 0.0 and viol["sum_defect"] <= 4 * d * np.finfo(float).eps


def _zero_gradient(loss_and_grad):
    def planted(params, U, P):
        loss, grads = loss_and_grad(params, U, P)
        return loss, {k: np.zeros_like(g) for k, g in grads.items()}

    return planted


def _ascent(loss_and_grad):
    def planted(params, U, P):
        loss, grads = loss_and_grad(params, U, P)
        return loss, {k: -g for k, g in grads.items()}

    return planted


@pytest.mark.parametrize("plant", [_zero_gradient, _ascent], ids=["step_does_nothing", "kl_ascent"])
def test_planted_training_bug_fails_the_step_part(monkeypatch, plant):
    """The step part reads the held-out mean KL, which falls strictly at every recorded step on
    the correct trainer; a training step that does not move the model, or that climbs the KL,
    must end ``fails`` on that part (planted in the trainer's gradient, one at a time)."""
    clean = run_check("F3", SMALL, seed=11)
    assert clean.conclusion["error_falls_with_steps"].holds, clean.summary()
    monkeypatch.setattr(variational, "_kl_loss_and_grad", plant(variational._kl_loss_and_grad))
    planted = run_check("F3", SMALL, seed=11)
    assert planted.outcome == "fails", planted.summary()
    assert not planted.conclusion["error_falls_with_steps"].holds, planted.summary()
