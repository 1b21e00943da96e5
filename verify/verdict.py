"""The verdict of a claim on one instance: outcomes, exit codes, diagnostics.

A verdict is decided in one place, :meth:`verify.claim.Claim.decide`; this module holds what it
decides (:class:`Verdict`, one :class:`Diagnostic` per hypothesis, part of the conclusion and limit
of the check) and the contract every reader shares: :data:`OUTCOMES`, :data:`EXIT_CODES`,
:data:`SOURCES` and the order of severity (:func:`worst_outcome`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .json_values import jsonable, unjsonable

OUTCOMES = ("holds", "fails", "outside-hypotheses", "undecided", "error")
"""The verdict of a claim on one instance."""

EXIT_CODES = {"holds": 0, "fails": 1, "error": 3, "outside-hypotheses": 4, "undecided": 5}
"""``fastslow check`` exit code per outcome; bad input exits 2."""

BAD_INPUT_EXIT = 2

SOURCES = ("input", "theory", "reference", "implementation")
"""How a hypothesis is decided: from the inputs alone, from ``theory/`` (SymPy), from a reference
written from the formulas (``verify/reference``), or through the implementation under test (then an
independent second measurement must agree)."""

SEVERITY = ("holds", "outside-hypotheses", "undecided", "fails", "error")
"""The outcomes from mildest to worst: the order in which a sweep reports its worst verdict."""


def worst_outcome(outcomes) -> str:
    """The worst of ``outcomes`` (:data:`SEVERITY`); ``ValueError`` when there are none."""
    outcomes = list(outcomes)
    if not outcomes:
        raise ValueError("no outcomes to compare")
    return max(outcomes, key=SEVERITY.index)


def outcome_counts(outcomes) -> dict:
    """``{outcome: count}`` for every outcome of :data:`OUTCOMES`, in that order (zeros kept)."""
    outcomes = list(outcomes)
    return {o: outcomes.count(o) for o in OUTCOMES}


@dataclass(frozen=True)
class Diagnostic:
    """One decided condition: a hypothesis or a part of the conclusion.

    ``holds`` is the decision, ``value`` the measured number (or numbers) it rests on, ``rule`` the
    rule in words (e.g. ``"max |∂out_t/∂X_s|, s > t, = 0 (bitwise)"``).
    """

    holds: bool
    value: Any = None
    rule: str = ""

    @property
    def evaluated(self) -> bool:
        """``False`` for a part the instance's parameters exclude (:func:`not_evaluated`): it
        counts as holding for the outcome and is shown as "not evaluated", never as holding."""
        return not (isinstance(self.value, str) and self.value.startswith(NOT_EVALUATED))

    def shown(self) -> str:
        """``holds``, ``DOES NOT HOLD`` or ``not evaluated``, for a person."""
        if not self.evaluated:
            return NOT_EVALUATED
        return "holds" if self.holds else "DOES NOT HOLD"

    def to_json(self) -> dict:
        return jsonable({"holds": bool(self.holds), "value": self.value, "rule": self.rule})

    @classmethod
    def from_json(cls, data: dict) -> Diagnostic:
        return cls(bool(data["holds"]), unjsonable(data.get("value")), data.get("rule", ""))


NOT_EVALUATED = "not evaluated"
"""How the value of a part that was not evaluated begins (:func:`not_evaluated`)."""


def not_evaluated(why: str) -> Diagnostic:
    """A part that the instance's parameters exclude (``why``: which, and the bound): it holds
    for the outcome (it says nothing against the claim) and its value, beginning with
    :data:`NOT_EVALUATED`, marks it as not evaluated (:attr:`Diagnostic.evaluated`) wherever it
    is shown."""
    text = why if why.startswith(NOT_EVALUATED) else f"{NOT_EVALUATED}: {why}"
    return Diagnostic(True, text, text)


def at_most(value, bound, rule: str) -> Diagnostic:
    """``value ≤ bound`` (a NaN value never holds)."""
    v = float(value)
    return Diagnostic(bool(v <= bound), v, rule)


def at_least(value, bound, rule: str) -> Diagnostic:
    """``value ≥ bound`` (a NaN value never holds)."""
    v = float(value)
    return Diagnostic(bool(v >= bound), v, rule)


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

    def _conclusion_state(self) -> str:
        """The conclusion beside a violated hypothesis, in a few words: not evaluated (with the
        error that stopped it, if any), holds, or the parts that fail."""
        if not self.conclusion:
            err = self.error
            if err:
                return f"conclusion could not be evaluated: {err.get('type')}: {err.get('message')}"
            return "conclusion not computed"
        if self.conclusion_holds:
            return "conclusion holds"
        return "conclusion fails: " + ", ".join(self.failed_parts)

    def reason(self) -> str:
        """One line: why this outcome."""
        if self.outcome == "error":
            err = self.error or {}
            return f"error: {err.get('type')}: {err.get('message')}"
        if self.outcome == "outside-hypotheses":
            why = ", ".join(
                f"{k} ({short(self.hypotheses[k].value)}; {self.hypotheses[k].rule})"
                for k in self.violated
            )
            return f"outside the hypotheses: {why}; {self._conclusion_state()}"
        if self.outcome == "undecided":
            return "the check cannot decide this instance: " + ", ".join(
                f"{k} ({short(self.limits[k].value)}; {self.limits[k].rule})"
                for k in self.unresolved
            )
        if self.outcome == "fails" and self.violated:
            # a hypothesis violated on a declared main instance: a failure of the suite
            # (verify.claim.Claim.suite_faults)
            why = ", ".join(
                f"{k} ({short(self.hypotheses[k].value)}; {self.hypotheses[k].rule})"
                for k in self.violated
            )
            return (
                "failure of the suite: a hypothesis does not hold on a declared main instance "
                f"(built to satisfy it): {why}; {self._conclusion_state()}"
            )
        if self.outcome == "fails" and not self.failed_parts:
            # a part not evaluated on a declared main instance: a failure of the suite
            # (verify.claim.Claim.skipped_on_main)
            shown = {**self.hypotheses, **self.conclusion}
            skipped = [k for k, d in shown.items() if not d.evaluated]
            return (
                "failure of the suite: not evaluated on a declared main instance (which "
                "evaluates every hypothesis and every part): "
                + ", ".join(f"{k} ({short(shown[k].value)})" for k in skipped)
            )
        if self.outcome == "fails":
            return "conclusion fails: " + ", ".join(
                f"{k} ({short(self.conclusion[k].value)}; {self.conclusion[k].rule})"
                for k in self.failed_parts
            )
        skipped = [k for k, d in self.conclusion.items() if not d.evaluated]
        if skipped:
            return f"hypotheses and conclusion hold (not evaluated: {', '.join(skipped)})"
        return "hypotheses and conclusion hold"

    def summary(self) -> str:
        figs = ", ".join(
            f"{k}={short(v)}"
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


def short(v) -> str:
    """A value in a few characters, for one-line reasons."""
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, (list, tuple)) and len(v) <= 4:
        return "[" + ", ".join(short(x) for x in v) + "]"
    if isinstance(v, (list, tuple, dict)):
        return f"<{type(v).__name__} of {len(v)}>"
    return str(v)
