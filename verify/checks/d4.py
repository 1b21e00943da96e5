"""D4 — the linearised layer factorises along the frozen kernel's eigenbasis.

Statement: at a token-homogeneous state (the slow path closed: ``g = 0`` or no slow path; ``γ = 0``
or a homogeneous injection target ``E``) the linearised layer is ``δX ↦ δX N_l + K δX M_l`` with
the d×d matrices of :mod:`numerics.analysis.linearised` (derived independently in
:mod:`theory.linearisation`), so

    δX_L = Σ_j K^j δX_0 C_j = Σ_λ P_λ δX_0 D_λ,   D_λ = Π_l (N_l + λM_l).

Checked on one instance:

* the polynomial form (Horner in the row-stochastic ``K``) against the analytic JVP through the
  nonlinear stack (:func:`numerics.model.autodiff.stack_jvp`) and against the layer-by-layer
  recursion;
* both the polynomial form and the JVP against the nonlinear stack :func:`numerics.model.layer.stack`
  itself, by the order of the Taylor remainder ``r(s) = ‖X_L(X_0 + s δX_0) − X_L(X_0) − s·o‖``
  (:func:`verify.measure.taylor_remainder_order`): ``O(s²)`` when ``o`` is the derivative, ``≈ s‖Δ‖``
  (order 1) when ``o`` is off by ``Δ``. The order is decided by the asymptotic-window rule (expected
  2 ± ``slope_tol``) on the ladder ``s_j = s_0·10^(−j/4)``, ``s_0 = 100·max(‖X_0‖, 1)/‖δX_0‖`` (above
  the state's own scale), evaluated down to where the output's change or the remainder falls within
  ``1e3·u·‖X_L‖`` of rounding, and decided on the *finest* window whose local slopes agree (just
  above rounding, so that a straight pre-asymptotic stretch at coarse steps, e.g. slope 0.94 over a
  decade on a saturated-tanh stack, cannot decide it). Scale-free, no step to tune. If the stack is
  affine along ``δX_0`` (``r ≡ 0`` in exact arithmetic: every token attends only to itself, identity
  σ, no norm) there is no order, and ``o`` must instead equal the secants: ``min_s r(s)/(s‖o‖) ≤
  1e-6`` above the rounding floor (also when the O(s²) regime of a nearly affine stack reaches
  rounding before a window forms);
* the eigen form with the exact spectral projectors (closed forms: integer binomial eigenvectors,
  ``UB`` and ``I − UB``). In rational arithmetic these projectors are verified to be ``K``'s
  spectral projectors exactly (``Σ P_λ = I``, ``K P_λ = P_λ K = λ P_λ``, residuals exactly 0), and
  the float64 eigen form built from them is compared with the polynomial form (only for
  ``T ≤ eig_max_T``: the causal kernel is non-normal, its projectors have entries ~4^T);
* the numeric ``N_l, M_l`` against the lambdified SymPy ones (``d ≤ theory_max_d``,
  :func:`verify.measure.symbolic_agrees`);
* the softmax-derivative term ``δA·n(X)V`` of the first layer, measured directly: it vanishes
  (relative to ``‖δA‖‖n(X)V‖``) although ``δA`` itself does not, whenever some token attends to
  more than one token.

Tolerances are relative to the size of the terms each float64 computation adds (its rounding
scale: float64 resolves a sum only to ``u`` times the size of its terms, ``u = 2⁻⁵³``), so ``tol``
is a multiple of that scale, never of a result that may have cancelled:

* the polynomial form's terms: ``poly_scale = ‖δX_0‖ Σ_j ‖C_j‖₂`` (they cancel when N + M ≈ 0:
  T = d = 1, value_gain = −1, L = 6 cancels by a factor ~1e6; ``poly_cancellation_factor``);
* the JVP's terms: at a homogeneous state the softmax-derivative term ``h δA_l n(X_l)V_l`` of layer
  ``l`` vanishes only because the rows of ``δA_l`` sum to 0, which float64 resolves to rounding of
  ``‖δA_l‖‖n(X_l)V_l‖`` (``‖δA_l‖ ~ β‖x_l‖²``: it grows with the square of the state); the later
  layers amplify that rounding by at most ``Π_{k>l} (‖N_k‖₂ + ‖K‖₂‖M_k‖₂)``. So
  ``jvp_scale = Σ_l h‖δA_l‖_F‖n(X_l)V_l‖_F Π_{k>l}(‖N_k‖₂ + ‖K‖₂‖M_k‖₂)``, with ``δX_l`` the
  linearised tangent. On a deep expanding stack (T = d = 2, L = 7, h = 1, value_gain = 2, seed 1:
  ‖x_7‖ ≈ 1.1e4) the float64 JVP is off by 1.07e-9 relative from the exact JVP (80-digit mpmath),
  the polynomial form by 1.8e-16: ``‖poly − JVP‖ = 48 u·jvp_scale``, rounding of the JVP's own terms.

``poly_form_equals_jvp`` divides by ``max(‖JVP‖, poly_scale, jvp_scale)``;
``poly_vs_jvp_rounding_units`` reports ``‖poly − JVP‖ / (u · that)``. Likewise the float64 eigen
form is judged against ``max(‖poly‖, scale, ‖δX_0‖ Σ_λ ‖P_λ‖₂‖D_λ‖₂)``, the size of its own terms
(for the causal kernel ``‖P_λ‖`` grows ~4^T and the terms cancel:
``eigen_form_cancellation_factor``); the plain relative error ``eigen_form_vs_poly_rel`` is reported
(it grows like the eigenvector condition number: the non-normality finding), and the exact
statement is the rational one. A finite difference at a fixed step is only report-only
(``jvp_vs_finite_difference_rel``, Richardson-extrapolated from central differences at ``fd_step``
and ``fd_step/2``): its truncation depends on the stack's curvature scale, which a fixed step cannot
know (on the instance above it is 1.8e-4 at fd_step = 1e-5 and 7e-8 at 1e-6, falling as step⁴ only
below 3e-6); the Taylor-order test does not need a step.

Hypotheses, measured on the instance: the input state is token-homogeneous (bitwise), the
injection ``γ(E − X)`` is homogeneous, and no layer's slow path contributes (``max_l |g_l| = 0``
where a slow path exists).

Report-only diagnostics (never part of the verdict): the eigen form rebuilt from
``numpy.linalg.eig``'s eigenvectors (through :mod:`numerics.lapack`) and the 2-norm condition
number of that unit-column eigenvector matrix. Inside a repeated eigenvalue LAPACK may return any
basis, including a numerically dependent one (the block_bidirectional kernel on SkylakeX OpenBLAS
gives cond ≈ 2.7e17); the diagnostic then records "singular" or "non-finite" instead of a number.
Also reported (the non-normality finding): the condition number of the causal kernel's unit-column
eigenvector matrix for each ``T`` in ``cond_Ts``, exact (closed forms) and as float64 ``eig``
returns it (it saturates near 1e20 while the exact value keeps growing ~4^T); the same arrays are
the verdict's series ``cond_Ts``, ``cond_exact``, ``cond_numpy_eig``.

Your own depth flow: a :class:`~verify.systems.DepthFlow` is checked the same way on its model
(weights from the flow's seed, its gate; the input, the tangent and the streams from the check's
``seed``). With a named mask nothing else changes. With a boolean mask the closed forms are replaced
by the exact decomposition of :mod:`verify.user_kernels`: a block-local mask (no entry outside the
diagonal P×P blocks) is decomposed block by block (``K = diag(K_b)``, the spectrum the union of
the blocks', ``P_λ = diag(p_{b,λ})``), any other mask as one T×T block. Exact (rational): the
rational eigenvalues and their projectors, and for an irreducible factor ``f`` of degree ≥ 2 of a
block's characteristic polynomial (irrational or complex eigenvalues) its primary projector
``E_f``; ``projectors_exact`` requires all their residuals exactly 0. Floating point: the rational
eigenvalues' projectors are the exact ones rounded once (rounding part 0 by construction); the
roots of ``f`` and their projectors are complex128 (their sum against ``E_f`` within ``tol``), the
eigen form is then complex and its imaginary part counts as error. ``kernel_constant`` is from the
rounded projectors. The factorisation itself needs no block-locality: any mask is accepted. Its
eigen form needs a diagonalisable ``K``: hypothesis ``kernel_diagonalisable`` (exact eigenvector
counts, for an irreducible ``f`` the nullity of ``f(K)``; a defective block kernel is
``outside-hypotheses``). Bad input (exit 2): a field of the flow beyond the bounds of D4's
parameter of the same name (T, P, d, L, γ, gate, scale, value_gain), or a block (or a
non-block-local mask) of more than ``verify.user_kernels.MAX_EXACT_BLOCK`` tokens.

Negative controls: a heterogeneous input (``heterogeneity > 0``) or the slow path with
``gate ≠ 0``: the factorised prediction (built from the homogeneous single-token trajectory with
``g = 0``) no longer matches the JVP of the actual stack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastslow.numerics import lapack
from fastslow.numerics.analysis import linearised
from fastslow.numerics.model.autodiff import stack_jvp
from fastslow.numerics.model.layer import stack
from fastslow.numerics.model.masks import frozen_kernel
from fastslow.numerics.model.tangents import softmax_derivative_term
from fastslow.numerics.model.weights import Model
from fastslow.theory.linearisation import factors_function

from ..claim import Claim, Conclusion, Control
from ..diagnostics import (
    SIGMA_SMOOTH_RULE,
    homogeneous_reference,
    sigma_smooth_where_differenced,
)
from ..measure import (
    UNIT_ROUNDOFF,
    ratio,
    relative_error,
    richardson_difference,
    symbolic_agrees,
    taylor_remainder_order,
)
from ..model_params import model_params
from ..params import Param
from ..systems import DepthFlow
from ..user_kernels import UserKernel, kernel_diagonalisable, require_decomposable, user_kernel
from ..verdict import Diagnostic, at_most, not_evaluated

SOFTMAX_DA_MIN = 1e3 * float(np.finfo(float).eps) / 2
"""The softmax-derivative check is not vacuous: ``‖δA‖_F / ‖δS‖_F`` (the attention change relative
to the score change on the mask, a scale-free ratio) must be resolved above rounding, 1e3 units of
roundoff, whenever some token attends to more than one token; then ``δA·n(X)V = 0`` to rounding
of ``‖δA‖‖n(X)V‖`` is a real cancellation of non-zero terms. (A saturated softmax has a small but
well-resolved ratio, e.g. 2.4e-4 at T = 2 with the norm on.)"""
TAYLOR_REPORTED = (
    "slope",
    "ci95",
    "s",
    "remainder",
    "local_slopes",
    "order_2",
    "converged",
    "window",
    "secant_defect_rel",
    "finest_local_slope",
    "holds",
)
"""The numbers of a Taylor-remainder test that D4 reports (figures ``*_taylor_remainder``)."""
TAYLOR_KINK_RADIUS = 1e-3
"""Relative radius (in units of ``‖X_0‖/‖δX_0‖``) of the segment along ``δX_0`` on which a
non-smooth σ must have no kink for the derivative tests to difference a smooth map."""
TAYLOR_RULE = "Taylor remainder order 2 ± slope_tol, or min secant defect ≤ 1e-6"


def positive(default: float, meaning: str, high: float = 1.0) -> Param:
    """A float parameter in ``(0, high]`` (a step or a tolerance)."""
    return Param(default, meaning, low=0.0, high=high, open_low=True)


# ----------------------------------------------------------------------------- the instance


class Instance:
    """The seeded model (gated as the parameters say), the input ``X_0`` (homogeneous plus
    ``heterogeneity`` times a random token part), the tangent ``δX_0`` and the frozen kernel."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, d_seed = np.random.SeedSequence(seed).spawn(3)
        self.p = p
        if system is None:
            self.model = linearised.random_model(p, w_seed)
            self.gated = self.model.with_gates(p["gate"])
        else:  # your flow: its weights (its seed) and its gate
            self.gated = system.model()
            self.model = self.gated.with_gates(0.0)
        self.cfg = self.model.config
        self.mask = self.cfg.mask_name  # None: a user mask, decomposed exactly
        self.user = None if self.mask else user_kernel(self.cfg.mask_array, self.cfg.P)
        rng = np.random.default_rng(x_seed)
        self.x0 = rng.standard_normal(self.cfg.d)
        self.X0 = np.ones((self.cfg.T, 1)) * self.x0 + p["heterogeneity"] * rng.standard_normal(
            (self.cfg.T, self.cfg.d)
        )
        # the injection target is held at the input (as stack_jvp does)
        self.E = self.X0 if self.cfg.gamma else None
        self.dX0 = np.random.default_rng(d_seed).standard_normal((self.cfg.T, self.cfg.d))
        self.K = frozen_kernel(self.cfg.mask_array)

    def stack(self, X: np.ndarray) -> np.ndarray:
        """``X_L`` of the actual (gated) stack from the input ``X``."""
        return stack(self.gated, X, self.E)

    @property
    def exact_user(self) -> UserKernel:
        """The exact decomposition of your mask (an instance on a named mask has none)."""
        if self.user is None:
            raise ValueError(f"D4 on the named mask {self.mask!r} has no user decomposition")
        return self.user


