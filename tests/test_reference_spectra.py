"""numerics' frozen kernels, eigenvalues, spectral projectors, coarse maps and kernel constant
against the exact rational reference (verify.reference.spectra)."""

from fractions import Fraction

import numpy as np
import pytest

from fastslow.numerics.analysis import linearised
from fastslow.numerics.model.masks import frozen_kernel, kernel_eigenvalues, spectral_projector
from fastslow.verify.reference import spectra as reference_spectra

CASES = [
    ("causal", 6, None),
    ("causal", 9, None),
    ("block_causal", 8, 4),
    ("block_causal", 9, 3),
    ("block_bidirectional", 8, 4),
    ("block_bidirectional", 6, 1),
    ("block_causal", 4, 1),
]


@pytest.mark.parametrize("name,T,P", CASES)
def test_reference_spectrum_matches_section_1(name, T, P):
    """§1: causal {1, 1/2, …, 1/T}; block_causal {1, …, 1/P} each N-fold; bidirectional {1 (N), 0}."""
    mult = reference_spectra.multiplicities(reference_spectra.projectors(name, T, P))
    if name == "causal":
        want = {Fraction(1, k): 1 for k in range(1, T + 1)}
    elif name == "block_causal":
        want = {Fraction(1, k): T // P for k in range(1, P + 1)}
    else:
        want = {Fraction(1): T // P, **({Fraction(0): T - T // P} if P > 1 else {})}
    assert mult == want


@pytest.mark.parametrize("name,T,P", CASES)
def test_numerics_spectral_data_are_the_exact_ones(name, T, P):
    proj = reference_spectra.projectors(name, T, P)
    mult = reference_spectra.multiplicities(proj)
    assert np.array_equal(
        frozen_kernel(name, T, P),
        reference_spectra.as_float(reference_spectra.exact_kernel(name, T, P)),
    )
    got = kernel_eigenvalues(name, T, P)
    assert got == {float(lam): m for lam, m in mult.items()}  # 1/k rounded once, as the closed form
    assert list(linearised.distinct_eigenvalues(name, T, P)) == [
        float(x) for x in sorted(mult, reverse=True)
    ]
    num = linearised.spectral_projectors(name, T, P)
    assert set(num) == {float(x) for x in proj}
    for lam, Pl in proj.items():
        assert np.allclose(num[float(lam)], reference_spectra.as_float(Pl), rtol=0, atol=1e-12)
    exact_pi = reference_spectra.as_float(proj[Fraction(1)])
    assert np.allclose(spectral_projector(name, T, P), exact_pi, rtol=0, atol=1e-15)
    assert linearised.kernel_constant(name, T, P) == pytest.approx(
        reference_spectra.kernel_constant(proj), rel=1e-12
    )


def test_exact_projectors_are_refused_for_a_wrong_spectrum(monkeypatch):
    """The identities in ``projectors`` have teeth: a missing eigenvalue is caught."""
    real = reference_spectra.distinct_eigenvalues
    monkeypatch.setattr(reference_spectra, "distinct_eigenvalues", lambda *a: real(*a)[:-1])
    with pytest.raises(AssertionError):
        reference_spectra.projectors("block_causal", 6, 3)
