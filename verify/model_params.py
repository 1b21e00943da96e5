"""The model's parameters as claim parameters, declared once.

Most claims build a :class:`numerics.model.weights.ModelConfig` and a random model from the same few parameters
(sizes, masks, norm, nonlinearity, depth step, injection, gate, weight scales). Their meaning and
type live here; a claim states only what differs on its instance: the default and, where the cost
of its check limits it, the bounds. :meth:`numerics.model.weights.ModelConfig.from_params` reads the resolved
values back into a config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import SIGMAS, SLOW_MASKS

from .params import Param

STANDARD: dict[str, Param] = {
    "T": Param(8, "tokens (a multiple of P)", low=1, high=256),
    "P": Param(4, "tokens per block", low=1, high=256),
    "d": Param(4, "features", low=1, high=64),
    "L": Param(4, "layers", low=1, high=64),
    "mask": Param("causal", "fast attention mask", choices=tuple(NAMED_MASKS)),
    "slow_mask": Param("blockcausal", "slow attention mask at block level", choices=SLOW_MASKS),
    "norm": Param(True, "RMS norm before attention and MLP"),
    "sigma": Param("tanh", "MLP nonlinearity", choices=SIGMAS),
    "h": Param(0.5, "depth step", low=0.0, high=10.0, open_low=True),
    "gamma": Param(0.0, "input-injection strength γ", low=0.0, high=100.0),
    "gate": Param(0.0, "gate of every layer (slow path)", low=-100.0, high=100.0),
    "gate_spread": Param(
        0.5,
        "relative spread of the gates: layer l gets gate·(1 + gate_spread·u_l), u_l uniform in "
        "[−1, 1] (0: one common gate)",
        low=0.0,
        high=1.0,
    ),
    "scale": Param(1.0, "scale of the fast weights", low=0.0, high=100.0),
    "slow_scale": Param(1.0, "scale of the slow weights", low=0.0, high=100.0),
    "slow": Param(True, "include the slow path"),
    "tied": Param(False, "every layer shares layer 0's weights and gate"),
}
"""The standard model parameters with their default meaning, type and bounds."""


def model_params(**changes) -> dict[str, Param]:
    """The standard parameters named in ``changes``, in that order, each changed for one claim.

    A change is a new default value (``d=6``), a mapping of :class:`~verify.params.Param` fields to
    replace (``T=dict(default=8, high=64)``, ``gate=dict(meaning="gate at t = 0")``) or a whole
    :class:`~verify.params.Param`. ``None`` keeps the standard parameter as it is.
    """
    out = {}
    for name, change in changes.items():
        if name not in STANDARD:
            raise KeyError(f"{name!r} is not a standard model parameter; known: {sorted(STANDARD)}")
        base = STANDARD[name]
        if change is None:
            out[name] = base
        elif isinstance(change, Param):
            out[name] = change
        elif isinstance(change, Mapping):
            out[name] = dataclasses.replace(base, **change)
        else:
            out[name] = dataclasses.replace(base, default=change)
    return out
