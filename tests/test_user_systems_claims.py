"""User systems on D4, D5, D6 and D7: a DepthFlow with your own mask, and D7 on a DepthFlow.

* D4, D5, D6 take a :class:`~verify.systems.DepthFlow` whose mask is a boolean array: a mask equal
  to a named one reproduces the named mask's verdict and key figures; a block-local mask that is no
  named one (blocks with different patterns) holds; what each claim answers on a mask that is not
  block-local, on a defective block kernel, on irrational block spectra and on several closed
  classes is the documented one (a hypothesis, or one line and exit 2).
* D7 takes a DepthFlow: J and G at the fixed point of its first layer, derived automatically.
* :mod:`verify.user_kernels`: the exact decomposition agrees with the named masks' closed forms.

Small instances only (T ≤ 12, d ≤ 3): each check takes about a second.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from fastslow.cli import main
from fastslow.numerics.analysis import linearised
from fastslow.numerics.model.masks import coarse_maps, frozen_kernel, make_mask
from fastslow.theory.kernels import kernel_constant as exact_named_constant
from fastslow.verify.checks import d7
from fastslow.verify.registry import CLAIMS, run_check
from fastslow.verify.strategies import block_local_masks
from fastslow.verify.systems import DepthFlow
from fastslow.verify.user_kernels import user_kernel

CAUSAL3 = np.tril(np.ones((3, 3), bool))
FULL3 = np.ones((3, 3), bool)
SKIP3 = np.array([[1, 0, 0], [1, 1, 0], [1, 0, 1]], bool)  # token 2 reads 0 and itself
DEFECTIVE3 = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], bool)  # eigenvalue 1/2 twice, 1 vector
CYCLIC3 = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], bool)  # eigenvalues: cube roots of 1
TWO_CLASSES3 = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 1]], bool)  # tokens 0 and 1 closed


def blocks(*patterns) -> np.ndarray:
    """The block-diagonal mask of the given P×P patterns."""
    P = patterns[0].shape[0]
    T = P * len(patterns)
    out = np.zeros((T, T), bool)
    for b, pat in enumerate(patterns):
        out[b * P : (b + 1) * P, b * P : (b + 1) * P] = pat
    return out


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


ROUNDING_FIGURE = 1e-14
"""A relative figure this small is a rounding residual (D6's vanishing quantities): two of them
agree when both are below it (the visibility map's ``L`` of a boolean mask is a float64 solve, the
named mask's a closed form, so their rounding differs)."""


def same_key_figures(cid: str, a, b) -> None:
    """The key figures of two verdicts agree: equal, or to 1e-13 relative (the user mask's ``c_K``
    is the 2-norm of the rounded exact projectors, the named one a closed form), or both rounding
    residuals (:data:`ROUNDING_FIGURE`)."""
    for key in CLAIMS[cid].key_figures:
        x, y = a.figures.get(key), b.figures.get(key)
        if isinstance(x, float) and isinstance(y, float) and np.isfinite(x):
            if max(abs(x), abs(y)) <= ROUNDING_FIGURE:
                continue
            assert y == pytest.approx(x, rel=1e-13, abs=0.0), (key, x, y)
        else:
            assert x == y, (key, x, y)


# --------------------------------------------------------------------------- user_kernels


@pytest.mark.parametrize("name", ["causal", "block_causal", "block_bidirectional"])
def test_exact_decomposition_reproduces_the_named_closed_forms(name):
    uk = user_kernel(make_mask(name, 8, 4), 4)
    assert uk.block_local == (name != "causal") and uk.diagonalisable and uk.residuals_zero()
    closed = linearised.spectral_projectors(name, 8, 4)
    mine = uk.projectors()
    assert set(mine) == set(closed)
    assert all(np.array_equal(mine[k], closed[k]) for k in closed)
    assert float(uk.exact_kernel_constant()) == pytest.approx(
        float(exact_named_constant(name, 8, 4)), rel=1e-15
    )
    R, L = coarse_maps(name, 8, 4)
    R2, L2 = uk.coarse_maps()
    assert np.array_equal(R @ L.T, R2 @ L2.T)
    assert np.array_equal(uk.persistent_projector(), R2 @ L2.T)
    assert np.allclose(uk.persistent_projector(), closed[1.0], rtol=0, atol=1e-15)


def test_the_persistent_projector_of_several_closed_classes_is_the_limit_of_the_kernel():
    """Π is the projector onto K's eigenvalue 1: with one closed class per block it is ``R Lᵀ``
    (above); a block with two closed classes (tokens 3 and 4 read only themselves, token 5 reads
    all three) has no such ``R Lᵀ`` and Π is K's limit ``lim Kⁿ`` (the other eigenvalue is 1/3):
    token 5 ends in token 3 or 4 with probability ½ each; the full block averages (⅓ 1 1ᵀ)."""
    uk = user_kernel(blocks(FULL3, TWO_CLASSES3), 3)
    assert uk.several_closed_classes
    expected = np.zeros((6, 6))
    expected[:3, :3] = 1.0 / 3.0
    expected[3:, 3:] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0]]
    Pi = uk.persistent_projector()
    assert np.allclose(Pi, expected, rtol=0, atol=1e-15)
    K = frozen_kernel(blocks(FULL3, TWO_CLASSES3))
    assert np.allclose(np.linalg.matrix_power(K, 60), Pi, rtol=0, atol=1e-14)
    with pytest.raises(ValueError, match="2 closed classes"):
        uk.coarse_maps()


