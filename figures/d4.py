"""D4 figures: the non-normality of the causal kernel (eigenvector condition number against T)
and the float64 accuracy of the eigen form against the polynomial form."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

import numerics as nm
from figures import figure
from numerics import linearised as lin
from verify.checks import run_check


@figure("D4", "d4_causal_eigenbasis_condition")
def d4_causal_eigenbasis_condition(seed: int = 0):
    Ts = [2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64]
    exact = [lin.causal_eigenvector_condition(T) for T in Ts]
    numpy_eig = [float(np.linalg.cond(np.linalg.eig(nm.frozen_kernel("causal", T))[1])) for T in Ts]
    eig_Ts = [4, 8, 12, 16, 20]
    eig_err, poly_err = [], []
    for T in eig_Ts:
        f = run_check("D4", {"T": T, "P": 4, "eig_max_T": 20, "theory_max_d": 0, "report_condition": False},
                      seed=seed).figures
        eig_err.append(max(f["eigen_form_vs_poly_rel"], 1e-17))
        poly_err.append(max(f["poly_vs_jvp_rel"], 1e-17))
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
    b.set_xlabel("T (causal mask, d=4, L=6)")
    b.set_ylabel("relative error (float64)")
    b.set_title("the eigen form degrades like the condition number", fontsize=9)
    b.legend(fontsize=7)
    return fig, {"Ts": Ts, "eig_Ts": eig_Ts, "seed": seed}
