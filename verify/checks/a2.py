"""A2 — cost of the slow path: exact FLOP model, checked against an instrumented reference run.

Claim: slow attention over ``N = T/P`` pooled tokens costs ``1/P²`` of fast attention over ``T``
tokens in the score and mixing terms (``4N²d`` vs ``4T²d`` FLOP); the whole slow path over the
whole fast layer lies between ``1/P²`` and ``1/P`` when ``3d(P − 1) ≥ 2m``.

Checked by running the NumPy reference (``kernels.increment`` and ``kernels.slow`` of
:mod:`numerics.model.kernels`) on arrays of a
counting ``ndarray`` subclass that records the operand shapes of every ``@`` (``np.matmul``) and the
element count of every other ufunc. Each product is attributed by its right operand: a tagged weight
(``Q, K, V, W1, W2, Qs, Ks, Vs``) makes it a projection/MLP product, an untagged (computed) operand
makes it a score or mixing product of the attention core. The counted FLOP (``2abc`` per product)
must equal :func:`numerics.model.cost.layer_flops` term by term, exactly (integers), and the measured
ratios are exact fractions. The count sees what the reference really multiplies, so a wrong model,
a missing product or an unpooled slow path makes it fail. The conclusion also checks the bracket
condition of the model itself over a grid of sizes (``T`` up to 4096, ``d`` up to 512, ``m`` up to
``4d``): the upper bound never fails, and the lower bound fails exactly where ``3d(P − 1) < 2m``.

Hypotheses, measured on the instance:

* ``slow_attention_on_pooled_tokens``: the slow path's attention products (score and mixing) have
  ``N = T/P`` token rows (read from an instrumented run of the slow path alone);
* ``slow_projections_outweigh_mlp``: ``3d(P − 1) ≥ 2m`` with ``d, m`` read off the MLP weight
  ``W1`` (d×m). This is the exact condition for the whole-layer lower bound (derived in
  :mod:`numerics.model.cost`: ``P²·slow − fast = 6Td²(P − 1) − 4Tdm``; the slow path has no MLP). The
  unconditional bracket is false: for ``P = 1``, for ``P = 2`` with ``m > 1.5d`` and for ``P = 3``
  with ``m > 3d`` (e.g. the common ``m = 4d``). The upper bound ``≤ 1/P`` needs nothing.

Negative controls: ``pooled=False`` (the slow attention on all ``T`` tokens of the block-mean-smoothed
state) gives an attention ratio of 1, not ``1/P²``; a wide MLP (``P = 2, m = 4d``; ``P = 3, m = 8d``;
``P = 1``) puts the whole-layer ratio below ``1/P²``.

Element-wise work (softmax, norms, tanh, pooling, gate) is reported from the same count (one FLOP per
output element of an element-wise ufunc, ``size_in − size_out`` per reduction) but is not part of
the verified model.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from fastslow.numerics.model import kernels
from fastslow.numerics.model.cost import layer_flops, layer_ratio, layer_ratio_lower_bound_holds
from fastslow.numerics.model.weights import SLOW_WEIGHTS, WEIGHT_NAMES, ModelConfig, init_layer

from ..claim import Claim, Conclusion, Control
from ..model_params import model_params
from ..params import Param
from ..verdict import Diagnostic

GRID = tuple(
    (T, P, d, k * d)
    for T in (8, 64, 256, 2048, 4096)
    for P in (2**i for i in range(13))
    if P <= T
    for d in (4, 16, 64, 128, 512)
    for k in (1, 2, 4)
)
"""Sizes ``(T, P, d, m)`` on which the model's bracket condition is checked: every power-of-two
``P ≤ T``, ``d`` from 4 to 512 (so ``d ≫ T`` occurs), ``m ∈ {d, 2d, 4d}``."""

PRODUCTS_FAST = 7
"""Products of the fast layer: 3 projections, scores, mixing, 2 MLP products."""
PRODUCTS_SLOW = 5
"""Products of the slow path: 3 projections, scores, mixing."""

# --------------------------------------------------------------------------- the instrumented run


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
            CountingArray.log.append(
                ("matmul", np.shape(raw[0]), np.shape(raw[1]), getattr(b, "tag", None))
            )
        elif method == "__call__":
            CountingArray.log.append((ufunc.__name__, method, int(np.size(result))))
        elif method == "reduce":
            CountingArray.log.append(
                (ufunc.__name__, method, int(np.size(raw[0]) - np.size(result)))
            )
        if isinstance(result, np.ndarray):
            return result.view(CountingArray)
        return result

    def __array_function__(
        self, func, types, args, kwargs
    ):  # np.where, np.repeat, ...: keep wrapping
        result = super().__array_function__(func, types, args, kwargs)
        return result.view(CountingArray) if isinstance(result, np.ndarray) else result


def logged_products(fn, *args) -> list:
    """Run ``fn(*args)`` with logging; the log entries."""
    CountingArray.log = []
    fn(*args)
    log, CountingArray.log = CountingArray.log, []
    return log


def count(fn, *args) -> dict:
    """Run ``fn(*args)`` with logging; FLOP by category and the number of products."""
    out = {"qkv": 0, "slow_qkv": 0, "mlp": 0, "core": 0, "elementwise": 0, "products": 0}
    for entry in logged_products(fn, *args):
        if entry[0] != "matmul":
            out["elementwise"] += entry[2]
            continue
        (a, b), (b2, c), tag = entry[1], entry[2], entry[3]
        if b != b2:
            raise RuntimeError(f"inconsistent product shapes {entry[1]} @ {entry[2]}")
        flop = 2 * a * b * c
        out["products"] += 1
        if tag in ("Q", "K", "V"):
            out["qkv"] += flop
        elif tag in SLOW_WEIGHTS:
            out["slow_qkv"] += flop
        elif tag in ("W1", "W2"):
            out["mlp"] += flop
        else:
            out["core"] += flop
    return out


def _tagged(p):
    """``p`` with every weight viewed as a :class:`CountingArray` tagged with its name."""
    for name in WEIGHT_NAMES:
        arr = getattr(p, name).view(CountingArray)
        arr.tag = name
        setattr(p, name, arr)
    return p


# --------------------------------------------------------------------------- the instance


def unpooled_slow(cfg: ModelConfig, p, X):
    """The hypothesis-violating variant: slow attention over all T tokens of ``UBX`` (no pooling)."""
    return kernels.slow(cfg.replace(P=1), p, kernels.upsample(kernels.block_mean(X, cfg.P), cfg.P))


class Instance:
    """One tagged random layer (gate 1), a counting input ``X`` and the slow path to count
    (pooled, or :func:`unpooled_slow`)."""

    def __init__(self, p: dict, seed: int):
        self.p = p
        self.cfg = ModelConfig.from_params(p)
        w_seed, x_seed = np.random.SeedSequence(seed).spawn(2)
        self.layer = _tagged(init_layer(self.cfg, np.random.default_rng(w_seed), gate=1.0))
        self.X = (
            np.random.default_rng(x_seed)
            .standard_normal((self.cfg.T, self.cfg.d))
            .view(CountingArray)
        )
        self.slow_fn = kernels.slow if p["pooled"] else unpooled_slow


# --------------------------------------------------------------------------- hypotheses


def slow_attention_rows(inst) -> list[int]:
    """The token-row counts of the slow path's attention-core (untagged) products, from an
    instrumented run of the slow path alone."""
    cfg = inst.cfg
    return sorted(
        {
            e[1][0]
            for e in logged_products(inst.slow_fn, cfg, inst.layer, inst.X)
            if e[0] == "matmul" and e[3] is None
        }
    )


def mlp_margin(inst) -> int:
    """``3d(P − 1) − 2m`` from the parameters ``d``, ``m``, ``P``: the whole-layer lower bound
    holds iff it is ≥ 0 (:mod:`numerics.model.cost`). Decided from the input; the instance's
    ``W1`` must have the parameters' shape ``d×m`` (the second measurement, through the
    implementation), else ``RuntimeError`` (outcome ``error``, never a quiet exit 4)."""
    d, m = inst.p["d"], inst.p["m"]
    built = tuple(int(x) for x in np.shape(inst.layer.W1))
    if built != (d, m):
        raise RuntimeError(
            f"the instance's W1 is {built[0]}×{built[1]}, the parameters say {d}×{m}"
        )
    return 3 * d * (inst.p["P"] - 1) - 2 * m


# --------------------------------------------------------------------------- conclusion parts


def _frac(x: Fraction) -> str:
    """``x`` written ``numerator/denominator``."""
    return f"{x.numerator}/{x.denominator}"


def bracket_on_grid() -> dict:
    """The model's whole-layer ratio on :data:`GRID`: upper-bound failures, lower-bound failures,
    and the sizes where the lower bound and the condition ``3d(P − 1) ≥ 2m`` disagree."""
    upper, lower, mismatch = [], [], []
    for T, P, d, m in GRID:
        r = layer_ratio(T, P, d, m)
        if r > Fraction(1, P):
            upper.append((T, P, d, m))
        low_ok = r >= Fraction(1, P * P)
        if not low_ok:
            lower.append((T, P, d, m))
        if low_ok != layer_ratio_lower_bound_holds(P, d, m):
            mismatch.append((T, P, d, m))
    return {"upper": upper, "lower": lower, "mismatch": mismatch}


def instrumented_runs(inst) -> dict:
    """The counts (:func:`count`) of the fast layer alone (``slow=False``), of the slow path alone
    and of the whole layer, on the instance's tagged layer and input."""
    cfg, lp, X = inst.cfg, inst.layer, inst.X
    return {
        "fast": count(kernels.increment, cfg.replace(slow=False), lp, X, None),
        "slow": count(inst.slow_fn, cfg, lp, X),
        "whole": count(kernels.increment, cfg, lp, X, None),
    }


