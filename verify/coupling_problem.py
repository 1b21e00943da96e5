"""The seeded coupling-flow problem of claim F1 and of its figures.

:func:`coupling_problem` reads a model, an injection target ``E`` and a generic start from a
mapping of claim parameters and a seed (four independent streams spawned from it), or draws ``E``
and the start for a user's own model; :class:`CouplingProblem` holds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fastslow.numerics.model.weights import Model, ModelConfig, init_model

__all__ = ["CouplingProblem", "coupling_problem"]


@dataclass(frozen=True)
class CouplingProblem:
    """A seeded coupling-flow problem: the model, the injection target ``E`` (T×d), a coarse start
    ``Y0`` (N×d, one row per block), an off-manifold part ``Z0`` (T×d) and a fourth independent
    seed for whoever measures on it (``spare_seed``)."""

    model: Model
    E: np.ndarray
    Y0: np.ndarray
    Z0: np.ndarray
    spare_seed: np.random.SeedSequence

    @property
    def U(self) -> np.ndarray:
        """The block-constant states ``U = I_N ⊗ 1_P`` (T×N)."""
        cfg = self.model.config
        return np.kron(np.eye(cfg.N), np.ones((cfg.P, 1)))

    @property
    def X0(self) -> np.ndarray:
        """The generic (off-manifold) start ``UY₀ + Z₀``."""
        return self.U @ self.Y0 + self.Z0


def coupling_problem(params: Mapping, seed: int, model: Model | None = None) -> CouplingProblem:
    """The problem of ``seed`` for the parameters ``params`` (a mapping with the
    :class:`ModelConfig` fields it sets, ``L``, ``scale``, ``gate`` and ``x_scale``).

    ``seed`` spawns four independent streams: the weights (:func:`init_model` with ``scale`` and
    ``gate``), ``E`` (standard normal), the start (``Y0`` then ``Z0``, standard normal times
    ``x_scale``) and the spare seed. With ``model`` given (a user's own seeded model), the
    weight stream is unused and ``params`` needs only ``x_scale``: ``E`` and the start are drawn
    for ``model.config`` by the same streams.
    """
    w_seed, e_seed, x_seed, spare = np.random.SeedSequence(seed).spawn(4)
    if model is None:
        cfg = ModelConfig.from_params(params)
        model = init_model(cfg, params["L"], w_seed, scale=params["scale"], gate=params["gate"])
    cfg = model.config
    E = np.random.default_rng(e_seed).standard_normal((cfg.T, cfg.d))
    rx = np.random.default_rng(x_seed)
    Y0 = params["x_scale"] * rx.standard_normal((cfg.N, cfg.d))
    Z0 = params["x_scale"] * rx.standard_normal((cfg.T, cfg.d))
    return CouplingProblem(model, E, Y0, Z0, spare)
