"""Mutation testing: a catalogue of planted bugs, each of which the suite must catch.

A :class:`Mutant` names one exact snippet of one source file (it must occur there exactly once),
its replacement, what the replacement plants and the claims to run. :func:`run_mutant` applies it to
a scratch copy of the tree, runs ``python -m fastslow check ID --json`` for each of its claims
with ``PYTHONPATH`` set to the scratch copy, at the claim's sweep instance and on several seeds
(:data:`SEEDS`), and records each claim's outcome. A mutant is
**caught** when some claim ends ``fails``; ending only in ``holds``, ``outside-hypotheses``,
``undecided`` or ``error`` is a survivor (a planted bug that hides behind a hypothesis, a limit of
the check or an exception is not caught).

The scratch copy is made once per run (:func:`scratch_tree`, ``shutil.copytree`` with ``copy2``:
modification times are kept, so Numba's on-disk cache stays valid for the modules a mutant does not
touch; ``NUMBA_CACHE_DIR`` is a persistent directory beside the scratch copy). Each mutant is
applied, run and reverted (content and modification time restored) before the next.

The catalogue (:data:`CATALOGUE`) holds the nine planted bugs of issue 27 (``origin="issue 27"``)
and further ones chosen as someone trying to sneak a bug past the suite would: off-by-one in
pooling and shift, sign flips, wrong transposes, a dropped term in the linearisation, a wrong
kernel constant, a wrong symbolic derivative in ``theory/``, a wrong oracle in ``verify/``.
:func:`catalogue_problems` checks that every snippet occurs exactly once in the current tree (cheap;
a default-profile test). The full run is ``pytest verify --thorough`` (marker ``slow``) or, from
the repository root, ``python -m tools.mutation.mutants --markdown docs/mutants.md`` (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fastslow.verify.outputs import writable_file, write_output
from fastslow.verify.verdict import BAD_INPUT_EXIT, EXIT_CODES

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (the tree the catalogue is applied to by default)."""

EXIT_OUTCOMES = {code: outcome for outcome, code in EXIT_CODES.items()} | {
    BAD_INPUT_EXIT: "bad-input"
}
"""``fastslow check`` exit codes, read back as outcomes."""

SEEDS = (0, 101, 102)
"""The seeds each claim of a mutant is checked on: the default seed, then the first two seeds of the
thorough profile's sweep (verify/tests/test_seed_sweep.py), as ``pytest verify`` decides a claim on
more than one seed: a planted bug visible only on some instances is still caught."""

CHECK_TIMEOUT = 1800.0
"""Seconds one ``fastslow check`` of a mutant may take before it counts as ``timeout``."""

IGNORED = (
    ".git",
    ".numba_cache",
    "__pycache__",
    ".venv",
    ".pytest_cache",
    ".hypothesis",
    "out",
    "build",
)
"""Names not copied into the scratch tree (caches, outputs, the git directory)."""


@dataclass(frozen=True)
class Mutant:
    """One planted bug: ``original`` (exactly once in ``file``) replaced by ``replacement``."""

    id: str
    file: str
    original: str
    replacement: str
    claims: tuple[str, ...]
    plants: str
    origin: str = "catalogue"
    params: dict = field(default_factory=dict)
    """Parameters over :func:`check_instance` that the claims are checked at (the instance that
    exercises the mutated code, e.g. a mask the default instance does not use)."""


