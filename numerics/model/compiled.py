"""Numba-accelerated forward of one layer and of the stack, numerically the reference's.

Same map as :mod:`numerics.model.layer` (``_layer``, ``stack``) with the same switches (``norm``,
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
* **The activation** ``σ`` is one of the built-in ones of :mod:`numerics.model.activations`,
  selected at run time by its integer code (:func:`activation_rows`: tanh, relu, gelu (tanh
  approximation), identity); same formulas and operation order as the NumPy definitions there.
  A user :class:`~numerics.model.activations.Activation` (NumPy functions) is refused with a
  ``ValueError`` naming the NumPy reference path (:func:`numerics.model.layer.layer`,
  :func:`numerics.model.layer.stack`), which evaluates any activation.
* ``cache=True``, no ``fastmath``. ``exp`` and ``tanh`` are this module's vectorisable versions
  (≤ 1 and ≤ 2 ulp from NumPy's; gelu goes through the same ``tanh``, relu is exact), and sums run
  in a different order, so results agree with the reference to rounding (tests assert a relative
  Frobenius difference of 1e-12; the measured ones are in ``docs/benchmarks.md``), not bitwise. Masked entries are exact zeros, as in the
  reference, so causality (claim A1) holds bitwise on this path too.

Why these choices (BLAS from ``@njit`` costs what it costs from NumPy; one compiled function per
layer removes the Python overhead that dominates at small T; row tiles pay with causal masks from
T ≈ 512; Numba's scalar ``exp``/``tanh`` do not vectorise) is measured in ``docs/benchmarks.md``
("Design measurements"); ``fastslow bench`` keeps the maintained numbers.

Caveats: the first call compiles (seconds of CPU on a fresh checkout, less to load from the
on-disk cache; ``docs/benchmarks.md``); call :func:`warm_up` once per process (the test suite does it in a session
fixture). The kernels expect
C-contiguous float64 arrays, boolean masks and int64 ranges; the public wrappers convert.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from fastslow.numerics.integrators.numba_binding import COMPILED_ONLY, NO_C_ENTRY
from fastslow.numerics.lanes import EXP_POLY, fma
from fastslow.numerics.model.activations import (
    COMPILED_CODES,
    GELU_C,
    GELU_K,
    compiled_code,
    is_builtin,
)
from fastslow.numerics.model.layer import (
    check_embeddings,
    check_layer_params,
    check_model,
    check_state,
)
from fastslow.numerics.model.masks import block_level_mask
from fastslow.numerics.model.weights import LayerParams, Model, ModelConfig, init_model

__all__ = ["fast_layer", "fast_stack", "fast_attention", "fast_slow_path", "warm_up", "TILE"]

TILE = 128
"""Query rows per attention tile (64, 128 and 256 measure alike; docs/benchmarks.md)."""


# --------------------------------------------------------------------------- kernels


def _row_ranges(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lo[i], hi[i]``: first allowed column and one past the last allowed column of row ``i``."""
    S = mask.shape[1]
    lo = np.ascontiguousarray(mask.argmax(axis=1), dtype=np.int64)
    hi = np.ascontiguousarray(S - mask[:, ::-1].argmax(axis=1), dtype=np.int64)
    return lo, hi


@njit(cache=True, **COMPILED_ONLY)
def _rms_norm_into(X, eps, out):
    T, d = X.shape
    for i in range(T):
        s = 0.0
        for j in range(d):
            s += X[i, j] * X[i, j]
        den = np.sqrt(s / d + eps)
        for j in range(d):
            out[i, j] = X[i, j] / den


