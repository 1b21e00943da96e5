"""One layer ``Φ_l`` of the model, written from its formulas with dense matrices (a reference).

::

    Attn(X) = softmax_mask( β n(X) Q (n(X) K)ᵀ ) n(X) V,            β = 1/√d unless given
    MLP(X)  = σ( n(X) W1 ) W2
    Slow(X) = U_c softmax_slowmask( β Ŷ Qs (Ŷ Ks)ᵀ ) Ŷ Vs,           Ŷ = n(B X)
    Φ(X)    = X + h·[ Attn(X) + MLP(X) + g·Slow(X) ] + h·γ·(E − X)

with ``B = I_N ⊗ (1/P)1_Pᵀ`` (block mean), ``U = I_N ⊗ 1_P``, ``U_c`` the up-sampling shifted by one
block (block ``b`` receives the slow output of block ``b − 1``, block 0 receives zero) and ``n`` the
row-wise RMS norm ``x / √(mean(x²) + eps)``. Masks: ``causal`` (``s ≤ t``), ``block_causal`` (same
block and ``s ≤ t``), ``block_bidirectional`` (same block); the slow mask over the ``N`` pooled
tokens is ``blockcausal`` (``c ≤ b``) or ``full``.

Every function accepts complex arrays (no ``abs``, no conjugation; the softmax shift uses the real
part), so :func:`jvp` differentiates by the complex step ``Im f(X + i·s·δX)/s`` with ``s = 1e-30``:
exact to rounding, with no cancellation. This module is deliberately slow and plain: it is the
yardstick, not the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STEP = 1e-30
"""The complex step of :func:`jvp`."""

GELU_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
GELU_CUBIC = 0.044715
"""The constants of GELU's tanh approximation ``½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))``."""

# ----------------------------------------------------------------------------- masks


def causal_mask(T: int) -> np.ndarray:
    """``M[t, s] = (s ≤ t)``."""
    t = np.arange(T)
    return t[None, :] <= t[:, None]


def same_block(T: int, P: int) -> np.ndarray:
    """``M[t, s] = (t // P == s // P)``."""
    if T % P:
        raise ValueError(f"P={P} does not divide T={T}")
    b = np.arange(T) // P
    return b[:, None] == b[None, :]


def named_mask(name: str, T: int, P: int | None = None) -> np.ndarray:
    """The named T×T boolean mask (``P`` needed for the block masks)."""
    if name == "causal":
        return causal_mask(T)
    if name not in ("block_causal", "block_bidirectional"):
        raise ValueError(f"unknown mask {name!r}")
    if P is None:
        raise ValueError(f"the mask {name!r} needs the block size P")
    if name == "block_causal":
        return same_block(T, P) & causal_mask(T)
    return same_block(T, P)


def slow_level_mask(slow_mask: str, N: int) -> np.ndarray:
    """The N×N mask over pooled tokens: ``blockcausal`` (``c ≤ b``) or ``full``."""
    if slow_mask == "blockcausal":
        return causal_mask(N)
    if slow_mask == "full":
        return np.ones((N, N), dtype=bool)
    raise ValueError(f"unknown slow mask {slow_mask!r}")


