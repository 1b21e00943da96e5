"""A claim as one declarative unit, and the verdict it decides.

A claim module (``verify/checks/<id>.py``) defines one subclass of :class:`Claim` and exposes an
instance of it as ``CLAIM``. The class declares, in one place,

* ``id``, ``title``, ``abstract`` (the abstract's sentence) and ``statement`` (our formal reading);
* ``params``: one :class:`Param` per parameter (default, type, bounds, choices, meaning); the
  command line, the sweeps and the Python API parse and validate through it, and nothing else
  describes a parameter;
* ``hypotheses``: ``{name: meaning}``; :meth:`Claim.diagnose` computes one :class:`Diagnostic` per
  name from the instance alone, *before* the conclusion is computed;
* ``conclusion``: ``{part: meaning}``; :meth:`Claim.conclude` computes one :class:`Diagnostic`
  per part and the measured figures;
* ``controls``: the negative controls, each a named :class:`Control` that says which hypothesis it
  breaks;
* ``key_figures``: the few measured numbers a reader needs (the report and the README show them).

:meth:`Claim.check` is the only place where a verdict is decided (:data:`OUTCOMES`):

* ``holds``: every hypothesis diagnostic holds and every part of the conclusion holds;
* ``fails``: the hypotheses hold and some part of the conclusion does not (a counterexample);
* ``outside-hypotheses``: some hypothesis diagnostic does not hold (the conclusion is still
  computed and reported, so a negative control shows it failing);
* ``undecided``: the hypotheses hold but the check's own numerics cannot decide this instance: a
  declared limit of the check (:attr:`Claim.limits`: integrators disagreeing beyond what their
  tolerances allow, no asymptotic window above the accuracy floor, an accuracy asked for and not
  reached) does not hold. A limit of the check is never a hypothesis and never ``fails``;
* ``error``: the check raised on a valid input (``LinAlgError``, ``FloatingPointError``, a failed
  integration, ...). The exception is part of the verdict; it is never called bad input, and it
  is kept in the verdict whatever the outcome.

Bad input (an unknown parameter, a value of the wrong type or out of bounds, an inconsistent
combination, parameters whose estimated memory or time exceeds the budget) raises ``ValueError``
from :meth:`Claim.resolve` before any work is done.

The tests, the command line (``fastslow check``), the report, the README table and the figures read
the :class:`Verdict` and add no conditions of their own.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

OUTCOMES = ("holds", "fails", "outside-hypotheses", "undecided", "error")
"""The verdict of a claim on one instance."""

EXIT_CODES = {"holds": 0, "fails": 1, "error": 3, "outside-hypotheses": 4, "undecided": 5}
"""``fastslow check`` exit code per outcome; bad input exits 2."""

BAD_INPUT_EXIT = 2

SOURCES = ("input", "theory", "reference", "implementation")
"""How a hypothesis is decided: from the inputs alone, from ``theory/`` (SymPy), from a reference
written from the formulas (``verify/reference``), or through the implementation under test (then an
independent second measurement must agree)."""


class PendingClaim(LookupError):
    """The claim is declared but has no check implemented yet."""


# ----------------------------------------------------------------------------- memory budget

MEMORY_BUDGET_ENV = "FASTSLOW_MEMORY_BUDGET"
"""Environment variable overriding the memory budget: bytes (``8G``, ``512M``, ``1.5GiB``,
``2000000000``) or a share of this machine's memory (``25%``)."""

DEFAULT_BUDGET_SHARE = 0.5
"""The default budget: this share of the machine's physical memory."""

