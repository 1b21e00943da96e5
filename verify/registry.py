"""The claim registry: every claim ID, in order, and the claim unit that declares it.

The IDs are the API: test markers, the report, the figures and ``fastslow check`` all use them.
Each claim is declared once, by the ``CLAIM`` object of its module ``verify.checks.<id>`` (a module,
or a package whose ``__init__`` exports it; see :mod:`verify.claim`); this module only finds it. Units are imported on first use, so listing the
IDs costs nothing.

The registry stands below :mod:`verify.claim`: it finds a unit by its module's name and reads it by
its attributes (``id``, ``implemented``, ``systems``, ``check``), so the claim machinery can name
the claims that check a system (:func:`claims_for`) without an import cycle; ``Claim`` is imported
for type annotations only.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .suggest import did_you_mean
from .verdict import Verdict

if TYPE_CHECKING:
    from .claim import Claim

IDS = (
    "A1",
    "A2",
    "A3",
    "D1",
    "D2",
    "D3",
    "D4",
    "D5",
    "D6",
    "D7",
    "D8",
    "D9",
    "F1",
    "F2",
    "F3",
    "E1",
)
"""Every claim ID, in the order of the claim list (``docs/claims.md``)."""


class _Units(Mapping):
    """``{ID: Claim}``, importing each claim's module on first access."""

    def __init__(self):
        self._loaded: dict[str, Claim] = {}

    def __getitem__(self, cid: str) -> Claim:
        if cid not in IDS:
            raise KeyError(cid)
        if cid not in self._loaded:
            module = importlib.import_module(f"fastslow.verify.checks.{cid.lower()}")
            unit: Claim | None = getattr(module, "CLAIM", None)
            if (
                unit is None
                or getattr(unit, "id", None) != cid
                or not callable(getattr(unit, "check", None))
            ):
                raise TypeError(
                    f"fastslow.verify.checks.{cid.lower()} must define CLAIM, the Claim unit of {cid}"
                )
            self._loaded[cid] = unit
        return self._loaded[cid]

    def __contains__(self, cid) -> bool:
        return cid in IDS

    def __iter__(self):
        return iter(IDS)

    def __len__(self) -> int:
        return len(IDS)


CLAIMS: Mapping[str, Claim] = _Units()
"""All claims, keyed by ID, in order; ``CLAIMS[ID]`` is the claim's unit."""


def get_claim(claim_id: str) -> Claim:
    """The unit of the claim with this ID (case-insensitive); ``ValueError`` naming the known IDs."""
    if not isinstance(claim_id, str):
        raise ValueError(f"a claim ID is a string like 'A1', got {claim_id!r}")
    key = claim_id.strip().upper()
    if key not in IDS:
        raise ValueError(
            f"unknown claim ID {claim_id!r}{did_you_mean(key, IDS)}; expected one of "
            f"{', '.join(IDS)}"
        )
    return CLAIMS[key]


def run_check(
    claim_id: str,
    params: dict | None = None,
    seed: int | None = None,
    *,
    control: str | None = None,
    system=None,
) -> Verdict:
    """The verdict of ``claim_id`` on the instance ``params`` (defaults updated), ``seed``, or on a
    user ``system`` (:mod:`verify.systems`); see :meth:`verify.claim.Claim.check`."""
    return get_claim(claim_id).check(params, seed, control=control, system=system)


def claims_for(system) -> list[str]:
    """The IDs of the claims that can be checked on ``system`` (an instance or a kind)."""
    kind = system if isinstance(system, type) else type(system)
    return [
        cid
        for cid in IDS
        if get_claim(cid).implemented and issubclass(kind, get_claim(cid).systems or ())
    ]
