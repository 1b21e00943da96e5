"""A3 figure: what a small gate reveals of the slow path.

The output difference to the fast-only model and the norm of the slow-weight gradient, against a
common gate ``g`` in every layer (log-log). Both are linear in ``g`` near 0 (slope 1) and exactly
``0.0`` at ``g = 0`` (drawn as the text in the panel, since a log axis cannot show it), which is
the zero-initialised gate of claim A3. Loss: ``⟨C, X_L⟩ + ½‖X_L‖²`` as in the check.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import numerics as nm
from figures import figure
from numerics.model.autodiff import stack_vjp
from verify.registry import CLAIMS

PARAMS = {
    **{k: CLAIMS["A3"].defaults()[k] for k in ("T", "P", "d", "L", "h")},
    "slow_scale": 1.0,
    "gates": tuple(float(g) for g in np.logspace(-8, 0, 9)),
}
"""The A3 instance's sizes and depth step; moderate slow weights (the check's default 1e3 saturates
the slow softmax) and the gates drawn."""


def _measure(model: nm.Model, fast: nm.Model, X0, C, g: float) -> tuple[float, float]:
    m = model.with_gates(g)
    out = nm.stack(m, X0)
    _, grads = stack_vjp(m, X0, C + out)
    slow = np.concatenate([getattr(gr, n).ravel() for gr in grads for n in nm.SLOW_WEIGHTS])
    return float(np.abs(out - nm.stack(fast, X0)).max()), float(np.linalg.norm(slow))


def a3_case(seed: int, gate: float) -> list:
    """The output difference to the fast-only model and the slow-gradient norm at one common gate."""
    p = PARAMS
    w, x, c = np.random.SeedSequence(seed).spawn(3)
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], h=p["h"])
    model = nm.init_model(cfg, p["L"], w, slow_scale=p["slow_scale"])
    fast = nm.Model(cfg.replace(slow=False), model.layers)
    X0 = np.random.default_rng(x).standard_normal((cfg.T, cfg.d))
    C = np.random.default_rng(c).standard_normal((cfg.T, cfg.d))
    return list(_measure(model, fast, X0, C, gate))


@figure(
    "A3",
    "a3_gate",
    compute=a3_case,
    points=lambda seed: [dict(seed=seed, gate=g) for g in (0.0, *PARAMS["gates"])],
)
def a3_gate(data: list, seed: int):
    p = PARAMS
    at_zero = tuple(data[0])
    vals = np.array(data[1:])
    g = np.array(p["gates"])
    fig, ax = plt.subplots()
    ax.loglog(g, vals[:, 0], marker="o", label="max |X_L(g) − X_L(fast-only)|")
    ax.loglog(g, vals[:, 1], marker="s", label="‖∂L/∂(Qs, Ks, Vs)‖ (all layers)")
    ax.loglog(g, vals[0, 0] * g / g[0], "k:", lw=0.8, label="slope 1")
    ax.text(
        0.03,
        0.05,
        f"at g = 0: output difference {at_zero[0]:.1f}, slow gradient "
        f"{at_zero[1]:.1f} (exact zeros)",
        transform=ax.transAxes,
        fontsize=8,
    )
    ax.set_xlabel("gate g (every layer)")
    ax.set_title(f"A3: T={p['T']}, P={p['P']}, d={p['d']}, L={p['L']}, h={p['h']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    params = dict(
        p,
        gates=list(p["gates"]),
        at_zero=list(at_zero),
        output_difference=vals[:, 0].tolist(),
        slow_gradient_norm=vals[:, 1].tolist(),
    )
    return fig, params
