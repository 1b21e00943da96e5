"""Training one language model: data order, progress, atomic checkpoints, and the run cache.

A run is a :class:`RunSpec` (model config, optimiser, schedule, token budget, seed) on a
:class:`~numerics.lm.corpus.Corpus`. :func:`run` returns its :class:`dict` result:

* ``history``: at every evaluation, tokens seen, the mean training loss since the previous one,
  the held-out loss on the first ``eval_windows`` held-out windows, and every gate;
* ``heldout_loss``: the final held-out loss on all (at most ``eval_max``) held-out windows;
  ``validation_loss`` the same on the validation split (for choosing a learning rate without
  looking at the held-out split);
* ``heldout_loss_gates_zeroed``: the final held-out loss of the same parameters with every gate
  set to 0 (the paired cost of closing the trained gates is its excess over ``heldout_loss``);
* ``gate_updates``: per gate, the number of training steps that changed its value (0 for the
  frozen model by construction; a coupled gate that never moves was never trained), out of
  ``steps``;
* ``gate_grad``: per layer, the mean, standard deviation and z-score of ``∂loss/∂g`` over the
  final held-out batches (for the frozen model: D9's ``∂R/∂g`` at ``g = 0`` on the trained
  network);
* ``train_seconds`` and ``seconds_per_token``: wall-clock time of the training steps only
  (forward, backward, update; not evaluation or checkpoints). Information only: a cached run
  carries the time of whatever conditions it ran in, so no comparison of costs may read it
  (:func:`training_step` gives a step to time instead).

**Determinism.** The initial weights come from ``SeedSequence(seed, spawn_key=(0,))`` (the same
for the three kinds), the windows of step ``s`` from ``SeedSequence(seed, spawn_key=(1, s))``
(the same data order for the three kinds, and no random state to checkpoint). With a
single-threaded BLAS the same spec gives the same result bit for bit, and a run resumed from a
checkpoint equals the uninterrupted run bit for bit (``tests/test_lm_train.py``).

**Checkpoints and cache.** Every ``checkpoint_every`` steps the state (parameters, AdamW moments,
step, history, time) is written to ``<cache>/<key>.ckpt.npz`` by a temporary file and
``os.replace`` (a reader sees the old or the new file, never a torn one); a new call resumes from
it. A finished run is stored as ``<cache>/<key>.json`` (and its parameters as ``.npz``) and
returned from there by later calls. ``key`` hashes the spec, the corpus SHA-256, the SHA-256 of
each split, the :func:`code_version` (the sources of :mod:`numerics.lm` and the few
:mod:`numerics` modules it computes with) and the BLAS thread count when it is not 1, so a changed
spec, text, split, code or thread count never reads a stale result (single-threaded runs, the
default of :mod:`numerics.threads`, keep the keys they had before the thread count was keyed).
:func:`cached` says whether a run is in the cache without training it. The cache directory is the
``cache_dir`` argument, else ``$FASTSLOW_LM_CACHE``, else ``$XDG_CACHE_HOME/fastslow/lm``, else
``~/.cache/fastslow/lm``; ``cache_dir=False`` disables it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.numerics import threads
from fastslow.numerics.lm.corpus import Corpus
from fastslow.numerics.lm.network import Network
from fastslow.numerics.lm.optim import AdamW, Schedule, clip_scale, learning_rate
from fastslow.numerics.lm.params import LMConfig, gate_names, init_params
from fastslow.numerics.user_cache import user_cache_dir

__all__ = [
    "RunSpec",
    "run",
    "run_params",
    "cached",
    "run_key",
    "training_step",
    "code_version",
    "default_cache_dir",
    "heldout_windows",
]

_PKG = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RunSpec:
    """One training run. ``tokens`` is the training budget (rounded up to whole steps of
    ``batch·T`` tokens); ``warmup`` a fraction of the steps."""

    cfg: LMConfig
    tokens: int
    seed: int
    batch: int = 8
    lr: float = 3e-3
    warmup: float = 0.05
    final_lr: float = 0.1
    weight_decay: float = 0.01
    clip: float = 1.0
    betas: tuple = (0.9, 0.99)
    eps: float = 1e-8
    evals: int = 10
    eval_windows: int = 32
    eval_max: int = 256
    checkpoint_every: int = 100
    progress: bool | None = None
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def steps(self) -> int:
        return max(1, math.ceil(self.tokens / (self.batch * self.cfg.T)))

    def schedule(self) -> Schedule:
        return Schedule(self.lr, max(1, round(self.warmup * self.steps)), self.steps, self.final_lr)

    def describe(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("progress")
        d.pop("meta")
        d["betas"] = list(self.betas)
        return d


CODE_FILES = ("model/weights.py", "model/masks.py", "model/activations.py", "validation.py")
"""The modules of :mod:`numerics` outside :mod:`numerics.lm` that a run's arithmetic depends on."""


