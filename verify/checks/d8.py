"""D8 — exponential-family emissions: block-mean pooling is sufficient.

Statement: if the tokens of block ``b`` are i.i.d. given a latent parameter that follows a Markov
process across blocks, and the emission is an exponential family with ``T(x) = x`` (Gaussian with
known variance, Poisson, Bernoulli), then the Bayes predictive law of every future token given all
past tokens equals the one given the past block sums (means) and the running sum of the current
block. Negative controls (latent variance, heavy tails, mixture): the pooled predictor has a
strictly larger expected log-loss.

Checked by (exact filters of :mod:`numerics.bayes` on sequences of :mod:`numerics.data`):

* ``gaussian_ar1``: Kalman filter on tokens vs on block means (latent mean AR(1), ``|ρ| < 1``);
* ``gaussian``, ``poisson``, ``bernoulli``: forward filter on tokens vs on block sums, latent
  ``K``-state chain ``A = stay·I + (1 − stay)/K·11ᵀ`` started from its stationary law;
* the maximum over all sequences and tokens of ``|Δ log p(x_t | ·)|`` for the next token, of the
  posterior difference (state probabilities, or Kalman mean/variance) and, on ``n_future``
  sequences, of ``|Δ log p(x_{t'} | info before t)|`` for every pair ``t ≤ t'`` (every future
  token); tolerance ``1e-10`` (absolute, nats / probability);
* the symbolic oracle: for the chain families the pooled posterior is recomputed from
  :func:`theory.exponential_family.sum_factor` (``log g_k(S, θ) = η(θ)S − kA(η)``, the factor of
  the Fisher–Neyman factorisation) and compared with the token filter;
* the expected log-loss gap ``E[log p_full(x_t) − log p_pooled(x_t)]`` (nats per token): mean over
  sequences of the per-sequence average, with a Student-t confidence interval over sequences.

Negative controls (the block mean is not sufficient), each with an *exact* pooled predictor because
the law of the block mean is closed form (see :mod:`numerics.bayes`):

* ``gaussian_scale``: ``N(0, s_z²)`` with a latent scale (geometric from 0.5τ to 2τ); the full
  filter uses ``Σx²``, the pooled one sees the mean ``N(0, s_z²/k)`` only;
* ``cauchy``: Student-t with ``ν = 1`` and latent location; the mean of ``k`` i.i.d. Cauchy(m, s)
  is Cauchy(m, s), so pooling throws away almost everything;
* ``mixture``: ``½N(m_z − 2τ, (τ/2)²) + ½N(m_z + 2τ, (τ/2)²)`` with latent location ``m_z``; the
  block mean is a finite Gaussian mixture over the component counts.

The full predictor is the Bayes predictor, so the gap is ≥ 0 in expectation for every design; the
controls must show a confidence interval that excludes 0, the exponential families a gap that is 0
to ``1e-10`` on every sequence.
"""

from __future__ import annotations

import numpy as np
from scipy.special import stdtrit

from numerics import _validate as v
from numerics.bayes import (hmm_future_logpdf, hmm_pooled_filter, hmm_predictive_logpdf,
                            hmm_token_filter, kalman_future_logpdf, kalman_pooled_filter,
                            kalman_predictive_logpdf, kalman_token_filter)
from numerics.data import (CONTROL_FAMILIES, EXPONENTIAL_FAMILIES, Emission, gaussian_ar1_blocks,
                           hmm_blocks, running_sums, stationary_distribution, sticky_transition)

from . import CheckResult

FAMILY_CHOICES = ("gaussian_ar1",) + EXPONENTIAL_FAMILIES + CONTROL_FAMILIES

DEFAULTS = {
    "family": "poisson", "P": 4, "N": 8, "n_seq": 4000, "K": 3, "stay": 0.8, "rho": 0.8,
    "tau": 1.0, "sigma": 1.0, "n_future": 32, "tolerance": 1e-10, "confidence": 0.95,
}

LIMITS = {"P": (1, 64), "N": (1, 64), "n_seq": (10, 200_000), "K": (2, 8), "n_future": (1, 256),
          "tau": (1e-6, 1e6), "sigma": (1e-6, 1e6)}
"""Bounds that keep a user's instance small enough to finish in seconds (``fastslow check`` rejects values outside them)."""


