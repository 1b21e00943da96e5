"""Model configuration and untied per-layer parameters.

A model is a :class:`ModelConfig` (sizes, masks, switches, depth step ``h``, injection ``γ``)
plus one :class:`LayerParams` per layer. Weights are untied by default; ``tied=True`` makes every
layer share one parameter object, which is the weight-tied (looped, autonomous) special case.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.model.activations import SIGMAS, Activation, resolve
from fastslow.numerics.model.masks import NAMED_MASKS, as_mask

__all__ = [
    "SIGMAS",
    "SLOW_MASKS",
    "WEIGHT_NAMES",
    "FAST_WEIGHTS",
    "SLOW_WEIGHTS",
    "ModelConfig",
    "LayerParams",
    "Model",
    "init_layer",
    "spread_gates",
    "init_model",
]

SLOW_MASKS = ("blockcausal", "full")
"""Masks of the slow attention over pooled tokens. ``"full"`` is v1's leaking variant (claim A1)."""

WEIGHT_NAMES = ("Q", "K", "V", "W1", "W2", "Qs", "Ks", "Vs")
"""The matrix parameters of one layer, in a fixed order; the gate ``g`` is the scalar one."""

FAST_WEIGHTS = ("Q", "K", "V", "W1", "W2")
SLOW_WEIGHTS = ("Qs", "Ks", "Vs")