# exp(v) for v ≤ 0 by Cody–Waite reduction v = k·ln2 + r, |r| ≤ ln2/2, the degree-11 minimax
# polynomial EXP_POLY of numerics.lanes for e^r (relative error < 1.2e-17) and 2^k built in the
# exponent bits; the reduction and the polynomial in fused multiply-adds (lanes.fma: llvm.fma,
# correctly rounded, the same bits on every machine; the eight-lane exp8 does the same operations).
# Written as branch-free passes so that LLVM vectorises them (Numba's scalar np.exp does not
# vectorise: 3.9 ns against NumPy's 0.9 ns per element here). Measured: ≤ 1 ulp from np.exp on
# [−708, 0]; arguments below −708 (e^v < 3.1e-308) give 0, an absolute error < 3.1e-308 in a
# softmax weight.
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SHIFTER = 6755399441055744.0  # 1.5·2^52: adding it rounds to an integer kept in the low bits
_BIAS = 1023 << 52
EXP_CUT = -708.0
_C11, _C10, _C9, _C8, _C7, _C6, _C5, _C4, _C3, _C2, _C1, _C0 = EXP_POLY


@njit(cache=True, **NO_C_ENTRY)
def exp_into(v, p, t):
    """``e^v = p·t`` split in two factors: ``p = e^r`` (polynomial), ``t = 2^k`` (exponent bits).

    ``v`` must be ≤ 0 or NaN; the caller zeroes the results where ``v < EXP_CUT``.
    """
    for b in range(v.shape[0]):
        x = v[b]
        x = EXP_CUT if x < EXP_CUT else x  # NaN stays NaN (and propagates, like np.exp)
        s = fma(x, _LOG2E, _SHIFTER)
        k = s - _SHIFTER
        r = fma(-k, _LN2_LO, fma(-k, _LN2_HI, x))
        q = _C11
        q = fma(q, r, _C10)
        q = fma(q, r, _C9)
        q = fma(q, r, _C8)
        q = fma(q, r, _C7)
        q = fma(q, r, _C6)
        q = fma(q, r, _C5)
        q = fma(q, r, _C4)
        q = fma(q, r, _C3)
        q = fma(q, r, _C2)
        q = fma(q, r, _C1)
        q = fma(q, r, _C0)
        p[b] = q
        t[b] = s
    bits = t.view(np.int64)
    for b in range(v.shape[0]):
        bits[b] = (bits[b] << 52) + _BIAS  # the bits of 2^k


# tanh: Cephes' rational approximation x + x³·P(x²)/Q(x²) for |x| < 0.625, and
# (1 − e^{−2|x|})/(1 + e^{−2|x|}) with the sign of x above, both computed and selected so that the
# loop vectorises. Measured ≤ 2 ulp from np.tanh (tests/test_fast.py).
_TP0, _TP1, _TP2 = -9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3
_TQ0, _TQ1, _TQ2 = 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3


@njit(cache=True, **NO_C_ENTRY)
def tanh_row(row, vbuf, pbuf, tbuf):
    """``row ← tanh(row)`` in place (1-D, contiguous)."""
    n = row.shape[0]
    v = vbuf[:n]
    p = pbuf[:n]
    t = tbuf[:n]
    for b in range(n):
        v[b] = -2.0 * abs(row[b])
    exp_into(v, p, t)
    for b in range(n):
        x = row[b]
        e = 0.0 if v[b] < EXP_CUT else p[b] * t[b]
        big = (1.0 - e) / (1.0 + e)
        big = big if x >= 0.0 else -big
        z = x * x
        num = fma(fma(_TP0, z, _TP1), z, _TP2)
        den = fma(fma(z + _TQ0, z, _TQ1), z, _TQ2)
        small = fma(x * z, num / den, x)
        row[b] = small if abs(x) < 0.625 else big


@njit(cache=True, **COMPILED_ONLY)
def relu_row(row):
    """``row ← max(row, 0)`` in place, bit for bit ``np.maximum(row, 0.0)`` (NaN stays NaN, −0
    becomes +0)."""
    for b in range(row.shape[0]):
        x = row[b]
        row[b] = 0.0 if x <= 0.0 else x


