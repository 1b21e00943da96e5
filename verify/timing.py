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
    """Best CPU time (``time.process_time``) of each callable, timed round-robin: one call each per
    round, after one warm call each.

    Why CPU time and round-robin: the benchmark machine is shared (load averages of 5–6 on 2
    cores were seen), and wall times then vary by 2–4× between neighbouring calls. With one BLAS
    thread the process's CPU time equals its wall time on an idle machine but does not count the
    time it waits for a core; the round-robin order exposes all candidates to the same load. With
    several threads CPU time adds the threads up, on both sides of every ratio (floor included).
    """
    for fn in fns.values():
        fn()
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def layer_instance(T, P, d, mask="causal", L=1, seed=0):
    """A model of ``L`` layers (gate 0.5) and a standard normal state, for timing."""
    cfg = ModelConfig(T=T, P=P, d=d, mask=mask)
    model = init_model(cfg, L, seed, gate=0.5)
    X = np.random.default_rng(seed + 1).standard_normal((T, d))
    return cfg, model, X


def a2_attention_times(T: int, d: int, Ps=A2_PS, repeat: int = 5, paths=("numpy", "numba")) -> dict:
    """Wall times of the fast attention call and of the slow path call for each block size ``P``.

    Fast: ``A(X) n(X) V`` over T tokens (causal mask); slow: pooling, norm, block-causal attention
    over ``N = T/P`` pooled tokens, causal up-sampling. Returns ``{path: {"fast": t, "slow": [t_P]}}``.
    """
    warm_up()
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
    times = interleaved_best(fns, repeat)
    return {
        path: {"fast": times[path, "fast"], "slow": [times[path, P] for P in Ps]} for path in paths
    }
