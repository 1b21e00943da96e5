"""Every parameter's gradient of the language model's loss against finite differences.

Oracle: Richardson-extrapolated central differences ``(4·D(δ/2) − D(δ))/3`` of
:meth:`numerics.lm.network.Network.loss` along each coordinate, ``δ = 1e-4`` on O(1) parameters
(error ``O(δ⁴) + O(u/δ)`` ≈ 1e-12). Tolerance: ``|fd − analytic| ≤ 1e-7·max(‖∇‖_∞, 1e-3)`` per
parameter array. Three blocks (with two, the only slow output used is block 0's
one-entry softmax, and Qs, Ks get exactly zero gradient). Every entry of every array is checked (embedding, head, the eight weights of
each layer, each gate), with gates open (every slow gradient non-zero) and at 0.
"""

import numpy as np
import pytest

from fastslow.numerics.lm.network import Network
from fastslow.numerics.lm.params import LMConfig, init_params

STEP = 1e-4
TOL = 1e-7


def fd(net, p, w, name, i):
    def f(h):
        q = dict(p)
        q[name] = p[name].copy()
        q[name].reshape(-1)[i] += h
        return net.loss(q, w)

    def D(h):
        return (f(h) - f(-h)) / (2 * h)

    return (4 * D(STEP / 2) - D(STEP)) / 3


@pytest.mark.parametrize(
    "mask, gates",
    [("causal", (0.6, -0.8)), ("block_causal", (0.9, 0.4)), ("causal", (0.0, 0.0))],
)
def test_every_parameter_gradient_matches_finite_differences(mask, gates):
    cfg = LMConfig(vocab=7, T=12, P=4, d=4, m=5, L=2, kind="coupled", fast_mask=mask)
    p = init_params(cfg, 11)
    for l, g in enumerate(gates):
        p[f"{l}.g"] = np.array(g)
    w = np.random.default_rng(2).integers(0, cfg.vocab, (2, cfg.T + 1))
    net = Network(cfg)
    _, grads = net.loss_and_grad(p, w)
    assert set(grads) == set(p)
    for name, arr in p.items():
        an = np.asarray(grads[name]).reshape(-1)
        num = np.array([fd(net, p, w, name, i) for i in range(arr.size)])
        scale = max(np.abs(an).max(), 1e-3)
        assert np.abs(num - an).max() <= TOL * scale, name
        if gates[0] and name.endswith((".Qs", ".Ks", ".Vs")):
            assert np.abs(an).max() > 1e-6, name  # the check is not vacuous
        if not gates[0] and name.endswith((".Qs", ".Ks", ".Vs")):
            assert not np.any(an), name  # exactly zero at g = 0 (claim A3)
