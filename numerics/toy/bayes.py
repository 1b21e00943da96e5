"""Exact Bayes predictors for block sequences: on all tokens vs on block sums only.

Two information sets are compared for the predictive law of a token ``x_t`` in block ``b`` at
position ``k`` (``k`` tokens of block ``b`` already seen):

* **full**: every past token ``x_{<t}``;
* **pooled**: the sums (equivalently means) of the past blocks ``S_1 … S_{b−1}`` and the running sum
  ``S_{b,k} = Σ_{j<k} x_{b,j}`` of the current block.

Because the tokens of a block are i.i.d. given the block's latent parameter ``z_b`` and a token is
independent of the earlier ones given ``z_b``, the predictive law of *every* future token is
``Σ_z w(z)·p(x | z)`` propagated by the latent chain, where ``w`` is the filtering posterior of the
current block's state. The two predictors therefore agree for all future tokens iff their
posteriors agree, which holds for all data exactly when the block sum is sufficient for ``z``
(exponential families with ``T(x) = x``, Fisher–Neyman). Functions:

* Gaussian AR(1) latent mean (:func:`numerics.toy.data.gaussian_ar1_blocks`): Kalman filters
  :func:`kalman_token_filter` (token by token, gain form) and :func:`kalman_pooled_filter` (block
  means observed with variance ``σ²/P``, current running mean with ``σ²/k``, information form).
  They return the predictive moments ``(m_t, v_t)`` of ``η_{b(t)}`` given the information available
  before token ``t``; the token predictive is ``N(m_t, v_t + σ²)``.
* Finite-state latent chains (:func:`numerics.toy.data.hmm_blocks`): forward filters
  :func:`hmm_token_filter` (one token at a time) and :func:`hmm_pooled_filter` (emission of a block
  = exact law of its sum/mean, :func:`mean_loglik`), returning the state posterior before each token.
  The pooled filter is the *best predictor from block means* for any emission, exponential or not:
  it is exact also for the negative controls, whose block-mean laws are closed form here
  (``gaussian_scale``: ``N(m_z, s_z²/k)``; ``cauchy``: the mean of ``k`` i.i.d. Cauchy(m, s) is
  Cauchy(m, s); ``mixture``: a finite Gaussian mixture over the component counts).

Log densities are natural logarithms (nats). Public functions validate their inputs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

from fastslow.numerics import validation
from fastslow.numerics.toy.data import (
    Emission,
    checked_distribution,
    checked_transition,
    stationary_distribution,
)

__all__ = [
    "kalman_token_filter",
    "kalman_pooled_filter",
    "kalman_predictive_logpdf",
    "kalman_future_logpdf",
    "token_loglik",
    "mean_loglik",
    "hmm_token_filter",
    "hmm_pooled_filter",
    "hmm_predictive_logpdf",
    "hmm_future_logpdf",
]

_LOG2PI = math.log(2.0 * math.pi)


def _ar1_args(rho, tau, sigma, mu):
    return (
        validation.real("rho", rho, low=-1.0, high=1.0, low_open=True, high_open=True),
        validation.real("tau", tau, low=0.0, low_open=True),
        validation.real("sigma", sigma, low=0.0, low_open=True),
        validation.real("mu", mu),
    )


def _tokens(x, P):
    x = validation.finite_array("x", x, ndim=2)
    N = validation.divides(P, x.shape[1])
    return x, N


def _sums(sums, P):
    P = validation.positive_int("P", P)
    S = validation.finite_array("sums", sums, ndim=3)
    if S.shape[2] != P + 1:
        raise ValueError(
            f"sums must have shape (n_seq, N, P+1) = (…, …, {P + 1}) "
            f"(running sums from numerics.toy.data.running_sums), got {S.shape}"
        )
    return S


# ------------------------------------------------------------------------------------------------
# Gaussian AR(1): Kalman filters
# ------------------------------------------------------------------------------------------------


def kalman_token_filter(
    x, P: int, *, rho: float, tau: float = 1.0, sigma: float = 1.0, mu: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Kalman filter on every token for the AR(1) block-mean model.

    Returns ``(m, v)`` of shape ``(n_seq, T)``: mean and variance of ``η_{b(t)}`` given ``x_{<t}``.
    Within a block the latent is constant (no process noise); across blocks it is propagated by
    ``m ← μ + ρ(m − μ)``, ``v ← ρ²v + (1 − ρ²)τ²``.
    """
    x, N = _tokens(x, P)
    rho, tau, sigma, mu = _ar1_args(rho, tau, sigma, mu)
    n, T = x.shape
    s2 = sigma * sigma
    m_out, v_out = np.empty((n, T)), np.empty((n, T))
    m = np.full(n, mu)
    var = np.full(n, tau * tau)
    for t in range(T):
        if t and t % P == 0:
            m = mu + rho * (m - mu)
            var = rho * rho * var + (1.0 - rho * rho) * tau * tau
        m_out[:, t], v_out[:, t] = m, var
        gain = var / (var + s2)
        m = m + gain * (x[:, t] - m)
        var = (1.0 - gain) * var
    return m_out, v_out


