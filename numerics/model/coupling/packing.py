"""The packed parameter vector of the coupling form's compiled right-hand side and Jacobian.

The coupling form ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)``, ``R_t(X) = γ(E − X) + MLP_t(X) +
g_t·Slow_t(X)``, with ``θ(t)`` piecewise constant on ``L`` equal intervals (the untied stack; tied
weights are ``L = 1``), travels to compiled code as one flat float64 vector built by
:func:`pack_coupling`: a header of sizes and flags (:data:`~numerics.model.coupling.layout.HEADER` slots), the mask (for a
block-local mask only the rows of its diagonal blocks, T×P), the injection target ``E``, each
layer's weights padded to a multiple of 8 entries, per layer the fused products ``G = [β·Q Kᵀ |
W1]`` and ``Gs = [β·Qs Ksᵀ | Vs]`` (one product ``n(X)·G`` gives the bilinear score factor and
the MLP pre-activation), and a scratch tail holding every work array of the right-hand side and
the Jacobian (:func:`scratch_size`), so that neither allocates. The vector is cache-line aligned
(:func:`numerics.lanes.aligned_zeros`) and every block the eight-lane path reads starts on a line
when ``d``, ``m``, ``P`` are multiples of 8.

The MLP activation is packed as its integer code (:data:`numerics.model.activations.COMPILED_CODES`);
a user :class:`~numerics.model.activations.Activation` (NumPy functions) is not compiled:
:func:`pack_coupling` refuses it with a ``ValueError`` naming the NumPy right-hand side, unless only
the frozen-kernel Jacobian will read the vector (``jacobian_only``).

Where each block lies is public for the compiled right-hand side and Jacobian
(:func:`matrix_view`, :func:`scratch_arrays`, :func:`layer_offset`, :func:`fused_offset`,
:func:`lanes_fit`, :func:`lanes_offsets`; the header slots in :mod:`numerics.model.coupling.layout`):
unchecked inner-loop kernels, as the ``*_nb`` functions.

Caveat: the scratch tail makes one packed vector unfit for concurrent calls.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics import validation
from fastslow.numerics.integrators.numba_binding import COMPILED_ONLY, NO_C_ENTRY
from fastslow.numerics.lanes import aligned_zeros
from fastslow.numerics.model.activations import compiled_code, is_builtin
from fastslow.numerics.model.coupling import layout
from fastslow.numerics.model.weights import LayerParams, Model, ModelConfig

__all__ = [
    "SIGMA_NOT_COMPILED",
    "NUMPY_ALTERNATIVE",
    "pack_coupling",
    "scratch_size",
    "is_block_local",
    "is_lower_triangular",
    "layer_offset",
    "fused_offset",
    "lanes_fit",
    "lanes_offsets",
]
# matrix_view and scratch_arrays are compiled without a Python entry (numba_binding.COMPILED_ONLY):
# only compiled code may call them


SIGMA_NOT_COMPILED = -1.0
"""The activation code packed for a user activation by ``pack_coupling(..., jacobian_only=True)``:
:func:`frozen_kernel_jac_nb` does not need ``σ``, :func:`coupling_rhs_nb` refuses it."""


NUMPY_ALTERNATIVE = (
    "integrate_coupling_scipy(model, X0, eps, rhs='numpy') or "
    "numerics.model.flow.make_rhs(model, form='coupling', eps=eps) (the NumPy right-hand side "
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
            "the compiled coupling right-hand side (numerics.model.coupling.rhs)",
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
    eps = validation.real("eps", eps, low=0.0, low_open=True)
    T, d = config.T, config.d
    if config.gamma:
        if E is None:
            raise ValueError("gamma > 0 needs the injection target E (T×d)")
        E = validation.finite_array("E", E, shape=(T, d))
    else:
        E = np.zeros((T, d))
    head = np.zeros(layout.HEADER)
    local = is_block_local(config.mask_array, config.P)
    head[layout.BLOCK_LOCAL] = float(local)
    head[layout.MASK_WIDTH] = config.P if local else T
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
    head[layout.SCRATCH] = sum(part.size for part in parts)
    parts.append(np.zeros(scratch_size(T, config.P, d, config.m)))
    packed = aligned_zeros(sum(part.size for part in parts))
    np.concatenate(parts, out=packed)
    return packed


@njit(cache=True, **NO_C_ENTRY)
def _layer_weights(d, m):
    """Entries of one layer's weights in the packed vector: ``Q, K`` (d×d), ``W1, W2`` (d×m,
    m×d), ``Qs, Ks, Vs`` (d×d) and the gate ``g``."""
    return 5 * d * d + 2 * d * m + 1


@njit(cache=True, **NO_C_ENTRY)
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


@njit(cache=True, **NO_C_ENTRY)
def _jac_scratch_size(T, P, d, m):
    """Length of the work arrays of :func:`scratch_arrays` (shared with the Jacobian); those of the
    eight-lane right-hand side (:func:`lanes_offsets`) follow."""
    N = T // P
    size = T * (2 * d + 3 * m + P + 3 * max(P, m)) + d + N * (5 * d + 3 * N)
    return (size + 7) // 8 * 8  # what follows starts on a cache line (see _layer_size)


def is_block_local(mask: np.ndarray, P: int) -> bool:
    """Whether the mask only connects tokens of the same block of ``P`` (then ``A`` and the
    frozen-kernel ``J`` are block diagonal and are computed block by block)."""
    T = mask.shape[0]
    same = np.kron(np.eye(T // P, dtype=bool), np.ones((P, P), dtype=bool))
    return bool(not np.any(mask & ~same))


def is_lower_triangular(mask: np.ndarray) -> bool:
    """Whether the mask has no entry above its diagonal (a causal mask): then the frozen-kernel
    ``J`` is lower triangular, and the implicit methods solve with it by substitution without
    keeping a factorisation (``jac_lower``)."""
    return bool(not np.any(np.triu(np.asarray(mask, dtype=bool), 1)))


@njit(cache=True, **COMPILED_ONLY)
def matrix_view(p, off, r, c):
    """View of ``p[off : off + r·c]`` as an ``r×c`` matrix (no copy)."""
    return p[off : off + r * c].reshape((r, c))


@njit(cache=True, **COMPILED_ONLY)
def _packed_layout(p, seg):
    """``(start of the per-layer weights, size of one layer's weights, d, m, clipped layer, L)``."""
    T = int(p[layout.T])
    d = int(p[layout.D])
    m = int(p[layout.M])
    L = int(p[layout.L])
    start = layout.HEADER + T * int(p[layout.MASK_WIDTH]) + T * d
    return start, _layer_size(d, m), d, m, min(max(seg, 0), L - 1), L


@njit(cache=True, **COMPILED_ONLY)
def scratch_arrays(p):
    """The work arrays in the scratch tail of ``p`` (:func:`scratch_size`): ``Xn`` (T×d), ``XG``
    (T×(d+m)), ``S`` (T×P), ``Z`` (T×m), the flat buffers ``v, pb, tb`` (T·max(P, m)) and ``zb``
    (T·m), ``acc`` (d), and for the slow path ``Yb, Yh, Zs`` (N×d), ``YG`` (N×2d) and ``sv, sp, st``
    (N²)."""
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    m = int(p[layout.M])
    N = T // P
    o = int(p[layout.SCRATCH])
    w = max(P, m)
    Xn = matrix_view(p, o, T, d)
    o += T * d
    XG = matrix_view(p, o, T, d + m)
    o += T * (d + m)
    S = matrix_view(p, o, T, P)
    o += T * P
    Z = matrix_view(p, o, T, m)
    o += T * m
    v, pb, tb = p[o : o + T * w], p[o + T * w : o + 2 * T * w], p[o + 2 * T * w : o + 3 * T * w]
    o += 3 * T * w
    zb = p[o : o + T * m]
    acc = p[o + T * m : o + T * m + d]
    o += T * m + d
    Yb, Yh, Zs = (
        matrix_view(p, o, N, d),
        matrix_view(p, o + N * d, N, d),
        matrix_view(p, o + 2 * N * d, N, d),
    )
    YG = matrix_view(p, o + 3 * N * d, N, 2 * d)
    o += 5 * N * d
    sv, sp, st = p[o : o + N * N], p[o + N * N : o + 2 * N * N], p[o + 2 * N * N : o + 3 * N * N]
    return Xn, XG, S, Z, v, pb, tb, zb, acc, Yb, Yh, Zs, YG, sv, sp, st


@njit(cache=True, inline="always")
def layer_offset(p, seg):
    start, size, d, m, l, L = _packed_layout(p, seg)
    return start + l * size


@njit(cache=True, inline="always")
def fused_offset(p, seg):
    """Offset of ``G = [β·Q Kᵀ | W1]`` (followed by ``Gs = [β·Qs Ksᵀ | Vs]``) of interval ``seg``."""
    start, size, d, m, l, L = _packed_layout(p, seg)
    return start + L * size + l * (d * (d + m) + 2 * d * d)


@njit(cache=True, inline="always")
def lanes_fit(p):
    """Whether the eight-lane right-hand side applies: a block-local mask and ``d``, ``m``, ``P``
    multiples of 8 (every row a whole number of :class:`numerics.lanes.F64x8`)."""
    return (
        p[layout.BLOCK_LOCAL] > 0.0
        and int(p[layout.D]) % 8 == 0
        and int(p[layout.M]) % 8 == 0
        and int(p[layout.P]) % 8 == 0
    )


@njit(cache=True, inline="always")
def lanes_offsets(p):
    """Offsets in ``p`` of the eight-lane path's work arrays (flat offsets, not views: a view of
    ``p`` costs a reshape call, ≈ 25 ns, and the path needs a dozen): those of :func:`scratch_arrays`
    ``Xn, XG, S, Z, v, pb, tb, zb, Yb, Yh, Zs, YG, sv, sp, st`` and, after them, ``XnB`` (``n(X)``
    block by block, transposed: ``XnB[(b·d + k)·P + j] = n(X)[b·P + j, k]``) and the slow path's
    ``8·(d + N + 1)`` (:func:`_pooled_slow8`). The lanes path leaves ``Xn``, ``sv, sp, st``
    unused; ``v`` holds the transposed softmax weights (:func:`_block_scores8`)."""
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    m = int(p[layout.M])
    N = T // P
    w = max(P, m)
    xn = int(p[layout.SCRATCH])
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
