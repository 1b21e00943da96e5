"""The seconds per unit of work: one calibrated table for every claim's time estimate.

A claim states the work one check does as counts computed from its parameters
(:meth:`verify.claim.Claim.work`: ``{"layer": (T + 1)·L, "attention": (T + 1)·L·T²·(d + 24),
...}``); that is part of the claim. What a unit of that work costs on a machine is not: it is the
calibration below, one rate per kind of work, shared by every claim that does that kind of work.
:func:`seconds` turns counts into the estimate that :meth:`verify.claim.Claim.within_time_budget`
refuses parameters on (bad input, exit 2).

Calibration. Each rate is the CPU time of one unit of its work, measured on one core with one BLAS
thread (the unit timed alone, or the check's CPU time at several points divided by its count),
times :data:`SAFETY_FACTOR`, rounded up; where claims share a rate it is the largest of theirs. The
estimates are upper bounds: ``tests/test_budgets.py`` and ``tests/test_faults.py`` hold them above
the CPU time of small checks, and ``fastslow bench limits`` sets them against every claim's
largest accepted parameters. The measurements behind each rate are in ``docs/benchmarks.md``
("The calibration of the time estimates"); a rate changed there is measured again.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

SAFETY_FACTOR = 2.0
"""A rate is about this many times the per-unit CPU time measured for it (at least 1.25 where a
check's total estimate stays above twice its measured time; see ``docs/benchmarks.md``)."""

RATES: Mapping[str, float] = MappingProxyType(
    {
        # --- fixed costs of one check
        "start": 5.0,  # imports, the instance, the hypotheses (every claim with a time model)
        "compile": 5.0,  # the first compilation of a claim's own kernels in a process
        "derivation": 20.0,  # F1's symbolic derivation of the reduced flows, cold
        "corpus": 5.0,  # E1's corpus, its deduplication and the cross-block statistics
        # --- the attention layer (numerics.model), compiled
        "layer": 1e-4,  # fixed cost of one layer evaluation or one attention kernel
        "layer_build": 1e-3,  # one layer drawn, built and evaluated (fixed cost)
        "layer_jvp": 6e-5,  # fixed cost of one layer of one forward-mode JVP column
        "attention": 1.5e-9,  # one unit T²·(d + 24) of a layer (scores, softmax, values)
        # --- dense linear algebra and Python-level calls
        "python_call": 3e-4,  # one Python-level call into NumPy/LAPACK (field, SVD, iteration)
        "eigen_call": 5e-4,  # fixed cost of one dense spectral radius
        "eigen_cube": 1.6e-8,  # one n³ of a dense eigenvalue problem
        "factor_cube": 3e-9,  # one n³ of a dense LU or SVD
        "numpy_unit": 1.2e-7,  # one multiply-add of small NumPy arrays (D7's looped map)
        "field_unit": 5e-6,  # one T·d of a lambdified reduced field (F1)
        # --- stiff integrators (numerics.integrators)
        "stiff_evaluation": 1.6e-4,  # one field evaluation with its share of Jacobians and LUs
        "full_flow": 0.05,  # fixed cost of one compiled full flow (Radau IIA / Rosenbrock-W)
        "full_flow_layer": 2e-4,  # one layer of one compiled full flow
        "output_time": 1e-5,  # one output time of one tracking run
        # --- Markov chains and generators (numerics.toy)
        "grid_point": 5e-4,  # one y of F2's grid (generators, spectra, classes, null vectors)
        "link_entry": 2e-4,  # one P² of an exact attention-link row
        "operator_case": 0.05,  # fixed cost of one sampled attention case (five operators)
        "operator_cube": 3e-8,  # one (T·d)³ of one sampled attention case
        # --- sequence filters and samplers (numerics.toy, D8 and D9)
        "token_position": 4e-3,  # Python-level work per token position (loops over T)
        "filter_element": 8e-7,  # one sequence × token × latent state of a chain filter
        "mixture_element": 3.2e-6,  # the same for the mixture family's filters
        "kalman_element": 2e-7,  # one sequence × token of the Kalman filters
        "future_element": 1.4e-7,  # one sequence × token pair × state of the future predictives
        "moment_step": 1e-5,  # one gradient step of one moment set (vectorised over sets)
        "sampled_token": 5e-8,  # one token sampled and reduced
        "gradient_token": 2.5e-7,  # one token of the gradient z-score's sample
        # --- training (Adam on MLPs, the character LM)
        "adam_step": 6e-5,  # fixed cost of one full-batch Adam step
        "adam_unit": 2e-7,  # one Adam step per training point and hidden unit
        "evaluation": 1e-3,  # fixed cost of one held-out evaluation of a snapshot
        "evaluation_unit": 5e-7,  # one held-out evaluation per point and hidden unit
        "lm_unit": 6e-11,  # one forward multiply-add per token of the LM (numerics.lm)
        "lm_layer_call": 2e-3,  # one layer of one LM training step (Numba calls, Python)
    }
)
"""Seconds per unit of work, by kind (the comment says what one unit is)."""


def seconds(work: Mapping[str, float]) -> float:
    """The estimated time of ``work`` (counts by kind of :data:`RATES`), in seconds; ``KeyError``
    for a kind the table does not hold (a claim counting work nobody calibrated)."""
    return float(sum(RATES[kind] * float(count) for kind, count in work.items()))