M = Mutant
CATALOGUE: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ the nine of issue 27
    M(
        "issue-d5-top-term-1e8",
        "numerics/analysis/linearised.py",
        "        top = top.max(axis=1)\n",
        "        top = 1e8 * top.max(axis=1)\n",
        ("D5",),
        "the mode ratio's top term ×1e8 (r(L) never reaches τ)",
        "issue 27",
    ),
    M(
        "issue-d7-jacobian-x1.3",
        "numerics/analysis/stability.py",
        "    return _dense(X.shape, lambda dX: tangents.layer_jvp_cached(config, p, c, dX, None))",
        "    return 1.3 * _dense(X.shape, lambda dX: tangents.layer_jvp_cached(config, p, c, dX, None))",
        ("D7",),
        "the dense layer Jacobian ×1.3 (ρ(J) > 1 when read from it)",
        "issue 27",
    ),
    M(
        "issue-f2-generator-diagonal",
        "numerics/toy/markov.py",
        "        Q[j, j] -= r\n",
        "        Q[j, j] -= 0.999 * r\n",
        ("F2",),
        "the generator's diagonal −0.999·r (columns no longer sum to 0)",
        "issue 27",
    ),
    M(
        "issue-d9-moments-D-plus",
        "numerics/toy/gated_predictor.py",
        "    D = np.tril(tau2 * corr * shrink, k=-1)",
        "    D = np.tril(tau2 * corr * shrink + 1e-3, k=-1)",
        ("D9",),
        "the population moments' D + 1e-3 (spurious cross-block moment)",
        "issue 27",
    ),
    M(
        "issue-a1-causal-mask-peeks",
        "numerics/model/masks.py",
        "        return np.tril(np.ones((T, T), dtype=bool))",
        "        return np.tril(np.ones((T, T), dtype=bool), k=1)",
        ("A1",),
        "the causal mask lets token t see token t + 1",
        "issue 27",
    ),
    M(
        "issue-score-scale-one",
        "numerics/model/weights.py",
        "        return 1.0 / np.sqrt(self.d) if self.beta is None else float(self.beta)",
        "        return 1.0 if self.beta is None else float(self.beta)",
        ("A1",),
        "the score scale 1/√d replaced by 1 everywhere (every path reads cfg.score_scale)",
        "issue 27",
    ),
    M(
        "issue-d5-drop-smallest-eigenvalue",
        "numerics/model/masks.py",
        "        return {1.0 / (p + 1): N for p in range(P)}",
        "        return {1.0 / (p + 1): N for p in range(P - 1)}",
        ("D5",),
        "block_causal's smallest eigenvalue 1/P dropped from the spectrum",
        "issue 27",
    ),
    M(
        "issue-e1-dead-gate",
        "numerics/lm/train.py",
        "    params = init_params(cfg, np.random.SeedSequence(spec.seed, spawn_key=(0,)))\n"
        "    frozen = set() if cfg.gates_trained else set(gate_names(cfg))",
        "    params = init_params(cfg, np.random.SeedSequence(spec.seed, spawn_key=(0,)))\n"
        "    frozen = set(gate_names(cfg))",
        ("E1",),
        "the coupled model's gates are never trained (gate exactly 0)",
        "issue 27",
    ),
    M(
        "issue-radau-entry",
        "numerics/integrators/tableaux.py",
        "        [(16 - _S6) / 36, (16 + _S6) / 36, 1 / 9],",
        "        [(16 - _S6) / 36, (16 + _S6) / 36, 1 / 9 * (1 + 1e-6)],",
        ("F1",),
        "one Radau IIA tableau entry ×(1 + 1e-6)",
        "issue 27",
    ),
    # ------------------------------------------------------------------ numerics/model
    M(
        "pool-off-by-one",
        "numerics/model/kernels.py",
        "    return X.reshape((X.shape[0] // P, P) + X.shape[1:]).mean(axis=1)",
        "    return np.roll(X, 1, axis=0).reshape((X.shape[0] // P, P) + X.shape[1:]).mean(axis=1)",
        ("A1",),
        "block pooling shifted by one token (each block mean takes the previous block's last token)",
    ),
    M(
        "shift-wrong-direction",
        "numerics/model/kernels.py",
        "    out[P:] = np.repeat(Y[:-1], P, axis=0)",
        "    out[:-P] = np.repeat(Y[1:], P, axis=0)",
        ("A1",),
        "U_c shifts the wrong way: block b receives block b + 1",
    ),
    M(
        "shift-missing",
        "numerics/model/kernels.py",
        "    out[P:] = np.repeat(Y[:-1], P, axis=0)",
        "    out[:] = np.repeat(Y, P, axis=0)",
        ("A1",),
        "U_c without the one-block shift (a block reads its own, unfinished mean)",
    ),
    M(
        "rms-norm-no-sqrt",
        "numerics/model/kernels.py",
        "    return X / np.sqrt(np.mean(X * X, axis=-1, keepdims=True) + eps)",
        "    return X / (np.mean(X * X, axis=-1, keepdims=True) + eps)",
        ("A1",),
        "RMS norm divides by the mean square instead of its root",
    ),
    M(
        "softmax-wrong-axis",
        "numerics/model/kernels.py",
        "    return E / E.sum(axis=-1, keepdims=True)",
        "    return E / E.sum(axis=0, keepdims=True)",
        ("A1", "D3"),
        "softmax normalised over columns (a transposed normalisation)",
    ),
    M(
        "scores-q-k-swapped",
        "numerics/model/kernels.py",
        "    return masked_softmax(cfg.score_scale * (Xn @ Q) @ (Xn @ K).T, mask)",
        "    return masked_softmax(cfg.score_scale * (Xn @ K) @ (Xn @ Q).T, mask)",
        ("A1",),
        "scores transposed (Q and K swapped)",
    ),
    M(
        "slow-mask-full",
        "numerics/model/kernels.py",
        "    As = kernel(cfg, Yh, p.Qs, p.Ks, block_level_mask(cfg.slow_mask, cfg.N))",
        '    As = kernel(cfg, Yh, p.Qs, p.Ks, block_level_mask("full", cfg.N))',
        ("A1",),
        "the slow attention ignores its block-causal mask (v1's leak, silently)",
    ),
    M(
        "injection-sign",
        "numerics/model/kernels.py",
        "        F = F + cfg.gamma * (E - X)",
        "        F = F + cfg.gamma * (X - E)",
        ("D5", "D7"),
        "input injection γ(X − E) instead of γ(E − X) in the layer (expansive)",
    ),
    M(
        "tanh-derivative",
        "numerics/model/activations.py",
        "    return 1.0 - np.tanh(z) ** 2",
        "    return 1.0 - np.tanh(z)",
        ("D1", "D5"),
        "σ'(z) = 1 − tanh z instead of 1 − tanh² z",
    ),
    M(
        "jvp-softmax-term-dropped",
        "numerics/model/tangents.py",
        "    return softmax_lin(A, dS) @ Vx + A @ dVx",
        "    return A @ dVx",
        ("D1", "D7"),
        "the attention JVP drops the softmax-derivative term",
    ),
    M(
        "norm-jacobian-sign",
        "numerics/model/tangents.py",
        "    return (dX - Xn * np.mean(Xn * dX, axis=-1, keepdims=True)) / r",
        "    return (dX + Xn * np.mean(Xn * dX, axis=-1, keepdims=True)) / r",
        ("D1", "A3"),
        "sign flip in the RMS norm's Jacobian",
    ),
    M(
        "coarse-map-last-token",
        "numerics/model/masks.py",
        "        first[0, 0] = 1.0",
        "        first[-1, 0] = 1.0",
        ("D5",),
        "block_causal's coarse variable reads the last token of a block instead of the first",
    ),
    # ------------------------------------------------------------------ numerics/analysis
    M(
        "factors-gamma-dropped",
        "numerics/analysis/linearised.py",
        "        N[l] = np.eye(d) + h * ((J @ p.W1) * _act_prime(cfg, z)) @ p.W2 - h * cfg.gamma * np.eye(d)",
        "        N[l] = np.eye(d) + h * ((J @ p.W1) * _act_prime(cfg, z)) @ p.W2",
        ("D4", "D5"),
        "the linearisation drops the injection term −hγI",
    ),
    M(
        "factors-value-transposed",
        "numerics/analysis/linearised.py",
        "        M[l] = h * (J @ p.V)",
        "        M[l] = h * (J @ p.V.T)",
        ("D4", "D5"),
        "the linearisation uses Vᵀ for the value map",
    ),
    M(
        "saturation-depth-off-by-one",
        "numerics/analysis/linearised.py",
        '    return float(hits[0] + 1) if hits.size else float("inf")',
        '    return float(hits[0]) if hits.size else float("inf")',
        ("D5",),
        "L* off by one (depth counted from 0)",
    ),
    M(
        "margin-circle-real-part",
        "numerics/analysis/stability.py",
        "        Z[:, idx, idx] += z[:, None]",
        "        Z[:, idx, idx] += z[:, None].real",
        ("D7",),
        "σ_min(zI − J) evaluated at Re z (the imaginary part of the circle dropped)",
    ),
    M(
        "decaying-projector-wrong",
        "numerics/analysis/visibility.py",
        "    return np.eye(config.T) - R @ L.T",
        "    return np.eye(config.T) - R @ R.T",
        ("D6",),
        "the decaying projector I − RRᵀ instead of I − RLᵀ (the left eigenvectors forgotten)",
    ),
    # ------------------------------------------------------------------ numerics/toy
    M(
        "null-vector-wrong-column",
        "numerics/toy/markov.py",
        "    p = Vt[-1]\n",
        "    p = Vt[-2]\n",
        ("F2",),
        "the null vector taken from the second smallest singular value",
    ),
    M(
        "pooled-filter-peeks",
        "numerics/toy/bayes.py",
        "            out[:, b, k] = _normalise(lp + lls[k][:, b])",
        "            out[:, b, k] = _normalise(lp + lls[k + 1][:, b])",
        ("D8",),
        "the pooled HMM filter's prediction of token k already reads token k",
    ),
    # ------------------------------------------------------------------ numerics/lm, integrators
    M(
        "lm-slow-shift-missing",
        "numerics/lm/batched.py",
        "    out[:, P:] = np.repeat(Y[:, :-1], P, axis=1)",
        "    out[:, :] = np.repeat(Y, P, axis=1)",
        ("E1",),
        "the language model's slow path without the one-block shift (reads its own block: a leak)",
    ),
    M(
        "dopri5-stage-dropped",
        "numerics/integrators/dopri5.py",
        "            + hs * DP_A[6, 4] * k4[i]\n",
        "\n",
        ("D2",),
        "DOPRI5's solution update drops the fifth stage's term (the error estimate does not see it)",
    ),
    # ------------------------------------------------------------------ theory/
    M(
        "theory-value-factor-transposed",
        "theory/linearisation.py",
        "    M = h * value.jacobian(x).T",
        "    M = h * value.jacobian(x)",
        ("D4",),
        "theory's value factor M without its transpose (a wrong symbolic derivative's layout)",
    ),
    M(
        "theory-kernel-constant",
        "theory/kernels.py",
        "            (projector_norm(Pl) for lam, Pl in spectral_projectors(K).items() if lam != 1),",
        "            (projector_norm(Pl) for lam, Pl in spectral_projectors(K).items() if lam != 0),",
        ("D5",),
        "theory's kernel constant sums the persistent projector too",
    ),
    M(
        "theory-markov-rate",
        "theory/markov.py",
        "            (1, 0): sp.exp(y),\n            (0, 1): sp.Integer(1),",
        "            (1, 0): sp.exp(2 * y),\n            (0, 1): sp.Integer(1),",
        ("F2",),
        "theory's 3-state chain with the rate 0 → 1 at e^{2y} instead of e^y",
    ),
    M(
        "theory-curvature-sign",
        "theory/slow_manifold.py",
        "    f1_small = Lv.T * R_fast(Xm + eps * Hs) + eps * curv_small",
        "    f1_small = Lv.T * R_fast(Xm + eps * Hs) - eps * curv_small",
        ("F1",),
        "theory's attention-curvature term of the first-order reduced flow with the wrong sign",
    ),
    # ------------------------------------------------------------------ the oracles
    M(
        "oracle-central-difference",
        "verify/measure.py",
        "    return (np.asarray(f(x + step * direction)) - np.asarray(f(x - step * direction))) / (2 * step)",
        "    return (np.asarray(f(x + step * direction)) - np.asarray(f(x - step * direction))) / step",
        ("D5",),
        "the central difference divides by step instead of 2·step",
    ),
    M(
        "reference-softmax-unmasked",
        "verify/reference/layer.py",
        "    E = np.where(mask, np.exp(np.where(mask, S - shift, 0.0)), 0.0)",
        "    E = np.exp(np.where(mask, S - shift, 0.0))",
        ("A1",),
        "the reference softmax forgets the mask (a wrong oracle must not pass silently)",
    ),
    M(
        "reference-spectrum-drops-smallest",
        "verify/reference/spectra.py",
        "    return sorted(vals, reverse=True)",
        "    return sorted(vals, reverse=True)[:-1]",
        ("D5",),
        "the exact reference spectrum drops its smallest eigenvalue",
    ),
    # ------------------------------------------------------------------ added after the rerun
    M(
        "rosw-weight-entry",
        "numerics/integrators/tableaux.py",
        "-1.2232505839045147e00, 1.5452602553351020e00, 4.3586652150845900e-01]",
        "-1.2232505839045147e00, 1.5452602553351020e00 * (1 + 1e-6), 4.3586652150845900e-01]",
        ("F1",),
        "one ROS34PW2 weight b₃ ×(1 + 1e-6) (an order condition broken by 1e-6)",
    ),
    M(
        "error-norm-rtol-x1e4",
        "numerics/integrators/base.py",
        "        sc = atol + rtol * max(abs(y[i]), abs(ynew[i]))",
        "        sc = atol + 1e4 * rtol * max(abs(y[i]), abs(ynew[i]))",
        ("F1", "D2"),
        "the step error is scaled by 10⁴·rtol: every adaptive method delivers 10⁴× the requested "
        "error",
    ),
    M(
        "lm-gate-gradient-sign",
        "numerics/lm/batched.py",
        '        grads["g"] = cfg.h * float(np.vdot(G, c["S"]))',
        '        grads["g"] = -cfg.h * float(np.vdot(G, c["S"]))',
        ("E1",),
        "the language model's gate gradient with the wrong sign (the gate trained uphill)",
    ),
    M(
        "cost-slow-projections-on-tokens",
        "numerics/model/cost.py",
        '        "slow_qkv": 3 * matmul_flops(N, d, d),',
        '        "slow_qkv": 3 * matmul_flops(N, d, d) // 2,',
        ("A2",),
        "the FLOP model counts half the slow path's projections",
    ),
    M(
        "theory-gap-ratio",
        "theory/stability.py",
        "    return sp.sqrt(sp.simplify(gap_row / mean_row))",
        "    return sp.sqrt(sp.simplify((gap_row + mean_row) / mean_row))",
        ("D6",),
        "theory's block-causal gap ratio √P instead of √(P − 1)",
        params={"mask": "block_causal"},
    ),
    M(
        "filter-normalised-by-max",
        "numerics/toy/bayes.py",
        "    return w / w.sum(axis=-1, keepdims=True)",
        "    return w / w.max(axis=-1, keepdims=True)",
        ("D8",),
        "the exact filters normalise by the largest weight instead of the sum",
    ),
    # ------------------------------------------------------------------ issue 35: instruments
    M(
        "t-interval-df-n",
        "verify/measure.py",
        "    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * se",
        "    half = float(stats.t.ppf(0.5 + confidence / 2, n)) * se",
        ("D9",),
        "the t-interval of a mean with n degrees of freedom instead of n − 1",
        "issue 35",
    ),
    M(
        "t-interval-ddof-0",
        "verify/measure.py",
        "    se = float(np.std(x, ddof=1) / math.sqrt(n))",
        "    se = float(np.std(x, ddof=0) / math.sqrt(n))",
        ("D9",),
        "the standard error of a mean from the SD with ddof = 0",
        "issue 35",
    ),
    M(
        "f3-adam-first-moment-correction",
        "numerics/toy/variational.py",
        "        flat -= (step / (1 - b1**it)) * m / (np.sqrt(s / (1 - b2**it)) + adam_eps)",
        "        flat -= (step / (1 - b1 ** (it + 1))) * m / (np.sqrt(s / (1 - b2**it)) + adam_eps)",
        ("F3",),
        "F3's Adam corrects the first moment with the next step's count",
        "issue 35",
    ),
    M(
        "error-norm-n-minus-one",
        "numerics/integrators/base.py",
        "    return np.sqrt(s / err.size)",
        "    return np.sqrt(s / max(err.size - 1, 1))",
        ("F1",),
        "the RMS error norm (ROS34PW2's) divides by n − 1 instead of n",
        "issue 35",
    ),
    M(
        "radau-estimate-third-stage",
        "numerics/integrators/radau.py",
        "        e = (E[0] * Z[0, i] + E[1] * Z[1, i] + E[2] * z2) / hs",
        "        e = (E[0] * Z[0, i] + E[1] * Z[1, i] + 1.1 * E[2] * z2) / hs",
        ("F1",),
        "Radau IIA's error estimate weights its third stage by 1.1·e₃ (scalar tail only)",
        "issue 35",
    ),
    M(
        "reference-complex-step-halved",
        "verify/reference/layer.py",
        "    return f(X + 1j * STEP * dX).imag / STEP",
        "    return f(X + 1j * STEP * dX).imag / (0.5 * STEP)",
        ("D7", "D5"),
        "the reference's complex-step derivative doubled: a reference deciding a hypothesis "
        "(D7's reference_contractive, D5's saturates_within_depth) on the main instance",
        "issue 35",
    ),
    M(
        "margin-grid-half-circle",
        "numerics/analysis/stability.py",
        "    top = np.pi if not np.iscomplexobj(J) else 2 * np.pi",
        "    top = np.pi / 2 if not np.iscomplexobj(J) else 2 * np.pi",
        ("D7",),
        "the margin's grid covers [0, π/2] for a real J (invisible on D7's instances, seeds 0–3)",
        "issue 35",
    ),
    M(
        "causal-projector-eigenvalues",
        "numerics/analysis/linearised.py",
        "        return {1.0 / (k + 1): np.outer(V[:, k], W[:, k]) for k in range(T)}",
        "        return {1.0 / (k + 1.0001): np.outer(V[:, k], W[:, k]) for k in range(T)}",
        ("D5", "D4"),
        "the causal projectors keyed by 1/(k + 1.0001) (a mask the default instances do not use)",
        "issue 35",
    ),
    M(
        "lm-adamw-second-moment-step",
        "numerics/lm/optim.py",
        "        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t",
        "        c1, c2 = 1 - self.b1**self.t, 1 - self.b2 ** (self.t + 1)",
        ("E1",),
        "the language model's AdamW corrects the second moment with the next step's count (the "
        "losses move by little; no endpoint sees it)",
        "issue 35",
    ),
    M(
        "heldout-loss-on-validation",
        "numerics/lm/train.py",
        "    wins = heldout_windows(corpus, cfg.T, spec.eval_max)",
        '    wins = heldout_windows(corpus, cfg.T, spec.eval_max, "validation")',
        ("E1",),
        "every run reports its held-out loss on the validation split (a procedure bug: the "
        "deduplication hypothesis looks at the held-out split, not at what was evaluated)",
        "issue 35",
    ),
    M(
        "causal-kernel-eigenvalues",
        "numerics/model/masks.py",
        "        return {1.0 / (t + 1): 1 for t in range(T)}",
        "        return {1.0 / (t + 1.001): 1 for t in range(T)}",
        ("D5", "D4"),
        "the causal kernel's eigenvalues 1/(t + 1.001) (issue 35's undisclosed bug: D4 and D5 held)",
        "issue 35",
    ),
)
del M


