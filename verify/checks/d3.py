"""D3 — the frozen kernel on token-homogeneous states.

Statement: on ``X = 1_T xᵀ`` every softmax attention returns ``K_mask`` (mask rows divided by their
counts), whatever ``Q, K``, the temperature ``β`` and the depth; the fast layer maps homogeneous
states to homogeneous states when the injection ``γ(E − X)`` is homogeneous, so the whole stack runs
the single-token map ``x_{l+1} = x_l + h f_l(x_l)`` and every layer sees ``K_mask``.

Checked by: along the stack trajectory from ``1 x_0ᵀ``, the attention matrix of every layer against
``K_mask``; on each visited state, ``n_draws`` fresh ``(Q, K)`` at scale ``qk_scale`` and each
temperature in ``temperatures``; the states against ``1 x_lᵀ`` with ``x_l`` from the single-token
map of the same layers without the slow path (an independent computation). Kernel deviations are
in units of the score scale ``max(1, max|S|)``, ``S = β n(X)Q (n(X)K)ᵀ``: the scores of a row are
equal in exact arithmetic, but BLAS may round them differently (one rounding of relative size u
moves them by u·|S|, and the softmax by as much), so at large scores (large ``qk_scale`` or ``β``)
an absolute bound would test the rounding, not the claim. Row spreads and the gap to the
single-token map are relative to ``max |X_l|``. All in units of ``tol``.

Hypotheses, measured on the instance: the input state is token-homogeneous (bitwise), the
injection ``γ(E − X)`` is homogeneous, and no layer's slow path contributes (``max_l |g_l| = 0``
where a slow path exists).

Caveat (documented by a control): the slow path with ``U_c`` does **not** keep homogeneous states
homogeneous when ``g ≠ 0``: block 1 receives zero while every later block receives the slow output
of the previous block, so after one layer the state is block-wise constant but block 1 differs from
the rest (``slow_first_layer_*`` figures), and with the global causal mask the kernel is then no
longer frozen.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.analysis.linearised import homogeneous_trajectory
from fastslow.numerics.model.layer import attention_kernel, rms_norm, stack_trajectory
from fastslow.numerics.model.masks import frozen_kernel
from fastslow.numerics.model.weights import ModelConfig, init_layer, init_model

from ..claim import Claim, Conclusion, Control
from ..diagnostics import homogeneous_reference
from ..measure import ratio, relative_error
from ..model_params import model_params
from ..params import Param
from ..systems import DepthFlow
from ..verdict import at_most

# --------------------------------------------------------------------------- the instance


class Instance:
    """The model, the input ``1 x_0ᵀ`` (plus ``heterogeneity``·noise), the injection target and
    the generator of the fresh ``(Q, K)`` draws. From a user :class:`~verify.systems.DepthFlow`
    the model (mask, sizes, σ, norm, γ, gate, weights) is the flow's; the input, the target and the
    draws come from ``seed`` as for the built-in instance."""

    def __init__(self, p: dict, seed: int, system: DepthFlow | None = None):
        w_seed, x_seed, qk_seed, e_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        if system is None:
            self.cfg = ModelConfig.from_params(p)
            self.model = init_model(self.cfg, p["L"], w_seed, scale=p["scale"], gate=p["gate"])
        else:
            self.model = system.model()
            self.cfg = self.model.config
        rng = np.random.default_rng(x_seed)
        self.x0 = rng.standard_normal(self.cfg.d)
        self.X0 = np.ones((self.cfg.T, 1)) * self.x0 + p["heterogeneity"] * rng.standard_normal(
            (self.cfg.T, self.cfg.d)
        )
        erng = np.random.default_rng(e_seed)
        self.e = erng.standard_normal(self.cfg.d)
        self.E = (
            np.ones((self.cfg.T, 1)) * self.e
            if p["e_homogeneous"]
            else erng.standard_normal((self.cfg.T, self.cfg.d))
        )
        self.qk_rng = np.random.default_rng(qk_seed)


# --------------------------------------------------------------------------- conclusion parts


def score_magnitude(cfg, lp, X) -> float:
    """``max(1, max|S|)`` with ``S = β n(X)Q (n(X)K)ᵀ`` the attention scores: the scale of the
    softmax's rounding error."""
    Xn = rms_norm(X, cfg.norm_eps) if cfg.norm else X
    S = cfg.score_scale * (Xn @ lp.Q) @ (Xn @ lp.K).T
    return max(1.0, float(np.abs(S).max()))


def kernel_deviation(cfg, lp, X, Kmask) -> tuple[np.ndarray, float]:
    """The attention matrix ``A(X)`` of layer ``lp`` and ``max|A − K_mask|`` in units of the score
    scale :func:`score_magnitude`."""
    A = attention_kernel(cfg, lp, X)
    return A, relative_error(A, Kmask, scale=score_magnitude(cfg, lp, X), norm="max")


