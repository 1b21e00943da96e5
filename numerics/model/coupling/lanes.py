"""The eight-lane path of the coupling form's right-hand side (:func:`block_local_rhs8`).

For block-local masks with ``d``, ``m`` and ``P`` multiples of 8 (:func:`lanes_fit`),
:func:`numerics.model.coupling.rhs.coupling_rhs_nb` runs on the vectors of :mod:`numerics.lanes`
(one AVX-512 register per row of eight doubles): the products eight rows at once with eight
independent accumulators; the norm and the score blocks through an 8×8 shuffle transpose; the
softmax with one lane per row, so that its maximum, sum and division are vertical; the
exponentials and tanh eight vectors at once; the slow path with one pooled query per lane. The
work arrays are addressed by flat offsets into the packed vector
(:mod:`numerics.model.coupling.packing`), not views. Numba does not run LLVM's SLP vectoriser and
its loop vectoriser does nothing useful for runs of eight, hence the explicit lanes (the
measurements are in ``docs/benchmarks.md``).

Oracle: the row path (:func:`numerics.model.coupling.rhs.coupling_rhs_rows_nb`): the same sums in
the same order except ``n(X)·G`` (a BLAS product there) and the sign of ``tanh(−0)`` (kept here);
the tests assert agreement to 1e-13 of the largest entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fastslow.numerics.lanes import (
    add8,
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
from fastslow.numerics.model.compiled import activation_rows
from fastslow.numerics.model.coupling import layout
from fastslow.numerics.model.coupling.packing import (
    fused_offset,
    lanes_offsets,
    layer_offset,
)

__all__ = ["block_local_rhs8"]


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
    """``S[i, j] = XG[i, :d]·n(X)[b(i) + j]`` (the sums of :func:`block_weights`, over ``k`` in
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
            mo = layout.HEADER + i * P + c
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
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    m = int(p[layout.M])
    N = T // P
    yb, yh, zs, yg = offs[8], offs[9], offs[10], offs[11]
    for b in range(N):
        for c in range(0, d, 8):
            acc = zero8()
            for i in range(P):
                acc = add8(acc, load8(y, (b * P + i) * d + c))
            store8(p, yb + b * d + c, div8(acc, float(P)))
    if p[layout.NORM] > 0.0:
        _rms8_into(p, yb, N, d, p[layout.NORM_EPS], p, yh)
    else:
        for c in range(0, N * d, 8):
            store8(p, yh + c, load8(p, yb + c))
    _mm8_into(p, yh, N, d, p, fused_offset(p, seg) + d * (d + m), 2 * d, p, yg)
    full = p[layout.SLOW_FULL] > 0.0
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
def block_local_rhs8(y, p, seg, out):
    """:func:`coupling_rhs_nb` for a block-local mask when :func:`lanes_fit`: every row
    operation on eight lanes at a time (:mod:`numerics.lanes`), the work arrays addressed
    by flat offsets into ``p``; the same sums in the same order as the row path except
    ``n(X)·G`` (a BLAS product there) and the sign of ``tanh(−0)`` (kept here). The products
    eight rows at once (:func:`_madd8_rows8`), the softmax one lane per row, the exponentials
    and tanh eight vectors at once; the slow path first, so that ``σ(Z)·W2``, ``g·Zs`` and
    ``γ(E − X)`` are added in one pass over ``out``."""
    T = int(p[layout.T])
    P = int(p[layout.P])
    d = int(p[layout.D])
    m = int(p[layout.M])
    offs = lanes_offsets(p)
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
    _normed_blocks8(y, p, T, P, d, p[layout.NORM_EPS], p[layout.NORM] > 0.0, xnb)
    w = d + m
    fo = fused_offset(p, seg)
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
    inv_eps = 1.0 / p[layout.EPS]
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
    act = int(p[layout.SIGMA])
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
    off = layer_offset(p, seg) + 2 * d * d
    w2 = off + d * m
    g = p[off + 2 * d * m + 3 * d * d]
    slow = p[layout.SLOW] > 0.0 and g != 0.0
    zs = _pooled_slow8(y, p, seg, offs) if slow else 0
    gam = p[layout.GAMMA]
    e0 = layout.HEADER + T * int(p[layout.MASK_WIDTH])
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
