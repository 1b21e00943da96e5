"""E1 — the coupling is neutral at 500k tokens (the first abstract's experiment, on real text).

Pending: declared so that the report lists it, not yet implemented. Its check will train three
small language models of the suite's architecture on the same real, offline, hash-identified text
(dense: fast path only; coupled: slow path and gate trained from g = 0; frozen: slow path with the
gate held at 0), ≥ 3 seeds and ≥ 500,000 training tokens each.
"""

from __future__ import annotations

from ..claim import Claim


class E1(Claim):
    id = "E1"
    title = "The coupling is neutral at 500k tokens"
    abstract = (
        "at 500k tokens the coupling is neutral—the gate stays closed and the coupled and "
        "frozen ablations are within run-to-run noise—at a wall-clock cost comparable to a "
        "dense baseline"
    )
    statement = (
        "Trained on the same real text for ≥ 500,000 tokens and ≥ 3 seeds, (a) every gate of "
        "the coupled model stays within a noise band fixed before training, (b) the held-out "
        "loss gap coupled − frozen lies within the seed-to-seed spread, and (c) the coupled "
        "model's wall-clock per token is within a stated factor of the dense model's."
    )
    implemented = False


CLAIM = E1()
