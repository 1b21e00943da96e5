"""E1's instance and its training runs: the corpus, its splits and statistics, the seed layout,
the learning-rate rule, the paired runs of each arm, the CPU timing of one training step, and the
identity of the held-out windows every run was evaluated on.

Every run is :func:`numerics.lm.train.run` of a :class:`~numerics.lm.train.RunSpec` (cached on
disk by its parameters, the corpus and the code: this module never changes what a run is, only
which runs the claim asks for).
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from fastslow.numerics.lm import blockstats, corpus
from fastslow.numerics.lm.network import Network
from fastslow.numerics.lm.params import LMConfig
from fastslow.numerics.lm.train import RunSpec, default_cache_dir, run, training_step

from ...verdict import Diagnostic

SEED_STRIDE = 1000
PILOT_OFFSET = 900
SELECTION_OFFSET = 999
HELDOUT_TOL = 1e-9
"""``|recomputed − reported|`` held-out loss (nats/char) of one run: both are means of about
``3·10⁴`` log-probabilities of order 1 in float64 (rounding ≲ 1e-11), summed in batches of
different sizes; a run evaluated on other text (the validation split, training windows, a shifted
window) differs by ≥ 1e-3."""
EVAL_BATCH = 16
"""Windows per forward pass of the recomputation (the runs use ``batch``: another summation
order, the same mean)."""


def lm_config(p: dict, kind: str) -> LMConfig:
    """The language model of kind ``kind`` (dense, coupled, frozen) at the sizes of ``p``."""
    return LMConfig(
        vocab=corpus.VOCAB,
        T=p["T"],
        P=p["P"],
        d=p["d"],
        m=p["m"],
        L=p["L"],
        kind=kind,
        fast_mask=p["fast_mask"],
    )


def sha256_of(tokens: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(tokens).tobytes()).hexdigest()


class Instance:
    """The corpus, its splits' identity and deduplication, its cross-block statistics and the seed
    layout, all fixed before any training."""

    def __init__(self, p: dict, seed: int):
        self.p, self.seed = p, seed
        base = corpus.pydoc_corpus()
        self.corpus = (
            base if p["corpus"] == "pydoc" else corpus.noisy_copy_corpus(base, p["P"], [seed, 7])
        )
        self.declared_splits = self.corpus.split_sha256()
        """The splits' SHA-256 as declared when the instance is built, before any run."""
        self.structure = blockstats.neighbour_mutual_information(
            self.corpus.train, p["P"], corpus.VOCAB, np.random.SeedSequence(seed, spawn_key=(8,))
        )
        self.duplicates = self.corpus.stats["heldout"]
        root = SEED_STRIDE * seed
        self.selection_seed = root + SELECTION_OFFSET
        self.pilot_seeds = [root + PILOT_OFFSET + i for i in range(p["pilot_seeds"])]
        self.test_seeds_max = [root + i for i in range(p["max_test_seeds"] + p["extra_seeds"])]

    def spec(self, kind: str, s: int, lr: float, tokens: int | None = None) -> RunSpec:
        p = self.p
        return RunSpec(
            lm_config(p, kind),
            p["tokens"] if tokens is None else tokens,
            s,
            batch=p["batch"],
            lr=lr,
            eval_max=p["heldout_windows"],
            meta={"label": f"E1 {p['corpus']} {kind} seed {s} lr {lr:g}"},
        )


TRAIN_MISSING = {"on": True, "progress": None}
"""Whether a run missing from the cache is trained (``False``: a ``LookupError``; the figures set
it, so that they never train silently), and whether training shows its progress on stderr
(``None``: runs of ≥ 100k tokens do)."""


def train_runs(inst: Instance, specs: list) -> list[dict]:
    """:func:`numerics.lm.train.run` of every spec through the sweep API
    (:func:`verify.sweep.sweep`): ``workers`` local processes, or the Dask cluster at
    ``scheduler``; the results do not depend on either (every run carries its seeds)."""
    from fastslow.verify.sweep import executor_for, sweep  # deferred: imports the registry

    points = [
        dict(
            spec=dataclasses.replace(s, progress=TRAIN_MISSING["progress"]),
            corpus=inst.corpus,
            cache_dir=None,
            train_missing=TRAIN_MISSING["on"],
        )
        for s in specs
    ]
    scheduler = inst.p["scheduler"] or None
    with executor_for(inst.p["workers"], scheduler, tasks=len(points)) as ex:
        return sweep(run, points, executor=ex, on_error=None, label="E1 runs")