def kalman_pooled_filter(
    sums, P: int, *, rho: float, tau: float = 1.0, sigma: float = 1.0, mu: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Kalman filter that reads only past block sums and the running sum of the current block.

    ``sums`` are running sums, shape ``(n_seq, N, P+1)`` (:func:`numerics.toy.data.running_sums`). For
    block ``b`` the prior ``N(m_b, v_b)`` comes from the block means of blocks ``< b`` (each observed
    as ``η + noise`` of variance ``σ²/P``); before token ``k`` it is combined once with the running
    mean ``S_{b,k}/k`` (variance ``σ²/k``) in information form. Returns ``(m, v)``, shape
    ``(n_seq, N·P)``, comparable with :func:`kalman_token_filter`.
    """
    S = _sums(sums, P)
    rho, tau, sigma, mu = _ar1_args(rho, tau, sigma, mu)
    n, N, _ = S.shape
    s2 = sigma * sigma
    m_out, v_out = np.empty((n, N, P)), np.empty((n, N, P))
    mb = np.full(n, mu)
    vb = np.full(n, tau * tau)
    k = np.arange(P + 1, dtype=np.float64)
    for b in range(N):
        prec = 1.0 / vb[:, None] + k[None, :] / s2  # (n, P+1)
        var = 1.0 / prec
        mean = var * (mb[:, None] / vb[:, None] + S[:, b, :] / s2)
        m_out[:, b], v_out[:, b] = mean[:, :P], var[:, :P]
        mb = mu + rho * (mean[:, P] - mu)
        vb = rho * rho * var[:, P] + (1.0 - rho * rho) * tau * tau
    return m_out.reshape(n, N * P), v_out.reshape(n, N * P)


def kalman_predictive_logpdf(x, m, var, *, sigma: float = 1.0) -> np.ndarray:
    """``log N(x_t; m_t, v_t + σ²)`` elementwise: the log predictive density of each token."""
    x = validation.finite_array("x", x)
    m = validation.finite_array("m", m, shape=x.shape)
    var = validation.finite_array("var", var, shape=x.shape)
    if np.any(var < 0):
        raise ValueError("var must be non-negative")
    s = validation.real("sigma", sigma, low=0.0, low_open=True)
    tot = var + s * s
    return -0.5 * (_LOG2PI + np.log(tot) + (x - m) ** 2 / tot)


def kalman_future_logpdf(
    x, m, var, P: int, *, rho: float, tau: float = 1.0, sigma: float = 1.0, mu: float = 0.0
) -> np.ndarray:
    """Log predictive density of every future token given the information before token ``t``.

    ``out[i, t, t'] = log p(x_{t'} | info before t)`` for ``t' ≥ t`` (``−inf`` below the diagonal),
    shape ``(n_seq, T, T)``. With ``Δ = b(t') − b(t)`` blocks ahead the latent is
    ``N(μ + ρ^Δ(m_t − μ), ρ^{2Δ}v_t + (1 − ρ^{2Δ})τ²)``.
    """
    x, N = _tokens(x, P)
    rho, tau, sigma, mu = _ar1_args(rho, tau, sigma, mu)
    m = validation.finite_array("m", m, shape=x.shape)
    var = validation.finite_array("var", var, shape=x.shape)
    n, T = x.shape
    out = np.full((n, T, T), -np.inf)
    blk = np.arange(T) // P
    for t in range(T):
        fut = np.arange(t, T)
        d = (blk[fut] - blk[t]).astype(np.float64)
        r = rho**d
        mean = mu + r[None, :] * (m[:, t, None] - mu)
        lat = (r * r)[None, :] * var[:, t, None] + (1.0 - r * r)[None, :] * tau * tau
        tot = lat + sigma * sigma
        out[:, t, t:] = -0.5 * (_LOG2PI + np.log(tot) + (x[:, t:] - mean) ** 2 / tot)
    return out


# ------------------------------------------------------------------------------------------------
# Finite-state latent chains: forward filters
# ------------------------------------------------------------------------------------------------


def _token_loglik(em: Emission, x: np.ndarray) -> np.ndarray:
    xs = x[..., None]
    f = em.family
    if f == "gaussian":
        s = em["sigma"][0]
        return -0.5 * (_LOG2PI + 2 * math.log(s) + ((xs - em["means"]) / s) ** 2)
    if f == "poisson":
        lam = em["rates"]
        return xs * np.log(lam) - lam - gammaln(xs + 1.0)
    if f == "bernoulli":
        p = em["probs"]
        return xs * np.log(p) + (1.0 - xs) * np.log1p(-p)
    if f == "gaussian_scale":
        s = em["scales"]
        return -0.5 * (_LOG2PI + 2 * np.log(s) + ((xs - em["means"]) / s) ** 2)
    if f == "cauchy":
        s = em["scale"][0]
        return -math.log(math.pi * s) - np.log1p(((xs - em["means"]) / s) ** 2)
    if f == "mixture":
        c, w, sc = em["offsets"], em["weights"], em["scales"]
        d = (xs[..., None] - em["means"][:, None] - c) / sc  # (..., K, J)
        comp = np.log(w) - np.log(sc) - 0.5 * (_LOG2PI + d * d)
        return logsumexp(comp, axis=-1)
    raise AssertionError(f)  # pragma: no cover


def _check_emission_values(em: Emission, x: np.ndarray) -> None:
    if em.family == "poisson" and np.any((x < 0) | (x != np.round(x))):
        raise ValueError("Poisson tokens must be non-negative integers")
    if em.family == "bernoulli" and np.any((x != 0) & (x != 1)):
        raise ValueError("Bernoulli tokens must be 0 or 1")


def token_loglik(emission: Emission, x) -> np.ndarray:
    """``log p(x | z)`` for every state ``z``: shape ``x.shape + (K,)``."""
    if not isinstance(emission, Emission):
        raise TypeError(f"emission must be an Emission, got {type(emission).__name__}")
    x = validation.finite_array("x", x)
    _check_emission_values(emission, x)
    return _token_loglik(emission, x)


def _compositions(k: int, J: int) -> np.ndarray:
    """All ``(n_1..n_J)`` with ``n_j ≥ 0``, ``Σ n_j = k`` (stars and bars), shape ``(C, J)``."""
    out = []
    for bars in itertools.combinations(range(k + J - 1), J - 1):
        prev, row = -1, []
        for bpos in bars:
            row.append(bpos - prev - 1)
            prev = bpos
        row.append(k + J - 1 - prev - 1)
        out.append(row)
    return np.array(out, dtype=np.float64)


def _mean_loglik(em: Emission, s: np.ndarray, k: int) -> np.ndarray:
    """Log law of the block statistic of ``k`` tokens with sum ``s``, per state: ``s.shape + (K,)``.

    Discrete families: the pmf of the sum. Continuous: the density of the mean ``s/k``. ``k = 0``
    carries no information (zeros).
    """
    K = em.n_states
    if k == 0:
        return np.zeros(s.shape + (K,))
    ss = s[..., None]
    f = em.family
    if f == "poisson":
        S = np.round(ss)
        lam = k * em["rates"]
        return S * np.log(lam) - lam - gammaln(S + 1.0)
    if f == "bernoulli":
        S = np.round(ss)
        p = em["probs"]
        return (
            gammaln(k + 1.0)
            - gammaln(S + 1.0)
            - gammaln(k - S + 1.0)
            + S * np.log(p)
            + (k - S) * np.log1p(-p)
        )
    ybar = ss / k
    if f in ("gaussian", "gaussian_scale"):
        sd = (em["sigma"][0] if f == "gaussian" else em["scales"]) / math.sqrt(k)
        return -0.5 * (_LOG2PI + 2 * np.log(sd) + ((ybar - em["means"]) / sd) ** 2)
    if f == "cauchy":
        sc = em["scale"][0]  # the mean of k i.i.d. Cauchy(m, s) is Cauchy(m, s)
        return -math.log(math.pi * sc) - np.log1p(((ybar - em["means"]) / sc) ** 2)
    if f == "mixture":
        c, w, sc = em["offsets"], em["weights"], em["scales"]
        n = _compositions(k, c.size)  # (C, J)
        logmult = gammaln(k + 1.0) - gammaln(n + 1.0).sum(axis=1) + n @ np.log(w)
        loc = n @ c / k  # (C,)
        sd = np.sqrt(n @ (sc * sc)) / k  # (C,)
        d = (ybar[..., None] - em["means"][:, None] - loc) / sd  # (..., K, C)
        return logsumexp(logmult - np.log(sd) - 0.5 * (_LOG2PI + d * d), axis=-1)
    raise AssertionError(f)  # pragma: no cover


def mean_loglik(emission: Emission, sums, k: int) -> np.ndarray:
    """Log-likelihood of each state given the sum of ``k`` tokens of one block: ``sums.shape + (K,)``.

    Exact law of the block statistic: the pmf of the sum (Poisson: ``Poisson(kλ)``; Bernoulli:
    ``Binomial(k, p)``) or the density of the mean (Gaussian ``N(m, σ²/k)``, latent-variance
    Gaussian ``N(m_z, s_z²/k)``, Cauchy ``Cauchy(m_z, s)``, mixture: Gaussian mixture over the
    component counts). For exponential families it differs from the sum of the token log-likelihoods
    by a term that does not depend on ``z`` (Fisher–Neyman); for the controls it does not.
    """
    if not isinstance(emission, Emission):
        raise TypeError(f"emission must be an Emission, got {type(emission).__name__}")
    k = validation.nonneg_int("k", k)
    s = validation.finite_array("sums", sums)
    if emission.family in ("poisson", "bernoulli") and k > 0:
        if (
            np.any(np.abs(s - np.round(s)) > 1e-6)
            or np.any(s < 0)
            or (emission.family == "bernoulli" and np.any(s > k))
        ):
            raise ValueError(f"sums of {k} {emission.family} tokens must be integers in range")
    return _mean_loglik(emission, s, k)


def _chain_args(emission, transition, initial):
    if not isinstance(emission, Emission):
        raise TypeError(f"emission must be an Emission, got {type(emission).__name__}")
    K = emission.n_states
    A = checked_transition(transition, K)
    pi = (
        stationary_distribution(A)
        if initial is None
        else checked_distribution("initial", initial, K)
    )
    return A, pi


def _normalise(logits: np.ndarray) -> np.ndarray:
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


def hmm_token_filter(x, P: int, emission: Emission, transition, initial=None) -> np.ndarray:
    """Forward filter on every token. Returns ``w`` of shape ``(n_seq, T, K)``:
    ``w[i, t] = Pr(z_{b(t)} = · | x_{<t})``, the state posterior before token ``t``."""
    x, N = _tokens(x, P)
    A, pi = _chain_args(emission, transition, initial)
    _check_emission_values(emission, x)
    ll = _token_loglik(emission, x)  # (n, T, K)
    n, T, K = ll.shape
    out = np.empty((n, T, K))
    w = np.tile(pi, (n, 1))
    for t in range(T):
        if t and t % P == 0:
            w = w @ A
        out[:, t] = w
        w = _normalise(_log(w) + ll[:, t])
    return out


def hmm_pooled_filter(sums, P: int, emission: Emission, transition, initial=None) -> np.ndarray:
    """Forward filter that reads only past block sums and the running sum of the current block.

    The prior of block ``b`` comes from blocks ``< b`` through :func:`mean_loglik` with ``k = P``;
    before token ``k`` it is combined once with the running sum of ``k`` tokens. Returns the state
    posterior before each token, shape ``(n_seq, N·P, K)``, comparable with
    :func:`hmm_token_filter`. Exact best predictor from block means for every emission family.
    """
    S = _sums(sums, P)
    A, pi = _chain_args(emission, transition, initial)
    n, N, _ = S.shape
    K = emission.n_states
    for k in range(1, P + 1):
        mean_loglik(emission, S[:, :, k], k)  # validates the statistics
    lls = [_mean_loglik(emission, S[:, :, k], k) for k in range(P + 1)]  # each (n, N, K)
    out = np.empty((n, N, P, K))
    prior = np.tile(pi, (n, 1))
    for b in range(N):
        lp = _log(prior)
        for k in range(P):
            out[:, b, k] = _normalise(lp + lls[k][:, b])
        prior = _normalise(lp + lls[P][:, b]) @ A
    return out.reshape(n, N * P, K)


def hmm_predictive_logpdf(emission: Emission, w, x) -> np.ndarray:
    """``log Σ_z w[..., z]·p(x | z)``: log predictive density of each token, shape ``x.shape``."""
    x = validation.finite_array("x", x)
    w = validation.finite_array("w", w, shape=x.shape + (emission.n_states,))
    ll = token_loglik(emission, x)
    return logsumexp(ll, b=w, axis=-1)


def hmm_future_logpdf(emission: Emission, w, x, P: int, transition) -> np.ndarray:
    """Log predictive density of every future token given the information before token ``t``.

    ``out[i, t, t'] = log Σ_z (w_t A^Δ)(z) p(x_{t'} | z)`` with ``Δ = b(t') − b(t)``, for ``t' ≥ t``
    (``−inf`` below the diagonal); shape ``(n_seq, T, T)``.
    """
    x, N = _tokens(x, P)
    K = emission.n_states
    A = checked_transition(transition, K)
    w = validation.finite_array("w", w, shape=x.shape + (K,))
    ll = token_loglik(emission, x)  # (n, T, K)
    n, T = x.shape
    powers = [np.eye(K)]
    for _ in range(1, N):
        powers.append(powers[-1] @ A)
    out = np.full((n, T, T), -np.inf)
    for t in range(T):
        b = t // P
        for d in range(N - b):
            lo, hi = max(t, (b + d) * P), (b + d + 1) * P
            wd = w[:, t] @ powers[d]  # (n, K)
            out[:, t, lo:hi] = logsumexp(ll[:, lo:hi], b=wd[:, None, :], axis=-1)
    return out
