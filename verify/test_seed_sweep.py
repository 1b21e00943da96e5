"""Thorough profile: every claim's check on many seeds, run through the sweep API.

Under ``pytest verify --thorough`` each claim's default instance is checked on 12 further seeds
as points of a :mod:`fastslow.sweep` sweep (a local process pool by default; ``--scheduler`` for a
Dask cluster). Deterministic claims must hold on every seed. The statistical claims (D8, D9:
confidence intervals at 95 %, |z| < 3) may miss on a few seeds by construction; for them the
fraction of seeds on which the check holds must be at least ``STATISTICAL[ID]``. The fraction is
written to the report for every claim.
"""

import pytest

from verify.registry import CLAIMS

SEEDS = list(range(101, 113))
STATISTICAL = {"D8": 0.75, "D9": 0.75}


@pytest.mark.parametrize("cid", [pytest.param(c, marks=pytest.mark.claim(c)) for c in CLAIMS])
def test_conclusion_holds_across_seeds(cid, claim, thorough, check_sweep):
    if not thorough:
        pytest.skip("thorough profile only (--thorough)")
    results = check_sweep([dict(claim=cid, seed=s) for s in SEEDS], label=f"{cid} seeds")
    holds = [r.holds for r in results]
    fraction = sum(holds) / len(holds)
    claim.figure("seed_sweep", {"seeds": SEEDS, "holds_fraction": fraction,
                                "failing_seeds": [s for s, h in zip(SEEDS, holds) if not h]})
    assert all(r.hypotheses_hold for r in results)
    assert fraction >= STATISTICAL.get(cid, 1.0), f"{cid} holds on {sum(holds)}/{len(holds)} seeds"
