"""Trained weights as a user system: :class:`TrainedStack`, from an E1 run or from a weights file.

A :class:`TrainedStack` is a :class:`~verify.systems.DepthFlow` whose model is not drawn from a
seed but loaded: the configuration, every layer's eight weight matrices and its gate, and the
token embedding (the head is kept when present; no claim reads it). Every claim that takes a
``DepthFlow`` (A1, A3, D1, D3, D4, D5, D6, D7, F1) takes it and decides its hypotheses on it as on
any flow; the size limits of a claim's dense maps apply to it as to any flow (bad input, exit 2).

Two sources:

* :meth:`TrainedStack.from_file` — ``.npz`` or safetensors in the layout of
  :mod:`verify.weights_file` (``docs/trained_weights.md``: names, shapes, the mapping from a
  PyTorch ``state_dict``); a bad file is bad input naming the tensor.
* :meth:`TrainedStack.from_e1` — a run of claim E1 by arm (``coupled``, ``frozen``, ``dense``),
  run seed and token count, in the short or the paper profile, read from the language-model run
  cache through :mod:`numerics.lm.train`. A run missing from the cache is bad input saying how to
  train it; ``train=True`` trains it (progress on stderr) and caches it. The ``dense`` arm is
  never trained by E1 (with every gate at 0 the frozen model computes the dense model's function
  bit for bit): it is the frozen run's weights with the slow path switched off.

On the command line (``--system``, :func:`parse_spec`): ``e1:ARM:SEED:TOKENS[:PROFILE][:train]``
or ``FILE.npz`` / ``FILE.safetensors`` with optional ``:KEY=VALUE,...`` settings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from fastslow.numerics.model.weights import WEIGHT_NAMES, LayerParams, Model, ModelConfig

from . import weights_file
from .systems import DepthFlow, _check_name

__all__ = ["TrainedStack", "ARMS", "PROFILES", "parse_spec", "e1_run_params", "train_small"]

ARMS = ("coupled", "frozen", "dense")
"""E1's three models; ``dense`` is the frozen run's weights without the slow path."""
PROFILES = ("short", "paper")


@dataclass
class TrainedStack(DepthFlow):
    """Trained weights of the suite's stack (see the module docstring).

    ``params`` maps the names of :mod:`verify.weights_file` to arrays; ``T``, ``P``, ``mask`` (the
    fast mask: a name or a boolean T×T array), ``sigma``, ``h``, ``norm_eps`` and ``slow`` are the
    architecture's settings; ``source`` records where the weights came from (file and SHA-256, or
    the E1 run). ``d``, ``m``, ``L``, ``vocab`` are read from the tensors, and ``gate`` is the
    trained gate of largest magnitude (A1 draws its per-layer gates about it; the model keeps
    every layer's own trained gate).
    """

    mask: Any = "causal"
    P: int = 0
    d: int = field(default=0, init=False)
    T: int | None = None
    L: int = field(default=0, init=False)
    gate: float = field(default=0.0, init=False)
    name: str = "trained stack"
    params: Any = None
    h: float = 1.0
    norm_eps: float = 1e-6
    slow: bool = True
    source: Any = None
    m: int = field(default=0, init=False)
    vocab: int = field(default=0, init=False)
    kind: str = field(default="TrainedStack", init=False, repr=False)
    replaces: ClassVar[tuple[str, ...]] = DepthFlow.replaces

    def __post_init__(self):
        _check_name(self.name)
        if not isinstance(self.params, dict):
            raise TypeError(
                f"params must be a dict of arrays in the layout of docs/trained_weights.md, got "
                f"{type(self.params).__name__}"
            )
        tensors = weights_file.check_tensors(self.name, self.params)
        self.params = tensors
        self.vocab, self.d = tensors["emb"].shape
        self.m = tensors["0.W1"].shape[1]
        self.L = weights_file.layer_count(tensors)
        gates = [float(tensors[f"{l}.g"]) for l in range(self.L)]
        self.gate = max(gates, key=abs)
        conf = weights_file.settings(
            {},
            {"T": self.T, "P": self.P, "sigma": self.sigma, "h": self.h}
            | {"norm_eps": self.norm_eps, "slow": self.slow}
            | ({"fast_mask": self.mask} if isinstance(self.mask, str) else {}),
        )
        self.T, self.P, self.sigma = conf["T"], conf["P"], conf["sigma"]
        self.h, self.norm_eps, self.slow = conf["h"], conf["norm_eps"], conf["slow"]
        if not isinstance(self.mask, str):
            arr = np.asarray(self.mask)
            if arr.dtype != bool or arr.shape != (self.T, self.T):
                raise ValueError(f"mask must be a named mask or a boolean {self.T}×{self.T} array")
            self.mask = arr
        self.config  # noqa: B018  (validates the whole configuration)

    @property
    def config(self) -> ModelConfig:
        return ModelConfig(
            T=int(self.T or 0),
            P=self.P,
            d=self.d,
            m=self.m,
            mask=self.mask,
            sigma=self.sigma,
            h=self.h,
            slow=self.slow,
            norm_eps=self.norm_eps,
        )

    def layer(self, l: int) -> LayerParams:
        """Layer ``l``'s trained weights and gate (copies)."""
        p = self.params
        return LayerParams(**{n: p[f"{l}.{n}"].copy() for n in WEIGHT_NAMES}, g=float(p[f"{l}.g"]))

    def model(self, *, h: float | None = None) -> Model:
        """The trained model (``h`` overrides the depth step)."""
        cfg = self.config if h is None else self.config.replace(h=h)
        return Model(cfg, tuple(self.layer(l) for l in range(self.L)))

    @property
    def embedding(self) -> np.ndarray:
        """The token embedding ``(V, d)``."""
        return self.params["emb"]

    @property
    def gates(self) -> list[float]:
        return [float(self.params[f"{l}.g"]) for l in range(self.L)]

    def describe(self) -> dict:
        mask = (
            self.mask if isinstance(self.mask, str) else np.asarray(self.mask).astype(int).tolist()
        )
        return {
            "kind": self.kind,
            "name": self.name,
            "source": self.source,
            "mask": mask,
            **{k: getattr(self, k) for k in ("T", "P", "d", "m", "L", "vocab", "sigma", "h")},
            "slow": self.slow,
            "gates": self.gates,
            "weights_sha256": self.weights_sha256(),
        }

    def weights_sha256(self) -> str:
        """SHA-256 (24 hex digits) of every tensor's name, shape and bytes, in name order."""
        h = hashlib.sha256()
        for k in sorted(self.params):
            a = np.ascontiguousarray(self.params[k])
            h.update(f"{k}{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()[:24]

    def fingerprint(self) -> str:
        h = hashlib.sha256(type(self).__qualname__.encode())
        h.update(self.weights_sha256().encode())
        conf = {k: getattr(self, k) for k in ("T", "P", "sigma", "h", "norm_eps", "slow")}
        h.update(repr(sorted(conf.items())).encode())
        h.update(
            np.asarray(self.mask).tobytes()
            if not isinstance(self.mask, str)
            else self.mask.encode()
        )
        return h.hexdigest()[:24]

    @classmethod
    def from_file(cls, path, name: str | None = None, **settings) -> TrainedStack:
        """The weights file ``path`` (``.npz`` or ``.safetensors``); ``settings`` (``T``, ``P``,
        ``fast_mask``, ...) override its metadata. ``ValueError`` naming what is wrong."""
        tensors, conf, sha = weights_file.read(path, settings)
        return cls(
            mask=conf["fast_mask"],
            P=conf["P"],
            T=conf["T"],
            sigma=conf["sigma"],
            h=conf["h"],
            norm_eps=conf["norm_eps"],
            slow=conf["slow"],
            params=tensors,
            name=name or Path(path).name,
            source={"file": str(path), "sha256": sha},
        )

    @classmethod
    def from_e1(
        cls,
        arm: str,
        seed: int,
        tokens: int,
        profile: str | None = None,
        *,
        train: bool = False,
        corpus: str = "pydoc",
        cache_dir=None,
    ) -> TrainedStack:
        """The E1 run of ``arm`` (:data:`ARMS`) with run seed ``seed`` trained for ``tokens``
        tokens in ``profile`` (:data:`PROFILES`; default: ``short`` for the short sweep's token
        counts, else ``paper``), from the run cache; ``train=True`` trains a missing run (and,
        in the paper profile, the learning-rate selection runs), else a missing run is a
        ``ValueError`` saying how to train it."""
        from fastslow.numerics.lm import train as lm_train  # deferred: the language models

        spec, lm_corpus = e1_run_spec(arm, seed, tokens, profile, train, corpus, cache_dir)
        if not lm_train.cached(spec, lm_corpus, cache_dir) and not train:
            raise ValueError(missing_message(arm, seed, tokens, spec, corpus, cache_dir))
        params = run_weights(spec, lm_corpus, cache_dir, train)
        cfg = spec.cfg
        return cls(
            mask=cfg.fast_mask,
            P=cfg.P,
            T=cfg.T,
            sigma=cfg.sigma,
            h=cfg.h,
            norm_eps=cfg.norm_eps,
            slow=arm != "dense",
            params=params,
            name=f"E1 {arm} seed {seed} {tokens} tokens",
            source={
                "e1_run": {"arm": arm, "seed": seed, "tokens": tokens, "corpus": corpus},
                "profile": profile_for(tokens, profile),
                "spec": spec.describe(),
            },
        )


def train_small(
    *,
    T: int = 16,
    P: int = 4,
    d: int = 4,
    m: int = 8,
    L: int = 2,
    tokens: int = 20_000,
    seed: int = 0,
    fast_mask: str = "block_causal",
    arm: str = "coupled",
    lr: float = 1e-2,
    batch: int = 4,
    cache_dir=None,
) -> TrainedStack:
    """Train (or read from the run cache) a language model of the suite's stack on E1's text
    (:func:`numerics.lm.train.run`, progress on stderr) at sizes of your choice, E1's optimiser
    and schedule: the default is small enough for every claim's dense maps (``T·d = 64``, F1's
    ``P ≤ 4, d ≤ 4``) and trains 20k tokens in well under a minute. Named explicitly: nothing
    else in the suite trains a network for a system."""
    from fastslow.numerics.lm import corpus as lm_corpus  # deferred: the language models
    from fastslow.numerics.lm.params import LMConfig  # deferred: the language models
    from fastslow.numerics.lm.train import RunSpec  # deferred: the language models

    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}: expected one of {', '.join(ARMS)}")
    cfg = LMConfig(
        lm_corpus.VOCAB,
        T,
        P,
        d,
        m,
        L,
        kind="frozen" if arm == "dense" else arm,
        fast_mask=fast_mask,
    )
    label = f"{arm} seed {seed} T={T} P={P} d={d} m={m} L={L} {fast_mask}"
    spec = RunSpec(cfg, tokens, seed, batch=batch, lr=lr, progress=True, meta={"label": label})
    params = run_weights(spec, lm_corpus.pydoc_corpus(), cache_dir, True)
    return TrainedStack(
        mask=fast_mask,
        P=P,
        T=T,
        slow=arm != "dense",
        params=params,
        name=f"trained {label} {tokens} tokens",
        source={"trained": spec.describe()},
    )


def profile_for(tokens: int, profile: str | None) -> str:
    """``profile``, or ``short`` when ``tokens`` is one of the short sweep's counts, else
    ``paper``."""
    from .checks import e1  # deferred: the E1 unit imports the language models

    if profile is None:
        return "short" if tokens in e1.SHORT_SWEEP_TOKENS else "paper"
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: expected one of {', '.join(PROFILES)}")
    return profile


def e1_run_params(tokens: int, profile: str | None, corpus: str = "pydoc") -> dict:
    """E1's resolved parameters of a profile at ``tokens`` tokens (the short profile:
    :data:`verify.checks.e1.SHORT`)."""
    from .checks import e1  # deferred: the E1 unit imports the language models

    prof = profile_for(tokens, profile)
    base = e1.SHORT if prof == "short" else {}
    return e1.CLAIM.resolve({**base, "tokens": tokens, "corpus": corpus})


_E1_INSTANCES: dict = {}
"""E1's instance at check seed 0 by ``(tokens, profile, corpus)``: the run specs of one process
share it (building it computes the corpus's cross-block statistics)."""


def e1_run_spec(arm, seed, tokens, profile, train, corpus, cache_dir):
    """``(RunSpec, Corpus)`` of an E1 run: its profile's sizes, its learning rate (the grid's
    only value, or the frozen model's validation argmin at E1's selection seed after E1's
    ``lr_tokens`` training tokens, whatever ``tokens`` is, as E1 chooses it; read from the cache
    or trained when ``train``)."""
    from fastslow.numerics.lm import train as lm_train  # deferred: the language models

    from .checks import e1  # deferred: the E1 unit imports the language models

    if arm not in ARMS:
        raise ValueError(f"E1 arm {arm!r}: expected one of {', '.join(ARMS)}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"E1 run seed {seed!r}: expected a non-negative integer")
    key = (int(tokens), profile, corpus)
    if key not in _E1_INSTANCES:  # the corpus statistics of an instance take about a second
        _E1_INSTANCES[key] = e1.Instance(e1_run_params(tokens, profile, corpus), 0)
    inst = _E1_INSTANCES[key]
    p = inst.p
    grid = list(p["lr_grid"])
    lr = grid[0]
    if len(grid) > 1:
        # E1's rule: one rate for every token count, chosen after lr_tokens training tokens
        specs = [inst.spec("frozen", inst.selection_seed, x, p["lr_tokens"]) for x in grid]
        missing = [s for s in specs if not lm_train.cached(s, inst.corpus, cache_dir)]
        if missing and not train:
            raise ValueError(
                f"E1 learning-rate selection at {tokens} tokens is not in the run cache "
                f"({len(missing)} of {len(grid)} runs missing); train with "
                f"--system e1:{arm}:{seed}:{tokens}:train, or run fastslow check E1 "
                f"--param tokens={tokens}"
            )
        res = [lm_train.run(s, inst.corpus, cache_dir) for s in specs]
        lr = grid[int(np.argmin([r["validation_loss"] for r in res]))]
    kind = "frozen" if arm == "dense" else arm
    spec = inst.spec(kind, int(seed), lr)
    if train:
        spec = dataclasses.replace(spec, progress=True)
    return spec, inst.corpus


def run_weights(spec, corpus, cache_dir, train: bool) -> dict:
    """The trained parameters of the run ``spec`` (:func:`numerics.lm.train.run_params`: from
    the run cache, or trained when ``train``)."""
    from fastslow.numerics.lm import train as lm_train  # deferred: the language models

    return lm_train.run_params(spec, corpus, cache_dir, train_missing=train)


def missing_message(arm, seed, tokens, spec, corpus, cache_dir) -> str:
    from fastslow.numerics.lm import train as lm_train  # deferred: the language models

    where = cache_dir or lm_train.default_cache_dir()
    suffix = "" if corpus == "pydoc" else f" (corpus {corpus})"
    return (
        f"E1 run {arm} seed {seed} at {tokens} tokens{suffix} is not in the run cache {where}; "
        f"train it with --system e1:{arm}:{seed}:{tokens}:train "
        f"(or TrainedStack.from_e1(..., train=True))"
    )


def parse_spec(spec: str, option: str = "--system") -> TrainedStack:
    """The trained stack of a ``--system`` value other than ``FILE.py:NAME``:
    ``e1:ARM:SEED:TOKENS[:PROFILE][:train]`` or ``FILE.npz|FILE.safetensors[:KEY=VALUE,...]``;
    ``ValueError`` naming ``option`` and what is wrong."""
    try:
        if spec.startswith("e1:"):
            parts = spec.split(":")[1:]
            train = parts[-1:] == ["train"]
            if train:
                parts = parts[:-1]
            if len(parts) not in (3, 4) or not (parts[1].isdigit() and parts[2].isdigit()):
                raise ValueError(
                    f"expects e1:ARM:SEED:TOKENS[:PROFILE][:train] (ARM one of "
                    f"{', '.join(ARMS)}), got {spec!r}"
                )
            profile = parts[3] if len(parts) == 4 else None
            if train:
                print(f"{option}: training {spec} if it is not cached", file=sys.stderr)
            return TrainedStack.from_e1(
                parts[0], int(parts[1]), int(parts[2]), profile, train=train
            )
        path, _, rest = _split_file(spec)
        overrides = {}
        for item in filter(None, rest.split(",")):
            key, eq, value = item.partition("=")
            if not eq:
                raise ValueError(f"expects FILE[:KEY=VALUE,...] settings, got {item!r}")
            overrides[key.strip()] = value.strip()
        return TrainedStack.from_file(path, **overrides)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{option}: {exc}") from None


def _split_file(spec: str) -> tuple[str, str, str]:
    for suffix in (".safetensors", ".npz"):
        i = spec.find(suffix + ":")
        if i >= 0:
            return spec[: i + len(suffix)], ":", spec[i + len(suffix) + 1 :]
    return spec, "", ""


def is_trained_spec(spec: str) -> bool:
    """Whether a ``--system`` value names trained weights (an E1 run or a weights file)."""
    path = _split_file(spec)[0]
    return spec.startswith("e1:") or path.endswith((".npz", ".safetensors"))
