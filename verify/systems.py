"""Your own toy systems: the kinds of system a claim can be checked on besides its built-in instances.

A system is a plain description, validated when it is made (shapes, finiteness, types: a bad
system is bad input, exit 2); whether it satisfies a claim's *hypotheses* (a spectral radius below
one, a generator with one closed class, a block-local mask) is decided by the claim and reported as
``outside-hypotheses``, never refused. ``fastslow.check(ID, system=...)`` and
``fastslow check ID --system FILE.py:NAME`` take one; each claim lists the kinds it accepts
(``Claim.systems``).

* :class:`LinearLoop` ``(J, G)`` — a looped linear layer ``x ↦ (J + g·G)x`` with gate ``g``
  (claim D7: the gate's stability margin and critical gate; D7 also takes a :class:`DepthFlow`
  and derives ``J`` and ``G`` at the fixed point of its first layer).
* :class:`GeneratorFamily` ``(Q, slow, y, x, t)`` — a fast Markov generator ``Q(y)`` (columns sum
  to zero, SymPy in the slow variable ``y``) and the slow field ``dy/dt = slow(y, x, t)`` (claim
  F2: the equilibrium manifold is the stationary distribution ``p_st(y)``).
* :class:`DepthFlow` — a model of the depth flow with your mask, block size, widths, nonlinearity
  and seed (claims on the Transformer: A1, A3, D1, D3, D4, D5, D6, D7 and F1; D4, D5 and D6 derive
  the spectral data of a boolean mask exactly, :mod:`verify.user_kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import sympy as sp

import fastslow.numerics as nm
from fastslow.numerics import validation as v


class System:
    """Base class of a user system: a name and a JSON description for the verdict's provenance."""

    kind: str = "system"
    name: str = ""
    replaces: ClassVar[tuple[str, ...]] = ()
    """The claim parameters this kind of system supersedes wherever a claim declares them (they
    build only the built-in instance); a claim adds its own with ``Claim.system_replaces``."""

    def describe(self) -> dict:
        """A JSON-able description (recorded in the verdict)."""
        raise NotImplementedError


@dataclass
class LinearLoop(System):
    """The looped linear layer ``x_{k+1} = (J + g·G) x_k``.

    ``J`` (n×n) is the layer's Jacobian with the gate closed and ``G`` (n×n) the gate's direction
    (for a Transformer layer ``G = h·∂Slow/∂X``, :func:`numerics.analysis.stability.slow_jacobian`
    times the depth step). Both are real and finite; nothing else is required here: a ``J`` with
    ``ρ(J) ≥ 1`` is outside D7's hypotheses, which the verdict says.
    """

    J: Any
    G: Any
    name: str = "linear loop"
    kind: str = field(default="LinearLoop", init=False, repr=False)

    def __post_init__(self):
        self.J = v.finite_array("J", self.J, ndim=2)
        n = self.J.shape[0]
        if self.J.shape != (n, n) or n == 0:
            raise ValueError(f"J must be a non-empty square matrix, got shape {self.J.shape}")
        self.G = v.finite_array("G", self.G, shape=(n, n))

    def describe(self) -> dict:
        return {"kind": self.kind, "name": self.name, "n": int(self.J.shape[0])}


@dataclass
class GeneratorFamily(System):
    """A fast Markov chain whose generator depends on the slow variable, and the slow field.

    ``Q`` is an n×n SymPy matrix in ``y`` with ``Q[i, j] ≥ 0`` for ``i ≠ j`` (the rate of the
    jump ``j → i``) and zero column sums; ``slow`` is a SymPy expression in ``y``, the fast state
    ``x`` (n symbols) and time ``t``. The fast subsystem is ``ε dx/dt = Q(y) x``. The generator
    conditions and one closed class (a unique stationary law; transient states are allowed, so
    the chain need not be irreducible) are hypotheses of F2, decided by the claim on the grid
    ``[y_min, y_max]``. ``p_st(y)`` and ``h₁`` are derived for your ``Q`` and slow field
    (:func:`theory.markov.family_slow_manifold`).
    """

    Q: Any
    slow: Any
    y: Any
    x: Any
    t: Any = None
    name: str = "generator family"
    kind: str = field(default="GeneratorFamily", init=False, repr=False)
    replaces: ClassVar[tuple[str, ...]] = ("n_states", "chain", "defect")

    def __post_init__(self):
        self.Q = sp.Matrix(self.Q)
        n = self.Q.shape[0]
        if self.Q.shape != (n, n) or n < 2:
            raise ValueError(
                f"Q must be a square SymPy matrix of size ≥ 2, got shape {self.Q.shape}"
            )
        if not isinstance(self.y, sp.Symbol):
            raise TypeError(f"y must be a SymPy Symbol, got {type(self.y).__name__}")
        self.x = tuple(self.x)
        if len(self.x) != n or not all(isinstance(s, sp.Symbol) for s in self.x):
            raise ValueError(f"x must be {n} SymPy symbols (one per state), got {self.x!r}")
        self.t = sp.Symbol("t") if self.t is None else self.t
        self.slow = sp.sympify(self.slow)
        allowed = {self.y, self.t, *self.x}
        extra = self.slow.free_symbols - allowed
        if extra or self.Q.free_symbols - {self.y}:
            bad = sorted(map(str, extra | (self.Q.free_symbols - {self.y})))
            raise ValueError(
                f"Q may depend only on y and slow only on y, x, t; free symbols {bad} are unknown"
            )

    @property
    def n(self) -> int:
        return int(self.Q.shape[0])

    def describe(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "n": self.n,
            "Q": str(self.Q.tolist()),
            "slow": str(self.slow),
        }