@settings(max_examples=30, deadline=None)
@given(block_local_masks(T=8, P=4))
def test_exact_decomposition_of_random_block_local_masks(mask):
    """Irrational: K has an eigenvalue that is none of the rational roots. Diagonalisable: the
    projectors (rounded exact ones; complex ones for irrational roots) are K's to rounding
    (Σ P = I, K P = λP, P² = P); defective (a rational eigenvalue): the eigenvectors are fewer than
    its multiplicity (numerically, the rank of K − λI is above n − multiplicity)."""
    uk = user_kernel(mask, 4)
    K = frozen_kernel(mask)
    if uk.irrational:  # some eigenvalue of K is none of the rational roots found
        rational = uk.eigenvalues()
        eig = np.linalg.eigvals(K)
        assert any(np.abs(rational - e).min() > 1e-6 for e in eig), (uk.irrational, eig)
    if not uk.defect:
        projs = uk.projectors()
        assert np.abs(sum(projs.values()) - np.eye(8)).max() < 1e-12
        for lam, Pl in projs.items():
            assert np.abs(K @ Pl - lam * Pl).max() < 1e-12
            assert np.abs(Pl @ Pl - Pl).max() < 1e-12
        assert uk.residuals_zero() and uk.kernel_constant() < np.inf
        assert uk.primary_float_error() < 1e-12
    elif "eigenvalue " in uk.defect:
        assert uk.kernel_constant() == np.inf and not uk.diagonalisable
        defective = [
            (lam, m)
            for dec in uk.decompositions
            for lam, m in dec.eigenvalues.items()
            if np.linalg.matrix_rank(
                np.array((dec.K - lam * np.eye(dec.K.shape[0])).tolist(), float)
            )
            > dec.K.shape[0] - m
        ]
        assert defective, uk.defect
    else:  # the roots of an irreducible factor lack eigenvectors
        assert uk.kernel_constant() == np.inf and "the roots of" in uk.defect
    if not uk.several_closed_classes:
        R, L = uk.coarse_maps()
        assert np.abs(L.T @ K - L.T).max() < 1e-12 and np.abs(L.T @ R - np.eye(2)).max() < 1e-12