def counted_flop(fast: dict, slow: dict) -> dict:
    """The counted product FLOP by piece of :func:`numerics.model.cost.layer_flops`: fast
    projections, fast attention core, MLP, slow projections, slow attention core, and the fast
    layer and slow path totals."""
    counted = {
        "fast_qkv": fast["qkv"],
        "fast_attention_core": fast["core"],
        "mlp": fast["mlp"],
        "slow_qkv": slow["slow_qkv"],
        "slow_attention_core": slow["core"],
    }
    counted["fast_layer"] = counted["fast_qkv"] + counted["fast_attention_core"] + counted["mlp"]
    counted["slow_path"] = counted["slow_qkv"] + counted["slow_attention_core"]
    return counted


def ratios(counted: dict) -> tuple[Fraction, Fraction]:
    """The exact ratios slow / fast of the attention core and of the whole slow path over the
    whole fast layer."""
    att = Fraction(counted["slow_attention_core"], counted["fast_attention_core"])
    lay = Fraction(counted["slow_path"], counted["fast_layer"])
    return att, lay


def ratio_figures(att: Fraction, lay: Fraction, P: int) -> dict:
    """The two ratios as floats and exact fractions, and scaled by ``P²`` (and ``P``)."""
    return {
        "attention_ratio": float(att),
        "attention_ratio_exact": _frac(att),
        "attention_ratio_times_P2": float(att * P * P),
        "layer_ratio": float(lay),
        "layer_ratio_exact": _frac(lay),
        "layer_ratio_times_P2": float(lay * P * P),
        "layer_ratio_times_P": float(lay * P),
    }


