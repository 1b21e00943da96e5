"""Argument checks shared by the public functions of :mod:`numerics`.

Every public function validates at its boundary and raises ``ValueError`` or ``TypeError`` with a
message that names the offending argument, its value, and what was expected. Nothing downstream of
these checks has to guard against NaN, wrong shapes or impossible sizes.
"""

from __future__ import annotations

import numbers

import numpy as np


def positive_int(name: str, value) -> int:
    """Return ``value`` as an ``int`` if it is an integer ≥ 1, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def nonneg_int(name: str, value) -> int:
    """Return ``value`` as an ``int`` if it is an integer ≥ 0, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value}")
    return int(value)


def real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` inside the given interval, else raise.

    ``low_open=True`` excludes the lower end (use it for ``ε > 0``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}"
        )
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v < low or (low_open and v == low)):
        bound = ">" if low_open else "≥"
        raise ValueError(f"{name} must be {bound} {low}, got {v}")
    if high is not None and (v > high or (high_open and v == high)):
        bound = "<" if high_open else "≤"
        raise ValueError(f"{name} must be {bound} {high}, got {v}")
    return v


def finite_array(
    name: str, value, *, ndim: int | None = None, shape: tuple | None = None
) -> np.ndarray:
    """Return ``value`` as a float64 array after checking dimension, shape and finiteness.

    ``shape`` may contain ``None`` for a free axis. What a cast would silently change is refused
    (``TypeError``), never cast: booleans (a boolean matrix is not 0/1 numbers by accident) and
    complex entries (even with a zero imaginary part).
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    try:
        raw = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers: {exc}") from None
    _refuse_cast(name, raw)
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(
            s is not None and s != a for s, a in zip(shape, arr.shape)
        ):
            want = "×".join("?" if s is None else str(s) for s in shape)
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} must be finite, found {bad} non-finite entries (NaN or inf)")
    return arr


def _refuse_cast(name: str, raw: np.ndarray) -> None:
    """``TypeError`` when ``raw`` holds booleans, complex numbers or anything but real numbers."""
    kind = raw.dtype.kind
    items = raw.ravel().tolist() if kind == "O" else ()
    if kind == "b" or any(isinstance(x, (bool, np.bool_)) for x in items):
        raise TypeError(f"{name} is boolean; expected real numbers (nothing is cast)")
    if kind == "c" or any(
        isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real) for x in items
    ):
        raise TypeError(f"{name} has complex entries; expected real numbers (nothing is cast)")
    if kind not in "iufO":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {raw.dtype}")


def divides(P: int, T: int) -> int:
    """Return ``N = T // P`` after checking that the block size ``P`` divides ``T``."""
    P = positive_int("P", P)
    T = positive_int("T", T)
    if T % P:
        raise ValueError(f"block size P={P} must divide the sequence length T={T} (T = N·P)")
    return T // P


def choice(name: str, value, options) -> str:
    """Return ``value`` if it is one of ``options`` (strings), else raise naming the options."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {sorted(options)}, got {value!r}")
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; expected one of {sorted(options)}")
    return value