def select_lr(inst: Instance) -> tuple[float, list]:
    """The learning rate, one for every token count: the grid's only value, else the argmin of
    the frozen model's *validation* loss at the selection seed after ``lr_tokens`` training
    tokens (whatever ``tokens`` is). Returns ``(lr, validation losses)``."""
    grid = list(inst.p["lr_grid"])
    if len(grid) == 1:
        return grid[0], []
    specs = [inst.spec("frozen", inst.selection_seed, lr, inst.p["lr_tokens"]) for lr in grid]
    losses = [r["validation_loss"] for r in train_runs(inst, specs)]
    return grid[int(np.argmin(losses))], losses


def paired_runs(inst: Instance, seeds: list, lr: float) -> dict:
    """``{"coupled": [...], "frozen": [...]}``, one result per seed, interleaved."""
    specs = [inst.spec(k, s, lr) for s in seeds for k in ("coupled", "frozen")]
    res = train_runs(inst, specs)
    return {"coupled": res[0::2], "frozen": res[1::2]}


def endpoint_values(res: dict) -> dict:
    """Per seed: the held-out loss of each arm, the gap coupled − frozen, and the cost of zeroing
    the coupled model's trained gates (held-out loss with every gate 0 minus with its gates)."""
    c = np.array([r["heldout_loss"] for r in res["coupled"]])
    f = np.array([r["heldout_loss"] for r in res["frozen"]])
    z = np.array([r["heldout_loss_gates_zeroed"] for r in res["coupled"]])
    return {"coupled": c, "frozen": f, "gap": c - f, "gates_zeroed": z, "ablation": z - c}


def cpu_cost(inst: Instance, repeat: int) -> dict:
    """Best-of CPU seconds per training token of dense, coupled and frozen, one step each timed
    round-robin (:func:`verify.timing.interleaved_best`), measured now in this process."""
    from fastslow.verify.timing import interleaved_best  # deferred: imports the compiled layer

    p = inst.p
    steps = {
        k: training_step(inst.spec(k, 0, 1e-3).cfg, p["batch"], inst.corpus)[0]
        for k in ("dense", "coupled", "frozen")
    }
    best = interleaved_best(steps, repeat)
    return {k: t / (p["batch"] * p["T"]) for k, t in best.items()}


def declared_heldout_windows(inst: Instance) -> np.ndarray:
    """The held-out windows the plan declares, cut here from the held-out split (not by the
    training code): its first ``n`` consecutive ``T + 1``-token windows, ``n`` the least of
    ``heldout_windows`` and what the split holds."""
    T, split = inst.p["T"], inst.corpus.heldout
    n = min(split.size // (T + 1), inst.p["heldout_windows"])
    return np.ascontiguousarray(split[: n * (T + 1)], dtype=np.int64).reshape(n, T + 1)


def stored_weights(result: dict) -> dict:
    """The trained parameters of a cached run (``<cache>/<key>.npz``, written beside its result)."""
    path = default_cache_dir() / f"{result.get('cached_from')}.npz"
    if not path.exists():
        raise LookupError(f"the weights of run {result.get('cached_from')} are not at {path}")
    with np.load(path) as z:
        return {k: np.array(z[k]) for k in z.files}


def heldout_identity(inst: Instance, runs: dict) -> tuple[Diagnostic, dict]:
    """The held-out loss each run reports, recomputed here from its stored weights on
    :func:`declared_heldout_windows`: the windows' split must be the one declared when the
    instance was built (SHA-256) and every run's reported loss must equal the recomputed one
    within :data:`HELDOUT_TOL`. A run that evaluated other text (another split, other windows)
    fails this part; the ``heldout_deduplicated`` hypothesis only looks at the split."""
    wins = declared_heldout_windows(inst)
    split_sha = sha256_of(inst.corpus.heldout)
    worst, count = 0.0, 0
    for kind, results in runs.items():
        net = Network(lm_config(inst.p, kind))
        for r in results:
            params = stored_weights(r)
            parts = [
                (net.loss(params, wins[i : i + EVAL_BATCH]), min(EVAL_BATCH, wins.shape[0] - i))
                for i in range(0, wins.shape[0], EVAL_BATCH)
            ]
            loss = float(np.average([x for x, _ in parts], weights=[w for _, w in parts]))
            worst = max(worst, abs(loss - r["heldout_loss"]))
            count += 1
    same_split = split_sha == inst.declared_splits["heldout"]
    part = Diagnostic(
        bool(same_split and worst <= HELDOUT_TOL),
        [worst, int(same_split)],
        f"[largest |reported − recomputed| held-out loss over {count} runs, windows from the "
        f"declared held-out split (1 = SHA-256 matches)]: ≤ {HELDOUT_TOL:g} nats/char and 1",
    )
    return part, {
        "heldout_windows_sha256": sha256_of(wins),
        "heldout_windows_evaluated": int(wins.shape[0]),
        "heldout_recomputed_error_max": worst,
    }