@njit(cache=True, **COMPILED_ONLY)
def gelu_row(row, vbuf, pbuf, tbuf, zbuf):
    """``row ← ½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))`` in place (the tanh approximation of GELU,
    in the operation order of :data:`numerics.model.activations.GELU`, with :func:`tanh_row`)."""
    n = row.shape[0]
    z = zbuf[:n]
    for b in range(n):
        x = row[b]
        z[b] = x
        row[b] = GELU_C * (x + GELU_K * (x * x * x))
    tanh_row(row, vbuf, pbuf, tbuf)
    for b in range(n):
        row[b] = 0.5 * z[b] * (1.0 + row[b])


HAS_TANH = HAS_RELU = HAS_GELU = True
"""Which activations :func:`activation_rows` holds (compile-time constants: a branch behind a
``False`` one is pruned before typing, its kernel never compiled); all in this module's function,
one in the copies the coupling right-hand side binds for the activation of its instance
(:func:`numerics.model.coupling.rhs.rows_copy`)."""


@njit(cache=True, **NO_C_ENTRY)
def activation_rows(code, H, vbuf, pbuf, tbuf, zbuf):
    """``H ← σ(H)`` in place, row by row (2-D, C-contiguous rows), for the built-in activation of
    :data:`numerics.model.activations.COMPILED_CODES` ``code`` (0 identity: nothing to do). The
    buffers are scratch space at least as long as a row. The code is tested once, outside the loop
    over rows (a test per row costs ≈ 5% of a T = 256 layer). A copy without one of the
    activations (:data:`HAS_TANH`, ...) refuses its code as unknown."""
    T = H.shape[0]
    if HAS_TANH and code == 1:
        for i in range(T):
            tanh_row(H[i], vbuf, pbuf, tbuf)
    elif HAS_RELU and code == 2:
        for i in range(T):
            relu_row(H[i])
    elif HAS_GELU and code == 3:
        for i in range(T):
            gelu_row(H[i], vbuf, pbuf, tbuf, zbuf)
    elif code != 0:
        raise ValueError("unknown activation code: the compiled paths evaluate built-in ones only")


@njit(cache=True, **COMPILED_ONLY)
def softmax_row(row, mrow, vbuf, pbuf, tbuf):
    """Masked softmax of one score row in place; ``mrow`` is the mask over the same columns
    (nonzero: allowed), the buffers scratch at least as long as the row; masked entries are exact
    zeros, the exponentials those of :func:`exp_into` (≤ 1 ulp from ``np.exp``)."""
    n = row.shape[0]
    v = vbuf[:n]
    p = pbuf[:n]
    t = tbuf[:n]
    m = -np.inf
    for b in range(n):
        if mrow[b] and row[b] > m:
            m = row[b]
    for b in range(n):
        v[b] = row[b] - m if mrow[b] else -1000.0
    exp_into(v, p, t)
    z0 = 0.0
    z1 = 0.0
    z2 = 0.0
    z3 = 0.0
    b = 0
    while b + 4 <= n:
        e0 = 0.0 if v[b] < EXP_CUT else p[b] * t[b]
        e1 = 0.0 if v[b + 1] < EXP_CUT else p[b + 1] * t[b + 1]
        e2 = 0.0 if v[b + 2] < EXP_CUT else p[b + 2] * t[b + 2]
        e3 = 0.0 if v[b + 3] < EXP_CUT else p[b + 3] * t[b + 3]
        row[b] = e0
        row[b + 1] = e1
        row[b + 2] = e2
        row[b + 3] = e3
        z0 += e0
        z1 += e1
        z2 += e2
        z3 += e3
        b += 4
    while b < n:
        e0 = 0.0 if v[b] < EXP_CUT else p[b] * t[b]
        row[b] = e0
        z0 += e0
        b += 1
    z = (z0 + z1) + (z2 + z3)
    for b in range(n):
        row[b] = row[b] / z


