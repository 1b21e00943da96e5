"""D1 — the linearised stack is a depth-ordered product of layer Jacobians.

Claim (our formalisation):

1. **Chain rule.** ``∂X_L/∂X_0 = J_{L−1} ⋯ J_0`` with ``J_l = ∂Φ_l/∂X`` evaluated at the trajectory
   point ``X_l`` (``E`` held constant). Checked with dense matrices at small sizes
   (``n = T·d ≤ 64``): ``J_l`` from :func:`numerics.model.autodiff.layer_jvp` on basis vectors, and
   ``∂X_L/∂X_0`` three ways:

   * forward mode (:func:`~numerics.model.autodiff.stack_jvp` on basis vectors) and reverse mode
     (:func:`~numerics.model.autodiff.stack_vjp` on basis cotangents): difference ≤ 1e-12 times the
     rounding scale of a product, ``√n·Π_l‖J_l‖₂`` (≥ ``‖Π J_l‖_F``). The two agree up to the
     reported cancellation factor ``κ = √n·Π‖J_l‖₂ / ‖Π J_l‖_F``; ``κ`` is ≈ 10–150 on generic
     instances but can reach 1e5 at d = 2 with the norm on (rank-deficient norm Jacobians), where
     the plain relative difference is legitimately ≈ 1e-12;
   * Richardson-extrapolated central differences of :func:`numerics.stack` with step
     ``δ = fd_step/max(1, ‖J_{L−1}⋯J_0‖₂)`` (the output moves by about ``fd_step`` whatever the
     expansion of the stack): ``‖product − FD‖_F ≤ 1e-6·‖product‖_F + floor``, where ``floor`` is
     the rounding floor of the difference quotient (each layer's rounding ``u·m_l`` of its largest
     intermediate, amplified by the suffix products ``J_{L−1}⋯J_{l+1}``, divided by ``δ``; see
     :func:`_fd_rounding_floor`). The truncation error is ``O(δ⁴)``. The default instance sits at
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
fails with ``r`` at rounding level). A failed Newton search for the fixed point raises
``RuntimeError`` (outcome ``error``).
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics.analysis.stability import layer_jacobian
from numerics.lapack import svdvals
from numerics.model.autodiff import stack_jvp, stack_vjp

from ..claim import Claim, Conclusion, Control, Diagnostic, Param

TRAJECTORIES = ("generic", "fixed_point", "homogeneous_fixed_point")
MAX_DENSE = 64
CHAIN_RTOL = 1e-12
SPREAD_TOL = 1e-13
FIXED_POINT_RESIDUAL = 1e-14
HOMOGENEITY_TOL = 1e-13
FD_RTOL = 1e-6


def stack_jacobian_forward(model: nm.Model, X0: np.ndarray, E) -> np.ndarray:
    """Dense ``∂X_L/∂X_0`` from :func:`stack_jvp` on basis vectors."""
    cfg, n = model.config, model.config.T * model.config.d
    cols = [
        stack_jvp(model, X0, np.eye(n)[k].reshape(cfg.T, cfg.d), E=E)[1].ravel() for k in range(n)
    ]
    return np.column_stack(cols)


def stack_jacobian_reverse(model: nm.Model, X0: np.ndarray, E) -> np.ndarray:
    """Dense ``∂X_L/∂X_0`` from :func:`stack_vjp` on basis cotangents (one row each)."""
    cfg, n = model.config, model.config.T * model.config.d
    rows = [
        stack_vjp(model, X0, np.eye(n)[k].reshape(cfg.T, cfg.d), E=E)[0].ravel() for k in range(n)
    ]
    return np.vstack(rows)


def stack_jacobian_fd(model: nm.Model, X0: np.ndarray, E, step: float) -> np.ndarray:
    """Dense ``∂X_L/∂X_0`` by central differences of :func:`numerics.stack` (``E`` fixed).

    Richardson-extrapolated: ``(4·D(δ/2) − D(δ))/3`` with ``D`` the central difference, so the
    truncation error is ``O(δ⁴)`` (rows of small RMS make the norm strongly curved).
    """
    return (
        4.0 * _central_difference(model, X0, E, step / 2) - _central_difference(model, X0, E, step)
    ) / 3.0


def _central_difference(model: nm.Model, X0: np.ndarray, E, step: float) -> np.ndarray:
    cfg, n = model.config, model.config.T * model.config.d
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = step
        e = e.reshape(cfg.T, cfg.d)
        cols.append(
            ((nm.stack(model, X0 + e, E) - nm.stack(model, X0 - e, E)) / (2 * step)).ravel()
        )
    return np.column_stack(cols)


def _newton(config, params, E, X, max_iter: int, damped: bool):
    try:
        return _newton_iterations(config, params, E, X, max_iter, damped)
    except (np.linalg.LinAlgError, FloatingPointError, ValueError):
        return None, float("nan")


def _newton_iterations(config, params, E, X, max_iter: int, damped: bool):
    n = X.size
    R = nm.layer(config, params, X, E) - X
    for _ in range(max_iter):
        res = float(np.abs(R).max())
        if res <= 1e-14 * max(1.0, float(np.abs(X).max())):
            return X, res
        step = np.linalg.solve(layer_jacobian(config, params, X, E) - np.eye(n), R.ravel())
        step = step.reshape(X.shape)
        merit, t = float(np.linalg.norm(R)), 1.0
        while True:  # backtracking on ‖R‖₂, for which the Newton step is a descent direction
            X_try = X - t * step
            R_try = nm.layer(config, params, X_try, E) - X_try
            if not damped or np.linalg.norm(R_try) < merit or t < 1e-8:
                break
            t /= 2
        if not np.all(np.isfinite(R_try)):
            break
        X, R = X_try, R_try
    return None, float(np.abs(R).max())


def tied_fixed_point(
    config: nm.ModelConfig,
    params: nm.LayerParams,
    E: np.ndarray,
    X_init: np.ndarray,
    *,
    max_iter: int = 40,
) -> tuple[np.ndarray, float]:
    """``X*`` with ``Φ(X*) = X*`` by Newton's method on ``R(X) = Φ(X) − X`` (dense Jacobian).

    With the norm on and ``γ > 0`` a fixed point exists: ``X = E + (Attn + MLP + g·Slow)(X)/γ`` is a
    continuous map into a bounded set (Brouwer); without the norm none need exist. Plain Newton
    from ``X_init`` first; if it fails, continuation in ``γ``: from ``64γ`` (where the fixed point is
    ``E + O(1/γ)`` and the map is a contraction) down to ``γ`` in factors of 2, damped Newton at
    each stage from the previous solution. Returns ``(X*, max|Φ(X*) − X*|)``; raises
    ``RuntimeError`` if neither converges.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        X, res = _newton(config, params, E, X_init.copy(), max_iter, damped=False)
        if X is not None:
            return X, res
        X = E.copy()
        for k in range(6, -1, -1):
            cfg_k = config.replace(gamma=config.gamma * 2.0**k)
            X, res = _newton(cfg_k, params, E, X, max_iter, damped=True)
            if X is None:
                break
        if X is not None:
            return X, res
    raise RuntimeError(
        f"Newton's method found no fixed point of the tied layer (residual {res:.2e}); "
        "increase gamma, switch the norm on or reduce the weight scale"
    )


