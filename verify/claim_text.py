"""What a claim says about itself, for a person (``fastslow check ID --describe``) and as JSON
(``fastslow claims --json``, ``--describe --json``).

Both forms carry the same facts, read from the claim's declaration (:class:`verify.claim.Claim`):
the statement, every parameter with its range, the orders between parameters, each kind of user
system the claim checks with the parameters it replaces, what the claim's hypotheses ask of that
kind in its own fields (:attr:`Claim.system_terms`) and the limits of the claim's own on it (the
docstring of its ``accepts``, for the kinds it names), the hypotheses with their sources, the
conclusion, the limits of the check and the negative controls.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .json_values import jsonable

if TYPE_CHECKING:
    from .claim import Claim


def system_kinds(unit: Claim) -> dict[str, list[str]]:
    """``{kind: [parameters it replaces]}`` for each kind of user system ``unit`` checks
    (``unit.systems`` and the kinds derived from them, :func:`verify.systems.subkinds`; the
    kind's ``replaces`` and the claim's ``system_replaces``)."""
    return {kind.__name__: replaced for kind, _, replaced in _kinds(unit)}


def _kinds(unit: Claim) -> list[tuple[type, type, list[str]]]:
    """``(kind, the declared kind it derives from, parameters it replaces)`` per kind."""
    from .systems import subkinds  # deferred: verify.systems imports the model (numerics)

    out = []
    for base in unit.systems:
        for kind in subkinds(base):
            names = set(getattr(kind, "replaces", ())) | set(unit.system_replaces)
            out.append((kind, base, [k for k in unit.params if k in names]))
    return out


def system_condition(unit: Claim, kind: str) -> str | None:
    """What ``unit`` requires of a system of ``kind`` beyond the kind itself (sizes, a named
    nonlinearity, an exactly decomposable mask): the first paragraph of its own ``accepts``
    docstring, whole, when that docstring names ``kind``; ``None`` otherwise."""
    from .claim import Claim  # deferred: verify.claim imports this module

    accepts = type(unit).accepts
    if accepts is Claim.accepts:
        return None
    text = plain(accepts.__doc__ or "")
    if kind not in text:
        return None
    return text.split("\n\n")[0].strip().rstrip(".") or None


def system_rows(unit: Claim) -> list[dict]:
    """One row per kind of user system ``unit`` checks: ``kind``, ``replaces``, ``needs`` (the
    hypotheses in the kind's fields, :attr:`Claim.system_terms`) and ``only_if``
    (:func:`system_condition`)."""
    return [
        {
            "kind": kind.__name__,
            "replaces": replaced,
            "needs": unit.system_terms.get(kind.__name__) or unit.system_terms.get(base.__name__),
            "only_if": system_condition(unit, kind.__name__)
            or system_condition(unit, base.__name__),
        }
        for kind, base, replaced in _kinds(unit)
    ]


def claim_json(unit: Claim) -> dict:
    """``unit`` as strict JSON: id, title, statement, status (``implemented`` / ``pending``),
    the user systems it checks (:func:`system_rows`), every parameter (type, default, bounds,
    choices, the accepted range as ``--describe`` shows it, meaning), the orders between
    parameters, the hypotheses (meaning and source), the conclusion, the limits of the check and
    the negative controls."""
    params = {
        k: {
            "type": s.kind,
            "default": s.default,
            "low": s.low,
            "high": s.high,
            "open_low": s.open_low,
            "open_high": s.open_high,
            "choices": None if s.choices is None else list(s.choices),
            "range": s.describe(),
            "meaning": s.meaning,
        }
        for k, s in unit.params.items()
    }
    return jsonable(
        {
            "id": unit.id,
            "title": unit.title,
            "statement": unit.statement,
            "status": "implemented" if unit.implemented else "pending",
            "systems": system_rows(unit),
            "parameters": params,
            "orders": [o.describe() for o in unit.orders],
            "hypotheses": {
                k: {"meaning": m, "source": unit.hypothesis_sources.get(k)}
                for k, m in unit.hypotheses.items()
            },
            "conclusion": dict(unit.conclusion),
            "limits": dict(unit.limits),
            "controls": [
                {"name": c.name, "breaks": c.breaks, "meaning": c.meaning, "params": dict(c.params)}
                for c in unit.controls
            ],
        }
    )


def claim_description(unit: Claim) -> str:
    """The same facts as :func:`claim_json`, as text for a person."""
    lines = [f"{unit.id} {unit.title}: {unit.statement}", "", "parameters:"]
    lines += [f"  {k}: {s.meaning} ({s.describe()})" for k, s in unit.params.items()]
    if unit.orders:
        lines += ["orders between parameters:"] + [f"  {o.describe()}" for o in unit.orders]
    rows = system_rows(unit)
    lines.append("user systems (--system FILE.py:NAME):")
    if not rows:
        lines.append("  none: built-in instances only")
    for row in rows:
        lines.append(f"  {row['kind']}: replaces {', '.join(row['replaces']) or 'no parameter'}")
        if row["needs"]:
            lines.append(f"    needs: {row['needs']}")
        if row["only_if"]:
            lines.append(f"    only if: {row['only_if']}")
    lines += ["hypotheses:"] + [
        f"  {k} [{unit.hypothesis_sources.get(k, 'source not declared')}]: {m}"
        for k, m in unit.hypotheses.items()
    ]
    lines += ["conclusion:"] + [f"  {k}: {m}" for k, m in unit.conclusion.items()]
    if unit.limits:
        lines += ["limits of the check (not holding: undecided):"] + [
            f"  {k}: {m}" for k, m in unit.limits.items()
        ]
    lines += ["negative controls:"] + [
        f"  {c.name}: {c.meaning} (breaks {c.breaks}; "
        + ", ".join(f"{k}={v}" for k, v in c.params.items())
        + ")"
        for c in unit.controls
    ]
    return "\n".join(lines)


def plain(doc: str) -> str:
    """A docstring without reST markup (``:class:`~a.B``` → ``B``, ````x```` → ``x``), its
    paragraphs kept (blank-line separated), each on one line."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc)]
    text = "\n\n".join(p for p in paragraphs if p)
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text)
    return text.replace("``", "")