def slow_token_mask(slow_mask: str, T: int, P: int) -> np.ndarray:
    """``M[t, s]``: token ``t``'s slow input reads token ``s`` (nonzero pattern of ``U_c A_s B``
    with every pooled entry of ``A_s`` allowed by the slow mask)."""
    A = slow_level_mask(slow_mask, T // P).astype(float)
    return (causal_upsampling(T, P) @ A @ pooling(T, P)) != 0


# ----------------------------------------------------------------------------- pooling


def pooling(T: int, P: int) -> np.ndarray:
    """``B = I_N ⊗ (1/P)·1_Pᵀ`` (N×T)."""
    if T % P:
        raise ValueError(f"P={P} does not divide T={T}")
    return np.kron(np.eye(T // P), np.full((1, P), 1.0 / P))


def upsampling(T: int, P: int) -> np.ndarray:
    """``U = I_N ⊗ 1_P`` (T×N)."""
    return np.kron(np.eye(T // P), np.ones((P, 1)))


def causal_upsampling(T: int, P: int) -> np.ndarray:
    """``U_c`` (T×N): row ``t`` picks block ``t // P − 1`` (none for the first block)."""
    N = T // P
    Uc = np.zeros((T, N))
    for t in range(P, T):
        Uc[t, t // P - 1] = 1.0
    return Uc


# ----------------------------------------------------------------------------- pieces


def rms_norm(X: np.ndarray, eps: float) -> np.ndarray:
    """``x / √(mean(x²) + eps)`` row by row."""
    return X / np.sqrt((X * X).sum(axis=-1, keepdims=True) / X.shape[-1] + eps)


def softmax(S: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the allowed entries (zero elsewhere)."""
    shift = np.where(mask, S.real, -np.inf).max(axis=1, keepdims=True)
    E = np.where(mask, np.exp(np.where(mask, S - shift, 0.0)), 0.0)
    return E / E.sum(axis=1, keepdims=True)


def sigma(name: str, Z: np.ndarray) -> np.ndarray:
    """The named nonlinearity, element-wise."""
    if name == "tanh":
        return np.tanh(Z)
    if name == "relu":
        return np.where(Z.real > 0, Z, 0.0)
    if name == "gelu":
        return 0.5 * Z * (1.0 + np.tanh(GELU_SQRT_2_OVER_PI * (Z + GELU_CUBIC * Z**3)))
    if name == "identity":
        return Z
    raise ValueError(f"unknown nonlinearity {name!r}")


@dataclass(frozen=True)
class Setting:
    """What fixes the layer besides its weights: sizes, masks, switches.

    ``mask`` is a boolean T×T array; ``beta`` ``None`` means ``1/√d``.
    """

    T: int
    P: int
    d: int
    mask: np.ndarray
    slow_mask: str = "blockcausal"
    norm: bool = True
    sigma: str = "tanh"
    h: float = 1.0
    gamma: float = 0.0
    beta: float | None = None
    slow: bool = True
    eps: float = 1e-6

    @property
    def score_scale(self) -> float:
        return 1.0 / np.sqrt(self.d) if self.beta is None else float(self.beta)

    def n(self, X: np.ndarray) -> np.ndarray:
        return rms_norm(X, self.eps) if self.norm else X


def attention(s: Setting, w: dict, X: np.ndarray) -> np.ndarray:
    """``softmax_mask(β n(X)Q (n(X)K)ᵀ) n(X)V``."""
    Xn = s.n(X)
    A = softmax(s.score_scale * (Xn @ w["Q"]) @ (Xn @ w["K"]).T, s.mask)
    return A @ (Xn @ w["V"])


def mlp(s: Setting, w: dict, X: np.ndarray) -> np.ndarray:
    """``σ(n(X)W1)W2``."""
    return sigma(s.sigma, s.n(X) @ w["W1"]) @ w["W2"]


def slow_path(s: Setting, w: dict, X: np.ndarray) -> np.ndarray:
    """``U_c softmax_slowmask(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs`` with ``Ŷ = n(BX)`` (ungated)."""
    Y = s.n(pooling(s.T, s.P) @ X)
    A = softmax(
        s.score_scale * (Y @ w["Qs"]) @ (Y @ w["Ks"]).T, slow_level_mask(s.slow_mask, s.T // s.P)
    )
    return causal_upsampling(s.T, s.P) @ (A @ (Y @ w["Vs"]))


def increment(
    s: Setting, w: dict, g: float, X: np.ndarray, E: np.ndarray | None = None
) -> np.ndarray:
    """``Attn(X) + MLP(X) + g·Slow(X) + γ(E − X)`` (``E`` defaults to ``X``)."""
    F = attention(s, w, X) + mlp(s, w, X)
    if s.slow:
        F = F + g * slow_path(s, w, X)
    if s.gamma:
        F = F + s.gamma * ((X if E is None else E) - X)
    return F


def layer(s: Setting, w: dict, g: float, X: np.ndarray, E: np.ndarray | None = None) -> np.ndarray:
    """``Φ(X) = X + h·F(X)``."""
    return X + s.h * increment(s, w, g, X, E)


# ----------------------------------------------------------------------------- derivatives


def jvp(f, X: np.ndarray, dX: np.ndarray) -> np.ndarray:
    """``Df(X)[dX]`` by the complex step (exact to rounding)."""
    return f(X + 1j * STEP * dX).imag / STEP


def jacobian(f, X: np.ndarray) -> np.ndarray:
    """The dense Jacobian of ``f`` at ``X`` (row-major vectorisation), column by column."""
    n = X.size
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        cols.append(jvp(f, X, e.reshape(X.shape)).ravel())
    return np.array(cols).T


# ----------------------------------------------------------------------------- a model's inputs


def setting_of(config) -> Setting:
    """The :class:`Setting` of a model configuration, read from its *input fields* only (sizes,
    the mask's name or array, switches, ``beta``): never from derived values such as its score
    scale or mask array, so a wrong derivation in the code under test is not copied here.
    ``ValueError`` for a user nonlinearity (no formula to write down)."""
    mask = config.mask
    mask = named_mask(mask, config.T, config.P) if isinstance(mask, str) else np.asarray(mask, bool)
    if not isinstance(config.sigma, str):
        raise ValueError("a user nonlinearity has no reference formula")
    return Setting(
        T=int(config.T),
        P=int(config.P),
        d=int(config.d),
        mask=mask,
        slow_mask=str(config.slow_mask),
        norm=bool(config.norm),
        sigma=config.sigma,
        h=float(config.h),
        gamma=float(config.gamma),
        beta=None if config.beta is None else float(config.beta),
        slow=bool(config.slow),
        eps=float(config.norm_eps),
    )


WEIGHTS = ("Q", "K", "V", "W1", "W2", "Qs", "Ks", "Vs")


def weights_of(layer_params) -> tuple[dict, float]:
    """``(weights, g)`` of one layer's parameters (attributes ``Q … Vs`` and ``g``)."""
    return {k: np.asarray(getattr(layer_params, k), dtype=float) for k in WEIGHTS}, float(
        layer_params.g
    )
