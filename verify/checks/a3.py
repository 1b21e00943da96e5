"""A3 — the zero-initialised gate.

Claim: with every gate ``g_l = 0`` the coupled model (``slow=True``) returns the same output as
the fast-only model (``slow=False``, same fast weights) bit for bit, whatever the slow-path weights;
the gradient of any loss with respect to every slow-path weight ``Qs_l, Ks_l, Vs_l`` is exactly
zero; and the gate gradient is ``∂L/∂g_l = h·⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩``.

Loss: ``L(X_L) = ⟨C, X_L⟩ + (quad/2)·‖X_L‖²`` with ``C`` a fixed Gaussian T×d matrix (a generic
linear functional plus a quadratic, so ``∂L/∂X_L = C + quad·X_L`` depends on the output and the
reverse sweep is not a constant). Any smooth loss behaves the same way: only ``∂L/∂X_L`` enters.

Checked by:

* forward: ``stack`` of the coupled and of the fast-only model compared with ``np.array_equal``
  (tolerance 0; the byte-level comparison is reported too: it can differ only by the sign of an
  exact zero). Slow weights are drawn with standard deviation ``slow_scale/√d`` (default 1e3:
  "any slow weights" includes very large ones). A random perturbation of every slow weight of
  size ``slow_scale`` must leave the loss unchanged bit for bit as well;
* reverse: :func:`numerics.model.autodiff.stack_vjp`; every entry of every slow-weight gradient must be
  ``== 0.0`` (tolerance 0). At ``g = 0`` the slow path's reverse sweep starts from ``g·h·G = 0``
  and stays exactly zero;
* the gate identity: ``∂L/∂X_{l+1}`` from the reverse sweep of the tail model (layers ``l+1 …``)
  started at ``X_{l+1}``, ``Slow_l(X_l)`` from the public forward :func:`numerics.model.layer.slow_path`,
  against the gate entry of the full reverse sweep (tolerance 0 by construction of the same
  arithmetic; reported as a relative difference);
* the gate gradient against a Richardson-extrapolated central difference in ``g_l``,
  ``(4·D(δ_l/2) − D(δ_l))/3``, with step ``δ_l = fd_step / max(1, max|Slow_l(X_l)|)`` (the
  perturbation ``δ_l·Slow_l`` has size ``fd_step`` whatever ``slow_scale``). Criterion
  ``|fd − an| ≤ 1e-6·|an| + floor``: the truncation error is ``O(fd_step⁴)``, and ``floor`` is
  the rounding error of the loss over the step (``ε·(Σ|C⊙X_L| + quad·Σ X_L² + Σ|G|·L·max|X_l|)``
  with ``ε`` the machine epsilon, tripled by the extrapolation, ×10 for propagation through the
  layers). The floor matters only when ``|∂L/∂g_l|`` is tiny compared with the loss (e.g. d = 1
  with the norm on, where the normalised slow input is ±1): the measured relative error is
  ≈ 4e-10 on the default instance.

Hypothesis, measured on the model: every layer's gate is exactly ``0.0``. Besides the exact zeros,
the verdict requires that the check is not vacuous: the reverse sweep reaches the fast weights
(some fast-weight gradient is non-zero, while every slow-weight gradient is exactly zero) and every
gate gradient is non-zero (the gate is trainable from ``g = 0``).

Limit of the check (``undecided``, never ``fails``): the finite difference must resolve every gate
gradient, ``|∂L/∂g_l|`` above ``RESOLVED`` times the rounding floor of its own finite-difference
check, or the agreement with it is an agreement of two roundings (e.g. T = 6, P = 3, d = 1,
L = 3, no norm, gelu, γ = 0, slow_scale = 0.1: 3.6 times the floor). Where the finite difference
contradicts the gradient beyond its floor the comparison has decided and the limit holds (a wrong
gradient still fails). The rule is scale-free: a fixed absolute threshold would refuse tiny
instances (N = 2, P = 1, d = 1, slow_scale = 0.1 gives ``|∂L/∂g| = 2.8e-4``) whose gradient is
perfectly well defined.

Negative control: a non-zero gate (``gate ≠ 0``, a different value per layer of magnitude ≈ gate).
The output then differs from the fast-only model's and the slow-weight gradients are non-zero,
while the gate identity and the finite difference (which hold for every g) still agree: the
control's verdict shows those two parts holding. A non-zero gate is ``gate·(1 + gate_spread·u_l)``
in layer ``l`` (``u_l`` uniform in ``[−1, 1]``); ``gate_spread = 0`` gives one common gate, the
instance of the A3 figure (output difference and slow-gradient norm, carried in the verdict's
``series``, against the gate).
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.autodiff import stack_vjp
from fastslow.numerics.model.layer import slow_path, stack, stack_trajectory
from fastslow.numerics.model.weights import (
    FAST_WEIGHTS,
    SLOW_WEIGHTS,
    Model,
    ModelConfig,
    init_model,
    spread_gates,
)

from ..claim import Claim, Conclusion, Control
from ..diagnostics import SIGMA_SMOOTH_RULE, sigma_smooth_where_differenced
from ..measure import elementwise_relative_error, relative_error, richardson_difference
from ..model_params import model_params
from ..params import Param
from ..systems import DepthFlow
from ..verdict import Diagnostic

FD_RTOL = 1e-6
"""Relative part of the finite-difference criterion ``|fd − an| ≤ 1e-6·|an| + floor``."""
IDENTITY_RTOL = 1e-13
"""The gate identity: the largest gate-gradient difference relative to the largest gate gradient."""
RESOLVED = 10.0
"""Non-vacuity: every gate gradient is at least this many times its finite difference's rounding
floor."""
FD_FLOOR_FACTOR = 30.0
"""The finite difference's rounding floor is ``30·noise/δ_l``: the loss noise divided by the step,
tripled by the extrapolation and ×10 for the unmodelled propagation through the layers."""


# --------------------------------------------------------------------------- the instance


def loss_and_cotangent(X_L: np.ndarray, C: np.ndarray, quad: float):
    """``L = ⟨C, X_L⟩ + (quad/2)‖X_L‖²`` and ``∂L/∂X_L = C + quad·X_L``."""
    return float(np.vdot(C, X_L) + 0.5 * quad * np.vdot(X_L, X_L)), C + quad * X_L


def layer_gates(p: dict, rng: np.random.Generator) -> np.ndarray:
    """Every gate exactly 0 when ``gate = 0``; else ``gate·(1 + gate_spread·u_l)`` per layer with
    ``u_l`` uniform in ``[−1, 1]`` (``gate_spread = 0``: one common gate)."""
    if p["gate"] == 0:
        return np.zeros(p["L"])
    return spread_gates(p["gate"], p["gate_spread"], p["L"], rng)


class Instance:
    """The coupled model with its gates, the fast-only model on the same layers, the input
    ``X0`` (and ``E = X0`` when ``γ > 0``), the loss matrix ``C`` and the stream of the slow-weight
    moves. From a user :class:`~verify.systems.DepthFlow` the config, weights and gates are the
    flow's (its ``gate`` in every layer, so the claim's hypothesis is decided on it); the input, the
    loss matrix and the slow-weight moves are drawn from ``seed`` as for the built-in instance."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, c_seed, g_seed, s_seed = np.random.SeedSequence(seed).spawn(5)
        if system is None:
            cfg = ModelConfig.from_params(p, slow=True)
            model = init_model(cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"])
            self.gates = layer_gates(p, np.random.default_rng(g_seed))
        else:
            model = system.model()
            cfg = model.config
            p = {**p, "L": model.L, "slow_scale": system.slow_scale}
            self.gates = np.array([lp.g for lp in model.layers], dtype=float)
        self.p, self.cfg = p, cfg
        self.model = model.with_gates(self.gates)
        self.fast = Model(cfg.replace(slow=False), self.model.layers)
        self.X0 = np.random.default_rng(x_seed).standard_normal((cfg.T, cfg.d))
        self.E = self.X0.copy() if cfg.gamma else None
        self.C = np.random.default_rng(c_seed).standard_normal((cfg.T, cfg.d))
        self.slow_rng = np.random.default_rng(s_seed)

    def loss(self, model: Model) -> float:
        """The loss of ``model``'s output on the instance's input."""
        return loss_and_cotangent(stack(model, self.X0, self.E), self.C, self.p["quad"])[0]


# --------------------------------------------------------------------------- conclusion parts


def slow_weights_moved(inst: Instance) -> Model:
    """The model with every slow weight moved by a Gaussian matrix of standard deviation
    ``slow_scale`` (the gates unchanged)."""
    cfg, scale = inst.cfg, inst.p["slow_scale"]
    moved = []
    for lp in inst.model.layers:
        q = lp.copy()
        for name in SLOW_WEIGHTS:
            setattr(
                q, name, getattr(q, name) + scale * inst.slow_rng.standard_normal((cfg.d, cfg.d))
            )
        moved.append(q)
    return Model(cfg, moved)


def gradients(inst: Instance, G_L: np.ndarray) -> dict:
    """The reverse sweep from ``∂L/∂X_L = G_L``: every slow-weight and fast-weight gradient entry
    (flattened, layer by layer) and the gate gradients."""
    _, grads = stack_vjp(inst.model, inst.X0, G_L, E=inst.E)
    return {
        "slow": np.concatenate([getattr(gr, n).ravel() for gr in grads for n in SLOW_WEIGHTS]),
        "fast": np.concatenate([getattr(gr, n).ravel() for gr in grads for n in FAST_WEIGHTS]),
        "gate": np.array([gr.g for gr in grads]),
    }


def gate_gradient_identity(model: Model, traj: np.ndarray, G_L: np.ndarray, E) -> np.ndarray:
    """``h·⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩`` for every layer, from tail reverse sweeps."""
    cfg, L = model.config, model.L
    out = np.empty(L)
    for l in range(L):
        if l + 1 < L:
            tail = Model(cfg, model.layers[l + 1 :])
            G_next, _ = stack_vjp(tail, traj[l + 1], G_L, E=E)
        else:
            G_next = G_L
        out[l] = cfg.h * float(np.vdot(G_next, slow_path(cfg, model.layers[l], traj[l])))
    return out


def gate_fd_steps(inst: Instance, traj: np.ndarray) -> np.ndarray:
    """The step of each gate's finite difference, ``δ_l = fd_step / max(1, max|Slow_l(X_l)|)``:
    the perturbation ``δ_l·Slow_l`` has size ``fd_step`` whatever ``slow_scale``."""
    cfg, layers = inst.cfg, inst.model.layers
    return np.array(
        [
            inst.p["fd_step"] / max(1.0, float(np.abs(slow_path(cfg, layers[l], traj[l])).max()))
            for l in range(inst.p["L"])
        ]
    )


def gate_gradient_fd(inst: Instance, traj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Richardson-extrapolated central differences of the loss in each gate ``g_l`` with the steps
    of :func:`gate_fd_steps`; returns the differences and the steps."""
    L = inst.p["L"]
    steps = gate_fd_steps(inst, traj)

    def loss_at(gates):
        return inst.loss(inst.model.with_gates(gates))

    fd = np.array(
        [
            float(richardson_difference(loss_at, inst.gates, np.eye(L)[l], steps[l]))
            for l in range(L)
        ]
    )
    return fd, steps


def gate_stencil_smooth(inst: Instance) -> Diagnostic:
    """σ is smooth on the gate finite differences' stencil: for relu, no MLP pre-activation
    changes sign when gate ``g_l`` moves by ``±δ_l`` (:func:`gate_fd_steps`)."""
    L = inst.p["L"]
    steps = gate_fd_steps(inst, stack_trajectory(inst.model, inst.X0, inst.E))
    stencil = [
        (inst.model.with_gates(inst.gates + s * steps[l] * np.eye(L)[l]), inst.X0)
        for l in range(L)
        for s in (1.0, -1.0)
    ]
    return sigma_smooth_where_differenced(
        inst.model, inst.X0, stencil, inst.E, what="the gate-gradient finite differences"
    )


def fd_rounding_floor(inst: Instance, traj: np.ndarray, G_L: np.ndarray, steps) -> np.ndarray:
    """The rounding floor of each gate's finite difference: the loss carries an error of about
    ``ε·(Σ|C⊙X_L| + quad·Σ X_L² + Σ|G|·L·max_l |X_l|)`` (``ε`` the machine epsilon; each layer
    rounds once), divided by the step and scaled by :data:`FD_FLOOR_FACTOR`."""
    out, eps = traj[-1], np.finfo(float).eps
    loss_noise = eps * (
        np.abs(inst.C * out).sum()
        + inst.p["quad"] * (out * out).sum()
        + np.abs(G_L).sum() * inst.p["L"] * float(np.abs(traj).max())
    )
    return FD_FLOOR_FACTOR * loss_noise / steps


def measure_gate(inst: Instance) -> dict:
    """Forward, reverse sweep and gate gradient on the instance: the coupled and fast-only outputs,
    the loss before and after moving every slow weight, the gradients, the gate identity and the
    gate gradient's finite differences with their rounding floors."""
    p, model, X0, E = inst.p, inst.model, inst.X0, inst.E
    traj = stack_trajectory(model, X0, E)
    out = traj[-1]
    loss, G_L = loss_and_cotangent(out, inst.C, p["quad"])
    grads = gradients(inst, G_L)
    fd, steps = gate_gradient_fd(inst, traj)
    return {
        "out": out,
        "out_fast": stack(inst.fast, X0, E),
        "loss": loss,
        "loss_moved": inst.loss(slow_weights_moved(inst)),
        "grads": grads,
        "identity": gate_gradient_identity(model, traj, G_L, E),
        "fd": fd,
        "steps": steps,
        "fd_floor": fd_rounding_floor(inst, traj, G_L, steps),
    }


def gate_figures(inst: Instance, m: dict) -> dict:
    """The measured numbers of :func:`measure_gate`: output differences, loss change, gradient
    sizes, the gate identity's relative difference and the finite difference's errors."""
    out, out_fast, grads = m["out"], m["out_fast"], m["grads"]
    dg, fd, fd_floor = grads["gate"], m["fd"], m["fd_floor"]
    return {
        "gates": inst.gates.tolist(),
        "output_bytes_equal_to_fast_only": bool(out.tobytes() == out_fast.tobytes()),
        "max_abs_output_difference": float(np.abs(out - out_fast).max()),
        "relative_output_difference": relative_error(out, out_fast, norm="max"),
        "loss": m["loss"],
        "loss_change_when_every_slow_weight_moves": float(m["loss_moved"] - m["loss"]),
        "max_abs_slow_weight_gradient": float(np.abs(grads["slow"]).max()),
        "nonzero_slow_weight_gradient_entries": int(np.count_nonzero(grads["slow"])),
        "slow_weight_gradient_entries": int(grads["slow"].size),
        "max_abs_fast_weight_gradient": float(np.abs(grads["fast"]).max()),
        "gate_gradients": dg.tolist(),
        "gate_identity_max_relative_difference": relative_error(m["identity"], dg, norm="max"),
        "gate_gradient_fd": fd.tolist(),
        "gate_gradient_fd_steps": m["steps"].tolist(),
        "gate_gradient_fd_max_relative_error": float(elementwise_relative_error(fd, dg).max()),
        "gate_gradient_fd_rounding_floor": fd_floor.tolist(),
        "gate_gradient_fd_error_over_allowance": float(
            (np.abs(fd - dg) / (FD_RTOL * np.abs(dg) + fd_floor)).max()
        ),
    }


def gate_parts(m: dict, f: dict) -> dict:
    """The conclusion's parts from the measurements ``m`` and the figures ``f``."""
    equal = bool(np.array_equal(m["out"], m["out_fast"]))
    nonzero_slow = f["nonzero_slow_weight_gradient_entries"]
    ident_rel = f["gate_identity_max_relative_difference"]
    fd_over = f["gate_gradient_fd_error_over_allowance"]
    max_fast = f["max_abs_fast_weight_gradient"]
    return {
        "output_equal_to_fast_only": Diagnostic(
            equal, f["max_abs_output_difference"], "np.array_equal(X_L, X_L fast-only)"
        ),
        "loss_blind_to_slow_weights": Diagnostic(
            m["loss_moved"] == m["loss"],
            f["loss_change_when_every_slow_weight_moves"],
            "loss change = 0.0 (bitwise)",
        ),
        "slow_weight_gradients_zero": Diagnostic(
            nonzero_slow == 0, nonzero_slow, "number of non-zero slow-weight gradient entries = 0"
        ),
        "gate_gradient_identity": Diagnostic(
            ident_rel <= IDENTITY_RTOL, ident_rel, f"max relative difference ≤ {IDENTITY_RTOL}"
        ),
        "gate_gradient_matches_fd": Diagnostic(
            fd_over <= 1.0, fd_over, "max_l |fd − an| / (1e-6·|an| + floor) ≤ 1"
        ),
        "reverse_sweep_not_vacuous": Diagnostic(
            max_fast > 0.0, max_fast, "max |fast-weight gradient| > 0"
        ),
        "gate_trainable_from_zero": Diagnostic(
            bool(np.all(m["grads"]["gate"] != 0.0)),
            float(np.abs(m["grads"]["gate"]).min()),
            "min_l |∂L/∂g_l| > 0 (reverse sweep)",
        ),
    }


def resolution_limit(m: dict, f: dict) -> Diagnostic:
    """Limit: the finite difference resolves every gate gradient (``|∂L/∂g_l|`` more than
    :data:`RESOLVED` times its rounding floor), or it already contradicts the gradient beyond that
    floor (then the comparison has decided). Otherwise an agreement within the floor is an
    agreement of two roundings, and the check cannot decide the gradient."""
    resolved = float((np.abs(m["grads"]["gate"]) / m["fd_floor"]).min())
    fd_over = f["gate_gradient_fd_error_over_allowance"]
    return Diagnostic(
        resolved > RESOLVED or fd_over > 1.0,
        {"min_gradient_over_fd_floor": resolved, "fd_error_over_allowance": fd_over},
        f"min_l |∂L/∂g_l| / FD rounding floor > {RESOLVED:g}, or the finite difference "
        "contradicts the gradient beyond its floor",
    )


# --------------------------------------------------------------------------- the claim


class A3(Claim):
    id = "A3"
    title = "Zero-initialised gate"
    abstract = "fed back into the fast path through a zero-initialised gate"
    statement = (
        "With g = 0 the coupled output equals the fast-only output bit for bit, every "
        "slow-weight gradient is exactly 0, and ∂L/∂g_l = h⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩."
    )
    params = {
        **model_params(
            T=16,
            P=None,
            d=dict(high=32),
            L=dict(default=3, high=32),
            mask=None,
            slow_mask=None,
            norm=None,
            sigma=None,
            h=dict(low=1e-6, open_low=False),
            gamma=dict(meaning="injection strength γ (E = X_0)"),
            gate=dict(
                meaning="gate magnitude (0: every gate exactly 0; else gate·(1 ± gate_spread·u) per layer)"
            ),
        ),
        **model_params(gate_spread=None),
        **model_params(
            scale=None,
            slow_scale=dict(
                default=1000.0,
                meaning="scale of the slow weights ('any slow weights': large by default)",
                high=1e6,
            ),
        ),
        "quad": Param(0.5, "weight of the quadratic term of the loss", low=0.0, high=100.0),
        "fd_step": Param(
            1e-5,
            "finite-difference step for the gate gradient (before scaling by max|Slow_l|)",
            low=0.0,
            high=1e-2,
            open_low=True,
        ),
    }
    hypotheses = {
        "gates_zero": "every layer's gate g_l of the model is exactly 0.0",
        "sigma_smooth_where_differenced": SIGMA_SMOOTH_RULE,
    }
    hypothesis_sources = {
        "gates_zero": "input",
        "sigma_smooth_where_differenced": "implementation",
    }
    conclusion = {
        "output_equal_to_fast_only": "X_L of the coupled model == X_L of the fast-only model (bitwise)",
        "loss_blind_to_slow_weights": "moving every slow weight by O(slow_scale) leaves the loss unchanged (bitwise)",
        "slow_weight_gradients_zero": "every entry of ∂L/∂(Qs, Ks, Vs) is exactly 0.0",
        "gate_gradient_identity": "∂L/∂g_l (reverse sweep) = h⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩ to 1e-13 relative",
        "gate_gradient_matches_fd": "|fd − ∂L/∂g_l| ≤ 1e-6·|∂L/∂g_l| + rounding floor, every layer",
        "reverse_sweep_not_vacuous": "some fast-weight gradient is non-zero",
        "gate_trainable_from_zero": "every gate gradient ∂L/∂g_l (reverse sweep) is non-zero",
    }
    limits = {
        "finite_difference_resolves_gate_gradient": f"min_l |∂L/∂g_l| / (FD rounding floor_l) > "
        f"{RESOLVED:g} (or the finite difference contradicts the gradient beyond its floor)",
    }
    limit_governs = {"finite_difference_resolves_gate_gradient": ("gate_gradient_matches_fd",)}
    controls = (
        Control(
            "nonzero_gate",
            {"gate": 0.5},
            breaks="gates_zero",
            meaning="gates ≈ 0.5 reveal the slow path: the output differs from the fast-only "
            "model and the slow weights receive gradient (the gate identity and its "
            "finite difference still hold: they hold for every g)",
            seed=11,
        ),
    )
    key_figures = (
        "max_abs_output_difference",
        "max_abs_slow_weight_gradient",
        "gate_gradient_fd_max_relative_error",
    )

    instance = Instance
    systems = (DepthFlow,)
    system_terms = {
        "DepthFlow": "gate=0.0, the default (gates_zero), and a nonlinearity smooth where the "
        "finite-difference oracle differences it: sigma='tanh', 'gelu' or 'identity' "
        "(sigma='relu' only while no MLP pre-activation sits at or crosses its kink: "
        "sigma_smooth_where_differenced)"
    }

    def build_system(self, p, seed, system):
        """The A3 instance of your flow: its model (mask, sizes, σ, norm, γ, gate, scales, seed)
        with the input and loss drawn from the check's ``seed``."""
        return Instance(p, seed, system)

    def diagnose(self, inst):
        g = np.asarray(inst.gates, dtype=float)  # the input: drawn, or the user flow's
        built = np.array([lp.g for lp in inst.model.layers], dtype=float)
        if not np.array_equal(built, g):  # the second measurement, through the implementation
            raise RuntimeError(
                f"the model's gates {built.tolist()} are not the instance's {g.tolist()}"
            )
        nonzero = int(np.count_nonzero(g))
        return {
            "gates_zero": Diagnostic(
                nonzero == 0,
                {"nonzero_gates": nonzero, "max_abs_gate": float(np.abs(g).max())},
                "number of layers with g_l ≠ 0.0; 0 required",
            ),
            "sigma_smooth_where_differenced": gate_stencil_smooth(inst),
        }

    def conclude(self, inst):
        m = measure_gate(inst)
        figures = gate_figures(inst, m)
        return Conclusion(
            gate_parts(m, figures),
            figures,
            limits={"finite_difference_resolves_gate_gradient": resolution_limit(m, figures)},
            tolerance={
                "output_difference_abs": 0.0,
                "slow_weight_gradient_abs": 0.0,
                "gate_identity_rel": IDENTITY_RTOL,
                "gate_gradient_fd_rel": FD_RTOL,
                "gate_gradient_fd": "|fd − an| ≤ 1e-6·|an| + rounding floor",
                "gate_gradient_resolved_over_rounding_floor": RESOLVED,
            },
            notes=[
                "loss L = <C, X_L> + (quad/2)|X_L|^2 with C Gaussian; gradients by the analytic "
                "reverse sweep numerics.model.autodiff.stack_vjp",
                "gate identity: dL/dg_l from the full sweep vs h<dL/dX_{l+1}, Slow_l(X_l)> from the "
                "tail sweep and the public slow_path; it and its finite difference hold for every g",
            ],
            series={
                "slow_weight_gradient_norm": float(np.linalg.norm(m["grads"]["slow"])),
            },
        )


CLAIM = A3()
