"""The frozen kernel of your own mask, decomposed exactly: what claims D4, D5 and D6 need of it.

A user :class:`~verify.systems.DepthFlow` brings a boolean T×T mask instead of a name, so the
closed forms of the named masks (:func:`numerics.analysis.linearised.spectral_projectors`,
:func:`numerics.model.masks.coarse_maps`, :mod:`verify.reference.spectra`) do not apply. Here the
same data are derived from the mask itself.

**Blocks.** A *block-local* mask (no entry outside the diagonal P×P blocks) gives a block-diagonal
frozen kernel ``K = diag(K_b)``: its spectrum is the union of the blocks' spectra and each spectral
projector is ``P_λ = diag(p_{b,λ})`` (``p_{b,λ} = 0`` where block ``b`` lacks ``λ``). Each
*distinct* block pattern is decomposed once. A mask that is not block-local is decomposed as one
T×T block.

**What is exact.** Everything up to the final rounding to float64 is rational arithmetic
(SymPy): each block kernel ``K_b`` (mask rows divided by their counts), its characteristic
polynomial and its factorisation over ℚ, the eigenvalues (rational roots), the eigenvector
counts (exact null spaces), the spectral projectors ``p_{b,λ} = V(WᵀV)⁻¹Wᵀ``
(:func:`theory.kernels.spectral_projectors`), their residuals ``Σ P − I``, ``K P − λP``,
``P P − δP`` (:func:`theory.kernels.projector_residuals`, exactly 0), the stationary weighting
``L`` of each block (:func:`theory.kernels.stationary_weighting`) and, when every projector with
``λ ≠ 1`` is symmetric or of rank one, the kernel constant ``c_K = Σ_{λ≠1} max_b ‖p_{b,λ}‖₂``
(:func:`theory.kernels.projector_norm`). Floating point: the projectors, ``Π``, ``R``, ``L`` and
the eigenvalues rounded once to float64, and ``c_K`` from the 2-norms of the rounded projectors
(LAPACK singular values), the number the claims use (compared with the exact one where it exists).

**Irrational and complex eigenvalues.** A block whose characteristic polynomial has an
irreducible factor ``f`` of degree ≥ 2 over ℚ (``irrational``) has irrational or complex
eigenvalues, whose projectors are not rational. Exact there: the *primary* projector ``E_f`` (the
sum of the spectral projectors of ``f``'s roots: the projector onto ``ker f(K)`` along
``range f(K)``, rational) and its residuals (``Σ P = I`` over all projectors, ``P_a P_b = δ P_a``,
``K E_f = E_f K``, ``f(K) E_f = 0``). Floating point: the roots (SymPy ``nroots``, 30 digits,
rounded to complex128) and each root's projector ``E_f Π_{μ≠λ}(K − μI)/(λ − μ)`` in complex128;
their sum is compared with ``E_f`` (:meth:`UserKernel.primary_float_error`). D4 and D5 take such
masks (D4's eigen form is then complex, its sum real to rounding; D5's ``D_λ`` and ``r(L)`` are
complex128 products).

**What is detected.** A *defective* block kernel (an eigenvalue whose eigenvector count is below
its algebraic multiplicity, for an irreducible factor ``f`` of degree k and multiplicity m: a
nullity of ``f(K)`` below k·m; no spectral projectors) is reported (``defect``); D4 and D5 make
diagonalisability a hypothesis, so such a mask is ``outside-hypotheses``, never silently wrong. A
block whose eigenvalue 1 is not simple (its mask graph has several closed classes) has no unique
stationary weighting (``several_closed_classes``; D6 refuses it).

Cost: the exact decomposition of an n×n block costs O(n⁴) rational operations and more for the
characteristic polynomial; blocks are limited to :data:`MAX_EXACT_BLOCK` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from fastslow.numerics.model.masks import as_mask
from fastslow.theory import kernels as theory_kernels

from .verdict import Diagnostic

MAX_EXACT_BLOCK = 16
"""The largest block (or non-block-local mask) decomposed in exact arithmetic."""


def outside_blocks(mask: np.ndarray, P: int) -> int:
    """Number of mask entries ``(t, s)`` outside the diagonal P×P blocks (0: block-local)."""
    mask = np.asarray(mask, bool)
    blocks = np.arange(mask.shape[0]) // P
    return int(np.sum(mask & (blocks[:, None] != blocks[None, :])))


def blocks_of(mask: np.ndarray, P: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` of the diagonal blocks decomposed: the P×P ones of a block-local mask,
    else the whole mask as one block."""
    T = mask.shape[0]
    if outside_blocks(mask, P) == 0:
        return [(s, s + P) for s in range(0, T, P)]
    return [(0, T)]


