"""A gated fast–slow predictor on block sequences: the toy model of claim D9.

Data: Gaussian AR(1) block sequences (:func:`numerics.toy.data.gaussian_ar1_blocks`, mean ``μ = 0``):
``x_{b,k} = η_b + σε``, ``corr(η_b, η_{b+j}) = ρ^j``, ``Var η_b = τ²``; ``ρ = 0`` gives independent
blocks. The predictor of token ``k`` of block ``b`` (``k = 0..P−1`` tokens of the block seen) is

    ŷ_{b,k} = f_{b,k} + s_b,
    f_{b,k} = S_{b,k} / (k + σ²/τ²)                    (fast, within-block; fixed)
    s_0 = 0,  s_b = a·s_{b−1} + g·(c·s_{b−1} + w·ȳ_{b−1})  (slow, cross-block; gate g, weight w)

``f`` is the Bayes estimate of ``η_b`` from the current block alone (exact Bayes predictor when
blocks are independent); the slow state ``s_b`` reads only completed blocks (block 0 receives zero,
as with ``U_c``). The gate ``g`` multiplies the whole slow path ``c·s + w·ȳ``, which also feeds the
slow recurrence: its linearisation in ``s`` is ``s_b = (J + g·G)·s_{b−1} + …`` with the scalar maps
``J = a`` (the un-gated recurrence, contractive for ``|a| < 1``) and ``G = c`` (the slow path's
coupling to its own state). Stability of the recurrence is ``|a + g·c| < 1``: D7's margin
``m(J)/‖G‖ = (1 − |a|)/|c|`` (equal to the critical gate for a scalar ``J``).

Risk = mean squared prediction error per token (Gaussian log-loss at fixed variance up to affine
constants). Because ``s = M(g, w)·ȳ`` is linear in the block means with the strictly lower
triangular matrix ``M_{b,b'} = g·w·p^{b−1−b'}`` (``p = a + g·c``), the risk on any data set, and in
population, is an exact quadratic form in two ``N×N`` moment matrices:

    R(g, w) = Q − (2/T)·⟨M, D⟩ + (P/T)·tr(M C Mᵀ),
    C_{bb'} = E[ȳ_b ȳ_{b'}],  D_{bb'} = E[R_b ȳ_{b'}],  R_b = Σ_k (x_{b,k} − f_{b,k}),
    Q = (1/T)·Σ_{b,k} E[(x_{b,k} − f_{b,k})²]  (the fast-only risk).

:func:`empirical_moments` estimates them from data (training cost then independent of ``n``);
:func:`population_moments` gives them in closed form for the AR(1) model
(``C = τ²ρ^{|b−b'|} + (σ²/P)δ``, ``D_{bb'} = τ²ρ^{|b−b'|}·Σ_k λ/(k + λ)`` for ``b' ≠ b`` with
``λ = σ²/τ²``, ``Q = σ² + (τ²/P)·Σ_k λ/(k + λ)``). On independent blocks ``D`` vanishes below the
diagonal, so ``R(g, w) = Q + (P/T)tr(MCMᵀ) ≥ Q`` with equality at ``w = 0``: the risk-minimising
slow channel is zero whatever the gate, ``min_w R(g, w) = Q`` for every ``g``, and
``∂R/∂g = −(2/T)⟨∂M/∂g, D⟩ = 0`` at ``g = 0``.

Caveats. The gate and the slow weight enter the input term only through ``g·w``; the gate amplitude
is identified only through the pole ``a + g·c``, so the risk has a shallow valley along which
gradient descent moves slowly: "the learned gate" is the gate after a fixed budget of steps (like
a training run of fixed length), not a unique minimiser. Whether it grows with ``ρ`` depends on the
parametrisation (monotone for the default ``a = 0, c = 1``; rises then falls for ``a = 0.3,
c = −1``, where opening the gate lowers the pole); the risk falls with ``ρ`` in every case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastslow.numerics import validation
from fastslow.numerics.toy.data import gaussian_ar1_blocks, running_sums

__all__ = [
    "GatedToy",
    "Moments",
    "fast_estimate",
    "sample",
    "empirical_moments",
    "sampled_moments",
    "fast_risk_standard_error",
    "population_moments",
    "slow_matrix",
    "risk",
    "risk_gradient",
    "per_sequence_gate_gradient",
    "min_slow_risk",
    "train",
    "TrainResult",
    "stack_moments",
    "jacobians",
    "closed_form_margin",
]


@dataclass(frozen=True)
class GatedToy:
    """Structure of the toy: block size ``P``, ``N`` blocks, prior scales ``τ, σ`` used by the fast
    estimate, the un-gated slow recurrence ``a`` (``J``) and the slow path's self-coupling ``c``
    (``G``)."""

    P: int
    N: int
    tau: float = 1.0
    sigma: float = 1.0
    a: float = 0.0
    c: float = 1.0

    def __post_init__(self):
        validation.positive_int("P", self.P)
        validation.positive_int("N", self.N)
        validation.real("tau", self.tau, low=0.0, low_open=True)
        validation.real("sigma", self.sigma, low=0.0, low_open=True)
        validation.real("a", self.a, low=-1.0, high=1.0, low_open=True, high_open=True)
        validation.real("c", self.c)

    @property
    def T(self) -> int:
        return self.N * self.P

    @property
    def lam(self) -> float:
        return (self.sigma / self.tau) ** 2


@dataclass(frozen=True)
class Moments:
    """Second moments that determine the risk: ``Q`` (fast-only risk), ``C`` and ``D`` (``N×N``),
    and the number of sequences ``n`` they were estimated from (``inf`` for population moments)."""

    Q: float
    C: np.ndarray
    D: np.ndarray
    n: float


def _fast(toy: GatedToy, sums: np.ndarray) -> np.ndarray:
    k = np.arange(toy.P, dtype=np.float64)
    return sums[:, :, : toy.P] / (k + toy.lam)


def fast_estimate(toy: GatedToy, x) -> np.ndarray:
    """``f_{b,k} = S_{b,k}/(k + σ²/τ²)``, shape ``(n_seq, N, P)``: the fast within-block part."""
    x = validation.finite_array("x", x, shape=(None, toy.T))
    return _fast(toy, running_sums(x, toy.P))


def _block_terms(toy: GatedToy, x: np.ndarray):
    sums = running_sums(x, toy.P)
    r = x.reshape(x.shape[0], toy.N, toy.P) - _fast(toy, sums)
    return r.sum(axis=2), (r * r).sum(axis=2), sums[:, :, toy.P] / toy.P  # R_b, Q_b, ȳ_b


def empirical_moments(toy: GatedToy, x) -> Moments:
    """The moments of :class:`Moments` averaged over the sequences of ``x`` (``(n_seq, T)``)."""
    x = validation.finite_array("x", x, shape=(None, toy.T))
    n = x.shape[0]
    R, Qb, yb = _block_terms(toy, x)
    return Moments(float(Qb.sum() / (n * toy.T)), yb.T @ yb / n, R.T @ yb / n, float(n))


def sample(toy: GatedToy, n: int, rho: float, seed) -> np.ndarray:
    """``n`` sequences ``(n, T)`` of the toy's data model: AR(1) block means with correlation
    ``ρ`` and the toy's ``τ, σ`` (:func:`numerics.toy.data.gaussian_ar1_blocks`)."""
    return gaussian_ar1_blocks(n, toy.N, toy.P, rho=rho, tau=toy.tau, sigma=toy.sigma, seed=seed).x


