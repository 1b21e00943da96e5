"""Values as strict JSON and back: NumPy scalars and arrays, tuples, non-finite floats."""

from __future__ import annotations

import math
import numbers

import numpy as np


def jsonable(obj):
    """Numpy scalars and arrays, tuples and non-finite floats as JSON-safe values (recursively).

    Non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"`` (strict JSON has none);
    :func:`unjsonable` turns them back.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        f = float(obj)
        return f if math.isfinite(f) else str(f)
    if isinstance(obj, numbers.Complex):
        return {"re": jsonable(obj.real), "im": jsonable(obj.imag)}
    return obj


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
