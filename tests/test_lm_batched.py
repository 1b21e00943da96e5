"""The batched stack of numerics.lm.batched against the per-sequence reference.

Oracles: :func:`numerics.model.layer.stack` (forward) and :func:`numerics.model.autodiff.stack_vjp`
(input cotangent and every layer's parameter gradient, summed over the batch) on each sequence.
The batched path runs the same operations on stacked arrays; the tolerance 1e-12 relative to the
largest entry leaves room for BLAS blocking the stacked products differently (measured: equal to
the last bit on these sizes).
"""

import numpy as np
import pytest

from fastslow.numerics.lm.batched import layer_backward
from fastslow.numerics.lm.network import Network, flops_per_token
from fastslow.numerics.lm.params import LMConfig, init_params, to_model
from fastslow.numerics.model.autodiff import stack_vjp
from fastslow.numerics.model.layer import stack
from fastslow.numerics.model.weights import WEIGHT_NAMES

RTOL = 1e-12

CASES = [
    ("coupled", "causal", (0.7, -0.4)),
    ("coupled", "block_causal", (0.3, 1.1)),
    ("frozen", "causal", (0.0, 0.0)),
    ("dense", "causal", (0.0, 0.0)),
    ("coupled", "block_bidirectional", (0.5, 0.5)),
]


def instance(kind, mask, gates, B=3):
    cfg = LMConfig(vocab=11, T=12, P=4, d=5, m=7, L=2, kind=kind, fast_mask=mask)
    p = init_params(cfg, 3)
    for l, g in enumerate(gates):
        p[f"{l}.g"] = np.array(g)
    windows = np.random.default_rng(4).integers(0, cfg.vocab, (B, cfg.T + 1))
    return cfg, p, windows


def close(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() <= RTOL * max(np.abs(b).max(), 1.0)


@pytest.mark.parametrize("kind, mask, gates", CASES)
def test_batched_forward_and_vjp_equal_the_reference_per_sequence(kind, mask, gates):
    cfg, p, w = instance(kind, mask, gates)
    net = Network(cfg)
    caches, XL = net.forward(p, w)
    model = to_model(cfg, p)
    G = np.random.default_rng(5).standard_normal(XL.shape)
    GX, grads = G, [None] * cfg.L
    for l in range(cfg.L - 1, -1, -1):
        GX, grads[l] = layer_backward(net.mc, net._layer(p, l), float(p[f"{l}.g"]), caches[l], GX)
    total = [{n: 0.0 for n in (*WEIGHT_NAMES, "g")} for _ in range(cfg.L)]
    for b in range(w.shape[0]):
        X0 = p["emb"][w[b, :-1]]
        assert close(XL[b], stack(model, X0))
        GX0, ref = stack_vjp(model, X0, G[b])
        assert close(GX[b], GX0)
        for l in range(cfg.L):
            for n in total[l]:
                total[l][n] = total[l][n] + np.asarray(getattr(ref[l], n))
    for l in range(cfg.L):
        for n, val in total[l].items():
            assert close(grads[l][n], val), (l, n)


def test_frozen_model_computes_the_dense_function_exactly():
    """With every gate at 0 the slow path adds exactly 0: frozen and dense agree bit for bit."""
    _, p, w = instance("frozen", "causal", (0.0, 0.0))
    cfg_f, cfg_d = (
        LMConfig(vocab=11, T=12, P=4, d=5, m=7, L=2, kind=k) for k in ("frozen", "dense")
    )
    lf, gf = Network(cfg_f).loss_and_grad(p, w)
    ld, gd = Network(cfg_d).loss_and_grad(p, w)
    assert lf == ld
    for k in gd:
        if not k.endswith((".Qs", ".Ks", ".Vs", ".g")):
            assert np.array_equal(gf[k], gd[k]), k
    assert all(not np.any(gf[f"{l}.{n}"]) for l in range(2) for n in ("Qs", "Ks", "Vs"))
    assert gd["0.g"] == 0.0 and gf["0.g"] != 0.0  # the frozen gate still has its gradient


def test_flop_floor_counts_matrix_parameters_and_attention():
    dense = flops_per_token(LMConfig(vocab=10, T=8, P=4, d=2, m=3, L=1, kind="dense"))
    assert dense["params"] == 3 * 4 + 2 * 6 + 20 and dense["attention"] == 4 * 8 * 2
    assert dense["total"] == 6 * 44 + 3 * 64
    slow = flops_per_token(LMConfig(vocab=10, T=8, P=4, d=2, m=3, L=1, kind="coupled"))
    assert slow["total"] == dense["total"] + 6 * 12 / 4 + 3 * 4 * 2 * 2 / 4
