"""D1 — the linearised stack is a depth-ordered product of layer Jacobians.

Claim (our formalisation):

1. **Chain rule.** ``∂X_L/∂X_0 = J_{L−1} ⋯ J_0`` with ``J_l = ∂Φ_l/∂X`` evaluated at the trajectory
   point ``X_l`` (``E`` held constant). Checked with dense matrices at small sizes
   (``n = T·d ≤ 64``; a user flow at its own size, within the memory and time budgets): ``J_l`` from :func:`numerics.model.autodiff.layer_jvp` on basis vectors, and
   ``∂X_L/∂X_0`` three ways:

   * forward mode (:func:`~numerics.model.autodiff.stack_jvp` on basis vectors) and reverse mode
     (:func:`~numerics.model.autodiff.stack_vjp` on basis cotangents): difference ≤ 1e-12 times the
     rounding scale of a product, ``√n·Π_l‖J_l‖₂`` (≥ ``‖Π J_l‖_F``). The two agree up to the
     reported cancellation factor ``κ = √n·Π‖J_l‖₂ / ‖Π J_l‖_F``; ``κ`` is ≈ 10–150 on generic
     instances but can reach 1e5 at d = 2 with the norm on (rank-deficient norm Jacobians), where
     the plain relative difference is legitimately ≈ 1e-12;
   * Richardson-extrapolated central differences of :func:`numerics.model.layer.stack` with step
     ``δ = fd_step/max(1, ‖J_{L−1}⋯J_0‖₂)`` (the output moves by about ``fd_step`` whatever the
     expansion of the stack): ``‖product − FD‖_F ≤ 1e-6·‖product‖_F + floor``, where ``floor`` is
     the rounding floor of the difference quotient (each layer's rounding ``u·m_l`` of its largest
     intermediate, amplified by the suffix products ``J_{L−1}⋯J_{l+1}``, divided by ``δ``; see
     :func:`fd_rounding_floor`). The truncation error is ``O(δ⁴)``. The default instance sits at
     ``‖product − FD‖_F/‖product‖_F ≈ 4e-9``, far inside both terms.

2. **Order.** ``r = ‖J_{L−1}⋯J_0 − J_0⋯J_{L−1}‖_F / ‖J_{L−1}⋯J_0‖_F``:

   * untied weights, generic instance: the order matters, ``r ≥ order_tol`` (default 1e-2);
   * tied weights: the unqualified reading is "they agree". Tied weights alone do **not** make
     the ``J_l`` equal: ``J_l = J(X_l)`` still depends on the moving state, and on a generic trajectory of a tied
     model ``r`` is as large as with untied weights (measured ≈ 0.4–0.8 at T=8, d=4, L=4, h=0.5,
     γ=1; a finding against the unqualified reading). What is true: if the ``J_l`` coincide the
     two products are the same power ``J^L`` and agree to rounding. The instance used for the tied
     statement is a **fixed point of the tied map** (``trajectory="fixed_point"``): ``X_0 = X*``
     with ``Φ(X*) = X*`` (Newton's method; it needs ``γ > 0`` and an injection target ``E``), so
     ``X_l = X*`` for every ``l``, all ``J_l`` are equal and ``‖ordered − reversed‖_F`` is
     ≤ ``agree_tol`` (1e-10) times the rounding scale ``√n·Π‖J_l‖₂``, and so is the plain ``r``
     (≈ 2e-16 on the default instance). ``trajectory="homogeneous_fixed_point"`` uses a
     token-homogeneous target ``E = 1 eᵀ``; with ``gate = 0`` the fixed point is token-homogeneous
     too (the frozen kernel of D3); with ``gate ≠ 0`` the slow path (block 1 receives zero) makes
     it heterogeneous.

Hypotheses, all measured on the instance:

* ``product_has_order``: at least two layer Jacobians of size ``n = T·d > 1`` (a single factor, or
  1×1 factors, commute);
* ``layer_jacobians_coincide_where_weights_tied``: whether the weights are tied is read off the
  model (every layer's parameter vector equals layer 0's); if they are, the layer Jacobians must
  coincide along the trajectory, ``max_l ‖J_l − J_0‖_F/‖J_0‖_F ≤ 1e-13``. This is the premise of
  the tied-agreement part. It holds at a fixed point of the tied map; at an unstable fixed point
  rounding errors grow along the stack and the ``J_l`` drift apart, and then it is reported as
  violated, not hidden. On a moving trajectory it fails by O(1): the negative control
  ``tied_moving_trajectory`` records that finding (the reversed product then differs by
  ``r`` ≈ 0.4–0.8);
* ``fixed_point_as_constructed``: a constructed fixed point has residual ``≤ 1e-14`` and, with a
  token-homogeneous target and zero gates, is token-homogeneous (``≤ 1e-13``).

The conclusion: the chain rule (forward/reverse mode and finite differences, as above) and the order
statement of the regime: untied weights ``r ≥ order_tol``; tied weights ``r`` and the scaled
difference ``‖ordered − reversed‖_F/(√n·Π‖J_l‖₂)`` both ``≤ agree_tol``. Negative controls:
(a) ``tied_moving_trajectory``: tied weights on a generic trajectory ("the reversed product
agrees" fails with ``r`` of order 1); (b) ``scalar_jacobians``: ``T = d = 1`` ("the order matters"
fails with ``r`` at rounding level). A failed Newton search for the fixed point
(:func:`numerics.analysis.fixed_points.tied_fixed_point`) raises ``RuntimeError`` (outcome
``error``).

The instance: untied gates are ``gate·(1 + gate_spread·u_l)`` (``gate_spread = 0``: one common
gate); on a generic trajectory the injection target is ``E = X_0`` or, with ``target="random"``,
an independent Gaussian draw; ``distance > 0`` starts a tied stack at ``X* + distance·v`` near its
fixed point (outside the hypotheses: the ``J_l`` differ by ``O(distance)``). The verdict's
``series`` carries the reversal difference of every prefix ``J_{l−1}⋯J_0``, ``l = 1 … L`` (the
first ``l`` layers of the instance are the depth-``l`` instance); the D1 figure draws it against
depth and draws the reversal difference against ``distance``.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.analysis.fixed_points import tied_fixed_point
from fastslow.numerics.analysis.stability import layer_jacobian
from fastslow.numerics.lapack import svdvals
from fastslow.numerics.model.autodiff import stack_jvp, stack_vjp
from fastslow.numerics.model.layer import attention, mlp, slow_path, stack, stack_trajectory
from fastslow.numerics.model.weights import Model, ModelConfig, init_model, spread_gates

from ..claim import Claim, Conclusion, Control
from ..diagnostics import SIGMA_SMOOTH_RULE, sigma_smooth_where_differenced
from ..measure import ratio, relative_error, richardson_difference
from ..model_params import STANDARD, model_params
from ..params import Param
from ..systems import DepthFlow
from ..verdict import Diagnostic

TRAJECTORIES = ("generic", "fixed_point", "homogeneous_fixed_point")
"""Where ``X_0`` lies: a random state, or a fixed point of the tied map (random or
token-homogeneous injection target)."""
TARGETS = ("input", "random")
"""The injection target ``E`` of a generic trajectory: ``X_0`` itself, or an independent draw."""
MAX_DENSE = 64
"""Largest ``n = T·d`` of the built-in instance: the check builds dense ``n×n`` Jacobians. A user
flow is not capped: its Jacobians are costed on its sizes and refused by the memory and time
budgets (:meth:`D1.work`; at E1's short profile, ``n = 2048``, a few minutes)."""
CHAIN_RTOL = 1e-12
"""Forward and reverse mode against the product, over the rounding scale ``√n·Π‖J_l‖₂``."""
SPREAD_TOL = 1e-13
"""Tied weights: largest ``‖J_l − J_0‖_F/‖J_0‖_F`` for the layer Jacobians to coincide."""
FIXED_POINT_RESIDUAL = 1e-14
"""Largest residual ``max|Φ(X*) − X*|`` of a constructed fixed point."""
HOMOGENEITY_TOL = 1e-13
"""Largest token spread of a fixed point with a token-homogeneous target and zero gates."""
FD_RTOL = 1e-6
"""Relative part of the finite-difference criterion ``‖product − FD‖_F ≤ 1e-6·‖product‖_F +
floor``."""
DIRECTION_STREAM = 7
"""The direction ``v`` of ``X_0 = X* + distance·v`` is drawn from the stream
``[seed mod 2³², ⌊seed / 2³²⌋, 7]`` (the seed's two 32-bit words, then 7): for the D1 figure's
check seeds ``seed + s·2³²`` this is the stream ``[seed, s, 7]`` its distance panel always used."""


# --------------------------------------------------------------------------- dense Jacobians


def basis(cfg, k: int) -> np.ndarray:
    """The ``k``-th basis state ``e_k`` (``T × d``), without building the ``n×n`` identity."""
    e = np.zeros(cfg.T * cfg.d)
    e[k] = 1.0
    return e.reshape(cfg.T, cfg.d)


def stack_jacobian_forward(model: Model, X0: np.ndarray, E) -> np.ndarray:
    """Dense ``∂X_L/∂X_0`` from :func:`stack_jvp` on basis vectors."""
    cfg, n = model.config, model.config.T * model.config.d
    cols = [stack_jvp(model, X0, basis(cfg, k), E=E)[1].ravel() for k in range(n)]
    return np.column_stack(cols)


def stack_jacobian_reverse(model: Model, X0: np.ndarray, E) -> np.ndarray:
    """Dense ``∂X_L/∂X_0`` from :func:`stack_vjp` on basis cotangents (one row each)."""
    cfg, n = model.config, model.config.T * model.config.d
    rows = [stack_vjp(model, X0, basis(cfg, k), E=E)[0].ravel() for k in range(n)]
    return np.vstack(rows)


def stack_jacobian_fd(model: Model, X0: np.ndarray, E, step: float) -> np.ndarray:
    """Dense ``∂X_L/∂X_0`` by Richardson-extrapolated central differences of :func:`numerics.model.layer.stack`
    (``E`` fixed), one basis direction per column: truncation ``O(step⁴)`` (rows of small RMS make
    the norm strongly curved)."""
    cfg, n = model.config, model.config.T * model.config.d

    def out(X):
        return stack(model, X, E)

    cols = [richardson_difference(out, X0, basis(cfg, k), step).ravel() for k in range(n)]
    return np.column_stack(cols)


def prefix_products(Js: list) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(J_{l−1}⋯J_0, J_0⋯J_{l−1})`` for every depth ``l = 1 … L``."""
    n = Js[0].shape[0]
    ordered, reversed_ = np.eye(n), np.eye(n)
    out = []
    for J in Js:
        ordered = J @ ordered
        reversed_ = reversed_ @ J
        out.append((ordered, reversed_))
    return out


def weights_tied(model: Model) -> bool:
    """Every layer's parameters (weights and gate) equal layer 0's, entry for entry."""
    first = model.layers[0].to_vector()
    return all(np.array_equal(lp.to_vector(), first) for lp in model.layers[1:])


# --------------------------------------------------------------------------- the instance


def layer_gates(p: dict, rng: np.random.Generator):
    """The tied model's one gate; untied, ``gate·(1 + gate_spread·u_l)`` per layer with ``u_l``
    uniform in ``[−1, 1]``."""
    if p["tied"]:
        return p["gate"]
    return spread_gates(p["gate"], p["gate_spread"], p["L"], rng)


def fixed_point_target(p: dict, rng: np.random.Generator) -> np.ndarray:
    """The injection target of a fixed-point trajectory: Gaussian, or token-homogeneous
    ``E = 1 eᵀ``."""
    T, d = p["T"], p["d"]
    if p["trajectory"] == "fixed_point":
        return rng.standard_normal((T, d))
    return np.repeat(rng.standard_normal((1, d)), T, axis=0)


def direction(seed: int, shape) -> np.ndarray:
    """A Gaussian direction scaled to max norm 1, from the stream :data:`DIRECTION_STREAM`."""
    rng = np.random.default_rng([seed & 0xFFFFFFFF, seed >> 32, DIRECTION_STREAM])
    v = rng.standard_normal(shape)
    v /= np.abs(v).max()
    return v


class Instance:
    """The model, ``X_0`` (random, a fixed point of the tied map, or a point at ``distance`` from
    it), the injection target ``E``, the trajectory and its layer Jacobians. From a user
    :class:`~verify.systems.DepthFlow` the model (config, untied weights, gate) is the flow's and
    ``X_0`` (and ``E``) are drawn from ``seed`` as for the built-in instance."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, e_seed, g_seed = np.random.SeedSequence(seed).spawn(4)
        if system is None:
            cfg = ModelConfig.from_params(p)
            model = init_model(
                cfg, p["L"], w_seed, tied=p["tied"], scale=p["scale"], slow_scale=p["slow_scale"]
            )
            model = model.with_gates(layer_gates(p, np.random.default_rng(g_seed)))
        else:
            model = system.model()
            cfg = model.config
            p = {**p, "T": cfg.T, "P": cfg.P, "d": cfg.d, "L": model.L, "tied": False}
        self.p, self.cfg, self.model = p, cfg, model
        X0 = np.random.default_rng(x_seed).standard_normal((cfg.T, cfg.d))
        E = X0.copy()
        self.fixed_point, self.fixed_residual = None, None
        if p["trajectory"] != "generic":
            E = fixed_point_target(p, np.random.default_rng(e_seed))
            X0, self.fixed_residual = tied_fixed_point(cfg, model.layers[0], E, E)
            self.fixed_point = X0
            if p["distance"]:
                X0 = X0 + p["distance"] * direction(seed, X0.shape)
        elif p["target"] == "random":
            E = np.random.default_rng(e_seed).standard_normal((cfg.T, cfg.d))
        self.X0, self.E = X0, E
        self.traj = stack_trajectory(model, X0, E)
        self.Js = [layer_jacobian(cfg, lp, self.traj[l], E) for l, lp in enumerate(model.layers)]


# --------------------------------------------------------------------------- hypotheses


def jacobian_spread(Js: list) -> float:
    """``max_l ‖J_l − J_0‖_F/‖J_0‖_F`` (0 when every ``J_l`` is exactly 0, ∞ when only ``J_0``
    is)."""
    return max(relative_error(J, Js[0]) for J in Js)


def fixed_point_diagnostic(inst: Instance) -> Diagnostic:
    """A constructed fixed point has a small residual and, with a token-homogeneous target and
    zero gates, is token-homogeneous; nothing to check on a random ``X_0``."""
    if inst.fixed_residual is None:
        return Diagnostic(
            True, "no fixed point constructed (X_0 drawn at random)", "applies to fixed points only"
        )
    E, Xs = inst.E, inst.fixed_point
    assert Xs is not None  # constructed together with its residual
    gates = np.array([lp.g for lp in inst.model.layers], dtype=float)
    homogeneous_case = bool(np.all(E == E[:1]) and np.all(gates == 0.0))
    token_spread = float(np.abs(Xs - Xs[:1]).max())
    ok = inst.fixed_residual <= FIXED_POINT_RESIDUAL and (
        not homogeneous_case or token_spread <= HOMOGENEITY_TOL
    )
    return Diagnostic(
        ok,
        {
            "residual": inst.fixed_residual,
            "homogeneous_target_and_zero_gates": homogeneous_case,
            "token_spread": token_spread,
        },
        f"residual ≤ {FIXED_POINT_RESIDUAL}; token spread ≤ {HOMOGENEITY_TOL} if E is "
        "token-homogeneous and every gate is 0",
    )


# --------------------------------------------------------------------------- conclusion parts


def layer_magnitude(model: Model, l: int, X: np.ndarray, E) -> float:
    """The largest intermediate of layer ``l`` at ``X``: the state, and ``h·`` each term of ``F``
    (the terms can cancel in the sum, e.g. at a fixed point, but each one is rounded)."""
    cfg, p = model.config, model.layers[l]
    terms = [
        np.abs(X).max(),
        cfg.h * np.abs(attention(cfg, p, X)).max(),
        cfg.h * np.abs(mlp(cfg, p, X)).max(),
    ]
    if cfg.slow:
        terms.append(cfg.h * abs(p.g) * np.abs(slow_path(cfg, p, X)).max())
    if cfg.gamma:
        terms.append(cfg.h * cfg.gamma * (np.abs(E).max() + np.abs(X).max()))
    return float(max(terms))


def fd_rounding_floor(model: Model, Js: list, traj: np.ndarray, E, step: float) -> float:
    """Rounding floor of the Frobenius error of the Richardson-extrapolated central difference.

    Layer ``l`` commits a rounding error of about ``ε·m_l`` per entry (``m_l`` its largest
    intermediate, :func:`layer_magnitude`, ``ε`` the machine epsilon), which reaches ``X_L``
    amplified by the suffix product ``J_{L−1}⋯J_{l+1}``; the perturbed input ``X_0 ± δe`` is itself
    rounded (``ε·max|X_0|``, amplified by the whole product). A central difference divides the
    output noise by ``δ``, Richardson's ``(4D(δ/2) − D(δ))/3`` triples it, and the Frobenius norm
    over the n² entries adds a factor ``n``. Operator norms make this an overestimate (measured
    errors sit 10–1000× below it on random instances), so no further safety factor.
    """
    n, eps = Js[0].shape[0], np.finfo(float).eps
    noise, suffix = 0.0, np.eye(n)
    for l in range(len(Js) - 1, -1, -1):
        noise += float(svdvals(suffix)[0]) * layer_magnitude(model, l, traj[l], E)
        suffix = suffix @ Js[l]
    noise += float(svdvals(suffix)[0]) * float(np.abs(traj[0]).max())
    return 3.0 * n * eps * noise / step


def product_scale(Js: list) -> float:
    """The scale of rounding errors in a product of the ``J_l``: ``√n·Π‖J_l‖₂ ≥ ‖Π J_l‖_F``."""
    n = Js[0].shape[0]
    return float(np.sqrt(n) * np.prod([svdvals(J)[0] for J in Js]))


def chain_rule_modes(inst: Instance, ordered: np.ndarray, scale: float) -> tuple[dict, float]:
    """The product against ``∂X_L/∂X_0`` by forward and by reverse mode: the relative differences,
    and the larger difference over the rounding scale ``scale``."""
    D_fwd = stack_jacobian_forward(inst.model, inst.X0, inst.E)
    D_rev = stack_jacobian_reverse(inst.model, inst.X0, inst.E)
    worst = max(float(np.linalg.norm(ordered - D_fwd)), float(np.linalg.norm(ordered - D_rev)))
    figures = {
        "chain_rule_rel_forward": relative_error(ordered, D_fwd),
        "chain_rule_rel_reverse": relative_error(ordered, D_rev),
    }
    return figures, ratio(worst, scale)


def fd_stencil_smooth(inst: Instance) -> Diagnostic:
    """σ is smooth on the finite-difference stencil of the chain-rule check: for relu, no MLP
    pre-activation changes sign at ``X_0 ± fd_step·e_k`` for any basis direction (the step used is
    ``fd_step`` or less)."""
    cfg, step = inst.cfg, inst.p["fd_step"]
    basis = np.eye(cfg.T * cfg.d).reshape(-1, cfg.T, cfg.d)
    stencil = [(inst.model, inst.X0 + s * e) for e in basis for s in (step, -step)]
    return sigma_smooth_where_differenced(
        inst.model, inst.X0, stencil, inst.E, what="the chain-rule finite differences"
    )


def chain_rule_fd(inst: Instance, ordered: np.ndarray) -> tuple[dict, Diagnostic]:
    """The product against finite differences of the stack, with the step scaled so that the
    output moves by about ``fd_step`` (a strongly expanding stack would otherwise leave the linear
    regime): the figures (relative and absolute error, rounding floor, error over the allowance
    ``FD_RTOL·‖product‖_F + floor``, the step) and the part ``error ≤ allowance``."""
    step = inst.p["fd_step"] / max(1.0, float(svdvals(ordered)[0]))
    D_fd = stack_jacobian_fd(inst.model, inst.X0, inst.E, step)
    floor = fd_rounding_floor(inst.model, inst.Js, inst.traj, inst.E, step)
    err = float(np.linalg.norm(ordered - D_fd))
    allowance = FD_RTOL * float(np.linalg.norm(ordered)) + floor
    figures = {
        "chain_rule_rel_fd": relative_error(D_fd, ordered),
        "fd_abs_error": err,
        "fd_rounding_floor": floor,
        "fd_error_over_allowance": err / allowance,
        "fd_step_used": step,
    }
    part = Diagnostic(
        err <= allowance,
        err / allowance,
        f"‖product − FD‖_F / ({FD_RTOL}·‖product‖_F + floor) ≤ 1",
    )
    return figures, part


def reversal_figures(ordered: np.ndarray, reversed_: np.ndarray, scale: float) -> dict:
    """The reversed product's difference ``r`` (relative) and over the rounding scale."""
    return {
        "reversal_rel_difference": relative_error(reversed_, ordered),
        "reversal_difference_over_product_scale": ratio(
            float(np.linalg.norm(ordered - reversed_)), scale
        ),
    }


def commutation_figures(Js: list) -> dict:
    """The layer Jacobians' spread and the first commutator ``‖J_1J_0 − J_0J_1‖_F/‖J_1J_0‖_F``."""
    return {
        "layer_jacobian_spread": jacobian_spread(Js),
        "first_commutator_rel": (
            relative_error(Js[0] @ Js[1], Js[1] @ Js[0]) if len(Js) > 1 else 0.0
        ),
    }


def order_part(p: dict, tied: bool, r: float, r_scaled: float) -> Diagnostic:
    """Untied weights: ``r ≥ order_tol``; tied weights: ``r`` and the scaled difference
    ``≤ agree_tol``."""
    if tied:
        return Diagnostic(
            max(r, r_scaled) <= p["agree_tol"],
            [r, r_scaled],
            f"tied: [relative, over √n·Π‖J_l‖₂] reversal difference ≤ {p['agree_tol']}",
        )
    return Diagnostic(
        r >= p["order_tol"], r, f"untied: relative reversal difference ≥ {p['order_tol']}"
    )


NOTES = [
    "relative differences in the Frobenius norm; J_l = dPhi_l/dX at X_l with the "
    "injection target E held constant",
    "finding: tied weights alone do not make the reversed product agree; on a moving "
    "trajectory J_l = J(X_l) differ (control tied_moving_trajectory); agreement holds "
    "where the layer Jacobians coincide, e.g. at a fixed point of the tied map",
]
"""The notes of every verdict."""


# --------------------------------------------------------------------------- the claim


class D1(Claim):
    id = "D1"
    title = "Depth-ordered product"
    abstract = "The linearised dynamics is a depth-ordered product of layer maps."
    statement = (
        "∂X_L/∂X_0 = J_{L−1}⋯J_0; with untied weights the reversed product differs (≥ 1e-2 "
        "relative); with tied weights it agrees where the layer Jacobians coincide along the "
        "trajectory, e.g. at a fixed point (finding: not on a moving trajectory, where tied "
        "weights still give J_l = J(X_l) that differ)."
    )
    params = {
        **model_params(
            T=dict(
                default=8, high=64, meaning="tokens (a multiple of P; T·d ≤ 64: dense Jacobians)"
            ),
            P=dict(default=2, high=64),
            d=None,
            L=dict(high=32),
            mask=None,
            slow_mask=None,
            norm=None,
            sigma=None,
            h=dict(low=1e-6, open_low=False),
            gamma=dict(default=1.0, meaning="injection strength γ"),
            gate=dict(default=0.5, meaning="gate (untied: gate·(1 ± gate_spread·u) per layer)"),
        ),
        **model_params(gate_spread=dict(meaning="untied: " + STANDARD["gate_spread"].meaning)),
        **model_params(scale=None, slow_scale=None, tied=None),
        "trajectory": Param(
            "generic",
            "X_0: a random state (generic), a fixed point of the tied map "
            "with a random target E (fixed_point), or with a "
            "token-homogeneous target (homogeneous_fixed_point)",
            choices=TRAJECTORIES,
        ),
        "target": Param(
            "input",
            "generic trajectory: the injection target E is X_0 (input) or an independent "
            "Gaussian draw (random); a fixed point draws its own",
            choices=TARGETS,
        ),
        "distance": Param(
            0.0,
            "fixed points: X_0 = X* + distance·v, v a random direction of max norm 1 (0: X_0 = X*)",
            low=0.0,
            high=100.0,
        ),
        "fd_step": Param(
            1e-6, "output displacement of the finite differences", low=0.0, high=1e-2, open_low=True
        ),
        "order_tol": Param(
            1e-2, "untied: least relative reversal difference", low=0.0, high=1.0, open_low=True
        ),
        "agree_tol": Param(
            1e-10,
            "tied: largest reversal difference (relative, and over √n·Π‖J_l‖₂)",
            low=0.0,
            high=1.0,
            open_low=True,
        ),
    }
    hypotheses = {
        "product_has_order": "at least two layer Jacobians, each n×n with n = T·d > 1 "
        "(a single factor, or 1×1 factors, commute)",
        "layer_jacobians_coincide_where_weights_tied": "if every layer has layer 0's parameters (measured), the layer Jacobians coincide along "
        f"the trajectory: max_l ‖J_l − J_0‖_F/‖J_0‖_F ≤ {SPREAD_TOL}",
        "fixed_point_as_constructed": f"a constructed fixed point has residual max|Φ(X*) − X*| ≤ {FIXED_POINT_RESIDUAL}, and is "
        f"token-homogeneous (≤ {HOMOGENEITY_TOL}) when E is and every gate is 0",
        "sigma_smooth_where_differenced": SIGMA_SMOOTH_RULE,
    }
    hypothesis_sources = {
        "product_has_order": "implementation",
        "layer_jacobians_coincide_where_weights_tied": "implementation",
        "fixed_point_as_constructed": "implementation",
        "sigma_smooth_where_differenced": "implementation",
    }
    conclusion = {
        "chain_rule_jvp_vjp": f"‖J_{{L−1}}⋯J_0 − ∂X_L/∂X_0‖_F (forward and reverse mode) ≤ "
        f"{CHAIN_RTOL}·√n·Π‖J_l‖₂",
        "chain_rule_fd": f"‖J_{{L−1}}⋯J_0 − FD‖_F ≤ {FD_RTOL}·‖J_{{L−1}}⋯J_0‖_F + rounding floor",
        "product_order": "untied weights: ‖ordered − reversed‖_F/‖ordered‖_F ≥ order_tol; tied weights: "
        "that ratio and ‖ordered − reversed‖_F/(√n·Π‖J_l‖₂) are ≤ agree_tol",
    }
    controls = (
        Control(
            "tied_moving_trajectory",
            {"tied": True},
            breaks="layer_jacobians_coincide_where_weights_tied",
            meaning="finding: tied weights on a generic (moving) trajectory: J_l = J(X_l) differ "
            "because X_l moves, and the reversed product differs by O(1)",
            seed=0,
        ),
        Control(
            "scalar_jacobians",
            {"T": 1, "P": 1, "d": 1},
            breaks="product_has_order",
            meaning="1×1 Jacobians commute: the order cannot matter",
            seed=0,
        ),
    )
    key_figures = ("chain_rule_rel_fd", "reversal_rel_difference", "layer_jacobian_spread")

    systems = (DepthFlow,)
    system_terms = {
        "DepthFlow": "L ≥ 2 layers and T·d > 1 (product_has_order: a single factor, or 1×1 "
        "factors, commute), dense n×n Jacobians (n = T·d) within the memory and time budgets, and sigma='tanh', 'gelu' or 'identity' "
        "(sigma_smooth_where_differenced; 'relu' only away from its kink); any mask and gate"
    }

    def sized(self, p: dict, system=None) -> dict:
        """``p`` with a user flow's own ``T``, ``P``, ``d``, ``L``: the dense Jacobians of your
        flow are costed (:meth:`work`, :meth:`memory_bytes`) and refused by the budgets on its
        sizes, not capped at the built-in instance's ``T·d ≤ 64``."""
        if isinstance(system, DepthFlow):
            return {**p, "T": int(system.T or 0), "P": system.P, "d": system.d, "L": system.L}
        return super().sized(p, system)

    def memory_bytes(self, p: dict) -> int:
        """The dense ``n×n`` matrices (``n = T·d``) held at once: ``L`` layer Jacobians, two
        prefix products per depth, the forward, reverse and finite-difference stack Jacobians,
        the suffix products of the rounding floor and a few temporaries (``3L + 8`` of them),
        beside the generic attention arrays."""
        n = int(p["T"]) * int(p["d"])
        return super().memory_bytes(p) + (3 * int(p["L"]) + 8) * 8 * n * n

    def work(self, p: dict) -> dict[str, float]:
        """Per basis direction (``n = T·d`` of them): a layer JVP per layer for the layer
        Jacobians, the forward stack JVP and the reverse VJP (about two JVPs), and four stack
        evaluations of the Richardson difference; each layer of each a ``T²(d + 24)`` attention
        unit. Dense: ``2L + 1`` SVDs and about ``3L`` products of ``n×n`` matrices."""
        T, d, L = int(p["T"]), int(p["d"]), int(p["L"])
        n = T * d
        jvps, evals = 4 * L * n, 4 * L * n
        return {
            "start": 1,
            "layer_jvp": jvps,
            "layer": evals,
            "attention": (jvps + evals) * T * T * (d + 24),
            "factor_cube": (5 * L + 1) * n**3,
        }

    def build_system(self, p, seed, system):
        """The D1 instance of your flow (its weights are untied, so only ``trajectory="generic"``
        applies: a fixed-point trajectory needs ``tied``, which your system sets)."""
        return Instance(p, seed, system)

    def validate(self, p):
        if p["T"] * p["d"] > MAX_DENSE:
            raise ValueError(
                f"parameters T={p['T']}, d={p['d']}: D1 builds dense Jacobians, T·d must "
                f"be ≤ {MAX_DENSE}, got T·d = {p['T'] * p['d']}"
            )
        if p["trajectory"] != "generic":
            if not p["tied"]:
                raise ValueError(
                    f"parameter trajectory={p['trajectory']!r} needs tied=True (untied "
                    "layers share no fixed point)"
                )
            if not p["gamma"] > 0:
                raise ValueError(
                    f"parameter trajectory={p['trajectory']!r} needs gamma > 0 (an "
                    f"injection target to pin the fixed point), got gamma={p['gamma']}"
                )
            if p["target"] != "input":
                raise ValueError(
                    f"parameter target={p['target']!r} applies to the generic trajectory only "
                    f"(a fixed point draws its own target), got trajectory={p['trajectory']!r}"
                )
        elif p["distance"]:
            raise ValueError(
                f"parameter distance={p['distance']} needs a fixed-point trajectory, got "
                "trajectory='generic'"
            )

    instance = Instance

    def diagnose(self, inst):
        Js, model = inst.Js, inst.model
        n, L = Js[0].shape[0], len(Js)
        tied = weights_tied(model)
        spread = jacobian_spread(Js)
        return {
            "product_has_order": Diagnostic(
                L >= 2 and n > 1, {"factors": L, "n": n}, "L ≥ 2 and n > 1"
            ),
            "layer_jacobians_coincide_where_weights_tied": Diagnostic(
                (not tied) or spread <= SPREAD_TOL,
                {"weights_tied": tied, "jacobian_spread": spread},
                f"weights untied, or max_l ‖J_l − J_0‖_F/‖J_0‖_F ≤ {SPREAD_TOL}",
            ),
            "fixed_point_as_constructed": fixed_point_diagnostic(inst),
            "sigma_smooth_where_differenced": fd_stencil_smooth(inst),
        }

    def conclude(self, inst):
        p, Js, traj = inst.p, inst.Js, inst.traj
        prefixes = prefix_products(Js)
        ordered, reversed_ = prefixes[-1]
        scale = product_scale(Js)
        norm_ordered = float(np.linalg.norm(ordered))
        modes, chain_scaled = chain_rule_modes(inst, ordered, scale)
        fd, fd_part = chain_rule_fd(inst, ordered)
        reversal = reversal_figures(ordered, reversed_, scale)
        tied = weights_tied(inst.model)
        figures = {
            **modes,
            **fd,
            **reversal,
            "chain_rule_difference_over_product_scale": chain_scaled,
            "cancellation_factor_kappa": ratio(scale, norm_ordered),
            **commutation_figures(Js),
            "state_motion_rel": relative_error(traj[-1], traj[0], norm="max"),
            "jacobian_product_norm": norm_ordered,
            "dense_size": Js[0].shape[0],
            "weights_tied": tied,
        }
        if inst.fixed_residual is not None:
            figures["fixed_point_residual"] = inst.fixed_residual
            figures["fixed_point_token_spread"] = float(
                np.abs(inst.fixed_point - inst.fixed_point[:1]).max()
            )
        parts = {
            "chain_rule_jvp_vjp": Diagnostic(
                chain_scaled <= CHAIN_RTOL,
                chain_scaled,
                f"max(fwd, rev) difference / (√n·Π‖J_l‖₂) ≤ {CHAIN_RTOL}",
            ),
            "chain_rule_fd": fd_part,
            "product_order": order_part(
                p,
                tied,
                reversal["reversal_rel_difference"],
                reversal["reversal_difference_over_product_scale"],
            ),
        }
        return Conclusion(
            parts,
            figures,
            tolerance={
                "chain_rule_jvp_vjp_over_product_scale": CHAIN_RTOL,
                "chain_rule_rel_fd": FD_RTOL,
                "reversal_min_rel_untied": p["order_tol"],
                "reversal_max_rel_tied": p["agree_tol"],
                "layer_jacobian_spread_tied_hypothesis": SPREAD_TOL,
            },
            notes=NOTES,
            series={
                "reversal_rel_difference_by_depth": [
                    relative_error(rev, ordr) for ordr, rev in prefixes
                ]
            },
        )


CLAIM = D1()
