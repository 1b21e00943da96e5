"""A3 figure: what a small gate reveals of the slow path.

The output difference to the fast-only model and the norm of the slow-weight gradient, against a
common gate ``g`` in every layer (log-log). Both are linear in ``g`` near 0 (slope 1) and exactly
``0.0`` at ``g = 0`` (drawn as the text in the panel, since a log axis cannot show it), which is
the zero-initialised gate of claim A3. Loss: ``⟨C, X_L⟩ + ½‖X_L‖²``. Every point is the A3 check
at that gate.

On your own ``DepthFlow`` every point is the A3 check of your flow with its gate set to ``g``
(``dataclasses.replace(flow, gate=g)``: the flow's mask, sizes, scales and seed are kept; the
parameters a flow replaces, such as ``slow_scale``, are its own).
"""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.registry import get_claim, run_check

PARAMS = {
    "slow_scale": 1.0,
    "quad": 1.0,
    "gate_spread": 0.0,
}
"""The A3 check's parameters changed for the figure: moderate slow weights (the check's default
1e3 saturates the slow softmax), the loss ``⟨C, X_L⟩ + ½‖X_L‖²`` and one common gate per point;
the sizes and the depth step are the check's defaults."""

GATES = tuple(float(g) for g in np.logspace(-8, 0, 9))
"""The gates drawn (besides ``g = 0``)."""


def a3_case(seed: int, gate: float, system=None) -> dict:
    """The A3 check at one common gate: the output difference to the fast-only model and the norm
    of the slow-weight gradient (all layers), with the instance's parameters (on a user flow:
    the flow with its gate set to ``gate``, and its sizes)."""
    if system is None:
        res = run_check("A3", {**PARAMS, "gate": gate}, seed=seed)
    else:
        flow = dataclasses.replace(system, gate=gate)
        kept = {k: v for k, v in PARAMS.items() if k not in get_claim("A3").replaced_by(flow)}
        res = run_check("A3", kept, seed=seed, system=flow)
    return {
        "params": {**res.params, **(res.system or {})},
        "values": [
            res.figures["max_abs_output_difference"],
            res.series["slow_weight_gradient_norm"],
        ],
    }


@figure(
    "A3",
    "a3_gate",
    compute=a3_case,
    points=lambda seed: [dict(seed=seed, gate=g) for g in (0.0, *GATES)],
    system_points=lambda seed, system: [
        dict(seed=seed, gate=g, system=system) for g in (0.0, *GATES)
    ],
)
def a3_gate(data: list, seed: int):
    p = {k: data[0]["params"].get(k) for k in ("T", "P", "d", "L", "h")}
    at_zero = tuple(data[0]["values"])
    vals = np.array([case["values"] for case in data[1:]])
    g = np.array(GATES)
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
    h = "" if p["h"] is None else f", h={p['h']}"  # a user flow's step is its config's
    ax.set_title(f"A3: T={p['T']}, P={p['P']}, d={p['d']}, L={p['L']}{h}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    params = dict(
        {k: v for k, v in p.items() if v is not None},
        **{k: data[0]["params"][k] for k in PARAMS if k in data[0]["params"]},
        gates=list(GATES),
        at_zero=list(at_zero),
        output_difference=vals[:, 0].tolist(),
        slow_gradient_norm=vals[:, 1].tolist(),
    )
    return fig, params
