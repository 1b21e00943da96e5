"""The optimisers, step by step, against Adam and AdamW written from the published update rules
(:mod:`verify.reference.optim`: Kingma & Ba 2015, Algorithm 1; Loshchilov & Hutter 2019,
Algorithm 2).

Several steps are compared, each from the state the reference itself carried: the bias corrections
``1 − βᵗ`` differ from step to step, so a correction with the wrong step count, applied to the
wrong moment, or applied twice shows in the second step or later (a single step from zero moments
would hide some of them: ``m̂₁ = g₁`` whatever ``β₁`` is). The β's are far from each other and
from 0 and 1, and the gradients differ from step to step, so no coincidence hides a swap.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastslow.numerics.lm import optim
from fastslow.numerics.toy import variational
from fastslow.verify.reference.optim import adam_init, adamw_step

STEPS = 7
RTOL = 1e-13
"""A few units of rounding per step: the updates are computed in a different order."""


def _lm_params(rng) -> dict:
    return {
        "W": rng.standard_normal((3, 4)),  # a matrix: decayed
        "b": rng.standard_normal(4),  # a vector: not decayed
        "g": np.array(0.0),  # a gate (scalar): never decayed
        "frozen": rng.standard_normal((2, 2)),  # not trained: never moves
    }


@pytest.mark.parametrize("weight_decay", [0.0, 0.3])
def test_lm_adamw_matches_the_published_rule_step_by_step(weight_decay):
    """:class:`numerics.lm.optim.AdamW` over seven steps with different gradients, learning rates
    and clipping factors: every trained entry equals the reference after every step (the decay
    on matrices only, the gates never decayed, a frozen entry never moved)."""
    rng = np.random.default_rng(3)
    params = _lm_params(rng)
    trained = ("W", "b", "g")
    betas, eps = (0.7, 0.95), 1e-3  # eps large enough that placing it wrongly shows
    opt = optim.AdamW(params, trained, betas=betas, eps=eps, weight_decay=weight_decay)
    ref = {n: np.array(params[n], dtype=float) for n in trained}
    states = {n: adam_init(ref[n]) for n in trained}
    frozen = params["frozen"].copy()
    for step in range(STEPS):
        grads = {n: rng.standard_normal(np.shape(params[n])) for n in params}
        lr, scale = 0.05 * (1 + step) / STEPS, float(rng.uniform(0.3, 1.0))
        opt.step(params, grads, lr, scale)
        for n in trained:
            ref[n] = adamw_step(
                ref[n],
                grads[n] * scale,
                states[n],
                lr,
                beta1=betas[0],
                beta2=betas[1],
                eps=eps,
                weight_decay=weight_decay if np.ndim(params[n]) == 2 else 0.0,
            )
            np.testing.assert_allclose(params[n], ref[n], rtol=RTOL, atol=1e-15, err_msg=n)
        assert opt.t == step + 1
        np.testing.assert_array_equal(params["frozen"], frozen)


def test_lm_adamw_resumes_from_its_saved_state_on_the_reference_path():
    """Saving and loading the optimiser state mid-run continues on the same reference path."""
    rng = np.random.default_rng(5)
    params = _lm_params(rng)
    trained = ("W", "g")
    opt = optim.AdamW(params, trained, betas=(0.8, 0.9), eps=1e-4, weight_decay=0.1)
    ref = {n: np.array(params[n], dtype=float) for n in trained}
    states = {n: adam_init(ref[n]) for n in trained}
    for step in range(STEPS):
        if step == 3:
            saved = opt.state()
            opt = optim.AdamW(params, trained, betas=(0.8, 0.9), eps=1e-4, weight_decay=0.1)
            opt.load(saved)
        grads = {n: rng.standard_normal(np.shape(params[n])) for n in params}
        opt.step(params, grads, 0.02)
        for n in trained:
            wd = 0.1 if np.ndim(params[n]) == 2 else 0.0
            ref[n] = adamw_step(
                ref[n], grads[n], states[n], 0.02, beta1=0.8, beta2=0.9, eps=1e-4, weight_decay=wd
            )
            np.testing.assert_allclose(params[n], ref[n], rtol=RTOL, atol=1e-15, err_msg=n)


def _scheduled_lr(lr: float, ratio: float, it: int, steps: int) -> float:
    """The documented cosine schedule of :func:`numerics.toy.variational.train`: from ``lr`` at the
    first step towards ``lr·ratio``, ``lr(ratio + (1 − ratio)(1 + cos(π(it − 1)/steps))/2)``."""
    return lr * (ratio + (1 - ratio) * 0.5 * (1 + np.cos(np.pi * (it - 1) / steps)))


@pytest.mark.parametrize("final_lr_ratio", [1.0, 0.2])
def test_f3_adam_matches_the_published_rule_step_by_step(final_lr_ratio):
    """F3's full-batch Adam (:func:`numerics.toy.variational.train`), recorded after every step,
    against the reference fed the same gradient (the KL gradient at the recorded parameters; the
    gradient itself is checked against finite differences in ``tests/test_variational.py``)."""
    width, n_out = 5, 3
    rng = np.random.default_rng(11)
    theta0 = variational.init_mlp(width, n_out, seed=2)
    Y = np.linspace(-1.0, 1.0, 9)
    P = rng.dirichlet(np.ones(n_out), size=Y.size)
    betas, eps, lr = (0.8, 0.9), 1e-4, 0.05
    _, hist = variational.train(
        theta0,
        Y,
        P,
        STEPS,
        lr=lr,
        betas=betas,
        adam_eps=eps,
        final_lr_ratio=final_lr_ratio,
        record=range(STEPS + 1),
    )
    snaps = hist["snapshots"]
    states = {k: adam_init(theta0[k]) for k in variational.PARAM_NAMES}
    ref = {k: np.array(theta0[k], dtype=float) for k in variational.PARAM_NAMES}
    for it in range(1, STEPS + 1):
        loss, grads = variational.kl_loss_and_grad(ref, Y, P)
        assert loss == pytest.approx(hist["loss"][it - 1], rel=1e-12)
        a = _scheduled_lr(lr, final_lr_ratio, it, STEPS)
        for k in variational.PARAM_NAMES:
            ref[k] = adamw_step(
                ref[k], grads[k], states[k], a, beta1=betas[0], beta2=betas[1], eps=eps
            )
            np.testing.assert_allclose(snaps[it][k], ref[k], rtol=RTOL, atol=1e-15, err_msg=k)


def test_gate_noise_band_simulates_the_published_rule():
    """The noise band's simulation (:func:`numerics.lm.optim.gate_noise_band`) is AdamW without
    decay from ``θ = 0`` on the same unit Gaussian gradients (drawn in order from the seed): the
    reference run gives the same final SD, and the band is ``z·sd`` with ``z`` SciPy's two-sided
    normal quantile at ``alpha/gates``."""
    from scipy import stats

    sch = optim.Schedule(lr=0.01, warmup=3, steps=12)
    betas, eps, sims, gates, alpha = (0.85, 0.97), 1e-6, 500, 3, 0.05
    band = optim.gate_noise_band(
        sch, betas=betas, eps=eps, gates=gates, alpha=alpha, sims=sims, seed=4
    )
    rng = np.random.default_rng(4)
    theta, state = np.zeros(sims), adam_init(np.zeros(sims))
    for s in range(sch.steps):
        lr = optim.learning_rate(sch, s)
        theta = adamw_step(
            theta, rng.standard_normal(sims), state, lr, beta1=betas[0], beta2=betas[1], eps=eps
        )
    assert band["sd"] == pytest.approx(float(theta.std()), rel=1e-12)
    z = stats.norm.isf(alpha / gates / 2)
    assert band["z"] == pytest.approx(z, rel=1e-12)
    assert band["band"] == pytest.approx(z * theta.std(), rel=1e-12)


def test_the_reference_sees_a_misplaced_bias_correction():
    """The comparison is sharp: Adam with the second moment's correction at ``t − 1`` (or ``m``
    corrected by ``β₂``) leaves the reference path by the second step by far more than
    :data:`RTOL`."""
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(6)
    st, b1, b2, eps = adam_init(theta), 0.7, 0.95, 1e-8
    wrong_m, wrong_v, wrong = np.zeros(6), np.zeros(6), theta.copy()
    ref = theta.copy()
    deviations = []
    for t in range(1, 4):
        g = rng.standard_normal(6)
        ref = adamw_step(ref, g, st, 0.1, beta1=b1, beta2=b2, eps=eps)
        wrong_m = b1 * wrong_m + (1 - b1) * g
        wrong_v = b2 * wrong_v + (1 - b2) * g * g
        v_hat = wrong_v / (1 - b2 ** max(t - 1, 1))
        wrong = wrong - 0.1 * (wrong_m / (1 - b1**t)) / (np.sqrt(v_hat) + eps)
        deviations.append(float(np.abs(wrong - ref).max() / np.abs(ref).max()))
    assert deviations[0] <= RTOL and min(deviations[1:]) > 1e3 * RTOL