LAMBDA = sp.Symbol("lambda")
"""The variable of the characteristic polynomials."""

ROOT_DIGITS = 30
"""Digits of the roots of an irreducible factor of degree ≥ 2 (SymPy ``nroots``), then rounded to
complex128."""


@dataclass
class BlockDecomposition:
    """The exact spectral data of one distinct block pattern (see the module docstring)."""

    K: sp.Matrix
    eigenvalues: dict  # {Rational λ: algebraic multiplicity}, the rational roots
    irrational: list  # irreducible factors of degree ≥ 2 of the characteristic polynomial (str)
    defect: str = ""
    projectors: dict = field(default_factory=dict)  # {Rational λ: sp.Matrix}, exact
    primary: dict = field(default_factory=dict)  # {factor (str): (E_f exact, roots, factor)}
    residuals_zero: bool = False
    L: sp.Matrix | None = None  # stationary weighting (simple eigenvalue 1), exact
    closed_classes: int = 1


def matrix_polynomial(f, K: sp.Matrix) -> sp.Matrix:
    """``f(K)`` exactly (Horner), ``f`` a polynomial in :data:`LAMBDA` with rational
    coefficients."""
    out = sp.zeros(*K.shape)
    for c in sp.Poly(f, LAMBDA).all_coeffs():
        out = out * K + c * sp.eye(K.shape[0])
    return out


def kernel_projector(F: sp.Matrix) -> sp.Matrix:
    """The projector onto ``ker F`` along ``range F``, ``V(WᵀV)⁻¹Wᵀ`` with ``V`` and ``W`` exact
    bases of the null spaces of ``F`` and ``Fᵀ`` (for ``F = f(K)`` with ``K`` diagonalisable:
    the sum of the spectral projectors of the roots of ``f``)."""
    V = sp.Matrix.hstack(*F.nullspace())
    W = sp.Matrix.hstack(*F.T.nullspace())
    return V * (W.T * V).inv() * W.T


def primary_residuals_zero(K: sp.Matrix, dec: BlockDecomposition) -> bool:
    """Exactly: ``Σ P = I`` over every projector (rational eigenvalues and primary components),
    ``P_a P_b = δ_ab P_a``, ``K P_λ = λ P_λ`` for a rational ``λ`` and ``K E_f = E_f K``,
    ``f(K) E_f = 0`` for an irreducible factor ``f`` of degree ≥ 2."""
    n = K.shape[0]
    exact = list(dec.projectors.values()) + [E for E, _, _ in dec.primary.values()]
    if sum(exact, sp.zeros(n, n)) != sp.eye(n):
        return False
    for i, A in enumerate(exact):
        for j, B in enumerate(exact):
            if A * B != (A if i == j else sp.zeros(n, n)):
                return False
    if any(K * P != lam * P for lam, P in dec.projectors.items()):
        return False
    return all(
        K * E == E * K and matrix_polynomial(f, K) * E == sp.zeros(n, n)
        for E, _, f in dec.primary.values()
    )


def decompose_block(pattern: np.ndarray) -> BlockDecomposition:
    """The :class:`BlockDecomposition` of one block pattern (boolean n×n, rows non-empty)."""
    K = theory_kernels.frozen_kernel(pattern.tolist())
    n = K.shape[0]
    _, factors = sp.factor_list(K.charpoly(LAMBDA).as_expr(), LAMBDA)
    irrational = [sp.sstr(f) for f, _ in factors if sp.degree(f, LAMBDA) > 1]
    eigenvalues = {}
    for f, mult in factors:
        if sp.degree(f, LAMBDA) == 1:
            root = sp.solve(f, LAMBDA)[0]
            eigenvalues[root] = eigenvalues.get(root, 0) + int(mult)
    out = BlockDecomposition(K, eigenvalues, irrational)
    null_one = (K.T - sp.eye(n)).nullspace()
    out.closed_classes = len(null_one)
    if len(null_one) == 1:
        out.L = theory_kernels.stationary_weighting(K)
    for value, mult in sorted(eigenvalues.items(), key=lambda kv: -kv[0]):
        count = len((K - value * sp.eye(n)).nullspace())
        if count < mult:
            out.defect = (
                f"eigenvalue {value} has algebraic multiplicity {mult} but {count} "
                f"eigenvector{'s' if count != 1 else ''}"
            )
            return out
    fK = {}
    for f, mult in factors:
        degree = int(sp.degree(f, LAMBDA))
        if degree > 1:
            fK[f] = matrix_polynomial(f, K)
            nullity = n - fK[f].rank()
            if nullity < degree * int(mult):  # each of the conjugate roots lacks eigenvectors
                out.defect = (
                    f"the roots of {sp.sstr(f)} have algebraic multiplicity {mult} but "
                    f"{nullity // degree} eigenvector(s) each"
                )
                return out
    if not irrational:
        out.projectors = theory_kernels.spectral_projectors(K)
        residuals = theory_kernels.projector_residuals(K, out.projectors)
        out.residuals_zero = all(m.is_zero_matrix for m in residuals.values())
        return out
    out.projectors = {a: kernel_projector(K - a * sp.eye(n)) for a in eigenvalues}
    for f, F in fK.items():
        roots = tuple(complex(r) for r in sp.Poly(f, LAMBDA).nroots(n=ROOT_DIGITS))
        out.primary[sp.sstr(f)] = (kernel_projector(F), roots, f)
    out.residuals_zero = primary_residuals_zero(K, out)
    return out