def default_emission(family: str, K: int, tau: float = 1.0, sigma: float = 1.0) -> Emission:
    """The emission used by the check for a chain family with ``K`` states (see module docstring)."""
    u = np.linspace(-1.0, 1.0, K) if K > 1 else np.zeros(1)
    if family == "gaussian":
        return Emission.gaussian(1.5 * tau * u, sigma)
    if family == "poisson":
        return Emission.poisson(np.exp(1.0 + u))
    if family == "bernoulli":
        return Emission.bernoulli(0.5 + 0.35 * u)
    if family == "gaussian_scale":
        return Emission.gaussian_scale(np.zeros(K), tau * 2.0 ** u)
    if family == "cauchy":
        return Emission.cauchy(1.5 * tau * u, tau)
    if family == "mixture":
        return Emission.mixture(tau * u, [-2.0 * tau, 2.0 * tau], [0.5, 0.5], [0.5 * tau] * 2)
    raise ValueError(f"unknown family {family!r}; expected one of {list(FAMILY_CHOICES)}")


def _theory_theta(em: Emission) -> tuple[np.ndarray, float]:
    if em.family == "gaussian":
        return em["means"], float(em["sigma"][0])
    if em.family == "poisson":
        return em["rates"], 1.0
    return em["probs"], 1.0


