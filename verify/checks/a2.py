"""A2 — cost of the slow path: exact FLOP model, checked against an instrumented reference run.

Statement (SPEC A2): slow attention over ``N = T/P`` pooled tokens costs ``1/P²`` of fast attention
over ``T`` tokens in the score and mixing terms (``4N²d`` vs ``4T²d`` FLOP); the whole layer (slow
path over fast layer) lies between ``1/P²`` and ``1/P``.

Checked by: running the NumPy reference (``numerics.layer._increment`` and ``_slow``) on arrays of a
counting ``ndarray`` subclass that records the operand shapes of every ``@`` (``np.matmul``) and the
element count of every other ufunc. Each product is attributed by its right operand: a tagged weight
(``Q, K, V, W1, W2, Qs, Ks, Vs``) makes it a projection/MLP product, an untagged (computed) operand
makes it a score or mixing product of the attention core. The counted FLOP (``2abc`` per product)
must equal :func:`numerics.cost.layer_flops` term by term, exactly (integers), and the measured
ratios are exact fractions. This count is independent of the model: it sees what the reference
really multiplies, so a wrong model, a missing product, or an unpooled slow path makes it fail.

Hypotheses: the slow attention runs on the pooled tokens (``pooled=True``), and, for the whole-layer
lower bound, ``3d(P − 1) ≥ 2m`` (exact condition, derived in :mod:`numerics.cost`; the slow path has
no MLP). The upper bound ``≤ 1/P`` needs nothing. SPEC states the whole-layer bracket without the
condition: it is false for ``P = 1``, for ``P = 2`` with ``m > 1.5d`` and for ``P = 3`` with
``m > 3d`` (e.g. the common ``m = 4d``). Negative controls: ``pooled=False`` (the slow attention on
all ``T`` tokens of the block-mean-smoothed state) gives an attention ratio of 1, not ``1/P²``;
``m = 4d, P = 2`` puts the whole-layer ratio below ``1/P²``.

Element-wise work (softmax, norms, tanh, pooling, gate) is reported from the same count (one FLOP per
output element of an element-wise ufunc, ``size_in − size_out`` per reduction) but is not part of
the verified model.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from numerics.cost import layer_flops, layer_ratio_lower_bound_holds
from numerics.layer import _increment, _slow
from numerics.model import WEIGHT_NAMES, ModelConfig, init_layer
from numerics.pooling import _block_mean, _upsample

from . import CheckResult

DEFAULTS = {"T": 48, "P": 4, "d": 6, "m": 6, "pooled": True, "mask": "causal"}

LIMITS = {"T": (1, 4096), "P": (1, 4096), "d": (1, 512), "m": (1, 2048)}
"""Bounds that keep a user's instance small enough to finish in seconds (``fastslow check`` rejects values outside them)."""

SLOW_NAMES = ("Qs", "Ks", "Vs")


class CountingArray(np.ndarray):
    """An ``ndarray`` whose ufuncs (``@`` included) are logged into the class-level ``log``.

    ``log`` entries: ``("matmul", a_shape, b_shape, right_tag)`` or ``(ufunc_name, method, flop)``.
    Weights carry ``tag`` (their name); results never inherit it.
    """

    log: list = []
    tag = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raw = [np.asarray(x) if isinstance(x, CountingArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) for o in kwargs["out"])
        result = getattr(ufunc, method)(*raw, **kwargs)
        if ufunc is np.matmul and method == "__call__":
            b = inputs[1]
            CountingArray.log.append(("matmul", np.shape(raw[0]), np.shape(raw[1]),
                                      getattr(b, "tag", None)))
        elif method == "__call__":
            CountingArray.log.append((ufunc.__name__, method, int(np.size(result))))
        elif method == "reduce":
            CountingArray.log.append((ufunc.__name__, method,
                                      int(np.size(raw[0]) - np.size(result))))
        if isinstance(result, np.ndarray):
            return result.view(CountingArray)
        return result

    def __array_function__(self, func, types, args, kwargs):  # np.where, np.repeat, ...: keep wrapping
        result = super().__array_function__(func, types, args, kwargs)
        return result.view(CountingArray) if isinstance(result, np.ndarray) else result


def count(fn, *args) -> dict:
    """Run ``fn(*args)`` with logging; return FLOP by category and the number of products."""
    CountingArray.log = []
    fn(*args)
    log, CountingArray.log = CountingArray.log, []
    out = {"qkv": 0, "slow_qkv": 0, "mlp": 0, "core": 0, "elementwise": 0, "products": 0}
    for entry in log:
        if entry[0] != "matmul":
            out["elementwise"] += entry[2]
            continue
        (a, b), (b2, c), tag = entry[1], entry[2], entry[3]
        assert b == b2
        flop = 2 * a * b * c
        out["products"] += 1
        if tag in ("Q", "K", "V"):
            out["qkv"] += flop
        elif tag in SLOW_NAMES:
            out["slow_qkv"] += flop
        elif tag in ("W1", "W2"):
            out["mlp"] += flop
        else:
            out["core"] += flop
    return out


