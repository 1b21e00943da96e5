"""F2 — linear generator: the claim unit, one module per job, each importing only those listed
before it.

* :mod:`.chain` — the instances: the coupled chain ``ε dx/dt = Q(y) x`` with its slow variable,
  built from a named chain or from your own generator family, and the hypotheses decided on the
  symbolic generator;
* :mod:`.manifold` — the generator's spectrum on the grid, its null vectors, the stationary
  manifold against theory's, and the memory and simplex parts;
* :mod:`.tracking` — the coupled flow against the reduced one over an ε-ladder by two
  integrators: the orders ε and ε², the reduced solution inside the grid, the drawn trajectory;
* :mod:`.attention` — the attention link: the masks' frozen kernels read as Markov generators;
* :mod:`.claim` — the claim (statement, parameters, hypotheses, conclusion, negative controls) and
  its verdict: ``CLAIM``, what :mod:`verify.registry` finds.

The names exported here are those the registry and the tests import.
"""

from .attention import attention_link_parts
from .claim import CLAIM, F2
from .tracking import identically_zero

__all__ = ["CLAIM", "F2", "attention_link_parts", "identically_zero"]