def _layer_magnitude(model: nm.Model, l: int, X: np.ndarray, E) -> float:
    """The largest intermediate of layer ``l`` at ``X``: the state, and ``h·`` each term of ``F``
    (the terms can cancel in the sum, e.g. at a fixed point, but each one is rounded)."""
    cfg, p = model.config, model.layers[l]
    terms = [
        np.abs(X).max(),
        cfg.h * np.abs(nm.attention(cfg, p, X)).max(),
        cfg.h * np.abs(nm.mlp(cfg, p, X)).max(),
    ]
    if cfg.slow:
        terms.append(cfg.h * abs(p.g) * np.abs(nm.slow_path(cfg, p, X)).max())
    if cfg.gamma:
        terms.append(cfg.h * cfg.gamma * (np.abs(E).max() + np.abs(X).max()))
    return float(max(terms))


def _fd_rounding_floor(model: nm.Model, Js: list, traj: np.ndarray, E, step: float) -> float:
    """Rounding floor of the Frobenius error of the Richardson-extrapolated central difference.

    Layer ``l`` commits a rounding error of about ``u·m_l`` per entry (``m_l`` its largest
    intermediate, :func:`_layer_magnitude`), which reaches ``X_L`` amplified by the suffix product
    ``J_{L−1}⋯J_{l+1}``; the perturbed input ``X_0 ± δe`` is itself rounded (``u·max|X_0|``,
    amplified by the whole product). A central difference divides the output noise by ``δ``,
    Richardson's ``(4D(δ/2) − D(δ))/3`` triples it, and the Frobenius norm over the n² entries
    adds a factor ``n``. Operator norms make this an overestimate (measured errors sit 10–1000×
    below it on random instances), so no further safety factor.
    """
    n, u = Js[0].shape[0], np.finfo(float).eps
    noise, suffix = 0.0, np.eye(n)
    for l in range(len(Js) - 1, -1, -1):
        noise += float(svdvals(suffix)[0]) * _layer_magnitude(model, l, traj[l], E)
        suffix = suffix @ Js[l]
    noise += float(svdvals(suffix)[0]) * float(np.abs(traj[0]).max())
    return 3.0 * n * u * noise / step


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    diff, nb = float(np.linalg.norm(a - b)), float(np.linalg.norm(b))
    if nb == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / nb


