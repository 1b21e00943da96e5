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
  started at ``X_{l+1}``, ``Slow_l(X_l)`` from the public forward :func:`numerics.slow_path`,
  against the gate entry of the full reverse sweep (tolerance 0 by construction of the same
  arithmetic; reported as a relative difference);
* the gate gradient against a Richardson-extrapolated central difference in ``g_l``,
  ``(4·D(δ_l/2) − D(δ_l))/3``, with step ``δ_l = fd_step / max(1, max|Slow_l(X_l)|)`` (the
  perturbation ``δ_l·Slow_l`` has size ``fd_step`` whatever ``slow_scale``). Criterion
  ``|fd − an| ≤ 1e-6·|an| + floor``: the truncation error is ``O(fd_step⁴)``, and ``floor`` is
  the rounding error of the loss over the step (``u·(Σ|C⊙X_L| + quad·Σ X_L² + Σ|G|·L·max|X_l|)``,
  tripled by the extrapolation, ×10 for propagation through the layers). The floor matters only
  when ``|∂L/∂g_l|`` is tiny compared with the loss (e.g. d = 1 with the norm on, where the
  normalised slow input is ±1): the measured relative error is ≈ 4e-10 on the default instance.

Hypothesis, measured on the model: every layer's gate is exactly ``0.0``. Besides the exact zeros,
the verdict requires that the check is not vacuous: the reverse sweep reaches the fast weights
(some fast-weight gradient is non-zero, while every slow-weight gradient is exactly zero) and every
gate gradient is resolved: ``|∂L/∂g_l|`` exceeds ``RESOLVED`` times the rounding floor of its own
finite-difference check (the gate is trainable from ``g = 0``, and the agreement with the finite
difference is not an agreement of two roundings). Both rules are scale-free: a fixed absolute
threshold would fail tiny instances (N = 2, P = 1, d = 1, slow_scale = 0.1 gives
``|∂L/∂g| = 2.8e-4``) whose gradient is perfectly well defined.

Negative control: a non-zero gate (``gate ≠ 0``, a different value per layer of magnitude ≈ gate).
The output then differs from the fast-only model's and the slow-weight gradients are non-zero,
while the gate identity and the finite difference (which hold for every g) still agree: the
control's verdict shows those two parts holding.
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics.model.autodiff import stack_vjp

from ..claim import Claim, Conclusion, Control, Diagnostic, Param

FD_RTOL = 1e-6
IDENTITY_RTOL = 1e-13
RESOLVED = 10.0
"""Non-vacuity: every gate gradient is at least this many times its finite difference's rounding
floor."""


def loss_and_cotangent(X_L: np.ndarray, C: np.ndarray, quad: float):
    """``L = ⟨C, X_L⟩ + (quad/2)‖X_L‖²`` and ``∂L/∂X_L = C + quad·X_L``."""
    return float(np.vdot(C, X_L) + 0.5 * quad * np.vdot(X_L, X_L)), C + quad * X_L


def gate_gradient_identity(model: nm.Model, traj: np.ndarray, G_L: np.ndarray, E) -> np.ndarray:
    """``h·⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩`` for every layer, from tail reverse sweeps."""
    cfg, L = model.config, model.L
    out = np.empty(L)
    for l in range(L):
        if l + 1 < L:
            tail = nm.Model(cfg, model.layers[l + 1 :])
            G_next, _ = stack_vjp(tail, traj[l + 1], G_L, E=E)
        else:
            G_next = G_L
        out[l] = cfg.h * float(np.vdot(G_next, nm.slow_path(cfg, model.layers[l], traj[l])))
    return out


