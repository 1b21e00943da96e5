"""A3 — the zero-initialised gate.

Statement: with every gate ``g_l = 0`` the coupled model (``slow=True``) returns the same output as
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
* reverse: :func:`numerics.autodiff.stack_vjp`; every entry of every slow-weight gradient must be
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

Negative control: a non-zero gate (``gate ≠ 0``, a different value per layer of magnitude ≈ gate).
The output then differs from the fast-only model's and the slow-weight gradients are non-zero,
while the gate identity and the finite difference (which hold for every g) still agree.
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics.autodiff import stack_vjp

from . import CheckResult

DEFAULTS = {
    "T": 16, "P": 4, "d": 4, "L": 3,
    "mask": "causal", "slow_mask": "blockcausal", "norm": True, "sigma": "tanh",
    "h": 0.5, "gamma": 0.0, "gate": 0.0,
    "scale": 1.0, "slow_scale": 1000.0, "quad": 0.5, "fd_step": 1e-5,
}

LIMITS = {"T": (1, 256), "P": (1, 256), "d": (1, 32), "L": (1, 32), "h": (1e-6, 10.0),
          "gamma": (0.0, 100.0), "gate": (-100.0, 100.0), "scale": (0.0, 100.0),
          "slow_scale": (0.0, 1e6), "quad": (0.0, 100.0), "fd_step": (1e-12, 1e-2)}
"""Bounds for ``fastslow check`` (instances that finish in seconds and stay finite)."""

FD_RTOL = 1e-6
IDENTITY_RTOL = 1e-13


def _validate(p: dict) -> None:
    for key in ("quad", "fd_step"):
        if not isinstance(p[key], (int, float)) or isinstance(p[key], bool):
            raise ValueError(f"{key} must be a real number, got {p[key]!r}")
    if p["quad"] < 0 or not np.isfinite(p["quad"]):
        raise ValueError(f"quad must be a finite number ≥ 0, got {p['quad']}")
    if not (0 < p["fd_step"] <= 1e-2):
        raise ValueError(f"fd_step must lie in (0, 1e-2], got {p['fd_step']}")


def loss_and_cotangent(X_L: np.ndarray, C: np.ndarray, quad: float):
    """``L = ⟨C, X_L⟩ + (quad/2)‖X_L‖²`` and ``∂L/∂X_L = C + quad·X_L``."""
    return float(np.vdot(C, X_L) + 0.5 * quad * np.vdot(X_L, X_L)), C + quad * X_L


def gate_gradient_identity(model: nm.Model, traj: np.ndarray, G_L: np.ndarray, E) -> np.ndarray:
    """``h·⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩`` for every layer, from tail reverse sweeps."""
    cfg, L = model.config, model.L
    out = np.empty(L)
    for l in range(L):
        if l + 1 < L:
            tail = nm.Model(cfg, model.layers[l + 1:])
            G_next, _ = stack_vjp(tail, traj[l + 1], G_L, E=E)
        else:
            G_next = G_L
        out[l] = cfg.h * float(np.vdot(G_next, nm.slow_path(cfg, model.layers[l], traj[l])))
    return out


def check(params: dict, seed: int) -> CheckResult:
    p = params
    _validate(p)
    w_seed, x_seed, c_seed, g_seed, s_seed = np.random.SeedSequence(seed).spawn(5)
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], slow_mask=p["slow_mask"],
                         norm=p["norm"], sigma=p["sigma"], h=p["h"], gamma=p["gamma"], slow=True)
    model = nm.init_model(cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"])
    if p["gate"] == 0:
        gates = np.zeros(p["L"])
    else:
        gates = p["gate"] * (1.0 + 0.5 * np.random.default_rng(g_seed).uniform(-1, 1, p["L"]))
    model = model.with_gates(gates)
    fast = nm.Model(cfg.replace(slow=False), model.layers)
    rng = np.random.default_rng(x_seed)
    X0 = rng.standard_normal((cfg.T, cfg.d))
    E = X0.copy() if cfg.gamma else None
    C = np.random.default_rng(c_seed).standard_normal((cfg.T, cfg.d))

    # forward: coupled vs fast-only, and a perturbation of every slow weight
    traj = nm.stack_trajectory(model, X0)
    out, out_fast = traj[-1], nm.stack(fast, X0)
    equal = bool(np.array_equal(out, out_fast))
    loss, G_L = loss_and_cotangent(out, C, p["quad"])
    srng = np.random.default_rng(s_seed)
    moved = []
    for lp in model.layers:
        q = lp.copy()
        for name in nm.SLOW_WEIGHTS:
            setattr(q, name, getattr(q, name) + p["slow_scale"] * srng.standard_normal((cfg.d, cfg.d)))
        moved.append(q)
    loss_moved, _ = loss_and_cotangent(nm.stack(nm.Model(cfg, moved), X0), C, p["quad"])

    # reverse: slow-weight gradients and the gate gradient
    _, grads = stack_vjp(model, X0, G_L, E=E)
    slow_grads = np.concatenate([getattr(gr, n).ravel() for gr in grads for n in nm.SLOW_WEIGHTS])
    fast_grads = np.concatenate([getattr(gr, n).ravel() for gr in grads for n in nm.FAST_WEIGHTS])
    dg = np.array([gr.g for gr in grads])
    ident = gate_gradient_identity(model, traj, G_L, E)
    ident_rel = float(np.abs(dg - ident).max() / max(np.abs(dg).max(), 1e-300))

    fd, steps = np.empty(p["L"]), np.empty(p["L"])
    for l in range(p["L"]):
        S = nm.slow_path(cfg, model.layers[l], traj[l])
        steps[l] = step = p["fd_step"] / max(1.0, float(np.abs(S).max()))
        def loss_at(s):
            g = gates.copy()
            g[l] += s
            return loss_and_cotangent(nm.stack(model.with_gates(g), X0), C, p["quad"])[0]
        D = lambda s: (loss_at(s) - loss_at(-s)) / (2 * s)  # noqa: E731
        fd[l] = (4.0 * D(step / 2) - D(step)) / 3.0  # Richardson: truncation O(step⁴)
    fd_rel = np.abs(fd - dg) / np.maximum(np.abs(dg), 1e-300)
    # rounding floor: the loss carries an error of about u·(Σ|C⊙X_L| + quad·Σ X_L² + Σ|G|·M),
    # M the largest state along the trajectory times L (each layer rounds once), divided by the
    # step and tripled by the extrapolation; ×10 for the unmodelled propagation through layers
    u = np.finfo(float).eps
    loss_noise = u * (np.abs(C * out).sum() + p["quad"] * (out * out).sum()
                      + np.abs(G_L).sum() * p["L"] * float(np.abs(traj).max()))
    fd_floor = 30.0 * loss_noise / steps
    fd_over = np.abs(fd - dg) / (FD_RTOL * np.abs(dg) + fd_floor)

    figures = {
        "gates": gates.tolist(),
        "output_equal_to_fast_only": equal,
        "output_bytes_equal_to_fast_only": bool(out.tobytes() == out_fast.tobytes()),
        "max_abs_output_difference": float(np.abs(out - out_fast).max()),
        "relative_output_difference": float(np.abs(out - out_fast).max() / np.abs(out_fast).max()),
        "loss": loss,
        "loss_change_when_every_slow_weight_moves": float(loss_moved - loss),
        "max_abs_slow_weight_gradient": float(np.abs(slow_grads).max()),
        "nonzero_slow_weight_gradient_entries": int(np.count_nonzero(slow_grads)),
        "slow_weight_gradient_entries": int(slow_grads.size),
        "max_abs_fast_weight_gradient": float(np.abs(fast_grads).max()),
        "gate_gradients": dg.tolist(),
        "gate_identity_max_relative_difference": ident_rel,
        "gate_gradient_fd": fd.tolist(),
        "gate_gradient_fd_steps": steps.tolist(),
        "gate_gradient_fd_max_relative_error": float(fd_rel.max()),
        "gate_gradient_fd_rounding_floor": fd_floor.tolist(),
        "gate_gradient_fd_error_over_allowance": float(fd_over.max()),
    }
    zero_gate_part = equal and figures["nonzero_slow_weight_gradient_entries"] == 0 \
        and loss_moved == loss
    holds = bool(zero_gate_part and ident_rel <= IDENTITY_RTOL and fd_over.max() <= 1.0)
    return CheckResult(
        id="A3", holds=holds, hypotheses_hold=bool(np.all(gates == 0.0)), figures=figures,
        params=dict(p), seed=seed,
        tolerance={"output_difference_abs": 0.0, "slow_weight_gradient_abs": 0.0,
                   "gate_identity_rel": IDENTITY_RTOL, "gate_gradient_fd_rel": FD_RTOL,
                   "gate_gradient_fd": "|fd − an| ≤ 1e-6·|an| + rounding floor"},
        notes=["loss L = <C, X_L> + (quad/2)|X_L|^2 with C Gaussian; gradients by the analytic "
               "reverse sweep numerics.autodiff.stack_vjp",
               "gate identity: dL/dg_l from the full sweep vs h<dL/dX_{l+1}, Slow_l(X_l)> from the "
               "tail sweep and the public slow_path"],
    )