def _tagged(p):
    for name in WEIGHT_NAMES:
        arr = getattr(p, name).view(CountingArray)
        arr.tag = name
        setattr(p, name, arr)
    return p


def _unpooled_slow(cfg: ModelConfig, p, X):
    """The hypothesis-violating variant: slow attention over all T tokens of ``UBX`` (no pooling)."""
    return _slow(cfg.replace(P=1), p, _upsample(_block_mean(X, cfg.P), cfg.P))


def _frac(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def check(params: dict, seed: int) -> CheckResult:
    p = params
    if not isinstance(p["pooled"], bool):
        raise TypeError(f"pooled must be True or False, got {p['pooled']!r}")
    cfg = ModelConfig(T=p["T"], P=p["P"], d=p["d"], m=p["m"], mask=p["mask"])
    T, P, N, d, m = cfg.T, cfg.P, cfg.N, cfg.d, cfg.m
    w_seed, x_seed = np.random.SeedSequence(seed).spawn(2)
    lp = _tagged(init_layer(cfg, np.random.default_rng(w_seed), gate=1.0))
    X = np.random.default_rng(x_seed).standard_normal((T, d)).view(CountingArray)

    fast = count(_increment, cfg.replace(slow=False), lp, X, None)
    slow = count(_slow if p["pooled"] else _unpooled_slow, cfg, lp, X)
    whole = count(_increment, cfg, lp, X, None) if p["pooled"] else None

    model = layer_flops(T, P, d, m)
    counted = {
        "fast_qkv": fast["qkv"], "fast_attention_core": fast["core"], "mlp": fast["mlp"],
        "slow_qkv": slow["slow_qkv"], "slow_attention_core": slow["core"],
    }
    counted["fast_layer"] = counted["fast_qkv"] + counted["fast_attention_core"] + counted["mlp"]
    counted["slow_path"] = counted["slow_qkv"] + counted["slow_attention_core"]
    mismatches = {k: (c, model[k]) for k, c in counted.items() if c != model[k]}
    additive = whole is None or (whole["products"] == fast["products"] + slow["products"]
                                 and whole["core"] == fast["core"] + slow["core"])

    att = Fraction(counted["slow_attention_core"], counted["fast_attention_core"])
    lay = Fraction(counted["slow_path"], counted["fast_layer"])
    lo, hi = Fraction(1, P * P), Fraction(1, P)
    lay_all = Fraction(counted["slow_path"] + slow["elementwise"],
                       counted["fast_layer"] + fast["elementwise"])

    hypotheses = p["pooled"] and layer_ratio_lower_bound_holds(P, d, m)
    holds = (not mismatches) and additive and att == lo and lo <= lay <= hi
    figures = {
        "attention_ratio": float(att), "attention_ratio_exact": _frac(att),
        "attention_ratio_times_P2": float(att * P * P),
        "layer_ratio": float(lay), "layer_ratio_exact": _frac(lay),
        "layer_ratio_times_P2": float(lay * P * P), "layer_ratio_times_P": float(lay * P),
        "layer_ratio_ge_1_over_P2": lay >= lo, "layer_ratio_le_1_over_P": lay <= hi,
        "lower_bound_condition_3d(P-1)>=2m": layer_ratio_lower_bound_holds(P, d, m),
        "counted_flop": counted, "model_flop": {k: model[k] for k in counted},
        "model_mismatches": {k: list(v) for k, v in mismatches.items()},
        "products_fast": fast["products"], "products_slow": slow["products"],
        "elementwise_flop_fast": fast["elementwise"], "elementwise_flop_slow": slow["elementwise"],
        "layer_ratio_with_elementwise": float(lay_all),
        "layer_ratio_with_elementwise_in_bounds": bool(lo <= lay_all <= hi),
    }
    return CheckResult(
        id="A2", holds=bool(holds), hypotheses_hold=bool(hypotheses), figures=figures,
        params=dict(p), seed=seed,
        tolerance={"flop_count_abs": 0, "ratio": "exact (rational arithmetic)"},
        notes=["FLOP counted from the operand shapes of every matmul the reference executes "
               "(2abc each); dense scores whatever the mask, as the reference computes them",
               "whole-layer lower bound 1/P² holds iff 3d(P−1) ≥ 2m (the slow path has no MLP)"],
    )
