"""The figure registry: which figures there are, of which claim, and how each gets its data.

:func:`figure` registers a figure (its ``draw``, ``compute`` and ``points``) under its claim in
:data:`FIGURES`; the figure modules of this package (one per claim) are imported on first use
(:func:`discover`). A figure drawn from a claim's verdicts computes :func:`verdict_json` at the
points :func:`verdict_points` lists; :func:`system_figures` says which figures can be drawn for a
user system. Drawing and writing them is :mod:`figures.rendering`'s job.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fastslow.verify.json_values import jsonable
from fastslow.verify.registry import claims_for, get_claim, run_check


@dataclass(frozen=True)
class FigureSpec:
    claim: str
    name: str
    draw: Callable
    compute: Callable
    points: Callable
    system_points: Callable | None = None
    """``system_points(seed, system)``: the figure's sweep points on a user system (each passed
    to ``compute`` with ``system=``); ``None``: not drawn for a user system (:attr:`no_system`)."""
    no_system: str = ""
    """Why the figure has no form for a user system (when :attr:`system_points` is ``None``)."""


FIGURES: dict[str, list[FigureSpec]] = {}
"""Registered figures, keyed by claim ID."""


def single_point(seed: int) -> list[dict]:
    """The default sweep of a figure: one point, its seed."""
    return [{"seed": seed}]


def verdict_json(claim: str, seed: int, params: dict | None = None, system=None) -> dict:
    """The usual sweep point of a figure: the claim's verdict on ``params`` (defaults updated) and
    ``seed``, or on the user ``system`` with ``params``, as JSON
    (:func:`verify.registry.run_check`). Use with :func:`verdict_points`."""
    return run_check(claim, params or {}, seed=seed, system=system).to_json()


class VerdictPoints:
    """``points(seed)`` for :func:`verdict_json`: one point per parameter variant (a mapping of
    overrides), in order; the draw function receives the verdicts' JSON in the same order."""

    def __init__(self, claim: str, variants=({},)):
        self.claim = claim
        self.variants = [json.loads(json.dumps(jsonable(dict(v)))) for v in variants]  # cache keys

    def __call__(self, seed: int) -> list[dict]:
        return [dict(claim=self.claim, seed=seed, params=dict(v)) for v in self.variants]

    def for_system(self, seed: int, system) -> list[dict]:
        """The points on a user ``system``: each variant without the parameters the system
        replaces (:meth:`verify.claim.Claim.replaced_by`), each distinct remainder once, in order
        (a variant over the built-in mask collapses onto the system's own)."""
        replaced = set(get_claim(self.claim).replaced_by(system))
        kept: list[dict] = []
        for v in self.variants:
            rest = {k: val for k, val in v.items() if k not in replaced}
            if rest not in kept:
                kept.append(rest)
        return [dict(claim=self.claim, seed=seed, params=v, system=system) for v in kept]


def verdict_points(claim: str, variants=({},)) -> VerdictPoints:
    """``points(seed)`` for :func:`verdict_json` (:class:`VerdictPoints`)."""
    return VerdictPoints(claim, variants)


def figure(
    claim_id: str,
    name: str,
    *,
    compute: Callable,
    points: Callable = single_point,
    system_points: Callable | None = None,
    no_system: str = "",
):
    """Register ``draw(data, seed) -> (Figure, params)`` as figure ``name`` of claim ``claim_id``.

    ``compute(**point)`` (module-level, so that it pickles to workers) computes one point of
    ``points(seed)``; ``draw`` receives the results in the order of the points.
    ``system_points(seed, system)`` gives the points on a user system (default: those of a
    :func:`verdict_points` sweep, see :meth:`VerdictPoints.for_system`); a figure of a claim that
    checks some kind of system and has no form for one states why in ``no_system``.
    """

    cid = get_claim(claim_id).id
    if not callable(compute) or not callable(points):
        raise TypeError(f"figure {name!r}: compute and points must be callables")
    if system_points is None and isinstance(points, VerdictPoints):
        system_points = points.for_system

    def deco(fn):
        if any(sp.name == name for specs in FIGURES.values() for sp in specs):
            raise ValueError(f"figure name {name!r} is registered twice")
        if get_claim(cid).systems and system_points is None and not no_system:
            raise TypeError(
                f"figure {name!r}: {cid} checks user systems; give system_points or no_system"
            )
        spec = FigureSpec(cid, name, fn, compute, points, system_points, no_system)
        FIGURES.setdefault(cid, []).append(spec)
        return fn

    return deco


def instance_values(verdict) -> dict:
    """The parameters of a verdict's instance: its parameters, and for a user system the
    system's description over them (a system replaces the sizes, the mask, ... it holds)."""
    return {**verdict.params, **(verdict.system or {})}


def discover() -> None:
    """Import every module of this package (the figure modules register their figures)."""
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__package__}.{mod.name}")


def available() -> dict[str, list[str]]:
    """Claim ID → names of its registered figures."""
    discover()
    return {cid: [s.name for s in specs] for cid, specs in sorted(FIGURES.items())}


def registered(name: str) -> FigureSpec:
    """The registered figure ``name`` (``ValueError`` listing the registered ones)."""
    discover()
    for specs in FIGURES.values():
        for sp in specs:
            if sp.name == name:
                return sp
    raise ValueError(
        f"no figure named {name!r}; registered: {sorted(s.name for v in FIGURES.values() for s in v)}"
    )


def system_figures(claim_ids, system) -> tuple[list[FigureSpec], list[tuple[str, str]]]:
    """The figures drawn for ``system`` (of ``claim_ids``, or of every claim that checks its
    kind) and the skipped ones with the reason. ``ValueError`` when a named claim does not check
    the system (its kind, or a limit of its own such as a size), or when no figure can be drawn;
    without named claims, a claim whose limits refuse the system is skipped with its reason and
    the others are drawn."""
    discover()
    ids = claims_for(system) if claim_ids is None else [get_claim(c).id for c in claim_ids]
    skipped: list[tuple[str, str]] = []
    refused = []
    for cid in ids:
        try:
            get_claim(cid).accepts(system)
        except ValueError as exc:
            if claim_ids is not None:
                raise
            refused.append(cid)
            skipped += [(sp.name, f"{cid} does not check it: {exc}") for sp in FIGURES.get(cid, [])]
    specs = [sp for cid in ids if cid not in refused for sp in FIGURES.get(cid, [])]
    drawn = [sp for sp in specs if sp.system_points is not None]
    skipped += [(sp.name, sp.no_system) for sp in specs if sp.system_points is None]
    if not drawn:
        why = "; ".join(f"{n}: {r}" for n, r in skipped) or "none registered"
        raise ValueError(
            f"no figure of {', '.join(ids)} can be drawn for a {type(system).__name__} ({why})"
        )
    return drawn, skipped
