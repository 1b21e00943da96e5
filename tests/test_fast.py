"""The Numba forward (numerics.model.compiled) against the NumPy reference (numerics.model.layer).

Tolerance: relative Frobenius error ≤ 1e-12. Both paths compute the same expression; they differ in
the order of summation (row tiles, sequential RMS sums) and in ``exp``/``tanh`` (libm against
NumPy's SIMD versions), i.e. by a few units of rounding (~1e-16) per operation, amplified at most by
the depth product of the stack's Jacobians. With O(1) weights and L ≤ 4 that stays far below 1e-12
(measured ≈ 2e-16); 1e-12 leaves 4 orders of margin, and still catches any real discrepancy
(a dropped term, a wrong mask entry, a mis-shifted block) which is O(1e-3) or larger.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model import kernels
from fastslow.numerics.model.activations import COMPILED_CODES, NAMED, SIGMAS, Activation
from fastslow.numerics.model.compiled import (
    activation_rows,
    exp_into,
    fast_attention,
    fast_layer,
    fast_slow_path,
    fast_stack,
    tanh_row,
)
from fastslow.numerics.model.layer import attention, layer, slow_path, stack
from fastslow.numerics.model.weights import ModelConfig, init_model

RTOL = 1e-12


def rel_err(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def instance(T=24, P=4, d=5, m=None, L=3, seed=0, gate=0.7, **kw):
    cfg = ModelConfig(T=T, P=P, d=d, m=m, **kw)
    ss = np.random.SeedSequence(seed)
    w, x, e = ss.spawn(3)
    model = init_model(cfg, L, w, gate=gate)
    X0 = np.random.default_rng(x).standard_normal((T, d))
    E = np.random.default_rng(e).standard_normal((T, d))
    return cfg, model, X0, E


SWITCHES = [
    {},
    {"mask": "block_causal"},
    {"mask": "block_bidirectional", "slow_mask": "full"},
    {"norm": False},
    {"sigma": "identity"},
    {"sigma": "relu"},
    {"sigma": "gelu"},
    {"sigma": "relu", "mask": "block_bidirectional", "norm": False, "gamma": 0.5},
    {"sigma": "gelu", "mask": "block_causal", "slow_mask": "full", "h": 0.25},
    {"slow": False},
    {"gamma": 0.3, "h": 0.25},
    {"beta": 0.9},
    {"norm": False, "sigma": "identity", "gamma": 1.5, "slow_mask": "full", "beta": 0.1},
]


@pytest.mark.parametrize(
    "kw", SWITCHES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "defaults"
)
def test_stack_matches_reference_for_every_switch(kw):
    cfg, model, X0, E = instance(**kw)
    ref = stack(model, X0, E)
    assert rel_err(fast_stack(model, X0, E), ref) <= RTOL
    assert rel_err(fast_stack(model, X0), stack(model, X0)) <= RTOL


@pytest.mark.parametrize("kw", SWITCHES[:3] + SWITCHES[4:9] + SWITCHES[-1:])
def test_single_layer_matches_reference(kw):
    cfg, model, X0, E = instance(m=7, **kw)
    p = model.layers[0]
    assert rel_err(fast_layer(cfg, p, X0, E), layer(cfg, p, X0, E)) <= RTOL
    assert rel_err(fast_layer(cfg, p, X0), kernels.layer(cfg, p, X0, X0)) <= RTOL


@pytest.mark.parametrize("kw", SWITCHES[:4] + SWITCHES[-1:])
def test_attention_and_slow_path_pieces_match_reference(kw):
    cfg, model, X0, E = instance(T=40, P=5, **kw)
    p = model.layers[1]
    assert rel_err(fast_attention(cfg, p, X0), attention(cfg, p, X0)) <= RTOL
    assert rel_err(fast_slow_path(cfg, p, X0), slow_path(cfg, p, X0)) <= RTOL
    assert np.all(fast_slow_path(cfg, p, X0)[:5] == 0.0)  # block 1 receives zero


def test_large_size_exercises_several_row_tiles():
    # T = 320 spans three tiles of 128 rows (one partial): the column ranges and the tile edges
    cfg, model, X0, E = instance(T=320, P=8, d=16, m=24, L=2, seed=3)
    assert rel_err(fast_stack(model, X0), stack(model, X0)) <= RTOL


def test_custom_masks_with_holes_and_anticausal_rows():
    rng = np.random.default_rng(11)
    T = 20
    mask = rng.random((T, T)) < 0.3
    mask[np.arange(T), (np.arange(T) * 7) % T] = True  # every row non-empty, entries anywhere
    mask[0] = False
    mask[0, -1] = True  # a row whose only key is the last token
    cfg, model, X0, E = instance(T=T, P=5, d=3, mask=mask)
    assert rel_err(fast_stack(model, X0), stack(model, X0)) <= RTOL


def test_masked_entries_are_exact_zeros_so_causality_is_exact():
    # the future of token t must not influence out_t at all: bitwise, as in the reference (A1)
    cfg, model, X0, E = instance(T=16, P=4, d=3, L=2)
    base = fast_stack(model, X0)
    X = X0.copy()
    X[9] += 1.0
    out = fast_stack(model, X)
    assert np.array_equal(out[:9], base[:9])  # tokens 0..8 precede token 9: bitwise unchanged
    assert np.abs(out[9:] - base[9:]).max() > 1e-3  # and the later ones do move


def test_tied_weights_and_zero_gate():
    cfg = ModelConfig(T=12, P=3, d=4)
    model = init_model(cfg, 4, 5, tied=True, gate=0.0)
    X0 = np.random.default_rng(1).standard_normal((12, 4))
    assert rel_err(fast_stack(model, X0), stack(model, X0)) <= RTOL


@given(
    N=st.integers(1, 5),
    P=st.integers(1, 5),
    d=st.integers(1, 6),
    m=st.integers(1, 6),
    L=st.integers(1, 3),
    mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
    slow_mask=st.sampled_from(["blockcausal", "full"]),
    norm=st.booleans(),
    sigma=st.sampled_from(SIGMAS),
    slow=st.booleans(),
    gamma=st.sampled_from([0.0, 0.5]),
    h=st.sampled_from([1.0, 0.25]),
    gate=st.floats(-2.0, 2.0),
    seed=st.integers(0, 2**16),
)
def test_random_sizes_and_switches_match_reference(
    N, P, d, m, L, mask, slow_mask, norm, sigma, slow, gamma, h, gate, seed
):
    cfg, model, X0, E = instance(
        T=N * P,
        P=P,
        d=d,
        m=m,
        L=L,
        seed=seed,
        gate=gate,
        mask=mask,
        slow_mask=slow_mask,
        norm=norm,
        sigma=sigma,
        slow=slow,
        gamma=gamma,
        h=h,
    )
    assert rel_err(fast_stack(model, X0, E), stack(model, X0, E)) <= RTOL


def test_one_compiled_signature_per_kernel_whatever_the_switches_and_input_dtypes():
    # warm_up compiles with the exact dtypes the wrappers pass: later calls must not recompile
    from fastslow.numerics.model import compiled

    for kw in SWITCHES:
        cfg, model, X0, E = instance(**kw)
        fast_stack(model, X0.astype(np.float32), E.tolist())  # other dtypes are converted first
        fast_layer(cfg, model.layers[0], np.asfortranarray(X0))
        fast_attention(cfg, model.layers[0], X0[::1])
        fast_slow_path(cfg, model.layers[0], X0)
    for kernel in (
        compiled._layer_into,
        compiled._fast_attention_kernel,
        compiled._slow_path_kernel,
    ):
        assert len(kernel.signatures) == 1, kernel.signatures


def ulps(a, ref):
    return np.abs(a - ref) / np.spacing(np.abs(ref))


def test_vectorised_exp_within_one_ulp_of_numpy_and_zero_below_the_cut():
    v = np.concatenate(
        [
            np.linspace(-708.0, 0.0, 200_001),
            -np.logspace(-300, 2.5, 4001),
            np.random.default_rng(0).uniform(-50, 0, 100_000),
            [-0.0],
        ]
    )
    p, t = np.empty_like(v), np.empty_like(v)
    exp_into(v, p, t)
    assert ulps(p * t, np.exp(v)).max() <= 1.0
    low = np.array([-708.5, -745.0, -1000.0, np.nan])
    p, t = np.empty(4), np.empty(4)
    exp_into(low, p, t)
    assert np.isnan((p * t)[-1])  # NaN propagates (the caller zeroes v < −708 only)


def test_vectorised_tanh_within_two_ulp_of_numpy():
    x = np.concatenate(
        [
            np.linspace(-30.0, 30.0, 200_001),
            np.logspace(-300, 1.5, 4001),
            -np.logspace(-300, 1.5, 4001),
            [0.625, -0.625, 0.0, 800.0, -800.0],
        ]
    )
    y = x.copy()
    n = y.size
    tanh_row(y, np.empty(n), np.empty(n), np.empty(n))
    ref = np.tanh(x)
    nz = ref != 0
    assert ulps(y[nz], ref[nz]).max() <= 2.0
    assert np.all(y[~nz] == 0.0)
    z = np.array([np.nan, 1.0])
    tanh_row(z, np.empty(2), np.empty(2), np.empty(2))
    assert np.isnan(z[0])


ROW_POINTS = np.concatenate(
    [
        np.linspace(-30.0, 30.0, 200_001),
        np.logspace(-300, 1.5, 4001),
        -np.logspace(-300, 1.5, 4001),
        [0.625, -0.625, 0.0, -0.0, 800.0, -800.0],
    ]
)
"""Points for the compiled activations: a grid, tiny and large magnitudes, the tanh branch edge."""


def _compiled_activation(name: str, x: np.ndarray) -> np.ndarray:
    """The compiled activation of ``x`` as one row."""
    y = x.copy()[None]
    activation_rows(COMPILED_CODES[name], y, *(np.empty(x.size) for _ in range(4)))
    return y[0]


@pytest.mark.parametrize("name", SIGMAS)
def test_compiled_activation_rows_match_the_numpy_definitions(name):
    """relu and identity bitwise; tanh within 2 ulp; gelu (the tanh approximation, same operation
    order) within a few ulp away from its zeros: 2 ulp of tanh in ``1 + tanh u`` (≈ 2 u of the
    result where ``tanh u`` ≈ +1) and NaN propagation."""
    y = _compiled_activation(name, ROW_POINTS)
    ref = NAMED[name].f(ROW_POINTS)
    if name in ("relu", "identity"):
        assert np.array_equal(y, ref) and np.array_equal(np.signbit(y), np.signbit(ref))
    else:
        big = np.abs(ref) > 1e-300
        tol = 2.0 if name == "tanh" else 4.0
        if name == "gelu":  # 1 + tanh u cancels for u ≲ −1: compare relative to z/2 instead
            assert np.all(np.abs(y - ref) <= 4e-16 * np.abs(ROW_POINTS) + 1e-300)
            big &= ROW_POINTS > -1.0
        assert ulps(y[big], ref[big]).max() <= tol
    assert np.isnan(_compiled_activation(name, np.array([np.nan, 1.0]))[0])


# --------------------------------------------------------------------------- bad input


def test_bad_inputs_raise_like_the_reference():
    cfg, model, X0, E = instance()
    with pytest.raises(ValueError, match="X0 must have shape 24×5"):
        fast_stack(model, X0[:-1])
    with pytest.raises(ValueError, match="X0 must be finite"):
        fast_stack(model, np.where(X0 > 1, np.nan, X0))
    with pytest.raises(ValueError, match="E must have shape"):
        fast_stack(model, X0, E[:, :2])
    with pytest.raises(TypeError, match="model must be a numerics.model.weights.Model"):
        fast_stack(cfg, X0)
    with pytest.raises(TypeError, match="params must be LayerParams"):
        fast_layer(cfg, model, X0)
    with pytest.raises(TypeError, match="config must be a numerics.model.weights.ModelConfig"):
        fast_layer(None, model.layers[0], X0)
    with pytest.raises(ValueError, match="X must have shape"):
        fast_layer(cfg, model.layers[0], X0.T)
    with pytest.raises(TypeError, match="X must be an array"):
        fast_layer(cfg, model.layers[0], "X0")
    with pytest.raises(TypeError, match="config must be"):
        fast_attention("cfg", model.layers[0], X0)
    with pytest.raises(ValueError, match="X must be finite"):
        fast_slow_path(cfg, model.layers[0], np.full_like(X0, np.inf))
    bad = model.layers[0].copy()
    bad.W1 = bad.W1[:, :2]
    with pytest.raises(ValueError, match="W1 must have shape"):
        fast_layer(cfg, bad, X0)


def test_user_activation_is_refused_with_the_numpy_path_named():
    mine = Activation("softsign", lambda z: z / (1 + np.abs(z)), lambda z: 1 / (1 + np.abs(z)) ** 2)
    cfg, model, X0, E = instance(sigma=mine)
    ref = stack(model, X0, E)  # the NumPy reference evaluates it
    assert np.all(np.isfinite(ref))
    for call in (lambda: fast_stack(model, X0, E), lambda: fast_layer(cfg, model.layers[0], X0)):
        with pytest.raises(
            ValueError, match=r"user activation 'softsign'.*numerics\.model\.layer\.stack"
        ):
            call()
    # the pieces without σ still run
    assert (
        rel_err(fast_attention(cfg, model.layers[0], X0), attention(cfg, model.layers[0], X0))
        <= RTOL
    )


def test_non_finite_output_raises_floating_point_error():
    cfg = ModelConfig(T=4, P=2, d=2, norm=False, sigma="identity", h=1.0)
    model = init_model(cfg, 150, 0, scale=40.0)  # grows ~1e3 per layer: overflows by layer ~110
    with pytest.raises(FloatingPointError, match="non-finite"):
        fast_stack(model, np.random.default_rng(0).standard_normal((4, 2)))