@dataclass
class Prediction:
    """The factorised prediction from the homogeneous single-token trajectory of the ungated model:
    the trajectory ``x_l``, the factors ``N_l, M_l``, the depth polynomial ``C_j``, the polynomial
    form ``Σ_j K^j δX_0 C_j`` and the layer-by-layer recursion, with the polynomial form's rounding
    scale ``‖δX_0‖ Σ_j ‖C_j‖₂`` (the size of its terms)."""

    ungated: Model
    xs: np.ndarray
    N: np.ndarray
    M: np.ndarray
    C: np.ndarray
    poly: np.ndarray
    rec: np.ndarray
    poly_scale: float


def linearised_prediction(inst: Instance) -> Prediction:
    """The :class:`Prediction` of the instance (d×d work and products with ``K`` only)."""
    ungated = inst.model.with_gates(0.0)
    xs = linearised.homogeneous_trajectory(ungated, inst.x0)
    N, M = linearised.layer_factors(ungated, xs)
    C = linearised.depth_polynomial(N, M)
    poly = linearised.apply_depth_polynomial(inst.K, inst.dX0, C)
    rec = linearised.linearised_stack(inst.K, inst.dX0, N, M)
    poly_scale = float(np.linalg.norm(inst.dX0) * sum(np.linalg.norm(Cj, 2) for Cj in C))
    return Prediction(ungated, xs, N, M, C, poly, rec, poly_scale)