def dense_products(Js: list) -> tuple[np.ndarray, np.ndarray]:
    """``(J_{L−1}⋯J_0, J_0⋯J_{L−1})``."""
    n = Js[0].shape[0]
    ordered, reversed_ = np.eye(n), np.eye(n)
    for J in Js:
        ordered = J @ ordered
        reversed_ = reversed_ @ J
    return ordered, reversed_


def weights_tied(model: nm.Model) -> bool:
    """Every layer's parameters (weights and gate) equal layer 0's, entry for entry."""
    first = model.layers[0].to_vector()
    return all(np.array_equal(lp.to_vector(), first) for lp in model.layers[1:])


class Instance:
    def __init__(self, p: dict, seed: int):
        w_seed, x_seed, e_seed, g_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        self.cfg = cfg = nm.ModelConfig(
            T=p["T"],
            P=p["P"],
            d=p["d"],
            mask=p["mask"],
            slow_mask=p["slow_mask"],
            norm=p["norm"],
            sigma=p["sigma"],
            h=p["h"],
            gamma=p["gamma"],
        )
        model = nm.init_model(
            cfg, p["L"], w_seed, tied=p["tied"], scale=p["scale"], slow_scale=p["slow_scale"]
        )
        if p["tied"]:
            model = model.with_gates(p["gate"])
        else:
            model = model.with_gates(
                p["gate"] * (1 + 0.5 * np.random.default_rng(g_seed).uniform(-1, 1, p["L"]))
            )
        self.model = model
        X0 = np.random.default_rng(x_seed).standard_normal((cfg.T, cfg.d))
        E = X0.copy()
        self.fixed_residual = None
        if p["trajectory"] != "generic":
            erng = np.random.default_rng(e_seed)
            if p["trajectory"] == "fixed_point":
                E = erng.standard_normal((cfg.T, cfg.d))
            else:  # a token-homogeneous injection target E = 1 eᵀ
                E = np.repeat(erng.standard_normal((1, cfg.d)), cfg.T, axis=0)
            X0, self.fixed_residual = tied_fixed_point(cfg, model.layers[0], E, E)
        self.X0, self.E = X0, E
        self.traj = nm.stack_trajectory(model, X0, E)
        self.Js = [layer_jacobian(cfg, lp, self.traj[l], E) for l, lp in enumerate(model.layers)]


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
        "T": Param(8, "tokens (a multiple of P; T·d ≤ 64: dense Jacobians)", low=1, high=64),
        "P": Param(2, "tokens per block", low=1, high=64),
        "d": Param(4, "features", low=1, high=64),
        "L": Param(4, "layers", low=1, high=32),
        "mask": Param("causal", "fast attention mask", choices=tuple(nm.NAMED_MASKS)),
        "slow_mask": Param(
            "blockcausal", "slow attention mask at block level", choices=("blockcausal", "full")
        ),
        "norm": Param(True, "RMS norm before attention and MLP"),
        "sigma": Param("tanh", "MLP nonlinearity", choices=("tanh", "identity")),
        "h": Param(0.5, "depth step", low=1e-6, high=10.0),
        "gamma": Param(1.0, "injection strength γ", low=0.0, high=100.0),
        "gate": Param(0.5, "gate (untied: gate·(1 ± 0.5·u) per layer)", low=-100.0, high=100.0),
        "scale": Param(1.0, "scale of the fast weights", low=0.0, high=100.0),
        "slow_scale": Param(1.0, "scale of the slow weights", low=0.0, high=100.0),
        "tied": Param(False, "every layer shares layer 0's weights and gate"),
        "trajectory": Param(
            "generic",
            "X_0: a random state (generic), a fixed point of the tied map "
            "with a random target E (fixed_point), or with a "
            "token-homogeneous target (homogeneous_fixed_point)",
            choices=TRAJECTORIES,
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

    def build(self, p, seed):
        return Instance(p, seed)

    def diagnose(self, inst):
        Js, model = inst.Js, inst.model
        n, L = Js[0].shape[0], len(Js)
        tied = weights_tied(model)
        spread = max(_rel(J, Js[0]) for J in Js)
        if not np.isfinite(spread):  # J_0 = 0 (possible with d = 1 and the norm on)
            spread = 0.0 if all(not J.any() for J in Js) else float("inf")
        hyps = {
            "product_has_order": Diagnostic(
                L >= 2 and n > 1, {"factors": L, "n": n}, "L ≥ 2 and n > 1"
            ),
            "layer_jacobians_coincide_where_weights_tied": Diagnostic(
                (not tied) or spread <= SPREAD_TOL,
                {"weights_tied": tied, "jacobian_spread": spread},
                f"weights untied, or max_l ‖J_l − J_0‖_F/‖J_0‖_F ≤ {SPREAD_TOL}",
            ),
        }
        if inst.fixed_residual is None:
            hyps["fixed_point_as_constructed"] = Diagnostic(
                True,
                "no fixed point constructed (X_0 drawn at random)",
                "applies to fixed points only",
            )
        else:
            E = inst.E
            gates = np.array([lp.g for lp in model.layers], dtype=float)
            homogeneous_case = bool(np.all(E == E[:1]) and np.all(gates == 0.0))
            token_spread = float(np.abs(inst.X0 - inst.X0[:1]).max())
            ok = inst.fixed_residual <= FIXED_POINT_RESIDUAL and (
                not homogeneous_case or token_spread <= HOMOGENEITY_TOL
            )
            hyps["fixed_point_as_constructed"] = Diagnostic(
                ok,
                {
                    "residual": inst.fixed_residual,
                    "homogeneous_target_and_zero_gates": homogeneous_case,
                    "token_spread": token_spread,
                },
                f"residual ≤ {FIXED_POINT_RESIDUAL}; token spread ≤ {HOMOGENEITY_TOL} if E is "
                "token-homogeneous and every gate is 0",
            )
        return hyps

    def conclude(self, inst):
        p, model, cfg, X0, E, traj, Js = (
            inst.p,
            inst.model,
            inst.cfg,
            inst.X0,
            inst.E,
            inst.traj,
            inst.Js,
        )
        n = cfg.T * cfg.d
        ordered, reversed_ = dense_products(Js)
        D_fwd = stack_jacobian_forward(model, X0, E)
        D_rev = stack_jacobian_reverse(model, X0, E)
        # FD step scaled so that the output moves by about fd_step (a strongly expanding stack would
        # otherwise leave the linear regime)
        fd_step = p["fd_step"] / max(1.0, float(svdvals(ordered)[0]))
        D_fd = stack_jacobian_fd(model, X0, E, fd_step)
        fd_floor = _fd_rounding_floor(model, Js, traj, E, fd_step)

        norm_ordered = float(np.linalg.norm(ordered))
        # the scale of rounding errors in a product of L matrices: √n·Π‖J_l‖₂ ≥ ‖Π J_l‖_F; the
        # ratio kappa = scale/‖Π J_l‖_F measures cancellation in the product (reported)
        product_scale = float(np.sqrt(n) * np.prod([svdvals(J)[0] for J in Js]))
        chain_scaled = (
            max(float(np.linalg.norm(ordered - D_fwd)), float(np.linalg.norm(ordered - D_rev)))
            / product_scale
            if product_scale > 0
            else 0.0
        )
        fd_err = float(np.linalg.norm(ordered - D_fd))
        chain_fd = fd_err / norm_ordered if norm_ordered > 0 else float(fd_err > 0) * np.inf
        fd_allowance = FD_RTOL * norm_ordered + fd_floor
        r = _rel(reversed_, ordered)
        r_scaled = (
            float(np.linalg.norm(ordered - reversed_)) / product_scale if product_scale > 0 else 0.0
        )
        spread = max(_rel(J, Js[0]) for J in Js)
        comm = (
            float(np.linalg.norm(Js[1] @ Js[0] - Js[0] @ Js[1]) / np.linalg.norm(Js[1] @ Js[0]))
            if len(Js) > 1 and np.linalg.norm(Js[1] @ Js[0]) > 0
            else 0.0
        )
        tied = weights_tied(model)
        if tied:
            order = Diagnostic(
                max(r, r_scaled) <= p["agree_tol"],
                [r, r_scaled],
                f"tied: [relative, over √n·Π‖J_l‖₂] reversal difference ≤ {p['agree_tol']}",
            )
        else:
            order = Diagnostic(
                r >= p["order_tol"], r, f"untied: relative reversal difference ≥ {p['order_tol']}"
            )
        figures = {
            "chain_rule_rel_forward": _rel(ordered, D_fwd),
            "chain_rule_rel_reverse": _rel(ordered, D_rev),
            "chain_rule_rel_fd": chain_fd,
            "fd_abs_error": fd_err,
            "fd_rounding_floor": fd_floor,
            "fd_error_over_allowance": fd_err / fd_allowance,
            "fd_step_used": fd_step,
            "reversal_rel_difference": r,
            "reversal_difference_over_product_scale": r_scaled,
            "chain_rule_difference_over_product_scale": chain_scaled,
            "cancellation_factor_kappa": product_scale / norm_ordered
            if norm_ordered > 0
            else float("inf"),
            "layer_jacobian_spread": spread,
            "first_commutator_rel": comm,
            "state_motion_rel": float(np.abs(traj[-1] - traj[0]).max() / np.abs(traj[0]).max()),
            "jacobian_product_norm": norm_ordered,
            "dense_size": n,
            "weights_tied": tied,
        }
        if inst.fixed_residual is not None:
            figures["fixed_point_residual"] = inst.fixed_residual
            figures["fixed_point_token_spread"] = float(np.abs(X0 - X0[:1]).max())
        parts = {
            "chain_rule_jvp_vjp": Diagnostic(
                chain_scaled <= CHAIN_RTOL,
                chain_scaled,
                f"max(fwd, rev) difference / (√n·Π‖J_l‖₂) ≤ {CHAIN_RTOL}",
            ),
            "chain_rule_fd": Diagnostic(
                fd_err <= fd_allowance,
                fd_err / fd_allowance,
                f"‖product − FD‖_F / ({FD_RTOL}·‖product‖_F + floor) ≤ 1",
            ),
            "product_order": order,
        }
        notes = [
            "relative differences in the Frobenius norm; J_l = dPhi_l/dX at X_l with the "
            "injection target E held constant",
            "finding: tied weights alone do not make the reversed product agree; on a moving "
            "trajectory J_l = J(X_l) differ (control tied_moving_trajectory); agreement holds "
            "where the layer Jacobians coincide, e.g. at a fixed point of the tied map",
        ]
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
            notes=notes,
        )


CLAIM = D1()
