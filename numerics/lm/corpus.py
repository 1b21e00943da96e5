"""The offline text corpus of claim E1: CPython's own documentation, normalised and hash-identified.

**Source.** ``pydoc_data.topics.topics`` (shipped with every CPython, ≈ 465k characters in 3.11):
the reference-manual topics that ``help()`` prints — prose written by the CPython documentation
authors, nobody here. No download.

**Normalisation** (deterministic, :func:`normalise`): the topics in sorted key order, each followed
by one newline; Unicode NFKC (``…`` → ``...``); typographic quotes and dashes to ASCII (``‘’`` →
``'``, ``“”`` → ``"``, ``–—`` → ``-``); ``\\r\\n`` and ``\\r`` → ``\\n``, tab → four spaces. The
alphabet is newline plus printable ASCII (96 symbols) and one symbol for anything else (``°``,
``ß``), so the vocabulary has :data:`VOCAB` = 97 entries whatever the Python version.

**Identity.** :attr:`Corpus.sha256` is the SHA-256 of the normalised text's UTF-8 bytes; another
Python version that ships different topics gives a different hash, and every run records it.

**Splits** (:func:`split`): the text is cut into chunks of ``chunk`` characters; chunk ``i`` is
held out iff ``i ≡ every − 1`` and a validation chunk iff ``i ≡ every//2 − 1`` (mod ``every``);
the rest is the training split. The three share no character position; training windows are
drawn inside the training split only. Each split is identified by the SHA-256 of its tokens
(:meth:`Corpus.split_sha256`).

**Deduplication** (:func:`deduplicate`): the documentation repeats itself (grammar snippets,
boilerplate), and before deduplication 30 % of held-out positions start a 64-character string
found verbatim in the training split (chunks of 2048). Every ``K``-character string of the
held-out (and validation) split that occurs in the training split is removed with all ``K`` of
its positions; the remaining runs of at least ``K`` characters are concatenated. What is left has
no ``K``-string in common with training except across the junctions of two runs;
:func:`near_duplicate_fraction` measures it on the result (``Corpus.stats``). Caveat: a window of
the held-out split may span a junction, where its context comes from an unrelated run.

**Control corpus** (:func:`noisy_copy`): blocks of ``P`` characters; each block draws its
characters from the same source (``bag`` consecutive characters of the text) as its predecessor
(probability ``1 − refresh``) or from the next fresh source, with replacement and with a fraction
``flip`` of noise characters: strong, known cross-block structure (a block's bag of characters
announces the next one's) in the same alphabet.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from fastslow.numerics import validation

__all__ = [
    "ALPHABET",
    "VOCAB",
    "UNKNOWN",
    "Corpus",
    "raw_text",
    "normalise",
    "encode",
    "decode",
    "pydoc_corpus",
    "split",
    "deduplicate",
    "near_duplicate_fraction",
    "DUPLICATE_K",
    "noisy_copy",
    "noisy_copy_corpus",
]

ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
"""Newline and printable ASCII; index ``i`` is symbol ``ALPHABET[i]``."""

UNKNOWN = len(ALPHABET)
"""The index of every character outside :data:`ALPHABET`."""

VOCAB = len(ALPHABET) + 1
"""The vocabulary size (97)."""

_TRANSLATE = str.maketrans(
    {"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "\t": "    "}
)
_INDEX = np.full(0x110000, UNKNOWN, dtype=np.uint8)
_INDEX[[ord(c) for c in ALPHABET]] = np.arange(len(ALPHABET), dtype=np.uint8)


DUPLICATE_K = 64
"""Length of the verbatim strings that deduplication removes from the held-out split."""


@dataclass(frozen=True)
class Corpus:
    """An encoded corpus: ``train``, ``heldout`` and ``validation`` token arrays (``uint8`` indices
    into :data:`ALPHABET`), the SHA-256 of the text they were encoded from, where it came from,
    and ``stats`` of its deduplication (:func:`deduplicate`)."""

    name: str
    train: np.ndarray
    heldout: np.ndarray
    sha256: str
    source: str
    validation: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    stats: dict = field(default_factory=dict, compare=False)

    @property
    def chars(self) -> int:
        return int(self.train.size + self.heldout.size + self.validation.size)

    def split_sha256(self) -> dict:
        """``{split: SHA-256 of its tokens}`` for ``train``, ``validation`` and ``heldout``."""
        return {
            k: hashlib.sha256(np.ascontiguousarray(getattr(self, k)).tobytes()).hexdigest()
            for k in ("train", "validation", "heldout")
        }


def raw_text() -> str:
    """The topics of ``pydoc_data.topics`` in sorted key order, each followed by a newline."""
    from pydoc_data.topics import topics  # deferred: the data module is 0.5 MB, load on use

    return "".join(topics[k] + "\n" for k in sorted(topics))


def normalise(text: str) -> str:
    """NFKC, typographic quotes and dashes to ASCII, newlines unified, tabs to four spaces."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFKC", text).translate(_TRANSLATE)