def code_version() -> str:
    """SHA-256 (16 hex digits) of the sources of :mod:`numerics.lm` and of :data:`CODE_FILES`."""
    h = hashlib.sha256()
    for path in sorted([*_PKG.glob("*.py"), *(_PKG.parent / f for f in CODE_FILES)]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def run_key(spec: RunSpec, corpus: Corpus) -> str:
    """The cache key of ``spec`` on ``corpus``: spec, corpus, splits, code and, when it is not 1,
    the BLAS thread count in effect (:func:`numerics.threads.blas_threads`; results differ in the
    last digits between thread counts). A single-threaded run keeps the key it always had."""
    what = {
        "spec": spec.describe(),
        "corpus": corpus.sha256,
        "splits": corpus.split_sha256(),
        "code": code_version(),
    }
    n = threads.blas_threads()
    if n != 1:
        what["blas_threads"] = n
    blob = json.dumps(what, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


CACHE_ENV = "FASTSLOW_LM_CACHE"
"""The variable naming the run cache's folder (first in :func:`default_cache_dir`'s order)."""


def default_cache_dir() -> Path:
    """The run cache's folder: ``$FASTSLOW_LM_CACHE``, else ``$XDG_CACHE_HOME/fastslow/lm``, else
    ``~/.cache/fastslow/lm``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else user_cache_dir() / "lm"


def heldout_windows(corpus: Corpus, T: int, limit: int, split: str = "heldout") -> np.ndarray:
    """Consecutive non-overlapping windows of ``T + 1`` tokens of the held-out (or
    ``split="validation"``) split, at most ``limit``."""
    tokens = getattr(corpus, split)
    n = min(tokens.size // (T + 1), limit)
    return tokens[: n * (T + 1)].reshape(n, T + 1).astype(np.int64)


def step_windows(spec: RunSpec, corpus: Corpus, step: int) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence(spec.seed, spawn_key=(1, step)))
    T = spec.cfg.T
    starts = rng.integers(0, corpus.train.size - T - 1, size=spec.batch)
    return corpus.train[starts[:, None] + np.arange(T + 1)[None, :]].astype(np.int64)


def atomic_write(path: Path, write) -> None:
    """``write(f)`` into a temporary file in ``path``'s directory, fsync, then rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _save_checkpoint(path: Path, params: dict, opt: AdamW, state: dict) -> None:
    arrays = {f"p:{k}": a for k, a in params.items()}
    arrays.update({f"o:{k}": a for k, a in opt.state().items()})
    arrays["state"] = np.frombuffer(json.dumps(state).encode(), dtype=np.uint8)
    atomic_write(path, lambda f: np.savez(f, **arrays))


def _load_checkpoint(path: Path, params: dict, opt: AdamW) -> dict:
    with np.load(path) as z:
        for k in params:
            params[k] = np.array(z[f"p:{k}"])
        opt.load({k[2:]: z[k] for k in z.files if k.startswith("o:")})
        return json.loads(z["state"].tobytes().decode())


def gate_gradients(net: Network, params: dict, wins: np.ndarray, batch: int) -> dict:
    """Per layer: mean, SD and z-score of ``∂loss/∂g`` over the held-out batches of ``batch``
    windows (the mean of ``n`` batch gradients divided by its standard error)."""
    L = net.cfg.L
    gs = []
    for i in range(0, wins.shape[0] - batch + 1, batch):
        _, g = net.loss_and_grad(params, wins[i : i + batch])
        gs.append([float(g[f"{l}.g"]) for l in range(L)])
    a = np.array(gs)
    mean, sd = a.mean(axis=0), a.std(axis=0, ddof=1)
    z = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0) * np.sqrt(a.shape[0]), 0.0)
    return {"mean": mean.tolist(), "sd": sd.tolist(), "z": z.tolist(), "batches": a.shape[0]}