def elementwise_figures(runs: dict, counted: dict, P: int) -> dict:
    """The product counts, the element-wise FLOP (not part of the verified model) and the
    whole-layer ratio with the element-wise work added, against the bracket ``[1/P², 1/P]``."""
    fast, slow = runs["fast"], runs["slow"]
    lay_all = Fraction(
        counted["slow_path"] + slow["elementwise"], counted["fast_layer"] + fast["elementwise"]
    )
    return {
        "products_fast": fast["products"],
        "products_slow": slow["products"],
        "elementwise_flop_fast": fast["elementwise"],
        "elementwise_flop_slow": slow["elementwise"],
        "layer_ratio_with_elementwise": float(lay_all),
        "layer_ratio_with_elementwise_in_bounds": bool(
            Fraction(1, P * P) <= lay_all <= Fraction(1, P)
        ),
    }


def grid_figures(grid: dict) -> dict:
    """The bracket condition on :data:`GRID` (:func:`bracket_on_grid`): sizes, failures of each
    bound, the failing ``(P, m/d)`` and the sizes where the condition misjudges the bound."""
    return {
        "grid_configurations": len(GRID),
        "grid_upper_bound_failures": len(grid["upper"]),
        "grid_lower_bound_failures": len(grid["lower"]),
        "grid_lower_bound_failing_(P,m/d)": sorted(
            {(P_, m_ // d_) for _, P_, d_, m_ in grid["lower"]}
        ),
        "grid_condition_mismatches": len(grid["mismatch"]),
    }


def product_parts(runs: dict) -> dict:
    """The number of products of the fast layer and of the slow path, and the whole layer as
    their sum (products and attention-core FLOP)."""
    fast, slow, whole = runs["fast"], runs["slow"], runs["whole"]
    additive = (
        whole["products"] == fast["products"] + slow["products"]
        and whole["core"] == fast["core"] + slow["core"]
    )
    return {
        "product_counts": Diagnostic(
            (fast["products"], slow["products"]) == (PRODUCTS_FAST, PRODUCTS_SLOW),
            [fast["products"], slow["products"]],
            f"[fast, slow] products = [{PRODUCTS_FAST}, {PRODUCTS_SLOW}]",
        ),
        "whole_layer_is_fast_plus_slow": Diagnostic(
            additive,
            [whole["products"], fast["products"] + slow["products"]],
            "whole-layer products (and core FLOP) = fast + slow",
        ),
    }


def ratio_parts(att: Fraction, lay: Fraction, P: int) -> dict:
    """The attention ratio is ``1/P²`` and the layer ratio lies in ``[1/P², 1/P]``, exactly."""
    lo, hi = Fraction(1, P * P), Fraction(1, P)
    return {
        "attention_ratio_one_over_P2": Diagnostic(att == lo, _frac(att), f"= 1/{P * P} exactly"),
        "layer_ratio_at_most_one_over_P": Diagnostic(lay <= hi, _frac(lay), f"≤ 1/{P} exactly"),
        "layer_ratio_at_least_one_over_P2": Diagnostic(
            lay >= lo, _frac(lay), f"≥ 1/{P * P} exactly"
        ),
    }


# --------------------------------------------------------------------------- the claim


def wide_mlp_control(name: str, P: int, m: int, meaning: str) -> Control:
    """A negative control with ``d = 6``, ``T = 12·P`` and an MLP of width ``m`` too wide for the
    whole-layer lower bound (``3d(P − 1) < 2m``)."""
    return Control(
        name,
        {"T": 12 * P, "P": P, "d": 6, "m": m},
        breaks="slow_projections_outweigh_mlp",
        meaning=meaning,
        seed=3,
    )


class A2(Claim):
    id = "A2"
    title = "Cost of the slow path"
    abstract = "a slow path of full attention over T/P pooled tokens (P²× cheaper per layer)"
    statement = (
        "Slow attention over N = T/P pooled tokens costs 1/P² of fast attention over T "
        "tokens in score and mixing FLOPs (4N²d vs 4T²d); the whole layer lies between "
        "1/P² and 1/P when 3d(P−1) ≥ 2m (finding: the lower bound fails otherwise, e.g. "
        "P = 2, m = 4d)."
    )
    params = {
        **model_params(
            T=dict(default=48, high=4096), P=dict(high=4096), d=dict(default=6, high=512)
        ),
        "m": Param(6, "MLP width", low=1, high=2048),
        "pooled": Param(
            True,
            "the slow attention runs on the N pooled tokens (False: on all T "
            "tokens of the block-mean-smoothed state)",
        ),
        **model_params(
            mask=dict(
                meaning="fast attention mask (the reference computes dense scores whatever the "
                "mask)",
                choices=("causal", "block_causal", "block_bidirectional"),
            )
        ),
    }
    hypotheses = {
        "slow_attention_on_pooled_tokens": "every attention-core product of the slow path has N = T/P token rows (instrumented run)",
        "slow_projections_outweigh_mlp": "3d(P − 1) ≥ 2m, d×m the shape of W1 (exact condition of the whole-layer lower bound)",
    }
    hypothesis_sources = {
        "slow_attention_on_pooled_tokens": "implementation",
        "slow_projections_outweigh_mlp": "input",
    }
    conclusion = {
        "counted_flop_equal_model": "every counted product FLOP equals numerics.model.cost.layer_flops (exact integers)",
        "product_counts": f"the fast layer executes {PRODUCTS_FAST} products, the slow path {PRODUCTS_SLOW}",
        "whole_layer_is_fast_plus_slow": "the whole layer's products and core FLOP are the fast layer's plus the slow path's",
        "attention_ratio_one_over_P2": "slow / fast attention-core FLOP = 1/P² (exact fraction)",
        "layer_ratio_at_most_one_over_P": "slow path / fast layer FLOP ≤ 1/P (exact fraction)",
        "layer_ratio_at_least_one_over_P2": "slow path / fast layer FLOP ≥ 1/P² (exact fraction)",
        "bracket_condition_exact_on_grid": "on the size grid the model's upper bound never fails and the lower bound holds iff "
        "3d(P − 1) ≥ 2m",
    }
    controls = (
        Control(
            "unpooled_slow_attention",
            {"pooled": False},
            breaks="slow_attention_on_pooled_tokens",
            meaning="slow attention over all T tokens costs as much as fast attention (ratio 1)",
            seed=3,
        ),
        wide_mlp_control(
            "wide_mlp_P2", 2, 24, "m = 4d at P = 2: the whole-layer ratio falls below 1/P²"
        ),
        wide_mlp_control(
            "wide_mlp_P3", 3, 48, "m = 8d at P = 3: the whole-layer ratio falls below 1/P²"
        ),
        wide_mlp_control(
            "no_pooling_P1",
            1,
            6,
            "P = 1: the slow path costs its projections and attention but no MLP, below 1/P² = 1",
        ),
    )
    key_figures = (
        "attention_ratio_times_P2",
        "layer_ratio_times_P2",
        "grid_lower_bound_failures",
        "grid_configurations",
    )

    def memory_bytes(self, p):
        """The reference forward on counting arrays: a few ``T × T`` score and weight arrays,
        ``T × m`` MLP activations and ``T × d`` states (counted 8, 6 and 6 float64 arrays), and
        the weights; not the generic ``T × T × d`` count (the reference never builds one)."""
        T, d, m = p["T"], p["d"], p["m"]
        return 8 * (8 * T * T + 6 * T * (m + d) + 16 * d * (d + m))

    instance = Instance

    def diagnose(self, inst):
        cfg = inst.cfg
        rows = slow_attention_rows(inst)
        margin = mlp_margin(inst)
        return {
            "slow_attention_on_pooled_tokens": Diagnostic(
                rows == [cfg.N],
                {"token_rows": rows, "N": cfg.N},
                "token rows of the slow path's attention-core products = [N]",
            ),
            "slow_projections_outweigh_mlp": Diagnostic(
                margin >= 0, margin, "3d(P − 1) − 2m ≥ 0 with (d, m) = shape of W1"
            ),
        }

    def conclude(self, inst):
        cfg, P = inst.cfg, inst.cfg.P
        runs = instrumented_runs(inst)
        counted = counted_flop(runs["fast"], runs["slow"])
        model = layer_flops(cfg.T, P, cfg.d, cfg.m)
        mismatches = {k: [c, model[k]] for k, c in counted.items() if c != model[k]}
        att, lay = ratios(counted)
        grid = bracket_on_grid()
        figures = {
            **ratio_figures(att, lay, P),
            "counted_flop": counted,
            "model_flop": {k: model[k] for k in counted},
            "model_mismatches": mismatches,
            **elementwise_figures(runs, counted, P),
            **grid_figures(grid),
        }
        parts = {
            "counted_flop_equal_model": Diagnostic(
                not mismatches, mismatches, "{piece: [counted, model]} of the mismatches; none"
            ),
            **product_parts(runs),
            **ratio_parts(att, lay, P),
            "bracket_condition_exact_on_grid": Diagnostic(
                not grid["upper"] and not grid["mismatch"],
                [len(grid["upper"]), len(grid["mismatch"])],
                f"[upper-bound failures, lower bound ≠ condition] over {len(GRID)} sizes = [0, 0]",
            ),
        }
        notes = [
            "FLOP counted from the operand shapes of every matmul the reference executes "
            "(2abc each); dense scores whatever the mask, as the reference computes them",
            "finding: the whole-layer bracket [1/P², 1/P] is not unconditional; the lower bound "
            f"holds iff 3d(P−1) ≥ 2m (the slow path has no MLP): {len(grid['lower'])}/{len(GRID)} "
            "grid sizes fail it, all with P = 1, or P = 2 and m ≥ 2d; T and d ≫ T play no role",
        ]
        return Conclusion(
            parts,
            figures,
            tolerance={"flop_count_abs": 0, "ratio": "exact (rational arithmetic)"},
            notes=notes,
        )


CLAIM = A2()
