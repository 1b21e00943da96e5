"""What the theory predicts for trained networks, measured: D5, D6, D7 on one trained stack, D9 on
the runs of a corpus.

Each prediction is a :class:`~verify.claim.Claim` (not a registered claim: the units of the report's
section on trained networks, ``docs/report``), so its verdict is decided by the same machinery as
every claim (hypotheses first, then limits, then the conclusion) and carries the same provenance.
The rules and tolerances below were written before any trained network was measured.

**States.** ``x_c = emb[c]`` is the trained embedding of ``c``, the most frequent character of
the training split (the space); the *homogeneous* reference is ``X_0 = 1 x_cᵀ`` (every token the
same character). The *operating* states ``X_l`` are the trained stack's states on the first
held-out window (``T`` characters).

**D7t — margin bound per layer.** For each layer ``l``, ``J_l`` is the Jacobian of the layer with
gate 0 and ``G_l = h·∂Slow/∂X``, both at the operating state ``X_l`` (``J + gG`` is exactly the
Jacobian of the gated layer: Φ is affine in ``g``). Matrix-free certificates (JVPs only):
``m(J) ≤ σ_min(I − J) ≤ ‖(I − J)X_l‖/‖X_l‖ =: m⁺`` and ``‖G‖₂ ≥ max_w ‖Gw‖/‖w‖ =: G⁻`` over
``w`` ∈ {``X_l``, 4 Gaussian directions of the check's seed}; hence ``m(J)/‖G‖₂ ≤ m⁺/G⁻``.
Hypothesis ``injection_positive`` (source: input): D7's contractive reference needs ``γ > 0``;
with the RMS norm and ``γ = 0`` the layer is 0-homogeneous up to ``norm_eps``, so ``J X ≈ X``
(``m⁺`` measures it). Conclusion ``gates_inside_margin_bound``: ``|g_l| < m(J_l)/‖G_l‖₂`` for every
layer; decided ``fails`` when ``|g_l| ≥ m⁺/G⁻`` for some layer (certain), else the limit
``bound_resolved`` is not met (only an upper bound is measured: ``undecided``).

**D5t — saturation depth.** At the homogeneous reference, with every gate 0: ``r(l)`` of the mode
products ``D_λ`` (:func:`numerics.analysis.linearised.mode_ratio`, the distinct eigenvalues of the
fast mask's frozen kernel) and ``L* = min{l : r(l) ≤ τ}``, ``τ = 0.1`` (D5's default).
Hypotheses: ``gates_closed`` (max |g| = 0; input), ``saturates_within_depth`` (``L* ≤ L``, D5's).
Conclusion ``coarse_factorisation_within_bound``: ``‖δX_L − Π δX_0 D_1‖_F ≤ c_K r(L) σ_min(D_1)
‖δX_0‖_F (1 + 1e-9)`` for a Gaussian ``δX_0`` of the check's seed (the linearised stack,
:func:`~numerics.analysis.linearised.linearised_stack`).

**D6t — where the trained weight change goes.** ``δθ = θ_trained − θ_initial`` (the eight matrices
of every layer; the initial weights are the run's seeded draw, so only for E1 runs and networks
trained by the suite: hypothesis ``initial_weights_known``), its exact first-order response
``δX_L`` at the homogeneous reference (every gate 0: hypothesis ``gates_closed``). D6(a) predicts:
(i) the response is persistent, ``‖(I − Π)δX_L‖ ≤ tol·‖δX_L‖`` (a homogeneous trajectory responds
homogeneously; ``Π = R Lᵀ`` the kernel's eigenvalue-1 projector), (ii) ``Q, K, Qs, Ks`` are
invisible: their part of ``δθ`` moves ``X_L`` by ``≤ tol·‖δX_L‖``; ``tol = 1e-9`` (about 10⁷ units
of rounding: the JVP sums ``L·(T + d)`` products of O(1) terms). Reported: the share of ``‖δθ‖²``
on the invisible directions (Q, K, Qs, Ks) and the first-order effect on the persistent component
``‖Lᵀ δX_L‖ / ‖Lᵀ X_L‖``.

**D9t — cross-block structure and the trained gates.** For one corpus, token count and the seeds:
the structure ``I_neighbour − I_shuffled`` of :mod:`numerics.lm.blockstats` (bits) against its
noise, the SD of ``I_shuffled`` over 8 more block permutations. Hypothesis
``no_cross_block_structure``: ``|excess| ≤ 4·SD`` (D9's condition for ``∂R/∂g = 0`` at ``g = 0``; the
pydoc text carries structure and is outside it: its gates are reported, not predicted). Prediction
for a corpus inside the hypothesis (the shuffled-block control, :func:`shuffled_block_corpus`):
the gates stay closed, decided as E1 decides "the gate stays closed": the paired cost of zeroing the
trained gates (coupled runs) by the TOST at α = 0.05 against Δ, the SD (ddof 1) of the frozen runs'
held-out losses over the same seeds: ``holds`` when equivalent, ``fails`` when the 90 % interval
lies outside ``(−Δ, Δ)``, else the limit ``tost_decides`` is not met (``undecided``).
"""

