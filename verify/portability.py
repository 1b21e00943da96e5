"""Portability of a verdict: the same instance decided again while every decomposition of
:mod:`numerics.lapack` hands out another valid answer (:func:`numerics.lapack.other_valid_answers`).

Claim tests call :func:`assert_portable` on their main instance and each negative control.
"""

from __future__ import annotations

from numerics import lapack

from .registry import get_claim, run_check


def assert_portable(
    cid: str,
    params: dict | None = None,
    seed: int | None = None,
    *,
    control: str | None = None,
    figures=None,
    rtol: float = 0.0,
    lapack_seeds=(1, 2),
    cond: float = 1e12,
) -> None:
    """Decide ``cid`` on the instance as usual and once inside ``other_valid_answers(s, cond)`` for
    every ``s`` in ``lapack_seeds``; assert the same outcome, the same violated hypotheses and
    failed conclusion parts, and the same ``figures`` (default: the claim's key figures), equal,
    or to relative ``rtol`` when it is positive."""
    keys = get_claim(cid).key_figures if figures is None else figures
    base = run_check(cid, params, seed, control=control)
    for s in lapack_seeds:
        with lapack.other_valid_answers(seed=s, cond=cond):
            other = run_check(cid, params, seed, control=control)
        assert other.outcome == base.outcome, (s, base.summary(), other.summary())
        assert other.violated == base.violated and other.failed_parts == base.failed_parts, s
        for key in keys:
            a, b = base.figures[key], other.figures[key]
            if rtol > 0:
                assert abs(a - b) <= rtol * max(abs(a), 1e-300), (s, key, a, b)
            else:
                assert a == b, (s, key, a, b)