def kernel_along_depth(inst: Instance, traj: np.ndarray, Kmask: np.ndarray) -> list[float]:
    """Each layer's attention on its own state of the trajectory against ``K_mask``."""
    return [
        kernel_deviation(inst.cfg, lp, traj[l], Kmask)[1] for l, lp in enumerate(inst.model.layers)
    ]


def kernel_under_fresh_qk(inst: Instance, traj: np.ndarray, Kmask: np.ndarray):
    """On every visited state, ``n_draws`` fresh ``(Q, K)`` at scale ``qk_scale`` and every
    temperature β: the largest deviation from ``K_mask`` (in units of the score scale) and the
    largest spread between the kernels of one state."""
    p, cfg = inst.p, inst.cfg
    dev_qk, spread_qk = 0.0, 0.0
    for l in range(inst.model.L):
        kernels = []
        for _ in range(p["n_draws"]):
            lp = init_layer(cfg, inst.qk_rng, scale=p["qk_scale"])
            for beta in p["temperatures"]:
                A, dev = kernel_deviation(cfg.replace(beta=float(beta)), lp, traj[l], Kmask)
                kernels.append(A)
                dev_qk = max(dev_qk, dev)
        spread_qk = max(spread_qk, max(float(np.abs(A - kernels[0]).max()) for A in kernels))
    return dev_qk, spread_qk


def state_figures(inst: Instance, traj: np.ndarray) -> dict:
    """The states along depth: each one's row spread relative to ``max|X_l|``, the gap to the
    single-token map of the same layers without the slow path (relative to ``max_l max|X_l|``),
    and, after one layer, the spread inside each block and between blocks 1 and 2."""
    cfg = inst.cfg
    scale_of = np.abs(traj).max(axis=(1, 2))
    row_spread = [
        ratio(np.abs(traj[l] - traj[l][:1]).max(), scale_of[l]) for l in range(inst.model.L + 1)
    ]
    # the prediction: the single-token map of the same layers without the slow path
    xs = homogeneous_trajectory(inst.model.with_gates(0.0), inst.x0, inst.e)
    X1 = traj[1].reshape(cfg.N, cfg.P, cfg.d)
    return {
        "max_relative_row_spread": max(row_spread),
        "relative_row_spread_by_depth": row_spread,
        "max_relative_gap_to_single_token_map": ratio(
            np.abs(traj - xs[:, None, :]).max(), scale_of.max()
        ),
        "slow_first_layer_within_block_spread": float(np.abs(X1 - X1[:, :1]).max()),
        "slow_first_layer_block1_vs_block2": float(
            np.abs(X1[0, 0] - X1[min(1, cfg.N - 1), 0]).max()
        ),
    }


# --------------------------------------------------------------------------- the claim


