"""F1 — Tikhonov along depth: the claim unit, one module per job, each importing only those listed
before it.

* :mod:`.instance` — the seeded instance: the coupling problem, its coarse map, the theory's or the
  numerical reduction, the pure fast flow and the reduced flow's linearity;
* :mod:`.measurements` — the ε-ladder and the error rates, the attraction rate, the critical
  manifold's residuals, the reduced trajectory and the theory against the numerics;
* :mod:`.integrators` — the suite's integrators against the reference, and their orders;
* :mod:`.hypotheses` — the hypotheses decided before the conclusion and the resolvability of the
  asymptotic regime;
* :mod:`.parts` — the conclusion parts read against their tolerances, and the verdict's figures;
* :mod:`.claim` — the claim (statement, parameters, hypotheses, conclusion, negative controls) and
  its verdict: ``CLAIM``, what :mod:`verify.registry` finds.

The names exported here are those the registry and the tests import.
"""

from .claim import CLAIM, F1
from .hypotheses import (
    asymptotic_regime_resolvable,
    attraction_rate_resolvable,
    initial_state_in_basin,
)
from .instance import BASIN_TOL, FAST_TAU_EXTEND, Instance, basin_offset, fast_tau
from .integrators import integrator_orders
from .measurements import attraction_rate, reduced_trajectory_points, theory_against_numerics
from .parts import THEORY_TOL, attraction_part, integrators_part

__all__ = [
    "BASIN_TOL",
    "CLAIM",
    "F1",
    "FAST_TAU_EXTEND",
    "THEORY_TOL",
    "Instance",
    "asymptotic_regime_resolvable",
    "attraction_part",
    "attraction_rate",
    "attraction_rate_resolvable",
    "basin_offset",
    "fast_tau",
    "initial_state_in_basin",
    "integrator_orders",
    "integrators_part",
    "reduced_trajectory_points",
    "theory_against_numerics",
]
