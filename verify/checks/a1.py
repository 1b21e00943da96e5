"""A1 — timescale and causality of the block-causal slow path.

Statement: the slow input ``Slow_l(X)`` seen by token ``t`` is constant within each block (it
changes only at block boundaries, once per ``P`` tokens), and with a block-causal slow path and a
causal fast mask the stack is autoregressive: ``out_t`` does not depend on ``X_s`` for any
``s > t``, for any weights and any gate ``g ≠ 0``.

Checked by perturbing one input token at a time by an O(1) random row and recording
``dep[t, s] = max |Δ out_t|``. The future part (``s > t``) must be exactly zero (bitwise: masked
entries are exact zeros in every product), so the tolerance is 0; the diagonal must be non-zero
(otherwise the check is vacuous).

Hypotheses, decided independently of the model under test: the fast mask has no entry above the
diagonal (a named mask written from its definition in :mod:`verify.reference.layer`, a user mask
as given); the slow path's token-level mask (the block-level slow mask of the reference, shifted
by one block through the reference ``U_c``) lets token ``t`` see only blocks that end before
``t``; every gate is non-zero (the gates are drawn by the check). A model whose own mask or shift
is wrong therefore satisfies the hypotheses and fails the conclusion. The conclusion also checks
that the model computes the §1 layer (:func:`verify.against_reference.layer_part`: each layer
against the reference on the same input, within 64 units of round-off): a wrong score scale, a
wrong pooling or shift, a wrong norm or nonlinearity is a failure, even where causality survives.

Negative controls: v1's ``slow_mask="full"`` (block ``b`` sees blocks after ``b − 1`` through the
shifted slow output) and a bidirectional fast mask (leaks within blocks).
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.model.layer import slow_path, stack, stack_trajectory
from fastslow.numerics.model.weights import Model, ModelConfig, init_model, spread_gates

from ..against_reference import layer_part
from ..claim import Claim, Conclusion, Control
from ..model_params import model_params
from ..params import Param
from ..reference import layer as reference_layer
from ..systems import DepthFlow
from ..verdict import Diagnostic

# --------------------------------------------------------------------------- the instance


def dependence_matrix(
    model: Model, X0: np.ndarray, rng: np.random.Generator, size: float = 1.0
) -> np.ndarray:
    """``dep[t, s] = max_j |out_t(X0 + δ e_s) − out_t(X0)|_j`` for one random row ``δ`` per ``s``."""
    base = stack(model, X0)
    T = X0.shape[0]
    dep = np.zeros((T, T))
    for s in range(T):
        X = X0.copy()
        X[s] += size * rng.standard_normal(X0.shape[1])
        dep[:, s] = np.abs(stack(model, X) - base).max(axis=1)
    return dep


def slow_token_mask(cfg: ModelConfig) -> np.ndarray:
    """``M[t, s]``: token ``t``'s slow input may read token ``s`` (the reference's block-level slow
    mask composed with its one-block shift ``U_c`` and block pooling)."""
    return reference_layer.slow_token_mask(cfg.slow_mask, cfg.T, cfg.P)


def fast_mask(cfg: ModelConfig) -> np.ndarray:
    """The fast mask: a named one from the reference's definition, a user array as given."""
    if isinstance(cfg.mask, str):
        return reference_layer.named_mask(cfg.mask, cfg.T, cfg.P)
    return np.asarray(cfg.mask, dtype=bool)


