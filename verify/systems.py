"""Your own toy systems: the kinds of system a claim can be checked on besides its built-in instances.

A system is a plain description, validated when it is made and again, on a copy, when a claim
checks it (:meth:`System.validated`: shapes, finiteness, real entries, types; a field mutated
after construction included: a bad system is bad input, exit 2, never a cast with a warning nor
an ``error`` of the check); whether it satisfies a claim's *hypotheses* (a spectral radius below
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

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import posix
import random
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import sympy as sp

from fastslow.numerics import validation
from fastslow.numerics.model.weights import Model, ModelConfig, init_model

from .budgets import BASE_BYTES, budget_hint, format_bytes, memory_budget
from .json_values import jsonable
from .outputs import stdout_to_stderr


class System:
    """Base class of a user system: a name and a JSON description for the verdict's provenance.

    Systems are mutable dataclasses: they are validated when made and again, on a copy, when a
    claim checks one (:meth:`validated`), so a field set to NaN after construction is bad input
    too, never an ``error`` of the check.
    """

    kind: str = "system"
    name: str = ""
    replaces: ClassVar[tuple[str, ...]] = ()
    """The claim parameters this kind of system supersedes wherever a claim declares them (they
    build only the built-in instance); a claim adds its own with ``Claim.system_replaces``."""

    def describe(self) -> dict:
        """A JSON-able description (recorded in the verdict; default: ``NotImplementedError``
        naming the kind: every kind implements it)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement System.describe")

    def sizes(self) -> dict:
        """The claim parameters whose values this system's own sizes stand for in a claim's cost
        model (:meth:`verify.claim.Claim.work`, :meth:`~verify.claim.Claim.memory_bytes`), so
        that time and memory are estimated, and refused, on the system's sizes rather than on
        the claim's defaults. Empty: the system does not change the claim's cost."""
        return {}

    def size_text(self) -> str:
        """The system's sizes for messages (``T=16, P=4, d=8, ...``)."""
        return ", ".join(f"{k}={v}" for k, v in self.sizes().items()) or "no sizes"

    def label(self) -> str:
        """``LinearLoop 'name'``: the kind and the user's name, for messages."""
        return f"{type(self).__name__} {self.name!r}"

    def validated(self) -> System:
        """A validated copy of this system, made from its current fields (so a field changed
        after construction is checked again): ``ValueError`` or ``TypeError`` naming the system
        and the fault. A system that is not a dataclass is returned as it is."""
        if not dataclasses.is_dataclass(self):
            return self
        try:
            return dataclasses.replace(self)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"your {self.label()} is not valid: {exc}") from None
        except Exception as exc:  # a user field that breaks the validation itself
            raise ValueError(
                f"your {self.label()} is not valid: {type(exc).__name__}: {exc}"
            ) from None

    def fingerprint(self) -> str:
        """SHA-256 (24 hex digits) of the kind and every field's value (:func:`_digest`: arrays
        by dtype, shape and bytes, SymPy objects by ``srepr``, functions by name and bytecode,
        dataclasses such as a user ``Activation`` field by field, anything else by its JSON form).
        Two systems with the same fingerprint build the same instance; a sweep's cache keys
        carry it. Caveat: a function is told apart by its code and constants, not by the values
        it reads from globals or closures."""
        h = hashlib.sha256(type(self).__qualname__.encode())
        items = (
            [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]
            if dataclasses.is_dataclass(self)
            else sorted(vars(self).items())
        )
        for key, value in items:
            h.update(key.encode())
            _digest(h, value)
        return h.hexdigest()[:24]


