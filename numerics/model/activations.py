"""The MLP nonlinearities ``σ``: each named activation's value and derivative, in one place.

::

    tanh      σ(z) = tanh z,                       σ'(z) = 1 − tanh² z
    relu      σ(z) = max(z, 0),                    σ'(z) = 1 if z > 0 else 0   (σ'(0) := 0)
    gelu      σ(z) = ½ z (1 + tanh u),  u = √(2/π) (z + 0.044715 z³)
              σ'(z) = ½ (1 + tanh u) + ½ z (1 − tanh² u) √(2/π) (1 + 3·0.044715 z²)
    identity  σ(z) = z,                            σ'(z) = 1

``gelu`` is the **tanh approximation** of the Gaussian error linear unit (PyTorch's
``gelu(approximate="tanh")``), not the exact ``z Φ(z)``.

An :class:`Activation` is ``(name, f, df, smooth)`` with ``f`` and ``df`` NumPy functions applied
element-wise to float64 arrays. The NumPy reference path (:mod:`numerics.model.kernels`,
:mod:`numerics.model.tangents`, :mod:`numerics.analysis.linearised`) calls ``f`` and ``df`` of the
config's activation, whatever it is: a named one (``ModelConfig(sigma="relu")``) or a user pair
(``ModelConfig(sigma=Activation("mine", f, df, smooth=True))``).

The compiled paths (:mod:`numerics.model.compiled`, :mod:`numerics.model.coupling.rhs`) evaluate the
named activations by Numba row kernels (:func:`numerics.model.compiled.activation_rows`) selected by
the integer :data:`COMPILED_CODES`; they refuse a user activation (:func:`compiled_code` raises a
``ValueError`` naming the NumPy reference path to use instead). This module imports no Numba.

**Smoothness.** ``smooth`` says whether ``σ`` is twice continuously differentiable everywhere:
true for tanh, gelu and identity, false for relu (not differentiable at 0; its ``df`` is the
one-sided derivative with ``σ'(0) = 0``, and its second derivative is 0 away from 0 and undefined
at 0). A claim whose argument needs second derivatives of ``σ`` (a second-order Taylor expansion,
a curvature, an ``O(s²)`` remainder) must treat ``smooth=False`` as a failed hypothesis, not as a
failed claim. First-order statements (JVPs, VJPs, the linearised layer) hold for relu wherever no
pre-activation ``n(X)W1`` is exactly 0; finite differences must stay away from the kinks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Activation",
    "TANH",
    "RELU",
    "GELU",
    "IDENTITY",
    "NAMED",
    "SIGMAS",
    "COMPILED_CODES",
    "GELU_C",
    "GELU_K",
    "resolve",
    "is_builtin",
    "compiled_code",
]

GELU_C = 0.7978845608028654
"""``√(2/π)`` rounded to float64, the factor inside the tanh approximation of GELU."""

GELU_K = 0.044715
"""The cubic coefficient of the tanh approximation of GELU."""

_PROBE = np.linspace(-2.0, 2.0, 5)


@dataclass(frozen=True, eq=False)
class Activation:
    """An element-wise nonlinearity ``σ`` of the MLP: value ``f``, derivative ``df``, smoothness.

    Attributes:
        name: a label (reports, messages). The names of :data:`SIGMAS` are reserved for the
            built-in activations; a user activation needs another name.
        f: ``z ↦ σ(z)``, a NumPy function of a float64 array returning an array of the same shape.
        df: ``z ↦ σ'(z)``, likewise (for a non-smooth ``σ``, a one-sided derivative or any
            element of the subdifferential at the kinks; say which in your docstring).
        smooth: whether ``σ`` is twice continuously differentiable everywhere. Claims needing
            second derivatives of ``σ`` treat ``smooth=False`` as a hypothesis that fails.

    Construction checks the types and probes ``f`` and ``df`` on five points of ``[−2, 2]``: each
    must return finite values of the argument's shape.
    """

    name: str
    f: Callable[[np.ndarray], np.ndarray]
    df: Callable[[np.ndarray], np.ndarray]
    smooth: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Activation name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.smooth, bool):
            raise TypeError(f"Activation smooth must be True or False, got {self.smooth!r}")
        for part in ("f", "df"):
            fn = getattr(self, part)
            if not callable(fn):
                raise TypeError(
                    f"Activation {self.name!r}: {part} must be a NumPy function of an array, "
                    f"got {fn!r}"
                )
            with np.errstate(all="ignore"):  # the message below says what went wrong
                out = np.asarray(fn(_PROBE.copy()), dtype=np.float64)
            if out.shape != _PROBE.shape or not np.all(np.isfinite(out)):
                raise ValueError(
                    f"Activation {self.name!r}: {part} must map a float64 array to finite values "
                    f"of the same shape; on {_PROBE.tolist()} it gave {out!r}"
                )

    def __repr__(self) -> str:
        return f"Activation({self.name!r}, smooth={self.smooth})"


def _tanh_prime(z: np.ndarray) -> np.ndarray:
    return 1.0 - np.tanh(z) ** 2


def _relu(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0)


def _relu_prime(z: np.ndarray) -> np.ndarray:
    return np.heaviside(z, 0.0)


def _gelu_inner(z: np.ndarray) -> np.ndarray:
    """``u = √(2/π)(z + 0.044715 z³)``, in the operation order of the compiled kernel."""
    return GELU_C * (z + GELU_K * (z * z * z))


def _gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + np.tanh(_gelu_inner(z)))


def _gelu_prime(z: np.ndarray) -> np.ndarray:
    t = np.tanh(_gelu_inner(z))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_K * (z * z))


def _identity(z: np.ndarray) -> np.ndarray:
    return z


def _identity_prime(z: np.ndarray) -> np.ndarray:
    return np.ones_like(z)


TANH = Activation("tanh", np.tanh, _tanh_prime, smooth=True)
RELU = Activation("relu", _relu, _relu_prime, smooth=False)
GELU = Activation("gelu", _gelu, _gelu_prime, smooth=True)
IDENTITY = Activation("identity", _identity, _identity_prime, smooth=True)

NAMED: dict[str, Activation] = {a.name: a for a in (TANH, RELU, GELU, IDENTITY)}
"""The built-in activations by name."""

SIGMAS = tuple(NAMED)
"""The names of the built-in activations: ``("tanh", "relu", "gelu", "identity")``."""

COMPILED_CODES: dict[str, int] = {"identity": 0, "tanh": 1, "relu": 2, "gelu": 3}
"""The integer by which the compiled kernels select a built-in activation (0: no activation)."""


def resolve(sigma) -> Activation:
    """The :class:`Activation` of ``sigma``: a name of :data:`SIGMAS` or an :class:`Activation`.

    A user activation may not take a built-in name (``ValueError``); anything else is a
    ``TypeError`` naming the choices.
    """
    if isinstance(sigma, Activation):
        if sigma.name in NAMED and NAMED[sigma.name] is not sigma:
            raise ValueError(
                f"the activation name {sigma.name!r} is reserved for the built-in one: pass "
                f"sigma={sigma.name!r}, or give your Activation another name"
            )
        return sigma
    if isinstance(sigma, str):
        if sigma not in NAMED:
            raise ValueError(
                f"unknown sigma {sigma!r}; expected one of {list(SIGMAS)} or an "
                "Activation(name, f, df, smooth)"
            )
        return NAMED[sigma]
    raise TypeError(
        f"sigma must be one of {list(SIGMAS)} or an Activation(name, f, df, smooth), "
        f"got {sigma!r} of type {type(sigma).__name__}"
    )


def is_builtin(act: Activation) -> bool:
    """Whether ``act`` is one of the built-in activations of :data:`NAMED` (the object itself)."""
    return NAMED.get(act.name) is act


def compiled_code(act: Activation, path: str, alternative: str) -> int:
    """The :data:`COMPILED_CODES` entry of a built-in activation; ``ValueError`` for a user one.

    ``path`` names the compiled function refusing it and ``alternative`` the NumPy reference path
    that evaluates any activation (both appear in the message).
    """
    if is_builtin(act):
        return COMPILED_CODES[act.name]
    raise ValueError(
        f"{path} compiles only the built-in activations {list(SIGMAS)}; sigma is the user "
        f"activation {act.name!r}. Use the NumPy reference path instead: {alternative}"
    )
