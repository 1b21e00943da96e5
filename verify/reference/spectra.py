"""The named masks' frozen kernels, spectra and spectral projectors in exact rational arithmetic.

``K_mask`` is the mask with each row divided by its count. For the named masks ``K`` is
diagonalisable (``causal`` and each block of ``block_causal`` are triangular with distinct
diagonal entries; ``block_bidirectional`` is a projector), so with its distinct eigenvalues
``λ_1 … λ_k`` the spectral projectors are the Lagrange products

    P_λ = Π_{μ ≠ λ} (K − μI) / (λ − μ),

and ``Σ P_λ = I``, ``K P_λ = λ P_λ``, ``P_λ P_μ = δ_λμ P_λ`` hold exactly (checked by
:func:`projectors`). The eigenvalues are found without any eigen-solver: a triangular ``K`` has its
diagonal; a block-local ``K`` has the union of its blocks' spectra, and a block whose entries are
all equal to ``1/P`` is ``(1/P)11ᵀ`` with spectrum ``{1, 0^(P−1)}``. Multiplicities are the exact
traces of the projectors. Everything is :class:`fractions.Fraction`; the cost is ``O(k·T³)`` exact
operations, so keep ``T`` small (≤ 16).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .layer import named_mask


def exact_kernel(name: str, T: int, P: int | None = None) -> list:
    """``K_mask`` as a list of rows of Fractions."""
    M = named_mask(name, T, P)
    return [[Fraction(int(m), int(row.sum())) for m in row] for row in M]


def _eye(n: int) -> list:
    return [[Fraction(int(i == j)) for j in range(n)] for i in range(n)]


def _mul(A: list, B: list) -> list:
    n, m = len(A), len(B[0])
    Bt = list(zip(*B))
    return [
        [sum((a * b for a, b in zip(A[i], Bt[j]) if a and b), Fraction(0)) for j in range(m)]
        for i in range(n)
    ]


def _axpy(A: list, lam: Fraction, B: list) -> list:
    """``A + lam·B``."""
    return [[a + lam * b for a, b in zip(ra, rb)] for ra, rb in zip(A, B)]


def _scale(A: list, c: Fraction) -> list:
    return [[a * c for a in row] for row in A]


def distinct_eigenvalues(name: str, T: int, P: int | None = None) -> list:
    """The distinct eigenvalues of ``K_mask``, exact, largest first (see the module docstring)."""
    K = exact_kernel(name, T, P)
    lower = all(K[i][j] == 0 for i in range(T) for j in range(i + 1, T))
    if lower:
        vals = {K[i][i] for i in range(T)}
    elif name == "block_bidirectional":
        if P is None:
            raise ValueError("the mask 'block_bidirectional' needs the block size P")
        vals = {Fraction(1)} | ({Fraction(0)} if P > 1 else set())
    else:
        raise ValueError(f"no exact spectrum for mask {name!r}")
    return sorted(vals, reverse=True)


def projectors(name: str, T: int, P: int | None = None) -> dict:
    """``{λ: P_λ}`` exact (Lagrange products); ``AssertionError`` if the identities
    ``Σ P_λ = I`` and ``K P_λ = λ P_λ`` do not hold exactly (then ``K`` would not be
    diagonalisable with these eigenvalues)."""
    K = exact_kernel(name, T, P)
    I = _eye(T)
    lams = distinct_eigenvalues(name, T, P)
    out = {}
    for lam in lams:
        Pl = I
        for mu in lams:
            if mu != lam:
                Pl = _scale(_mul(Pl, _axpy(K, -mu, I)), 1 / (lam - mu))
        out[lam] = Pl
    total = [[sum(out[lam][i][j] for lam in lams) for j in range(T)] for i in range(T)]
    assert total == I, "the projectors do not sum to I"
    for lam, Pl in out.items():
        assert _mul(K, Pl) == _scale(Pl, lam), f"K P_λ ≠ λ P_λ at λ = {lam}"
    return out


def multiplicities(proj: dict) -> dict:
    """``{λ: trace P_λ}`` (the algebraic multiplicity, exact)."""
    return {lam: int(sum(Pl[i][i] for i in range(len(Pl)))) for lam, Pl in proj.items()}


def as_float(A: list) -> np.ndarray:
    """A Fraction matrix rounded to float64."""
    return np.array([[float(a) for a in row] for row in A])


def kernel_constant(proj: dict) -> float:
    """``c_K = Σ_{λ≠1} ‖P_λ‖₂`` (each norm of the exact projector rounded to float64)."""
    return float(sum(np.linalg.norm(as_float(Pl), 2) for lam, Pl in proj.items() if lam != 1))
