"""E1 — the coupling is neutral at 500k tokens: the claim unit, one module per job, each importing
only those listed before it.

* :mod:`.runs` — the instance and its training runs: the corpus, its splits and statistics, the
  seed layout, the learning-rate rule, the paired runs of each arm, the CPU timing of one training
  step and the identity of the held-out windows;
* :mod:`.parts` — the conclusion parts and limits that are not one-liners: the gates were trained,
  each endpoint's three-way decision, the statistics recomputed by SciPy's own routines;
* :mod:`.gradients` — the hand-written gradients against central differences of the loss;
* :mod:`.claim` — the claim (statement, parameters, profiles, hypotheses, conclusion, negative
  control) and its verdict: ``CLAIM``, what :mod:`verify.registry` finds.

The names exported here are those the registry, the figures, the trained-network section and the
tests import. A test that replaces a function the verdict calls patches it in :mod:`.claim`, where
the verdict looks it up.
"""

from .claim import (
    CLAIM,
    E1,
    SHORT,
    SHORT_SWEEP_TOKENS,
    SWEEP_TOKENS,
    control_params,
    sweep_row,
)
from .gradients import gradient_check
from .runs import TRAIN_MISSING, Instance

__all__ = [
    "CLAIM",
    "E1",
    "SHORT",
    "SHORT_SWEEP_TOKENS",
    "SWEEP_TOKENS",
    "TRAIN_MISSING",
    "Instance",
    "control_params",
    "gradient_check",
    "sweep_row",
]
