"""D5 — saturation depth and block coarse-graining.

Statement: with ``r(L) = max_{λ≠1} ‖D_λ‖₂ / σ_min(D_1)`` and ``L*(τ) = min{L : r(L) ≤ τ}``
(computed from d×d products only),

    ‖δX_L − Π δX_0 D_1‖_F ≤ c_K · r(L) · σ_min(D_1) · ‖δX_0‖_F,   c_K = Σ_{λ≠1} ‖P_λ‖₂,

so past ``L*`` the linearised flow factors through the coarse variable (pool by ``Lᵀ``, evolve by
``D_1``, broadcast by ``R``). Exactly, for block-local masks and a block-constant injection target,
block-constant inputs run as the coarse stack (single-token layer on each block value plus the
slow path on block values).

Checked on one instance: both sides of the bound at every depth 1…L (with a rounding allowance
``tol·‖Π δX_0 D_1‖``; their ratio must be ≤ 1 wherever the bound is above that rounding level);
saturation ``r(L) ≤ τ`` for every depth from ``L*`` to ``L``; the coarse factorisation at the final
depth within ``c_K τ`` relative; the same ``r(L)`` and ``L*`` from the brute-force (Td)×(Td)
Jacobian product (dense layer Jacobians assembled column by column from the analytic JVP of
:mod:`numerics.model.autodiff`, modes read off with the closed-form eigenvectors; only when
``T·d ≤ brute_max_Td``); the nonlinear stack by central differences of step ``eta`` against the
linear response; ``c_K`` (closed form) against the exact rational value of :mod:`theory.kernels`
(``T ≤ exact_max_T``); and, when the fast mask is block-local (measured: no mask entry outside
the diagonal blocks), the full stack with gate ``gate ≠ 0`` on ``U Y_0`` against
``U · coarse_stack(Y_0)``. Also reported: the relative within-block fluctuation
``‖(I − UB)δX_L‖ / ‖δX_L‖`` (linear and nonlinear) against its bound.

Hypothesis: the instance saturates within its depth, ``L* ≤ L``, decided from the reference
(:func:`reference_mode_ratio`: the layer written from the §1 formulas, differentiated by the complex
step along its own homogeneous trajectory, the factors ``N_l + λM_l`` read off one token probe
with the reference kernel, the exact eigenvalues of :mod:`verify.reference.spectra`), not from the
d×d products under test. The conclusion part ``mode_data_match_reference`` compares the two: the
eigenvalues used must be the exact ones, and ``r(l)`` must agree for ``l ≤ L*``.

Caveats: ``L*`` is the first crossing; for weak value maps ``r(L)`` is not monotone and can rise
above ``τ`` again (the instance then fails ``saturated_after_L_star``). For the global causal mask
``c_K`` grows like ~4^T (the bound is vacuous at T = 64) and block-constant inputs leave the
block-constant set (``block_constant_output_spread_rel``; the exact coarse stack is claimed only for
block-local masks).

Your own depth flow: a :class:`~verify.systems.DepthFlow` is checked the same way on its model
(weights from the flow's seed; its gate is the coarse-stack comparison's gate, the linear parts use
gate 0; the input, the tangent and ``Y_0`` from the check's ``seed``). With a named mask nothing
else changes. With a boolean mask the closed forms are replaced by the exact decomposition of
:mod:`verify.user_kernels`: a block-local mask block by block (``K = diag(K_b)``, the spectrum the
union of the blocks', ``P_λ = diag(p_{b,λ})``), any other mask as one T×T block. Exact (rational):
the rational eigenvalues and their projectors, ``Π`` (from each block's exact stationary weighting,
or the exact ``P_1`` when a block has several closed classes) and, where every projector with
``λ ≠ 1`` is symmetric or of rank one and the spectrum rational, ``c_K`` (``kernel_constant_exact``:
the float ``c_K`` from the rounded projectors against it; otherwise not evaluated). A block with
irrational or complex eigenvalues (an irreducible factor ``f`` of degree ≥ 2 of its characteristic
polynomial) brings ``f``'s roots to 30 digits rounded to complex128, their complex128 projectors
(built on ``f``'s exact primary projector) and complex ``D_λ``: ``r(L)`` and ``c_K`` are then
floating point throughout. The eigenvalues the d×d products use and those of the reference are the
same list (``mode_data_match_reference`` still compares ``r(l)`` and ``L*`` of the reference layer
with the products'); the reference probes ``N + λM`` through the first token pair ``(t, s)``,
``t ≠ s``, with ``K_ts ≠ 0`` (``(1, 0)`` where it is, as for the named masks). The bound needs a
diagonalisable ``K``: hypothesis ``kernel_diagonalisable`` (exact eigenvector counts; a defective
block kernel is ``outside-hypotheses``). The coarse stack is claimed only for a block-local mask,
as for the named ones. Bad input (exit 2): a field of the flow beyond the bounds of D5's parameter
of the same name (T, P, d, L, γ, gate, scale, value_gain), a block (or non-block-local mask) of
more than ``verify.user_kernels.MAX_EXACT_BLOCK`` tokens, or a user nonlinearity (the reference
layer decides the hypothesis and has formulas only for the named ones).

Finding (a negative control, ``rms_norm_on``): with the RMS norm on, ``r(L)`` stays ≳ 1 — ``J_n``
kills the radial direction, so a perturbation of each token along its own state passes every
layer through the residual stream for every λ and ``σ_min(D_1)`` stays O(1) — so ``L* = ∞`` for
``τ < 1``; the defaults use ``norm=False``. Negative control ``growing_decaying_modes``: ``γ = 0``,
``value_gain = −1.5`` (``M ≈ −1.5 I``, so ``|1 + λ(−1.5)|`` is larger at ``λ = 1/4`` than at
``λ = 1``): ``r(L)`` grows, ``L* = ∞`` and ``δX_L`` does not approach ``Π δX_0 D_1``.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.analysis import linearised

from ...claim import Claim, Conclusion, Control
from ...diagnostics import SIGMA_SMOOTH_RULE, sigma_smooth_where_differenced
from ...model_params import model_params
from ...params import Param
from ...systems import DepthFlow
from ...user_kernels import kernel_diagonalisable, require_decomposable
from ...verdict import Diagnostic
from .measurements import (
    Instance,
    linear_response,
    mode_data,
    nonlinear_response,
    reference_mode_ratio,
)
from .parts import (
    BRUTE_FORCE_R_REL,
    KERNEL_CONSTANT_REL,
    REFERENCE_R_REL,
    brute_force_parts,
    coarse_stack_part,
    kernel_constant_part,
    named_spectra_part,
    reference_part,
    saturation_figures,
    saturation_parts,
)


def positive(default: float, meaning: str, high: float = 1.0) -> Param:
    """A float parameter in ``(0, high]`` (a step or a tolerance)."""
    return Param(default, meaning, low=0.0, high=high, open_low=True)


# ----------------------------------------------------------------------------- the claim


class D5(Claim):
    id = "D5"
    title = "Saturation depth and coarse-graining"
    abstract = (
        "Past a computable saturation depth, the flow factors through the block coarse-graining"
    )
    statement = (
        "For L ≥ L*(τ), ‖δX_L − Π δX_0 D_1‖ ≤ c_K r(L) σ_min(D_1) ‖δX_0‖; L* computed from "
        "d×d products; block-constant inputs run exactly as the coarse stack for block-local "
        "masks (finding: with the RMS norm on, L* = ∞)."
    )
    params = {
        **model_params(
            T=16,
            P=dict(meaning="block size"),
            d=dict(high=32),
            L=dict(default=32, high=256),
            mask="block_causal",
        ),
        "tau": positive(1e-2, "saturation threshold τ of r(L)", high=1e6),
        **model_params(scale=dict(default=0.3, meaning="scale of the random weights", high=1e3)),
        "value_gain": Param(0.8, "added to every V_l as value_gain·I", low=-1e3, high=1e3),
        **model_params(
            norm=dict(default=False, meaning="RMS norm on"),
            sigma=None,
            h=dict(default=1.0, high=1e3),
            gamma=dict(default=0.8, high=1e3),
            slow=dict(meaning="include the slow path (used by the coarse-stack comparison)"),
            gate=dict(
                default=0.5,
                meaning="gate of every layer in the coarse-stack comparison",
                low=-1e3,
                high=1e3,
            ),
        ),
        "eta": positive(1e-6, "central-difference step of the nonlinear stack"),
        "brute_max_Td": Param(
            64, "brute-force dense Jacobian product only for T·d ≤ this", low=0, high=256
        ),
        "exact_max_T": Param(
            16, "compare c_K with the exact rational value only for T ≤ this", low=0, high=32
        ),
        "tol": positive(1e-12, "rounding tolerance (bound allowance, coarse stack)"),
        "fd_tol": positive(1e-6, "relative tolerance of the nonlinear-vs-linear comparison"),
    }

    hypotheses = {
        "saturates_within_depth": "L*(τ) = min{L : r(L) ≤ τ} ≤ L, r from the reference layer "
        "(complex-step factors N_l + λM_l, exact eigenvalues)",
        "sigma_smooth_where_differenced": SIGMA_SMOOTH_RULE,
        "kernel_diagonalisable": "the frozen kernel K is diagonalisable (named masks: closed "
        "forms; your mask: exact eigenvector counts of every block kernel)",
    }
    limits = {
        "nonlinear_response_resolved": "the central difference's rounding level u·max(‖X_L‖, 1)/η "
        "is at most fd_tol times the response (max of ‖δX_L‖ and the difference's size): else "
        "nonlinear_matches_linear cannot be decided at fd_tol",
    }
    limit_governs = {"nonlinear_response_resolved": ("nonlinear_matches_linear",)}
    hypothesis_sources = {
        "saturates_within_depth": "reference",
        "sigma_smooth_where_differenced": "implementation",
        "kernel_diagonalisable": "theory",
    }
    conclusion = {
        "bound_holds_at_every_depth": "‖δX_l − ΠδX_0D_1‖ ≤ c_K r(l) σ_min(D_1) ‖δX_0‖ + tol‖ΠδX_0D_1‖, l = 1…L",
        "bound_ratio_at_most_one": "lhs/rhs ≤ 1 at every depth where rhs > tol‖ΠδX_0D_1‖",
        "saturated_after_L_star": "r(l) ≤ τ for every l from L* to L",
        "coarse_factorisation_within_bound": "‖δX_L − ΠδX_0D_1‖ / ‖ΠδX_0D_1‖ ≤ c_K τ + tol at the final depth",
        "brute_force_L_star_agrees": "T·d ≤ brute_max_Td: L* from the dense (Td)×(Td) Jacobian "
        "product equals L* from the d×d products",
        "brute_force_r_agrees": f"T·d ≤ brute_max_Td and L* finite: r(l) from the dense product "
        f"agrees to {BRUTE_FORCE_R_REL} relative for l ≤ L*",
        "nonlinear_matches_linear": "‖central difference of the stack − δX_L‖ / ‖δX_L‖ ≤ fd_tol",
        "kernel_constant_exact": f"T ≤ exact_max_T: |c_K − exact rational c_K| ≤ "
        f"{KERNEL_CONSTANT_REL}·max(1, c_K)",
        "mode_data_match_reference": "the distinct eigenvalues used are the exact ones, r(l) "
        f"agrees with the reference's to {REFERENCE_R_REL} relative for l ≤ L*, and L* is the "
        "reference's",
        "named_spectra_match_reference": "every named mask at small (T, P): the closed-form "
        "eigenvalues, multiplicities and spectral projectors the engine uses equal the "
        "reference's exact spectrum of the explicitly built kernel",
        "coarse_stack_exact": "block-local fast mask (no entry outside the diagonal blocks): "
        "stack(U Y_0) = U coarse_stack(Y_0) and the output is block-constant, "
        "both ≤ tol + 10·(the stack's relative response to a rounding-size input change) relative",
    }
    controls = (
        Control(
            "growing_decaying_modes",
            {"gamma": 0.0, "value_gain": -1.5},
            breaks="saturates_within_depth",
            meaning="M ≈ −1.5 I: the decaying modes outgrow the persistent one, r(L) grows, "
            "L* = ∞ and δX_L does not approach Π δX_0 D_1",
            seed=4,
        ),
        Control(
            "rms_norm_on",
            {"norm": True, "gamma": 0.0},
            breaks="saturates_within_depth",
            meaning="finding: with the RMS norm on, L* = ∞ — J_n kills the radial direction, "
            "so r(L) stays ≳ 1 and no coarse factorisation is reached",
            seed=4,
        ),
        Control(
            "rms_norm_on_with_injection",
            {"norm": True},
            breaks="saturates_within_depth",
            meaning="finding: with the RMS norm on and the default injection γ, L* = ∞ too "
            "(σ_min(D_1) is small: D_1 is ill-conditioned, r is pessimistic)",
            seed=4,
        ),
    )
    key_figures = ("L_star", "L_star_brute_force", "bound_ratio_max", "kernel_constant")

    instance = Instance

    systems = (DepthFlow,)
    system_terms = {
        "DepthFlow": "norm=False (with the RMS norm on, L* = ∞: saturates_within_depth fails, a "
        "finding) and weights whose decaying modes shrink against the persistent one within "
        "its L layers: a positive value_gain (D5's own instance: value_gain=0.8, gamma=0.8, "
        "scale=0.3, L=32; a negative one, -1.5, makes them grow, L* = ∞); a named "
        "nonlinearity (sigma='tanh', 'gelu', 'relu' or 'identity') and a mask whose frozen kernel "
        "is diagonalisable (kernel_diagonalisable)"
    }

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.DepthFlow` within D5's parameter bounds, with a named
        nonlinearity and a named mask or a boolean mask whose kernel can be decomposed exactly
        (:mod:`verify.user_kernels`: blocks of at most ``MAX_EXACT_BLOCK`` tokens); bad input
        otherwise."""
        super().accepts(system)
        system.within_limits(self.id, self.params)
        if not isinstance(system.sigma, str):
            raise ValueError(
                f"{system.name}: sigma {system.sigma!r} is a user nonlinearity; D5 decides "
                "saturates_within_depth from the reference layer, which has formulas only for "
                "the named ones (tanh, relu, gelu, identity)"
            )
        require_decomposable(system, self.id)

    def build_system(self, p, seed, system):
        """The D5 instance of your flow (its model; input, tangent and ``Y_0`` from ``seed``)."""
        return Instance(p, seed, system)

    def diagnose(self, inst):
        inst.reference = reference_mode_ratio(inst)
        r = inst.reference[1]
        Lstar = linearised.saturation_depth(r, inst.p["tau"])
        return {
            "saturates_within_depth": Diagnostic(
                bool(np.isfinite(Lstar)),
                Lstar,
                f"L*(τ={inst.p['tau']}) ≤ L={inst.model.L}; r(1)={r[0]:.3g}, min r={r.min():.3g}",
            ),
            "sigma_smooth_where_differenced": sigma_smooth_where_differenced(
                inst.model,
                inst.X0,
                [(inst.model, inst.X0 + s * inst.p["eta"] * inst.dX0) for s in (1.0, -1.0)],
                inst.X0 if inst.cfg.gamma else None,
                what="the central difference of the nonlinear stack",
            ),
            "kernel_diagonalisable": kernel_diagonalisable(inst.user, inst.cfg.mask_name),
        }

    def conclude(self, inst):
        p = inst.p
        modes = mode_data(inst)
        resp = linear_response(inst, modes)
        nonlinear = nonlinear_response(inst, resp.dX)
        figures = saturation_figures(p, modes, resp, nonlinear)
        parts = saturation_parts(p, modes, resp, figures)
        for more_parts, more_figures in (
            brute_force_parts(inst, modes),
            kernel_constant_part(inst, modes),
            coarse_stack_part(inst),
            named_spectra_part(),
            reference_part(
                inst, modes, *(getattr(inst, "reference", None) or reference_mode_ratio(inst))
            ),
        ):
            parts.update(more_parts)
            figures.update(more_figures)
        if inst.user is not None:
            figures["your_mask"] = inst.user.summary()
        cfg = inst.cfg
        notes = [
            f"c_K = {modes.c_K:.3g} for mask {cfg.mask_name or 'yours'} (T={cfg.T}, P={cfg.P})",
            "bound_ratio = lhs/rhs of the D5 inequality (≤ 1 means the bound holds), maximised "
            "over the depths where rhs exceeds the rounding level tol·‖ΠδX_0D_1‖",
            "relative within-block fluctuation ‖(I−UB)δX_L‖/‖δX_L‖ ≤ c_K r(L) σ_min(D_1) "
            "‖δX_0‖/‖δX_L‖ because range(Π) is block-constant",
        ]
        return Conclusion(
            parts,
            figures,
            tolerance={
                "bound_ratio_max": 1.0,
                "bound_rounding_rel": p["tol"],
                "coarse_stack_rel": p["tol"],
                "nonlinear_vs_linear_rel": p["fd_tol"],
                "brute_force_r_rel": BRUTE_FORCE_R_REL,
                "kernel_constant_rel": KERNEL_CONSTANT_REL,
            },
            notes=notes,
            limits={"nonlinear_response_resolved": nonlinear[2]},
            series={
                "lams": np.real(inst.lams).tolist(),
                **(
                    {"lams_imag": np.imag(inst.lams).tolist()} if np.iscomplexobj(inst.lams) else {}
                ),
                "mode_ratios": modes.per_mode_ratios.tolist(),
            },
        )


CLAIM = D5()