def sampled_moments(toy: GatedToy, n: int, rho: float, seeds) -> list[Moments]:
    """The :func:`empirical_moments` of one sample of ``n`` sequences per seed of ``seeds``."""
    return [empirical_moments(toy, sample(toy, n, rho, s)) for s in seeds]


def fast_risk_standard_error(toy: GatedToy, x) -> float:
    """The standard error of the fast-only empirical risk on the sequences of ``x``: the SD over
    sequences of their mean squared error per token, over ``√n``."""
    x = validation.finite_array("x", x, shape=(None, toy.T))
    per_seq = ((x.reshape(-1, toy.N, toy.P) - fast_estimate(toy, x)) ** 2).mean(axis=(1, 2))
    return float(per_seq.std(ddof=1) / np.sqrt(per_seq.size))


def population_moments(toy: GatedToy, rho: float) -> Moments:
    """Closed-form moments for the AR(1) model with block correlation ``ρ`` (``|ρ| < 1``, ``μ = 0``).

    ``D`` is given below the diagonal only (the slow state never reads the current block); its
    diagonal and upper part are set to zero because ``M`` is strictly lower triangular.
    """
    rho = validation.real("rho", rho, low=-1.0, high=1.0, low_open=True, high_open=True)
    lam, tau2 = toy.lam, toy.tau**2
    b = np.arange(toy.N)
    lag = np.abs(b[:, None] - b[None, :]).astype(np.float64)
    corr = rho**lag
    C = tau2 * corr + (toy.sigma**2 / toy.P) * np.eye(toy.N)
    shrink = float(np.sum(lam / (np.arange(toy.P) + lam)))
    D = np.tril(tau2 * corr * shrink, k=-1)
    Q = toy.sigma**2 + tau2 * shrink / toy.P
    return Moments(Q, C, D, float("inf"))