def theory_pooled_posterior(em: Emission, A: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """Pooled forward filter whose block likelihood is the symbolic sufficient-statistic factor
    ``g_k(S, θ_z)`` of :func:`theory.exponential_family.sum_factor` (exponential families only)."""
    from theory.exponential_family import sum_factor

    fn = sum_factor(em.family)["numeric"]
    theta, sig = _theory_theta(em)
    n, N, P1 = sums.shape
    P = P1 - 1
    K = theta.size
    pi = stationary_distribution(A)
    out = np.empty((n, N, P, K))
    prior = np.tile(pi, (n, 1))
    with np.errstate(divide="ignore"):
        for b in range(N):
            lp = np.log(prior)
            for k in range(P + 1):
                lg = np.asarray(fn(sums[:, b, k, None], float(k), theta[None, :], sig), dtype=float)
                lg = np.broadcast_to(lg, (n, K))
                z = lp + lg
                wk = np.exp(z - z.max(axis=1, keepdims=True))
                wk /= wk.sum(axis=1, keepdims=True)
                if k < P:
                    out[:, b, k] = wk
                else:
                    prior = wk @ A
    return out.reshape(n, N * P, K)


def compare_chain(em: Emission, A: np.ndarray, x: np.ndarray, P: int, n_future: int) -> dict:
    """Full vs pooled forward filters on the sequences ``x`` of a finite-state chain."""
    S = running_sums(x, P)
    w_full = hmm_token_filter(x, P, em, A)
    w_pool = hmm_pooled_filter(S, P, em, A)
    lp_full = hmm_predictive_logpdf(em, w_full, x)
    lp_pool = hmm_predictive_logpdf(em, w_pool, x)
    m = min(n_future, x.shape[0])
    out = {"lp_full": lp_full, "lp_pool": lp_pool,
           "max_abs_posterior_diff": float(np.abs(w_full - w_pool).max())}
    if m:
        F1 = hmm_future_logpdf(em, w_full[:m], x[:m], P, A)
        F2 = hmm_future_logpdf(em, w_pool[:m], x[:m], P, A)
        fin = np.isfinite(F1)
        out["max_abs_future_logpdf_diff"] = float(np.abs(F1[fin] - F2[fin]).max())
        out["future_pairs_compared"] = int(fin.sum())
    if em.exponential_family:
        w_th = theory_pooled_posterior(em, A, S)
        out["max_abs_theory_posterior_diff"] = float(np.abs(w_full - w_th).max())
    return out


def compare_ar1(x: np.ndarray, P: int, rho: float, tau: float, sigma: float, n_future: int) -> dict:
    """Kalman filter on tokens vs on block means for the AR(1) latent mean."""
    kw = dict(rho=rho, tau=tau, sigma=sigma)
    m1, v1 = kalman_token_filter(x, P, **kw)
    m2, v2 = kalman_pooled_filter(running_sums(x, P), P, **kw)
    out = {"lp_full": kalman_predictive_logpdf(x, m1, v1, sigma=sigma),
           "lp_pool": kalman_predictive_logpdf(x, m2, v2, sigma=sigma),
           "max_abs_posterior_diff": float(max(np.abs(m1 - m2).max(), np.abs(v1 - v2).max()))}
    m = min(n_future, x.shape[0])
    if m:
        F1 = kalman_future_logpdf(x[:m], m1[:m], v1[:m], P, **kw)
        F2 = kalman_future_logpdf(x[:m], m2[:m], v2[:m], P, **kw)
        fin = np.isfinite(F1)
        out["max_abs_future_logpdf_diff"] = float(np.abs(F1[fin] - F2[fin]).max())
        out["future_pairs_compared"] = int(fin.sum())
    return out


def gap_interval(lp_full: np.ndarray, lp_pool: np.ndarray, confidence: float) -> dict:
    """Expected log-loss gap (nats/token) with a t-interval over sequences."""
    per_seq = (lp_full - lp_pool).mean(axis=1)
    n = per_seq.size
    mean = float(per_seq.mean())
    se = float(per_seq.std(ddof=1) / np.sqrt(n)) if n > 1 else float("inf")
    q = float(stdtrit(max(n - 1, 1), 0.5 + confidence / 2))
    return {"gap_mean": mean, "gap_se": se, "gap_ci": (mean - q * se, mean + q * se),
            "logloss_full": float(-lp_full.mean()), "logloss_pooled": float(-lp_pool.mean())}


def _validate(p: dict) -> None:
    v.choice("family", p["family"], FAMILY_CHOICES)
    for key in ("P", "N", "n_seq", "K"):
        v.positive_int(key, p[key])
    v.nonneg_int("n_future", p["n_future"])
    v.real("stay", p["stay"], low=0.0, high=1.0, high_open=True)
    v.real("rho", p["rho"], low=-1.0, high=1.0, low_open=True, high_open=True)
    v.real("tau", p["tau"], low=0.0, low_open=True)
    v.real("sigma", p["sigma"], low=0.0, low_open=True)
    v.real("tolerance", p["tolerance"], low=0.0, low_open=True)
    v.real("confidence", p["confidence"], low=0.0, high=1.0, low_open=True, high_open=True)
    if p["n_seq"] < 2:
        raise ValueError(f"n_seq must be ≥ 2 for a confidence interval, got {p['n_seq']}")


def check(params: dict, seed: int) -> CheckResult:
    p = params
    _validate(p)
    fam, P, N = p["family"], p["P"], p["N"]
    data_seed = np.random.SeedSequence(seed).spawn(1)[0]
    if fam == "gaussian_ar1":
        data = gaussian_ar1_blocks(p["n_seq"], N, P, rho=p["rho"], tau=p["tau"], sigma=p["sigma"],
                                   seed=data_seed)
        res = compare_ar1(data.x, P, p["rho"], p["tau"], p["sigma"], p["n_future"])
        exp_family = True
    else:
        em = default_emission(fam, p["K"], p["tau"], p["sigma"])
        A = sticky_transition(p["K"], p["stay"])
        data = hmm_blocks(p["n_seq"], N, P, em, A, seed=data_seed)
        res = compare_chain(em, A, data.x, P, p["n_future"])
        exp_family = em.exponential_family
    lp_full, lp_pool = res.pop("lp_full"), res.pop("lp_pool")
    figures = {"max_abs_next_token_logpdf_diff": float(np.abs(lp_full - lp_pool).max())}
    figures.update(res)
    figures.update(gap_interval(lp_full, lp_pool, p["confidence"]))
    tol = p["tolerance"]
    diffs = [figures[k] for k in ("max_abs_next_token_logpdf_diff", "max_abs_posterior_diff",
                                  "max_abs_future_logpdf_diff", "max_abs_theory_posterior_diff")
             if k in figures]
    holds = bool(max(diffs) <= tol)
    figures["max_diff_in_tolerance_units"] = float(max(diffs) / tol)
    figures["gap_ci_excludes_zero"] = bool(figures["gap_ci"][0] > tol)
    notes = ["gap = E[log p_full − log p_pooled] in nats per token; interval over sequences"]
    if not exp_family:
        notes.append(f"{fam}: the block mean is not sufficient; the pooled predictor is the exact "
                     "best predictor from block means (closed-form law of the mean)")
    return CheckResult(
        id="D8", holds=holds, hypotheses_hold=exp_family, figures=figures, params=dict(p),
        seed=seed, tolerance={"max_abs_diff": tol, "confidence": p["confidence"]}, notes=notes)
