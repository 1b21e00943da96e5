"""Timing helpers: best-of-n CPU times (round-robin), and the A2 attention timing table.

Times are only ever compared within one run (ratios); no test asserts a time. Used by the A2
figure and by the ``fastslow bench`` sections.
"""

from __future__ import annotations

import time

import numpy as np

from fastslow.numerics.model import kernels
from fastslow.numerics.model.compiled import (
    compiled_pieces,
    fast_attention_unchecked,
    fast_slow_path_unchecked,
    warm_up,
)
from fastslow.numerics.model.weights import ModelConfig, init_model

A2_PS = (1, 2, 4, 8, 16, 32, 64)
"""Block sizes of the A2 timing table and figure."""


def interleaved_best(fns: dict, repeat: int = 5) -> dict:
    """Best CPU time (``time.process_time``) of each callable over ``repeat`` rounds, the arms
    interleaved round by round (one call each per round, after one warm call each), the order
    reversed every other round.

    Why CPU time, interleaving and the best: the machine is shared (load averages of 5–14 on 2
    cores were seen), and wall times then vary by 2–4× between neighbouring calls. CPU time does
    not count the time the process waits for a core; interleaving exposes every arm to the same
    load in every round (a burst of load hits all arms, not one), and reversing the order gives
    no arm the first or last place in every round; the best of the rounds is each arm's time
    least disturbed by what runs beside it. CPU time adds up every thread of the process, so a
    ratio of these times is only meaningful at a fixed thread count (:mod:`numerics.threads`,
    1 by default: with OpenBLAS' spinning threads a larger model was charged up to 7× a smaller
    one's time on a loaded machine). ``tests/test_timing.py`` checks that a ratio's decision is
    the same beside a busy process as without one.
    """
    for fn in fns.values():
        fn()
    best = {k: float("inf") for k in fns}
    order = list(fns)
    for r in range(repeat):
        for k in order if r % 2 == 0 else order[::-1]:
            t0 = time.process_time()
            fns[k]()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def layer_instance(T, P, d, mask="causal", L=1, seed=0):
    """A model of ``L`` layers (gate 0.5) and a standard normal state, for timing."""
    cfg = ModelConfig(T=T, P=P, d=d, mask=mask)
    model = init_model(cfg, L, seed, gate=0.5)
    X = np.random.default_rng(seed + 1).standard_normal((T, d))
    return cfg, model, X


def a2_attention_calls(T: int, d: int, Ps=A2_PS, paths=("numpy", "numba")) -> dict:
    """The calls the A2 timing table times, ``{(path, "fast"): f, (path, P): f}``: each ``f()``
    returns its result. Fast: ``A(X) n(X) V`` over ``T`` tokens (causal mask); slow, for each
    block size ``P``: pooling, norm, block-causal attention over ``N = T/P`` pooled tokens, causal
    up-sampling. ``"numpy"`` is the NumPy reference (:mod:`numerics.model.kernels`), ``"numba"``
    the compiled kernels without their checks; both on one seeded layer and state
    (:func:`layer_instance`), so the two paths compute the same arrays (to rounding)."""
    cfg, model, X = layer_instance(T, 1, d)
    p = model.layers[0]
    fns = {}
    for path in paths:
        if path == "numpy":

            def fast_call(c=cfg):
                Xn = kernels.normed(c, X)
                return kernels.kernel(c, Xn, p.Q, p.K, c.mask_array) @ (Xn @ p.V)

            fns[path, "fast"] = fast_call
            for P in Ps:
                fns[path, P] = lambda c=cfg.replace(P=P): kernels.slow(c, p, X)
        else:
            fns[path, "fast"] = lambda c=cfg, st=compiled_pieces(cfg): fast_attention_unchecked(
                c, p, X, st
            )
            for P in Ps:
                cP = cfg.replace(P=P)
                fns[path, P] = lambda c=cP, st=compiled_pieces(cP): fast_slow_path_unchecked(
                    c, p, X, st
                )
    return fns


def a2_attention_times(T: int, d: int, Ps=A2_PS, repeat: int = 5, paths=("numpy", "numba")) -> dict:
    """Best-of-``repeat`` CPU times (:func:`interleaved_best`) of the fast attention call and of
    the slow path call for each block size ``P`` (:func:`a2_attention_calls`). Returns
    ``{path: {"fast": t, "slow": [t_P for P in Ps]}}``.
    """
    warm_up()
    times = interleaved_best(a2_attention_calls(T, d, Ps, paths), repeat)
    return {
        path: {"fast": times[path, "fast"], "slow": [times[path, P] for P in Ps]} for path in paths
    }