def test_defects_irrational_spectra_and_closed_classes_are_detected():
    assert "multiplicity 2 but 1 eigenvector" in user_kernel(blocks(CAUSAL3, DEFECTIVE3), 3).defect
    assert "tokens 3…5" in user_kernel(blocks(CAUSAL3, DEFECTIVE3), 3).defect
    assert "lambda**2 + lambda + 1" in user_kernel(blocks(CYCLIC3, FULL3), 3).irrational
    assert "2 closed classes" in user_kernel(blocks(FULL3, TWO_CLASSES3), 3).several_closed_classes
    with pytest.raises(ValueError, match="limited to 16"):
        user_kernel(make_mask("causal", 18), 6)  # not block-local: one 18×18 block


# --------------------------------------------------------------------------- D4


D4_FLOW = dict(P=3, d=3, L=3, norm=False, gamma=0.5, seed=3)


def test_d4_user_mask_equal_to_a_named_one_reproduces_its_verdict():
    named = run_check("D4", system=DepthFlow(mask="block_causal", T=6, **D4_FLOW))
    mine = run_check("D4", system=DepthFlow(mask=make_mask("block_causal", 6, 3), **D4_FLOW))
    assert named.outcome == mine.outcome == "holds"
    same_key_figures("D4", named, mine)
    assert mine.figures["kernel_constant"] == pytest.approx(named.figures["kernel_constant"])
    assert mine.conclusion["projectors_exact"].holds


def test_d4_block_local_mask_of_mixed_blocks_holds():
    v = run_check("D4", system=DepthFlow(mask=blocks(CAUSAL3, FULL3, SKIP3), **D4_FLOW))
    assert v.outcome == "holds", v.summary()
    assert v.figures["eigen_form_vs_poly_rel"] < 1e-12
    mine = v.figures["your_mask"]
    assert mine["block_local"] and mine["blocks_decomposed"] == 3
    assert mine["distinct_block_patterns"] == 3
    assert mine["eigenvalues_exact"] == ["1", "1/2", "1/3", "0"]


def test_d4_mask_that_is_not_block_local_is_decomposed_whole():
    # the factorisation needs no block-locality: the global causal mask written out is one 6×6
    # block and reproduces the named mask; a banded mask is defective (1/2 five times, one vector)
    named = run_check("D4", system=DepthFlow(mask="causal", T=6, **D4_FLOW))
    v = run_check("D4", system=DepthFlow(mask=make_mask("causal", 6), **D4_FLOW))
    assert named.outcome == v.outcome == "holds", v.summary()
    same_key_figures("D4", named, v)
    assert v.conclusion["eigen_form_equals_poly_form"].holds
    band = np.tril(np.ones((6, 6), bool)) & ~np.tril(np.ones((6, 6), bool), -2)
    v = run_check("D4", system=DepthFlow(mask=band, **D4_FLOW))
    assert v.outcome == "outside-hypotheses" and v.violated == ["kernel_diagonalisable"]
    assert "multiplicity 5 but 1 eigenvector" in v.hypotheses["kernel_diagonalisable"].value


def test_d4_block_kernel_with_complex_eigenvalues_holds():
    # the 3-cycle's eigenvalues are the cube roots of 1: E_f exact, its roots' projectors complex
    v = run_check("D4", system=DepthFlow(mask=blocks(CAUSAL3, CYCLIC3, FULL3), **D4_FLOW))
    assert v.outcome == "holds", v.summary()
    assert v.figures["your_mask"]["irrational_factors"] == ["lambda**2 + lambda + 1"]
    assert v.conclusion["projectors_exact"].value["exact_residuals_all_zero"]
    assert v.figures["float_projectors_vs_exact_rel"] <= 1e-10
    assert v.figures["eigen_form_vs_poly_rel"] < 1e-12


def test_d4_defective_block_kernel_is_outside_the_hypotheses():
    v = run_check("D4", system=DepthFlow(mask=blocks(CAUSAL3, DEFECTIVE3), **D4_FLOW))
    assert v.outcome == "outside-hypotheses" and v.violated == ["kernel_diagonalisable"]
    assert "not diagonalisable" in v.conclusion["eigen_form_equals_poly_form"].rule


