"""Portability of a verdict: the same instance decided again while every decomposition of
:mod:`numerics.lapack` hands out another valid answer (:func:`numerics.lapack.other_valid_answers`).

Claim tests call :func:`assert_portable` on their main instance and each negative control; tests
with comparisons of their own use :func:`under_other_answers` and :func:`assert_same_decision`.
"""

from __future__ import annotations

from fastslow.numerics import lapack

from .registry import get_claim, run_check
from .verdict import Verdict


def under_other_answers(
    cid: str,
    params: dict | None = None,
    seed: int | None = None,
    *,
    control: str | None = None,
    lapack_seeds=(1, 2),
    cond: float = 1e12,
):
    """``(base, others)``: the verdict on the instance as usual, and one verdict inside
    ``other_valid_answers(s, cond)`` for every ``s`` in ``lapack_seeds``."""
    base = run_check(cid, params, seed, control=control)
    others = []
    for s in lapack_seeds:
        with lapack.other_valid_answers(seed=s, cond=cond):
            others.append(run_check(cid, params, seed, control=control))
    return base, others


def assert_same_decision(base: Verdict, other: Verdict) -> None:
    """The same outcome, the same violated hypotheses and the same failed conclusion parts."""
    assert other.outcome == base.outcome, (base.summary(), other.summary())
    assert other.violated == base.violated and other.failed_parts == base.failed_parts


def assert_portable(
    cid: str,
    params: dict | None = None,
    seed: int | None = None,
    *,
    figures=None,
    rtol: float = 0.0,
    control: str | None = None,
    lapack_seeds=(1, 2),
    cond: float = 1e12,
) -> None:
    """Decide ``cid`` on the instance as usual and once inside ``other_valid_answers(s, cond)`` for
    every ``s`` in ``lapack_seeds``; assert the same decision (:func:`assert_same_decision`) and
    the same ``figures`` (default: the claim's key figures), equal, or to relative ``rtol`` when it
    is positive."""
    keys = get_claim(cid).key_figures if figures is None else figures
    base, others = under_other_answers(
        cid, params, seed, control=control, lapack_seeds=lapack_seeds, cond=cond
    )
    for other in others:
        assert_same_decision(base, other)
        for key in keys:
            a, b = base.figures[key], other.figures[key]
            if rtol > 0:
                assert abs(a - b) <= rtol * abs(a), (key, a, b)
            else:
                assert a == b, (key, a, b)