LIMITED_FIELDS = ("T", "P", "d", "L", "gamma", "gate", "scale", "slow_scale", "value_gain")
"""The fields of a :class:`DepthFlow` that :meth:`DepthFlow.within_limits` checks."""


@dataclass
class DepthFlow(System):
    """A model of the depth flow: your mask, block size, widths, nonlinearity and weights' seed.

    ``mask`` is a named mask (:data:`numerics.NAMED_MASKS`) or a boolean T×T array; the rest are
    the fields of :class:`numerics.ModelConfig` and of :func:`numerics.init_model` (``value_gain``
    adds ``value_gain·I`` to every value matrix, as claims D4 and D5 do). Claims that
    need more of the flow (a block-local mask, a smooth ``sigma``) decide that as a hypothesis.

    Caveat for F1 (Tikhonov along depth): its first-order statement needs a nonzero first-order
    correction, which the injection ``γ(E − X)`` supplies; with the default ``gamma = 0`` the flow
    is outside F1's hypothesis ``first_order_correction_nonzero``. Pass ``gamma > 0`` (e.g. 1.0)
    to check F1 on your flow.
    """

    mask: Any
    P: int
    d: int
    T: int | None = None
    L: int = 2
    slow_mask: str = "blockcausal"
    sigma: str = "tanh"
    norm: bool = True
    gamma: float = 0.0
    gate: float = 0.0
    scale: float = 1.0
    slow_scale: float = 1.0
    seed: int = 0
    name: str = "depth flow"
    value_gain: float = 0.0
    kind: str = field(default="DepthFlow", init=False, repr=False)
    replaces: ClassVar[tuple[str, ...]] = (
        *("T", "P", "d", "L", "mask", "slow_mask", "norm", "sigma", "h", "gamma", "gate"),
        *("gate_spread", "scale", "slow_scale", "tied", "slow", "value_gain"),
    )

    def __post_init__(self):
        if isinstance(self.mask, str):
            if self.T is None:
                raise ValueError("T is required with a named mask")
        else:
            arr = np.asarray(self.mask)
            if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.dtype != bool:
                raise ValueError(f"mask must be a named mask or a boolean T×T array, got {arr!r}")
            if self.T is not None and self.T != arr.shape[0]:
                raise ValueError(f"T={self.T} does not match the mask's size {arr.shape[0]}")
            self.T = int(arr.shape[0])
            self.mask = arr
        self.L = v.positive_int("L", self.L)
        self.seed = v.nonneg_int("seed", self.seed)
        self.config  # noqa: B018  (validates every field through ModelConfig)

    @property
    def config(self) -> nm.ModelConfig:
        return nm.ModelConfig(
            T=int(self.T or 0),
            P=self.P,
            d=self.d,
            mask=self.mask,
            slow_mask=self.slow_mask,
            sigma=self.sigma,
            norm=self.norm,
            gamma=self.gamma,
        )

    def model(self, *, h: float | None = None) -> nm.Model:
        """The seeded model (``h`` overrides the config's depth step)."""
        cfg = self.config if h is None else self.config.replace(h=h)
        return nm.init_model(
            cfg,
            self.L,
            self.seed,
            scale=self.scale,
            slow_scale=self.slow_scale,
            gate=self.gate,
            value_gain=self.value_gain,
        )

    def describe(self) -> dict:
        mask = (
            self.mask if isinstance(self.mask, str) else np.asarray(self.mask).astype(int).tolist()
        )
        return {
            "kind": self.kind,
            "name": self.name,
            "mask": mask,
            "T": self.T,
            "P": self.P,
            "d": self.d,
            "L": self.L,
            "slow_mask": self.slow_mask,
            "sigma": self.sigma,
            "norm": self.norm,
            "gamma": self.gamma,
            "gate": self.gate,
            "scale": self.scale,
            "slow_scale": self.slow_scale,
            "value_gain": self.value_gain,
            "seed": self.seed,
        }

    def within_limits(self, claim_id: str, params, keys=LIMITED_FIELDS) -> None:
        """``ValueError`` (one line, naming the field) when a field of ``keys`` lies outside the
        bounds of the claim's parameter of the same name (``params``: the claim's ``Param``
        declarations; fields without such a parameter are not checked): a claim applies the
        limits of its own parameters (its cost, its dense maps) to your flow."""
        for key in keys:
            if key in params:
                try:
                    params[key].validate(key, getattr(self, key))
                except ValueError as exc:
                    raise ValueError(
                        f"{self.name}: {exc}; {claim_id} applies the limits of its own "
                        "parameters to your DepthFlow"
                    ) from None


KINDS = {cls.__name__: cls for cls in (LinearLoop, GeneratorFamily, DepthFlow)}
"""The kinds of user system, by name."""