def _digest(h, value, depth: int = 0) -> None:
    """Feed ``value`` to the hash ``h`` (see :meth:`System.fingerprint`)."""
    if depth > 20:
        h.update(repr(type(value)).encode())
    elif isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes() if value.dtype != object else b"")
        if value.dtype == object:
            _digest(h, value.tolist(), depth + 1)
    elif isinstance(value, sp.Basic | sp.MatrixBase):
        h.update(sp.srepr(value).encode())
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _digest(h, item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(type(value).__qualname__.encode())
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            _digest(h, getattr(value, f.name, None), depth + 1)
    elif callable(value) and hasattr(value, "__code__"):
        code = value.__code__
        h.update(f"{value.__module__}.{value.__qualname__}".encode())
        h.update(code.co_code + repr(code.co_consts).encode())
    else:
        h.update(json.dumps(jsonable(value), sort_keys=True).encode())


def _check_name(name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    return name


def real_array(name: str, value, **shape) -> np.ndarray:
    """``value`` as a finite float64 array (:func:`numerics.validation.finite_array`: ``ndim``,
    ``shape``), refusing what a cast would silently change: booleans, complex entries (even with
    zero imaginary part), strings. ``TypeError`` or ``ValueError`` naming ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return validation.finite_array(name, value, **shape)


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
        _check_name(self.name)
        self.J = real_array("J", self.J, ndim=2)
        n = self.J.shape[0]
        if self.J.shape != (n, n) or n == 0:
            raise ValueError(f"J must be a non-empty square matrix, got shape {self.J.shape}")
        self.G = real_array("G", self.G, shape=(n, n))

    def describe(self) -> dict:
        return {"kind": self.kind, "name": self.name, "n": int(self.J.shape[0])}

    def sizes(self) -> dict:
        """A loop of ``n`` states is the dense ``n × n`` problem of a model with ``T·d = n``:
        ``T = n``, ``d = 1`` (``P = 1``), so a claim's dense counts (``(T·d)³`` per spectrum,
        ``T²d + Td²`` per iteration) are ``n³`` and about ``n²``."""
        return {"T": int(self.J.shape[0]), "d": 1, "P": 1}

    def size_text(self) -> str:
        return f"n={int(self.J.shape[0])}"


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
        _check_name(self.name)
        try:
            self.Q = sp.Matrix(self.Q)
        except (TypeError, ValueError, sp.SympifyError) as exc:
            raise TypeError(f"Q must be a square SymPy matrix: {exc}") from None
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
        if not isinstance(self.t, sp.Symbol):
            raise TypeError(f"t must be a SymPy Symbol, got {type(self.t).__name__}")
        try:
            self.slow = sp.sympify(self.slow)
        except (sp.SympifyError, TypeError, ValueError) as exc:
            raise TypeError(f"slow must be a SymPy expression: {exc}") from None
        if not isinstance(self.slow, sp.Expr):
            raise TypeError(f"slow must be a SymPy expression, got {type(self.slow).__name__}")
        for (i, j), entry in np.ndenumerate(np.array(self.Q.tolist(), dtype=object)):
            _real_expression(f"Q[{i}, {j}]", entry)
        _real_expression("slow", self.slow)
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

    def sizes(self) -> dict:
        """The chain's ``n`` states stand for a claim's ``n_states``."""
        return {"n_states": self.n}

    def size_text(self) -> str:
        return f"n={self.n} states"

    def describe(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "n": self.n,
            "Q": str(self.Q.tolist()),
            "slow": str(self.slow),
        }


MASK_BYTES_PER_ENTRY = 2
"""Bytes per entry of a named ``T × T`` mask while it is built (the boolean mask and the boolean
array it is cut from)."""

LIMITED_FIELDS = ("T", "P", "d", "L", "gamma", "gate", "scale", "slow_scale", "value_gain")
"""The fields of a :class:`DepthFlow` that :meth:`DepthFlow.within_limits` checks."""


def _real_expression(name: str, expr) -> None:
    """``ValueError`` when the SymPy expression ``expr`` holds a non-finite number (``nan``,
    ``oo``, ``zoo``) or the imaginary unit: a generator's rates and the slow field are real."""
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"{name} must be a SymPy expression, got {type(expr).__name__}")
    if expr.has(sp.nan, sp.oo, -sp.oo, sp.zoo) or any(
        isinstance(a, sp.Float) and not np.isfinite(float(a)) for a in expr.atoms(sp.Float)
    ):
        raise ValueError(f"{name} = {expr} is not finite (NaN or infinity)")
    if expr.has(sp.I):
        raise ValueError(f"{name} = {expr} is complex; expected a real expression")


