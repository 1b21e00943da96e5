"""A character-level language model's configuration and parameters (one flat dict of arrays).

The network (:mod:`numerics.lm.network`): ``X_0 = E[x]`` (token embedding), ``X_L`` the stack
of ``L`` untied layers of :mod:`numerics.model.layer`, logits ``n(X_L)·W_head``, cross-entropy on
the next character. The layer Φ is the whole network between input and head.

No position embedding, as in Φ: a causal attention layer then selects tokens by content only
(position is implicit in the causal mask); a learned absolute position embedding did not lower
the held-out loss at the E1 budget (``docs/benchmarks.md``), so the network stays exactly the
suite's.

Parameters are a ``dict`` name → ``float64`` array: ``"emb"`` (V×d), ``"head"`` (d×V), and for
layer ``l`` the eight weights ``"l.Q"`` … ``"l.Vs"`` of
:data:`numerics.model.weights.WEIGHT_NAMES` and the gate ``"l.g"`` (a 0-d array). The three
models of claim E1 share this layout:

* ``dense``: ``slow = False`` (the slow weights and gates exist and are drawn, so the random
  streams are the same, but never used);
* ``coupled``: the slow path and the gates are trained from ``g = 0``;
* ``frozen``: the slow path is computed but every gate is held at 0 (never updated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import (
    WEIGHT_NAMES,
    LayerParams,
    Model,
    ModelConfig,
    init_layer,
)

__all__ = ["KINDS", "LMConfig", "init_params", "layer_params", "to_model", "gate_names"]

KINDS = ("dense", "coupled", "frozen")
"""The three models of claim E1."""


@dataclass(frozen=True)
class LMConfig:
    """Sizes and switches of a language model.

    Attributes:
        vocab: alphabet size ``V``.
        T: context (tokens per training window); ``P`` divides it.
        P: block size of the slow path.
        d: width; ``m`` the MLP width; ``L`` the number of layers.
        kind: ``"dense"``, ``"coupled"`` or ``"frozen"`` (:data:`KINDS`).
        fast_mask: the fast attention mask (``"causal"`` or ``"block_causal"``).
        sigma: MLP nonlinearity; ``h`` the depth step; ``norm_eps`` the RMS-norm ε.
    """

    vocab: int
    T: int
    P: int
    d: int
    m: int
    L: int
    kind: str = "coupled"
    fast_mask: str = "causal"
    sigma: str = "tanh"
    h: float = 1.0
    norm_eps: float = 1e-6

    def __post_init__(self):
        for name in ("vocab", "T", "P", "d", "m", "L"):
            validation.positive_int(name, getattr(self, name))
        validation.divides(self.P, self.T)
        validation.choice("kind", self.kind, KINDS)
        validation.choice("fast_mask", self.fast_mask, NAMED_MASKS)
        validation.real("h", self.h, low=0.0, low_open=True)

    @property
    def N(self) -> int:
        return self.T // self.P

    @property
    def slow(self) -> bool:
        """The slow path is computed (coupled and frozen)."""
        return self.kind != "dense"

    @property
    def gates_trained(self) -> bool:
        return self.kind == "coupled"

    def model_config(self) -> ModelConfig:
        """The :class:`~numerics.model.weights.ModelConfig` of the stack (RMS norm on, γ = 0)."""
        return ModelConfig(
            T=self.T,
            P=self.P,
            d=self.d,
            m=self.m,
            mask=self.fast_mask,
            sigma=self.sigma,
            h=self.h,
            slow=self.slow,
            norm_eps=self.norm_eps,
        )


def gate_names(cfg: LMConfig) -> list[str]:
    return [f"{l}.g" for l in range(cfg.L)]


def init_params(cfg: LMConfig, seed) -> dict:
    """Seeded parameters: embedding ``N(0, 1)``, head ``N(0, 1/d)``, layers by
    :func:`numerics.model.weights.init_layer` (standard deviation ``1/√fan_in``), gates 0.

    The draws do not depend on ``kind``: the three models of one seed start from the same weights.
    """
    rng = np.random.default_rng(seed)
    mc = cfg.model_config()
    out = {
        "emb": rng.standard_normal((cfg.vocab, cfg.d)),
        "head": rng.standard_normal((cfg.d, cfg.vocab)) / np.sqrt(cfg.d),
    }
    for l in range(cfg.L):
        p = init_layer(mc, rng)
        for n in WEIGHT_NAMES:
            out[f"{l}.{n}"] = getattr(p, n)
        out[f"{l}.g"] = np.zeros(())
    return out


def layer_params(params: dict, l: int) -> LayerParams:
    """Layer ``l`` as :class:`~numerics.model.weights.LayerParams` (the arrays are shared)."""
    return LayerParams(**{n: params[f"{l}.{n}"] for n in WEIGHT_NAMES}, g=float(params[f"{l}.g"]))


def to_model(cfg: LMConfig, params: dict) -> Model:
    """The stack as a :class:`~numerics.model.weights.Model` (for the reference path)."""
    return Model(cfg.model_config(), tuple(layer_params(params, l) for l in range(cfg.L)))
