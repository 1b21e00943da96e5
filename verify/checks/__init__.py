"""Check functions: one module per claim, shared by ``pytest verify`` and ``fastslow check``.

A check module ``verify.checks.<id>`` (lower-case ID, e.g. ``a1``) defines

* ``DEFAULTS``: a dict of parameter names to default values. The type of each default fixes how a
  command-line string is parsed (int, float, bool, str, or a tuple of floats/ints written
  ``1e-3,1e-1``).
* optionally ``LIMITS``: ``{name: (low, high)}`` bounds that keep an instance small enough to
  finish in seconds (``fastslow check`` rejects values outside them with exit code 2).
* ``check(params: dict, seed: int) -> CheckResult``: run the claim's test on one instance and say
  whether the conclusion holds, whether the instance satisfies the claim's hypotheses, and the
  measured numbers. A negative control is the same call with parameters that violate a hypothesis.

Checks run under ``numpy.errstate(over="raise", invalid="raise")``: an instance that overflows
raises ``FloatingPointError`` (``fastslow check`` exits 2) instead of producing NaN.

A claim without a module is *pending*: :func:`run_check` raises :class:`PendingClaim`.
"""

from __future__ import annotations

import importlib
import math
import numbers
from dataclasses import asdict, dataclass, field

import numpy as np

from ..registry import get_claim


class PendingClaim(LookupError):
    """The claim is registered but has no check implemented yet."""


@dataclass
class CheckResult:
    """The outcome of one check on one instance.

    Attributes:
        id: the claim ID.
        holds: the claim's conclusion holds on this instance (within ``tolerance``).
        hypotheses_hold: the instance satisfies the claim's hypotheses (False for negative controls).
        figures: the measured numbers (residuals, slopes with intervals, ranks, ...).
        params: the resolved parameters of the instance.
        seed: the root seed.
        tolerance: the tolerances used, in the units stated by their keys.
        notes: short remarks (gaps, caveats, what the numbers mean).
    """

    id: str
    holds: bool
    hypotheses_hold: bool
    figures: dict
    params: dict
    seed: int
    tolerance: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def to_json(self) -> dict:
        return jsonable(asdict(self))

    @classmethod
    def from_json(cls, data: dict) -> "CheckResult":
        """The result back from :meth:`to_json`: the strings ``"inf"``, ``"-inf"``, ``"nan"`` in
        ``figures`` and ``tolerance`` become floats again (arrays stay lists)."""
        return cls(**{**data, "figures": _unstring(data["figures"]),
                      "tolerance": _unstring(data.get("tolerance", {}))})

    def summary(self) -> str:
        figs = ", ".join(f"{k}={_fmt(v)}" for k, v in list(self.figures.items())[:8])
        return (f"{self.id}: holds={self.holds} hypotheses_hold={self.hypotheses_hold} "
                f"seed={self.seed} {figs}")


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def jsonable(obj):
    """Convert numpy scalars/arrays and non-finite floats into JSON-safe values (recursively).

    Non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"`` (strict JSON has none).
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
    return obj


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _unstring(obj):
    """Undo :func:`jsonable`'s strings for non-finite floats (recursively)."""
    if isinstance(obj, dict):
        return {k: _unstring(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unstring(v) for v in obj]
    if isinstance(obj, str):
        return _NONFINITE.get(obj, obj)
    return obj


def _parse_value(key: str, raw, default):
    """Parse ``raw`` (a string from the command line, or a value) to the type of ``default``."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    try:
        if isinstance(default, bool):
            low = text.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, tuple):
            kind = type(default[0]) if default else float
            return tuple(kind(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"parameter {key}={raw!r}: expected a value of type "
                         f"{type(default).__name__} like {default!r}") from None
    return text


def _check_type(key: str, value, default):
    """Values must have the default's type (ints for ints, finite reals for floats, ...)."""
    if isinstance(default, bool):
        ok = isinstance(value, (bool, np.bool_))
    elif isinstance(default, int):
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if ok and not math.isfinite(float(value)):
            raise ValueError(f"parameter {key}={value!r}: expected a finite number")
    elif isinstance(default, tuple):
        ok = isinstance(value, (tuple, list)) and len(value) > 0 and all(
            isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))
            for x in value)
        value = tuple(value) if ok else value
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        ok = True
    if not ok:
        raise ValueError(f"parameter {key}={value!r}: expected a value of type "
                         f"{type(default).__name__} like {default!r}")
    return value


def resolve_params(defaults: dict, overrides: dict | None, limits: dict | None = None) -> dict:
    """``defaults`` updated by ``overrides`` (strings parsed to the default's type).

    Unknown keys, values of the wrong type and values outside ``limits`` (``{key: (low, high)}``,
    inclusive; a check module's ``LIMITS``, which keep a user's instance small enough to finish)
    raise ``ValueError`` naming the parameter and what was expected.
    """
    params = dict(defaults)
    for key, raw in (overrides or {}).items():
        if key not in defaults:
            raise ValueError(f"unknown parameter {key!r}; expected one of {sorted(defaults)}")
        params[key] = _check_type(key, _parse_value(key, raw, defaults[key]), defaults[key])
    for key, (low, high) in (limits or {}).items():
        val = params[key]
        vals = val if isinstance(val, tuple) else (val,)
        if any(not (low <= x <= high) for x in vals):
            raise ValueError(f"parameter {key}={val!r} is out of range: expected {low} ≤ {key} ≤ {high}")
    return params


def load(claim_id: str):
    """The check module of a claim; :class:`PendingClaim` if it has none yet."""
    claim = get_claim(claim_id)
    try:
        return importlib.import_module(f"{__name__}.{claim.id.lower()}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{claim.id.lower()}":
            raise PendingClaim(f"claim {claim.id} is pending: no check is implemented yet") from None
        raise


def defaults(claim_id: str) -> dict:
    """The default parameters of a claim's check."""
    return dict(load(claim_id).DEFAULTS)


def run_check(claim_id: str, params: dict | None = None, seed: int = 0) -> CheckResult:
    """Run the check of ``claim_id`` on ``DEFAULTS`` updated by ``params`` with root ``seed``."""
    mod = load(claim_id)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    resolved = resolve_params(mod.DEFAULTS, params, getattr(mod, "LIMITS", None))
    try:
        # overflow or an invalid operation anywhere in a check is an error, never a silent NaN
        with np.errstate(over="raise", invalid="raise"):
            result = mod.check(resolved, int(seed))
    except FloatingPointError as exc:
        raise FloatingPointError(f"{mod.__name__.rsplit('.', 1)[-1].upper()}: the instance leaves "
                                 f"float64 range ({exc}); reduce the depth, the weight scales or "
                                 "the step") from None
    if not isinstance(result, CheckResult):
        raise TypeError(f"check of {claim_id} returned {type(result).__name__}, not CheckResult")
    return result