class D3(Claim):
    id = "D3"
    title = "Frozen kernel"
    abstract = "a frozen attention kernel"
    statement = (
        "On a token-homogeneous state every softmax attention equals K_mask exactly, "
        "independent of Q, K, temperature and depth; fast layers keep homogeneous states "
        "homogeneous, so the stack runs the single-token map."
    )
    params = {
        **model_params(T=16, P=None, d=None, L=None, mask=None, scale=dict(high=1e3)),
        "qk_scale": Param(3.0, "scale of the fresh Q, K draws", low=0.0, high=1e6),
        "temperatures": Param(
            (0.1, 1.0, 10.0),
            "score scales β tried with every fresh (Q, K)",
            low=0.0,
            high=1e6,
            open_low=True,
            max_len=16,
        ),
        "n_draws": Param(3, "fresh (Q, K) draws per visited state", low=1, high=20),
        "heterogeneity": Param(
            0.0, "size of a random token-dependent part added to the input", low=0.0, high=1e3
        ),
        **model_params(slow=False, gate=dict(low=-1e3, high=1e3), gamma=dict(high=1e3)),
        "e_homogeneous": Param(True, "the injection target E is 1 eᵀ (else random per token)"),
        "tol": Param(
            1e-12,
            "kernel tolerance in units of the score scale; relative state tolerance",
            low=0.0,
            high=1.0,
            open_low=True,
        ),
    }
    hypotheses = {
        "state_token_homogeneous": "the input state is 1 x_0ᵀ: max_t max|X_t − X_1| = 0 (bitwise)",
        "injection_homogeneous": "the injection γ(E − X) is homogeneous: γ · max_t max|E_t − E_1| = 0",
        "slow_path_closed": "no layer's slow path contributes: max_l |g_l| = 0 where a slow path exists",
    }
    hypothesis_sources = {
        "state_token_homogeneous": "input",
        "injection_homogeneous": "input",
        "slow_path_closed": "implementation",
    }
    conclusion = {
        "kernel_frozen_along_depth": "max_l max|A_l(X_l) − K_mask| ≤ tol · max(1, max|S|)",
        "kernel_independent_of_qk_and_temperature": "max over fresh (Q, K) and β of max|A(X_l) − K_mask| ≤ tol · max(1, max|S|) on every "
        "visited state",
        "states_stay_homogeneous": "max_l max_t |X_{l,t} − X_{l,1}| / max|X_l| ≤ tol",
        "stack_runs_single_token_map": "max_l max|X_l − 1 x_lᵀ| / max_l max|X_l| ≤ tol",
    }
    controls = (
        Control(
            "heterogeneous_input",
            {"heterogeneity": 0.5},
            breaks="state_token_homogeneous",
            meaning="a token-dependent input: the kernel depends on Q, K and β",
            seed=3,
        ),
        Control(
            "open_gate",
            {"slow": True, "gate": 0.5, "mask": "block_causal"},
            breaks="slow_path_closed",
            meaning="U_c gives block 1 zero: after one layer the state is block-wise constant "
            "but not homogeneous",
            seed=3,
        ),
        Control(
            "open_gate_global_mask",
            {"slow": True, "gate": 0.5, "mask": "causal"},
            breaks="slow_path_closed",
            meaning="with the global causal mask the lost homogeneity unfreezes the kernel",
            seed=3,
        ),
        Control(
            "heterogeneous_injection",
            {"gamma": 0.5, "e_homogeneous": False},
            breaks="injection_homogeneous",
            meaning="a token-dependent injection target pulls the tokens apart",
            seed=3,
        ),
    )
    key_figures = (
        "max_kernel_deviation_along_depth",
        "max_kernel_deviation_fresh_qk_and_temperatures",
        "max_kernel_spread_between_qk_draws",
    )

    def work(self, p):
        """At each of the ``L`` layers, ``n_draws × len(temperatures)`` fresh kernels plus the
        trajectory's (counted 2), ``T²·(d + 24)`` attention units each."""
        T, d = p["T"], p["d"]
        kernels = p["L"] * (p["n_draws"] * len(p["temperatures"]) + 2)
        return {"start": 1, "layer": kernels, "attention": kernels * T * T * (d + 24)}

    instance = Instance

    systems = (DepthFlow,)
    system_terms = {
        "DepthFlow": "gate=0.0, the default (slow_path_closed: the slow path gives block 1 zero, "
        "so it breaks homogeneity), and gamma=0.0, the default (injection_homogeneous: the "
        "injection γ(E − X) pulls towards the drawn embeddings E, which are not homogeneous); "
        "any mask, sizes and nonlinearity"
    }

    def build_system(self, p, seed, system):
        """The D3 instance of your flow: its model, with a token-homogeneous input from ``seed``
        (any mask: ``K_mask`` is your mask's rows divided by their counts)."""
        return Instance(p, seed, system)

    def diagnose(self, inst):
        return homogeneous_reference(inst.cfg, inst.model.layers, inst.X0, inst.E)

    def conclude(self, inst):
        tol = inst.p["tol"]
        Kmask = frozen_kernel(inst.cfg.mask_array)
        traj = stack_trajectory(inst.model, inst.X0, inst.E)
        by_layer = kernel_along_depth(inst, traj, Kmask)
        dev_qk, spread_qk = kernel_under_fresh_qk(inst, traj, Kmask)
        states = state_figures(inst, traj)
        figures = {
            "max_kernel_deviation_along_depth": max(by_layer),
            "kernel_deviation_by_layer": by_layer,
            "max_kernel_deviation_fresh_qk_and_temperatures": dev_qk,
            "max_kernel_spread_between_qk_draws": spread_qk,
            **states,
        }
        parts = {
            "kernel_frozen_along_depth": at_most(
                max(by_layer), tol, "max_l max|A_l − K_mask| / max(1, max|S_l|) ≤ tol"
            ),
            "kernel_independent_of_qk_and_temperature": at_most(
                dev_qk, tol, "max over fresh (Q, K), β, l of max|A − K_mask| / max(1, max|S|) ≤ tol"
            ),
            "states_stay_homogeneous": at_most(
                states["max_relative_row_spread"], tol, "max_l row spread / max|X_l| ≤ tol"
            ),
            "stack_runs_single_token_map": at_most(
                states["max_relative_gap_to_single_token_map"],
                tol,
                "max|X_l − 1 x_lᵀ| / max|X| ≤ tol",
            ),
        }
        notes = [
            "kernel deviations are absolute (entries of K_mask are in [0, 1]); row spreads are "
            "relative to max|X_l|",
            "slow_first_layer_*: after one layer, the spread inside each block and the gap "
            "between blocks 1 and 2 (with g ≠ 0, U_c gives block 1 zero: block-wise constant, "
            "not homogeneous)",
        ]
        return Conclusion(
            parts,
            figures,
            tolerance={"kernel_abs": tol, "row_spread_rel": tol, "single_token_gap_rel": tol},
            notes=notes,
        )


CLAIM = D3()
