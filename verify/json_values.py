"""Values as strict JSON and back: NumPy scalars and arrays, tuples, non-finite floats, and a
readable fallback for anything else (a user system's description may hold any object)."""

from __future__ import annotations

import dataclasses
import math
import numbers
import re

import numpy as np

MAX_DEPTH = 20
"""Deeper nesting than this is written as the object's ``repr`` (cycles end there too)."""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def jsonable(obj, _depth: int = 0):
    """``obj`` as a strict-JSON value (recursively), whatever it holds.

    NumPy scalars and arrays become numbers and lists; tuples lists; non-finite floats the
    strings ``"inf"``, ``"-inf"``, ``"nan"`` (strict JSON has none; :func:`unjsonable` turns them
    back); complex numbers ``{"re", "im"}``. Anything else never raises: a SymPy object (or any
    object with ``free_symbols``) is its string, a callable ``"<function module.name>"``, a
    dataclass ``{"type": name, field: value, ...}``, a set a sorted list, bytes their hex, and
    any other object its ``repr`` without memory addresses (so that the text is the same in
    every run). Caveat: the fallbacks are one-way (:func:`unjsonable` does not rebuild them).
    """
    if _depth > MAX_DEPTH:
        return _ADDRESS.sub("", repr(obj))
    deeper = _depth + 1
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v, deeper) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, deeper) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((jsonable(v, deeper) for v in obj), key=repr)
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist(), deeper)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        f = float(obj)
        return f if math.isfinite(f) else str(f)
    if isinstance(obj, numbers.Complex):
        return {"re": jsonable(obj.real), "im": jsonable(obj.imag)}
    return _fallback(obj, deeper)


def _fallback(obj, depth: int):
    """:func:`jsonable` of an object that is not a number, string, container or array."""
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).hex()
    if isinstance(obj, np.generic):  # np.str_, np.datetime64, ...
        return jsonable(obj.item(), depth)
    if hasattr(obj, "free_symbols"):  # SymPy expressions and matrices
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
        return {"type": type(obj).__name__, **jsonable(fields, depth)}
    if callable(obj):
        name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        module = getattr(obj, "__module__", None) or type(obj).__module__
        kind = "class" if isinstance(obj, type) else "function"
        return f"<{kind} {module}.{name}>"
    try:
        text = repr(obj)
    except Exception:  # a user object whose repr raises: its type is all we can say
        text = f"<{type(obj).__qualname__}>"
    return _ADDRESS.sub("", text)


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def unjsonable(obj):
    """Undo :func:`jsonable`'s strings for non-finite floats (recursively; lists stay lists)."""
    if isinstance(obj, dict):
        return {k: unjsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unjsonable(v) for v in obj]
    if isinstance(obj, str):
        return _NONFINITE.get(obj, obj)
    return obj