from __future__ import annotations

import hashlib

import numpy as np

from fastslow.numerics.analysis import linearised
from fastslow.numerics.analysis.visibility import (
    decaying_projector,
    forced_tangent,
    persistent_component,
)
from fastslow.numerics.model.autodiff import layer_jvp
from fastslow.numerics.model.layer import stack_trajectory
from fastslow.numerics.model.masks import frozen_kernel
from fastslow.numerics.model.weights import WEIGHT_NAMES, LayerParams

from .claim import Claim, Conclusion
from .params import Param
from .trained import TrainedStack
from .verdict import Diagnostic, at_most

TAU = 0.1
"""D5's default saturation threshold."""
D6_TOL = 1e-9
D5_ROUNDING = 1e-9
STRUCTURE_SDS = 4.0
NOISE_SHUFFLES = 8
G_PROBES = 4
INVISIBLE = ("Q", "K", "Qs", "Ks")


# ----------------------------------------------------------------------------- states


def reference_character(stack: TrainedStack, corpus) -> int:
    """The most frequent character of the training split (the space in E1's text)."""
    counts = np.bincount(corpus.train, minlength=stack.vocab)
    return int(np.argmax(counts[: stack.vocab]))


def homogeneous_reference(stack: TrainedStack, corpus) -> np.ndarray:
    """``X_0 = 1 x_cᵀ`` with ``x_c`` the trained embedding of :func:`reference_character`."""
    x = stack.embedding[reference_character(stack, corpus)]
    return np.ones((int(stack.T or 0), 1)) * x[None, :]


def operating_states(stack: TrainedStack, corpus) -> np.ndarray:
    """The trained stack's states ``[X_0, …, X_L]`` on the first held-out window."""
    tokens = np.asarray(corpus.heldout[: stack.T], dtype=np.int64)
    return stack_trajectory(stack.model(), stack.embedding[tokens])


# ----------------------------------------------------------------------------- D7t


def margin_certificates(stack: TrainedStack, corpus, seed: int) -> dict:
    """Per layer: ``m⁺``, ``G⁻``, ``m⁺/G⁻`` and ``|g|`` (module docstring, D7t)."""
    cfg, model = stack.config, stack.model()
    Xs = operating_states(stack, corpus)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(38, 7)))
    out: dict = {"m_upper": [], "G_lower": [], "bound_upper": [], "gate": []}
    for l, lp in enumerate(model.layers):
        X = Xs[l]
        closed, opened = lp.copy(), lp.copy()
        closed.g, opened.g = 0.0, 1.0
        _, JX = layer_jvp(cfg, closed, X, dX=X)
        m_up = float(np.linalg.norm(JX - X) / np.linalg.norm(X))
        probes = [X, *(rng.standard_normal(X.shape) for _ in range(G_PROBES))]
        g_low = 0.0
        for w in probes:
            g_low = max(g_low, _slow_response(cfg, closed, opened, X, w))
        out["m_upper"].append(m_up)
        out["G_lower"].append(g_low)
        out["bound_upper"].append(m_up / g_low if g_low > 0 else float("inf"))
        out["gate"].append(float(lp.g))
    return out