# --------------------------------------------------------------------------- D5


D5_FLOW = dict(P=3, d=3, L=32, norm=False, gamma=0.8, gate=0.5, scale=0.3, value_gain=0.8, seed=0)


def test_d5_user_mask_equal_to_a_named_one_reproduces_its_verdict():
    named = run_check("D5", system=DepthFlow(mask="block_causal", T=6, **D5_FLOW))
    mine = run_check("D5", system=DepthFlow(mask=make_mask("block_causal", 6, 3), **D5_FLOW))
    assert named.outcome == mine.outcome == "holds", mine.summary()
    same_key_figures("D5", named, mine)
    assert mine.conclusion["kernel_constant_exact"].holds
    assert mine.conclusion["mode_data_match_reference"].holds


def test_d5_block_local_mask_of_mixed_blocks_holds():
    v = run_check("D5", system=DepthFlow(mask=blocks(CAUSAL3, FULL3, SKIP3), **D5_FLOW))
    assert v.outcome == "holds", v.summary()
    assert v.conclusion["coarse_stack_exact"].holds
    assert "not claimed" not in v.conclusion["coarse_stack_exact"].rule


def test_d5_mask_that_is_not_block_local_claims_no_coarse_stack():
    v = run_check("D5", system=DepthFlow(mask=make_mask("causal", 6), **D5_FLOW))
    assert v.outcome in ("holds", "outside-hypotheses"), v.summary()
    assert "not claimed" in v.conclusion["coarse_stack_exact"].rule
    named = run_check("D5", system=DepthFlow(mask="causal", T=6, **D5_FLOW))
    assert named.outcome == v.outcome
    same_key_figures("D5", named, v)


def test_d5_block_kernels_with_irrational_and_complex_eigenvalues_hold():
    # a 3-cycle (cube roots of 1) and a circulant block (roots of 4λ² − 2λ + 1): D_λ complex;
    # the dense Jacobian product, read off with the complex projectors, gives the same L*
    circulant = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool)
    for mask, factor in (
        (blocks(CAUSAL3, CYCLIC3, FULL3), "lambda**2 + lambda + 1"),
        (blocks(CAUSAL3, circulant), "4*lambda**2 - 2*lambda + 1"),
    ):
        v = run_check("D5", system=DepthFlow(mask=mask, **D5_FLOW))
        assert v.outcome == "holds", v.summary()
        assert v.figures["your_mask"]["irrational_factors"] == [factor]
        assert v.figures["L_star_brute_force"] == v.figures["L_star"]
        assert "not evaluated" in v.conclusion["kernel_constant_exact"].rule
        assert v.series["lams_imag"] and max(map(abs, v.series["lams_imag"])) > 0.4


def test_d5_defective_block_kernel_is_outside_the_hypotheses():
    v = run_check("D5", system=DepthFlow(mask=blocks(CAUSAL3, DEFECTIVE3), **D5_FLOW))
    assert v.outcome == "outside-hypotheses" and "kernel_diagonalisable" in v.violated


# --------------------------------------------------------------------------- D6


D6_FLOW = dict(P=3, d=2, L=3, norm=False, gamma=0.5, seed=2)


def test_d6_user_mask_equal_to_a_named_one_reproduces_its_verdict():
    for name in ("block_bidirectional", "block_causal"):
        named = run_check("D6", system=DepthFlow(mask=name, T=9, **D6_FLOW))
        mine = run_check("D6", system=DepthFlow(mask=make_mask(name, 9, 3), **D6_FLOW))
        assert named.outcome == mine.outcome == "holds", (name, mine.summary())
        same_key_figures("D6", named, mine)


def test_d6_block_local_mask_of_mixed_blocks_holds():
    v = run_check("D6", system=DepthFlow(mask=blocks(CAUSAL3, FULL3, SKIP3), **D6_FLOW))
    assert v.outcome == "holds", v.summary()