@dataclass(frozen=True, eq=False)
class ModelConfig:
    """Sizes and switches of the model (the layer map is written out in :mod:`numerics.model.layer`).

    Attributes:
        T: tokens; ``T = N·P``.
        P: block size of the slow path (must divide ``T``).
        d: feature width.
        m: MLP hidden width (default ``d``).
        mask: fast attention mask: a name in :data:`numerics.model.masks.NAMED_MASKS` or a boolean
            T×T array with non-empty rows.
        slow_mask: ``"blockcausal"`` (autoregressive) or ``"full"`` (v1's variant; leaks).
        norm: apply RMS normalisation ``n(·)`` before attention, MLP and slow path.
        sigma: MLP nonlinearity: a name of :data:`SIGMAS` (``"tanh"``, ``"relu"``, ``"gelu"`` (tanh
            approximation), ``"identity"``) or a user
            :class:`~numerics.model.activations.Activation` ``(name, f, df, smooth)`` of NumPy
            functions. A built-in :class:`Activation` object is stored as its name. The NumPy
            reference path (layer, JVP/VJP, linearisation) accepts any; the compiled paths
            (:mod:`numerics.model.compiled`, :mod:`numerics.model.coupling.rhs`) only the named ones.
            :attr:`activation` is the resolved object; ``activation.smooth`` is False for relu, and
            a claim needing second derivatives of ``σ`` must treat that as a hypothesis.
        h: depth step (1 for a plain stack, ``1/L`` for the continuum scaling).
        gamma: input-injection strength ``γ ≥ 0`` towards the embeddings ``E``.
        beta: attention score scale; ``None`` means ``1/√d``.
        slow: include the slow path at all (``False`` is the fast-only model).
        norm_eps: the ε inside the RMS norm, ``x / √(mean(x²) + norm_eps)``.
    """

    T: int
    P: int
    d: int
    m: int | None = None
    mask: object = "causal"
    slow_mask: str = "blockcausal"
    norm: bool = True
    sigma: str | Activation = "tanh"
    h: float = 1.0
    gamma: float = 0.0
    beta: float | None = None
    slow: bool = True
    norm_eps: float = 1e-6
    _mask_array: np.ndarray = field(init=False, repr=False)
    _activation: Activation = field(init=False, repr=False)

    @classmethod
    def from_params(cls, params, **overrides) -> ModelConfig:
        """The config whose fields are read from a mapping of claim parameters (keys that are not
        fields, like ``L`` or ``seed``, are ignored), then from ``overrides``."""
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        kw = {k: params[k] for k in names if k in params}
        kw.update(overrides)
        for flag in ("norm", "slow"):
            if flag in kw:
                kw[flag] = bool(kw[flag])
        return cls(**kw)

    def __post_init__(self):
        T = validation.positive_int("T", self.T)
        d = validation.positive_int("d", self.d)
        validation.divides(self.P, T)
        m = d if self.m is None else validation.positive_int("m", self.m)
        object.__setattr__(self, "m", m)
        if isinstance(self.mask, str):
            validation.choice("mask", self.mask, NAMED_MASKS)
        object.__setattr__(self, "_mask_array", as_mask(self.mask, T, self.P))
        validation.choice("slow_mask", self.slow_mask, SLOW_MASKS)
        act = resolve(self.sigma)
        object.__setattr__(self, "_activation", act)
        if act.name in SIGMAS:
            object.__setattr__(self, "sigma", act.name)
        for flag in ("norm", "slow"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        validation.real("h", self.h, low=0.0, low_open=True)
        validation.real("gamma", self.gamma, low=0.0)
        if self.beta is not None:
            validation.real("beta", self.beta)
        validation.real("norm_eps", self.norm_eps, low=0.0, low_open=True)

    @property
    def N(self) -> int:
        """Number of blocks ``T / P``."""
        return self.T // self.P

    @property
    def mask_array(self) -> np.ndarray:
        """The fast mask as a boolean T×T array."""
        return self._mask_array

    @property
    def activation(self) -> Activation:
        """The MLP nonlinearity ``σ`` as an :class:`~numerics.model.activations.Activation`
        (value ``f``, derivative ``df``, ``smooth``)."""
        return self._activation

    @property
    def mask_name(self) -> str | None:
        """The fast mask's name, or ``None`` for a custom mask."""
        return self.mask if isinstance(self.mask, str) else None

    @property
    def score_scale(self) -> float:
        """The factor multiplying ``n(X)Q (n(X)K)ᵀ`` inside the softmax."""
        return 1.0 / np.sqrt(self.d) if self.beta is None else float(self.beta)

    def replace(self, **changes) -> ModelConfig:
        """A copy with some fields changed (validated again)."""
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        kw.update(changes)
        return ModelConfig(**kw)


@dataclass(eq=False)
class LayerParams:
    """Parameters ``θ_l`` of one layer: eight weight matrices and the scalar gate ``g``.

    Shapes: ``Q, K, V, Qs, Ks, Vs`` are d×d, ``W1`` is d×m, ``W2`` is m×d. The same structure
    holds a tangent (a direction in parameter space) for the JVPs.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    W1: np.ndarray
    W2: np.ndarray
    Qs: np.ndarray
    Ks: np.ndarray
    Vs: np.ndarray
    g: float = 0.0

    def shapes_ok(self, d: int, m: int) -> LayerParams:
        """Validate shapes and finiteness against widths ``d`` and ``m``; return ``self``."""
        want = {"W1": (d, m), "W2": (m, d)}
        for name in WEIGHT_NAMES:
            arr = validation.finite_array(name, getattr(self, name), shape=want.get(name, (d, d)))
            object.__setattr__(self, name, arr)
        self.g = validation.real("g", self.g)
        return self

    def copy(self) -> LayerParams:
        return LayerParams(**{n: getattr(self, n).copy() for n in WEIGHT_NAMES}, g=float(self.g))

    def zeros_like(self) -> LayerParams:
        return LayerParams(**{n: np.zeros_like(getattr(self, n)) for n in WEIGHT_NAMES}, g=0.0)

    def axpy(self, a: float, other: LayerParams) -> LayerParams:
        """``self + a·other`` as a new object."""
        return LayerParams(
            **{n: getattr(self, n) + a * getattr(other, n) for n in WEIGHT_NAMES},
            g=self.g + a * other.g,
        )

    def to_vector(self) -> np.ndarray:
        """All parameters in a flat vector, weights in :data:`WEIGHT_NAMES` order then ``g``."""
        return np.concatenate([getattr(self, n).ravel() for n in WEIGHT_NAMES] + [[self.g]])

    @classmethod
    def from_vector(cls, vec: np.ndarray, d: int, m: int) -> LayerParams:
        vec = np.asarray(vec, dtype=np.float64)
        shapes = {"W1": (d, m), "W2": (m, d)}
        out, i = {}, 0
        for n in WEIGHT_NAMES:
            shp = shapes.get(n, (d, d))
            size = shp[0] * shp[1]
            out[n] = vec[i : i + size].reshape(shp).copy()
            i += size
        if vec.size != i + 1:
            raise ValueError(f"parameter vector has length {vec.size}, expected {i + 1}")
        return cls(**out, g=float(vec[i]))


@dataclass(eq=False)
class Model:
    """A configured stack of ``L`` layers: ``config`` and ``layers[l] = θ_l``.

    With tied weights every entry of ``layers`` is the same object.
    """

    config: ModelConfig
    layers: tuple

    def __post_init__(self):
        if not isinstance(self.config, ModelConfig):
            raise TypeError(f"config must be a ModelConfig, got {type(self.config).__name__}")
        self.layers = tuple(self.layers)
        if not self.layers:
            raise ValueError("a model needs at least one layer, got 0")
        for i, p in enumerate(self.layers):
            if not isinstance(p, LayerParams):
                raise TypeError(f"layers[{i}] must be LayerParams, got {type(p).__name__}")
            p.shapes_ok(self.config.d, self.config.m)

    @property
    def L(self) -> int:
        return len(self.layers)

    @property
    def tied(self) -> bool:
        return all(p is self.layers[0] for p in self.layers)

    def params_at(self, t: float) -> LayerParams:
        """Piecewise-constant ``θ(t)`` on ``[0, 1]``: layer ``l`` on ``[l/L, (l+1)/L)``."""
        t = validation.real("t", t)
        l = min(max(int(np.floor(t * self.L)), 0), self.L - 1)
        return self.layers[l]

    def with_gates(self, g) -> Model:
        """A copy with every gate set to ``g`` (a scalar or one value per layer)."""
        gs = np.broadcast_to(np.asarray(g, dtype=float), (self.L,))
        if self.tied:
            p = self.layers[0].copy()
            p.g = float(gs[0])
            return Model(self.config, (p,) * self.L)
        layers = []
        for p, gi in zip(self.layers, gs):
            q = p.copy()
            q.g = float(gi)
            layers.append(q)
        return Model(self.config, tuple(layers))


def init_layer(
    config: ModelConfig,
    rng: np.random.Generator,
    *,
    scale: float = 1.0,
    slow_scale: float = 1.0,
    gate: float = 0.0,
) -> LayerParams:
    """One layer with Gaussian weights of standard deviation ``scale/√fan_in`` (slow: ``slow_scale``)."""
    d, m = config.d, config.m

    def gauss(shape, s):
        return rng.standard_normal(shape) * (s / np.sqrt(shape[0]))

    return LayerParams(
        Q=gauss((d, d), scale),
        K=gauss((d, d), scale),
        V=gauss((d, d), scale),
        W1=gauss((d, m), scale),
        W2=gauss((m, d), scale),
        Qs=gauss((d, d), slow_scale),
        Ks=gauss((d, d), slow_scale),
        Vs=gauss((d, d), slow_scale),
        g=float(gate),
    )


def spread_gates(gate: float, spread: float, L: int, rng: np.random.Generator) -> np.ndarray:
    """Per-layer gates ``gate·(1 + spread·u_l)``, ``u_l`` uniform in ``[−1, 1]`` (``L`` draws from
    ``rng``): different non-zero gates of magnitude about ``gate``; ``spread = 0`` is one common
    gate."""
    return gate * (1.0 + spread * rng.uniform(-1, 1, L))


def init_model(
    config: ModelConfig,
    L: int,
    seed,
    *,
    tied: bool = False,
    scale: float = 1.0,
    slow_scale: float = 1.0,
    gate: float = 0.0,
    value_gain: float = 0.0,
) -> Model:
    """A seeded random model of ``L`` layers.

    ``seed`` is an int or a ``numpy.random.SeedSequence``; the same seed gives the same weights
    bit for bit. ``tied=True`` draws one layer and shares it. The gate starts at ``gate``
    (0 is the zero-initialised gate of the paper). ``value_gain`` adds ``value_gain·I`` to every
    value matrix after the draw (the same random stream), so that the value map ``h·V`` dominates
    the linearised layer when the gain is large (claims D4 and D5).
    """
    L = validation.positive_int("L", L)
    validation.real("scale", scale, low=0.0)
    validation.real("slow_scale", slow_scale, low=0.0)
    validation.real("gate", gate)
    validation.real("value_gain", value_gain)
    rng = np.random.default_rng(seed)

    def draw() -> LayerParams:
        p = init_layer(config, rng, scale=scale, slow_scale=slow_scale, gate=gate)
        if value_gain:
            p.V = p.V + value_gain * np.eye(config.d)
        return p

    if tied:
        return Model(config, (draw(),) * L)
    return Model(config, tuple(draw() for _ in range(L)))
