"""A claim as one declarative unit, and the verdict it decides.

A claim unit (``verify/checks/<id>.py``, or ``claim.py`` of the package ``verify/checks/<id>/``)
defines one subclass of :class:`Claim` and exposes an instance of it as ``CLAIM``. The class declares, in one place,

* ``id``, ``title``, ``abstract`` (the abstract's sentence) and ``statement`` (our formal reading);
* ``params``: one :class:`Param` per parameter (default, type, bounds, choices, meaning); the
  command line, the sweeps and the Python API parse and validate through it, and nothing else
  describes a parameter;
* ``hypotheses``: ``{name: meaning}``; :meth:`Claim.diagnose` computes one
  :class:`~verify.verdict.Diagnostic` per name from the instance alone, *before* the conclusion is
  computed; ``hypothesis_sources`` says how each is decided (:data:`~verify.verdict.SOURCES`);
* ``conclusion``: ``{part: meaning}``; :meth:`Claim.conclude` computes one :class:`Diagnostic`
  per part and the measured figures;
* ``controls``: the negative controls, each a named :class:`Control` that says which hypothesis it
  breaks;
* ``limits``: ``{name: meaning}``, the conditions under which the check's own numerics can decide
  an instance (returned by :meth:`Claim.conclude` in ``Conclusion.limits``);
* ``main_instances``: the instances the claim declares as its own, built to satisfy the hypotheses;
* ``key_figures``: the few measured numbers a reader needs (the report and the README show them).

:meth:`Claim.check` is the only place where a verdict is decided
(:data:`~verify.verdict.OUTCOMES`):

* ``holds``: every hypothesis diagnostic holds and every part of the conclusion holds;
* ``fails``: the hypotheses hold and some part of the conclusion does not (a counterexample);
* ``outside-hypotheses``: some hypothesis diagnostic does not hold (the conclusion is still
  computed and reported, so a negative control shows it failing). Except on a declared main
  instance, which is built to satisfy its hypotheses: there a violated hypothesis is a failure of
  the suite, and the outcome is ``fails`` with the hypothesis named (:meth:`Claim.suite_faults`:
  whatever its source at the main seeds, :attr:`Claim.main_seeds`; one measured through the
  implementation at any seed). User systems, user parameters and negative controls keep
  ``outside-hypotheses``. Likewise a hypothesis or a part of the conclusion not evaluated on a
  main instance (:meth:`Claim.skipped_on_main`) makes it ``fails``;
* ``undecided``: the hypotheses hold but the check's own numerics cannot decide this instance: a
  declared limit of the check (:attr:`Claim.limits`: integrators disagreeing beyond what their
  tolerances allow, no asymptotic window above the accuracy floor, an accuracy asked for and not
  reached) does not hold. A limit of the check is never a hypothesis and never ``fails``, and it
  hides only the parts of the conclusion it governs (:attr:`Claim.limit_governs`): any other
  part that fails is decided (``fails``) whatever the limits say;
* ``error``: the check raised on a valid input (``LinAlgError``, ``FloatingPointError``, a failed
  integration, ...). The exception is part of the verdict; it is never called bad input, and it
  is kept in the verdict whatever the outcome.

Bad input (an unknown parameter, a value of the wrong type or out of bounds, an inconsistent
combination, parameters whose estimated memory or time exceeds the budget) raises ``ValueError``
from :meth:`Claim.resolve` before any work is done.

The tests, the command line (``fastslow check``), the report, the README table and the figures read
the :class:`~verify.verdict.Verdict` and add no conditions of their own. The judgements that read
verdicts live here too: a claim's status in the report (:meth:`Claim.status`), the failures a seed
sweep allows and what fails it (:meth:`Claim.allowed_failures`, :meth:`Claim.sweep_faults`), and
which user systems a claim checks (:meth:`Claim.accepts`). The parameters are in
:mod:`verify.params`, the budgets in :mod:`verify.budgets`, the seconds per unit of a claim's
counted work (:meth:`Claim.work`) in :mod:`verify.cost_model`, the verdict in :mod:`verify.verdict`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from . import claim_text
from .budgets import BASE_BYTES, budget_hint, format_bytes, memory_budget, time_budget, time_hint
from .cost_model import seconds
from .json_values import jsonable
from .params import Order, Param
from .registry import claims_for
from .suggest import did_you_mean
from .verdict import Diagnostic, Verdict, short


class PendingClaim(LookupError):
    """The claim is declared but has no check implemented yet."""


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


class Claim:
    """Base class of a claim unit; see the module docstring.

    Subclasses set the class attributes and implement :meth:`build` (the seeded instance),
    :meth:`diagnose` (the hypotheses) and :meth:`conclude` (the conclusion and the figures), and may
    declare :attr:`orders` between parameters and override :meth:`validate` for other conditions
    between them. A claim without a check (pending)
    leaves ``implemented = False``.
    """

    id: ClassVar[str]
    title: ClassVar[str]
    abstract: ClassVar[str]
    statement: ClassVar[str]
    params: ClassVar[Mapping[str, Param]] = {}
    hypotheses: ClassVar[Mapping[str, str]] = {}
    hypothesis_sources: ClassVar[Mapping[str, str]] = {}
    """``{hypothesis: source}``, one of :data:`~verify.verdict.SOURCES` per hypothesis: how it is
    decided (from the inputs, from ``theory/``, from a reference written from the formulas, or
    through the implementation under test). A hypothesis violated on a declared main instance is
    a failure of the suite (:meth:`suite_faults`)."""
    conclusion: ClassVar[Mapping[str, str]] = {}
    limits: ClassVar[Mapping[str, str]] = {}
    """``{limit: meaning}``: the conditions under which the check's own numerics can decide an
    instance (not hypotheses of the statement); :meth:`conclude` returns one
    :class:`Diagnostic` per limit in ``Conclusion.limits``."""
    limit_governs: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """``{limit: (part, …)}``: the parts of the conclusion that a limit of the check governs, i.e.
    that cannot be decided when the limit does not hold (a rate part when no asymptotic window is
    resolvable, a comparison with a finite difference below its rounding). Only those may fail
    behind a limit that does not hold (outcome ``undecided``); any other part that fails decides
    the verdict (``fails``) whatever the limits say (:meth:`decide`)."""
    orders: ClassVar[tuple[Order, ...]] = ()
    """Orders between parameters known before any work (``y_min ≤ y0 ≤ y_max``, ``s_min <
    s_max``, a strictly increasing tuple), checked by :meth:`resolve`: a violated one is bad input.
    Conditions that are not orders go to :meth:`validate`."""
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

    declared_hypotheses: ClassVar[Mapping[str, Any]] = {}
    """``{hypothesis: function(system) -> Diagnostic}``: hypotheses a user system's declaration
    decides (its masks, its gates), decided before its size limits (:meth:`limits_or_outside`)."""
    system_terms: ClassVar[Mapping[str, str]] = {}
    """``{kind: text}``: what the claim's hypotheses ask of each kind of user system it checks,
    in that kind's own fields and values (``DepthFlow``: ``gate=0``, ``gamma > 0``, ``norm=False``
    ...; ``LinearLoop``: ``ρ(J) < 1`` ...), shown by ``fastslow claims`` and ``--describe``."""

    system_replaces: ClassVar[tuple[str, ...]] = ()
    """Parameters a user system supersedes for this claim beyond its kind's own
    (``System.replaces``); see :meth:`replaced_by`."""

    main_instances: ClassVar[tuple[Mapping, ...]] = ({},)
    """The claim's declared main instances, as overrides of the defaults (``{}``: the defaults),
    each on every seed: instances built to satisfy the hypotheses. On them a hypothesis measured
    through the implementation that does not hold is a failure of the suite (outcome ``fails``),
    never ``outside-hypotheses``; at the :attr:`main_seeds` so is a hypothesis of any source."""

    main_seeds: ClassVar[tuple[int, ...]] = (0,)
    """The seeds at which the main instances are declared outright (``fastslow check ID`` with no
    parameters runs seed 0): there every hypothesis, whatever its source (a reference, theory, the
    inputs), is known to hold, so a violated one is a defect of the suite, not of the instance.
    At other seeds a main instance draws its random parts afresh and may leave a hypothesis that
    is not measured through the implementation (a random start outside the basin): those seeds
    stay ``outside-hypotheses``."""

    sweep_instance: ClassVar[Mapping] = {}
    """The main instance (one of :attr:`main_instances`) that the thorough seed sweep decides on
    further seeds; the defaults unless a claim's default instance is too costly to repeat."""

    instance: ClassVar[Any] = None
    """The class of the claim's instance, called as ``instance(p, seed)`` by the default
    :meth:`build`."""

    # -- to implement -------------------------------------------------------------------------
    def check_instruments(self, p: dict) -> dict:
        """Parts of the conclusion that check an instrument the check relies on (an integrator's
        error control, an optimiser, a statistic) against an oracle, from the parameters alone,
        before the instance is built (default: none). When building, diagnosing or concluding
        then raises and one of them does not hold, the outcome is ``fails``: the instrument is
        shown wrong, and the exception it caused is kept in the verdict, never a quiet
        ``error``."""
        return {}

    def build(self, p: dict, seed: int):
        """The seeded instance of the resolved parameters ``p`` (default: ``instance(p, seed)``)."""
        if self.instance is None:
            raise NotImplementedError(f"{type(self).__name__} sets no instance class")
        return self.instance(p, seed)

    def build_system(self, p: dict, seed: int, system):
        """The instance of a user ``system`` (one of :attr:`systems`) with parameters ``p``
        (default: ``NotImplementedError`` naming the claim: a claim that declares
        :attr:`systems` implements it)."""
        raise NotImplementedError(self._not_implemented("build_system"))

    def diagnose(self, inst) -> dict:
        """``{hypothesis: Diagnostic}`` from the instance alone (never from the conclusion;
        default: ``NotImplementedError`` naming the claim: every claim implements it)."""
        raise NotImplementedError(self._not_implemented("diagnose"))

    def conclude(self, inst) -> Conclusion:
        """The conclusion's parts and the measured figures (default: ``NotImplementedError``
        naming the claim: every claim implements it)."""
        raise NotImplementedError(self._not_implemented("conclude"))

    def _not_implemented(self, method: str) -> str:
        return f"{self.id} ({type(self).__name__}) does not implement Claim.{method}"

    def validate(self, p: dict) -> None:
        """Conditions between parameters that are not orders (:attr:`orders`); ``ValueError``
        naming the value if violated. (That the block size ``P`` divides ``T`` is checked for every
        claim with both parameters.)"""

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

    def within_budget(self, p: dict, system=None) -> int:
        """The estimated peak memory of ``p`` (:meth:`memory_bytes` + :data:`BASE_BYTES`) on the
        sizes of ``system`` when one is given (:meth:`sized`); ``ValueError`` naming the
        parameters (or the system and its sizes) when it exceeds :func:`memory_budget`."""
        need = BASE_BYTES + int(self.memory_bytes(self.sized(p, system)))
        if need > memory_budget():
            raise ValueError(
                f"{self.id} {self._instance_text(p, system)} needs about {format_bytes(need)} of "
                f"memory (estimated from {self._estimated_from(system)}), beyond the memory "
                f"budget of {budget_hint()}"
            )
        return need

    def sized(self, p: dict, system=None) -> dict:
        """``p`` with the values that ``system``'s own sizes give the claim's parameters
        (:meth:`verify.systems.System.sizes`, among this claim's parameters): what the cost model
        (:meth:`work`, :meth:`memory_bytes`) reads, so that a user system is costed on its sizes,
        not on the defaults of the parameters it replaces. ``p`` itself without a system. Only
        for estimates: the values may lie outside the parameters' bounds."""
        if system is None:
            return p
        return {**p, **{k: v for k, v in system.sizes().items() if k in p}}

    def _instance_text(self, p: dict, system) -> str:
        if system is not None:
            return f"on your {system.label()} ({system.size_text()})"
        return f"with {self._changed(p) or 'its default parameters'}"

    @staticmethod
    def _estimated_from(system) -> str:
        return "the parameters" if system is None else "your system's sizes and the parameters"

    def work(self, p: dict) -> dict[str, float]:
        """The work of one check on the resolved parameters ``p``, as counts by kind of work
        (:data:`verify.cost_model.RATES`: ``{"start": 1, "layer": n, "attention": n·T²·(d + 24)}``),
        computed from the parameters alone, before any work.

        The generic work is none: the claim declares no cost model, and its time is taken not to
        grow past the budget within its parameter bounds. A claim whose time grows with its
        parameters (training steps, grids, sizes, ladders) counts its work; the counts are the
        claim's, the seconds per unit the calibration's (:mod:`verify.cost_model`)."""
        return {}

    def seconds_estimate(self, p: dict) -> float:
        """Estimated time in seconds of one check on the resolved parameters ``p`` (one core,
        compiled kernels warm): :meth:`work` at the calibrated rates
        (:func:`verify.cost_model.seconds`), an upper bound (tests check it at small points,
        ``fastslow bench limits`` at the limits)."""
        return seconds(self.work(p))

    def within_time_budget(self, p: dict, system=None) -> float:
        """:meth:`seconds_estimate` of ``p`` on the sizes of ``system`` when one is given
        (:meth:`sized`); ``ValueError`` naming the parameters (or the system and its sizes) when
        it exceeds :func:`time_budget`."""
        need = float(self.seconds_estimate(self.sized(p, system)))
        if need > time_budget():
            raise ValueError(
                f"{self.id} {self._instance_text(p, system)} would take about {need:.3g} s "
                f"(estimated from {self._estimated_from(system)}), beyond the time budget of "
                f"{time_hint()}"
            )
        return need

    def _changed(self, p: dict) -> str:
        """The parameters of ``p`` that differ from the defaults, for messages."""
        return ", ".join(f"{k}={short(v)}" for k, v in p.items() if v != self.params[k].default)

    # -- provided -----------------------------------------------------------------------------
    def defaults(self) -> dict:
        return {k: spec.default for k, spec in self.params.items()}

    def control(self, name: str) -> Control:
        """The negative control called ``name``; ``ValueError`` naming the known ones."""
        for c in self.controls:
            if c.name == name:
                return c
        names = [c.name for c in self.controls]
        raise ValueError(
            f"{self.id} has no negative control {name!r}{did_you_mean(name, names)}; expected one "
            f"of: {', '.join(names) or 'none'}"
        )

    def resolve(
        self, overrides: Mapping | None = None, system=None, *, budgets: bool = True
    ) -> dict:
        """The defaults updated by ``overrides`` (strings parsed), validated: ``ValueError``
        naming the parameter and what was expected. Memory and time are estimated on the sizes
        of ``system`` when one is given (:meth:`sized`); ``budgets=False`` leaves them to the
        caller (:meth:`limits_or_outside`)."""
        if not self.implemented:
            raise PendingClaim(f"claim {self.id} is pending: no check is implemented yet")
        p = self.defaults()
        for key, raw in (overrides or {}).items():
            if key not in self.params:
                raise ValueError(
                    f"unknown parameter {key!r} of {self.id}{did_you_mean(key, self.params)}; "
                    f"expected one of {', '.join(self.params)}"
                )
            p[key] = self.params[key].parse(key, raw)
        if "T" in p and "P" in p and p["T"] % p["P"]:  # T tokens in blocks of P
            raise ValueError(f"parameter P={p['P']} must divide T={p['T']}")
        for order in self.orders:
            order.check(p)
        self.validate(p)
        if budgets:
            self.within_budget(p, system)
            self.within_time_budget(p, system)
        return p

    def accepts(self, system) -> None:
        """``ValueError`` naming the claims that can check ``system`` unless it is one of the kinds
        this claim checks (:attr:`systems`). A claim with limits of its own on a kind (sizes)
        extends this."""
        if not isinstance(system, self.systems):
            ids = ", ".join(claims_for(system)) or "none yet"
            raise ValueError(
                f"{self.id} cannot be checked on a {type(system).__name__}; claims that can: {ids}"
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
            system = self.checked_system(system, limits=False)
            dropped = [k for k in overrides if k in self.replaced_by(system)]
            if dropped:
                raise ValueError(
                    f"parameter {dropped[0]} is set by your system ({type(system).__name__}); "
                    "drop it"
                )
        if control is not None:
            ctl = self.control(control)
            self._keeps_control(ctl, overrides)
            overrides = {**ctl.params, **overrides}
            if seed is None:
                seed = ctl.seed
        if seed is None:
            seed = 0
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        seed = int(seed)
        if system is not None and control is not None:
            raise ValueError("a negative control is a built-in instance: give control or system")
        if system is None:
            verdict = self.decide(self.resolve(overrides), seed, control)
        else:
            p = self.resolve(overrides, budgets=False)
            outside = self.limits_or_outside(p, seed, system)
            verdict = outside if outside is not None else self.decide(p, seed, None, system)
        if control is not None and not self.fails_as_predicted(verdict):
            verdict.notes.insert(0, self.control_text(verdict))
        return verdict

    def _keeps_control(self, ctl: Control, overrides: Mapping) -> None:
        """``ValueError`` when ``overrides`` change a parameter the negative control ``ctl`` sets
        (what it violates): a control stays a control; the other parameters may change."""
        for key, raw in overrides.items():
            if key in ctl.params and key in self.params:
                spec = self.params[key]
                if spec.parse(key, raw) != spec.parse(key, ctl.params[key]):
                    raise ValueError(
                        f"parameter {key}={raw} changes what the negative control {ctl.name} sets "
                        f"({key}={ctl.params[key]}, which breaks {ctl.breaks}); drop it, or check "
                        "that instance without --control"
                    )

    def control_text(self, verdict: Verdict) -> str:
        """``"negative control NAME: fails as predicted"`` or ``"... did not fail as predicted
        (it breaks HYP: expected outside-hypotheses with HYP violated and the conclusion
        failing)"`` for a control's verdict (:meth:`fails_as_predicted`)."""
        ctl = self.control(verdict.control or "")
        if self.fails_as_predicted(verdict):
            return f"negative control {ctl.name}: fails as predicted"
        return (
            f"negative control {ctl.name} did not fail as predicted (it breaks {ctl.breaks}: "
            f"expected outside-hypotheses with {ctl.breaks} violated and the conclusion failing)"
        )

    def declaration_rules_out(self, system) -> bool:
        """Whether a hypothesis decided from ``system``'s declaration alone
        (:attr:`declared_hypotheses`) fails: every check of ``system`` is then
        ``outside-hypotheses`` without the conclusion (:meth:`limits_or_outside`), so the claim's
        size limits and budgets do not refuse it."""
        return not all(fn(system).holds for fn in self.declared_hypotheses.values())

    def limits_or_outside(self, p: dict, seed: int, system) -> Verdict | None:
        """``None`` when ``system`` is within the claim's limits (:meth:`accepts`, the budgets);
        when not, the ``outside-hypotheses`` verdict without the conclusion if a hypothesis its
        declaration decides (:attr:`declared_hypotheses`) does not hold (the statement does not
        apply, so its size is no reason to refuse it), else the limit's ``ValueError``."""
        declared = {k: fn(system) for k, fn in self.declared_hypotheses.items()}
        try:
            self.accepts(system)
            self.within_budget(p, system)
            self.within_time_budget(p, system)
        except ValueError as exc:
            if all(d.holds for d in declared.values()):
                raise
            return Verdict(
                self.id,
                "outside-hypotheses",
                declared,
                {},
                {},
                {k: v for k, v in p.items() if k not in self.replaced_by(system)},
                seed,
                notes=[
                    "decided from your system's declaration before the claim's limits on it: "
                    f"the conclusion was not computed ({exc})"
                ],
                system=describe_system(system),
                sources=self._sources(declared),
            )
        return None

    def checked_system(self, system, *, limits: bool = True):
        """``system`` validated for this claim before any work: a validated copy of its current
        fields (:meth:`verify.systems.System.validated`: a field mutated to NaN, a complex or
        wrongly shaped entry after construction), one of the kinds this claim checks
        (:meth:`accepts`), with a description that reduces to strict JSON
        (:func:`describe_system`). ``ValueError`` or ``TypeError`` naming the fault.
        ``limits=False`` checks the kind only, leaving the claim's size limits (:meth:`accepts`)
        to :meth:`limits_or_outside`."""
        from .systems import System  # deferred: verify.systems imports the model (numerics)

        if not isinstance(system, System):
            raise TypeError(
                f"system must be a fastslow.toy system (LinearLoop, GeneratorFamily, "
                f"DepthFlow), got {type(system).__name__}"
            )
        if not isinstance(system, self.systems):
            Claim.accepts(self, system)  # names the claims that check this kind
        system = system.validated()
        if limits:
            self.accepts(system)
        describe_system(system)
        return system

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
        described = None if system is None else describe_system(system)
        replaced = self.replaced_by(system)
        shown = {k: v for k, v in p.items() if k not in replaced}
        hyps: dict = {}
        instruments: dict = {}
        try:
            # overflow or an invalid operation anywhere in a check is an error, never a silent NaN
            with np.errstate(over="raise", invalid="raise"):
                instruments = dict(self.check_instruments(p))
                inst = self.build(p, seed) if system is None else self.build_system(p, seed, system)
                hyps = self._named(self.diagnose(inst), self.hypotheses, "hypothesis", "hypotheses")
                concl = self.conclude(inst)
                parts = self._named(
                    {**concl.parts, **instruments}, self.conclusion, "conclusion part"
                )
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
            faults = self.suite_faults(p, hyps, control, system, seed)
            if faults:
                notes.insert(0, self._fault_note(faults))
            broken = [k for k, d in instruments.items() if not d.holds]
            if broken:
                notes.append(
                    f"instrument shown wrong: {', '.join(broken)}; the conclusion could not be "
                    f"evaluated: {error['type']}: {error['message']}"
                )
            return Verdict(
                self.id,
                "fails" if faults or broken else "outside-hypotheses" if outside else "error",
                hyps,
                {k: d for k, d in instruments.items() if isinstance(d, Diagnostic)},
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
        elif self.decided_failures(parts, limits):
            outcome = "fails"  # a limit of the check hides only the parts it governs
        elif not all(d.holds for d in limits.values()):
            outcome = "undecided"
        else:
            outcome = "holds"
        faults = self.suite_faults(p, hyps, control, system, seed)
        notes = list(concl.notes)
        if faults:
            outcome = "fails"
            notes.insert(0, self._fault_note(faults))
        skipped = self.skipped_on_main(p, {**hyps, **parts}, control, system)
        if skipped:
            outcome = "fails"
            notes.insert(
                0,
                "failure of the suite: "
                + ", ".join(skipped)
                + " not evaluated on a declared main instance, which evaluates every hypothesis "
                "and every part",
            )
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
            notes=notes,
            series=concl.series,
            system=described,
            limits=limits,
            sources=self._sources(hyps),
        )

    def decided_failures(self, parts: Mapping, limits: Mapping) -> list[str]:
        """The parts of the conclusion that fail and that no limit not holding governs
        (:attr:`limit_governs`): each is a decided counterexample, whatever the limits say."""
        hidden = {
            part
            for limit, d in limits.items()
            if not d.holds
            for part in self.limit_governs.get(limit, ())
        }
        return [k for k, d in parts.items() if not d.holds and k not in hidden]

    def is_main_instance(self, p: Mapping) -> bool:
        """``p`` (resolved parameters) is one of the claim's :attr:`main_instances`."""
        defaults = self.defaults()
        return any(dict(p) == {**defaults, **main} for main in self.main_instances)

    def suite_faults(
        self, p: Mapping, hyps: Mapping, control=None, system=None, seed: int | None = None
    ) -> list[str]:
        """The hypotheses that do not hold on a declared main instance (:attr:`main_instances`,
        no control, no user system): at a main seed (:attr:`main_seeds`) every violated
        hypothesis, whatever its source; at other seeds those measured through the implementation
        (source ``implementation``). The instance was built to satisfy them, so each is a failure
        of the suite (the code under test, a reference or a theory function broke it, not the
        instance), and the outcome is ``fails``."""
        if control is not None or system is not None or not self.is_main_instance(p):
            return []
        any_source = seed in self.main_seeds
        return [
            k
            for k, d in hyps.items()
            if not d.holds and (any_source or self.hypothesis_sources.get(k) == "implementation")
        ]

    def skipped_on_main(self, p: Mapping, parts: Mapping, control=None, system=None) -> list[str]:
        """The hypotheses and parts of the conclusion (``parts``) not evaluated
        (:func:`~verify.verdict.not_evaluated`) on a declared main instance (no control, no user
        system). Parameters may exclude a part (a brute force above its size, a symbolic oracle
        above its dimension), but a main instance is declared to evaluate every hypothesis and
        every part: one skipped there is a failure of the suite (a switch or a bound read the wrong
        way would otherwise leave it silently holding)."""
        if control is not None or system is not None or not self.is_main_instance(p):
            return []
        return [k for k, d in parts.items() if not d.evaluated]

    @staticmethod
    def _fault_note(faults: list[str]) -> str:
        return (
            "failure of the suite: "
            + ", ".join(faults)
            + " does not hold on a declared main instance, built to satisfy it"
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

    def status(self, main, controls, tests: Mapping) -> tuple[str, str, list[str]]:
        """``(status, negative_control, reasons)`` of this claim in a report, from the verdicts of
        its main instances (``main``) and negative controls (``controls``) and the outcomes of its
        tests (``{test: "passed" | "failed" | "skipped"}``); the verdicts are read, never
        re-decided.

        The status (``verified`` / ``failed`` / ``error`` / ``pending``):

        * ``pending``: no check is implemented, no test of the claim ran, no main instance was
          checked, or a declared negative control did not run;
        * ``error``: a main instance or a control could not be decided (its exception is the
          reason);
        * ``failed``: a test of the claim failed, a main instance's verdict is not ``holds``, or a
          negative control did not fail as predicted. A main instance that is ``undecided`` (the
          check's own numerics cannot decide the instance the suite declares as its own) is a
          failure of the suite, reported with its limit: never ``verified``, and its verdict stays
          ``undecided`` (the report counts it under that outcome, not as ``fails``);
        * ``verified``: otherwise.

        ``negative_control`` is ``fails-as-predicted`` when every declared control ran and failed
        as predicted, ``did-not-fail`` when one did not, else ``pending``.
        """
        if not self.implemented:
            return "pending", "pending", ["not implemented yet"]
        if not [o for o in tests.values() if o != "skipped"]:
            return "pending", "pending", ["no test of this claim ran"]
        as_predicted: dict[str, bool] = {}
        for v in controls:
            as_predicted[v.control] = as_predicted.get(v.control, True) and self.fails_as_predicted(
                v
            )
        missing = [c.name for c in self.controls if c.name not in as_predicted]
        if as_predicted and not all(as_predicted.values()):
            neg = "did-not-fail"
        elif as_predicted and not missing:
            neg = "fails-as-predicted"
        else:
            neg = "pending"
        errors = [v for v in [*main, *controls] if v.outcome == "error"]
        if errors:
            return (
                "error",
                neg,
                [f"{v.control or 'main instance'} (seed {v.seed}): {v.reason()}" for v in errors],
            )
        why = []
        failed = sorted(n for n, o in tests.items() if o == "failed")
        if failed:
            why.append(f"{len(failed)} test(s) failed: " + ", ".join(failed[:5]))
        why += [f"main instance (seed {v.seed}): {v.reason()}" for v in main if not v.holds]
        why += [
            f"negative control {v.control} did not fail as predicted: {v.reason()}"
            for v in controls
            if not self.fails_as_predicted(v)
        ]
        if why:
            return "failed", neg, why
        if not main:
            return "pending", neg, ["no main instance was checked"]
        if missing:
            return "pending", neg, ["negative control(s) not run: " + ", ".join(missing)]
        return "verified", neg, []

    def allowed_failures(self, n: int) -> int:
        """How many of ``n`` instances inside the hypotheses may fail by sampling alone
        (:attr:`failure_rate`): the 99.9 % quantile of Binomial(n, rate); 0 for a deterministic
        claim."""
        if self.failure_rate == 0:
            return 0
        from scipy.stats import binom  # deferred: scipy.stats is slow to import, rarely needed

        return int(binom.ppf(0.999, n, self.failure_rate))

    def sweep_faults(self, verdicts) -> list[str]:
        """Why a sweep of this claim's main instances over seeds does not verify it (empty when
        it does). Each seed's verdict is the unit's own; the sweep adds no condition to it:

        * no seed may end in ``error``;
        * no seed may end ``fails`` because a hypothesis measured through the implementation is
          violated on it (a failure of the suite; :meth:`suite_faults`), whatever the
          :attr:`failure_rate`;
        * among the seeds inside the hypotheses (``holds`` or ``fails``), the conclusion may fail
          on no more than :meth:`allowed_failures`, and at least one seed must be inside.

        Seeds ``outside-hypotheses`` and ``undecided`` are reported with the diagnostic that
        decided them, not counted as failures: the claim says nothing about the first, the check
        could not decide the second.
        """
        faults = [f"seed {v.seed}: {v.summary()}" for v in verdicts if v.outcome == "error"]
        faults += [
            f"seed {v.seed}: failure of the suite: {', '.join(v.violated)}"
            for v in verdicts
            if v.outcome == "fails" and v.violated
        ]
        inside = [v for v in verdicts if v.outcome in ("holds", "fails")]
        if not inside:
            faults.append("no seed is inside the hypotheses and decided")
        failed = [v.seed for v in inside if v.outcome == "fails" and not v.violated]
        if len(failed) > self.allowed_failures(len(inside)):
            faults.append(
                f"the conclusion fails on seeds {failed} of {len(inside)} inside the hypotheses "
                f"(at most {self.allowed_failures(len(inside))} allowed)"
            )
        return faults

    def system_kinds(self) -> dict[str, list[str]]:
        """``{kind: [parameters it replaces]}`` for each kind of user system this claim checks
        (:func:`verify.claim_text.system_kinds`)."""
        return claim_text.system_kinds(self)

    def to_json(self) -> dict:
        """The claim as strict JSON for ``fastslow claims --json`` and ``--describe --json``
        (:func:`verify.claim_text.claim_json`)."""
        return claim_text.claim_json(self)

    def describe(self) -> str:
        """The claim as text for ``--describe`` (:func:`verify.claim_text.claim_description`)."""
        return claim_text.claim_description(self)


def describe_system(system) -> dict:
    """``system.describe()`` as strict JSON (:func:`verify.json_values.jsonable`: any object it
    holds reduces to a number, string, list or mapping); ``ValueError`` naming the system when
    ``describe()`` raises or returns something other than a mapping (bad input, before work)."""
    try:
        described = system.describe()
    except (Exception, SystemExit) as exc:  # the user's describe(): bad input, on one line
        raise ValueError(
            f"your {type(system).__name__}'s describe() raised {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(described, Mapping):
        raise ValueError(
            f"your {type(system).__name__}'s describe() returned a {type(described).__name__}; "
            "expected a dict"
        )
    return jsonable(described)