@njit(cache=True, **COMPILED_ONLY)
def _attention_into(Qp, Kp, Vp, mask, lo, hi, tile, sbuf, out):
    """``out = softmax_mask(Qp Kpᵀ) Vp`` by row tiles, scoring only each tile's column range.

    ``Qp`` is already scaled by β. ``sbuf`` is a flat scratch buffer of length ≥ tile·S.
    """
    T = Qp.shape[0]
    nk = Kp.shape[0]
    vbuf = np.empty(nk)
    pbuf = np.empty(nk)
    tbuf = np.empty(nk)
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
        S = sbuf[: nr * nc].reshape((nr, nc))
        np.dot(Qp[r0:r1], Kp[c0:c1].T, S)
        for a in range(nr):
            softmax_row(S[a], mask[r0 + a, c0:c1], vbuf, pbuf, tbuf)
        np.dot(S, Vp[c0:c1], out[r0:r1])


@njit(cache=True, **COMPILED_ONLY)
def _normed_into(X, eps, norm, out):
    if norm:
        _rms_norm_into(X, eps, out)
    else:
        out[:, :] = X


@njit(cache=True, **COMPILED_ONLY)
def _attention_of(Xn, Q, K, V, mask, lo, hi, beta, tile, sbuf, out):
    """``out = softmax_mask(β Xn Q (Xn K)ᵀ) Xn V`` for an already normalised ``Xn``."""
    T, d = Xn.shape
    Qp = np.empty((T, d))
    Kp = np.empty((T, d))
    Vp = np.empty((T, d))
    np.dot(Xn, Q, Qp)
    for i in range(T):
        for j in range(d):
            Qp[i, j] = beta * Qp[i, j]
    np.dot(Xn, K, Kp)
    np.dot(Xn, V, Vp)
    _attention_into(Qp, Kp, Vp, mask, lo, hi, tile, sbuf, out)


@njit(cache=True, **COMPILED_ONLY)
def _slow_blocks(X, Qs, Ks, Vs, smask, slo, shi, P, beta, eps, norm, tile, sbuf, out):
    """``out[b] = (softmax_slowmask(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs)[b]``, ``Ŷ = n(BX)``: N×d, before ``U_c``."""
    T, d = X.shape
    N = T // P
    Y = np.zeros((N, d))
    for b in range(N):
        for p in range(P):
            for j in range(d):
                Y[b, j] += X[b * P + p, j]
        for j in range(d):
            Y[b, j] = Y[b, j] / P
    Yh = np.empty((N, d))
    _normed_into(Y, eps, norm, Yh)
    _attention_of(Yh, Qs, Ks, Vs, smask, slo, shi, beta, tile, sbuf, out)


