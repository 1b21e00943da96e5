"""fastslow: a numerical verification suite for the fast–slow ODE reading of hierarchical Transformers.

The packages: ``theory`` (SymPy derivations), ``numerics`` (the engine), ``verify`` (claim units,
shared measurement, sweeps and the report), ``figures`` (one function per figure) and this one,
the command line and the entry points for users:

* :func:`check` — a claim's verdict on a built-in instance or on your own toy system
  (:mod:`fastslow.toy`);
* :mod:`fastslow.toy` — the kinds of toy system (:class:`~fastslow.toy.LinearLoop`,
  :class:`~fastslow.toy.GeneratorFamily`, :class:`~fastslow.toy.DepthFlow`).
"""

from __future__ import annotations

from collections.abc import Mapping

from verify.claim import Verdict
from verify.registry import claims_for, get_claim

__version__ = "0.1.0"
__all__ = ["check", "claims_for"]


def check(
    claim_id: str,
    system=None,
    params: Mapping | None = None,
    seed: int = 0,
    *,
    control: str | None = None,
) -> Verdict:
    """The verdict of claim ``claim_id`` on ``system`` (a :mod:`fastslow.toy` system) or, without
    one, on the built-in instance ``params``/``seed`` (or the negative control ``control``).

    The verdict is the same object, with the same outcomes and JSON, as for the built-in
    instances: ``holds``, ``fails``, ``outside-hypotheses`` (a hypothesis diagnostic of your system
    does not hold; the conclusion is still reported) or ``error``. Bad input (an unknown
    parameter, a system of a kind the claim does not check) raises ``ValueError`` naming it and the
    claims that do check that kind.
    """
    claim = get_claim(claim_id)
    if system is not None and not isinstance(system, claim.systems):
        ids = ", ".join(claims_for(system)) or "none yet"
        raise ValueError(
            f"{claim.id} cannot be checked on a {type(system).__name__}; claims that can: {ids}"
        )
    return claim.check(params, seed, control=control, system=system)