def test_d6_mask_that_is_not_block_local_is_one_block():
    # the global causal mask written out: one closed class {0}, R = 1, L = e_1, as the named one
    named = run_check("D6", system=DepthFlow(mask="causal", T=6, **D6_FLOW))
    mine = run_check("D6", system=DepthFlow(mask=make_mask("causal", 6), **D6_FLOW))
    assert named.outcome == mine.outcome, mine.summary()
    same_key_figures("D6", named, mine)


def test_d6_refuses_a_block_with_more_than_one_closed_class_naming_what_the_statement_needs():
    """Tokens that read only themselves (the identity block): three closed classes in one block,
    no single coarse variable; refused before any work, in one line saying why."""
    flow = DepthFlow(mask=blocks(np.eye(3, dtype=bool), FULL3, FULL3), **D6_FLOW)
    with pytest.raises(ValueError, match=r"D6 on your mask: .*needs one closed class per block"):
        run_check("D6", system=flow)


def test_d6_open_gate_of_the_flow_is_outside_the_hypotheses():
    flow = DepthFlow(mask=blocks(CAUSAL3, FULL3, SKIP3), **{**D6_FLOW, "gate": 0.3})
    v = run_check("D6", system=flow)
    assert v.outcome == "outside-hypotheses" and v.violated == ["gate_zero"]


# --------------------------------------------------------------------------- D7


D7_FLOW = dict(mask="block_bidirectional", T=4, P=2, d=3, scale=0.5, seed=7, name="mine")


def test_d7_on_a_contractive_depth_flow_holds_and_records_the_flow():
    v = run_check("D7", system=DepthFlow(gamma=1.0, slow_mask="full", norm=False, **D7_FLOW))
    assert v.outcome == "holds", v.summary()
    assert v.system["kind"] == "DepthFlow" and v.system["seed"] == 7 and v.system["name"] == "mine"
    assert np.isfinite(v.figures["critical_gate"]) and v.figures["dimension"] == 12
    # every layer's loop (L = 2), each part's value per layer
    assert all(x["J_units"] <= 64 for x in v.conclusion["jacobians_match_reference"].value.values())
    assert len(v.figures["per_layer"]) == 2
    assert "reference" not in v.params  # set by the flow (its norm)


def test_d7_on_a_normed_depth_flow_uses_the_embedding_fixed_point():
    v = run_check("D7", system=DepthFlow(gamma=1.0, slow_mask="full", norm=True, **D7_FLOW))
    assert v.outcome == "holds", v.summary()
    assert any("reference='embedding'" in n for n in v.notes)


def test_d7_on_depth_flows_outside_the_hypotheses():
    v = run_check("D7", system=DepthFlow(gamma=0.0, slow_mask="full", norm=False, **D7_FLOW))
    assert v.outcome == "outside-hypotheses" and v.violated == ["reference_contractive"]
    v = run_check("D7", system=DepthFlow(gamma=1.0, norm=False, **D7_FLOW))  # blockcausal
    assert v.outcome == "outside-hypotheses" and v.violated == ["gate_moves_spectrum"]


def test_d7_with_a_planted_wrong_jacobian_fails(monkeypatch):
    right = d7.claim.layer_jacobian

    def wrong(*args, **kwargs):
        J = right(*args, **kwargs)
        return J + 1e-6 * np.eye(J.shape[0])

    monkeypatch.setattr(d7.claim, "layer_jacobian", wrong)
    v = run_check("D7", system=DepthFlow(gamma=1.0, slow_mask="full", norm=False, **D7_FLOW))
    assert v.outcome == "fails" and not v.conclusion["jacobians_match_reference"].holds


# --------------------------------------------------------------------------- bad input