def _evaluate(net, params, wins, spec) -> float:
    if wins.shape[0] == 0:
        return float("nan")
    losses = [
        net.loss(params, wins[i : i + spec.batch]) for i in range(0, wins.shape[0], spec.batch)
    ]
    sizes = [min(spec.batch, wins.shape[0] - i) for i in range(0, wins.shape[0], spec.batch)]
    return float(np.average(losses, weights=sizes))


def _progress(spec: RunSpec, step: int, seconds: float, loss: float, params: dict) -> None:
    tok = (step + 1) * spec.batch * spec.cfg.T
    gmax = max(abs(float(params[n])) for n in gate_names(spec.cfg))
    label = spec.meta.get("label", f"{spec.cfg.kind} seed {spec.seed}")
    print(
        f"[lm {label}] {tok:>8d}/{spec.steps * spec.batch * spec.cfg.T} tokens  "
        f"{tok / max(seconds, 1e-9):7.0f} tok/s  loss {loss:.3f}  max|g| {gmax:.2e}",
        file=sys.stderr,
        flush=True,
    )


def shows_progress(spec: RunSpec) -> bool:
    """Whether a run prints its progress lines on stderr: as ``spec.progress`` says, else only a
    long run (100k tokens or more) and only when stderr is a terminal (a log file or a pipe gets
    no progress lines)."""
    if spec.progress is not None:
        return bool(spec.progress)
    return spec.tokens >= 100_000 and sys.stderr.isatty()


def _eval_steps(spec: RunSpec) -> set:
    return {round((k + 1) * spec.steps / spec.evals) - 1 for k in range(spec.evals)}


def train(spec: RunSpec, corpus: Corpus, checkpoint: Path | None = None, stop_after=None):
    """``(result, params)`` of the run (resuming from ``checkpoint`` if it exists); with
    ``stop_after = k`` it stops after step ``k`` with the checkpoint written (tests)."""
    cfg, net, sch = spec.cfg, Network(spec.cfg), spec.schedule()
    params = init_params(cfg, np.random.SeedSequence(spec.seed, spawn_key=(0,)))
    frozen = set() if cfg.gates_trained else set(gate_names(cfg))
    trained = [n for n in params if n not in frozen]
    opt = AdamW(params, trained, betas=spec.betas, eps=spec.eps, weight_decay=spec.weight_decay)
    wins = heldout_windows(corpus, cfg.T, spec.eval_max)
    gates = gate_names(cfg)
    state: dict[str, Any] = {
        "step": 0,
        "history": [],
        "seconds": 0.0,
        "loss_sum": 0.0,
        "loss_n": 0,
        "gate_updates": [0] * len(gates),
    }
    if checkpoint is not None and checkpoint.exists():
        state = _load_checkpoint(checkpoint, params, opt)
    show = shows_progress(spec)
    evals, last_shown = _eval_steps(spec), time.perf_counter()
    for s in range(state["step"], spec.steps):
        w = step_windows(spec, corpus, s)
        t0 = time.perf_counter()
        loss, grads = net.loss_and_grad(params, w)
        _, scale = clip_scale(grads, trained, spec.clip)
        before = [float(params[n]) for n in gates]
        opt.step(params, grads, learning_rate(sch, s), scale)
        state["seconds"] += time.perf_counter() - t0
        for i, n in enumerate(gates):
            state["gate_updates"][i] += float(params[n]) != before[i]
        state["loss_sum"] += loss
        state["loss_n"] += 1
        state["step"] = s + 1
        if s in evals:
            state["history"].append(
                {
                    "tokens": (s + 1) * spec.batch * cfg.T,
                    "train_loss": state["loss_sum"] / state["loss_n"],
                    "heldout_loss": _evaluate(net, params, wins[: spec.eval_windows], spec),
                    "gates": [float(params[n]) for n in gate_names(cfg)],
                }
            )
            state["loss_sum"], state["loss_n"] = 0.0, 0
        if show and time.perf_counter() - last_shown > 5.0:
            _progress(spec, s, state["seconds"], loss, params)
            last_shown = time.perf_counter()
        if checkpoint is not None and ((s + 1) % spec.checkpoint_every == 0 or s + 1 == stop_after):
            _save_checkpoint(checkpoint, params, opt, state)
        if stop_after is not None and s + 1 >= stop_after:
            return None, params
    tokens = spec.steps * spec.batch * cfg.T
    closed = {**params, **{n: np.zeros(()) for n in gates}}
    val = heldout_windows(corpus, cfg.T, spec.eval_max, "validation")
    result = {
        "spec": spec.describe(),
        "corpus_sha256": corpus.sha256,
        "code_version": code_version(),
        "tokens": tokens,
        "history": state["history"],
        "heldout_loss": _evaluate(net, params, wins, spec),
        "heldout_tokens": int(wins.shape[0] * cfg.T),
        "heldout_loss_gates_zeroed": _evaluate(net, closed, wins, spec) if cfg.slow else None,
        "validation_loss": _evaluate(net, params, val, spec),
        "steps": spec.steps,
        "gate_updates": state["gate_updates"],
        "gates": [float(params[n]) for n in gates],
        "gate_grad": gate_gradients(net, params, wins, spec.batch) if cfg.slow else None,
        "train_seconds": state["seconds"],
        "seconds_per_token": state["seconds"] / tokens,
    }
    return result, params