@dataclass
class UserKernel:
    """The frozen kernel of a user mask with block size ``P``: its blocks, their exact
    decompositions and the whole kernel's spectral data (rounded to float64 at the end)."""

    mask: np.ndarray
    P: int
    outside: int
    blocks: list
    decompositions: list  # one BlockDecomposition per entry of ``blocks`` (shared per pattern)

    @property
    def block_local(self) -> bool:
        return self.outside == 0

    @property
    def T(self) -> int:
        return int(self.mask.shape[0])

    def fault(self, where) -> str:
        """The first fault of the blocks ``where`` returns for a decomposition ("" if none),
        with the block's tokens."""
        for (start, stop), dec in zip(self.blocks, self.decompositions):
            why = where(dec)
            if why:
                return f"the block of tokens {start}…{stop - 1}: {why}"
        return ""

    @property
    def defect(self) -> str:
        """Why ``K`` is not diagonalisable ("" when it is, over the rational spectrum)."""
        return self.fault(lambda dec: dec.defect)

    @property
    def irrational(self) -> str:
        """Irreducible factors of degree ≥ 2 of a block's characteristic polynomial ("" if none)."""
        return self.fault(
            lambda dec: (
                (
                    "its characteristic polynomial has the irreducible factor(s) "
                    + ", ".join(dec.irrational)
                    + " over ℚ (irrational or complex eigenvalues)"
                )
                if dec.irrational
                else ""
            )
        )

    @property
    def several_closed_classes(self) -> str:
        """A block whose eigenvalue 1 is not simple ("" if none)."""
        return self.fault(
            lambda dec: (
                f"its mask graph has {dec.closed_classes} closed classes (eigenvalue 1 "
                "is not simple: no unique stationary weighting)"
                if dec.closed_classes != 1
                else ""
            )
        )

    @property
    def diagonalisable(self) -> bool:
        return not self.defect

    def summary(self) -> dict:
        """What the verdict reports of your mask: block-locality, the blocks decomposed, the
        distinct patterns among them, the exact eigenvalues (as strings) and any defect."""
        return {
            "block_local": self.block_local,
            "entries_outside_blocks": self.outside,
            "blocks_decomposed": len(self.blocks),
            "distinct_block_patterns": len({id(dec) for dec in self.decompositions}),
            "eigenvalues_exact": [str(x) for x in self.exact_eigenvalues()],
            "irrational_factors": sorted(
                {f for dec in self.decompositions for f in dec.irrational}
            ),
            "defect": self.defect or "none",
        }

    def exact_eigenvalues(self) -> list:
        """The distinct eigenvalues of ``K``, exact rationals (:class:`fractions.Fraction`),
        largest (1) first."""
        vals = {value for dec in self.decompositions for value in dec.eigenvalues}
        return sorted((Fraction(int(v.p), int(v.q)) for v in vals), reverse=True)

    def all_eigenvalues(self) -> list:
        """Every distinct eigenvalue: the rational ones as floats (largest, 1, first), then the
        roots of the irreducible factors of degree ≥ 2 as complex128 (to :data:`ROOT_DIGITS`
        digits, rounded; by decreasing real, then imaginary part)."""
        roots = {
            root
            for dec in self.decompositions
            for _, found, _ in dec.primary.values()
            for root in found
        }
        ordered = sorted(roots, key=lambda z: (-z.real, -z.imag))
        return [float(x) for x in self.exact_eigenvalues()] + ordered

    def eigenvalues(self) -> np.ndarray:
        """The distinct eigenvalues rounded to float64, largest (1) first."""
        return np.array([float(x) for x in self.exact_eigenvalues()])

    def residuals_zero(self) -> bool:
        """Every block's exact projector residuals are 0 (diagonalisable kernels only)."""
        return self.diagonalisable and all(dec.residuals_zero for dec in self.decompositions)

    def projectors(self) -> dict:
        """``{λ: P_λ}`` (T×T) of a diagonalisable ``K``: for a rational ``λ`` (a float key) the
        exact block projectors placed on the block diagonal and rounded once (float64); for a root
        ``λ`` of an irreducible factor ``f`` of degree ≥ 2 (a complex key, ``f``'s roots to
        :data:`ROOT_DIGITS` digits rounded) the complex128 ``E_f Π_{μ≠λ}(K − μI)/(λ − μ)`` over
        the other roots ``μ`` of ``f``, with ``E_f`` the exact primary projector rounded: floating
        point, accurate to the conditioning of ``f``'s roots."""
        out = {}
        for lam in self.exact_eigenvalues():
            Pl = np.zeros((self.T, self.T))
            key = sp.Rational(lam.numerator, lam.denominator)
            for (start, stop), dec in zip(self.blocks, self.decompositions):
                if key in dec.projectors:
                    Pl[start:stop, start:stop] = np.array(dec.projectors[key].tolist(), dtype=float)
            out[float(lam)] = Pl
        for (start, stop), dec in zip(self.blocks, self.decompositions):
            K = np.array(dec.K.tolist(), dtype=float)
            eye = np.eye(K.shape[0])
            for E, roots, _ in dec.primary.values():
                Ef = np.array(E.tolist(), dtype=float)
                for lam in roots:
                    Pl = Ef.astype(complex)
                    for mu in roots:
                        if mu != lam:
                            Pl = Pl @ (K - mu * eye) / (lam - mu)
                    out.setdefault(lam, np.zeros((self.T, self.T), complex))
                    out[lam][start:stop, start:stop] = Pl
        return out

    def primary_float_error(self) -> float:
        """``max_f max|Σ_{λ root of f} P_λ − E_f| / max(1, max|E_f|)`` over the irreducible factors
        of degree ≥ 2 (the complex float projectors against the exact primary projector rounded);
        0 when there is none."""
        worst = 0.0
        projs = self.projectors()
        for (start, stop), dec in zip(self.blocks, self.decompositions):
            for E, roots, _ in dec.primary.values():
                Ef = np.array(E.tolist(), dtype=float)
                total = sum(projs[lam][start:stop, start:stop] for lam in roots)
                worst = max(worst, float(np.abs(total - Ef).max()) / max(1.0, np.abs(Ef).max()))
        return worst

    def kernel_constant(self) -> float:
        """``c_K = Σ_{λ≠1} ‖P_λ‖₂`` from the rounded projectors (the norm of a block-diagonal
        matrix is the largest of its blocks'); ``inf`` when ``K`` is not diagonalisable."""
        if not self.diagonalisable:
            return float("inf")
        return float(
            sum(np.linalg.norm(Pl, 2) for lam, Pl in self.projectors().items() if lam != 1.0)
        )

    def exact_kernel_constant(self):
        """``c_K`` exactly (a SymPy number: ``Σ_{λ≠1} max_b ‖p_{b,λ}‖₂``), or ``None`` when a
        projector is neither symmetric nor of rank one (no exact norm formula) or ``K`` is not
        diagonalisable."""
        if not self.diagonalisable or self.irrational:
            return None
        total = sp.Integer(0)
        for lam in self.exact_eigenvalues():
            if lam == 1:
                continue
            key = sp.Rational(lam.numerator, lam.denominator)
            norms = []
            for dec in self.decompositions:
                if key in dec.projectors:
                    try:
                        norms.append(theory_kernels.projector_norm(dec.projectors[key]))
                    except NotImplementedError:
                        return None
            total += sp.Max(*norms)
        return total

    def persistent_projector(self) -> np.ndarray:
        """``Π`` (T×T float64): the spectral projector onto the eigenvalue 1, ``diag(1 L_bᵀ)``
        from the exact stationary weightings when every block's eigenvalue 1 is simple, else
        the exact ``P_1`` (diagonalisable kernels)."""
        if not self.several_closed_classes:
            R, L = self.coarse_maps()
            return R @ L.T
        return self.projectors()[1.0]

    def coarse_maps(self) -> tuple[np.ndarray, np.ndarray]:
        """``(R, L)`` with ``Π = R Lᵀ``: ``R`` the indicators of the decomposed blocks and ``L``
        their exact stationary weightings, rounded (``LᵀR = I``). Needs a simple eigenvalue 1 in
        every block (``ValueError`` otherwise)."""
        if self.several_closed_classes:
            raise ValueError(self.several_closed_classes)
        n = len(self.blocks)
        R, L = np.zeros((self.T, n)), np.zeros((self.T, n))
        for b, ((start, stop), dec) in enumerate(zip(self.blocks, self.decompositions)):
            R[start:stop, b] = 1.0
            L[start:stop, b] = np.array(dec.L.tolist(), dtype=float).ravel()
        return R, L


