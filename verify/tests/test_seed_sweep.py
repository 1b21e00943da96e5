"""Thorough profile: every claim's main instance on 12 further seeds, as one sweep per claim.

Under ``pytest verify --thorough`` each implemented claim is decided on :data:`SEEDS` (a local
process pool by default; ``--scheduler`` for a Dask cluster). The verdict of every seed is the
unit's own, and so is the judgement of the sweep (:meth:`verify.claim.Claim.sweep_faults`): no
seed ends in ``error``; no seed ends ``fails`` on a hypothesis measured through the implementation
(every seed is a declared main instance, built to satisfy the hypotheses: such a violation is a
failure of the suite, whatever the claim's failure rate); among the seeds inside the hypotheses
the conclusion fails no more often than the claim's declared ``failure_rate`` allows. Seeds
``outside-hypotheses`` or ``undecided`` are reported with the diagnostics that decided them. This
test only writes the table (counts per outcome) to the report and asserts that there is no fault.

Each claim is swept on its ``sweep_instance``; E1 on its short profile (:data:`verify.checks.e1.SHORT`,
one of its declared main instances): one E1 verdict already trains at least 34 runs (a 10-seed pilot and at least
7 test seeds of two arms), and the full experiment on 12 further base seeds would take days.
"""

import pytest

from fastslow.verify.registry import CLAIMS, IDS
from fastslow.verify.verdict import outcome_counts

SEEDS = list(range(101, 113))


@pytest.mark.parametrize("cid", [pytest.param(c, marks=pytest.mark.claim(c)) for c in IDS])
def test_verdicts_across_seeds(cid, claim, thorough, check_sweep):
    if not thorough:
        pytest.skip("thorough profile only (--thorough)")
    unit = CLAIMS[cid]
    if not unit.implemented:
        pytest.skip(f"{cid} is pending")
    params = dict(unit.sweep_instance)
    verdicts = check_sweep([dict(claim=cid, seed=s, **params) for s in SEEDS], label=f"{cid} seeds")
    inside = [v for v in verdicts if v.outcome in ("holds", "fails")]
    claim.figure(
        "seed_sweep",
        {
            "seeds": SEEDS,
            "params": params,
            "verdicts": {s: v.outcome for s, v in zip(SEEDS, verdicts)},
            "counts": outcome_counts(v.outcome for v in verdicts),
            "outside_hypotheses": {
                v.seed: v.violated for v in verdicts if v.outcome == "outside-hypotheses"
            },
            "undecided": {v.seed: v.unresolved for v in verdicts if v.outcome == "undecided"},
            "failing": {
                v.seed: v.failed_parts + v.violated for v in verdicts if v.outcome == "fails"
            },
            "allowed_failures": unit.allowed_failures(len(inside)),
        },
    )
    faults = unit.sweep_faults(verdicts)
    assert not faults, faults