class Instance:
    def __init__(self, p: dict, seed: int):
        w_seed, x_seed, c_seed, g_seed, s_seed = np.random.SeedSequence(seed).spawn(5)
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
            slow=True,
        )
        model = nm.init_model(cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"])
        if p["gate"] == 0:
            gates = np.zeros(p["L"])
        else:  # a different gate per layer, of magnitude ≈ gate
            gates = p["gate"] * (1.0 + 0.5 * np.random.default_rng(g_seed).uniform(-1, 1, p["L"]))
        self.gates = gates
        self.model = model.with_gates(gates)
        self.fast = nm.Model(cfg.replace(slow=False), self.model.layers)
        self.X0 = np.random.default_rng(x_seed).standard_normal((cfg.T, cfg.d))
        self.E = self.X0.copy() if cfg.gamma else None
        self.C = np.random.default_rng(c_seed).standard_normal((cfg.T, cfg.d))
        self.slow_rng = np.random.default_rng(s_seed)


class A3(Claim):
    id = "A3"
    title = "Zero-initialised gate"
    abstract = "fed back into the fast path through a zero-initialised gate"
    statement = (
        "With g = 0 the coupled output equals the fast-only output bit for bit, every "
        "slow-weight gradient is exactly 0, and ∂L/∂g_l = h⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩."
    )
    params = {
        "T": Param(16, "tokens (a multiple of P)", low=1, high=256),
        "P": Param(4, "tokens per block", low=1, high=256),
        "d": Param(4, "features", low=1, high=32),
        "L": Param(3, "layers", low=1, high=32),
        "mask": Param("causal", "fast attention mask", choices=tuple(nm.NAMED_MASKS)),
        "slow_mask": Param(
            "blockcausal", "slow attention mask at block level", choices=("blockcausal", "full")
        ),
        "norm": Param(True, "RMS norm before attention and MLP"),
        "sigma": Param("tanh", "MLP nonlinearity", choices=("tanh", "identity")),
        "h": Param(0.5, "depth step", low=1e-6, high=10.0),
        "gamma": Param(0.0, "injection strength γ (E = X_0)", low=0.0, high=100.0),
        "gate": Param(
            0.0,
            "gate magnitude (0: every gate exactly 0; else gate·(1 ± 0.5·u) per layer)",
            low=-100.0,
            high=100.0,
        ),
        "scale": Param(1.0, "scale of the fast weights", low=0.0, high=100.0),
        "slow_scale": Param(
            1000.0,
            "scale of the slow weights ('any slow weights': large by default)",
            low=0.0,
            high=1e6,
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
    }
    conclusion = {
        "output_equal_to_fast_only": "X_L of the coupled model == X_L of the fast-only model (bitwise)",
        "loss_blind_to_slow_weights": "moving every slow weight by O(slow_scale) leaves the loss unchanged (bitwise)",
        "slow_weight_gradients_zero": "every entry of ∂L/∂(Qs, Ks, Vs) is exactly 0.0",
        "gate_gradient_identity": "∂L/∂g_l (reverse sweep) = h⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩ to 1e-13 relative",
        "gate_gradient_matches_fd": "|fd − ∂L/∂g_l| ≤ 1e-6·|∂L/∂g_l| + rounding floor, every layer",
        "reverse_sweep_not_vacuous": "some fast-weight gradient is non-zero",
        "gate_trainable_from_zero": f"min_l |∂L/∂g_l| / (FD rounding floor_l) > {RESOLVED:g}",
    }
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

    def build(self, p, seed):
        return Instance(p, seed)

    def diagnose(self, inst):
        g = np.array([lp.g for lp in inst.model.layers], dtype=float)
        nonzero = int(np.count_nonzero(g))
        return {
            "gates_zero": Diagnostic(
                nonzero == 0,
                {"nonzero_gates": nonzero, "max_abs_gate": float(np.abs(g).max())},
                "number of layers with g_l ≠ 0.0; 0 required",
            )
        }

    def conclude(self, inst):
        p, cfg, model, X0, E, C = inst.p, inst.cfg, inst.model, inst.X0, inst.E, inst.C
        L = p["L"]
        # forward: coupled vs fast-only, and a perturbation of every slow weight
        traj = nm.stack_trajectory(model, X0, E)
        out, out_fast = traj[-1], nm.stack(inst.fast, X0, E)
        equal = bool(np.array_equal(out, out_fast))
        loss, G_L = loss_and_cotangent(out, C, p["quad"])
        moved = []
        for lp in model.layers:
            q = lp.copy()
            for name in nm.SLOW_WEIGHTS:
                setattr(
                    q,
                    name,
                    getattr(q, name)
                    + p["slow_scale"] * inst.slow_rng.standard_normal((cfg.d, cfg.d)),
                )
            moved.append(q)
        loss_moved, _ = loss_and_cotangent(nm.stack(nm.Model(cfg, moved), X0, E), C, p["quad"])

        # reverse: slow-weight gradients and the gate gradient
        _, grads = stack_vjp(model, X0, G_L, E=E)
        slow_grads = np.concatenate(
            [getattr(gr, n).ravel() for gr in grads for n in nm.SLOW_WEIGHTS]
        )
        fast_grads = np.concatenate(
            [getattr(gr, n).ravel() for gr in grads for n in nm.FAST_WEIGHTS]
        )
        dg = np.array([gr.g for gr in grads])
        ident = gate_gradient_identity(model, traj, G_L, E)
        ident_rel = float(np.abs(dg - ident).max() / max(np.abs(dg).max(), 1e-300))

        gates = inst.gates
        fd, steps = np.empty(L), np.empty(L)
        for l in range(L):
            S = nm.slow_path(cfg, model.layers[l], traj[l])
            steps[l] = step = p["fd_step"] / max(1.0, float(np.abs(S).max()))

            def loss_at(s, l=l):
                g = gates.copy()
                g[l] += s
                return loss_and_cotangent(nm.stack(model.with_gates(g), X0, E), C, p["quad"])[0]

            def D(s):
                return (loss_at(s) - loss_at(-s)) / (2 * s)

            fd[l] = (4.0 * D(step / 2) - D(step)) / 3.0  # Richardson: truncation O(step⁴)
        fd_rel = np.abs(fd - dg) / np.maximum(np.abs(dg), 1e-300)
        # rounding floor: the loss carries an error of about u·(Σ|C⊙X_L| + quad·Σ X_L² + Σ|G|·M),
        # M the largest state along the trajectory times L (each layer rounds once), divided by the
        # step and tripled by the extrapolation; ×10 for the unmodelled propagation through layers
        u = np.finfo(float).eps
        loss_noise = u * (
            np.abs(C * out).sum()
            + p["quad"] * (out * out).sum()
            + np.abs(G_L).sum() * L * float(np.abs(traj).max())
        )
        fd_floor = 30.0 * loss_noise / steps
        fd_over = float((np.abs(fd - dg) / (FD_RTOL * np.abs(dg) + fd_floor)).max())

        nonzero_slow = int(np.count_nonzero(slow_grads))
        max_fast = float(np.abs(fast_grads).max())
        resolved = float((np.abs(dg) / fd_floor).min())
        figures = {
            "gates": gates.tolist(),
            "output_bytes_equal_to_fast_only": bool(out.tobytes() == out_fast.tobytes()),
            "max_abs_output_difference": float(np.abs(out - out_fast).max()),
            "relative_output_difference": float(
                np.abs(out - out_fast).max() / np.abs(out_fast).max()
            ),
            "loss": loss,
            "loss_change_when_every_slow_weight_moves": float(loss_moved - loss),
            "max_abs_slow_weight_gradient": float(np.abs(slow_grads).max()),
            "nonzero_slow_weight_gradient_entries": nonzero_slow,
            "slow_weight_gradient_entries": int(slow_grads.size),
            "max_abs_fast_weight_gradient": max_fast,
            "gate_gradients": dg.tolist(),
            "gate_identity_max_relative_difference": ident_rel,
            "gate_gradient_fd": fd.tolist(),
            "gate_gradient_fd_steps": steps.tolist(),
            "gate_gradient_fd_max_relative_error": float(fd_rel.max()),
            "gate_gradient_fd_rounding_floor": fd_floor.tolist(),
            "gate_gradient_fd_error_over_allowance": fd_over,
        }
        parts = {
            "output_equal_to_fast_only": Diagnostic(
                equal, figures["max_abs_output_difference"], "np.array_equal(X_L, X_L fast-only)"
            ),
            "loss_blind_to_slow_weights": Diagnostic(
                loss_moved == loss, float(loss_moved - loss), "loss change = 0.0 (bitwise)"
            ),
            "slow_weight_gradients_zero": Diagnostic(
                nonzero_slow == 0,
                nonzero_slow,
                "number of non-zero slow-weight gradient entries = 0",
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
                resolved > RESOLVED, resolved, f"min_l |∂L/∂g_l| / FD rounding floor > {RESOLVED:g}"
            ),
        }
        return Conclusion(
            parts,
            figures,
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
        )


CLAIM = A3()