def encode(text: str) -> np.ndarray:
    """Indices into :data:`ALPHABET` (``UNKNOWN`` for any other character), ``uint8``."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return _INDEX[codes]


def decode(tokens) -> str:
    """The text of ``tokens`` (``UNKNOWN`` shown as ``¤``)."""
    table = ALPHABET + "¤"
    return "".join(table[int(t)] for t in np.asarray(tokens).ravel())


def split(tokens: np.ndarray, chunk: int = 2048, every: int = 10):
    """``(train, validation, heldout)``: chunk ``i`` (of ``chunk`` tokens) is held out iff
    ``i % every == every − 1``, validation iff ``i % every == every // 2 − 1``, else training;
    each split is its chunks concatenated in order."""
    chunk = validation.positive_int("chunk", chunk)
    every = validation.positive_int("every", every)
    if every < 3:
        raise ValueError(f"every must be at least 3 (three splits), got {every}")
    idx = (np.arange(tokens.size) // chunk) % every
    held, val = idx == every - 1, idx == every // 2 - 1
    return tokens[~held & ~val].copy(), tokens[val].copy(), tokens[held].copy()


def _kgrams(tokens: np.ndarray, K: int) -> set:
    b = np.ascontiguousarray(tokens, dtype=np.uint8).tobytes()
    return {b[i : i + K] for i in range(len(b) - K + 1)}


def _duplicate_starts(part: np.ndarray, grams: set, K: int) -> np.ndarray:
    b = np.ascontiguousarray(part, dtype=np.uint8).tobytes()
    return np.array([b[i : i + K] in grams for i in range(len(b) - K + 1)], dtype=bool)


def near_duplicate_fraction(part: np.ndarray, train: np.ndarray, K: int = DUPLICATE_K) -> float:
    """The fraction of the positions ``i`` of ``part`` (those with ``i + K ≤ len(part)``) whose
    ``K`` characters ``part[i : i + K]`` occur verbatim somewhere in ``train``."""
    K = validation.positive_int("K", K)
    if part.size < K:
        return 0.0
    return float(_duplicate_starts(part, _kgrams(train, K), K).mean())


def deduplicate(part: np.ndarray, train: np.ndarray, K: int = DUPLICATE_K):
    """``(kept, stats)``: ``part`` without every position covered by a ``K``-string that occurs in
    ``train`` (runs shorter than ``K`` dropped too), the remaining runs concatenated in order;
    ``stats`` gives the near-duplicate fraction before and after and the sizes."""
    K = validation.positive_int("K", K)
    grams = _kgrams(train, K)
    starts = _duplicate_starts(part, grams, K) if part.size >= K else np.zeros(0, bool)
    edges = np.zeros(part.size + 1, dtype=np.int64)
    hits = np.nonzero(starts)[0]
    np.add.at(edges, hits, 1)
    np.add.at(edges, hits + K, -1)
    keep = np.cumsum(edges[:-1]) == 0
    d = np.diff(np.concatenate([[0], keep.astype(np.int8), [0]]))
    runs = [(a, z) for a, z in zip(np.nonzero(d == 1)[0], np.nonzero(d == -1)[0]) if z - a >= K]
    kept = np.concatenate([part[a:z] for a, z in runs]) if runs else np.zeros(0, dtype=part.dtype)
    after = _duplicate_starts(kept, grams, K).mean() if kept.size >= K else 0.0
    stats = {
        "K": K,
        "fraction_before": float(starts.mean()) if starts.size else 0.0,
        "fraction_after": float(after),
        "chars_before": int(part.size),
        "chars_after": int(kept.size),
        "runs": len(runs),
    }
    return kept, stats


@functools.lru_cache(maxsize=4)
def pydoc_corpus(chunk: int = 2048, every: int = 10, K: int = DUPLICATE_K) -> Corpus:
    """The normalised ``pydoc_data`` text, encoded, split and with its held-out and validation
    splits deduplicated against the training split (see the module docstring). The arrays are
    read-only (the corpus is cached)."""
    text = normalise(raw_text())
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    train, val, held = split(encode(text), chunk, every)
    held, held_stats = deduplicate(held, train, K)
    val, val_stats = deduplicate(val, train, K)
    for a in (train, val, held):
        a.flags.writeable = False
    src = f"pydoc_data.topics of CPython {sys.version.split()[0]} ({len(text)} characters)"
    stats = {"heldout": held_stats, "validation": val_stats, "chunk": chunk, "every": every}
    return Corpus("pydoc", train, held, sha, src, validation=val, stats=stats)


def noisy_copy(
    tokens: np.ndarray,
    P: int,
    seed,
    *,
    bag: int = 4,
    flip: float = 0.05,
    refresh: float = 0.5,
) -> np.ndarray:
    """The control text: ``len(tokens) // P`` blocks of ``P``. Block ``b`` has a *source*, ``bag``
    consecutive characters of ``tokens``: with probability ``1 − refresh`` its predecessor's
    source, else the next fresh one (block 0: the first). Its ``P`` characters are drawn with
    replacement from the source, each then replaced with probability ``flip`` by a character
    drawn uniformly from ``tokens``: every block repeats its predecessor's content (as a bag,
    reshuffled) with noise."""
    P = validation.positive_int("P", P)
    bag = validation.positive_int("bag", bag)
    flip = validation.real("flip", flip, low=0.0, high=1.0)
    refresh = validation.real("refresh", refresh, low=0.0, high=1.0)
    if tokens.size < max(P, bag):
        raise ValueError(
            f"noisy_copy: {tokens.size} tokens make no block of P={P} from a bag of {bag}: "
            f"expected at least {max(P, bag)}"
        )
    rng = np.random.default_rng(seed)
    nb = tokens.size // P
    src = tokens[: (tokens.size // bag) * bag].reshape(-1, bag)
    fresh = rng.random(nb) < refresh
    fresh[0] = True
    source = (np.cumsum(fresh) - 1) % src.shape[0]  # the fresh source each block copies
    picks = src[source[:, None], rng.integers(0, bag, size=(nb, P))]
    noise = tokens[rng.integers(0, tokens.size, size=(nb, P))]
    return np.where(rng.random((nb, P)) < flip, noise, picks).ravel()


def noisy_copy_corpus(base: Corpus, P: int, seed, **kw) -> Corpus:
    """:func:`noisy_copy` of each split of ``base`` (independent streams of ``seed``); the hash
    is of the base text and the construction. ``stats`` carries the near-duplicate fraction of
    the new held-out split against the new training split."""
    s_train, s_held, s_val = np.random.SeedSequence(seed).spawn(3)
    train = noisy_copy(base.train, P, s_train, **kw)
    held = noisy_copy(base.heldout, P, s_held, **kw)
    val = noisy_copy(base.validation, P, s_val, **kw) if base.validation.size >= P else held[:0]
    h = hashlib.sha256()
    h.update(base.sha256.encode())
    for a in (train, held, val):
        h.update(a.tobytes())
    opts = ", ".join(f"{k}={x}" for k, x in sorted(kw.items()))
    src = f"noisy block copies (P={P}{', ' + opts if opts else ''}) of {base.source}"
    stats = {"heldout": {"K": DUPLICATE_K, "fraction_after": near_duplicate_fraction(held, train)}}
    return Corpus("noisy_copy", train, held, h.hexdigest(), src, validation=val, stats=stats)
