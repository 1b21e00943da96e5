"""The coupling form of the depth flow, compiled for the integrators.

``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)``, ``R_t(X) = γ(E − X) + MLP_t(X) + g_t·Slow_t(X)``, with
``θ(t)`` piecewise constant on ``L`` equal intervals (the untied stack; tied weights are ``L = 1``).

What it computes:

* :func:`coupling_rhs_nb`: the right-hand side, a Numba transcription of
  :func:`numerics.model.flow.make_rhs` with ``form="coupling"`` (same RMS norm, masked softmax,
  MLP with a built-in activation (tanh, relu, gelu or identity, packed as its integer code of
  :data:`numerics.model.activations.COMPILED_CODES`), block-causal slow path with ``U_c``). For block-local masks the kernel and its product with
  ``X`` are computed block by block (``O(T·P·d)``, not ``O(T²d)``). The packed vector also holds,
  per layer, ``G = [β·Q Kᵀ | W1]`` and ``Gs = [β·Qs Ksᵀ | Vs]``, so that one product ``n(X)·G``
  gives the bilinear score factor and the MLP pre-activation; weights and mask are read as views
  of the packed vector; the softmax exponentials and the MLP activation go through the
  vectorisable ``exp`` and :func:`numerics.model.compiled.activation_rows` (≤ 1 and ≤ 2 ulp). A
  user :class:`~numerics.model.activations.Activation` (NumPy functions) is not compiled:
  :func:`pack_coupling`, :func:`integrate_coupling` and ``integrate_coupling_scipy(rhs="compiled")``
  refuse it with a ``ValueError`` naming the NumPy right-hand side
  (``integrate_coupling_scipy(rhs="numpy")``, :func:`numerics.model.flow.make_rhs`).
  Block-local masks with ``d``, ``m`` and ``P`` multiples of 8 take an eight-lane path
  (:func:`_block_local_rhs8`, the vectors of :mod:`numerics.lanes`: one AVX-512 register per row
  of eight doubles; the products eight rows at once with eight independent accumulators; the
  norm and the score blocks through an 8×8 shuffle transpose; the softmax with one lane per row,
  so that its maximum, sum and division are vertical; the exponentials and tanh eight vectors
  at once; the slow path with one pooled query per lane), ≈ 3.5–3.8× faster than the row path
  on the benchmark problem (T = 64, d = P = m = 8; measured in one process, best of 1000 batches
  of 400 calls on a shared machine: 3.0–3.3 µs against 10.5–12.3 µs with the norm and slow path,
  2.5–2.6 µs against 9.2 µs without). Numba does not run LLVM's SLP vectoriser and its loop
  vectoriser does nothing useful for runs of eight, hence the explicit lanes.
* :func:`frozen_kernel_jac_nb`: the stiff part ``J = (A_t(X) − I)/ε − γI`` of the Jacobian (T×T,
  acting on the token index), which the Rosenbrock-W and Radau methods use as ``W = J ⊗ I_d``;
  for a mask that is not block-local it is written in row panels into ``J`` itself
  (:func:`_kernel_rows_into`: no T×T temporary, a causal row only up to its diagonal).
* :func:`integrate_coupling`: the flow by :func:`numerics.integrators.integrate` (Numba loops),
  stopping exactly at every ``l/L``; for block-local masks the inverse of ``I/(hγ) − J`` is taken
  block by block, for a causal mask ``J`` is declared lower triangular (``jac_lower``: solved by
  substitution on ``J`` itself, no T×T factorisation kept).
* :func:`integrate_coupling_scipy`: the same flow by :func:`scipy.integrate.solve_ivp`, interval by
  interval (stops at every ``l/L``), with the compiled or the NumPy right-hand side and the
  frozen-kernel Jacobian (dense or sparse) or SciPy's own finite-difference one.
* :func:`coupling_problem`: a seeded problem (model, injection target, start) read from a mapping
  of claim parameters; :func:`integrator_work`: right-hand-side evaluations and CPU time of each
  integrator on it.

All parameters travel in one flat float64 vector built by :func:`pack_coupling`.

Caveats. :func:`coupling_rhs_nb` agrees with :func:`numerics.model.flow.make_rhs` to rounding, not
bitwise (different summation order and the precomputed ``Q Kᵀ``; the tests check the agreement).
Its eight-lane and row paths agree to rounding (``n(X)·G`` is a BLAS product on the row path, a
sum in order on the lanes; ``tanh(−0)`` is ``−0`` on the lanes, ``+0`` on the rows; every other
operation is the same, in the same order): tests assert 1e-13 of the largest entry; measured
≤ 2e-15 on the benchmark problems, and integrator runs end within 3e-14 with the same counts.
The frozen-kernel ``J`` omits the derivative of the softmax (``(1/ε)·DA[δX]·X``), which vanishes on
the critical manifold of a block-local mask and is bounded by ``‖(I − UB)X‖/ε`` near it, and the
Jacobian of the MLP and slow path (O(1)); the W-method keeps its order whatever is omitted. The CPU
times of :func:`integrator_work` are measurements: they differ from run to run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps
from numba import njit
from scipy.integrate import solve_ivp

from fastslow.numerics import validation as v
from fastslow.numerics.integrators import IntegratorResult, integrate
from fastslow.numerics.lanes import (
    add8,
    aligned_zeros,
    div8,
    exp8,
    exp8x8_into,
    load8,
    madd8,
    mul8,
    neg8,
    scale8,
    select_pos8,
    splat8,
    sqrt8,
    store8,
    sub8,
    tanh8,
    tanh8x8_into,
    transpose8,
    vdiv8,
    zero8,
)
from fastslow.numerics.model import kernels
from fastslow.numerics.model.activations import compiled_code, is_builtin
from fastslow.numerics.model.compiled import EXP_CUT, activation_rows, exp_into, softmax_row
from fastslow.numerics.model.weights import LayerParams, Model, ModelConfig, init_model

HEADER = 16
(_T, _P, _D, _M, _L, _NORM, _SIGMA, _SLOW, _SLOWFULL, _GAMMA, _BETA, _NEPS, _EPS, _BLOCKLOCAL,
 _SCRATCH, _MASKW) = range(16)  # fmt: skip

__all__ = [
    "pack_coupling",
    "coupling_rhs_nb",
    "frozen_kernel_jac_nb",
    "is_lower_triangular",
    "integrate_coupling",
    "integrate_coupling_scipy",
    "ScipyCouplingResult",
    "layer_breakpoints",
    "CouplingProblem",
    "coupling_problem",
    "integrator_work",
    "WORK_METHODS",
]


SIGMA_NOT_COMPILED = -1.0
"""The activation code packed for a user activation by ``pack_coupling(..., jacobian_only=True)``:
:func:`frozen_kernel_jac_nb` does not need ``σ``, :func:`coupling_rhs_nb` refuses it."""

NUMPY_ALTERNATIVE = (
    "integrate_coupling_scipy(model, X0, eps, rhs='numpy') or "
    "numerics.make_rhs(model, form='coupling', eps=eps) (the NumPy right-hand side "
    "numerics.model.kernels.coupling) evaluate any activation"
)
"""The NumPy path named when the compiled right-hand side refuses a user activation."""


def _sigma_code(config: ModelConfig, jacobian_only: bool) -> float:
    """The packed activation code (:data:`numerics.model.activations.COMPILED_CODES`); a user
    activation is refused unless only the frozen-kernel Jacobian will read the vector."""
    if jacobian_only and not is_builtin(config.activation):
        return SIGMA_NOT_COMPILED
    return float(
        compiled_code(
            config.activation,
            "the compiled coupling right-hand side (numerics.model.coupling)",
            NUMPY_ALTERNATIVE,
        )
    )


def pack_coupling(
    config: ModelConfig, layers, eps: float, E=None, *, jacobian_only: bool = False
) -> np.ndarray:
    """Pack ``config``, the per-interval parameters ``layers`` (a :class:`Model` or a sequence of
    :class:`LayerParams`), ``ε`` and the injection target ``E`` into one flat vector.

    The config's activation must be a built-in one (``ValueError`` for a user
    :class:`~numerics.model.activations.Activation`, naming the NumPy alternative), unless
    ``jacobian_only``: then a user activation is packed as :data:`SIGMA_NOT_COMPILED`, which
    :func:`frozen_kernel_jac_nb` ignores and :func:`coupling_rhs_nb` refuses.
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    sigma_code = _sigma_code(config, jacobian_only)
    if isinstance(layers, Model):
        layers = layers.layers
    layers = list(layers)
    if not layers:
        raise ValueError("need at least one LayerParams")
    for i, lp in enumerate(layers):
        if not isinstance(lp, LayerParams):
            raise TypeError(f"layers[{i}] must be LayerParams, got {type(lp).__name__}")
        lp.shapes_ok(config.d, config.m)
    eps = v.real("eps", eps, low=0.0, low_open=True)
    T, d = config.T, config.d
    if config.gamma:
        if E is None:
            raise ValueError("gamma > 0 needs the injection target E (T×d)")
        E = v.finite_array("E", E, shape=(T, d))
    else:
        E = np.zeros((T, d))
    head = np.zeros(HEADER)
    local = is_block_local(config.mask_array, config.P)
    head[_BLOCKLOCAL] = float(local)
    head[_MASKW] = config.P if local else T
    head[:13] = [
        T,
        config.P,
        d,
        config.m,
        len(layers),
        float(config.norm),
        sigma_code,
        float(config.slow),
        float(config.slow_mask == "full"),
        config.gamma,
        config.score_scale,
        config.norm_eps,
        eps,
    ]
    mask = config.mask_array.astype(np.float64)
    if local:  # the rows of the diagonal blocks only (T×P)
        P = config.P
        mask = mask.reshape(T // P, P, T // P, P)[np.arange(T // P), :, np.arange(T // P), :]
    parts = [head, mask.ravel(), E.ravel()]
    for lp in layers:
        parts += [
            lp.Q.ravel(),
            lp.K.ravel(),
            lp.W1.ravel(),
            lp.W2.ravel(),
            lp.Qs.ravel(),
            lp.Ks.ravel(),
            lp.Vs.ravel(),
            np.array([lp.g]),
            np.zeros(_layer_size(d, config.m) - _layer_weights(d, config.m)),
        ]
    # per-layer products used by the block-local path: G = [β·Q Kᵀ | W1] (d×(d+m)), so that one
    # product n(X)·G gives the bilinear score factor and the MLP pre-activation, and
    # Gs = [β·Qs Ksᵀ | Vs] (d×2d) for the slow path (same maps, rounding-level differences)
    beta = config.score_scale
    for lp in layers:
        parts += [
            np.hstack([beta * (lp.Q @ lp.K.T), lp.W1]).ravel(),
            np.hstack([beta * (lp.Qs @ lp.Ks.T), lp.Vs]).ravel(),
        ]
    head[_SCRATCH] = sum(part.size for part in parts)
    parts.append(np.zeros(scratch_size(T, config.P, d, config.m)))
    packed = aligned_zeros(sum(part.size for part in parts))
    np.concatenate(parts, out=packed)
    return packed


@njit(cache=True)
def _layer_weights(d, m):
    """Entries of one layer's weights in the packed vector: ``Q, K`` (d×d), ``W1, W2`` (d×m,
    m×d), ``Qs, Ks, Vs`` (d×d) and the gate ``g``."""
    return 5 * d * d + 2 * d * m + 1


@njit(cache=True)
def _layer_size(d, m):
    """Entries one layer takes in the packed vector: its weights padded to a multiple of 8, so that
    with ``d``, ``m``, ``P`` multiples of 8 every block the eight-lane path reads (mask, ``E``,
    weights, fused weights, scratch) starts on a cache line of the aligned vector
    (:func:`numerics.lanes.aligned_zeros`)."""
    return (_layer_weights(d, m) + 7) // 8 * 8


def scratch_size(T: int, P: int, d: int, m: int) -> int:
    """Length of the scratch tail of the packed vector: the right-hand side's and the Jacobian's
    work arrays (``O(T·(d + m + P) + (T/P)²)``), so that neither allocates."""
    return _jac_scratch_size(T, P, d, m) + T * d + 8 * (d + T // P + 1)


@njit(cache=True)
def _jac_scratch_size(T, P, d, m):
    """Length of the work arrays of :func:`_scratch` (shared with the Jacobian); those of the
    eight-lane right-hand side (:func:`_lanes_scratch`) follow."""
    N = T // P
    size = T * (2 * d + 3 * m + P + 3 * max(P, m)) + d + N * (5 * d + 3 * N)
    return (size + 7) // 8 * 8  # what follows starts on a cache line (see _layer_size)


def is_block_local(mask: np.ndarray, P: int) -> bool:
    """Whether the mask only connects tokens of the same block of ``P`` (then ``A`` and the
    frozen-kernel ``J`` are block diagonal and are computed block by block)."""
    T = mask.shape[0]
    same = np.kron(np.eye(T // P, dtype=bool), np.ones((P, P), dtype=bool))
    return bool(not np.any(mask & ~same))


@njit(cache=True)
def _mat(p, off, r, c):
    """View of ``p[off : off + r·c]`` as an ``r×c`` matrix (no copy)."""
    return p[off : off + r * c].reshape((r, c))


@njit(cache=True)
def _small_mm_into(A, B, C):
    """``C = A·B`` by loops (matrices too small for BLAS)."""
    n, k = A.shape
    m = B.shape[1]
    C[:, :] = 0.0
    for i in range(n):
        for l in range(k):
            a = A[i, l]
            for j in range(m):
                C[i, j] += a * B[l, j]
    return C


@njit(cache=True)
def _rms_into(X, ne, out):
    """``out`` ← the row-wise RMS norm of ``X``; returns ``out``."""
    for i in range(X.shape[0]):
        s = 0.0
        for j in range(X.shape[1]):
            s += X[i, j] * X[i, j]
        r = 1.0 / np.sqrt(s / X.shape[1] + ne)
        for j in range(X.shape[1]):
            out[i, j] = X[i, j] * r
    return out


@njit(cache=True)
def _packed_layout(p, seg):
    """``(start of the per-layer weights, size of one layer's weights, d, m, clipped layer, L)``."""
    T = int(p[_T])
    d = int(p[_D])
    m = int(p[_M])
    L = int(p[_L])
    start = HEADER + T * int(p[_MASKW]) + T * d
    return start, _layer_size(d, m), d, m, min(max(seg, 0), L - 1), L


@njit(cache=True)
def _scratch(p):
    """The work arrays in the scratch tail of ``p`` (:func:`scratch_size`): ``Xn`` (T×d), ``XG``
    (T×(d+m)), ``S`` (T×P), ``Z`` (T×m), the flat buffers ``v, pb, tb`` (T·max(P, m)) and ``zb``
    (T·m), ``acc`` (d), and for the slow path ``Yb, Yh, Zs`` (N×d), ``YG`` (N×2d) and ``sv, sp, st``
    (N²)."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    m = int(p[_M])
    N = T // P
    o = int(p[_SCRATCH])
    w = max(P, m)
    Xn = _mat(p, o, T, d)
    o += T * d
    XG = _mat(p, o, T, d + m)
    o += T * (d + m)
    S = _mat(p, o, T, P)
    o += T * P
    Z = _mat(p, o, T, m)
    o += T * m
    v, pb, tb = p[o : o + T * w], p[o + T * w : o + 2 * T * w], p[o + 2 * T * w : o + 3 * T * w]
    o += 3 * T * w
    zb = p[o : o + T * m]
    acc = p[o + T * m : o + T * m + d]
    o += T * m + d
    Yb, Yh, Zs = _mat(p, o, N, d), _mat(p, o + N * d, N, d), _mat(p, o + 2 * N * d, N, d)
    YG = _mat(p, o + 3 * N * d, N, 2 * d)
    o += 5 * N * d
    sv, sp, st = p[o : o + N * N], p[o + N * N : o + 2 * N * N], p[o + 2 * N * N : o + 3 * N * N]
    return Xn, XG, S, Z, v, pb, tb, zb, acc, Yb, Yh, Zs, YG, sv, sp, st


@njit(cache=True, inline="always")
def _layer_offset(p, seg):
    start, size, d, m, l, L = _packed_layout(p, seg)
    return start + l * size


@njit(cache=True, inline="always")
def _fused_offset(p, seg):
    """Offset of ``G = [β·Q Kᵀ | W1]`` (followed by ``Gs = [β·Qs Ksᵀ | Vs]``) of interval ``seg``."""
    start, size, d, m, l, L = _packed_layout(p, seg)
    return start + L * size + l * (d * (d + m) + 2 * d * d)


@njit(cache=True)
def _normed(X, p, out):
    """``n(X)`` in ``out``, or ``X`` itself without the norm."""
    return _rms_into(X, p[_NEPS], out) if p[_NORM] > 0.0 else X


@njit(cache=True)
def _block_weights(Xn, XG, p, S, v, pb, tb):
    """Block-local mask: the ``T×P`` weights ``S[i, j] = A[i, b(i) + j]`` (``b(i)`` the first
    token of the block of ``i``), from ``XG = n(X)·[β·Q Kᵀ | W1]``: the score of ``(i, j)`` is
    ``XG[i, :d]·n(X)[j]`` (``P×P×d`` per block, explicit loops); all exponentials go through one
    vectorisable pass (:func:`numerics.model.compiled.exp_into`, ≤ 1 ulp from ``np.exp``). The
    mask is read as its blocks' rows (T×P); ``v, pb, tb`` are scratch of length ``T·P``."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    for i in range(T):
        b0 = (i // P) * P
        for j in range(P):
            s = 0.0
            for k in range(d):
                s += XG[i, k] * Xn[b0 + j, k]
            S[i, j] = s
    return _block_softmax(p, S, v, pb, tb)


@njit(cache=True)
def _block_softmax(p, S, v, pb, tb):
    """``S`` (T×P block-local scores) ← the masked softmax of each row, in place: the maximum over
    the allowed entries, the exponentials of the shifted scores by one :func:`exp_into` pass,
    masked entries exact zeros, each row divided by its sum."""
    T, P = S.shape
    mask = _mat(p, HEADER, T, P)
    v = v[: T * P]
    pb = pb[: T * P]
    tb = tb[: T * P]
    for i in range(T):
        mx = -np.inf
        for j in range(P):
            s = S[i, j]
            if mask[i, j] > 0.0 and s > mx:
                mx = s
        for j in range(P):
            v[i * P + j] = S[i, j] - mx if mask[i, j] > 0.0 else -1000.0
    exp_into(v, pb, tb)
    for i in range(T):
        z = 0.0
        for j in range(P):
            e = 0.0 if v[i * P + j] < EXP_CUT else pb[i * P + j] * tb[i * P + j]
            S[i, j] = e
            z += e
        for j in range(P):
            S[i, j] /= z
    return S


# the two pieces of the right-hand side below are inlined into it (Numba IR): no call overhead in
# the integrators' hot loop, the same arithmetic
@njit(cache=True, inline="always")
def _add_mlp_output(Z, W2, act, out, v, pb, tb, zb, acc):
    """``out += vec(σ(Z)·W2)`` for the pre-activation ``Z = n(X)·W1`` (T×m; ``σ`` applied in place
    by :func:`numerics.model.compiled.activation_rows` with the activation code ``act``, nothing
    for identity (0); ``v, pb, tb, zb`` scratch of length ``T·m``, ``acc`` of length ``d``)."""
    T, m = Z.shape
    d = W2.shape[1]
    if act != 0:  # as one row of T·m entries: the rows of Z (m = d) are too short to vectorise
        n = T * m
        zf = Z.reshape((1, n))
        activation_rows(act, zf, v, pb, tb, zb)
    for i in range(T):
        acc[:] = 0.0
        for l in range(m):
            a = Z[i, l]
            for k in range(d):
                acc[k] += a * W2[l, k]
        for k in range(d):
            out[i * d + k] += acc[k]


@njit(cache=True, inline="always")
def _pooled_slow_attention(X, p, seg, Yb, Yh, Zs, YG, v, pb, tb):
    """The slow attention over the pooled tokens of interval ``seg`` (N×d; row ``a`` is pooled
    query ``a``'s output, which ``U_c`` up-samples to block ``a + 1``): block means ``Y``,
    ``n(Y)·[β·Qs Ksᵀ | Vs]``, and the softmax over the pooled keys ``b ≤ a`` (all ``b`` with the
    ``full`` slow mask). The N×N×d and N×d×d products (N = T/P) are explicit loops, too small for
    BLAS; the scores of the N − 1 queries that reach the output share one vectorisable exponential
    pass."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    m = int(p[_M])
    N = T // P
    Yb[:, :] = 0.0
    for b in range(N):
        for i in range(P):
            for k in range(d):
                Yb[b, k] += X[b * P + i, k]
    Yb /= P
    Yh = _normed(Yb, p, Yh)
    _small_mm_into(Yh, _mat(p, _fused_offset(p, seg) + d * (d + m), d, 2 * d), YG)
    full = p[_SLOWFULL] > 0.0
    Zs[:, :] = 0.0
    for a in range(N - 1):
        top = N if full else a + 1
        mx = -np.inf
        for b in range(top):
            sc = 0.0
            for k in range(d):
                sc += YG[a, k] * Yh[b, k]
            v[a * N + b] = sc
            if sc > mx:
                mx = sc
        for b in range(N):
            v[a * N + b] = v[a * N + b] - mx if b < top else -1000.0
    exp_into(v[: (N - 1) * N], pb[: (N - 1) * N], tb[: (N - 1) * N])
    for a in range(N - 1):
        top = N if full else a + 1
        z = 0.0
        for b in range(top):
            e = 0.0 if v[a * N + b] < EXP_CUT else pb[a * N + b] * tb[a * N + b]
            pb[a * N + b] = e
            z += e
        for b in range(top):
            wb = pb[a * N + b]
            for k in range(d):
                Zs[a, k] += (wb / z) * YG[b, d + k]
    return Zs


@njit(cache=True, inline="always")
def _lanes_fit(p):
    """Whether the eight-lane right-hand side applies: a block-local mask and ``d``, ``m``, ``P``
    multiples of 8 (every row a whole number of :class:`numerics.lanes.F64x8`)."""
    return (
        p[_BLOCKLOCAL] > 0.0 and int(p[_D]) % 8 == 0 and int(p[_M]) % 8 == 0 and int(p[_P]) % 8 == 0
    )


@njit(cache=True, inline="always")
def _lanes_offsets(p):
    """Offsets in ``p`` of the eight-lane path's work arrays (flat offsets, not views: a view of
    ``p`` costs a reshape call, ≈ 25 ns, and the path needs a dozen): those of :func:`_scratch`
    ``Xn, XG, S, Z, v, pb, tb, zb, Yb, Yh, Zs, YG, sv, sp, st`` and, after them, ``XnB`` (``n(X)``
    block by block, transposed: ``XnB[(b·d + k)·P + j] = n(X)[b·P + j, k]``) and the slow path's
    ``8·(d + N + 1)`` (:func:`_pooled_slow8`). The lanes path leaves ``Xn``, ``sv, sp, st``
    unused; ``v`` holds the transposed softmax weights (:func:`_block_scores8`)."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    m = int(p[_M])
    N = T // P
    w = max(P, m)
    xn = int(p[_SCRATCH])
    xg = xn + T * d
    s = xg + T * (d + m)
    z = s + T * P
    v = z + T * m
    pb = v + T * w
    tb = pb + T * w
    zb = tb + T * w
    yb = zb + T * m + d
    yh = yb + N * d
    zs = yh + N * d
    yg = zs + N * d
    sv = yg + 2 * N * d
    sp = sv + N * N
    st = sp + N * N
    xnb = xn + _jac_scratch_size(T, P, d, m)
    return xn, xg, s, z, v, pb, tb, zb, yb, yh, zs, yg, sv, sp, st, xnb, xnb + T * d


@njit(cache=True, inline="always")
def _rms8_into(x, xo, n, d, ne, out, oo):
    """Rows ``0 … n−1`` of the ``n×d`` matrix at ``x[xo:]`` RMS-normed into ``out[oo:]``: the sums
    of :func:`_rms_into` (in order over ``k``), the scaling eight lanes at a time (bit for bit)."""
    for i in range(n):
        s = 0.0
        for k in range(d):
            s += x[xo + i * d + k] * x[xo + i * d + k]
        r = 1.0 / np.sqrt(s / d + ne)
        for c in range(0, d, 8):
            store8(out, oo + i * d + c, scale8(load8(x, xo + i * d + c), r))


@njit(cache=True, inline="always")
def _madd8_rows8(a0, a1, a2, a3, a4, a5, a6, a7, a, ao, ak, al, k, b, bo, bs):
    """Eight rows at once: ``acc_r + Σ_l a[ao + r·ak + l·al]·b[bo + l·bs : … + 8]`` for ``r < 8``, each
    lane's sum over ``l < k`` in order (the sums of a one-row loop, bit for bit). Eight
    independent accumulators: one row's chain of dependent additions would leave the floating-
    point pipes idle (≈ 2× slower on the benchmark products)."""
    for l in range(k):
        q = bo + l * bs
        r = ao + l * al
        a0 = madd8(a0, a[r], b, q)
        a1 = madd8(a1, a[r + ak], b, q)
        a2 = madd8(a2, a[r + 2 * ak], b, q)
        a3 = madd8(a3, a[r + 3 * ak], b, q)
        a4 = madd8(a4, a[r + 4 * ak], b, q)
        a5 = madd8(a5, a[r + 5 * ak], b, q)
        a6 = madd8(a6, a[r + 6 * ak], b, q)
        a7 = madd8(a7, a[r + 7 * ak], b, q)
    return a0, a1, a2, a3, a4, a5, a6, a7


@njit(cache=True, inline="always")
def _mm8_into(a, ao, n, k, b, bo, w, out, oo):
    """``C = A·B`` for ``A`` (n×k) at ``a[ao:]``, ``B`` (k×w, ``w`` a multiple of 8) at ``b[bo:]``
    and ``C`` at ``out[oo:]``: each lane the sum over ``l`` in order from ``+0``, as
    :func:`_small_mm_into` (bit for bit); eight rows at a time (:func:`_madd8_rows8`), the last
    ``n mod 8`` one by one."""
    n8 = n - n % 8
    for i in range(0, n8, 8):
        for c in range(0, w, 8):
            z = zero8()
            a0, a1, a2, a3, a4, a5, a6, a7 = _madd8_rows8(
                z, z, z, z, z, z, z, z, a, ao + i * k, k, 1, k, b, bo + c, w
            )
            o = oo + i * w + c
            _store8_rows8(out, o, w, a0, a1, a2, a3, a4, a5, a6, a7)
    for i in range(n8, n):
        for c in range(0, w, 8):
            acc = zero8()
            for l in range(k):
                acc = madd8(acc, a[ao + i * k + l], b, bo + l * w + c)
            store8(out, oo + i * w + c, acc)


@njit(cache=True, inline="always")
def _store8_rows8(out, o, w, a0, a1, a2, a3, a4, a5, a6, a7):
    """``out[o + r·w : … + 8] = a_r`` for ``r < 8``."""
    store8(out, o, a0)
    store8(out, o + w, a1)
    store8(out, o + 2 * w, a2)
    store8(out, o + 3 * w, a3)
    store8(out, o + 4 * w, a4)
    store8(out, o + 5 * w, a5)
    store8(out, o + 6 * w, a6)
    store8(out, o + 7 * w, a7)


@njit(cache=True, inline="always")
def _normed_blocks8(y, p, T, P, d, ne, norm, xnb):
    """``n(X)`` block by block transposed at ``p[xnb:]`` (``XnB[(b·d + k)·P + j] =
    n(X)[b·P + j, k]``, the layout of the score products; the projection reads its scalars from
    there too). Eight rows at a time: transposed by :func:`numerics.lanes.transpose8`, the
    sums of squares over ``k`` in order with one row per lane, then the factors
    ``1/√(s/d + ne)`` and the scaling as in :func:`_rms_into` (bit for bit). Without the norm,
    ``X`` itself."""
    for b in range(T // P):
        for jc in range(0, P, 8):
            for kc in range(0, d, 8):
                transpose8(y, (b * P + jc) * d + kc, d, p, xnb + (b * d + kc) * P + jc, P)
            if norm:
                acc = zero8()
                for k in range(d):
                    x = load8(p, xnb + (b * d + k) * P + jc)
                    acc = add8(acc, mul8(x, x))
                r = vdiv8(splat8(1.0), sqrt8(add8(div8(acc, float(d)), splat8(ne))))
                for k in range(d):
                    o = xnb + (b * d + k) * P + jc
                    store8(p, o, mul8(load8(p, o), r))


@njit(cache=True, inline="always")
def _block_scores8(p, T, P, d, m, xg, xnb, s, st):
    """``S[i, j] = XG[i, :d]·n(X)[b(i) + j]`` (the sums of :func:`_block_weights`, over ``k`` in
    order from ``+0``), eight keys ``j`` at a time from the transposed blocks ``XnB``, eight rows
    ``i`` (of one block: ``P`` is a multiple of 8) at once; masked entries ``−∞``. Written
    transposed by eight-row groups for :func:`_block_softmax8`: ``ST[i₀·P + j·8 + r] = S[i₀ + r, j]``
    (``i₀`` a multiple of 8; the rows at ``p[s:]`` are scratch)."""
    w = d + m
    ninf = splat8(-np.inf)
    for i in range(0, T, 8):
        bo = xnb + (i // P) * d * P
        for c in range(0, P, 8):
            z = zero8()
            a0, a1, a2, a3, a4, a5, a6, a7 = _madd8_rows8(
                z, z, z, z, z, z, z, z, p, xg + i * w, w, 1, d, p, bo + c, P
            )
            mo = HEADER + i * P + c
            _store8_rows8(
                p,
                s + i * P + c,
                P,
                select_pos8(load8(p, mo), a0, ninf),
                select_pos8(load8(p, mo + P), a1, ninf),
                select_pos8(load8(p, mo + 2 * P), a2, ninf),
                select_pos8(load8(p, mo + 3 * P), a3, ninf),
                select_pos8(load8(p, mo + 4 * P), a4, ninf),
                select_pos8(load8(p, mo + 5 * P), a5, ninf),
                select_pos8(load8(p, mo + 6 * P), a6, ninf),
                select_pos8(load8(p, mo + 7 * P), a7, ninf),
            )
            transpose8(p, s + i * P + c, P, p, st + i * P + c * 8, 8)


@njit(cache=True, inline="always")
def _gt8(u, v):
    """``v`` where ``v > u``, else ``u`` (lane by lane; ``v − u > 0`` exactly when ``v > u``)."""
    return select_pos8(sub8(v, u), v, u)


@njit(cache=True, inline="always")
def _max2_8(p, o):
    """The larger of the vectors at ``p[o:]`` and ``p[o + 8:]`` lane by lane, NaN never, ``−∞`` if
    both are NaN or ``−∞``: ``_gt8(_gt8(−∞, x₀), x₁)``."""
    return _gt8(_gt8(splat8(-np.inf), load8(p, o)), load8(p, o + 8))


@njit(cache=True, inline="always")
def _block_softmax8(p, T, P, st):
    """:func:`_block_softmax` on the transposed scores of :func:`_block_scores8` (masked entries
    ``−∞``), in place, one lane per row, eight rows at a time: the maximum over the keys (by a
    tree over each eight: the row path's maximum up to the sign of a zero maximum, which shifts
    no score differently; ``−∞`` and NaN never win), the
    exponentials of the shifted scores (:func:`numerics.lanes.exp8`, bit for bit those of
    ``exp_into``; a masked ``−∞ − max`` gives the exact 0 of the row path's ``−1000``), their sum
    over the keys in order from ``+0`` and the divisions: every lane the operations of the row
    path, and no horizontal reductions. (If a row's allowed scores are all ``−∞`` or NaN, both
    paths give NaN for the whole row.)"""
    for i in range(0, T, 8):
        o = st + i * P
        mx = splat8(-np.inf)
        for j in range(0, P, 8):  # the largest of each eight keys by a tree, then in order
            q = o + j * 8
            mx = _gt8(
                mx,
                _gt8(
                    _gt8(_max2_8(p, q), _max2_8(p, q + 16)),
                    _gt8(_max2_8(p, q + 32), _max2_8(p, q + 48)),
                ),
            )
        for j in range(0, P, 8):  # eight keys at once (P is a multiple of 8)
            exp8x8_into(p, o + j * 8, 8, mx)
        z = zero8()
        for j in range(P):
            z = add8(z, load8(p, o + j * 8))
        for j in range(P):
            store8(p, o + j * 8, vdiv8(load8(p, o + j * 8), z))


@njit(cache=True, inline="always")
def _tanh8_rows(p, o, n, m, w):
    """``tanh`` (:func:`numerics.lanes.tanh8`) in place on the ``n×m`` matrix at ``p[o:]``
    with rows ``w`` apart (``m`` a multiple of 8), eight vectors at once
    (:func:`numerics.lanes.tanh8x8_into`: eight interleaved chains, bit for bit)."""
    for c in range(0, m, 8):
        for i in range(0, n - n % 8, 8):
            tanh8x8_into(p, o + i * w + c, w)
        for i in range(n - n % 8, n):
            store8(p, o + i * w + c, tanh8(load8(p, o + i * w + c)))


@njit(cache=True, inline="always")
def _pooled_slow8(y, p, seg, offs):
    """:func:`_pooled_slow_attention` eight lanes at a time, the same operations per entry: the
    block means and ``n(Y)·Gs`` by rows; the scores, their softmax over the pooled keys and the
    weights with one query per lane, eight queries at a time (masked keys ``−∞`` as in
    :func:`_block_softmax8`, one :func:`numerics.lanes.exp8` per key, the sums vertical);
    the weighted values by rows, each query over its allowed keys in order. Returns the offset of
    ``Zs`` ((N−1)×d used) in ``p``."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    m = int(p[_M])
    N = T // P
    yb, yh, zs, yg = offs[8], offs[9], offs[10], offs[11]
    for b in range(N):
        for c in range(0, d, 8):
            acc = zero8()
            for i in range(P):
                acc = add8(acc, load8(y, (b * P + i) * d + c))
            store8(p, yb + b * d + c, div8(acc, float(P)))
    if p[_NORM] > 0.0:
        _rms8_into(p, yb, N, d, p[_NEPS], p, yh)
    else:
        for c in range(0, N * d, 8):
            store8(p, yh + c, load8(p, yb + c))
    _mm8_into(p, yh, N, d, p, _fused_offset(p, seg) + d * (d + m), 2 * d, p, yg)
    full = p[_SLOWFULL] > 0.0
    sl = offs[16]  # 8·(d + N + 1): the queries' factors, the weights, the query indices
    ninf = splat8(-np.inf)
    for a0 in range(0, N - 1, 8):  # eight queries a (one per lane) at a time
        na = min(8, N - 1 - a0)
        qt, wt, ai = sl, sl + 8 * d, sl + 8 * (d + N)
        for r in range(8):
            for k in range(d):
                p[qt + k * 8 + r] = p[yg + (a0 + r) * 2 * d + k] if r < na else 0.0
            p[ai + r] = a0 + r + 0.5  # b ≤ a exactly when a + 0.5 − b > 0
        aidx = load8(p, ai)
        mx = ninf
        for b in range(N):  # the scores, their maximum over the allowed keys (in order)
            sc = zero8()
            for k in range(d):
                sc = madd8(sc, p[yh + b * d + k], p, qt + k * 8)
            if not full:
                sc = select_pos8(sub8(aidx, splat8(float(b))), sc, ninf)
            store8(p, wt + b * 8, sc)
            mx = select_pos8(sub8(sc, mx), sc, mx)
        for b in range(0, N - N % 8, 8):  # a masked −∞ − max: the exact 0 of the row path's −1000
            exp8x8_into(p, wt + b * 8, 8, mx)
        for b in range(N - N % 8, N):
            store8(p, wt + b * 8, exp8(sub8(load8(p, wt + b * 8), mx)))
        z = zero8()
        for b in range(N):
            z = add8(z, load8(p, wt + b * 8))
        for b in range(N):
            store8(p, wt + b * 8, vdiv8(load8(p, wt + b * 8), z))
        for r in range(na):
            a = a0 + r
            top = N if full else a + 1
            for c in range(0, d, 8):
                acc = zero8()
                for b in range(top):
                    acc = madd8(acc, p[wt + b * 8 + r], p, yg + b * 2 * d + d + c)
                store8(p, zs + a * d + c, acc)
    return zs


@njit(cache=True, inline="always")
def _block_local_rhs8(y, p, seg, out):
    """:func:`coupling_rhs_nb` for a block-local mask when :func:`_lanes_fit`: every row
    operation on eight lanes at a time (:mod:`numerics.lanes`), the work arrays addressed
    by flat offsets into ``p``; the same sums in the same order as the row path except
    ``n(X)·G`` (a BLAS product there) and the sign of ``tanh(−0)`` (kept here). The products
    eight rows at once (:func:`_madd8_rows8`), the softmax one lane per row, the exponentials
    and tanh eight vectors at once; the slow path first, so that ``σ(Z)·W2``, ``g·Zs`` and
    ``γ(E − X)`` are added in one pass over ``out``."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    m = int(p[_M])
    offs = _lanes_offsets(p)
    xg, s, z, v, pb, tb, zb, xnb = (
        offs[1],
        offs[2],
        offs[3],
        offs[4],
        offs[5],
        offs[6],
        offs[7],
        offs[15],
    )
    _normed_blocks8(y, p, T, P, d, p[_NEPS], p[_NORM] > 0.0, xnb)
    w = d + m
    fo = _fused_offset(p, seg)
    for i in range(0, T, 8):  # XG = n(X)·G (the sums of _mm8_into), n(X) read from XnB
        ao = xnb + (i // P) * d * P + i % P
        for c in range(0, w, 8):
            u = zero8()
            a0, a1, a2, a3, a4, a5, a6, a7 = _madd8_rows8(
                u, u, u, u, u, u, u, u, p, ao, 1, P, d, p, fo + c, w
            )
            _store8_rows8(p, xg + i * w + c, w, a0, a1, a2, a3, a4, a5, a6, a7)
    _block_scores8(p, T, P, d, m, xg, xnb, s, v)
    _block_softmax8(p, T, P, v)
    inv_eps = 1.0 / p[_EPS]
    for i in range(0, T, 8):  # (Σ_j S[i, j]·X[b0 + j] − X[i])/ε, the sums of the row path
        b0 = (i // P) * P
        for c in range(0, d, 8):
            o = i * d + c
            a0, a1, a2, a3, a4, a5, a6, a7 = _madd8_rows8(
                neg8(load8(y, o)),
                neg8(load8(y, o + d)),
                neg8(load8(y, o + 2 * d)),
                neg8(load8(y, o + 3 * d)),
                neg8(load8(y, o + 4 * d)),
                neg8(load8(y, o + 5 * d)),
                neg8(load8(y, o + 6 * d)),
                neg8(load8(y, o + 7 * d)),
                p,
                v + i * P,
                1,
                8,
                P,
                y,
                b0 * d + c,
                d,
            )
            _store8_rows8(
                out,
                o,
                d,
                scale8(a0, inv_eps),
                scale8(a1, inv_eps),
                scale8(a2, inv_eps),
                scale8(a3, inv_eps),
                scale8(a4, inv_eps),
                scale8(a5, inv_eps),
                scale8(a6, inv_eps),
                scale8(a7, inv_eps),
            )
    act = int(p[_SIGMA])
    zo, zw = xg + d, w  # Z = XG[:, d:], σ applied in place (tanh, identity) or in a copy
    if act == 1:
        _tanh8_rows(p, zo, T, m, w)
    elif act != 0:  # relu, gelu (an unknown code is refused there), as one row of T·m entries
        for i in range(T):
            for c in range(0, m, 8):
                store8(p, z + i * m + c, load8(p, xg + i * w + d + c))
        n = T * m
        activation_rows(act, p[z : z + n].reshape((1, n)), p[v:pb], p[pb:tb], p[tb:zb], p[zb:])
        zo, zw = z, m
    off = _layer_offset(p, seg) + 2 * d * d
    w2 = off + d * m
    g = p[off + 2 * d * m + 3 * d * d]
    slow = p[_SLOW] > 0.0 and g != 0.0
    zs = _pooled_slow8(y, p, seg, offs) if slow else 0
    gam = p[_GAMMA]
    e0 = HEADER + T * int(p[_MASKW])
    for i in range(0, T, 8):  # out += σ(Z)·W2 (eight rows at once); + g·Zs; + γ(E − X): one pass,
        # the additions of the row path's three passes in its order
        b = i // P
        for c in range(0, d, 8):
            o = i * d + c
            u = zero8()
            a0, a1, a2, a3, a4, a5, a6, a7 = _madd8_rows8(
                u, u, u, u, u, u, u, u, p, zo + i * zw, zw, 1, m, p, w2 + c, d
            )
            a0, a1, a2, a3, a4, a5, a6, a7 = _add8_rows8(out, o, d, a0, a1, a2, a3, a4, a5, a6, a7)
            if slow and b > 0:
                gz = scale8(load8(p, zs + (b - 1) * d + c), g)
                a0, a1, a2, a3, a4, a5, a6, a7 = (
                    add8(a0, gz),
                    add8(a1, gz),
                    add8(a2, gz),
                    add8(a3, gz),
                    add8(a4, gz),
                    add8(a5, gz),
                    add8(a6, gz),
                    add8(a7, gz),
                )
            if gam != 0.0:
                a0, a1, a2, a3, a4, a5, a6, a7 = _inject8_rows8(
                    p, e0, y, o, d, gam, a0, a1, a2, a3, a4, a5, a6, a7
                )
            _store8_rows8(out, o, d, a0, a1, a2, a3, a4, a5, a6, a7)


@njit(cache=True, inline="always")
def _add8_rows8(x, o, w, a0, a1, a2, a3, a4, a5, a6, a7):
    """``x[o + r·w : … + 8] + a_r`` for ``r < 8``."""
    return (
        add8(load8(x, o), a0),
        add8(load8(x, o + w), a1),
        add8(load8(x, o + 2 * w), a2),
        add8(load8(x, o + 3 * w), a3),
        add8(load8(x, o + 4 * w), a4),
        add8(load8(x, o + 5 * w), a5),
        add8(load8(x, o + 6 * w), a6),
        add8(load8(x, o + 7 * w), a7),
    )


@njit(cache=True, inline="always")
def _inject8_rows8(p, e0, y, o, w, gam, a0, a1, a2, a3, a4, a5, a6, a7):
    """``a_r + γ·(E − X)[o + r·w : … + 8]`` for ``r < 8`` (``E`` at ``p[e0:]``, ``X`` in ``y``)."""
    return (
        add8(a0, scale8(sub8(load8(p, e0 + o), load8(y, o)), gam)),
        add8(a1, scale8(sub8(load8(p, e0 + o + w), load8(y, o + w)), gam)),
        add8(a2, scale8(sub8(load8(p, e0 + o + 2 * w), load8(y, o + 2 * w)), gam)),
        add8(a3, scale8(sub8(load8(p, e0 + o + 3 * w), load8(y, o + 3 * w)), gam)),
        add8(a4, scale8(sub8(load8(p, e0 + o + 4 * w), load8(y, o + 4 * w)), gam)),
        add8(a5, scale8(sub8(load8(p, e0 + o + 5 * w), load8(y, o + 5 * w)), gam)),
        add8(a6, scale8(sub8(load8(p, e0 + o + 6 * w), load8(y, o + 6 * w)), gam)),
        add8(a7, scale8(sub8(load8(p, e0 + o + 7 * w), load8(y, o + 7 * w)), gam)),
    )


@njit(cache=True)
def coupling_rhs_nb(t, y, p, seg, out):
    """``out = vec[(1/ε)(A(X) − I)X + R(X)]`` with the weights of interval ``seg`` (signature
    :data:`numerics.integrators.RHS_SIG`, compiled on first use). No allocation for block-local
    masks: the work arrays are the scratch tail of ``p`` (so one ``p`` must not be shared by
    concurrent calls). Block-local masks with ``d``, ``m``, ``P`` multiples of 8 take the
    eight-lane path (:func:`_block_local_rhs8`), everything else the row-by-row one
    (:func:`_coupling_rhs_rows`); the two agree to rounding (the tests check 1e-13)."""
    if _lanes_fit(p):
        _block_local_rhs8(y, p, seg, out)
    else:
        _coupling_rhs_rows(t, y, p, seg, out)


@njit(cache=True)
def _coupling_rhs_rows(t, y, p, seg, out):
    """:func:`coupling_rhs_nb` row by row, for any mask and sizes (scalar loops, BLAS products)."""
    T = int(p[_T])
    P = int(p[_P])
    d = int(p[_D])
    m = int(p[_M])
    N = T // P
    Xw, XG, S, Z, v, pb, tb, zb, acc, Yb, Yh, Zs, YG, sv, sp, st = _scratch(p)
    X = y.reshape((T, d))
    Xn = _normed(X, p, Xw)
    inv_eps = 1.0 / p[_EPS]
    off = _layer_offset(p, seg) + 2 * d * d
    W2 = _mat(p, off + d * m, m, d)
    if p[_BLOCKLOCAL] > 0.0:
        np.dot(Xn, _mat(p, _fused_offset(p, seg), d, d + m), XG)  # one BLAS call
        _block_weights(Xn, XG, p, S, v, pb, tb)
        for i in range(T):  # the same sums as Σ_j S[i, j]·X[b0 + j, k] − X[i, k], rows at a time
            b0 = (i // P) * P
            for k in range(d):
                acc[k] = -X[i, k]
            for j in range(P):
                a = S[i, j]
                for k in range(d):
                    acc[k] += a * X[b0 + j, k]
            for k in range(d):
                out[i * d + k] = acc[k] * inv_eps
            for k in range(m):
                Z[i, k] = XG[i, d + k]
    else:
        _dense_attention_into(Xn, X, p, seg, out)
        np.dot(Xn, _mat(p, off, d, m), Z)
    _add_mlp_output(Z, W2, int(p[_SIGMA]), out, v, pb, tb, zb, acc)
    g = p[off + 2 * d * m + 3 * d * d]
    if p[_SLOW] > 0.0 and g != 0.0:
        Zs = _pooled_slow_attention(X, p, seg, Yb, Yh, Zs, YG, sv, sp, st)
        for b in range(1, N):
            for i in range(P):
                for k in range(d):
                    out[(b * P + i) * d + k] += g * Zs[b - 1, k]
    gam = p[_GAMMA]
    if gam != 0.0:
        e0 = HEADER + T * int(p[_MASKW])
        for i in range(T * d):
            out[i] += gam * (p[e0 + i] - y[i])


KERNEL_PANEL = 32768
"""Floats of the row panel in which :func:`_kernel_rows_into` computes scores (256 KB: the panel
stays in cache while it is scaled, exponentiated and written to ``J``)."""


@njit(cache=True)
def _kernel_rows_into(Xn, p, seg, J):
    """``J ← A(X)/ε`` (T×T) for a mask that is not block-local, written row panel by row panel
    into ``J`` itself: no T×T temporary. Row ``i`` is computed only up to its last allowed
    column (rounded up to a multiple of 4, so the softmax sums group as over the whole row) and
    zero beyond it, so a causal mask costs half the products and exponentials of a full one. The
    same operations as :func:`_kernel_panel`, then ``/ε``."""
    T = int(p[_T])
    XQ, XK, buf, v, pb, tb = _panel_work(Xn, p, seg)
    eps = p[_EPS]
    rows = buf.size // T
    for r0 in range(0, T, rows):
        r1 = min(r0 + rows, T)
        S = _kernel_panel(XQ, XK, p, r0, r1, buf, v, pb, tb)
        c1 = S.shape[1]
        for i in range(r0, r1):
            for j in range(c1):
                J[i, j] = S[i - r0, j] / eps
            for j in range(c1, T):
                J[i, j] = 0.0


@njit(cache=True)
def _panel_work(Xn, p, seg):
    """Queries ``n(X)·Q``, keys ``n(X)·K`` and the work arrays of :func:`_kernel_panel`: a panel
    buffer of ``KERNEL_PANEL`` floats (at least one row) and three rows of softmax scratch."""
    T = int(p[_T])
    d = int(p[_D])
    off = _layer_offset(p, seg)
    XQ = np.dot(Xn, _mat(p, off, d, d))
    XK = np.dot(Xn, _mat(p, off + d * d, d, d))
    rows = min(T, max(1, KERNEL_PANEL // T))
    return XQ, XK, np.empty(rows * T), np.empty(T), np.empty(T), np.empty(T)


@njit(cache=True)
def _kernel_panel(XQ, XK, p, r0, r1, buf, v, pb, tb):
    """Rows ``r0:r1`` of the attention matrix ``A(X)`` of a mask that is not block-local, as a
    ``(r1 − r0) × c1`` view of ``buf``: ``c1`` is the panel's last allowed column + 1, rounded up
    to a multiple of 4 (so the softmax sums group as over the whole row); the columns beyond it
    are zero. The scores ``β·(n(X)Q)(n(X)K)ᵀ`` and a masked softmax per row (:func:`softmax_row`)."""
    T = int(p[_T])
    mask = _mat(p, HEADER, T, T)
    beta = p[_BETA]
    c1 = 0
    for i in range(r0, r1):
        last = T - 1
        while last >= c1 and mask[i, last] == 0.0:
            last -= 1
        c1 = max(c1, last + 1)
    c1 = min(T, (max(c1, 1) + 3) // 4 * 4)
    S = buf[: (r1 - r0) * c1].reshape((r1 - r0, c1))
    np.dot(XQ[r0:r1], XK[:c1].T, S)
    for i in range(r0, r1):
        row = S[i - r0]
        for j in range(c1):
            row[j] = beta * row[j]
        softmax_row(row, mask[i, :c1], v, pb, tb)
    return S


@njit(cache=True)
def _dense_attention_into(Xn, X, p, seg, out):
    """``out ← vec[(A(X) − I)X/ε]`` for a mask that is not block-local, row panel by row panel
    (:func:`_kernel_panel`): no T×T array, so the working set stays in cache at large ``T``, and
    a causal row only up to its diagonal. Equal to ``(A·X − X)/ε`` with the whole ``A`` to
    rounding (the products are summed per panel; the tests compare with the NumPy kernel)."""
    T = int(p[_T])
    d = int(p[_D])
    XQ, XK, buf, v, pb, tb = _panel_work(Xn, p, seg)
    eps = p[_EPS]
    rows = buf.size // T
    AX = np.empty((rows, d))
    for r0 in range(0, T, rows):
        r1 = min(r0 + rows, T)
        S = _kernel_panel(XQ, XK, p, r0, r1, buf, v, pb, tb)
        c1 = S.shape[1]
        np.dot(S, X[:c1], AX[: r1 - r0])
        for i in range(r0, r1):
            for k in range(d):
                out[i * d + k] = (AX[i - r0, k] - X[i, k]) / eps


@njit(cache=True)
def frozen_kernel_jac_nb(t, y, p, seg, J):
    """``J = (A(X) − I)/ε − γI`` (T×T), the stiff part of the coupling Jacobian, as ``J ⊗ I_d``
    (signature :data:`numerics.integrators.JAC_SIG`, compiled on first use). ``J`` may be the
    T×P rows of the diagonal blocks (block-local masks, ``jac_block=P``) or the whole T×T; for a
    mask that is not block-local it is computed in place (:func:`_kernel_rows_into`, no T×T
    temporary; the rows of a causal mask only up to the diagonal)."""
    T = int(p[_T])
    d = int(p[_D])
    P = int(p[_P])
    Xw, XG, S, Z, v, pb, tb, zb, acc, Yb, Yh, Zs, YG, sv, sp, st = _scratch(p)
    Xn = _normed(y.reshape((T, d)), p, Xw)
    inv_eps = 1.0 / p[_EPS]
    if p[_BLOCKLOCAL] > 0.0:
        m = int(p[_M])
        np.dot(Xn, _mat(p, _fused_offset(p, seg), d, d + m), XG)
        _block_weights(Xn, XG, p, S, v, pb, tb)
        if J.shape[1] == P:  # the blocks' rows
            for i in range(T):
                for j in range(P):
                    J[i, j] = S[i, j] / p[_EPS]
        else:
            J[:, :] = 0.0
            for i in range(T):
                b0 = (i // P) * P
                for j in range(P):
                    J[i, b0 + j] = S[i, j] / p[_EPS]
    else:
        _kernel_rows_into(Xn, p, seg, J)
    for i in range(T):
        J[i, i % J.shape[1]] -= inv_eps + p[_GAMMA]


def is_lower_triangular(mask: np.ndarray) -> bool:
    """Whether the mask has no entry above its diagonal (a causal mask): then the frozen-kernel
    ``J`` is lower triangular, and the implicit methods solve with it by substitution without
    keeping a factorisation (``jac_lower``)."""
    return bool(not np.any(np.triu(np.asarray(mask, dtype=bool), 1)))


def layer_breakpoints(L: int) -> np.ndarray:
    """The interior breakpoints ``l/L`` (``l = 1 … L−1``) of ``L`` piecewise-constant intervals."""
    L = v.positive_int("L", L)
    return np.arange(1, L) / L


def _checked_problem(model: Model, X0, eps: float, E, jacobian_only: bool = False):
    """``(config, X0, E, packed vector)`` after checking the arguments; ``E`` defaults to ``X0``
    when ``γ > 0``; ``jacobian_only`` as in :func:`pack_coupling`."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a numerics.Model, got {type(model).__name__}")
    cfg = model.config
    X0 = v.finite_array("X0", X0, shape=(cfg.T, cfg.d))
    if cfg.gamma and E is None:
        E = X0
    return cfg, X0, E, pack_coupling(cfg, model.layers, eps, E, jacobian_only=jacobian_only)


def integrate_coupling(
    model: Model,
    X0,
    eps: float,
    *,
    E=None,
    t_span=(0.0, 1.0),
    t_eval=None,
    dense_output: bool = False,
    method: str = "auto",
    rtol: float = 1e-6,
    atol: float = 1e-9,
    h_fixed: float | None = None,
    max_steps: int = 1_000_000,
) -> IntegratorResult:
    """Integrate the coupling form of ``model`` (weights of layer ``l`` on ``[l/L, (l+1)/L)``).

    ``E`` defaults to ``X0`` when ``γ > 0``. The integration stops exactly at every ``l/L``. The
    result's ``y`` has shape ``(T·d, K)``; ``result.extra["X"]`` holds the states as ``(K, T, d)``.
    ``method="auto"`` (the default) starts explicit (DOPRI5) and hands over to Radau IIA when it
    detects stiffness (:func:`numerics.integrators.integrate`): the explicit method wins at mild
    stiffness (``ε ≈ 1e-2`` on ``[0, 1]``), Radau IIA below. ``dense_output=True`` reads ``t_eval``
    from the continuous extension instead of landing on it.
    """
    cfg, X0, E, p = _checked_problem(model, X0, eps, E)
    t0, t1 = float(t_span[0]), float(t_span[1])
    bps = [b for b in layer_breakpoints(model.L)] if not model.tied else []
    block = cfg.P if is_block_local(cfg.mask_array, cfg.P) else None
    res = integrate(
        coupling_rhs_nb,
        (t0, t1),
        X0,
        method=method,
        jac=frozen_kernel_jac_nb,
        jac_size=cfg.T,
        jac_block=block,
        jac_lower=block is None and is_lower_triangular(cfg.mask_array),
        p=p,
        rtol=rtol,
        atol=atol,
        t_eval=t_eval,
        dense_output=dense_output,
        breakpoints=bps,
        h_fixed=h_fixed,
        max_steps=max_steps,
    )
    res.extra["X"] = res.y.T.reshape(-1, cfg.T, cfg.d)
    return res


# ----------------------------------------------------------------------------- SciPy driver


@dataclass
class ScipyCouplingResult:
    """Result of :func:`integrate_coupling_scipy`: the end state and the summed SciPy counters.

    ``y`` is the state at the end of the last interval integrated (``T·d``; the end of the span when
    ``success``); ``nsteps`` the accepted steps; ``capped`` whether the CPU-time cap stopped it;
    ``ncalls`` every call of the right-hand side, including those of SciPy's finite-difference
    Jacobian, which SciPy's ``nfev`` leaves out for Radau and BDF.
    """

    y: np.ndarray
    success: bool
    message: str
    nfev: int
    njev: int
    nlu: int
    nsteps: int
    capped: bool = False
    ncalls: int = 0


SCIPY_JACOBIANS = ("dense", "sparse", None)
"""Jacobians handed to SciPy: the frozen kernel ``((A − I)/ε − γI) ⊗ I_d`` as a dense array or a
sparse CSC matrix, or ``None`` (SciPy's own finite differences)."""


def _scipy_segment_rhs(
    model: Model, p: np.ndarray, seg: int, rhs: str, E, eps: float, calls: list
):  # fmt: skip
    """``f(t, y)`` of interval ``seg``: the compiled kernel or the NumPy reference
    (:func:`numerics.model.kernels.coupling`); every call is counted in ``calls[0]``."""
    cfg = model.config
    if rhs == "compiled":
        out = np.empty(cfg.T * cfg.d)

        def f(t, y):
            calls[0] += 1
            coupling_rhs_nb(t, np.ascontiguousarray(y), p, seg, out)
            return out.copy()

        return f
    lp = model.layers[seg]

    def f_numpy(t, y):
        calls[0] += 1
        return kernels.coupling(cfg, lp, y.reshape(cfg.T, cfg.d), E, eps).ravel()

    return f_numpy


def _scipy_segment_jac(cfg: ModelConfig, p: np.ndarray, seg: int, jac: str):
    """The frozen-kernel Jacobian of interval ``seg``, dense or sparse, as SciPy's ``jac``."""
    J = np.empty((cfg.T, cfg.T))

    def dense(t, y):
        frozen_kernel_jac_nb(t, np.ascontiguousarray(y), p, seg, J)
        return np.kron(J, np.eye(cfg.d))

    def sparse(t, y):
        frozen_kernel_jac_nb(t, np.ascontiguousarray(y), p, seg, J)
        return sps.kron(sps.csr_matrix(J), sps.identity(cfg.d), format="csc")

    return dense if jac == "dense" else sparse


def integrate_coupling_scipy(
    model: Model,
    X0,
    eps: float,
    *,
    E=None,
    method: str = "Radau",
    rtol: float = 1e-6,
    atol: float = 1e-9,
    jac: str | None = "sparse",
    rhs: str = "compiled",
    time_cap: float | None = None,
) -> ScipyCouplingResult:
    """Integrate the coupling form of ``model`` over ``[0, 1]`` with :func:`scipy.integrate.solve_ivp`.

    One ``solve_ivp`` call per layer interval ``[l/L, (l+1)/L]`` (the weights of layer ``l``), each
    starting from the end of the previous one; ``method`` is SciPy's (``"Radau"``, ``"BDF"``,
    ``"LSODA"``, ``"RK45"`` …). ``rhs="compiled"`` evaluates :func:`coupling_rhs_nb` (the same
    kernel as :func:`integrate_coupling`), ``rhs="numpy"`` the NumPy reference
    :func:`numerics.model.kernels.coupling`; ``jac`` is one of :data:`SCIPY_JACOBIANS`. ``E``
    defaults to ``X0`` when ``γ > 0``. The integration stops at the first interval that fails, or,
    with ``time_cap``, after the interval at which the CPU time spent exceeds ``time_cap`` seconds.
    """
    if jac not in SCIPY_JACOBIANS:
        raise ValueError(f"jac={jac!r}: expected one of {SCIPY_JACOBIANS}")
    if rhs not in ("compiled", "numpy"):
        raise ValueError(f"rhs={rhs!r}: expected 'compiled' or 'numpy'")
    cfg, X0, E, p = _checked_problem(model, X0, eps, E, jacobian_only=rhs == "numpy")
    edges = np.concatenate([[0.0], layer_breakpoints(model.L), [1.0]])
    y = X0.ravel().copy()
    counts = {"nfev": 0, "njev": 0, "nlu": 0, "nsteps": 0}
    calls = [0]
    t_start = time.process_time()
    for seg in range(len(edges) - 1):
        kw = {} if jac is None else {"jac": _scipy_segment_jac(cfg, p, seg, jac)}
        res = solve_ivp(
            _scipy_segment_rhs(model, p, seg, rhs, E, eps, calls),
            (edges[seg], edges[seg + 1]),
            y,
            method=method,
            rtol=rtol,
            atol=atol,
            **kw,
        )
        if not res.success:
            return ScipyCouplingResult(y, False, res.message, **counts, ncalls=calls[0])
        y = res.y[:, -1]
        for k in ("nfev", "njev", "nlu"):
            counts[k] += int(getattr(res, k))
        counts["nsteps"] += res.t.size - 1
        if time_cap is not None and time.process_time() - t_start > time_cap:
            return ScipyCouplingResult(
                y, False, "CPU-time cap reached", **counts, capped=True, ncalls=calls[0]
            )
    return ScipyCouplingResult(
        y, True, "the end of the span was reached", **counts, ncalls=calls[0]
    )


# ----------------------------------------------------------------------------- a seeded problem


@dataclass(frozen=True)
class CouplingProblem:
    """A seeded coupling-flow problem: the model, the injection target ``E`` (T×d), a coarse start
    ``Y0`` (N×d, one row per block), an off-manifold part ``Z0`` (T×d) and a fourth independent
    seed for whoever measures on it (``spare_seed``)."""

    model: Model
    E: np.ndarray
    Y0: np.ndarray
    Z0: np.ndarray
    spare_seed: np.random.SeedSequence

    @property
    def U(self) -> np.ndarray:
        """The block-constant states ``U = I_N ⊗ 1_P`` (T×N)."""
        cfg = self.model.config
        return np.kron(np.eye(cfg.N), np.ones((cfg.P, 1)))

    @property
    def X0(self) -> np.ndarray:
        """The generic (off-manifold) start ``UY₀ + Z₀``."""
        return self.U @ self.Y0 + self.Z0


def coupling_problem(params: Mapping, seed: int, model: Model | None = None) -> CouplingProblem:
    """The problem of ``seed`` for the parameters ``params`` (a mapping with the
    :class:`ModelConfig` fields it sets, ``L``, ``scale``, ``gate`` and ``x_scale``).

    ``seed`` spawns four independent streams: the weights (:func:`init_model` with ``scale`` and
    ``gate``), ``E`` (standard normal), the start (``Y0`` then ``Z0``, standard normal times
    ``x_scale``) and the spare seed. With ``model`` given (a user's own seeded model), the
    weight stream is unused and ``params`` needs only ``x_scale``: ``E`` and the start are drawn
    for ``model.config`` by the same streams.
    """
    w_seed, e_seed, x_seed, spare = np.random.SeedSequence(seed).spawn(4)
    if model is None:
        cfg = ModelConfig.from_params(params)
        model = init_model(cfg, params["L"], w_seed, scale=params["scale"], gate=params["gate"])
    cfg = model.config
    E = np.random.default_rng(e_seed).standard_normal((cfg.T, cfg.d))
    rx = np.random.default_rng(x_seed)
    Y0 = params["x_scale"] * rx.standard_normal((cfg.N, cfg.d))
    Z0 = params["x_scale"] * rx.standard_normal((cfg.T, cfg.d))
    return CouplingProblem(model, E, Y0, Z0, spare)


WORK_METHODS = {
    "Rosenbrock-W (Numba)": ("numba", "rosw"),
    "Radau IIA (Numba)": ("numba", "radau"),
    "DOPRI5 (Numba)": ("numba", "dopri5"),
    "SciPy LSODA": ("scipy", "LSODA"),
    "SciPy Radau": ("scipy", "Radau"),
}
"""The integrators :func:`integrator_work` runs, in order: the Numba methods of
:func:`integrate_coupling` and SciPy's through :func:`integrate_coupling_scipy` (compiled
right-hand side, dense frozen-kernel Jacobian)."""


def integrator_work(params: Mapping, seed: int, eps: float, *, rtol: float, atol: float) -> dict:
    """Right-hand-side evaluations and CPU seconds of each integrator of :data:`WORK_METHODS` from
    the generic start ``X0`` of :func:`coupling_problem` ``(params, seed)`` over ``[0, 1]`` at
    ``ε = eps`` (all timed in this call, so that their ratios compare like with like)."""
    prob = coupling_problem(params, seed)
    X0 = prob.X0
    nfev, times = {}, {}
    for name, (kind, method) in WORK_METHODS.items():
        t0 = time.process_time()
        if kind == "numba":
            r = integrate_coupling(
                prob.model,
                X0,
                eps,
                E=prob.E,
                method=method,
                rtol=rtol,
                atol=atol,
                max_steps=2_000_000,
            )
        else:
            r = integrate_coupling_scipy(
                prob.model, X0, eps, E=prob.E, method=method, rtol=rtol, atol=atol, jac="dense"
            )
        times[name] = time.process_time() - t0
        nfev[name] = int(r.nfev)
    return {"nfev": nfev, "cpu_seconds": times}
