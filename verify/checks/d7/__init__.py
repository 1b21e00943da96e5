"""D7 — stability margin of the gate: the claim unit, one module per job, each importing only those
listed before it.

* :mod:`.spectrum` — the spectral parts: the Jacobian's token-block structure, the spectral radius
  along the gate, the stability margin by the dense minimum singular value, the critical gates and
  the curves of the figure;
* :mod:`.claim` — the instance (the fixed point and its Jacobians), the loop runs, the claim
  (statement, parameters, hypotheses, conclusion, negative controls) and its verdict: ``CLAIM``,
  what :mod:`verify.registry` finds. A test that replaces a function the verdict calls patches it
  here, where the verdict looks it up.
"""

from .claim import CLAIM, D7

__all__ = ["CLAIM", "D7"]
