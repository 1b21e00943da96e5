"""Thorough profile: every claim's default instance on 12 further seeds, as one sweep per claim.

Under ``pytest verify --thorough`` each implemented claim is decided on :data:`SEEDS` (a local
process pool by default; ``--scheduler`` for a Dask cluster). The verdict of every seed is the
unit's own; this test only counts them and writes the table to the report:

* no seed may end in ``error``;
* a seed outside the hypotheses is reported (with the diagnostic that decided it), not counted
  as a failure: the claim says nothing about it;
* among the seeds inside the hypotheses, a deterministic claim (``failure_rate = 0``) must hold
  on every one; a statistical claim may fail on as many as its declared ``failure_rate`` allows,
  up to the 99.9 % binomial quantile.

E1 is swept on its short profile (:data:`verify.checks.e1.SHORT`): one E1 verdict already trains
three models on three seeds each, and the full experiment on 12 further base seeds would take hours.
"""

import pytest
from scipy.stats import binom

from fastslow.verify.checks.e1 import SHORT as E1_SHORT
from fastslow.verify.registry import CLAIMS, IDS

SEEDS = list(range(101, 113))
SWEPT_PARAMS = {"E1": E1_SHORT}
"""The parameters of a claim's seed sweep where they are not its defaults."""


def allowed_failures(rate: float, n: int) -> int:
    """The 99.9 % quantile of Binomial(n, rate): failures compatible with the declared rate."""
    return 0 if rate == 0 else int(binom.ppf(0.999, n, rate))


@pytest.mark.parametrize("cid", [pytest.param(c, marks=pytest.mark.claim(c)) for c in IDS])
def test_verdicts_across_seeds(cid, claim, thorough, check_sweep):
    if not thorough:
        pytest.skip("thorough profile only (--thorough)")
    unit = CLAIMS[cid]
    if not unit.implemented:
        pytest.skip(f"{cid} is pending")
    params = SWEPT_PARAMS.get(cid, {})
    verdicts = check_sweep([dict(claim=cid, seed=s, **params) for s in SEEDS], label=f"{cid} seeds")
    table = {s: v.outcome for s, v in zip(SEEDS, verdicts)}
    inside = [v for v in verdicts if v.outcome in ("holds", "fails")]
    failed = [v.seed for v in verdicts if v.outcome == "fails"]
    claim.figure(
        "seed_sweep",
        {
            "seeds": SEEDS,
            "params": params,
            "verdicts": table,
            "outside_hypotheses": {
                v.seed: v.violated for v in verdicts if v.outcome == "outside-hypotheses"
            },
            "failing": {v.seed: v.failed_parts for v in verdicts if v.outcome == "fails"},
            "allowed_failures": allowed_failures(unit.failure_rate, len(inside)),
        },
    )
    errors = [v.summary() for v in verdicts if v.outcome == "error"]
    assert not errors, errors
    assert inside, f"{cid}: every seed is outside the hypotheses: {table}"
    assert len(failed) <= allowed_failures(unit.failure_rate, len(inside)), (
        f"{cid} fails on seeds {failed} of {len(inside)} inside the hypotheses"
    )
