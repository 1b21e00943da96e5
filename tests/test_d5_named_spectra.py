"""D5's ``named_spectra_match_reference`` (verify/checks/d5/parts.py): the engine's closed-form
spectra of the named masks against the reference's exact ones; a wrong reference spectrum fails
the part (naming the mask) instead of ending the check in an error."""

from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.verify.checks.d5 import parts as d5_parts
from fastslow.verify.reference import spectra as ref_spectra


def test_the_named_spectra_match_the_reference():
    parts, figures = d5_parts.named_spectra_part()
    part = parts["named_spectra_match_reference"]
    assert part.holds, part.value
    assert figures["named_spectra_projector_rel_max"] <= d5_parts.NAMED_PROJECTOR_REL


def test_a_reference_spectrum_without_its_smallest_eigenvalue_fails_the_part(monkeypatch):
    right = ref_spectra.distinct_eigenvalues
    monkeypatch.setattr(
        ref_spectra, "distinct_eigenvalues", lambda name, T, P=None: right(name, T, P)[:-1]
    )
    parts, _ = d5_parts.named_spectra_part()
    part = parts["named_spectra_match_reference"]
    assert not part.holds
    # the Lagrange products over the remaining eigenvalues still sum to I; K P_λ = λ P_λ fails
    assert len(part.value["mismatched"]) == len(d5_parts.NAMED_SPECTRA_SIZES) * len(NAMED_MASKS)
    assert all("(reference: K P_λ ≠ λ P_λ" in m for m in part.value["mismatched"])
