"""Numba-accelerated forward of one layer and of the stack, numerically the reference's (SPEC §1, §5).

Same map as :mod:`numerics.layer` (``_layer``, ``stack``) with the same switches (``norm``,
``sigma``, ``slow`` on/off, ``slow_mask``, ``gamma``, ``beta``, any boolean fast mask)::

    Φ(X) = X + h·[ A(X) n(X)V + σ(n(X)W1)W2 + g·U_c Aₛ(Ŷ) ŶVs + γ(E − X) ],   Ŷ = n(BX)

How it is computed:

* Every T×T×d and T×d×d product is a BLAS call (``np.dot`` inside ``@njit``, writing into
  preallocated buffers). Numba does the row-wise RMS norm, the masked softmax, block pooling,
  causal up-sampling and the element-wise combination, fused into single passes.
* **Row tiles and column ranges.** The attention is computed in tiles of ``TILE`` query rows. For
  each tile only the columns between the first and the last allowed key of its rows are scored and
  mixed; everything outside that range is an exact zero of the softmax, so skipping it changes
  nothing but the order of floating-point summation. For a causal mask this removes about half of
  the 4T²d FLOP, for block masks all but the diagonal blocks; for a dense mask it removes nothing.
* ``cache=True``, no ``fastmath``: ``exp``, ``tanh`` and ``sqrt`` are the correctly rounded-ish libm
  versions, not the reference's SIMD ones, and sums run in a different order, so results agree with
  the reference to rounding (relative ≈ 1e-15 per layer; see ``tests/test_fast.py``), not bitwise.

Measurement behind the choices (T=1024, d=64, causal, 1 OpenBLAS thread, this 2-core EPYC,
DGEMM ≈ 52 GF/s): NumPy reference 18.7 ms; the same untiled algorithm inside ``@njit`` with
``np.dot`` into preallocated buffers and a fused softmax ≈ 11 ms (the reference's ``np.where``,
temporaries and four passes over the T×T matrix cost ~7 ms); with the row tiles ≈ 6 ms. Calling
NumPy with ``out=`` buffers from Python gave the same BLAS time but kept the Python-level overhead
(≈ 40 µs per layer at T=64, where the whole layer takes ~60 µs), so the whole layer is one ``@njit``
function. A tile of 128 rows measured best (64: +8 %, 256: +10 % at T=1024).

Caveats: the first call compiles (a few seconds, then loaded from the on-disk cache); call
:func:`warm_up` once per process (the test suite does it in a session fixture). The kernels expect
C-contiguous float64 arrays, boolean masks and int64 ranges; the public wrappers convert.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .layer import _check_embeddings, _check_layer_params, _check_model, _check_state
from .masks import block_level_mask
from .model import LayerParams, Model, ModelConfig

__all__ = ["fast_layer", "fast_stack", "warm_up", "TILE"]

TILE = 128
"""Query rows per attention tile (measured best at T=1024, d=64; see the module docstring)."""


# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _row_ranges(mask):
    """``lo[i], hi[i]``: first allowed column and one past the last allowed column of row ``i``."""
    T, S = mask.shape
    lo = np.zeros(T, dtype=np.int64)
    hi = np.zeros(T, dtype=np.int64)
    for i in range(T):
        a = S
        b = 0
        for j in range(S):
            if mask[i, j]:
                if j < a:
                    a = j
                b = j + 1
        lo[i] = a
        hi[i] = b
    return lo, hi


@njit(cache=True)
def _rms_norm_into(X, eps, out):
    T, d = X.shape
    for i in range(T):
        s = 0.0
        for j in range(d):
            s += X[i, j] * X[i, j]
        den = np.sqrt(s / d + eps)
        for j in range(d):
            out[i, j] = X[i, j] / den


@njit(cache=True)
def _attention_into(Qp, Kp, Vp, mask, lo, hi, tile, sbuf, out):
    """``out = softmax_mask(Qp Kpᵀ) Vp`` by row tiles, scoring only each tile's column range.

    ``Qp`` is already scaled by β. ``sbuf`` is a flat scratch buffer of length ≥ tile·S.
    """
    T = Qp.shape[0]
    for r0 in range(0, T, tile):
        r1 = min(r0 + tile, T)
        c0 = lo[r0]
        c1 = hi[r0]
        for i in range(r0 + 1, r1):
            if lo[i] < c0:
                c0 = lo[i]
            if hi[i] > c1:
                c1 = hi[i]
        nr = r1 - r0
        nc = c1 - c0
        S = sbuf[:nr * nc].reshape((nr, nc))
        np.dot(Qp[r0:r1], Kp[c0:c1].T, S)
        for a in range(nr):
            i = r0 + a
            m = -np.inf
            for j in range(lo[i], hi[i]):
                if mask[i, j] and S[a, j - c0] > m:
                    m = S[a, j - c0]
            z = 0.0
            for b in range(nc):
                j = c0 + b
                if mask[i, j]:
                    e = np.exp(S[a, b] - m)
                    S[a, b] = e
                    z += e
                else:
                    S[a, b] = 0.0
            for b in range(nc):
                S[a, b] = S[a, b] / z
        np.dot(S, Vp[c0:c1], out[r0:r1])


@njit(cache=True)
def _layer_into(X, E, Q, K, V, W1, W2, Qs, Ks, Vs, g, mask, lo, hi, smask, slo, shi,
                P, beta, h, gamma, eps, norm, tanh, slow, tile, sbuf, out):
    """One layer ``out = Φ(X)``; all work arrays are allocated here once per call."""
    T, d = X.shape
    m = W1.shape[1]
    Xn = np.empty((T, d))
    if norm:
        _rms_norm_into(X, eps, Xn)
    else:
        Xn[:, :] = X
    Qp = np.empty((T, d))
    Kp = np.empty((T, d))
    Vp = np.empty((T, d))
    np.dot(Xn, Q, Qp)
    for i in range(T):
        for j in range(d):
            Qp[i, j] = beta * Qp[i, j]
    np.dot(Xn, K, Kp)
    np.dot(Xn, V, Vp)
    att = np.empty((T, d))
    _attention_into(Qp, Kp, Vp, mask, lo, hi, tile, sbuf, att)
    H = np.empty((T, m))
    np.dot(Xn, W1, H)
    if tanh:
        for i in range(T):
            for j in range(m):
                H[i, j] = np.tanh(H[i, j])
    M = np.empty((T, d))
    np.dot(H, W2, M)

    N = T // P
    up = np.zeros((N, d))  # slow output per block, before the causal shift
    if slow:
        Y = np.zeros((N, d))
        for b in range(N):
            for p in range(P):
                for j in range(d):
                    Y[b, j] += X[b * P + p, j]
            for j in range(d):
                Y[b, j] = Y[b, j] / P
        Yh = np.empty((N, d))
        if norm:
            _rms_norm_into(Y, eps, Yh)
        else:
            Yh[:, :] = Y
        Qsp = np.empty((N, d))
        Ksp = np.empty((N, d))
        Vsp = np.empty((N, d))
        np.dot(Yh, Qs, Qsp)
        for i in range(N):
            for j in range(d):
                Qsp[i, j] = beta * Qsp[i, j]
        np.dot(Yh, Ks, Ksp)
        np.dot(Yh, Vs, Vsp)
        _attention_into(Qsp, Ksp, Vsp, smask, slo, shi, tile, sbuf, up)

    for i in range(T):
        b = i // P
        for j in range(d):
            f = att[i, j] + M[i, j]
            if slow:
                s = up[b - 1, j] if b >= 1 else 0.0
                f = f + g * s
            if gamma != 0.0:
                f = f + gamma * (E[i, j] - X[i, j])
            out[i, j] = X[i, j] + h * f


@njit(cache=True)
def _stack_into(X0, E, Q, K, V, W1, W2, Qs, Ks, Vs, g, mask, lo, hi, smask, slo, shi,
                P, beta, h, gamma, eps, norm, tanh, slow, tile, out):
    """``out[l]`` = the state after ``l`` layers (``out[0] = X0``); weights stacked along axis 0."""
    L = Q.shape[0]
    T = X0.shape[0]
    sbuf = np.empty(min(tile, T) * T)
    out[0] = X0
    for l in range(L):
        _layer_into(out[l], E, Q[l], K[l], V[l], W1[l], W2[l], Qs[l], Ks[l], Vs[l], g[l],
                    mask, lo, hi, smask, slo, shi, P, beta, h, gamma, eps, norm, tanh, slow,
                    tile, sbuf, out[l + 1])


# --------------------------------------------------------------------------- plumbing

def _c(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def _static(cfg: ModelConfig) -> tuple:
    """The configuration as the kernels' positional arguments (exact dtypes, computed once)."""
    mask = np.ascontiguousarray(cfg.mask_array, dtype=np.bool_)
    lo, hi = _row_ranges(mask)
    smask = np.ascontiguousarray(block_level_mask(cfg.slow_mask, cfg.N), dtype=np.bool_)
    slo, shi = _row_ranges(smask)
    return (mask, lo, hi, smask, slo, shi, np.int64(cfg.P), float(cfg.score_scale), float(cfg.h),
            float(cfg.gamma), float(cfg.norm_eps), bool(cfg.norm), cfg.sigma == "tanh",
            bool(cfg.slow), np.int64(TILE))