@njit(cache=True, **NO_C_ENTRY)
def _layer_into(
    X,
    E,
    Q,
    K,
    V,
    W1,
    W2,
    Qs,
    Ks,
    Vs,
    g,
    mask,
    lo,
    hi,
    smask,
    slo,
    shi,
    P,
    beta,
    h,
    gamma,
    eps,
    norm,
    act,
    slow,
    tile,
    sbuf,
    out,
):
    """One layer ``out = Φ(X)``; the work arrays are allocated here once per call."""
    T, d = X.shape
    m = W1.shape[1]
    Xn = np.empty((T, d))
    _normed_into(X, eps, norm, Xn)
    att = np.empty((T, d))
    _attention_of(Xn, Q, K, V, mask, lo, hi, beta, tile, sbuf, att)
    H = np.empty((T, m))
    np.dot(Xn, W1, H)
    if act != 0:
        activation_rows(act, H, np.empty(m), np.empty(m), np.empty(m), np.empty(m))
    M = np.empty((T, d))
    np.dot(H, W2, M)
    up = np.zeros((T // P, d))  # slow output per block, before the causal shift
    if slow:
        _slow_blocks(X, Qs, Ks, Vs, smask, slo, shi, P, beta, eps, norm, tile, sbuf, up)
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
def _fast_attention_kernel(X, Q, K, V, mask, lo, hi, beta, eps, norm, tile):
    T, d = X.shape
    Xn = np.empty((T, d))
    _normed_into(X, eps, norm, Xn)
    out = np.empty((T, d))
    _attention_of(Xn, Q, K, V, mask, lo, hi, beta, tile, np.empty(min(tile, T) * T), out)
    return out


@njit(cache=True)
def _slow_path_kernel(X, Qs, Ks, Vs, smask, slo, shi, P, beta, eps, norm, tile):
    T, d = X.shape
    N = T // P
    up = np.empty((N, d))
    _slow_blocks(
        X, Qs, Ks, Vs, smask, slo, shi, P, beta, eps, norm, tile, np.empty(min(tile, N) * N), up
    )
    out = np.zeros((T, d))
    for i in range(P, T):
        for j in range(d):
            out[i, j] = up[i // P - 1, j]
    return out


# --------------------------------------------------------------------------- plumbing


def _c(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


_STATIC = weakref.WeakKeyDictionary()


def _static(cfg: ModelConfig) -> tuple:
    """The configuration as the kernels' positional arguments (exact dtypes), cached per config.

    The config is frozen; its mask array is treated as immutable (as everywhere in numerics).
    """
    hit = _STATIC.get(cfg)
    if hit is None:
        hit = _STATIC[cfg] = _static_uncached(cfg)
    return hit


def _check_sigma_compiles(cfg: ModelConfig) -> None:
    """``ValueError`` naming the NumPy path if the config's activation is a user one (the
    attention and slow-path pieces do not need ``σ`` and run for any activation)."""
    compiled_code(
        cfg.activation,
        "the compiled layer (numerics.model.compiled)",
        "numerics.model.layer.layer / numerics.model.layer.stack evaluate any activation",
    )


def _static_uncached(cfg: ModelConfig) -> tuple:
    mask = np.ascontiguousarray(cfg.mask_array, dtype=np.bool_)
    lo, hi = _row_ranges(mask)
    smask = np.ascontiguousarray(block_level_mask(cfg.slow_mask, cfg.N), dtype=np.bool_)
    slo, shi = _row_ranges(smask)
    return (
        mask,
        lo,
        hi,
        smask,
        slo,
        shi,
        np.int64(cfg.P),
        float(cfg.score_scale),
        float(cfg.h),
        float(cfg.gamma),
        float(cfg.norm_eps),
        bool(cfg.norm),
        np.int64(COMPILED_CODES[cfg.activation.name] if is_builtin(cfg.activation) else -1),
        bool(cfg.slow),
        np.int64(TILE),
    )


def _weights(p: LayerParams) -> tuple:
    return tuple(_c(getattr(p, n)) for n in ("Q", "K", "V", "W1", "W2", "Qs", "Ks", "Vs")) + (
        float(p.g),
    )


def fast_trajectory_unchecked(
    cfg: ModelConfig, layers, X0: np.ndarray, E: np.ndarray | None
) -> np.ndarray:
    """Unvalidated: all states ``(L+1, T, d)``. Hot path for benchmarks and integrators.

    The loop over layers is in Python, one kernel call per layer. A user activation is refused
    (``ValueError``).
    """
    _check_sigma_compiles(cfg)
    st = _static(cfg)
    out = np.empty((len(layers) + 1, cfg.T, cfg.d))
    out[0] = X0
    Ek = out[0] if E is None else _c(E)
    sbuf = np.empty(min(TILE, cfg.T) * cfg.T)
    for l, p in enumerate(layers):
        _layer_into(out[l], Ek, *_weights(p), *st, sbuf, out[l + 1])
    return out


# --------------------------------------------------------------------------- public functions


def fast_layer(config: ModelConfig, params: LayerParams, X, E=None) -> np.ndarray:
    """One layer ``Φ(X) = X + h·F(X)``, Numba path; same result as :func:`numerics.model.layer.layer`.

    ``E`` (the injection target) defaults to ``X``, i.e. no injection, as in the reference.
    Validation as in the reference: ``ValueError``/``TypeError`` naming the bad argument.
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(
            f"config must be a numerics.model.weights.ModelConfig, got {type(config).__name__}"
        )
    p = check_layer_params(config, params)
    X = check_state(config, X)
    E = check_state(config, E, "E") if E is not None else None
    return fast_trajectory_unchecked(config, (p,), X, E)[1]


def fast_stack(model: Model, X0, E=None) -> np.ndarray:
    """The stack ``X_L = Φ_{L−1} ∘ ⋯ ∘ Φ_0 (X_0)``, Numba path; same as :func:`numerics.model.layer.stack`.

    ``E`` defaults to ``X_0`` (it only matters when ``γ > 0``). Raises ``FloatingPointError`` if the
    stack produces non-finite values, like the reference.
    """
    model = check_model(model)
    cfg = model.config
    X = check_state(cfg, X0, "X0")
    E = check_embeddings(cfg, E, X)
    out = fast_trajectory_unchecked(cfg, model.layers, X, E)[-1]
    if not np.all(np.isfinite(out)):
        raise FloatingPointError(
            "the stack produced non-finite values; reduce the weight scale or h"
        )
    return out


def compiled_pieces(cfg: ModelConfig):
    st = _static(cfg)
    mask, lo, hi, smask, slo, shi, P, beta, h, gamma, eps, norm, act, slow, tile = st
    return mask, lo, hi, smask, slo, shi, P, beta, eps, norm, tile


def fast_attention_unchecked(
    cfg: ModelConfig, p: LayerParams, X: np.ndarray, static=None
) -> np.ndarray:
    """Unvalidated ``Attn(X)``; ``static`` = ``compiled_pieces(cfg)`` may be precomputed (benchmarks)."""
    mask, lo, hi, smask, slo, shi, P, beta, eps, norm, tile = static or compiled_pieces(cfg)
    return _fast_attention_kernel(
        _c(X), _c(p.Q), _c(p.K), _c(p.V), mask, lo, hi, beta, eps, norm, tile
    )


def fast_slow_path_unchecked(
    cfg: ModelConfig, p: LayerParams, X: np.ndarray, static=None
) -> np.ndarray:
    """Unvalidated ``Slow(X)`` (ungated); ``static`` as in :func:`fast_attention_unchecked`."""
    mask, lo, hi, smask, slo, shi, P, beta, eps, norm, tile = static or compiled_pieces(cfg)
    return _slow_path_kernel(
        _c(X), _c(p.Qs), _c(p.Ks), _c(p.Vs), smask, slo, shi, P, beta, eps, norm, tile
    )


def fast_attention(config: ModelConfig, params: LayerParams, X) -> np.ndarray:
    """``Attn(X) = A(X) n(X) V``, Numba path; same as :func:`numerics.model.layer.attention`."""
    if not isinstance(config, ModelConfig):
        raise TypeError(
            f"config must be a numerics.model.weights.ModelConfig, got {type(config).__name__}"
        )
    return fast_attention_unchecked(
        config, check_layer_params(config, params), check_state(config, X)
    )


def fast_slow_path(config: ModelConfig, params: LayerParams, X) -> np.ndarray:
    """``Slow(X) = U_c softmax(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs``, Numba path; same as
    :func:`numerics.model.layer.slow_path` (ungated)."""
    if not isinstance(config, ModelConfig):
        raise TypeError(
            f"config must be a numerics.model.weights.ModelConfig, got {type(config).__name__}"
        )
    return fast_slow_path_unchecked(
        config, check_layer_params(config, params), check_state(config, X)
    )


def warm_up() -> None:
    """Compile (or load from the cache) every kernel once, with the exact dtypes the wrappers pass."""

    for kw in ({}, {"norm": False, "sigma": "identity", "gamma": 0.5, "slow_mask": "full"}):
        cfg = ModelConfig(T=4, P=2, d=2, **kw)
        model = init_model(cfg, 2, 0, gate=0.5)
        X0 = np.linspace(-1.0, 1.0, 8).reshape(4, 2)
        fast_stack(model, X0)
        fast_layer(cfg, model.layers[0], X0)
        fast_attention(cfg, model.layers[0], X0)
        fast_slow_path(cfg, model.layers[0], X0)