def _slow_response(cfg, closed: LayerParams, opened: LayerParams, X, w) -> float:
    """``‖G w‖ / ‖w‖`` with ``G w = J_{g=1} w − J_{g=0} w`` (the layer is affine in ``g``)."""
    _, a = layer_jvp(cfg, opened, X, dX=w)
    _, b = layer_jvp(cfg, closed, X, dX=w)
    return float(np.linalg.norm(a - b) / np.linalg.norm(w))


class _OnTrained(Claim):
    """A prediction checked on one :class:`~verify.trained.TrainedStack` (its ``corpus``: the
    text the states are read from)."""

    params = {"corpus": Param("pydoc", "the text of the states", choices=("pydoc", "shuffled"))}
    systems = (TrainedStack,)

    def build(self, p, seed):
        raise ValueError(f"{self.id} is checked on trained weights: give a TrainedStack")

    def build_system(self, p, seed, system):
        return {"p": p, "seed": seed, "stack": system, "corpus": corpus_named(p["corpus"])}


class TrainedD7(_OnTrained):
    id = "D7t"
    title = "D7's margin bound against the trained gates"
    abstract = statement = (
        "every trained gate lies inside D7's certified region |g_l| < m(J_l)/‖G_l‖₂ (J_l, G_l at "
        "the operating state of layer l)"
    )
    hypotheses = {"injection_positive": "γ > 0 (D7's contractive reference)"}
    hypothesis_sources = {"injection_positive": "input"}
    conclusion = {"gates_inside_margin_bound": "|g_l| < m(J_l)/‖G_l‖₂ for every layer"}
    limits = {"bound_resolved": "the measured upper bound m⁺/G⁻ decides (|g_l| ≥ m⁺/G⁻ somewhere)"}

    def diagnose(self, inst):
        gamma = float(inst["stack"].config.gamma)
        return {"injection_positive": Diagnostic(gamma > 0, gamma, "γ > 0")}

    def conclude(self, inst):
        c = margin_certificates(inst["stack"], inst["corpus"], inst["seed"])
        ratio = [abs(g) / b if b > 0 else float("inf") for g, b in zip(c["gate"], c["bound_upper"])]
        beyond = max(ratio)
        figures = {**c, "gate_over_bound_upper": ratio}
        return Conclusion(
            {
                "gates_inside_margin_bound": Diagnostic(
                    beyond < 1, beyond, "max_l |g_l| / (m⁺/G⁻) < 1 (a lower bound of |g|/(m/‖G‖))"
                )
            },
            figures,
            limits={
                "bound_resolved": Diagnostic(
                    beyond >= 1, beyond, "max_l |g_l|·G⁻/m⁺ ≥ 1: certainly outside the bound"
                )
            },
            series=figures,
        )


class TrainedD5(_OnTrained):
    id = "D5t"
    title = "D5's saturation depth of the trained stack"
    abstract = statement = (
        "the trained stack saturates within its depth (L* ≤ L) and its linearised response "
        "factors through the coarse variable within c_K·r(L)"
    )
    hypotheses = {
        "gates_closed": "every gate 0 (the homogeneous trajectory)",
        "saturates_within_depth": "L* ≤ L",
    }
    hypothesis_sources = {"gates_closed": "input", "saturates_within_depth": "implementation"}
    conclusion = {"coarse_factorisation_within_bound": "D5's bound at depth L"}

    def diagnose(self, inst):
        stack = inst["stack"]
        gmax = max(map(abs, stack.gates)) if stack.slow else 0.0
        model = stack.model().with_gates(0.0)
        x0 = homogeneous_reference(stack, inst["corpus"])[0]
        xs = linearised.homogeneous_trajectory(model, x0)
        N, M = linearised.layer_factors(model, xs)
        lams = linearised.distinct_eigenvalues(stack.mask, stack.T, stack.P)
        r, smin = linearised.mode_ratio(N, M, lams)
        Ls = linearised.saturation_depth(r, TAU)
        inst.update(N=N, M=M, r=r, smin=smin, L_star=Ls, x0=x0)
        return {
            "gates_closed": Diagnostic(gmax == 0.0, gmax, "max_l |g_l| = 0"),
            "saturates_within_depth": Diagnostic(Ls <= stack.L, Ls, f"L*(τ = {TAU}) ≤ L"),
        }

    def conclude(self, inst):
        stack = inst["stack"]
        rng = np.random.default_rng(np.random.SeedSequence(inst["seed"], spawn_key=(38, 5)))
        dX0 = rng.standard_normal((stack.T, stack.d))
        K = frozen_kernel(stack.mask, stack.T, stack.P)
        dXL = linearised.linearised_stack(K, dX0, inst["N"], inst["M"])
        D1 = linearised.mode_products(inst["N"], inst["M"], [1.0])[0]
        Pi = np.eye(stack.T) - decaying_projector(stack.config)
        lhs = float(np.linalg.norm(dXL - Pi @ dX0 @ D1))
        cK = linearised.kernel_constant(stack.mask, stack.T, stack.P)
        rhs = cK * float(inst["r"][-1]) * float(inst["smin"][-1]) * float(np.linalg.norm(dX0))
        figures = {
            "r": inst["r"].tolist(),
            "L_star": inst["L_star"],
            "L": stack.L,
            "tau": TAU,
            "c_K": cK,
            "lhs": lhs,
            "rhs": rhs,
        }
        part = at_most(
            lhs, rhs * (1 + D5_ROUNDING), "‖δX_L − Π δX_0 D_1‖ ≤ c_K r(L) σ_min(D_1)‖δX_0‖"
        )
        return Conclusion({"coarse_factorisation_within_bound": part}, figures, series=figures)


