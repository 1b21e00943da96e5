"""Every negative control declared by a claim unit, run through the same path as
``fastslow check ID --control NAME``.

A control *fails as predicted* when the claim's own hypothesis diagnostics find the hypothesis it
breaks violated (outcome ``outside-hypotheses``) and the conclusion fails on it
(:meth:`verify.claim.Claim.fails_as_predicted`); the report reads the same verdicts.
"""

import pytest

from fastslow.verify.registry import CLAIMS, IDS, run_check


def _controls():
    out = []
    for cid in IDS:
        unit = CLAIMS[cid]
        if not unit.implemented:
            continue
        for ctl in unit.controls:
            out.append(
                pytest.param(cid, ctl.name, marks=pytest.mark.claim(cid), id=f"{cid}-{ctl.name}")
            )
    return out


@pytest.mark.parametrize("cid, control", _controls())
def test_negative_control_breaks_its_hypothesis_and_the_conclusion_fails(cid, control, claim):
    verdict = claim.negative(run_check(cid, control=control))
    assert CLAIMS[cid].fails_as_predicted(verdict), verdict.summary()
