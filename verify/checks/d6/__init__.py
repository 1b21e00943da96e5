"""D6 — visible and invisible directions along the token-homogeneous trajectory: the claim unit,
one module per job, each importing only those listed before it.

* :mod:`.measurements` — the instance (the seeded model on its reference trajectory) and every
  measured number of parts (a)–(d): the visibility map's ranks, the Taylor test, the ``E_d``
  forcing, the kernel change, the slow coupling and the gate sweep;
* :mod:`.parts` — the conclusion parts: each measured number read against its tolerance or the
  theory's prediction;
* :mod:`.claim` — the claim (statement, parameters, hypotheses, conclusion, negative controls) and
  its verdict: ``CLAIM``, what :mod:`verify.registry` finds.

The names exported here are those the registry and the tests import.
"""

from .claim import CLAIM, D6
from .measurements import Instance

__all__ = ["CLAIM", "D6", "Instance"]