# ----------------------------------------------------------------------------- measurements


def jvp_rounding_scale(inst: Instance, pred: Prediction) -> float:
    """``Σ_l h‖δA_l‖_F‖n(X_l)V_l‖_F Π_{k>l}(‖N_k‖₂ + ‖K‖₂‖M_k‖₂)``: the size of the JVP's
    softmax-derivative terms (zero in exact arithmetic at a homogeneous state, rounding of this size
    in float64) propagated to layer L by the norms of the linearised layers (``δX_l`` along the
    linearised recursion)."""
    cfg, K, N, M = inst.cfg, inst.K, pred.N, pred.M
    k2 = float(np.linalg.norm(K, 2))
    gains = [float(np.linalg.norm(N[l], 2) + k2 * np.linalg.norm(M[l], 2)) for l in range(len(N))]
    dX, total = inst.dX0, 0.0
    for l, lp in enumerate(pred.ungated.layers):
        X = np.ones((cfg.T, 1)) * pred.xs[l]
        _, dA, vn, _ = softmax_derivative_term(cfg, lp, X, dX)
        total += cfg.h * dA * vn * float(np.prod(gains[l + 1 :]))
        dX = linearised.linearised_layer(K, dX, N[l], M[l])
    return total


def unit_column_condition(V: np.ndarray) -> float:
    """2-norm condition number of ``V`` with unit columns (invariant to LAPACK's column scaling and
    order); ``inf`` when the smallest singular value is 0 or the result is not finite."""
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(V, axis=0)
        if not np.all(np.isfinite(V)) or np.any(norms == 0):
            return float("inf")
        s = lapack.svdvals(V / norms)
        c = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
    return c if np.isfinite(c) else float("inf")