def exact_coarse_maps(mask, P: int) -> tuple[np.ndarray, np.ndarray]:
    """``(R, L)`` with ``Π = R Lᵀ`` of a boolean mask without its spectrum (no characteristic
    polynomial: cheap for any size): the blocks of :func:`blocks_of`, ``R`` their indicators and
    ``L`` their exact stationary weightings (:func:`theory.kernels.stationary_weighting`), rounded
    once. ``ValueError`` naming the block when its eigenvalue 1 is not simple."""
    m = as_mask(np.asarray(mask), np.shape(mask)[0])
    blocks = blocks_of(m, P)
    R, L = np.zeros((m.shape[0], len(blocks))), np.zeros((m.shape[0], len(blocks)))
    for b, (start, stop) in enumerate(blocks):
        K = theory_kernels.frozen_kernel(m[start:stop, start:stop].tolist())
        try:
            weights = theory_kernels.stationary_weighting(K)
        except ValueError:
            classes = len((K.T - sp.eye(K.shape[0])).nullspace())
            raise ValueError(
                f"the block of tokens {start}…{stop - 1}: its mask graph has {classes} closed "
                "classes (eigenvalue 1 is not simple: no unique stationary weighting)"
            ) from None
        R[start:stop, b] = 1.0
        L[start:stop, b] = np.array(weights.tolist(), dtype=float).ravel()
    return R, L