def _lags(N: int):
    b = np.arange(N)
    e = b[:, None] - 1 - b[None, :]
    low = e >= 0
    return low, np.where(low, e, 0)


def slow_matrix(toy: GatedToy, g, w):
    """``(M, ∂M/∂g, ∂M/∂w)`` with ``s = M·ȳ``: ``M_{b,b'} = g·w·p^{b−1−b'}`` for ``b' < b``.

    ``g`` and ``w`` may be arrays of the same shape ``S`` (a batch of models): the results then have
    shape ``S + (N, N)``.
    """
    g = np.asarray(g, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    low, e = _lags(toy.N)
    p = (toy.a + g * toy.c)[..., None]
    j = np.arange(toy.N, dtype=np.float64)
    pw_vec = p**j  # (..., N): p^0..p^{N−1}
    d_vec = np.concatenate([np.zeros(p.shape), j[1:] * p ** j[:-1]], axis=-1)  # d p^j / dp
    pw = np.where(low, pw_vec[..., e], 0.0)
    pw1 = np.where(low, d_vec[..., e], 0.0)
    gg, ww = g[..., None, None], w[..., None, None]
    return gg * ww * pw, ww * pw + gg * ww * toy.c * pw1, gg * pw


def _risk(toy: GatedToy, mom: Moments, M: np.ndarray):
    T, P = toy.T, toy.P
    return (
        mom.Q
        - 2.0 / T * np.sum(M * mom.D, axis=(-2, -1))
        + P / T * np.sum((M @ mom.C) * M, axis=(-2, -1))
    )


def risk(toy: GatedToy, mom: Moments, g, w):
    """``R(g, w) = Q − (2/T)⟨M, D⟩ + (P/T) tr(M C Mᵀ)`` for the given moments (batched like
    :func:`slow_matrix`; moments with a leading batch axis pair with ``g, w`` of that shape)."""
    out = _risk(toy, mom, slow_matrix(toy, g, w)[0])
    return float(out) if np.ndim(out) == 0 else out


def risk_gradient(toy: GatedToy, mom: Moments, g, w):
    """``(∂R/∂g, ∂R/∂w)``, exact (batched like :func:`risk`)."""
    M, Mg, Mw = slow_matrix(toy, g, w)
    T, P = toy.T, toy.P
    H = -2.0 / T * mom.D + 2.0 * P / T * (M @ mom.C)
    dg, dw = np.sum(H * Mg, axis=(-2, -1)), np.sum(H * Mw, axis=(-2, -1))
    if np.ndim(dg) == 0:
        return float(dg), float(dw)
    return dg, dw


def per_sequence_gate_gradient(toy: GatedToy, x, w: float) -> np.ndarray:
    """``∂R_i/∂g`` at ``g = 0`` for each sequence ``i`` (its mean is the empirical gradient).

    At ``g = 0`` the slow state vanishes, so ``∂R_i/∂g = −(2/T)·Σ_{b,b'} (∂M/∂g)_{bb'} R_{ib} ȳ_{ib'}``.
    The z-score of their mean tests ``∂R/∂g = 0``.
    """
    x = validation.finite_array("x", x, shape=(None, toy.T))
    w = validation.real("w", w)
    R, _, yb = _block_terms(toy, x)
    Mg = slow_matrix(toy, 0.0, w)[1]
    return -2.0 / toy.T * np.einsum("ib,bc,ic->i", R, Mg, yb)


def min_slow_risk(toy: GatedToy, mom: Moments, g: float) -> tuple[float, float]:
    """``(min_w R(g, w), argmin w)``: the risk with the best slow weight for a fixed gate.

    For fixed ``g`` the slow state is ``w·u`` with ``u = M(g, 1)ȳ``, so ``R = Q − 2wB + w²E`` with
    ``B = ⟨M₁, D⟩/T`` and ``E = P·tr(M₁CM₁ᵀ)/T``; the minimum is ``Q − B²/E`` (``Q`` if ``E = 0``,
    e.g. at ``g = 0``).
    """
    g = validation.real("g", g)
    M1 = slow_matrix(toy, g, 1.0)[0]
    B = float(np.sum(M1 * mom.D)) / toy.T
    E = toy.P * float(np.sum((M1 @ mom.C) * M1)) / toy.T
    if E <= 0.0:
        return float(mom.Q), 0.0
    return float(mom.Q - B * B / E), B / E


@dataclass(frozen=True)
class TrainResult:
    """Parameters after training (floats, or arrays for a batch), the risk after each step
    (``history[j]`` after ``j`` steps, shape ``(steps + 1,) + batch``) and whether the slow
    recurrence stayed stable (``|a + g·c| < 1``) along the whole run."""

    g: object
    w: object
    history: np.ndarray
    stable: object


def stack_moments(moments) -> Moments:
    """Stack a list of :class:`Moments` into one with a leading batch axis (for batched training)."""
    moments = list(moments)
    if not moments:
        raise ValueError("moments must be a non-empty list")
    return Moments(
        np.array([m.Q for m in moments]),
        np.stack([m.C for m in moments]),
        np.stack([m.D for m in moments]),
        np.array([m.n for m in moments]),
    )


def train(
    toy: GatedToy,
    mom: Moments,
    *,
    w0: float = 1.0,
    g0: float = 0.0,
    lr: float = 1.0,
    steps: int = 300,
    train_slow: bool = True,
) -> TrainResult:
    """Gradient descent on ``R(g, w)`` from ``(g0, w0)`` with Armijo backtracking.

    Each step tries the step size ``lr`` and halves it until the risk decreases by at least
    ``10⁻⁴·η·‖∇R‖²`` and the recurrence stays stable (at most 40 halvings, and none once the
    predicted decrease ``η‖∇R‖²`` falls below ``10⁻¹⁴|R|``; otherwise the step is skipped).
    Backtracking keeps plain gradient descent convergent when the curvature grows with ``ρ`` (no
    fixed step fits all ``ρ``). ``train_slow=False`` freezes the slow weight at ``w0``
    (with ``w0 = 0`` the slow channel is off: the *frozen* ablation). Moments with a leading batch
    axis (:func:`stack_moments`) train a batch of independent models at once.
    """
    lr = validation.real("lr", lr, low=0.0, low_open=True)
    steps = validation.nonneg_int("steps", steps)
    batch = np.shape(mom.Q)
    g = np.full(batch, validation.real("g0", g0))
    w = np.full(batch, validation.real("w0", w0))
    hist = np.empty((steps + 1,) + batch)
    r = hist[0] = risk(toy, mom, g, w)
    stable = np.abs(toy.a + g * toy.c) < 1.0
    for j in range(steps):
        dg, dw = risk_gradient(toy, mom, g, w)
        dg = np.asarray(dg)
        dw = np.asarray(dw) if train_slow else np.zeros(batch)
        sq = dg * dg + dw * dw
        eta = np.full(batch, lr)
        todo = sq > 0
        for _ in range(40):
            if not np.any(todo):
                break
            gn, wn = g - eta * dg, w - eta * dw
            ok_stable = np.abs(toy.a + gn * toy.c) < 1.0
            rn = np.asarray(risk(toy, mom, gn, wn))
            accept = todo & ok_stable & (rn <= r - 1e-4 * eta * sq)
            g, w, r = np.where(accept, gn, g), np.where(accept, wn, w), np.where(accept, rn, r)
            todo = todo & ~accept
            eta = np.where(todo, 0.5 * eta, eta)
            # a decrease below the rounding level of the risk cannot be certified: stop there
            todo = todo & (eta * sq > 1e-14 * np.abs(r))
        stable = stable & (np.abs(toy.a + g * toy.c) < 1.0)
        hist[j + 1] = r
    if batch == ():
        return TrainResult(float(g), float(w), hist, bool(stable))
    return TrainResult(g, w, hist, stable)


def jacobians(toy: GatedToy) -> tuple[np.ndarray, np.ndarray]:
    """``(J, G)`` as 1×1 matrices: the slow recurrence ``s_b = (J + g·G)s_{b−1} + g·w·ȳ_{b−1}``."""
    return np.array([[toy.a]]), np.array([[toy.c]])


def closed_form_margin(toy: GatedToy) -> float:
    """``m(J)/‖G‖ = (1 − |a|)/|c|`` (``inf`` if ``c = 0``): for the scalar recurrence it is also the
    critical gate in the direction that first reaches ``|a + g·c| = 1``."""
    return float("inf") if toy.c == 0 else (1.0 - abs(toy.a)) / abs(toy.c)