def numpy_eig_diagnostic(K: np.ndarray, dX0: np.ndarray, C: np.ndarray, poly: np.ndarray) -> dict:
    """Report-only: the eigen form rebuilt from ``eig``'s eigenvectors, ``Σ_k v_k w_kᵀ δX_0 Σ_j λ_k^j
    C_j`` with ``W = V⁻¹``, against the polynomial form, and cond₂ of the unit-column ``V``.

    Never raises on LAPACK's choice of basis: a singular ``V`` is recorded as
    ``"singular (numpy.linalg.inv raised LinAlgError)"`` and a non-finite result as
    ``"non-finite"``. Never part of a verdict."""
    w, V = lapack.eig(K)
    out: dict[str, float | str] = {"eigenvector_condition": unit_column_condition(V)}
    with np.errstate(all="ignore"):
        try:
            Wn = np.linalg.inv(V)
        except np.linalg.LinAlgError:
            out["eigen_form_vs_poly_rel"] = "singular (numpy.linalg.inv raised LinAlgError)"
            return out
        if not np.all(np.isfinite(Wn)):
            out["eigen_form_vs_poly_rel"] = "non-finite (inverse of the eigenvector matrix)"
            return out
        coeff = [np.real(sum(C[j] * wk**j for j in range(C.shape[0]))) for wk in w]
        eig_np = np.real(sum(np.outer(V[:, k], Wn[k]) @ dX0 @ coeff[k] for k in range(w.size)))
        rel = relative_error(eig_np, poly) if np.all(np.isfinite(eig_np)) else float("nan")
    out["eigen_form_vs_poly_rel"] = rel if np.isfinite(rel) else "non-finite"
    return out


def mixes_tokens(mask: np.ndarray) -> bool:
    """Some token attends to more than one token (otherwise ``δA = 0`` trivially)."""
    return bool(np.asarray(mask).sum(axis=1).max() > 1)


# ----------------------------------------------------------------------------- conclusion parts


def softmax_derivative_parts(inst: Instance, tol: float) -> tuple[dict, dict]:
    """``softmax_derivative_term_vanishes`` and ``softmax_derivative_not_vacuous`` on layer 0 of
    the actual stack at ``X_0`` along ``δX_0``, with their figures."""
    term, dA_norm, v_norm, dS_norm = softmax_derivative_term(
        inst.cfg, inst.gated.layers[0], inst.X0, inst.dX0
    )
    figures = {
        "softmax_derivative_term_rel": ratio(term, dA_norm * v_norm),
        "softmax_derivative_dA_norm": dA_norm,
        "softmax_derivative_dS_norm": dS_norm,
    }
    parts = {
        "softmax_derivative_term_vanishes": at_most(
            figures["softmax_derivative_term_rel"], tol, "‖δA·n(X)V‖/(‖δA‖‖n(X)V‖) ≤ tol"
        )
    }
    if mixes_tokens(inst.cfg.mask_array) and dS_norm > 0:
        moved = dA_norm / dS_norm
        parts["softmax_derivative_not_vacuous"] = Diagnostic(
            moved > SOFTMAX_DA_MIN, moved, f"‖δA‖_F / ‖δS‖_F > {SOFTMAX_DA_MIN:.2g} (1e3 u)"
        )
    else:
        parts["softmax_derivative_not_vacuous"] = Diagnostic(
            True,
            dA_norm,
            "no term to test: every token attends only to itself, or the scores "
            "do not move (δS = 0 on the mask)",
        )
    return parts, figures


def taylor_stencil_smooth(inst: Instance) -> Diagnostic:
    """σ is smooth where the derivative tests difference the stack: for relu, no MLP
    pre-activation changes sign at ``X_0 ± TAYLOR_KINK_RADIUS·‖X_0‖/‖δX_0‖·δX_0``, a segment that
    holds the report-only Richardson stencil (``± fd_step``, ``fd_step`` below the radius) and the
    Taylor test's deciding window (its finest converged window: a remainder of order ``s²`` reaches
    the rounding floor ``1e3·u·‖X_L‖`` by ``s ≈ 1e-6·‖X_0‖/‖δX_0‖``)."""
    X0, dX0 = inst.X0, inst.dX0
    radius = max(
        TAYLOR_KINK_RADIUS * float(np.linalg.norm(X0)) / float(np.linalg.norm(dX0)),
        inst.p["fd_step"],
    )
    return sigma_smooth_where_differenced(
        inst.gated,
        X0,
        [(inst.gated, X0 + s * radius * dX0) for s in (1.0, -1.0)],
        inst.E,
        what="the Taylor and finite-difference steps along δX_0",
    )


