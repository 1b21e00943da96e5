"""The eight-lane right-hand side of numerics.model.coupling.lanes (block-local masks, d, m, P multiples of
8) against the row-by-row one on the same packed vector: equal to rounding (1e-13 of the largest
entry) over sizes, switches, activations and states, NaN where the row path has NaN, and taken
whenever it applies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastslow.numerics.lanes import CACHE_LINE
from fastslow.numerics.model.activations import SIGMAS
from fastslow.numerics.model.coupling import layout
from fastslow.numerics.model.coupling.lanes import block_local_rhs8
from fastslow.numerics.model.coupling.packing import (
    fused_offset,
    lanes_fit,
    lanes_offsets,
    layer_offset,
    pack_coupling,
)
from fastslow.numerics.model.coupling.rhs import coupling_rhs_nb, coupling_rhs_rows_nb
from fastslow.numerics.model.flow import make_rhs
from fastslow.numerics.model.weights import ModelConfig, init_model


def both_paths(cfg, L, seed, eps, X, seg, E=None):
    model = init_model(cfg, L, seed, gate=0.7)
    if E is None:
        E = np.random.default_rng(seed + 1).standard_normal((cfg.T, cfg.d))
    p = pack_coupling(cfg, model, eps, E)
    assert lanes_fit(p)
    y = X.ravel().copy()
    lanes, rows, disp = np.empty(y.size), np.empty(y.size), np.empty(y.size)
    block_local_rhs8(y, p, seg, lanes)
    coupling_rhs_rows_nb(0.3, y, p, seg, rows)
    coupling_rhs_nb(0.3, y, p, seg, disp)
    assert np.array_equal(disp, lanes, equal_nan=True)  # the dispatcher takes the lanes path
    return lanes, rows


@settings(max_examples=60, deadline=None)
@given(
    N=st.integers(1, 4),
    P=st.sampled_from([8, 16]),
    d=st.sampled_from([8, 16]),
    m=st.sampled_from([8, 16, 24]),
    mask=st.sampled_from(["block_bidirectional", "block_causal"]),
    norm=st.booleans(),
    slow=st.booleans(),
    sigma=st.sampled_from(SIGMAS),
    gamma=st.sampled_from([0.0, 0.5]),
    slow_mask=st.sampled_from(["blockcausal", "full"]),
    scale=st.sampled_from([0.1, 1.0, 3.0]),
    eps=st.sampled_from([1e-1, 1e-2, 1e-4]),
    seed=st.integers(0, 10_000),
)
def test_lanes_path_equals_row_path_to_rounding(
    N, P, d, m, mask, norm, slow, sigma, gamma, slow_mask, scale, eps, seed
):
    cfg = ModelConfig(
        T=N * P, P=P, d=d, m=m, mask=mask, norm=norm, slow=slow, sigma=sigma,
        gamma=gamma, slow_mask=slow_mask,
    )  # fmt: skip
    X = scale * np.random.default_rng(seed).standard_normal((N * P, d))
    for seg in range(2):
        lanes, rows = both_paths(cfg, 2, seed, eps, X, seg)
        assert np.abs(lanes - rows).max() <= 1e-13 * np.abs(rows).max()


@pytest.mark.parametrize("sigma", SIGMAS)
def test_lanes_path_matches_the_numpy_reference(sigma):
    cfg = ModelConfig(T=32, P=8, d=8, m=16, mask="block_bidirectional", gamma=0.7, sigma=sigma)
    model = init_model(cfg, 3, 5, gate=0.9)
    rng = np.random.default_rng(1)
    X, E = rng.standard_normal((32, 8)), rng.standard_normal((32, 8))
    f = make_rhs(model, form="coupling", eps=0.01, E=E)
    p = pack_coupling(cfg, model, 0.01, E)
    assert lanes_fit(p)
    out = np.empty(256)
    for seg in range(3):
        t = (seg + 0.5) / 3
        coupling_rhs_nb(t, X.ravel(), p, seg, out)
        ref = f(t, X).ravel()
        assert np.abs(out - ref).max() <= 1e-13 * np.abs(ref).max()


def test_non_finite_states_give_the_row_paths_non_finite_entries():
    cfg = ModelConfig(T=16, P=8, d=8, mask="block_bidirectional", gamma=0.5)
    X = np.random.default_rng(3).standard_normal((16, 8))
    for bad in (np.nan, np.inf, -np.inf):
        Xb = X.copy()
        Xb[9, 3] = bad
        lanes, rows = both_paths(cfg, 1, 4, 0.01, Xb, 0)
        assert np.array_equal(np.isnan(lanes), np.isnan(rows))
        assert np.array_equal(np.isinf(lanes), np.isinf(rows))
        fin = np.isfinite(rows)
        assert np.abs(lanes[fin] - rows[fin]).max() <= 1e-13 * np.abs(rows[fin]).max()


def test_other_sizes_and_masks_take_the_row_path():
    for kw in (
        {"T": 16, "P": 4, "d": 8},
        {"T": 16, "P": 8, "d": 4},
        {"T": 16, "P": 8, "d": 8, "m": 12},
        {"T": 16, "P": 8, "d": 8, "mask": "causal"},
    ):
        cfg = ModelConfig(**{"mask": "block_bidirectional", **kw})
        p = pack_coupling(cfg, init_model(cfg, 1, 0), 0.1)
        assert not lanes_fit(p)


def test_every_block_the_lanes_path_reads_starts_on_a_cache_line():
    """With d, m, P multiples of 8, the packed vector starts on a cache line and so do the mask, E,
    every layer's weights and fused weights, and every work array of the lanes path (offsets
    multiples of 8): no eight-lane load straddles two lines, whatever the allocator did."""
    for T, P, d, m, L in [(64, 8, 8, 8, 4), (48, 16, 16, 24, 3), (8, 8, 8, 16, 1)]:
        cfg = ModelConfig(T=T, P=P, d=d, m=m, mask="block_bidirectional", gamma=1.0)
        E = np.ones((T, d))
        p = pack_coupling(cfg, init_model(cfg, L, 0), 0.01, E)
        assert p.ctypes.data % CACHE_LINE == 0
        lanes = lanes_offsets(p)
        offsets = [
            layout.HEADER,
            layout.HEADER + T * P,
            *lanes[:13],
            *lanes[15:],
        ]  # sp, st: row path only
        for seg in range(L):
            offsets += [layer_offset(p, seg), fused_offset(p, seg)]
        assert all(int(o) % 8 == 0 for o in offsets), offsets


def test_the_right_hand_side_does_not_depend_on_where_its_arrays_start():
    """The same parameters, state and output copied to arrays starting 0, 8, …, 56 bytes after a
    cache line give the same bits (alignment changes speed, never arithmetic)."""
    cfg = ModelConfig(T=32, P=8, d=8, m=16, mask="block_bidirectional", gamma=1.0)
    p0 = pack_coupling(cfg, init_model(cfg, 2, 3), 0.01, np.ones((32, 8)))
    y0 = np.random.default_rng(4).standard_normal(32 * 8)
    ref = np.empty(y0.size)
    coupling_rhs_nb(0.3, y0, p0, 1, ref)

    def shifted(a, by):
        buf = np.zeros(a.size + 16)
        start = (-buf.ctypes.data % 64 + by) // 8
        out = buf[start : start + a.size]
        out[:] = a
        return out

    for by in range(0, 64, 8):
        p, y, out = shifted(p0, by), shifted(y0, by), shifted(np.zeros(y0.size), 56 - by)
        coupling_rhs_nb(0.3, y, p, 1, out)
        assert np.array_equal(out, ref)