FLOWS = """
import numpy as np
from fastslow.numerics.model.activations import Activation
from fastslow.toy import DepthFlow

c, f = np.tril(np.ones((3, 3), bool)), np.ones((3, 3), bool)
cyc = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], bool)
two = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 1]], bool)
z = np.zeros((3, 3), bool)
irrational = DepthFlow(mask=np.block([[c, z], [z, cyc]]), P=3, d=2)
two_classes = DepthFlow(mask=np.block([[f, z], [z, two]]), P=3, d=2, gamma=0.5)
crossing_two = DepthFlow(
    mask=np.eye(6, dtype=bool) | np.eye(6, k=-1, dtype=bool) & (np.arange(6) != 1)[:, None]
    | (np.arange(6)[:, None] == 2) & (np.arange(6)[None, :] == 0),
    P=3,
    d=2,
    gamma=0.5,
)  # tokens 0 and 1 attend only to themselves (two closed classes); token 3 reads token 2
wide = DepthFlow(mask="block_bidirectional", T=16, P=4, d=9, gamma=0.5)
wide_full = DepthFlow(mask="block_bidirectional", T=16, P=4, d=9, gamma=0.5, slow_mask="full")
big_block = DepthFlow(mask=np.ones((18, 18), bool), P=18, d=2)
act = Activation("cube", lambda z: z ** 3, lambda z: 3 * z ** 2, True)
own_sigma = DepthFlow(mask="block_bidirectional", T=4, P=2, d=2, sigma=act)
own_sigma_full = DepthFlow(mask="block_bidirectional", T=4, P=2, d=2, sigma=act, slow_mask="full")
deep = DepthFlow(mask="block_causal", T=6, P=3, d=2, L=300)
steep = DepthFlow(mask="block_causal", T=6, P=3, d=2, gamma=5000.0)
steep_full = DepthFlow(mask="block_causal", T=6, P=3, d=2, gamma=5000.0, slow_mask="full")
"""

BAD = [
    ("D4", "big_block", "limited to 16"),
    ("D6", "crossing_two", "closed class per mask (not block-local: one block)"),
    ("D6", "two_classes", "2 closed classes"),
    ("D6", "wide", "T·d must be ≤ 128"),
    ("D7", "wide_full", "T·d must be ≤ 96"),
    ("D7", "own_sigma_full", "user nonlinearity"),
    ("D5", "own_sigma", "user nonlinearity"),
    ("D5", "deep", "parameter L=300"),
    ("D4", "steep", "parameter gamma=5000.0"),
    ("D6", "steep", "parameter gamma=5000.0"),
    ("D6", "deep", "parameter L=300"),
    ("D6", "irrational", "parameter gamma=0.0: expected float in (0.0, 1000.0]"),
    ("D7", "steep_full", "parameter gamma=5000.0"),
]


OUTSIDE_AT_ANY_SIZE = [
    ("D7", "wide", "gate_moves_spectrum"),  # the autoregressive slow path fixes ρ(J + gG)
    ("D7", "steep", "gate_moves_spectrum"),
    ("D7", "own_sigma", "gate_moves_spectrum"),
]


@pytest.mark.parametrize("cid,name,hypothesis", OUTSIDE_AT_ANY_SIZE)
def test_a_flow_outside_a_declared_hypothesis_is_exit_4_whatever_its_size(
    tmp_path, capsys, cid, name, hypothesis
):
    f = tmp_path / "flows.py"
    f.write_text(FLOWS)
    assert main(["check", cid, "--system", f"{f}:{name}"]) == 4
    assert hypothesis in capsys.readouterr().out


@pytest.mark.parametrize("cid,name,message", BAD)
def test_systems_a_claim_cannot_check_are_one_line_and_exit_2(tmp_path, capsys, cid, name, message):
    f = tmp_path / "flows.py"
    f.write_text(FLOWS)
    code = main(["check", cid, "--system", f"{f}:{name}"])
    err = one_line(capsys.readouterr().err)
    assert code == 2 and message in err, err


def test_the_claims_that_take_a_depth_flow_include_d4_to_d7():
    from fastslow.verify.registry import claims_for

    flow = DepthFlow(mask="block_causal", T=4, P=2, d=2)
    assert {"D4", "D5", "D6", "D7"} <= set(claims_for(flow))