def derivative_parts(inst: Instance, pred: Prediction) -> tuple[dict, dict]:
    """The polynomial form against the JVP of the actual stack (relative to the size of either
    computation's terms) and the layer-by-layer recursion, and both forms against the stack itself
    by the order of their Taylor remainders; the Richardson finite difference is report-only."""
    p, poly, dX0, X0 = inst.p, pred.poly, inst.dX0, inst.X0
    _, jvp = stack_jvp(inst.gated, X0, dX0)
    fd = richardson_difference(inst.stack, X0, dX0, p["fd_step"])
    jvp_scale = jvp_rounding_scale(inst, pred)
    norm_jvp = float(np.linalg.norm(jvp))
    jvp_ref = max(norm_jvp, pred.poly_scale, jvp_scale)
    taylor_poly = taylor_remainder_order(inst.stack, X0, dX0, poly, p["slope_tol"])
    taylor_jvp = taylor_remainder_order(inst.stack, X0, dX0, jvp, p["slope_tol"])
    figures = {
        "poly_vs_jvp_rel": relative_error(poly, jvp, scale=jvp_ref),
        "poly_vs_jvp_rounding_units": ratio(
            float(np.linalg.norm(poly - jvp)), UNIT_ROUNDOFF * jvp_ref
        ),
        "poly_vs_jvp_plain_rel": relative_error(poly, jvp),
        "jvp_rounding_scale": jvp_scale,
        "poly_rounding_scale": pred.poly_scale,
        "poly_vs_recursion_rel": relative_error(
            poly, pred.rec, scale=max(float(np.linalg.norm(pred.rec)), pred.poly_scale)
        ),
        "poly_cancellation_factor": ratio(pred.poly_scale, norm_jvp),
        "poly_taylor_remainder": {k: taylor_poly[k] for k in TAYLOR_REPORTED},
        "jvp_taylor_remainder": {k: taylor_jvp[k] for k in TAYLOR_REPORTED},
        "poly_taylor_slope": taylor_poly["slope"],
        "jvp_taylor_slope": taylor_jvp["slope"],
        "jvp_vs_finite_difference_rel": relative_error(jvp, fd),
        "norm_dXL": norm_jvp,
        "kernel_constant": (
            linearised.kernel_constant(inst.mask, inst.cfg.T, inst.cfg.P)
            if inst.mask
            else inst.exact_user.kernel_constant()
        ),
    }
    tol = p["tol"]
    parts = {
        "poly_form_equals_jvp": at_most(
            figures["poly_vs_jvp_rel"], tol, "‖poly − JVP‖/max(‖JVP‖, poly_scale, jvp_scale) ≤ tol"
        ),
        "poly_form_equals_recursion": at_most(
            figures["poly_vs_recursion_rel"], tol, "‖poly − rec‖/max(‖rec‖, scale) ≤ tol"
        ),
        "poly_form_is_derivative_of_stack": Diagnostic(
            taylor_poly["holds"],
            {k: taylor_poly[k] for k in ("slope", "ci95", "secant_defect_rel")},
            TAYLOR_RULE,
        ),
        "jvp_is_derivative_of_stack": Diagnostic(
            taylor_jvp["holds"],
            {k: taylor_jvp[k] for k in ("slope", "ci95", "secant_defect_rel")},
            TAYLOR_RULE,
        ),
    }
    return parts, figures


def projector_parts(inst: Instance, tol: float) -> tuple[dict, dict, dict]:
    """``projectors_exact``: the closed-form spectral projectors are ``K``'s exactly (rational
    residuals 0) and the float64 ones round them (max-norm error relative to ``max(1, max|P_λ|)``).
    Also returns the float64 projectors ``{λ: P_λ}``."""
    cfg = inst.cfg
    if inst.mask is None:
        return user_projector_parts(inst)
    exact = linearised.exact_projector_residuals(inst.mask, cfg.T, cfg.P)
    exact_projs = linearised.exact_spectral_projectors(inst.mask, cfg.T, cfg.P)
    projs = linearised.spectral_projectors(inst.mask, cfg.T, cfg.P)
    by_value = {float(lam): Pl for lam, Pl in exact_projs.items()}
    same_keys = set(by_value) == set(projs)
    rounding = float("inf")  # a float projector without an exact one (or the reverse)
    if same_keys:
        rounding = max(
            (
                relative_error(
                    Pl,
                    np.array(by_value[lam], dtype=float),
                    scale=max(1.0, float(np.abs(Pl).max())),
                    norm="max",
                )
                for lam, Pl in projs.items()
            ),
            default=0.0,
        )
    exact_ok = all(r == 0 for r in exact.values()) and same_keys and rounding <= tol
    residuals = {k: str(r) for k, r in exact.items()}
    figures = {"exact_projector_residuals": residuals, "float_projectors_vs_exact_rel": rounding}
    part = Diagnostic(
        exact_ok,
        {**residuals, "float_rel": rounding},
        "exact residuals of Σ P − I, K P − λP, P K − λP all 0; float projectors within tol",
    )
    return {"projectors_exact": part}, figures, projs


def user_projector_parts(inst: Instance) -> tuple[dict, dict, dict]:
    """``projectors_exact`` for a user mask: the exact block projectors' residuals (``Σ P − I``,
    ``K P − λP``, ``P P − δP``; for an irreducible factor ``f`` of degree ≥ 2 its primary
    projector's ``K E_f − E_f K`` and ``f(K) E_f``) are all exactly 0; the float64 projectors of
    rational eigenvalues are the exact ones rounded once, those of ``f``'s roots (complex128) must
    sum to ``E_f`` within ``tol`` (:meth:`verify.user_kernels.UserKernel.primary_float_error`)."""
    zero = inst.exact_user.residuals_zero()
    rounding = inst.exact_user.primary_float_error()
    value = {"exact_residuals_all_zero": zero, "float_rel": rounding}
    figures = {
        "exact_projector_residuals": {"all": "0" if zero else "not all 0"},
        "float_projectors_vs_exact_rel": rounding,
    }
    part = Diagnostic(
        zero and rounding <= inst.p["tol"],
        value,
        "exact residuals of your blocks' projectors all 0 (rational arithmetic); the complex "
        "float projectors of each irrational factor's roots sum to its exact primary projector "
        "within tol",
    )
    return {"projectors_exact": part}, figures, inst.exact_user.projectors()