class TrainedD6(_OnTrained):
    id = "D6t"
    title = "D6: where the trained weight change acts"
    abstract = statement = (
        "at the homogeneous reference the first-order response to the trained weight change is "
        "persistent, and its Q, K, Qs, Ks part is invisible"
    )
    hypotheses = {
        "gates_closed": "every gate 0",
        "initial_weights_known": "the run's initial weights can be redrawn (E1 or suite-trained)",
    }
    hypothesis_sources = {"gates_closed": "input", "initial_weights_known": "input"}
    conclusion = {
        "response_persistent": "‖(I − Π)δX_L‖ ≤ tol·‖δX_L‖",
        "qk_invisible": "the Q, K, Qs, Ks part moves X_L by ≤ tol·‖δX_L‖",
    }

    def diagnose(self, inst):
        stack = inst["stack"]
        gmax = max(map(abs, stack.gates)) if stack.slow else 0.0
        inst["initial"] = initial_weights(stack)
        known = inst["initial"] is not None
        return {
            "gates_closed": Diagnostic(gmax == 0.0, gmax, "max_l |g_l| = 0"),
            "initial_weights_known": Diagnostic(
                known, int(known), "the run's seed and sizes known"
            ),
        }

    def conclude(self, inst):
        stack, init = inst["stack"], inst["initial"]
        model = stack.model().with_gates(0.0)
        X0 = homogeneous_reference(stack, inst["corpus"])
        delta = [_tangent(stack, init, l, WEIGHT_NAMES) for l in range(stack.L)]
        qk = [_tangent(stack, init, l, INVISIBLE) for l in range(stack.L)]
        XL, dXL = forced_tangent(model, X0, dparams=delta)
        _, dQK = forced_tangent(model, X0, dparams=qk)
        scale = float(np.linalg.norm(dXL))
        decaying = float(np.linalg.norm(decaying_projector(stack.config) @ dXL)) / scale
        invisible = float(np.linalg.norm(dQK)) / scale
        sq = {n: sum(float(np.sum(getattr(t, n) ** 2)) for t in delta) for n in WEIGHT_NAMES}
        persistent = float(
            np.linalg.norm(persistent_component(stack.config, dXL))
            / np.linalg.norm(persistent_component(stack.config, XL))
        )
        figures = {
            "decaying_share_of_response": decaying,
            "qk_share_of_response": invisible,
            "invisible_share_of_weight_change": sum(sq[n] for n in INVISIBLE) / sum(sq.values()),
            "weight_change_sq": sq,
            "persistent_effect_rel": persistent,
        }
        return Conclusion(
            {
                "response_persistent": at_most(decaying, D6_TOL, "‖(I − Π)δX_L‖/‖δX_L‖ ≤ tol"),
                "qk_invisible": at_most(invisible, D6_TOL, "‖δX_L(δQ, δK, δQs, δKs)‖/‖δX_L‖ ≤ tol"),
            },
            figures,
            tolerance={"relative": D6_TOL},
            series=figures,
        )