BASE_BYTES = 400 << 20
"""The memory of a check before it allocates anything of its own: the interpreter, NumPy, SciPy,
SymPy, Numba and the compiled kernels (about 300 MiB measured, rounded up)."""

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def machine_memory() -> int:
    """Physical memory of this machine in bytes (0 when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def parse_bytes(text: str, what: str = MEMORY_BUDGET_ENV) -> int:
    """``text`` (``8G``, ``512MiB``, ``123456``, ``25%`` of the machine's memory) in bytes;
    ``ValueError`` naming ``what`` and the value."""
    s = str(text).strip().lower().replace("ib", "").replace("b", "")
    try:
        if s.endswith("%"):
            share = float(s[:-1]) / 100
            if not 0 < share <= 1:
                raise ValueError
            value = share * machine_memory()
        else:
            value = float(s[:-1]) * _UNITS[s[-1]] if s and s[-1] in _UNITS else float(s)
        if not (math.isfinite(value) and value > 0) or "_" in s:
            raise ValueError
    except (ValueError, KeyError, IndexError):
        raise ValueError(
            f"{what}={text!r}: expected a positive size like 8G, 512M, 2000000000 or a share "
            "of this machine's memory like 25%"
        ) from None
    return int(value)


def memory_budget() -> int:
    """The memory one check (or one sweep) may use: :data:`MEMORY_BUDGET_ENV` if set, else
    :data:`DEFAULT_BUDGET_SHARE` of the machine's memory (16 GiB when the machine does not say)."""
    env = os.environ.get(MEMORY_BUDGET_ENV)
    if env:
        return parse_bytes(env)
    total = machine_memory()
    return int(DEFAULT_BUDGET_SHARE * total) if total else 16 << 30


def format_bytes(n: float) -> str:
    """``n`` bytes as ``1.5 GiB`` / ``300 MiB``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1024:.3g} KiB"


def budget_hint() -> str:
    """Where the budget comes from and how to change it, for messages."""
    source = (
        f"{MEMORY_BUDGET_ENV}={os.environ[MEMORY_BUDGET_ENV]}"
        if os.environ.get(MEMORY_BUDGET_ENV)
        else f"{DEFAULT_BUDGET_SHARE:.0%} of this machine's memory"
    )
    return f"{format_bytes(memory_budget())} ({source}; set {MEMORY_BUDGET_ENV} or --memory-budget)"


# ----------------------------------------------------------------------------- time budget

TIME_BUDGET_ENV = "FASTSLOW_TIME_BUDGET"
"""Environment variable overriding the time budget of one check: seconds (``600``, ``90s``,
``10m``, ``1.5h``)."""

DEFAULT_TIME_BUDGET = 600.0
"""The default time budget of one check, in seconds (a sweep applies it to each point)."""

_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_seconds(text: str, what: str = TIME_BUDGET_ENV) -> float:
    """``text`` (``600``, ``90s``, ``10m``, ``1.5h``) in seconds; ``ValueError`` naming ``what``
    and the value."""
    s = str(text).strip().lower()
    try:
        value = float(s[:-1]) * _SECONDS[s[-1]] if s and s[-1] in _SECONDS else float(s)
        if not (math.isfinite(value) and value > 0) or "_" in s:
            raise ValueError
    except (ValueError, KeyError, IndexError):
        raise ValueError(
            f"{what}={text!r}: expected a positive duration like 600, 90s, 10m or 1.5h"
        ) from None
    return value


def time_budget() -> float:
    """The time one check may take, in seconds: :data:`TIME_BUDGET_ENV` if set, else
    :data:`DEFAULT_TIME_BUDGET`."""
    env = os.environ.get(TIME_BUDGET_ENV)
    return parse_seconds(env) if env else DEFAULT_TIME_BUDGET


def time_hint() -> str:
    """Where the time budget comes from and how to change it, for messages."""
    source = (
        f"{TIME_BUDGET_ENV}={os.environ[TIME_BUDGET_ENV]}"
        if os.environ.get(TIME_BUDGET_ENV)
        else "the default"
    )
    return f"{time_budget():.0f} s ({source}; set {TIME_BUDGET_ENV} or --time-budget)"


# ----------------------------------------------------------------------------- JSON helpers


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


# ----------------------------------------------------------------------------- parameters

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

    @classmethod
    def positive(cls, default: float, meaning: str, high: float = 1.0) -> Param:
        """A float in ``(0, high]``: the usual declaration of a step size or a tolerance."""
        return cls(default, meaning, low=0.0, high=high, open_low=True)

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
            lo = "(" if self.open_low else "["
            hi = ")" if self.open_high else "]"
            parts.append(
                f"in {lo}{'-inf' if self.low is None else self.low}, "
                f"{'inf' if self.high is None else self.high}{hi}"
            )
        if self.kind.startswith("tuple"):
            parts.append(
                f"length ≥ {self.min_len}" + (f" and ≤ {self.max_len}" if self.max_len else "")
            )
        default = (
            ",".join(map(str, self.default)) if isinstance(self.default, tuple) else self.default
        )
        return f"{' '.join(parts)}; default {default}"

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
                raise bad()
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


# ----------------------------------------------------------------------------- diagnostics


@dataclass(frozen=True)
class Diagnostic:
    """One decided condition: a hypothesis or a part of the conclusion.

    ``holds`` is the decision, ``value`` the measured number (or numbers) it rests on, ``rule`` the
    rule in words (e.g. ``"max |∂out_t/∂X_s|, s > t, = 0 (bitwise)"``).
    """

    holds: bool
    value: Any = None
    rule: str = ""

    def to_json(self) -> dict:
        return jsonable({"holds": bool(self.holds), "value": self.value, "rule": self.rule})

    @classmethod
    def from_json(cls, data: dict) -> Diagnostic:
        return cls(bool(data["holds"]), unjsonable(data.get("value")), data.get("rule", ""))


def at_most(value, bound, rule: str) -> Diagnostic:
    """``value ≤ bound`` (a NaN value never holds)."""
    v = float(value)
    return Diagnostic(bool(v <= bound), v, rule)


def at_least(value, bound, rule: str) -> Diagnostic:
    """``value ≥ bound`` (a NaN value never holds)."""
    v = float(value)
    return Diagnostic(bool(v >= bound), v, rule)


def within(value, centre, tol, rule: str) -> Diagnostic:
    """``|value − centre| ≤ tol`` (a NaN value never holds)."""
    v = float(value)
    return Diagnostic(bool(abs(v - centre) <= tol), v, rule)


@dataclass
class Conclusion:
    """What :meth:`Claim.conclude` returns: the decided parts and the measured numbers.

    ``figures`` are the measured numbers the report shows; ``series`` the arrays (JSON-able lists)
    that the claim's figures draw, so that a figure never rebuilds the instance. Series stay out of
    the report.
    """

    parts: dict
    figures: dict
    tolerance: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    series: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    """``{limit: Diagnostic}`` for the claim's declared :attr:`Claim.limits` (the check's own
    numerics); one that does not hold makes the outcome ``undecided``."""


@dataclass(frozen=True)
class Control:
    """A negative control: parameters (and optionally a seed) that break one named hypothesis.

    It *fails as predicted* when the claim's own hypothesis diagnostics find ``breaks`` violated
    (outcome ``outside-hypotheses``) and the conclusion measurably fails on it.
    """

    name: str
    params: Mapping
    breaks: str
    meaning: str
    seed: int | None = None


def control_table(rows, seed: int | None = None) -> tuple[Control, ...]:
    """Negative controls from rows ``(name, params, breaks, meaning)``, all with the same ``seed``."""
    return tuple(
        Control(name, params, breaks=breaks, meaning=meaning, seed=seed)
        for name, params, breaks, meaning in rows
    )


# ----------------------------------------------------------------------------- the verdict


@dataclass
class Verdict:
    """The verdict of one claim on one instance (see :data:`OUTCOMES`).

    Attributes:
        id: the claim ID.
        outcome: ``holds`` / ``fails`` / ``outside-hypotheses`` / ``undecided`` / ``error``.
        hypotheses: ``{name: Diagnostic}``, computed before the conclusion.
        conclusion: ``{part: Diagnostic}`` (empty when the check raised first).
        limits: ``{limit: Diagnostic}``: the check's own numerics (empty when the claim declares
            none or the check raised first).
        figures: the measured numbers.
        params: the resolved parameters; ``seed`` the root seed; ``control`` the negative control's
            name when the instance is one.
        tolerance: the tolerances used, in the units their keys state.
        error: ``{"type", "message"}`` whenever the check raised (outcome ``error``, or
            ``outside-hypotheses`` when a hypothesis was already violated; then ``conclusion``
            is empty). An exception is never dropped.
        series: the arrays the claim's figures draw (not part of the report).
        system: the description of the user system the instance was built from, if any
            (:mod:`verify.systems`); ``None`` for the claim's built-in instances.
    """

    id: str
    outcome: str
    hypotheses: dict
    conclusion: dict
    figures: dict
    params: dict
    seed: int
    control: str | None = None
    tolerance: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    error: dict | None = None
    series: dict = field(default_factory=dict)
    system: dict | None = None
    limits: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    """``{hypothesis: source}`` (:data:`SOURCES`): how each hypothesis was decided."""

    @property
    def holds(self) -> bool:
        """The outcome is ``holds``."""
        return self.outcome == "holds"

    @property
    def hypotheses_hold(self) -> bool:
        return bool(self.hypotheses) and all(d.holds for d in self.hypotheses.values())

    @property
    def conclusion_holds(self) -> bool:
        return bool(self.conclusion) and all(d.holds for d in self.conclusion.values())

    @property
    def violated(self) -> list[str]:
        """The hypotheses that do not hold."""
        return [k for k, d in self.hypotheses.items() if not d.holds]

    @property
    def failed_parts(self) -> list[str]:
        """The parts of the conclusion that do not hold."""
        return [k for k, d in self.conclusion.items() if not d.holds]

    @property
    def unresolved(self) -> list[str]:
        """The limits of the check that do not hold (why the outcome is ``undecided``)."""
        return [k for k, d in self.limits.items() if not d.holds]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def reason(self) -> str:
        """One line: why this outcome."""
        if self.outcome == "error":
            err = self.error or {}
            return f"error: {err.get('type')}: {err.get('message')}"
        if self.outcome == "outside-hypotheses":
            why = ", ".join(
                f"{k} ({_short(self.hypotheses[k].value)}; {self.hypotheses[k].rule})"
                for k in self.violated
            )
            if self.error and not self.conclusion:
                err = self.error
                tail = (
                    f"; conclusion could not be evaluated: {err.get('type')}: {err.get('message')}"
                )
            else:
                tail = "; conclusion " + (
                    "holds" if self.conclusion_holds else "fails: " + ", ".join(self.failed_parts)
                )
            return f"outside the hypotheses: {why}{tail}"
        if self.outcome == "undecided":
            return "the check cannot decide this instance: " + ", ".join(
                f"{k} ({_short(self.limits[k].value)}; {self.limits[k].rule})"
                for k in self.unresolved
            )
        if self.outcome == "fails":
            return "conclusion fails: " + ", ".join(
                f"{k} ({_short(self.conclusion[k].value)}; {self.conclusion[k].rule})"
                for k in self.failed_parts
            )
        return "hypotheses and conclusion hold"

    def summary(self) -> str:
        figs = ", ".join(
            f"{k}={_short(v)}"
            for k, v in list(self.figures.items())[:6]
            if not isinstance(v, (dict, list))
        )
        ctl = f" control={self.control}" if self.control else ""
        return f"{self.id}: {self.outcome}{ctl} seed={self.seed}: {self.reason()} [{figs}]"

    def to_json(self) -> dict:
        return jsonable(
            {
                "id": self.id,
                "verdict": self.outcome,
                "holds": self.holds,
                "hypotheses_hold": self.hypotheses_hold,
                "conclusion_holds": self.conclusion_holds,
                "hypotheses": {
                    k: {**d.to_json(), **({"source": self.sources[k]} if k in self.sources else {})}
                    for k, d in self.hypotheses.items()
                },
                "conclusion": {k: d.to_json() for k, d in self.conclusion.items()},
                "limits": {k: d.to_json() for k, d in self.limits.items()},
                "reason": self.reason(),
                "figures": self.figures,
                "params": self.params,
                "seed": self.seed,
                "control": self.control,
                "tolerance": self.tolerance,
                "notes": self.notes,
                "error": self.error,
                "series": self.series,
                **({"system": self.system} if self.system is not None else {}),
            }
        )

    @classmethod
    def from_json(cls, data: dict) -> Verdict:
        return cls(
            id=data["id"],
            outcome=data["verdict"],
            hypotheses={k: Diagnostic.from_json(v) for k, v in data["hypotheses"].items()},
            conclusion={k: Diagnostic.from_json(v) for k, v in data["conclusion"].items()},
            figures=unjsonable(data["figures"]),
            params=data["params"],
            seed=data["seed"],
            control=data.get("control"),
            tolerance=unjsonable(data.get("tolerance", {})),
            notes=list(data.get("notes", [])),
            error=data.get("error"),
            series=unjsonable(data.get("series", {})),
            system=data.get("system"),
            limits={k: Diagnostic.from_json(v) for k, v in data.get("limits", {}).items()},
            sources={k: v["source"] for k, v in data["hypotheses"].items() if "source" in v},
        )


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, (list, tuple)) and len(v) <= 4:
        return "[" + ", ".join(_short(x) for x in v) + "]"
    if isinstance(v, (list, tuple, dict)):
        return f"<{type(v).__name__} of {len(v)}>"
    return str(v)


# ----------------------------------------------------------------------------- the claim


class Claim:
    """Base class of a claim unit; see the module docstring.

    Subclasses set the class attributes and implement :meth:`build` (the seeded instance),
    :meth:`diagnose` (the hypotheses) and :meth:`conclude` (the conclusion and the figures), and may
    override :meth:`validate` for conditions between parameters. A claim without a check (pending)
    leaves ``implemented = False``.
    """

    id: ClassVar[str]
    title: ClassVar[str]
    abstract: ClassVar[str]
    statement: ClassVar[str]
    params: ClassVar[Mapping[str, Param]] = {}
    hypotheses: ClassVar[Mapping[str, str]] = {}
    hypothesis_sources: ClassVar[Mapping[str, str]] = {}
    """``{hypothesis: source}``, one of :data:`SOURCES` per hypothesis."""
    conclusion: ClassVar[Mapping[str, str]] = {}
    limits: ClassVar[Mapping[str, str]] = {}
    """``{limit: meaning}``: the conditions under which the check's own numerics can decide an
    instance (not hypotheses of the statement); :meth:`conclude` returns one
    :class:`Diagnostic` per limit in ``Conclusion.limits``."""
    controls: ClassVar[tuple[Control, ...]] = ()
    key_figures: ClassVar[tuple[str, ...]] = ()
    implemented: ClassVar[bool] = True
    systems: ClassVar[tuple[type, ...]] = ()
    """The kinds of user system (:mod:`verify.systems`) this claim can be checked on; for each,
    :meth:`build_system` builds the instance from one. Empty: built-in instances only."""
    failure_rate: ClassVar[float] = 0.0
    """For a statistical conclusion (a confidence interval, a z-score): the probability that it
    fails by sampling alone on an instance that satisfies the hypotheses; 0 for deterministic
    claims. Seed sweeps allow that many failures (and no more, up to binomial noise)."""

    system_replaces: ClassVar[tuple[str, ...]] = ()
    """Parameters a user system supersedes for this claim beyond its kind's own
    (``System.replaces``); see :meth:`replaced_by`."""

    instance: ClassVar[Any] = None
    """The class of the claim's instance, called as ``instance(p, seed)`` by the default
    :meth:`build`."""

    # -- to implement -------------------------------------------------------------------------
    def build(self, p: dict, seed: int):
        """The seeded instance of the resolved parameters ``p`` (default: ``instance(p, seed)``)."""
        if self.instance is None:
            raise NotImplementedError(f"{type(self).__name__} sets no instance class")
        return self.instance(p, seed)

    def build_system(self, p: dict, seed: int, system):
        """The instance of a user ``system`` (one of :attr:`systems`) with parameters ``p``."""
        raise NotImplementedError

    def diagnose(self, inst) -> dict:
        """``{hypothesis: Diagnostic}`` from the instance alone (never from the conclusion)."""
        raise NotImplementedError

    def conclude(self, inst) -> Conclusion:
        """The conclusion's parts and the measured figures."""
        raise NotImplementedError

    def validate(self, p: dict) -> None:
        """Conditions between parameters; ``ValueError`` naming the value if violated. (That the
        block size ``P`` divides ``T`` is checked for every claim with both parameters.)"""

    def memory_bytes(self, p: dict) -> int:
        """Estimated peak memory in bytes of one check on the resolved parameters ``p``, beyond
        :data:`BASE_BYTES`; computed from the parameters alone, before anything is allocated.

        The generic estimate counts 16 float64 arrays of ``T × T × d`` (attention weights and their
        tangents) when the claim has ``T`` and ``d``, else nothing. A claim whose memory grows with
        other parameters (samples, grids, sequences) overrides it; the estimate should be an upper
        bound within a factor of about 2 (tests measure it)."""
        if "T" in p and "d" in p:
            return 16 * 8 * int(p["T"]) ** 2 * int(p["d"])
        return 0

    def within_budget(self, p: dict) -> int:
        """The estimated peak memory of ``p`` (:meth:`memory_bytes` + :data:`BASE_BYTES`);
        ``ValueError`` naming the parameters when it exceeds :func:`memory_budget`."""
        need = BASE_BYTES + int(self.memory_bytes(p))
        if need > memory_budget():
            raise ValueError(
                f"{self.id} with {self._changed(p) or 'its default parameters'} needs about "
                f"{format_bytes(need)} of memory (estimated from the parameters), beyond the "
                f"memory budget of {budget_hint()}"
            )
        return need

    def seconds_estimate(self, p: dict) -> float:
        """Estimated wall time in seconds of one check on the resolved parameters ``p`` (one core,
        compiled kernels warm), computed from the parameters alone, before any work.

        The generic estimate is 0: the claim declares no cost model, and its time is taken not to
        grow past the budget within its parameter bounds. A claim whose time grows with its
        parameters (training steps, grids, sizes, ladders) overrides it with an upper bound
        (tests check it at a few small points; at the limits it is measured and documented in the
        claim's module)."""
        return 0.0

    def within_time_budget(self, p: dict) -> float:
        """:meth:`seconds_estimate` of ``p``; ``ValueError`` naming the parameters when it
        exceeds :func:`time_budget`."""
        need = float(self.seconds_estimate(p))
        if need > time_budget():
            raise ValueError(
                f"{self.id} with {self._changed(p) or 'its default parameters'} would take about "
                f"{need:.3g} s (estimated from the parameters), beyond the time budget of "
                f"{time_hint()}"
            )
        return need

    def _changed(self, p: dict) -> str:
        """The parameters of ``p`` that differ from the defaults, for messages."""
        return ", ".join(f"{k}={_short(v)}" for k, v in p.items() if v != self.params[k].default)

    # -- provided -----------------------------------------------------------------------------
    def defaults(self) -> dict:
        return {k: spec.default for k, spec in self.params.items()}

    def control(self, name: str) -> Control:
        """The negative control called ``name``; ``ValueError`` naming the known ones."""
        for c in self.controls:
            if c.name == name:
                return c
        known = ", ".join(c.name for c in self.controls) or "none"
        raise ValueError(f"{self.id} has no negative control {name!r}; expected one of: {known}")

    def resolve(self, overrides: Mapping | None = None) -> dict:
        """The defaults updated by ``overrides`` (strings parsed), validated: ``ValueError``
        naming the parameter and what was expected."""
        if not self.implemented:
            raise PendingClaim(f"claim {self.id} is pending: no check is implemented yet")
        p = self.defaults()
        for key, raw in (overrides or {}).items():
            if key not in self.params:
                raise ValueError(
                    f"unknown parameter {key!r} of {self.id}; expected one of "
                    f"{', '.join(self.params)}"
                )
            p[key] = self.params[key].parse(key, raw)
        if "T" in p and "P" in p and p["T"] % p["P"]:  # T tokens in blocks of P
            raise ValueError(f"parameter P={p['P']} must divide T={p['T']}")
        self.validate(p)
        self.within_budget(p)
        self.within_time_budget(p)
        return p

    def accepts(self, system) -> None:
        """``ValueError`` naming the kinds this claim checks unless ``system`` is one of them."""
        if not isinstance(system, self.systems):
            kinds = ", ".join(k.__name__ for k in self.systems) or "only its built-in instances"
            raise ValueError(
                f"{self.id} cannot be checked on a {type(system).__name__}; it checks: {kinds}"
            )

    def check(
        self,
        params: Mapping | None = None,
        seed: int | None = None,
        *,
        control: str | None = None,
        system=None,
    ) -> Verdict:
        """Decide the verdict on one instance (the only place where a verdict is decided).

        ``seed`` defaults to 0 (or to the control's own seed). ``control`` names a negative
        control: its parameters are the base and ``params`` override them. ``system`` is a user
        system (:mod:`verify.systems`, one of :attr:`systems`) to build the instance from instead
        of the built-in one. Bad input raises ``ValueError`` (or :class:`PendingClaim`) before any
        work is done.
        """
        overrides = dict(params or {})
        if system is not None:
            dropped = [k for k in overrides if k in self.replaced_by(system)]
            if dropped:
                raise ValueError(
                    f"parameter {dropped[0]} is set by your system ({type(system).__name__}); "
                    "drop it"
                )
        if control is not None:
            ctl = self.control(control)
            overrides = {**ctl.params, **overrides}
            if seed is None:
                seed = ctl.seed
        if seed is None:
            seed = 0
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        seed = int(seed)
        p = self.resolve(overrides)
        if system is not None:
            self.accepts(system)
            if control is not None:
                raise ValueError(
                    "a negative control is a built-in instance: give control or system"
                )
        return self.decide(p, seed, control, system)

    def replaced_by(self, system) -> tuple[str, ...]:
        """The parameters of this claim that ``system`` supersedes (they build only the built-in
        instance): its kind's ``replaces`` and the claim's :attr:`system_replaces`, among the
        claim's parameters. Giving one together with a system is bad input, and a verdict on a
        system omits them. Empty without a system."""
        if system is None:
            return ()
        names = set(getattr(system, "replaces", ())) | set(self.system_replaces)
        return tuple(k for k in self.params if k in names)

    def decide(self, p: dict, seed: int, control: str | None = None, system=None) -> Verdict:
        """The verdict on the resolved, validated parameters ``p`` (the work of :meth:`check`,
        after its input checks): build, diagnose, conclude; an exception is outcome ``error``."""
        described = None if system is None else jsonable(system.describe())
        replaced = self.replaced_by(system)
        shown = {k: v for k, v in p.items() if k not in replaced}
        hyps: dict = {}
        try:
            # overflow or an invalid operation anywhere in a check is an error, never a silent NaN
            with np.errstate(over="raise", invalid="raise"):
                inst = self.build(p, seed) if system is None else self.build_system(p, seed, system)
                hyps = self._named(self.diagnose(inst), self.hypotheses, "hypothesis", "hypotheses")
                concl = self.conclude(inst)
                parts = self._named(concl.parts, self.conclusion, "conclusion part")
                limits = self._named(concl.limits, self.limits, "limit")
        except (KeyboardInterrupt, SystemExit, PendingClaim):
            raise
        except Exception as exc:  # a valid input the check could not decide: outcome "error"
            error = {"type": type(exc).__name__, "message": str(exc) or repr(exc)}
            outside = bool(hyps) and not all(d.holds for d in hyps.values())
            # the hypotheses already say the claim does not apply: the outcome is theirs, and the
            # conclusion's exception is kept in the verdict (never dropped)
            notes = (
                [
                    f"the conclusion could not be evaluated outside the hypotheses: {error['type']}: "
                    f"{error['message']}"
                ]
                if outside
                else []
            )
            return Verdict(
                self.id,
                "outside-hypotheses" if outside else "error",
                hyps,
                {},
                {},
                shown,
                seed,
                control,
                notes=notes,
                error=error,
                system=described,
                sources=self._sources(hyps),
            )
        if not all(d.holds for d in hyps.values()):
            outcome = "outside-hypotheses"
        elif not all(d.holds for d in limits.values()):
            outcome = "undecided"
        elif all(d.holds for d in parts.values()):
            outcome = "holds"
        else:
            outcome = "fails"
        return Verdict(
            self.id,
            outcome,
            hyps,
            parts,
            concl.figures,
            shown,
            seed,
            control,
            tolerance=concl.tolerance,
            notes=list(concl.notes),
            series=concl.series,
            system=described,
            limits=limits,
            sources=self._sources(hyps),
        )

    def _sources(self, hyps: Mapping) -> dict:
        """``{hypothesis: source}`` for the hypotheses computed, as the claim declares them."""
        return {k: self.hypothesis_sources[k] for k in hyps if k in self.hypothesis_sources}

    def _named(self, found: Mapping, declared: Mapping, what: str, plural: str = "") -> dict:
        if not isinstance(found, Mapping) or set(found) != set(declared):
            raise TypeError(
                f"{self.id}: the {plural or what + 's'} computed ({sorted(found)}) are not the "
                f"ones declared ({sorted(declared)})"
            )
        out = {}
        for k in declared:
            d = found[k]
            if not isinstance(d, Diagnostic):
                raise TypeError(
                    f"{self.id}: {what} {k!r} is a {type(d).__name__}, not a Diagnostic"
                )
            out[k] = Diagnostic(bool(d.holds), d.value, d.rule)
        return out

    def fails_as_predicted(self, verdict: Verdict) -> bool:
        """A negative control's verdict is as predicted: its own hypothesis diagnostics find the
        control's hypothesis broken, and the conclusion fails."""
        if verdict.control is None:
            raise ValueError("not a negative control's verdict")
        ctl = self.control(verdict.control)
        return (
            verdict.outcome == "outside-hypotheses"
            and ctl.breaks in verdict.violated
            and not verdict.conclusion_holds
        )

    def describe(self) -> str:
        """The claim, its parameters, hypotheses, conclusion and controls, for ``--help`` texts."""
        lines = [f"{self.id} {self.title}: {self.statement}", "", "parameters:"]
        lines += [f"  {k}: {s.meaning} ({s.describe()})" for k, s in self.params.items()]
        lines += ["hypotheses:"] + [f"  {k}: {m}" for k, m in self.hypotheses.items()]
        lines += ["conclusion:"] + [f"  {k}: {m}" for k, m in self.conclusion.items()]
        lines += ["negative controls:"] + [
            f"  {c.name}: {c.meaning} (breaks {c.breaks}; "
            + ", ".join(f"{k}={v}" for k, v in c.params.items())
            + ")"
            for c in self.controls
        ]
        return "\n".join(lines)