def mode_products(N: np.ndarray, M: np.ndarray, lams: list) -> np.ndarray:
    """``D_λ = Π_l (N_l + λM_l)`` for each ``λ``: :func:`numerics.analysis.linearised.mode_products`
    for real eigenvalues; in complex128 when some are complex (irrational block spectra of your
    mask)."""
    if all(isinstance(lam, float) for lam in lams):
        return linearised.mode_products(N, M, lams)
    out = []
    for lam in lams:
        D = np.eye(N.shape[1], dtype=complex)
        for Nl, Ml in zip(N, M):
            D = D @ (Nl + lam * Ml)
        out.append(D)
    return np.array(out)


def eigen_error(eig: np.ndarray, poly: np.ndarray, scale: float) -> float:
    """``‖eig − poly‖_F / scale``; a complex eigen form (complex eigenvalues) counts its imaginary
    part as error (the exact eigen form is real)."""
    if np.iscomplexobj(eig):
        return relative_error(
            np.stack([eig.real, eig.imag]), np.stack([poly, np.zeros_like(poly)]), scale=scale
        )
    return relative_error(eig, poly, scale=scale)


def eigen_form_parts(inst: Instance, pred: Prediction) -> tuple[dict, dict, list]:
    """``projectors_exact`` and ``eigen_form_equals_poly_form`` (for ``T ≤ eig_max_T``): the float64
    eigen form ``Σ_λ P_λ δX_0 D_λ`` against the polynomial form, relative to the size of the terms
    of either form; plus the report-only eigen form from LAPACK's eigenvectors."""
    p, cfg, tol, poly = inst.p, inst.cfg, inst.p["tol"], pred.poly
    why = ""
    if cfg.T > p["eig_max_T"]:
        why = f"not evaluated: T={cfg.T} > eig_max_T={p['eig_max_T']}"
    elif inst.user is not None and not inst.user.diagonalisable:
        why = "not evaluated: K is not diagonalisable (no spectral projectors)"
    if why:
        return (
            {k: not_evaluated(why) for k in ("projectors_exact", "eigen_form_equals_poly_form")},
            {},
            [],
        )
    parts, figures, projs = projector_parts(inst, tol)
    lams = sorted(projs, key=lambda lam: (-np.real(lam), -np.imag(lam)))
    D = dict(zip(lams, mode_products(pred.N, pred.M, lams)))
    eig = linearised.eigen_form(projs, inst.dX0, D)
    norm_poly = float(np.linalg.norm(poly))
    figures["eigen_form_vs_poly_rel"] = eigen_error(eig, poly, max(norm_poly, pred.poly_scale))
    # rounding scale of the float64 eigen form: the size of its terms (for the non-normal causal
    # kernel ‖P_λ‖ ~ 4^T and the terms cancel to ‖poly‖)
    eig_scale = float(
        np.linalg.norm(inst.dX0)
        * sum(np.linalg.norm(projs[lam], 2) * np.linalg.norm(D[lam], 2) for lam in lams)
    )
    figures["eigen_form_cancellation_factor"] = ratio(eig_scale, norm_poly)
    figures["eigen_form_vs_poly_rel_term_scaled"] = eigen_error(
        eig, poly, max(norm_poly, pred.poly_scale, eig_scale)
    )
    parts["eigen_form_equals_poly_form"] = at_most(
        figures["eigen_form_vs_poly_rel_term_scaled"],
        tol,
        "‖Σ_λ P_λ δX_0 D_λ − poly‖/max(‖poly‖, size of the terms of either form) ≤ tol",
    )
    # report-only: the same with numpy.linalg.eig's eigenvectors (LAPACK's choice of basis)
    diag = numpy_eig_diagnostic(inst.K, inst.dX0, pred.C, poly)
    figures["numpy_eig_form_vs_poly_rel"] = diag["eigen_form_vs_poly_rel"]
    figures["numpy_eig_eigenvector_condition"] = diag["eigenvector_condition"]
    notes = [
        "numpy_eig_*: report-only diagnostics of LAPACK's eigenvector basis "
        "(any basis of a repeated eigenvalue is valid, even a dependent one); "
        "never part of the verdict"
    ]
    return parts, figures, notes