@dataclass
class DepthFlow(System):
    """A model of the depth flow: your mask, block size, widths, nonlinearity and weights' seed.

    ``mask`` is a named mask (:data:`numerics.model.masks.NAMED_MASKS`) or a boolean T×T array; the rest are
    the fields of :class:`numerics.model.weights.ModelConfig` and of :func:`numerics.model.weights.init_model` (``value_gain``
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
        _check_name(self.name)
        if isinstance(self.mask, str):
            if self.T is None:
                raise ValueError("T is required with a named mask")
        else:
            arr = np.asarray(self.mask)
            if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.dtype != bool:
                raise ValueError(
                    "mask must be a named mask or a boolean T×T array, got an array of dtype "
                    f"{arr.dtype} and shape {arr.shape}"
                )
            if self.T is not None and self.T != arr.shape[0]:
                raise ValueError(f"T={self.T} does not match the mask's size {arr.shape[0]}")
            self.T = int(arr.shape[0])
            self.mask = arr
        # sizes of any integer kind (numpy's included) become Python ints, once, here
        self.P, self.d = validation.positive_int("P", self.P), validation.positive_int("d", self.d)
        self.T = validation.positive_int("T", self.T) if self.T is not None else None
        self.L = validation.positive_int("L", self.L)
        self.seed = validation.nonneg_int("seed", self.seed)
        validation.real(
            "scale", self.scale, low=0.0
        )  # the weights' fields, checked here as init_model
        validation.real(
            "slow_scale", self.slow_scale, low=0.0
        )  # does, not when a claim first draws them
        validation.real("gate", self.gate)
        self._mask_fits_budget()
        self.config  # noqa: B018  (validates every field through ModelConfig)

    def _mask_fits_budget(self) -> None:
        """``ValueError`` when building a named mask of ``T`` tokens (``T × T`` booleans and the
        temporary of the same size they are made from) would exceed the memory budget: decided
        from ``T`` before anything is allocated."""
        if not isinstance(self.mask, str) or self.T is None:
            return
        need = BASE_BYTES + MASK_BYTES_PER_ENTRY * self.T**2
        if need > memory_budget():
            raise ValueError(
                f"T={self.T}: the {self.mask} mask alone needs about {format_bytes(need)} "
                f"({self.T}×{self.T} entries), beyond the memory budget of {budget_hint()}"
            )

    @property
    def config(self) -> ModelConfig:
        return ModelConfig(
            T=int(self.T or 0),
            P=self.P,
            d=self.d,
            mask=self.mask,
            slow_mask=self.slow_mask,
            sigma=self.sigma,
            norm=self.norm,
            gamma=self.gamma,
        )

    def model(self, *, h: float | None = None) -> Model:
        """The seeded model (``h`` overrides the config's depth step)."""
        cfg = self.config if h is None else self.config.replace(h=h)
        return init_model(
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

    def sizes(self) -> dict:
        """The flow's sizes and scales stand for a claim's ``T``, ``P``, ``d``, ``L``, ``gamma``,
        ``gate``, ``scale`` and ``slow_scale``."""
        keys = ("T", "P", "d", "L", "gamma", "gate", "scale", "slow_scale")
        return {k: getattr(self, k) for k in keys}


KINDS = {cls.__name__: cls for cls in (LinearLoop, GeneratorFamily, DepthFlow)}
"""The kinds of user system, by name."""


def subkinds(kind: type) -> list[type]:
    """``kind`` and the kinds derived from it (a claim that checks a :class:`DepthFlow` checks a
    :class:`~verify.trained.TrainedStack` too)."""
    from . import trained  # deferred: verify.trained imports this module (TrainedStack)

    return [kind, *(k for k in (trained.TrainedStack,) if issubclass(k, kind) and k is not kind)]


def load(spec: str, option: str = "--system") -> System:
    """The user system of ``spec``: trained weights (``FILE.npz``, ``FILE.safetensors`` or
    ``e1:ARM:SEED:TOKENS``, :func:`verify.trained.parse_spec`), or the system ``NAME`` of the
    Python file in ``FILE.py:NAME`` (a :mod:`fastslow.toy`
    system, or a function of no arguments returning one), validated
    (:meth:`System.validated`); ``ValueError`` naming ``option`` and what is wrong: no such file,
    a file that raises or calls ``sys.exit`` while it is imported, no ``NAME`` in it, a ``NAME``
    that is not (and does not return) a system, an invalid system.

    The file runs under :func:`user_code`: what it prints goes to standard error, ``os._exit``
    is bad input like ``sys.exit`` (whatever the code), and Python's and NumPy's global random
    generators start from seed 0 (so ``np.random.randn`` draws the same system on every load;
    the caller's generator state is restored afterwards).

    Caveat: the file is executed (it is Python); a sweep's workers each execute it again to
    rebuild the system (:func:`verify.sweep.check_point`), so it must build the same system
    every time: a generator of its own (``np.random.default_rng()``) must be seeded."""
    from . import trained  # deferred: verify.trained imports this module (TrainedStack)

    if trained.is_trained_spec(str(spec)):
        return trained.parse_spec(str(spec), option).validated()
    path, sep, name = str(spec).rpartition(":")
    if not sep or not path.endswith(".py") or not name.isidentifier():
        raise ValueError(
            f"{option} expects FILE.py:NAME, FILE.npz|FILE.safetensors[:KEY=VALUE,...] or "
            f"e1:ARM:SEED:TOKENS[:PROFILE][:train], got {spec!r}"
        )
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{option}: no such file {path!r}")
    module_spec = importlib.util.spec_from_file_location(f"fastslow_user_{file.stem}", file)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"{option}: cannot load {path!r} as Python")
    module = importlib.util.module_from_spec(module_spec)
    try:
        with user_code():
            module_spec.loader.exec_module(module)
    except (SystemExit, UserExit) as exc:  # the file ends the interpreter: bad input, one line
        raise ValueError(f"{option}: {path} called {_exit_call(exc)} while loading") from None
    except Exception as exc:  # the user's file: any error is bad input, on one line
        raise ValueError(f"{option}: {path} failed to load: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, name):
        raise ValueError(f"{option}: {path} defines no {name!r}")
    obj = getattr(module, name)
    if callable(obj) and not isinstance(obj, System):
        try:
            with user_code():
                obj = obj()
        except (SystemExit, UserExit) as exc:
            raise ValueError(f"{option}: {name}() called {_exit_call(exc)}") from None
        except Exception as exc:  # the user's function: any error is bad input, on one line
            raise ValueError(f"{option}: {name}() failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(obj, System):
        raise ValueError(
            f"{option}: {name} is a {type(obj).__name__}; expected one of the fastslow.toy "
            f"systems ({', '.join(KINDS)})"
        )
    try:
        return obj.validated()
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{option}: {name}: {exc}") from None


class UserExit(BaseException):
    """A user's file called ``os._exit`` while :func:`user_code` held it (a ``BaseException``, so
    the file's own ``except Exception`` cannot swallow it)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def _exit_call(exc: BaseException) -> str:
    """``sys.exit(0)`` or ``os._exit(3)``, as the user's file called it."""
    return (
        f"{'os._exit' if isinstance(exc, UserExit) else 'sys.exit'}({getattr(exc, 'code', None)!r})"
    )


def _refuse_exit(code=0):
    raise UserExit(code)


@contextlib.contextmanager
def user_code():
    """Run a user's system file (or the function in it that builds the system): its standard
    output goes to standard error (:func:`verify.outputs.stdout_to_stderr`), ``os._exit`` raises
    :class:`UserExit` instead of ending the process unseen, and Python's and NumPy's global
    random generators are seeded with 0 for the block and restored after it (a file that draws
    from them builds the same system every time it is loaded)."""
    exits = (os._exit, posix._exit)
    states = (random.getstate(), np.random.get_state())
    for module in (os, posix):
        module._exit = _refuse_exit
    random.seed(0)
    np.random.seed(0)
    try:
        with stdout_to_stderr():
            yield
    finally:
        for module, original in zip((os, posix), exits):
            module._exit = original
        random.setstate(states[0])
        np.random.set_state(states[1])
