"""Frozen kernels in exact rational arithmetic: spectral projectors and the eigen form of the depth
product (claims D4, D5).

**Statement.** ``K_mask`` (each mask row divided by its count) is diagonalisable for the named
masks, with spectral projectors ``P_λ = V_λ (W_λᵀ V_λ)⁻¹ W_λᵀ`` built from right (``V_λ``) and left
(``W_λ``) eigenvector bases computed as exact null spaces. They satisfy ``Σ P_λ = I``,
``P_λ P_μ = δ_{λμ} P_λ``, ``K P_λ = λ P_λ``. For any d×d matrices ``N_l, M_l``

::

    Π_l (I_T ⊗ N_lᵀ + K ⊗ M_lᵀ)   (applied in depth order)  =  Σ_λ P_λ ⊗ D_λᵀ,
    D_λ = (N_0 + λM_0)⋯(N_{L−1} + λM_{L−1}),

i.e. ``δX_L = Σ_λ P_λ δX_0 D_λ`` (row-major vectorisation). :func:`eigen_form_residual` checks
this exactly. The kernel constant ``c_K = Σ_{λ≠1} ‖P_λ‖₂`` is returned exactly (as a SymPy number)
for rank-one and symmetric projectors.

**Your own mask.** :func:`frozen_kernel` also takes a boolean matrix (any pattern whose rows are
non-empty). For a row-stochastic ``K`` whose eigenvalue 1 is simple (one closed class of the mask
graph), :func:`stationary_weighting` is the left eigenvector ``L`` (``LᵀK = Lᵀ``, ``Lᵀ1 = 1``: the
stationary law of the closed class, zero on transient tokens), :func:`eigenvalue_one_projector` the
spectral projector ``Π = 1Lᵀ`` onto the eigenvalue 1 (it exists whether or not ``K`` is
diagonalisable) and :func:`normal_rate` the rate ``1 − max Re λ`` (``λ`` over the other eigenvalues,
exact roots of the characteristic polynomial) at which the fast flow ``dX/dτ = (K − I)X`` contracts
onto the range of ``Π``.

Caveat: exact arithmetic costs grow quickly; use T ≲ 12. No :mod:`numerics` import.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from .linearisation import mask_matrix

__all__ = [
    "frozen_kernel",
    "spectral_projectors",
    "projector_residuals",
    "eigen_form_residual",
    "projector_norm",
    "kernel_constant",
    "causal_eigenvector_condition",
    "pattern_matrix",
    "stationary_weighting",
    "eigenvalue_one_projector",
    "normal_rate",
]


def frozen_kernel(name, T: int | None = None, P: int | None = None) -> sp.Matrix:
    """``K_mask`` as an exact rational T×T matrix: ``name`` a named mask (with ``T``, and ``P`` for
    block masks) or a boolean matrix (:func:`pattern_matrix`; ``T``, ``P`` unused)."""
    if not isinstance(name, str):
        mk = pattern_matrix(name)
    elif T is None:
        raise ValueError(f"frozen_kernel({name!r}) needs T")
    else:
        mk = mask_matrix(name, T, P)
    n = len(mk)
    return sp.Matrix(n, n, lambda t, s: sp.Rational(1, sum(mk[t])) if mk[t][s] else 0)


def pattern_matrix(pattern) -> list[list[bool]]:
    """A square boolean matrix (nested sequences or an array of booleans) as nested lists, every
    row non-empty; ``ValueError``/``TypeError`` naming what is wrong."""
    rows = [list(r) for r in pattern]
    n = len(rows)
    if n == 0 or any(len(r) != n for r in rows):
        raise ValueError(f"a mask pattern must be a non-empty square matrix, got {pattern!r}")
    if not all(isinstance(x, (bool, np.bool_)) for r in rows for x in r):
        raise TypeError(f"a mask pattern must hold booleans, got {pattern!r}")
    out = [[bool(x) for x in r] for r in rows]
    empty = [i for i, r in enumerate(out) if not any(r)]
    if empty:
        raise ValueError(f"every mask row must allow at least one token; rows {empty} are empty")
    return out


def stationary_weighting(K: sp.Matrix) -> sp.Matrix:
    """``L`` (n×1) with ``LᵀK = Lᵀ`` and ``Lᵀ1 = 1``, exactly: the left eigenvector of the
    eigenvalue 1 of a row-stochastic ``K`` (the coarse variable ``y = LᵀX``). ``ValueError`` if the
    eigenvalue 1 is not simple (the mask graph has several closed classes: no unique weighting)."""
    n = K.shape[0]
    null = (K.T - sp.eye(n)).nullspace()
    if len(null) != 1:
        raise ValueError(
            f"the eigenvalue 1 of the kernel has multiplicity {len(null)}, not 1: the mask graph "
            "has several closed classes, so there is no unique stationary weighting"
        )
    v = null[0]
    return v / sum(v)


def eigenvalue_one_projector(K: sp.Matrix) -> sp.Matrix:
    """``Π = 1Lᵀ``: the spectral projector of a row-stochastic ``K`` onto its simple eigenvalue 1
    (:func:`stationary_weighting`); ``KΠ = ΠK = Π``, ``Π² = Π``."""
    return sp.ones(K.shape[0], 1) * stationary_weighting(K).T


def normal_rate(K: sp.Matrix) -> sp.Expr:
    """``1 − max Re λ`` over the eigenvalues of ``K`` other than one eigenvalue 1 (with
    multiplicity; 1 if there is none), exactly: the eigenvalues are the roots of the characteristic
    polynomial (rational roots as rationals, the others as ``CRootOf``), compared numerically. 0 when
    the eigenvalue 1 is not simple."""
    roots = K.charpoly().all_roots()
    roots.remove(sp.Integer(1))
    if not roots:
        return sp.Integer(1)
    top = max(roots, key=lambda r: sp.re(r).evalf(30))
    return 1 - sp.re(top)


def spectral_projectors(K: sp.Matrix) -> dict:
    """``{λ: P_λ}`` exactly, for a diagonalisable rational ``K`` (``ValueError`` otherwise)."""
    n = K.shape[0]
    out = {}
    for lam, mult in K.eigenvals().items():
        Vb = (K - lam * sp.eye(n)).nullspace()
        Wb = (K.T - lam * sp.eye(n)).nullspace()
        if len(Vb) != mult:
            raise ValueError(
                f"K is not diagonalisable: eigenvalue {lam} has algebraic "
                f"multiplicity {mult} but {len(Vb)} eigenvectors"
            )
        Vm = sp.Matrix.hstack(*Vb)
        Wm = sp.Matrix.hstack(*Wb)
        out[lam] = Vm * (Wm.T * Vm).inv() * Wm.T
    return out


def projector_residuals(K: sp.Matrix, projs: dict) -> dict:
    """Exact residual matrices of ``Σ P_λ − I``, ``P_λ P_μ − δ P_λ``, ``K P_λ − λ P_λ`` and
    ``K − Σ λ P_λ`` (all zero for a correct set)."""
    n = K.shape[0]
    lams = list(projs)
    res = {
        "sum": sum(projs.values(), sp.zeros(n, n)) - sp.eye(n),
        "spectral": K - sum((lam * projs[lam] for lam in lams), sp.zeros(n, n)),
    }
    for i, a in enumerate(lams):
        res[f"eig_{a}"] = K * projs[a] - a * projs[a]
        for b in lams[i:]:
            res[f"prod_{a}_{b}"] = projs[a] * projs[b] - (projs[a] if a == b else sp.zeros(n, n))
    return res


def eigen_form_residual(K: sp.Matrix, Ns, Ms) -> sp.Matrix:
    """``Π_l (I ⊗ N_lᵀ + K ⊗ M_lᵀ) − Σ_λ P_λ ⊗ D_λᵀ`` exactly (zero if the eigen form holds).

    The depth product is composed in depth order: the map of layer 0 is applied first.
    """
    n = K.shape[0]
    d = Ns[0].shape[0]
    total = sp.eye(n * d)
    for N, M in zip(Ns, Ms):
        total = (sp.kronecker_product(sp.eye(n), N.T) + sp.kronecker_product(K, M.T)) * total
    eig = sp.zeros(n * d, n * d)
    for lam, Pl in spectral_projectors(K).items():
        D = sp.eye(d)
        for N, M in zip(Ns, Ms):
            D = D * (N + lam * M)
        eig += sp.kronecker_product(Pl, D.T)
    return total - eig


def projector_norm(Pl: sp.Matrix):
    """``‖P_λ‖₂`` exactly: 1 for a symmetric projector, ``‖v‖‖w‖/|wᵀv|`` for rank one."""
    if Pl == Pl.T:
        return sp.Integer(1) if any(Pl) else sp.Integer(0)
    if Pl.rank() == 1:
        # P = v wᵀ with wᵀv = 1 (idempotent): take a non-zero column and row
        j = next(j for j in range(Pl.shape[1]) if any(Pl[:, j]))
        i = next(i for i in range(Pl.shape[0]) if any(Pl[i, :]))
        v = Pl[:, j]
        w = Pl[i, :].T / Pl[i, j]
        return sp.sqrt((v.T * v)[0] * (w.T * w)[0]) / abs((w.T * v)[0])
    raise NotImplementedError("projector_norm handles symmetric and rank-one projectors only")


def kernel_constant(name: str, T: int, P: int | None = None):
    """``c_K = Σ_{λ≠1} ‖P_λ‖₂`` exactly. Block masks reduce to one P×P block
    (``P_λ = I_N ⊗ p_λ`` has the norm of ``p_λ``)."""
    if name == "causal":
        K = frozen_kernel("causal", T)
    elif name == "block_causal":
        K = frozen_kernel("causal", P)
    elif name == "block_bidirectional":
        K = frozen_kernel("full", P)
    else:
        raise ValueError(f"unknown mask {name!r}")
    return sp.nsimplify(
        sum(
            (projector_norm(Pl) for lam, Pl in spectral_projectors(K).items() if lam != 1),
            sp.Integer(0),
        )
    )


def causal_eigenvector_condition(T: int, digits: int = 30):
    """2-norm condition number of the causal kernel's unit-column eigenvector matrix, from the exact
    eigenvectors, evaluated with ``digits`` significant digits (mpmath)."""
    K = frozen_kernel("causal", T)
    cols = []
    for lam, _ in sorted(K.eigenvals().items(), key=lambda kv: -kv[0]):
        v = (K - lam * sp.eye(T)).nullspace()[0]
        cols.append(v / sp.sqrt((v.T * v)[0]))
    with mpmath.workdps(digits + 10):
        Vm = mpmath.matrix([[sp.N(c[t], digits + 10) for c in cols] for t in range(T)])
        s = mpmath.svd_r(Vm, compute_uv=False)
        return sp.Float(max(s) / min(s), digits)