def theory_factor_parts(inst: Instance, pred: Prediction) -> tuple[dict, dict]:
    """``factors_match_theory`` (for ``d ≤ theory_max_d``): the numeric ``N_l, M_l`` against the
    lambdified SymPy factors, the largest relative deviation over the layers."""
    p, cfg = inst.p, inst.cfg
    if cfg.d > p["theory_max_d"]:
        why = f"not evaluated: d={cfg.d} > theory_max_d={p['theory_max_d']}"
        return {"factors_match_theory": not_evaluated(why)}, {}
    f = factors_function(cfg.d, cfg.m, cfg.norm, cfg.sigma)
    devs = []  # relative deviations, in the order N_0, M_0, N_1, M_1, …
    for l, lp in enumerate(pred.ungated.layers):
        N, M = pred.N[l], pred.M[l]
        Nt, Mt = f(pred.xs[l], lp.V, lp.W1, lp.W2, cfg.h, cfg.gamma, cfg.norm_eps)
        devs.append(
            symbolic_agrees(Nt, N, tol=p["tol"], scale=float(np.linalg.norm(N)), norm="fro")
        )
        # M_l = h·Dn(x_l)·V: the norm Jacobian I/r − x xᵀ/(d r³) cancels (to ~1e-6 of its terms
        # at d = 1), so M_l is compared in units of its terms' size h‖V‖/r
        r = float(np.sqrt(np.mean(pred.xs[l] ** 2) + cfg.norm_eps)) if cfg.norm else 1.0
        m_scale = cfg.h * float(np.abs(lp.V).max()) / r
        m_scale = max(float(np.linalg.norm(M)), m_scale)
        if np.any(M):
            devs.append(symbolic_agrees(Mt, M, tol=p["tol"], scale=m_scale, norm="fro"))
    dev = max([0.0, *(d.value for d in devs)])  # M_l = 0 deviates by 0
    part = at_most(dev, p["tol"], "max_l rel. dev. of N_l, M_l ≤ tol")
    return {"factors_match_theory": part}, {"theory_vs_numerics_factors_rel": dev}


def condition_report(p: dict) -> tuple[dict, dict, list]:
    """Report-only (``report_condition``): cond₂ of the causal kernel's unit-column eigenvector
    matrix for each ``T`` in ``cond_Ts``, exact (closed forms) and as float64 ``eig`` returns it;
    as figures and as the series the condition panel draws."""
    if not p["report_condition"]:
        return {}, {}, []
    figures: dict[str, float | dict] = {}
    conds: dict[str, dict[str, float]] = {}
    series: dict = {"cond_Ts": [], "cond_exact": [], "cond_numpy_eig": []}
    for T in p["cond_Ts"]:
        exact_c = linearised.causal_eigenvector_condition(T)
        numpy_c = unit_column_condition(lapack.eig(frozen_kernel("causal", T))[1])
        conds[str(T)] = {"exact": exact_c, "numpy_eig_float64": numpy_c}
        figures[f"causal_eigvec_cond_exact_T{T}"] = exact_c
        figures[f"causal_eigvec_cond_numpy_T{T}"] = numpy_c
        for key, value in zip(series, (T, exact_c, numpy_c)):
            series[key].append(value)
    figures["causal_eigenvector_condition"] = conds
    notes = [
        "causal eigenvector condition (unit columns): exact value from the closed "
        "forms vs numpy.linalg.eig in float64 (report-only; float64 saturates near "
        "1e20 while the exact value keeps growing ~4^T)"
    ]
    return figures, series, notes


# ----------------------------------------------------------------------------- the claim