class Instance:
    """A random model with a different non-zero gate per layer, an input ``X0`` and the random
    stream of the one-token perturbations. From a user :class:`~verify.systems.DepthFlow` the
    config, weights and gate magnitude are the flow's; the gates, input and perturbations are
    drawn from ``seed`` as for the built-in instance."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, d_seed, g_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        if system is None:
            self.cfg = ModelConfig.from_params(p)
            model = init_model(
                self.cfg, p["L"], w_seed, scale=p["scale"], slow_scale=p["slow_scale"]
            )
            gate, L = p["gate"], p["L"]
        else:
            self.cfg, model, gate, L = system.config, system.model(), system.gate, system.L
        # a different non-zero gate per layer, of magnitude ~ gate
        gates = spread_gates(gate, 0.5, L, np.random.default_rng(g_seed))
        self.model = model.with_gates(gates)
        self.gates = gates
        self.X0 = np.random.default_rng(x_seed).standard_normal((self.cfg.T, self.cfg.d))
        self.perturb_rng = np.random.default_rng(d_seed)


# --------------------------------------------------------------------------- hypotheses


def fast_future_entries(cfg: ModelConfig) -> int:
    """The number of fast-mask entries ``(t, s)`` with ``s > t`` (:func:`fast_mask`)."""
    return int(np.triu(fast_mask(cfg), k=1).sum())


def slow_late_entries(cfg: ModelConfig) -> int:
    """The number of slow token-mask entries ``(t, s)`` with ``s`` at or after the start of
    ``t``'s block (:func:`slow_token_mask`)."""
    slow = slow_token_mask(cfg)
    block_start = (np.arange(cfg.T) // cfg.P) * cfg.P
    return int(sum(slow[t, block_start[t] :].sum() for t in range(cfg.T)))


# --------------------------------------------------------------------------- conclusion parts


def dependence_figures(dep: np.ndarray) -> dict:
    """The largest future (``s > t``) and past dependence of ``dep``, the smallest diagonal one,
    and the number of future pairs with any dependence."""
    future = np.triu(dep, k=1)
    return {
        "max_future_dependence": float(future.max()),
        "future_pairs_with_dependence": int(np.count_nonzero(future > 0)),
        "min_past_diagonal_dependence": float(np.diag(dep).min()),
        "max_past_dependence": float(np.tril(dep).max()),
    }


def leak_figures(dep: np.ndarray) -> dict:
    """When some output depends on a later input: the first such pair (by output token, then
    input token) and the leaking output tokens; else nothing."""
    leaks = np.argwhere(np.triu(dep, k=1) > 0)
    if not len(leaks):
        return {}
    t, s = leaks[np.lexsort((leaks[:, 1], leaks[:, 0]))][0]
    return {
        "first_leak": {
            "output_token": int(t),
            "later_input_token": int(s),
            "dependence": float(dep[t, s]),
        },
        "leaking_output_tokens": sorted({int(t) for t, _ in leaks}),
    }


def slow_input_spread(model: Model, X0: np.ndarray) -> tuple[float, float]:
    """Along the trajectory from ``X0``: the largest spread of the slow input within a block
    (``max |Slow_l(X_l)_t − Slow_l(X_l)_{first token of t's block}|``) and the largest slow input
    of the first block, over all layers."""
    cfg = model.config
    traj = stack_trajectory(model, X0)
    within, first_block = 0.0, 0.0
    for l, lp in enumerate(model.layers):
        S = slow_path(cfg, lp, traj[l]).reshape(cfg.N, cfg.P, cfg.d)
        within = max(within, float(np.abs(S - S[:, :1]).max()))
        first_block = max(first_block, float(np.abs(S[0]).max()))
    return within, first_block


# --------------------------------------------------------------------------- the claim


class A1(Claim):
    id = "A1"
    title = "Timescale and causality"
    abstract = (
        "the slow variable y evolves at one update per P tokens ... enforced structurally "
        "by causal block-mean pooling"
    )
    statement = (
        "The slow input of token t changes only at block boundaries, and with a "
        "block-causal slow path and a causal fast mask the model is autoregressive: "
        "∂out_t/∂X_s = 0 for all s > t, any weights, any g ≠ 0."
    )
    params = {
        **model_params(
            T=16,
            P=None,
            d=None,
            L=3,
            mask=None,
            slow_mask=None,
            gate=dict(
                default=0.7,
                meaning="gate magnitude (each layer's gate is gate·(1 ± 0.5·u))",
                low=-1e3,
                high=1e3,
            ),
            scale=dict(high=1e3),
            slow_scale=dict(high=1e3),
        ),
        "perturbation": Param(1.0, "size of the one-token input perturbation", low=1e-8, high=1e3),
    }
    hypotheses = {
        "fast_mask_causal": "the fast mask has no entry above the diagonal (count of s > t entries = 0)",
        "slow_path_sees_only_completed_blocks": "the slow path's token-level mask (block-level mask, shifted one block by U_c) "
        "has no entry with s ≥ the start of t's block",
        "gates_nonzero": "every layer's gate is non-zero (the slow path is switched on)",
    }
    conclusion = {
        "no_future_dependence": "max_{s>t} |Δ out_t| = 0 (bitwise)",
        "slow_input_block_constant": "the slow input is the same for every token of a block (bitwise)",
        "check_not_vacuous": "every out_t depends on X_t (min diagonal dependence > 0)",
        "model_computes_reference_layer": "each layer of the model equals the reference §1 layer "
        "on the same input within 64 units of round-off",
    }
    hypothesis_sources = {
        "fast_mask_causal": "reference",
        "slow_path_sees_only_completed_blocks": "reference",
        "gates_nonzero": "input",
    }
    controls = (
        Control(
            "full_slow_mask",
            {"slow_mask": "full"},
            breaks="slow_path_sees_only_completed_blocks",
            meaning="v1's slow attention over all pooled tokens: later blocks leak into earlier ones",
            seed=7,
        ),
        Control(
            "bidirectional_fast_mask",
            {"mask": "block_bidirectional"},
            breaks="fast_mask_causal",
            meaning="a fast mask that attends within the whole block leaks later tokens of the block",
            seed=7,
        ),
    )
    key_figures = (
        "max_future_dependence",
        "slow_input_within_block_variation",
        "min_past_diagonal_dependence",
    )

    def work(self, p):
        """The base stack and one stack per perturbed token: ``(T + 1)·L`` layer evaluations of
        ``T²·(d + 24)`` attention units each."""
        T, d, L = p["T"], p["d"], p["L"]
        layers = (T + 1) * L
        return {"start": 1, "layer": layers, "attention": layers * T * T * (d + 24)}

    instance = Instance
    systems = (DepthFlow,)
    system_terms = {
        "DepthFlow": "a causal fast mask (mask='causal' or 'block_causal', or a boolean mask with "
        "no entry above the diagonal: fast_mask_causal), slow_mask='blockcausal' (the default; "
        "'full' lets a token see its own and later blocks: slow_path_sees_only_completed_blocks) "
        "and a gate that is not 0 (gates_nonzero: the default gate=0.0 switches the slow path "
        "off, so pass e.g. gate=0.5)"
    }

    def build_system(self, p, seed, system):
        return Instance(p, seed, system)

    def diagnose(self, inst):
        fast_future = fast_future_entries(inst.cfg)
        slow_late = slow_late_entries(inst.cfg)
        zero_gates = int(np.sum(inst.gates == 0))
        return {
            "fast_mask_causal": Diagnostic(
                fast_future == 0, fast_future, "number of fast-mask entries with s > t; 0 required"
            ),
            "slow_path_sees_only_completed_blocks": Diagnostic(
                slow_late == 0,
                slow_late,
                "number of slow-mask entries (t, s) with s ≥ start of t's block; 0 required",
            ),
            "gates_nonzero": Diagnostic(
                zero_gates == 0, zero_gates, "number of zero gates; 0 required"
            ),
        }

    def conclude(self, inst):
        dep = dependence_matrix(inst.model, inst.X0, inst.perturb_rng, inst.p["perturbation"])
        within, first_block = slow_input_spread(inst.model, inst.X0)
        figures = {
            **dependence_figures(dep),
            "slow_input_within_block_variation": within,
            "slow_input_first_block_max": first_block,
            "slow_updates_per_token": 1.0 / inst.cfg.P,
            "dependence": dep,
            **leak_figures(dep),
        }
        future_max = figures["max_future_dependence"]
        diag_min = figures["min_past_diagonal_dependence"]
        parts = {
            "no_future_dependence": Diagnostic(
                future_max == 0.0, future_max, "max_{s>t} |Δ out_t| = 0"
            ),
            "slow_input_block_constant": Diagnostic(
                within == 0.0, within, "max within-block spread of the slow input = 0"
            ),
            "check_not_vacuous": Diagnostic(
                diag_min > 0.0, diag_min, "min_t |Δ out_t| for δX_t > 0"
            ),
            "model_computes_reference_layer": layer_part(inst.model, inst.X0),
        }
        return Conclusion(
            parts,
            figures,
            tolerance={"future_dependence_abs": 0.0, "within_block_variation_abs": 0.0},
            notes=[
                "dependence measured by O(1) perturbations of one input token at a "
                "time; future entries must vanish exactly (bitwise)"
            ],
        )


CLAIM = A1()