def _stacked(layers) -> tuple:
    ws = tuple(np.ascontiguousarray(np.stack([getattr(p, n) for p in layers]), dtype=np.float64)
               for n in ("Q", "K", "V", "W1", "W2", "Qs", "Ks", "Vs"))
    return ws + (np.array([float(p.g) for p in layers], dtype=np.float64),)


def _fast_trajectory(cfg: ModelConfig, layers, X0: np.ndarray, E: np.ndarray | None) -> np.ndarray:
    """Unvalidated: all states ``(L+1, T, d)``. Hot path for benchmarks and integrators."""
    X0 = _c(X0)
    Ek = X0 if E is None else _c(E)
    out = np.empty((len(layers) + 1, cfg.T, cfg.d))
    _stack_into(X0, Ek, *_stacked(layers), *_static(cfg), out)
    return out


# --------------------------------------------------------------------------- public functions

def fast_layer(config: ModelConfig, params: LayerParams, X, E=None) -> np.ndarray:
    """One layer ``Φ(X) = X + h·F(X)``, Numba path; same result as :func:`numerics.layer.layer`.

    ``E`` (the injection target) defaults to ``X``, i.e. no injection, as in the reference.
    Validation as in the reference: ``ValueError``/``TypeError`` naming the bad argument.
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a numerics.ModelConfig, got {type(config).__name__}")
    p = _check_layer_params(config, params)
    X = _check_state(config, X)
    E = _check_state(config, E, "E") if E is not None else None
    return _fast_trajectory(config, (p,), X, E)[1]


def fast_stack(model: Model, X0, E=None) -> np.ndarray:
    """The stack ``X_L = Φ_{L−1} ∘ ⋯ ∘ Φ_0 (X_0)``, Numba path; same as :func:`numerics.layer.stack`.

    ``E`` defaults to ``X_0`` (it only matters when ``γ > 0``). Raises ``FloatingPointError`` if the
    stack produces non-finite values, like the reference.
    """
    model = _check_model(model)
    cfg = model.config
    X = _check_state(cfg, X0, "X0")
    E = _check_embeddings(cfg, E, X)
    out = _fast_trajectory(cfg, model.layers, X, E)[-1]
    if not np.all(np.isfinite(out)):
        raise FloatingPointError("the stack produced non-finite values; reduce the weight scale or h")
    return out


def warm_up() -> None:
    """Compile (or load from the cache) every kernel once, with the exact dtypes the wrappers pass."""
    from .model import init_model

    for kw in ({}, {"norm": False, "sigma": "identity", "gamma": 0.5, "slow_mask": "full"}):
        cfg = ModelConfig(T=4, P=2, d=2, **kw)
        model = init_model(cfg, 2, 0, gate=0.5)
        X0 = np.linspace(-1.0, 1.0, 8).reshape(4, 2)
        fast_stack(model, X0)
        fast_layer(cfg, model.layers[0], X0)
