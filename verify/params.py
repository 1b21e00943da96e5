"""A parameter of a claim's check: its default, type, bounds and meaning, parsed and validated.

The command line, the sweeps and the Python API parse and validate parameters through
:class:`Param`, and nothing else describes a parameter.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .suggest import did_you_mean

_KINDS = {bool: "bool", int: "int", float: "float", str: "str"}


@dataclass(frozen=True)
class Param:
    """One parameter of a claim's check.

    The default fixes the type: ``bool``, ``int``, ``float``, ``str``, or a non-empty tuple of
    ints or floats (written ``1e-3,1e-1`` on the command line). ``low``/``high`` bound the value
    (every element of a tuple), inclusive unless ``open_low``/``open_high``; ``choices`` lists the
    allowed strings; ``min_len``/``max_len`` bound a tuple's length.
    """

    default: Any
    meaning: str
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    open_low: bool = False
    open_high: bool = False
    min_len: int = 1
    max_len: int | None = None

    @property
    def kind(self) -> str:
        """``bool``, ``int``, ``float``, ``str``, ``tuple[int]`` or ``tuple[float]``."""
        if isinstance(self.default, tuple):
            inner = (
                int
                if self.default
                and all(isinstance(x, int) and not isinstance(x, bool) for x in self.default)
                else float
            )
            return f"tuple[{_KINDS[inner]}]"
        return _KINDS[type(self.default)]

    def describe(self) -> str:
        """One line: type, allowed values, default."""
        parts = [self.kind]
        if self.choices is not None:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.low is not None or self.high is not None:
            parts.append(f"in {self.interval()}")
        if self.kind.startswith("tuple"):
            parts.append(
                f"length ≥ {self.min_len}" + (f" and ≤ {self.max_len}" if self.max_len else "")
            )
        default = (
            ",".join(map(str, self.default)) if isinstance(self.default, tuple) else self.default
        )
        return f"{' '.join(parts)}; default {default}"

    def interval(self) -> str:
        """The accepted values of a bounded number as an interval, exactly as :meth:`validate`
        decides: ``[`` and ``]`` for an endpoint that is accepted, ``(`` and ``)`` for one that is
        not; a missing bound is ``-inf`` or ``inf``, always open (non-finite values are refused)."""
        lo = "(-inf" if self.low is None else f"{'(' if self.open_low else '['}{self.low}"
        hi = "inf)" if self.high is None else f"{self.high}{')' if self.open_high else ']'}"
        return f"{lo}, {hi}"

    def parse(self, name: str, raw):
        """``raw`` (a command-line string, or already a value) as a value of this parameter's type,
        validated; ``ValueError`` naming the parameter, the value and what was expected."""
        if isinstance(raw, str) and self.kind != "str":
            raw = self._from_text(name, raw)
        return self.validate(name, raw)

    def _from_text(self, name: str, text: str):
        s = text.strip()
        try:
            if self.kind != "bool" and (not s.isascii() or "_" in s):
                raise ValueError  # int("1_6") == 16 and int("١٦") == 16: never what was meant
            if self.kind == "bool":
                low = s.lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            if self.kind == "int":
                return int(s)
            if self.kind == "float":
                return float(s)
            inner = int if self.kind == "tuple[int]" else float
            return tuple(inner(x) for x in s.split(",") if x.strip())
        except ValueError:
            raise ValueError(f"parameter {name}={text!r}: expected {self.describe()}") from None

    def validate(self, name: str, value):
        """``value`` if it has the right type and lies in bounds, else ``ValueError``."""
        kind = self.kind

        def bad(what: str = ""):
            return ValueError(f"parameter {name}={value!r}: expected {what or self.describe()}")

        def real(x, integral: bool):
            if isinstance(x, (bool, np.bool_)):
                raise bad()
            if integral:
                if not isinstance(x, numbers.Integral):
                    raise bad()
                return int(x)
            if not isinstance(x, numbers.Real):
                raise bad()
            x = float(x)
            if not math.isfinite(x):
                raise bad("a finite number; " + self.describe())
            return x

        if kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise bad()
            return bool(value)
        if kind == "str":
            if not isinstance(value, str):
                raise bad()
            if self.choices is not None and value not in self.choices:
                raise bad(self.describe() + did_you_mean(value, map(str, self.choices)))
            return value
        if kind in ("int", "float"):
            values = (real(value, kind == "int"),)
            out = values[0]
        else:
            if not isinstance(value, (tuple, list)):
                raise bad()
            values = tuple(real(x, kind == "tuple[int]") for x in value)
            if len(values) < self.min_len or (
                self.max_len is not None and len(values) > self.max_len
            ):
                raise bad()
            out = values
        for x in values:
            if self.low is not None and (x < self.low or (self.open_low and x == self.low)):
                raise bad()
            if self.high is not None and (x > self.high or (self.open_high and x == self.high)):
                raise bad()
        if self.choices is not None and any(x not in self.choices for x in values):
            raise bad()
        return out


@dataclass(frozen=True)
class Order:
    """An order between parameters that is known before any work: the values of ``names`` (a
    tuple-valued parameter contributes its elements in turn) must be non-decreasing, or strictly
    increasing when ``strict``. ``why`` says what breaks otherwise.

    Every claim declares its orders in :attr:`verify.claim.Claim.orders`; :meth:`Claim.resolve`
    checks them after each parameter is parsed, so a violated order is bad input before any work.
    """

    names: tuple[str, ...]
    why: str
    strict: bool = True

    def describe(self) -> str:
        """The order in words: ``y_min ≤ y0 ≤ y_max (why)`` or ``steps strictly increasing``."""
        if len(self.names) == 1:
            how = "strictly increasing" if self.strict else "non-decreasing"
            return f"{self.names[0]} {how} ({self.why})"
        return (" < " if self.strict else " ≤ ").join(self.names) + f" ({self.why})"

    def check(self, p) -> None:
        """``ValueError`` naming the parameters, their values and the order expected."""
        values = [x for k in self.names for x in (p[k] if isinstance(p[k], tuple) else (p[k],))]
        ok = all((a < b) if self.strict else (a <= b) for a, b in zip(values, values[1:]))
        if ok:
            return
        rel = " < " if self.strict else " ≤ "
        if len(self.names) == 1:
            k = self.names[0]
            given = f"parameter {k}={','.join(map(str, p[k]))}"
            expected = "strictly increasing values" if self.strict else "non-decreasing values"
        else:
            given = "parameters " + ", ".join(f"{k}={p[k]}" for k in self.names)
            expected = rel.join(self.names)
        raise ValueError(f"{given}: expected {expected} ({self.why})")
