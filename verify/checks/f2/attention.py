"""F2's attention link (:mod:`verify.checks.f2`): the masks' frozen kernels read as Markov
generators, row by row up to ``P_max``, and the parts that compare them with the chain.

A module of the claim unit :mod:`verify.checks.f2`; the claim (statement, hypotheses,
caveats) and its verdict are in :mod:`verify.checks.f2.claim`.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.masks import frozen_kernel
from fastslow.numerics.toy import markov
from fastslow.theory import markov as theory_markov

from ...verdict import Diagnostic

CAUSAL_GAP, CAUSAL_GAP_TOL = 0.5, 1e-12
"""The within-block causal chain's spectral gap, exactly 1/2, to rounding."""


def attention_link_row(kind: str, P: int) -> dict:
    """The within-block frozen kernel of size ``P`` as the generator ``(K − I)ᵀ``: numerically
    and exactly, its ``p_st``, conserved quantities, classes and gap."""
    K = frozen_kernel(kind, P, P)  # one block: T = P
    G = (K - np.eye(P)).T  # column convention
    try:
        p_num = markov.stationary_distribution(G)
    except ValueError:  # the code under test finds no distribution: every comparison fails
        p_num = np.full(P, np.inf)
    exact = theory_markov.within_block_stationary(kind, P)
    p_ex = np.array([float(x) for x in exact["p_st"]])
    K_ex = np.array(exact["kernel"].tolist(), dtype=float)
    uniform, first = np.full(P, 1.0 / P), np.eye(P)[0]
    mean_defect = float(np.abs(uniform @ (K - np.eye(P))).max())  # d/dτ of the block mean
    first_defect = float(np.abs(first @ (K - np.eye(P))).max())  # d/dτ of the first token
    return {
        "P": P,
        "kernel_vs_exact": float(np.abs(K - K_ex).max()),
        "p_numeric_vs_exact": float(np.abs(p_num - p_ex).max()),
        "p_vs_uniform": float(np.abs(p_num - uniform).max()),
        "p_vs_first_token": float(np.abs(p_num - first).max()),
        "block_mean_conservation_defect": mean_defect,
        "first_token_conservation_defect": first_defect,
        "irreducible_numeric": markov.is_irreducible(G),
        "irreducible_exact": bool(exact["irreducible"]),
        "closed_classes": markov.closed_classes(G),
        "null_dim_exact": int(exact["null_dim"]),
        "spectral_gap": markov.spectral_gap(G),
    }


def attention_link(P_max: int) -> dict:
    """Stationary distributions of the within-block frozen kernels for ``P = 2..P_max``,
    numerically and exactly, with a summary over the block sizes."""
    out = {
        kind: [attention_link_row(kind, P) for P in range(2, P_max + 1)]
        for kind in ("block_bidirectional", "block_causal")
    }
    bi, ca = out["block_bidirectional"], out["block_causal"]
    out["summary"] = {
        "max_p_numeric_vs_exact": max(r["p_numeric_vs_exact"] for r in bi + ca),
        "max_kernel_vs_exact": max(r["kernel_vs_exact"] for r in bi + ca),
        "bidirectional_max_p_vs_uniform": max(r["p_vs_uniform"] for r in bi),
        "bidirectional_max_block_mean_defect": max(r["block_mean_conservation_defect"] for r in bi),
        "causal_max_p_vs_first_token": max(r["p_vs_first_token"] for r in ca),
        "causal_max_first_token_defect": max(r["first_token_conservation_defect"] for r in ca),
        "causal_min_block_mean_defect": min(r["block_mean_conservation_defect"] for r in ca),
        "bidirectional_irreducible": all(
            r["irreducible_numeric"] and r["irreducible_exact"] for r in bi
        ),
        "causal_irreducible": any(r["irreducible_numeric"] or r["irreducible_exact"] for r in ca),
        "causal_single_closed_class": all(
            r["closed_classes"] == [[0]] and r["null_dim_exact"] == 1 for r in ca
        ),
    }
    return out


def attention_link_parts(P_max: int, tol: float) -> tuple[dict, dict]:
    """Part 4: numerics and theory build the same kernels and ``p_st``; the bidirectional chain
    has a uniform ``p_st`` and conserves the block mean; the causal one has ``p_st = e_1``."""
    link = attention_link(P_max)
    s = link["summary"]
    gap_off = float(max(abs(r["spectral_gap"] - CAUSAL_GAP) for r in link["block_causal"]))
    parts = {
        "attention_link_matches_theory": Diagnostic(
            s["max_kernel_vs_exact"] == 0.0 and s["max_p_numeric_vs_exact"] <= tol,
            {"kernel": s["max_kernel_vs_exact"], "p_st": s["max_p_numeric_vs_exact"]},
            "max |K_numeric − K_exact| = 0 and max |p numeric − exact| ≤ manifold_tol",
        ),
        "attention_link_bidirectional_uniform": Diagnostic(
            s["bidirectional_irreducible"]
            and s["bidirectional_max_p_vs_uniform"] <= tol
            and s["bidirectional_max_block_mean_defect"] <= tol,
            {
                "p_vs_uniform": s["bidirectional_max_p_vs_uniform"],
                "block_mean_defect": s["bidirectional_max_block_mean_defect"],
                "irreducible": s["bidirectional_irreducible"],
            },
            "irreducible, max |p − 1/P| ≤ manifold_tol, max |1ᵀ(K − I)/P| ≤ manifold_tol",
        ),
        "attention_link_causal_first_token": Diagnostic(
            (not s["causal_irreducible"])
            and s["causal_single_closed_class"]
            and s["causal_max_p_vs_first_token"] <= tol
            and s["causal_max_first_token_defect"] == 0.0
            and s["causal_min_block_mean_defect"] > tol
            and gap_off <= CAUSAL_GAP_TOL,
            {
                "irreducible": s["causal_irreducible"],
                "single_closed_class": s["causal_single_closed_class"],
                "p_vs_first_token": s["causal_max_p_vs_first_token"],
                "first_token_defect": s["causal_max_first_token_defect"],
                "min_block_mean_defect": s["causal_min_block_mean_defect"],
                "max_gap_minus_half": gap_off,
            },
            "not irreducible, closed classes = [[0]], max |p − e_1| ≤ manifold_tol, "
            "e_1ᵀ(K − I) = 0, min block-mean defect > manifold_tol, |gap − 1/2| ≤ 1e-12",
        ),
    }
    return parts, {"attention_link": link}
