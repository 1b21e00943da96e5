"""D4 figures: the non-normality of the causal kernel (eigenvector condition number against T)
and the float64 accuracy of the eigen form against the polynomial form."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.registry import get_claim, run_check

TS = (2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64)
"""Sizes of the condition-number panel (the D4 check's ``cond_Ts``)."""
EIG_TS = (4, 8, 12, 16, 20)
"""Sizes of the accuracy panel (one D4 check each)."""
CHECK = {"eig_max_T": 20, "theory_max_d": 0, "report_condition": False}
"""Overrides of the D4 defaults (``get_claim("D4").defaults()``) for the accuracy panel."""
ERROR_FLOOR = 1e-17
"""Errors below this (an exact 0) are drawn at it on the log axis."""


def d4_case(seed: int, panel: str, T: int | None = None) -> dict:
    """One D4 check: its causal eigenvector condition numbers for every size in :data:`TS`
    (``panel="condition"``), or its two float64 errors at size ``T`` (``panel="accuracy"``)."""
    if panel == "condition":
        series = run_check("D4", {"cond_Ts": TS}, seed=seed).series
        return {"exact": series["cond_exact"], "numpy_eig": series["cond_numpy_eig"]}
    if panel == "accuracy":
        f = run_check("D4", {"T": T, **CHECK}, seed=seed).figures
        return {
            "eig_err": max(float(f["eigen_form_vs_poly_rel"]), ERROR_FLOOR),
            "poly_err": max(float(f["poly_vs_jvp_rel"]), ERROR_FLOOR),
        }
    raise ValueError(f"unknown D4 panel {panel!r}")


def _points(seed: int) -> list[dict]:
    return [dict(seed=seed, panel="condition")] + [
        dict(seed=seed, panel="accuracy", T=T) for T in EIG_TS
    ]


@figure(
    "D4",
    "d4_causal_eigenbasis_condition",
    compute=d4_case,
    points=_points,
    no_system="a ladder of sizes T of the built-in causal mask (its eigenbasis' condition "
    "number against T), not a property of one flow",
)
def d4_causal_eigenbasis_condition(data: list, seed: int):
    Ts, eig_Ts = list(TS), list(EIG_TS)
    cond, acc = data[0], data[1:]
    exact, numpy_eig = cond["exact"], cond["numpy_eig"]
    eig_err = [a["eig_err"] for a in acc]
    poly_err = [a["poly_err"] for a in acc]
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.5, 3.6), constrained_layout=True)
    a.semilogy(Ts, exact, "o-", ms=3, label="exact (closed-form eigenvectors)")
    a.semilogy(Ts, numpy_eig, "s--", ms=3, label="numpy.linalg.eig, float64")
    a.axhline(1 / np.finfo(float).eps, color="k", ls=":", lw=0.8, label="1/eps")
    a.set_xlabel("T")
    a.set_ylabel("cond₂ of unit-column eigenvector matrix")
    a.set_title("causal kernel: non-normality", fontsize=9)
    a.legend(fontsize=7)
    b.semilogy(eig_Ts, eig_err, "o-", ms=3, label="eigen form vs polynomial form")
    b.semilogy(eig_Ts, poly_err, "s-", ms=3, label="polynomial form vs JVP")
    dflt = get_claim("D4").defaults()
    b.set_xlabel(f"T ({dflt['mask']} mask, d={dflt['d']}, L={dflt['L']})")
    b.set_ylabel("relative error (float64)")
    b.set_title("the eigen form degrades like the condition number", fontsize=9)
    b.legend(fontsize=7)
    return fig, {"Ts": Ts, "eig_Ts": eig_Ts, "seed": seed}
