"""Every claim that takes a ``DepthFlow``, checked on one trained network: a row per claim.

:func:`claims_on` runs the check of :data:`CLAIM_IDS` on a
:class:`~verify.trained.TrainedStack` and returns, per claim, the outcome and what decided it:
the hypotheses that do not hold (with their values), the conclusion parts that fail, or the one
line of bad input when the network is outside the claim's size limits (its dense maps).

:data:`EVALUATED_AT` says at which states each claim evaluates a trained network (the claims'
own ``Instance`` classes, which draw the states from the check's seed as for any ``DepthFlow``);
``docs/claims.md`` carries it (:func:`verify.report`'s generator reads it through
:func:`evaluated_at`).
"""

from __future__ import annotations

CLAIM_IDS = ("A1", "A3", "D1", "D3", "D4", "D5", "D6", "D7", "F1")
"""The claims that check a ``DepthFlow``, hence a trained stack."""

EVALUATED_AT = {
    "A1": "the trained weights with gates redrawn about the largest trained |g| (A1 needs every "
    "gate non-zero), at Gaussian token states X_0 from the check's seed",
    "A3": "the trained weights and gates at Gaussian X_0 from the check's seed; A3's statement is "
    "at closed gates (g = 0), so an open trained gate is outside its hypotheses",
    "D1": "the trained weights and gates at Gaussian X_0 from the check's seed; dense Jacobians "
    "at the network's own size within the memory and time budgets (E1's short profile, "
    "n = T·d = 2048: estimated 300 s, 464 MiB; the paper profile, n = 8192: about 10 h, refused "
    "by the default time budget)",
    "D3": "the trained stack at a homogeneous state X_0 = 1 xᵀ (x from the check's seed); its "
    "statement is at closed gates",
    "D4": "the trained stack at a homogeneous state from the check's seed (the linearised stack "
    "on the frozen kernel of the fast mask)",
    "D5": "the trained stack at a homogeneous state from the check's seed (the mode ratios of the "
    "frozen kernel, the saturation depth L*)",
    "D6": "the trained stack at a homogeneous reference X_0 = E from the check's seed; its "
    "statement is at closed gates: every layer's own trained gate must be 0 (gate_zero, decided "
    "from the weights before the sizes: an open gate is outside at any size); dense maps: "
    "T·d ≤ 128",
    "D7": "every trained layer in turn: the fixed point X* of its looped layer (gate 0) iterated "
    "from random embeddings of the check's seed (with RMS norm), J and G there; each part holds "
    "when it holds for every layer. The autoregressive slow path with a causal or block-local "
    "fast mask fixes ρ(J + gG) (gate_moves_spectrum, decided from the masks before the sizes); "
    "dense: T·d ≤ 96",
    "F1": "the full depth flow of the trained weights from the check's start and injection; "
    "F1 needs a block-local fast mask (decided from the mask before the sizes: E1's causal mask "
    "is outside) and its sizes (P ≤ 4, d ≤ 4)",
}
"""At which states each claim evaluates a trained network."""


def evaluated_at(claim_id: str) -> str | None:
    """The states at which ``claim_id`` evaluates trained weights, or ``None`` (not a claim that
    takes a trained stack)."""
    return EVALUATED_AT.get(claim_id)


def claims_on(system, seed: int = 0, ids=CLAIM_IDS) -> list[dict]:
    """One row per claim of ``ids``: ``{"claim", "outcome", "why", "exit"}`` (``why``: the
    hypotheses that do not hold, the failing parts, or the bad-input line)."""
    from .registry import CLAIMS  # deferred: the registry imports every claim unit

    rows = []
    for cid in ids:
        try:
            v = CLAIMS[cid].check(system=system, seed=seed)
        except (ValueError, TypeError) as exc:
            rows.append({"claim": cid, "outcome": "bad input", "why": str(exc), "exit": 2})
            continue
        hyps = [f"{k} ({_value(d.value)})" for k, d in v.hypotheses.items() if not d.holds]
        parts = [f"{k} ({_value(d.value)})" for k, d in v.conclusion.items() if not d.holds]
        limits = [k for k, d in v.limits.items() if not d.holds]
        why = "; ".join(
            x
            for x in (
                hyps and "outside: " + ", ".join(hyps),
                parts and "fails: " + ", ".join(parts),
                limits and "limits: " + ", ".join(limits),
            )
            if x
        )
        rows.append({"claim": cid, "outcome": v.outcome, "why": why, "exit": v.exit_code})
    return rows


def _value(x) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)[:40]
