"""Synthetic block sequences: a latent parameter per block, tokens i.i.d. within a block.

A sequence has ``T = N·P`` tokens in ``N`` blocks of ``P``. Block ``b`` carries a latent parameter
``z_b`` that follows a Markov process across blocks; given ``z_b`` the ``P`` tokens of block ``b``
are i.i.d. from an emission law ``p(x | z_b)``. Two latent processes are provided:

* :func:`gaussian_ar1_blocks`: a real latent mean ``η_b`` with a stationary AR(1) law,
  ``η_1 ~ N(μ, τ²)``, ``η_{b+1} = μ + ρ(η_b − μ) + τ√(1−ρ²)·ξ_b`` (``|ρ| < 1``), and Gaussian tokens
  ``x = η_b + σ·ε`` with known ``σ``. ``ρ = 0`` gives independent blocks.
* :func:`hmm_blocks`: a finite-state chain ``z_b ∈ {0..K−1}`` with a row-stochastic transition
  matrix ``A`` (``A[i, j] = Pr(z_{b+1} = j | z_b = i)``) and an initial law ``π`` (the stationary law
  of ``A`` by default); the emission is an :class:`Emission`. A transition matrix with identical
  rows (:func:`independent_transition`) gives independent blocks.

Emission families (:data:`EXPONENTIAL_FAMILIES` have sufficient statistic ``T(x) = x``, so the block
sum is sufficient for the block's parameter; :data:`CONTROL_FAMILIES` do not):

==================  ========================================  =====================================
family              ``p(x | z)``                              parameters per state ``z``
==================  ========================================  =====================================
``gaussian``        ``N(m_z, σ²)``, σ known                   ``means``; one ``sigma``
``poisson``         ``Poisson(λ_z)``                          ``rates`` > 0
``bernoulli``       ``Bernoulli(p_z)``                        ``probs`` in (0, 1)
``gaussian_scale``  ``N(m_z, s_z²)`` (latent variance)        ``means``, ``scales`` > 0
``cauchy``          Student-t with ν = 1, location ``m_z``    ``means``; one ``scale``
``mixture``         ``Σ_j π_j N(m_z + c_j, s_j²)``            ``means``; shared ``offsets c``,
                                                              ``weights π``, ``scales s``
==================  ========================================  =====================================

All generators are seeded (an ``int`` or a ``numpy.random.SeedSequence``), vectorised over
``n_seq`` sequences, and validate their arguments (``ValueError``/``TypeError`` naming the value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fastslow.numerics import validation

__all__ = [
    "EXPONENTIAL_FAMILIES",
    "CONTROL_FAMILIES",
    "FAMILIES",
    "Emission",
    "BlockData",
    "checked_transition",
    "checked_distribution",
    "stationary_distribution",
    "independent_transition",
    "sticky_transition",
    "gaussian_ar1_blocks",
    "hmm_blocks",
    "block_sums",
    "running_sums",
]

EXPONENTIAL_FAMILIES = ("gaussian", "poisson", "bernoulli")
"""Emission families with sufficient statistic ``T(x) = x`` (block sum/mean sufficient)."""
CONTROL_FAMILIES = ("gaussian_scale", "cauchy", "mixture")
"""Negative controls: latent variance, heavy tails (ν = 1), a location mixture."""
FAMILIES = EXPONENTIAL_FAMILIES + CONTROL_FAMILIES


def _rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or a SeedSequence, got {seed!r}")
    return np.random.default_rng(int(seed))


def _vector(name: str, value, *, low=None, high=None, open_=True) -> np.ndarray:
    arr = validation.finite_array(name, value, ndim=1)
    if arr.size == 0:
        raise ValueError(f"{name} must have at least one entry")
    if low is not None and np.any(arr <= low if open_ else arr < low):
        raise ValueError(f"{name} must be {'>' if open_ else '≥'} {low}, got {arr.tolist()}")
    if high is not None and np.any(arr >= high if open_ else arr > high):
        raise ValueError(f"{name} must be {'<' if open_ else '≤'} {high}, got {arr.tolist()}")
    return arr


@dataclass(frozen=True)
class Emission:
    """Emission law ``p(x | z)`` of the tokens of a block whose latent state is ``z``.

    Build it with the class methods (:meth:`gaussian`, :meth:`poisson`, :meth:`bernoulli`,
    :meth:`gaussian_scale`, :meth:`cauchy`, :meth:`mixture`), which validate the parameters.
    ``params`` holds float arrays: per-state ones have length ``K`` (the number of states).
    """

    family: str
    params: tuple  # tuple of (name, np.ndarray) pairs, hashable-ish and immutable by convention

    def __getitem__(self, name: str) -> np.ndarray:
        return dict(self.params)[name]

    @property
    def n_states(self) -> int:
        key = {"poisson": "rates", "bernoulli": "probs"}.get(self.family, "means")
        return int(self[key].size)

    @property
    def exponential_family(self) -> bool:
        """True when the sufficient statistic is ``T(x) = x`` (the hypothesis of D8)."""
        return self.family in EXPONENTIAL_FAMILIES

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def gaussian(cls, means, sigma: float = 1.0) -> Emission:
        m = _vector("means", means)
        s = validation.real("sigma", sigma, low=0.0, low_open=True)
        return cls("gaussian", (("means", m), ("sigma", np.array([s]))))

    @classmethod
    def poisson(cls, rates) -> Emission:
        return cls("poisson", (("rates", _vector("rates", rates, low=0.0)),))

    @classmethod
    def bernoulli(cls, probs) -> Emission:
        return cls("bernoulli", (("probs", _vector("probs", probs, low=0.0, high=1.0)),))

    @classmethod
    def gaussian_scale(cls, means, scales) -> Emission:
        m = _vector("means", means)
        s = _vector("scales", scales, low=0.0)
        if m.shape != s.shape:
            raise ValueError(
                f"means and scales must have the same length, got {m.size} and {s.size}"
            )
        return cls("gaussian_scale", (("means", m), ("scales", s)))

    @classmethod
    def cauchy(cls, means, scale: float = 1.0) -> Emission:
        m = _vector("means", means)
        s = validation.real("scale", scale, low=0.0, low_open=True)
        return cls("cauchy", (("means", m), ("scale", np.array([s]))))

    @classmethod
    def mixture(cls, means, offsets, weights, scales) -> Emission:
        m = _vector("means", means)
        c = _vector("offsets", offsets)
        w = _vector("weights", weights, low=0.0)
        s = _vector("scales", scales, low=0.0)
        if not (c.shape == w.shape == s.shape):
            raise ValueError(
                "offsets, weights and scales must have the same length, got "
                f"{c.size}, {w.size}, {s.size}"
            )
        if abs(w.sum() - 1.0) > 1e-12:
            raise ValueError(f"mixture weights must sum to 1, got sum {w.sum()!r}")
        if c.size > 4:
            raise ValueError(f"at most 4 mixture components are supported, got {c.size}")
        return cls("mixture", (("means", m), ("offsets", c), ("weights", w), ("scales", s)))

    # -- sampling -------------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, states: np.ndarray, P: int) -> np.ndarray:
        """Tokens of shape ``states.shape + (P,)``: ``P`` i.i.d. draws from ``p(· | z)`` per state."""
        shape = states.shape + (P,)
        z = states[..., None]
        f = self.family
        if f == "gaussian":
            return self["means"][z] + self["sigma"][0] * rng.standard_normal(shape)
        if f == "poisson":
            return rng.poisson(np.broadcast_to(self["rates"][z], shape)).astype(np.float64)
        if f == "bernoulli":
            return (rng.random(shape) < self["probs"][z]).astype(np.float64)
        if f == "gaussian_scale":
            return self["means"][z] + self["scales"][z] * rng.standard_normal(shape)
        if f == "cauchy":
            return self["means"][z] + self["scale"][0] * rng.standard_cauchy(shape)
        if f == "mixture":
            comp = rng.choice(self["weights"].size, size=shape, p=self["weights"])
            return (
                self["means"][z]
                + self["offsets"][comp]
                + self["scales"][comp] * rng.standard_normal(shape)
            )
        raise AssertionError(f)  # pragma: no cover


@dataclass(frozen=True)
class BlockData:
    """Sampled sequences.

    Attributes:
        x: tokens, shape ``(n_seq, T)`` with ``T = N·P`` (block ``b`` is ``x[:, b*P:(b+1)*P]``).
        latent: the latent parameter per block, shape ``(n_seq, N)`` (real for the AR(1) case, the
            state index for the finite chains).
        P: block size.
    """

    x: np.ndarray
    latent: np.ndarray
    P: int

    @property
    def N(self) -> int:
        return self.latent.shape[1]

    @property
    def blocks(self) -> np.ndarray:
        """Tokens reshaped to ``(n_seq, N, P)``."""
        return self.x.reshape(self.x.shape[0], self.N, self.P)


def checked_transition(transition, K: int | None = None) -> np.ndarray:
    """``transition`` as a float array after checking it is a non-empty square row-stochastic
    matrix (rows summing to 1 within 1e-10) with ``K`` states if ``K`` is given; otherwise a
    ``ValueError`` naming what is wrong."""
    A = validation.finite_array("transition", transition, ndim=2)
    if A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"transition must be a non-empty square matrix, got shape {A.shape}")
    if K is not None and A.shape[0] != K:
        raise ValueError(f"transition has {A.shape[0]} states but the emission has {K}")
    if np.any(A < 0):
        raise ValueError("transition must be row-stochastic: found negative entries")
    rows = A.sum(axis=1)
    if np.any(np.abs(rows - 1.0) > 1e-10):
        raise ValueError(
            f"transition must be row-stochastic (rows sum to 1), got row sums {rows.tolist()}"
        )
    return A


def checked_distribution(name: str, p, K: int) -> np.ndarray:
    """``p`` as a float array after checking it is a probability vector of length ``K``
    (non-negative, summing to 1 within 1e-10); otherwise a ``ValueError`` naming ``name``."""
    p = validation.finite_array(name, p, shape=(K,))
    if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-10:
        raise ValueError(
            f"{name} must be a probability vector (non-negative, sum 1), got {p.tolist()}"
        )
    return p


def stationary_distribution(transition) -> np.ndarray:
    """The stationary law ``π`` (``πA = π``) of a row-stochastic matrix (least squares; unique when
    the chain is irreducible, otherwise one of the stationary laws)."""
    A = checked_transition(transition)
    K = A.shape[0]
    M = np.vstack([A.T - np.eye(K), np.ones((1, K))])
    rhs = np.zeros(K + 1)
    rhs[-1] = 1.0
    pi = np.linalg.lstsq(M, rhs, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def independent_transition(pi) -> np.ndarray:
    """``A = 1 πᵀ``: every row is ``π``, so the block states are i.i.d. (independent blocks)."""
    p = validation.finite_array("pi", pi, ndim=1)
    p = checked_distribution("pi", p, p.size)
    return np.tile(p, (p.size, 1))


def sticky_transition(K: int, stay: float) -> np.ndarray:
    """``A = stay·I + (1 − stay)/K·11ᵀ``: persistence ``stay ∈ [0, 1)`` (0 gives i.i.d. blocks)."""
    K = validation.positive_int("K", K)
    s = validation.real("stay", stay, low=0.0, high=1.0, high_open=True)
    return s * np.eye(K) + (1.0 - s) / K * np.ones((K, K))


def gaussian_ar1_blocks(
    n_seq: int,
    N: int,
    P: int,
    *,
    rho: float,
    tau: float = 1.0,
    sigma: float = 1.0,
    mu: float = 0.0,
    seed=0,
) -> BlockData:
    """Gaussian tokens around a block mean ``η_b`` that follows a stationary AR(1) across blocks.

    ``η_1 ~ N(μ, τ²)``, ``η_{b+1} = μ + ρ(η_b − μ) + τ√(1−ρ²)·ξ_b``, ``x_{b,k} = η_b + σ ε_{b,k}``
    with standard normal ``ξ, ε``. ``corr(η_b, η_{b+j}) = ρ^j``. Requires ``|ρ| < 1``, ``τ > 0``,
    ``σ > 0``. ``latent`` holds ``η``.
    """
    n_seq, N, P = (
        validation.positive_int(k, val) for k, val in (("n_seq", n_seq), ("N", N), ("P", P))
    )
    rho = validation.real("rho", rho, low=-1.0, high=1.0, low_open=True, high_open=True)
    tau = validation.real("tau", tau, low=0.0, low_open=True)
    sigma = validation.real("sigma", sigma, low=0.0, low_open=True)
    mu = validation.real("mu", mu)
    rng = _rng(seed)
    xi = rng.standard_normal((n_seq, N))
    eta = np.empty((n_seq, N))
    eta[:, 0] = mu + tau * xi[:, 0]
    innov = tau * np.sqrt(1.0 - rho * rho)
    for b in range(1, N):
        eta[:, b] = mu + rho * (eta[:, b - 1] - mu) + innov * xi[:, b]
    x = eta[:, :, None] + sigma * rng.standard_normal((n_seq, N, P))
    return BlockData(x.reshape(n_seq, N * P), eta, P)


def hmm_blocks(
    n_seq: int, N: int, P: int, emission: Emission, transition, initial=None, seed=0
) -> BlockData:
    """Tokens from a finite-state latent chain across blocks with emission ``emission``.

    ``z_1 ~ initial`` (default: the stationary law of ``transition``), ``z_{b+1} | z_b ~
    transition[z_b]``; the ``P`` tokens of block ``b`` are i.i.d. ``emission`` given ``z_b``.
    """
    n_seq, N, P = (
        validation.positive_int(k, val) for k, val in (("n_seq", n_seq), ("N", N), ("P", P))
    )
    if not isinstance(emission, Emission):
        raise TypeError(f"emission must be an Emission, got {type(emission).__name__}")
    K = emission.n_states
    A = checked_transition(transition, K)
    pi = (
        stationary_distribution(A)
        if initial is None
        else checked_distribution("initial", initial, K)
    )
    rng = _rng(seed)
    u = rng.random((n_seq, N))
    z = np.empty((n_seq, N), dtype=np.int64)
    z[:, 0] = np.minimum(np.searchsorted(np.cumsum(pi), u[:, 0], side="right"), K - 1)
    cum = np.cumsum(A, axis=1)
    for b in range(1, N):
        z[:, b] = np.minimum((u[:, b, None] >= cum[z[:, b - 1]]).sum(axis=1), K - 1)
    x = emission.sample(rng, z, P)
    return BlockData(x.reshape(n_seq, N * P), z, P)


def block_sums(x, P: int) -> np.ndarray:
    """Block sums ``S_b = Σ_k x_{b,k}``: ``(n_seq, T) → (n_seq, N)``."""
    x = validation.finite_array("x", x, ndim=2)
    N = validation.divides(P, x.shape[1])
    return x.reshape(x.shape[0], N, P).sum(axis=2)


def running_sums(x, P: int) -> np.ndarray:
    """Running sums within each block: ``out[:, b, k] = Σ_{j<k} x_{b,j}`` for ``k = 0..P``.

    Shape ``(n_seq, N, P+1)``; ``out[:, b, 0] = 0`` and ``out[:, b, P]`` is the block sum. The running
    mean of the current block after ``k`` tokens is ``out[:, b, k] / k``.
    """
    x = validation.finite_array("x", x, ndim=2)
    N = validation.divides(P, x.shape[1])
    out = np.zeros((x.shape[0], N, P + 1))
    np.cumsum(x.reshape(x.shape[0], N, P), axis=2, out=out[:, :, 1:])
    return out
