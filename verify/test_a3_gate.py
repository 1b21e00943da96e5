"""A3: a zero gate hides the slow path exactly (output, slow-weight gradients), and the gate
gradient is h·⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩."""

import pytest
from hypothesis import given, strategies as st

from verify.checks import run_check

pytestmark = pytest.mark.claim("A3")


def test_zero_gate_hides_the_slow_path_exactly(claim):
    result = claim.main(run_check("A3", {}, seed=11))
    f = result.figures
    assert result.hypotheses_hold
    assert f["output_equal_to_fast_only"] and f["max_abs_output_difference"] == 0.0
    assert f["loss_change_when_every_slow_weight_moves"] == 0.0
    assert f["nonzero_slow_weight_gradient_entries"] == 0 and f["max_abs_slow_weight_gradient"] == 0.0
    assert f["max_abs_fast_weight_gradient"] > 1e-3  # the reverse sweep is not trivially zero
    assert f["gate_identity_max_relative_difference"] == 0.0
    assert f["gate_gradient_fd_max_relative_error"] <= result.tolerance["gate_gradient_fd_rel"]
    assert f["gate_gradient_fd_error_over_allowance"] <= 1.0
    assert min(abs(g) for g in f["gate_gradients"]) > 1e-3  # the gate is trainable from g = 0
    assert result.holds, result.summary()
    claim.figure("output_bytes_equal_to_fast_only", f["output_bytes_equal_to_fast_only"])


def test_zero_gate_with_injection_no_norm_and_full_slow_mask():
    result = run_check("A3", {"norm": False, "gamma": 0.5, "slow_scale": 10.0,
                              "slow_mask": "full", "sigma": "identity"}, seed=12)
    assert result.holds, result.summary()


def test_negative_control_nonzero_gate_reveals_the_slow_path(claim):
    result = claim.negative(run_check("A3", {"gate": 0.5}, seed=11))
    f = result.figures
    assert not result.hypotheses_hold
    assert not result.holds
    assert not f["output_equal_to_fast_only"]
    assert f["relative_output_difference"] > 1e-2
    assert f["nonzero_slow_weight_gradient_entries"] > 0
    assert f["max_abs_slow_weight_gradient"] > 1e-3
    claim.note(f"negative control (gate≈0.5, slow weights of scale 1e3): output differs by "
               f"{f['relative_output_difference']:.3g} relative; {f['nonzero_slow_weight_gradient_entries']}"
               f" of {f['slow_weight_gradient_entries']} slow-weight gradient entries are non-zero "
               "(the large slow scores saturate the slow softmax, so only Vs receives gradient)")
    # the gate identity and its finite difference hold for every g
    assert f["gate_identity_max_relative_difference"] == 0.0
    assert f["gate_gradient_fd_max_relative_error"] <= result.tolerance["gate_gradient_fd_rel"]
    assert f["gate_gradient_fd_error_over_allowance"] <= 1.0


@given(N=st.integers(2, 4), P=st.integers(1, 3), d=st.integers(1, 4), L=st.integers(1, 3),
       mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
       slow_mask=st.sampled_from(["blockcausal", "full"]), norm=st.booleans(),
       sigma=st.sampled_from(["tanh", "identity"]), gamma=st.sampled_from([0.0, 0.5]),
       slow_scale=st.sampled_from([0.1, 1.0, 30.0, 1000.0]), seed=st.integers(0, 2**16))
def test_zero_gate_property_over_random_instances(N, P, d, L, mask, slow_mask, norm, sigma, gamma,
                                                  slow_scale, seed):
    if not norm and slow_scale > 30:
        slow_scale = 30.0  # without the norm the slow scores grow like slow_scale²·|X|²
    params = {"T": N * P, "P": P, "d": d, "L": L, "mask": mask, "slow_mask": slow_mask,
              "norm": norm, "sigma": sigma, "gamma": gamma, "slow_scale": slow_scale}
    result = run_check("A3", params, seed=seed)
    f = result.figures
    assert f["output_equal_to_fast_only"]
    assert f["loss_change_when_every_slow_weight_moves"] == 0.0
    assert f["nonzero_slow_weight_gradient_entries"] == 0
    assert f["gate_identity_max_relative_difference"] == 0.0
    assert f["gate_gradient_fd_error_over_allowance"] <= 1.0, f


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="fd_step"):
        run_check("A3", {"fd_step": "0.5"}, seed=0)
    with pytest.raises(ValueError, match="quad"):
        run_check("A3", {"quad": -1.0}, seed=0)
    with pytest.raises(ValueError, match="P=3 must divide"):
        run_check("A3", {"P": 3}, seed=0)
