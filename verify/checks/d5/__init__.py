"""D5 — saturation depth and block coarse-graining: the claim unit, one module per job, each
importing only those listed before it.

* :mod:`.measurements` — the instance and its measurements: the linearised stack's modes and the
  ratio ``r(L)``, the exact reference's factors, the linear and nonlinear responses, the
  brute-force mode ratio of the dense products and the rounding response of the stack;
* :mod:`.parts` — the conclusion parts and figures: the saturation depth against the reference,
  the brute-force products, the kernel constant and the coarse stack, each read against its
  tolerance;
* :mod:`.claim` — the claim (statement, parameters, hypotheses, conclusion, negative controls) and
  its verdict: ``CLAIM``, what :mod:`verify.registry` finds.
"""

from .claim import CLAIM, D5

__all__ = ["CLAIM", "D5"]