def require_decomposable(system, claim_id: str) -> None:
    """``ValueError`` (one line, naming the flow and the claim) unless ``system``'s mask is named
    or its frozen kernel decomposes exactly (:func:`user_kernel`): how D4 and D5 accept a
    :class:`~verify.systems.DepthFlow`'s own mask before any work."""
    if isinstance(system.mask, str):
        return
    try:
        user_kernel(system.mask, system.P)
    except ValueError as exc:
        raise ValueError(f"{system.name}: {claim_id} on your mask: {exc}") from None


def user_kernel(mask, P: int) -> UserKernel:
    """The :class:`UserKernel` of a boolean T×T ``mask`` (every row non-empty) with block size
    ``P`` (dividing T). ``ValueError`` when a decomposed block exceeds :data:`MAX_EXACT_BLOCK`
    tokens."""
    m = as_mask(np.asarray(mask), np.shape(mask)[0])
    blocks = blocks_of(m, P)
    size = max(stop - start for start, stop in blocks)
    if size > MAX_EXACT_BLOCK:
        what = "block" if len(blocks) > 1 else "mask (not block-local: decomposed whole)"
        raise ValueError(
            f"the {what} has {size} tokens; the exact decomposition of a frozen kernel is "
            f"limited to {MAX_EXACT_BLOCK}"
        )
    seen: dict = {}
    decs = []
    for start, stop in blocks:
        pattern = m[start:stop, start:stop]
        key = pattern.tobytes() + bytes(pattern.shape)
        if key not in seen:
            seen[key] = decompose_block(pattern)
        decs.append(seen[key])
    return UserKernel(m, int(P), outside_blocks(m, P), blocks, decs)


def kernel_diagonalisable(user: UserKernel | None, mask_name: str | None) -> Diagnostic:
    """The hypothesis ``kernel_diagonalisable`` of D4 and D5: a named mask's kernel is, in closed
    form (triangular with distinct diagonal entries, or a projector); a user mask's (``user``, its
    exact decomposition) is decided exactly (eigenvector counts)."""
    if user is None:
        why = f"named mask {mask_name}: diagonalisable in closed form"
        return Diagnostic(True, why, why)
    defect = user.defect
    return Diagnostic(
        not defect,
        defect or "every block kernel diagonalisable (exact eigenvector counts)",
        "every eigenvalue of K has as many eigenvectors as its algebraic multiplicity (exact)",
    )
