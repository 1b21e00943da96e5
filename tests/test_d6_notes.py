"""D6's notes say only what the instance shows: the remark that Q, K stay invisible on a
heterogeneous reference is made exactly when persistent tokens attend only to themselves there."""

from __future__ import annotations

import pytest

from fastslow.verify.registry import run_check

NOTE = "persistent tokens attend only to themselves"


@pytest.mark.parametrize(
    "params, noted",
    [
        ({"reference": "heterogeneous", "mask": "block_causal"}, True),
        ({"reference": "heterogeneous"}, False),  # block-bidirectional: persistent tokens see all
        ({"mask": "block_causal"}, False),  # a homogeneous reference: nothing to remark
        ({}, False),
    ],
)
def test_the_invisibility_remark_is_made_exactly_where_it_holds(params, noted):
    v = run_check("D6", params, seed=0)
    assert any(NOTE in n for n in v.notes) is noted, v.notes
