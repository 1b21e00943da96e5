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

**Held-out split** (:func:`split`): the text is cut into chunks of ``chunk`` characters; every
``heldout_every``-th chunk (index ``i ≡ heldout_every − 1``) is held out. The two splits share no
character position; training windows are drawn inside the training split only.

**Control corpus** (:func:`noisy_copy`): blocks of ``P`` characters; each block draws its
characters from the same source (``bag`` consecutive characters of the text) as its predecessor
(probability ``1 − refresh``) or from the next fresh source, with replacement and with a fraction
``flip`` of noise characters: strong, known cross-block structure (a block's bag of characters
announces the next one's) in the same alphabet.
"""

from __future__ import annotations

import hashlib
import sys
import unicodedata
from dataclasses import dataclass

import numpy as np

from fastslow.numerics import validation as v

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
    "noisy_copy",
    "noisy_copy_corpus",
    "windows",
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


@dataclass(frozen=True)
class Corpus:
    """An encoded corpus: ``train`` and ``heldout`` token arrays (``uint8`` indices into
    :data:`ALPHABET`), the SHA-256 of the text they were encoded from, and where it came from."""

    name: str
    train: np.ndarray
    heldout: np.ndarray
    sha256: str
    source: str

    @property
    def chars(self) -> int:
        return int(self.train.size + self.heldout.size)


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


def split(tokens: np.ndarray, chunk: int = 4096, heldout_every: int = 10):
    """``(train, heldout)``: chunk ``i`` (of ``chunk`` tokens) is held out iff
    ``i % heldout_every == heldout_every − 1``; each split is its chunks concatenated in order."""
    chunk = v.positive_int("chunk", chunk)
    every = v.positive_int("heldout_every", heldout_every)
    if every < 2:
        raise ValueError(f"heldout_every must be at least 2, got {every}")
    idx = np.arange(tokens.size) // chunk
    held = idx % every == every - 1
    return tokens[~held].copy(), tokens[held].copy()


def pydoc_corpus(chunk: int = 4096, heldout_every: int = 10) -> Corpus:
    """The normalised ``pydoc_data`` text, encoded and split (see the module docstring)."""
    text = normalise(raw_text())
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    train, heldout = split(encode(text), chunk, heldout_every)
    src = f"pydoc_data.topics of CPython {sys.version.split()[0]} ({len(text)} characters)"
    return Corpus("pydoc", train, heldout, sha, src)


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
    P = v.positive_int("P", P)
    bag = v.positive_int("bag", bag)
    flip = v.real("flip", flip, low=0.0, high=1.0)
    refresh = v.real("refresh", refresh, low=0.0, high=1.0)
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
    is of the base text and the construction."""
    s_train, s_held = np.random.SeedSequence(seed).spawn(2)
    train = noisy_copy(base.train, P, s_train, **kw)
    held = noisy_copy(base.heldout, P, s_held, **kw)
    h = hashlib.sha256()
    h.update(base.sha256.encode())
    h.update(train.tobytes())
    h.update(held.tobytes())
    opts = ", ".join(f"{k}={val}" for k, val in sorted(kw.items()))
    src = f"noisy block copies (P={P}{', ' + opts if opts else ''}) of {base.source}"
    return Corpus("noisy_copy", train, held, h.hexdigest(), src)


def windows(tokens: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """The windows ``tokens[s : s + length]`` for every ``s`` in ``starts``, as rows (int64)."""
    return tokens[np.asarray(starts)[:, None] + np.arange(length)[None, :]].astype(np.int64)