class D4(Claim):
    id = "D4"
    title = "Eigenbasis factorisation"
    abstract = "the linearised layer factorises along the eigenbasis of a frozen attention kernel"
    statement = (
        "At a homogeneous state the linearised layer is δX ↦ δX N_l + K δX M_l, so "
        "δX_L = Σ_λ P_λ δX_0 D_λ with D_λ = Π_l (N_l + λ M_l); checked exactly (the "
        "closed-form spectral projectors in rational arithmetic), by the polynomial form "
        "and by JVPs."
    )
    params = {
        **model_params(
            T=dict(high=128),
            P=dict(meaning="block size", high=128),
            d=dict(high=32),
            L=6,
            mask="causal",
            scale=dict(meaning="scale of the random weights", high=1e3),
        ),
        "value_gain": Param(0.0, "added to every V_l as value_gain·I", low=-1e3, high=1e3),
        **model_params(
            norm=dict(meaning="RMS norm on"),
            sigma=None,
            h=dict(default=1.0, high=1e3),
            gamma=dict(high=1e3),
        ),
        "heterogeneity": Param(
            0.0, "size of a random token-dependent part added to the input", low=0.0, high=1e3
        ),
        **model_params(slow=False, gate=dict(low=-1e3, high=1e3)),
        "eig_max_T": Param(
            12,
            "evaluate the eigen form (and its exact projectors) only for T ≤ this",
            low=0,
            high=24,
        ),
        "theory_max_d": Param(4, "compare with the SymPy factors only for d ≤ this", low=0, high=5),
        "fd_step": positive(1e-5, "step of the report-only finite difference"),
        "tol": positive(
            1e-10,
            "tolerance of the exact identities, relative to the size of the terms "
            "of the float64 computations (their rounding scale)",
        ),
        "slope_tol": positive(0.1, "absolute tolerance of the Taylor-remainder order 2"),
        "report_condition": Param(
            True, "report the causal eigenvector condition numbers (cond_Ts)"
        ),
        "cond_Ts": Param(
            (8, 16, 32, 64),
            "sizes of the causal eigenvector-condition report (at most 16: a report, and each "
            "size costs an exact condition number)",
            low=1,
            high=128,
            max_len=16,
        ),
    }
    hypotheses = {
        "state_token_homogeneous": "the input state is 1 x_0ᵀ: max_t max|X_t − X_1| = 0 (bitwise)",
        "injection_homogeneous": "the injection γ(E − X) is homogeneous: γ · max_t max|E_t − E_1| = 0",
        "slow_path_closed": "no layer's slow path contributes: max_l |g_l| = 0 where a slow path exists",
        "sigma_smooth_where_differenced": SIGMA_SMOOTH_RULE,
        "kernel_diagonalisable": "the frozen kernel K is diagonalisable (named masks: closed "
        "forms; your mask: exact eigenvector counts of every block kernel)",
    }
    hypothesis_sources = {
        "state_token_homogeneous": "input",
        "injection_homogeneous": "input",
        "slow_path_closed": "implementation",
        "sigma_smooth_where_differenced": "implementation",
        "kernel_diagonalisable": "theory",
    }
    conclusion = {
        "poly_form_equals_jvp": "‖Σ_j K^j δX_0 C_j − JVP‖ / max(‖JVP‖, poly_scale, jvp_scale) ≤ tol "
        "(the sizes of the terms of either computation)",
        "poly_form_equals_recursion": "‖poly − layer-by-layer recursion‖ / max(‖rec‖, poly_scale) ≤ tol",
        "poly_form_is_derivative_of_stack": "Taylor remainder of the stack with the polynomial form "
        "has order 2 ± slope_tol (or, affine along δX_0, the "
        "min secant defect ≤ 1e-6)",
        "jvp_is_derivative_of_stack": "Taylor remainder of the stack with the JVP has order "
        "2 ± slope_tol (or min secant defect ≤ 1e-6)",
        "softmax_derivative_term_vanishes": "‖δA·n(X)V‖ / (‖δA‖‖n(X)V‖) ≤ tol",
        "softmax_derivative_not_vacuous": f"‖δA‖_F / ‖δS‖_F > {SOFTMAX_DA_MIN:.2g} (the attention does "
        "move) whenever some token attends to more than one "
        "token and δS ≠ 0",
        "projectors_exact": "in rational arithmetic Σ P_λ − I, K P_λ − λP_λ, P_λ K − λP_λ are exactly 0, "
        "and the float64 projectors round them (≤ tol relative); T ≤ eig_max_T",
        "eigen_form_equals_poly_form": "the float64 eigen form Σ_λ P_λ δX_0 D_λ equals the polynomial "
        "form: ‖eig − poly‖ / max(‖poly‖, size of the terms) ≤ tol; "
        "T ≤ eig_max_T",
        "factors_match_theory": "numeric N_l, M_l vs SymPy's, relative ≤ tol; d ≤ theory_max_d",
    }
    controls = (
        Control(
            "heterogeneous_input",
            {"heterogeneity": 0.3, "report_condition": False},
            breaks="state_token_homogeneous",
            meaning="a token-dependent input: the kernel is not frozen, the softmax-derivative "
            "term does not cancel, and the factorised prediction misses the JVP",
            seed=11,
        ),
        Control(
            "open_gate",
            {"slow": True, "gate": 0.5, "mask": "block_causal", "report_condition": False},
            breaks="slow_path_closed",
            meaning="the slow path with g ≠ 0 gives block 1 zero (U_c) and breaks homogeneity; "
            "the g = 0 prediction misses the JVP",
            seed=11,
        ),
    )
    key_figures = ("poly_vs_jvp_rel", "eigen_form_vs_poly_rel", "causal_eigvec_cond_exact_T64")

    instance = Instance

    systems = (DepthFlow,)
    system_terms = {
        "DepthFlow": "gate=0.0 and gamma=0.0, the defaults (slow_path_closed, "
        "injection_homogeneous), sigma='tanh', 'gelu' or 'identity' "
        "(sigma_smooth_where_differenced), and a mask whose frozen kernel is diagonalisable "
        "(kernel_diagonalisable: the named masks are; a boolean mask is decided exactly, block "
        "by block); value_gain and norm are free"
    }

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.DepthFlow` with a named mask, or a boolean mask whose kernel
        can be decomposed exactly (:mod:`verify.user_kernels`: blocks of at most
        ``MAX_EXACT_BLOCK`` tokens); bad input otherwise."""
        super().accepts(system)
        system.within_limits(self.id, self.params)
        require_decomposable(system, self.id)

    def build_system(self, p, seed, system):
        """The D4 instance of your flow (its model and gate; input and tangent from ``seed``)."""
        return Instance(p, seed, system)

    def diagnose(self, inst):
        return {
            **homogeneous_reference(inst.cfg, inst.gated.layers, inst.X0, inst.E),
            "sigma_smooth_where_differenced": taylor_stencil_smooth(inst),
            "kernel_diagonalisable": kernel_diagonalisable(inst.user, inst.mask),
        }

    def conclude(self, inst):
        p = inst.p
        pred = linearised_prediction(inst)
        parts, figures = softmax_derivative_parts(inst, p["tol"])
        derivative, derivative_figures = derivative_parts(inst, pred)
        eigen, eigen_figures, eigen_notes = eigen_form_parts(inst, pred)
        theory, theory_figures = theory_factor_parts(inst, pred)
        condition_figures, series, condition_notes = condition_report(p)
        for more in (derivative, eigen, theory):
            parts.update(more)
        for more in (derivative_figures, eigen_figures, theory_figures, condition_figures):
            figures.update(more)
        if inst.user is not None:
            figures["your_mask"] = inst.user.summary()
        notes = [
            "relative Frobenius residuals; the eigen form uses the closed-form spectral "
            "projectors (your mask: its blocks' exact projectors; verified exactly in rational "
            "arithmetic) and is only evaluated for "
            f"T ≤ {p['eig_max_T']}",
            *eigen_notes,
            *condition_notes,
        ]
        return Conclusion(
            parts,
            figures,
            tolerance={
                "rel_to_term_size": p["tol"],
                "taylor_order_abs": p["slope_tol"],
                "softmax_dA_min": SOFTMAX_DA_MIN,
            },
            notes=notes,
            series=series,
        )


CLAIM = D4()