def _cache_files(spec: RunSpec, corpus: Corpus, cache_dir) -> tuple[Path, Path, Path]:
    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = run_key(spec, corpus)
    return base / f"{key}.json", base / f"{key}.ckpt.npz", base / f"{key}.npz"


def cached(spec: RunSpec, corpus: Corpus, cache_dir=None) -> bool:
    """Whether the finished run of ``spec`` on ``corpus`` is in the cache (``cache_dir`` as for
    :func:`run`; ``False``: never)."""
    return cache_dir is not False and _cache_files(spec, corpus, cache_dir)[0].exists()


def run(spec: RunSpec, corpus: Corpus, cache_dir=None, train_missing: bool = True) -> dict:
    """The result of ``spec`` on ``corpus``: from the cache if present, else trained (resuming a
    checkpoint if one exists) and stored; with ``train_missing=False`` a run not in the cache is
    a ``LookupError`` instead."""
    if cache_dir is False:
        return train(spec, corpus)[0]
    done, ckpt, weights = _cache_files(spec, corpus, cache_dir)
    if done.exists():
        return json.loads(done.read_text())
    if not train_missing:
        raise LookupError(f"run {spec.meta.get('label', spec.seed)} is not in the cache {done}")
    key = done.stem
    result, params = train(spec, corpus, checkpoint=ckpt)
    result["cached_from"] = key
    atomic_write(weights, lambda f: np.savez(f, **params))
    atomic_write(done, lambda f: f.write(json.dumps(result).encode()))
    if ckpt.exists():
        ckpt.unlink()
    return result


def run_params(spec: RunSpec, corpus: Corpus, cache_dir=None, train_missing: bool = True) -> dict:
    """The trained parameters ``{name: array}`` of ``spec`` on ``corpus``: :func:`run` (from the
    cache, or trained when ``train_missing``), then the weights it stored beside its result."""
    run(spec, corpus, cache_dir, train_missing)
    with np.load(_cache_files(spec, corpus, cache_dir)[2], allow_pickle=False) as z:
        return {k: np.array(z[k]) for k in z.files}


def training_step(cfg: LMConfig, batch: int, corpus: Corpus, seed: int = 0):
    """``(step, params)``: a callable doing one training step of ``cfg`` (forward, backward,
    clipping, AdamW) on a fixed batch of training windows, for timing, and the parameters that
    every call updates."""
    net = Network(cfg)
    params = init_params(cfg, np.random.SeedSequence(seed, spawn_key=(0,)))
    frozen = set() if cfg.gates_trained else set(gate_names(cfg))
    trained = [n for n in params if n not in frozen]
    opt = AdamW(params, trained, weight_decay=0.01)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
    starts = rng.integers(0, corpus.train.size - cfg.T - 1, size=batch)
    w = corpus.train[starts[:, None] + np.arange(cfg.T + 1)[None, :]].astype(np.int64)

    def step() -> None:
        _, grads = net.loss_and_grad(params, w)
        opt.step(params, grads, 1e-4, clip_scale(grads, trained, 1.0)[1])

    return step, params
