"""F2's attention-link rows (verify/checks/f2/attention.py) when the code under test finds no
stationary distribution: every comparison of the row fails (∞), nothing raises."""

from __future__ import annotations

import math

from fastslow.verify.checks.f2 import attention


def test_no_stationary_distribution_found_makes_every_comparison_fail(monkeypatch):
    def none_found(G):
        raise ValueError("several closed classes")

    monkeypatch.setattr(attention.markov, "stationary_distribution", none_found)
    row = attention.attention_link_row("block_bidirectional", 3)
    assert math.isinf(row["p_numeric_vs_exact"])
    assert row["kernel_vs_exact"] < 1e-12  # the exact side is still computed


def test_the_row_of_the_bidirectional_block_matches_its_exact_distribution():
    row = attention.attention_link_row("block_bidirectional", 3)
    assert row["p_numeric_vs_exact"] < 1e-12