# ----------------------------------------------------------------------------- applying


def catalogue_problems(root: Path = ROOT, catalogue=CATALOGUE) -> list[str]:
    """Every way the catalogue does not apply cleanly to the tree at ``root``: a duplicated id, a
    missing file, a snippet that does not occur exactly once, a replacement equal to the original
    or a claim that is not registered."""
    from fastslow.verify.registry import CLAIMS  # deferred: the registry imports every claim unit

    problems, seen = [], set()
    for m in catalogue:
        if m.id in seen:
            problems.append(f"{m.id}: duplicated id")
        seen.add(m.id)
        path = root / m.file
        if not path.is_file():
            problems.append(f"{m.id}: no file {m.file}")
            continue
        n = path.read_text().count(m.original)
        if n != 1:
            problems.append(f"{m.id}: the original snippet occurs {n} times in {m.file}")
        if m.replacement == m.original:
            problems.append(f"{m.id}: the replacement equals the original")
        unknown = [c for c in m.claims if c not in CLAIMS]
        if unknown or not m.claims:
            problems.append(f"{m.id}: claims {unknown or '()'} are not registered claims")
    return problems


def scratch_tree(src: Path, dst: Path) -> Path:
    """A copy of the tree ``src`` at ``dst`` (replaced if present), modification times kept
    (``copy2``), symbolic links kept, caches and outputs left out (:data:`IGNORED`)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(
        src, dst, symlinks=True, copy_function=shutil.copy2, ignore=shutil.ignore_patterns(*IGNORED)
    )
    return dst


class applied:
    """Context manager: ``mutant`` applied to the tree at ``root``, reverted on exit (content and
    modification time)."""

    def __init__(self, mutant: Mutant, root: Path):
        self.mutant, self.path = mutant, root / mutant.file

    def __enter__(self):
        self.text = self.path.read_text()
        self.stat = self.path.stat()
        if self.text.count(self.mutant.original) != 1:
            raise ValueError(f"{self.mutant.id}: the snippet does not occur exactly once")
        self.path.write_text(self.text.replace(self.mutant.original, self.mutant.replacement))
        return self

    def __exit__(self, *exc):
        self.path.write_text(self.text)
        os.utime(self.path, ns=(self.stat.st_atime_ns, self.stat.st_mtime_ns))
        return False


def environment(root: Path, cache: Path) -> dict:
    """The environment of a check in the tree ``root``: its sources first on ``PYTHONPATH``, a
    persistent Numba cache, one thread per BLAS/OpenMP/Numba."""
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(root),
        NUMBA_CACHE_DIR=str(cache),
        FASTSLOW_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        NUMBA_NUM_THREADS="1",
    )
    env.pop("FASTSLOW_NUMBA_CACHE_BASE", None)
    return env


def imported_from(root: Path, env: dict) -> Path:
    """Where ``fastslow.verify.claim`` is imported from with ``env`` (must be inside ``root``)."""
    out = subprocess.run(
        [sys.executable, "-c", "import fastslow.verify.claim as claim; print(claim.__file__)"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def param_arguments(params: dict) -> list[str]:
    """``--param KEY=VALUE`` arguments for ``params`` (a tuple as comma-separated values)."""
    out = []
    for k, val in params.items():
        text = ",".join(map(str, val)) if isinstance(val, tuple | list) else str(val)
        out += ["--param", f"{k}={text}"]
    return out


def check_instance(cid: str) -> dict:
    """The parameters a mutant's claim is checked at: the claim's :attr:`Claim.sweep_instance`,
    the main instance it declares cheap enough to repeat (E1's short profile: its paper-scale
    default trains 500k-token models, hours once a planted bug in the training code misses the run
    cache), else its defaults."""
    from fastslow.verify.registry import CLAIMS  # deferred: every claim unit; --list needs none

    return dict(CLAIMS[cid].sweep_instance)


def run_check(
    root: Path,
    env: dict,
    cid: str,
    timeout: float = CHECK_TIMEOUT,
    params: dict | None = None,
    seed: int = 0,
) -> dict:
    """``fastslow check cid --json --seed seed`` in ``root`` at ``params`` (default
    :func:`check_instance`): outcome, the failing conclusion parts, violated hypotheses, undecided
    limits, the error and the seconds taken."""
    params = check_instance(cid) if params is None else params
    t0 = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "fastslow", "check", cid, "--json", "--seed", str(seed)]
            + param_arguments(params),
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout", "seconds": time.perf_counter() - t0}
    res = {
        "outcome": EXIT_OUTCOMES.get(out.returncode, f"exit {out.returncode}"),
        "seconds": time.perf_counter() - t0,
    }
    try:
        data = json.loads(out.stdout)
    except json.JSONDecodeError:
        res["stderr"] = out.stderr.strip().splitlines()[-1:] or [""]
        return res
    res["failed_parts"] = [k for k, d in data.get("conclusion", {}).items() if not d.get("holds")]
    res["violated"] = [k for k, d in data.get("hypotheses", {}).items() if not d.get("holds")]
    res["limits"] = [k for k, d in data.get("limits", {}).items() if not d.get("holds")]
    if data.get("error"):
        res["error"] = data["error"]
    return res


def run_mutant(
    mutant: Mutant,
    root: Path,
    cache: Path,
    timeout: float = CHECK_TIMEOUT,
    seeds: tuple[int, ...] = SEEDS,
) -> dict:
    """Apply ``mutant`` to the scratch tree ``root``, run each of its claims on each of ``seeds``
    (in order, a claim's remaining seeds skipped once one ends ``fails``), revert. ``caught`` when
    some claim ends ``fails`` on some seed. ``runs`` holds each claim's decisive run (the first
    ``fails``, else the first seed's) with ``seeds``: the outcome per seed run."""
    env = environment(root, cache)
    runs = {}
    with applied(mutant, root):
        for cid in mutant.claims:
            per_seed = {}
            for seed in seeds:
                r = run_check(
                    root, env, cid, timeout, {**check_instance(cid), **mutant.params}, seed
                )
                per_seed[seed] = r
                if r["outcome"] == "fails":
                    break
            decisive = next(
                (r for r in per_seed.values() if r["outcome"] == "fails"), per_seed[seeds[0]]
            )
            runs[cid] = {
                **decisive,
                "seconds": sum(r["seconds"] for r in per_seed.values()),
                "seeds": {s: r["outcome"] for s, r in per_seed.items()},
            }
    return {
        **asdict(mutant),
        "runs": runs,
        "caught": any(r["outcome"] == "fails" for r in runs.values()),
    }


def run_catalogue(
    ids: list[str] | None = None,
    src: Path = ROOT,
    scratch: Path | None = None,
    timeout: float = CHECK_TIMEOUT,
    progress=None,
) -> list[dict]:
    """Run the mutants ``ids`` (all by default) on one scratch copy of ``src``; ``progress`` is
    called with each result as it arrives."""
    problems = catalogue_problems(src)
    if problems:
        raise ValueError("the catalogue does not apply: " + "; ".join(problems))
    chosen = [m for m in CATALOGUE if ids is None or m.id in ids]
    unknown = sorted(set(ids or ()) - {m.id for m in chosen})
    if unknown:
        raise ValueError(f"unknown mutant {unknown[0]!r}")
    scratch = scratch or Path(os.environ.get("TMPDIR", "/tmp")) / "fastslow-mutants"
    scratch.mkdir(parents=True, exist_ok=True)
    root = scratch_tree(src, scratch / "tree")
    cache = scratch / "numba_cache"
    where = imported_from(root, environment(root, cache))
    if root.resolve() not in where.resolve().parents:
        raise RuntimeError(f"the scratch tree's checks import from {where}, not from {root}")
    results = []
    for m in chosen:
        res = run_mutant(m, root, cache, timeout)
        results.append(res)
        if progress:
            progress(res)
    return results


# ----------------------------------------------------------------------------- the table


def describe_run(run: dict) -> str:
    """``fails (part, …)``, ``outside-hypotheses (hyp)``, ``undecided (limit)`` or the outcome."""
    o = run["outcome"]
    why = {
        "fails": run.get("failed_parts"),
        "outside-hypotheses": run.get("violated"),
        "undecided": run.get("limits"),
    }.get(o)
    if o == "error" and run.get("error"):
        why = [run["error"].get("type", "")]
    text = f"{o} ({', '.join(why)})" if why else o
    if len(run.get("seeds", {})) > 1:
        text += " [seeds " + ", ".join(f"{s}: {x}" for s, x in run["seeds"].items()) + "]"
    return text


def table(results: list[dict]) -> dict:
    """The benchmark-style table of a catalogue run."""
    rows = [
        [
            r["id"],
            r["origin"],
            r["plants"],
            " ".join(r["claims"])
            + "".join(f" {k}={v}" for k, v in (r.get("params") or {}).items()),
            "; ".join(f"{c}: {describe_run(run)}" for c, run in r["runs"].items()),
            "caught" if r["caught"] else "SURVIVED",
            round(sum(run["seconds"] for run in r["runs"].values()), 1),
        ]
        for r in results
    ]
    caught = sum(r["caught"] for r in results)
    return {
        "title": "Mutation testing: planted bugs and the claims that catch them",
        "columns": ["mutant", "origin", "plants", "claims run", "outcomes", "caught", "seconds"],
        "rows": rows,
        "notes": [
            f"{caught} of {len(results)} mutants caught (a claim ends `fails`); a mutant that ends "
            "only in holds, outside-hypotheses, undecided or error survives."
        ],
    }


def markdown(results: list[dict], header: str = "") -> str:
    t = table(results)
    lines = [f"# {t['title']}", ""]
    if header:
        lines += [header, ""]
    lines += [
        "Each mutant is applied to a scratch copy of the tree (`tools/mutation/mutants.py`) and its claims "
        "run through `python -m fastslow check ID --json` at their sweep instance (the main "
        "instance the seed sweep repeats: the defaults, E1's short profile) on the seeds "
        f"{', '.join(map(str, SEEDS))} (a claim's later seeds are skipped once one fails), with "
        "the mutant's own parameters where the mutated code serves another instance (shown with "
        "the claims).",
        "",
        "| " + " | ".join(t["columns"]) + " |",
        "|" + "---|" * len(t["columns"]),
    ]
    for row in t["rows"]:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    lines += ["", *t["notes"], ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.mutation.mutants", description=__doc__)
    ap.add_argument("ids", nargs="*", help="mutant ids (default: the whole catalogue)")
    ap.add_argument("--markdown", help="write the table to this Markdown file")
    ap.add_argument("--json", help="write the results to this JSON file")
    ap.add_argument("--scratch", help="scratch directory (default $TMPDIR/fastslow-mutants)")
    ap.add_argument("--list", action="store_true", help="list the catalogue and exit")
    a = ap.parse_args(argv)
    if a.list:
        for m in CATALOGUE:
            print(f"{m.id}\t{m.file}\t{' '.join(m.claims)}\t{m.plants}")
        return 0
    try:
        for path, option in ((a.json, "--json"), (a.markdown, "--markdown")):
            if path:
                writable_file(path, option)
    except ValueError as exc:
        print(f"mutants: bad input: {exc}", file=sys.stderr)
        return 2
    done: list[dict] = []

    def progress(res):
        done.append(res)
        print(
            f"{res['id']}: {'caught' if res['caught'] else 'SURVIVED'} — "
            + "; ".join(f"{c}: {describe_run(r)}" for c, r in res["runs"].items()),
            flush=True,
        )
        if a.json:
            write_output(a.json, json.dumps(done, indent=1, default=str), "--json")

    try:
        results = run_catalogue(
            a.ids or None, scratch=Path(a.scratch) if a.scratch else None, progress=progress
        )
    except ValueError as exc:
        print(f"mutants: bad input: {exc}", file=sys.stderr)
        return 2
    if a.markdown:
        write_output(a.markdown, markdown(results), "--markdown")
    return 0 if all(r["caught"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