def _tangent(stack: TrainedStack, init: dict, l: int, names) -> LayerParams:
    """Layer ``l``'s weight change (trained − initial) on ``names``, zero elsewhere, gate 0."""
    return LayerParams(
        **{
            n: (stack.params[f"{l}.{n}"] - init[f"{l}.{n}"])
            if n in names
            else np.zeros_like(stack.params[f"{l}.{n}"])
            for n in WEIGHT_NAMES
        },
        g=0.0,
    )


def initial_weights(stack: TrainedStack) -> dict | None:
    """The run's initial parameters (:func:`numerics.lm.params.init_params` of its config and
    seed), for E1 runs and networks trained by :func:`verify.trained.train_small`; else None."""
    from fastslow.numerics.lm.params import LMConfig, init_params  # deferred: language models

    src = stack.source if isinstance(stack.source, dict) else {}
    spec = src.get("spec") or src.get("trained")
    if not spec:
        return None
    cfg = LMConfig(**spec["cfg"])
    return init_params(cfg, np.random.SeedSequence(spec["seed"], spawn_key=(0,)))


# ----------------------------------------------------------------------------- corpora


def shuffled_block_corpus(base, P: int, seed: int = 38):
    """The negative control of D9: every split of ``base`` cut into blocks of ``P`` characters
    whose order is permuted (seeded, independently per split), so that neighbouring blocks share
    only what any two blocks of the text share; within a block the text is unchanged. Identified
    by the SHA-256 of its tokens."""
    from fastslow.numerics.lm.corpus import Corpus  # deferred: the language models

    streams = np.random.SeedSequence(seed).spawn(3)
    out = {}
    for name, ss in zip(("train", "heldout", "validation"), streams):
        tok = getattr(base, name)
        nb = tok.size // P
        blocks = tok[: nb * P].reshape(nb, P)
        out[name] = blocks[np.random.default_rng(ss).permutation(nb)].ravel()
    h = hashlib.sha256(base.sha256.encode() + f"shuffled blocks P={P} seed={seed}".encode())
    for a in out.values():
        h.update(a.tobytes())
    return Corpus(
        "shuffled",
        out["train"],
        out["heldout"],
        h.hexdigest(),
        f"blocks of {P} characters of {base.source} in permuted order (seed {seed})",
        validation=out["validation"],
        stats=dict(base.stats),
    )


_CORPORA: dict = {}


def corpus_named(name: str, P: int = 16):
    """``pydoc`` (E1's text) or ``shuffled`` (:func:`shuffled_block_corpus` of it), cached."""
    from fastslow.numerics.lm import corpus as lm_corpus  # deferred: the language models

    key = (name, P)
    if key not in _CORPORA:
        base = lm_corpus.pydoc_corpus()
        _CORPORA[key] = base if name == "pydoc" else shuffled_block_corpus(base, P)
    return _CORPORA[key]


def structure(corpus, P: int, seed: int) -> dict:
    """The cross-block structure of ``corpus`` (:mod:`numerics.lm.blockstats`) and its noise: the
    SD of the shuffled baseline's MI over :data:`NOISE_SHUFFLES` more permutations."""
    from fastslow.numerics.lm import blockstats  # deferred: the language models
    from fastslow.numerics.lm.corpus import VOCAB  # deferred: the language models

    s = blockstats.neighbour_mutual_information(
        corpus.train, P, VOCAB, np.random.SeedSequence(seed, spawn_key=(8,))
    )
    H = blockstats.block_histograms(corpus.train, P, VOCAB)
    noise = []
    for k in range(NOISE_SHUFFLES):
        perm = np.random.default_rng(
            np.random.SeedSequence(seed, spawn_key=(38, 9, k))
        ).permutation(H.shape[0])
        noise.append(blockstats.pair_mutual_information(H[perm[:-1]], H[perm[1:]]))
    return {**s, "mi_shuffled_sd": float(np.std(noise, ddof=1))}
