"""Trained weights on disk: the tensor layout of a trained stack, read from ``.npz`` or safetensors.

The layout (``docs/trained_weights.md`` says it for a reader, with the mapping from a PyTorch
``state_dict`` of the same architecture) is the one :mod:`numerics.lm.params` trains and the E1
run cache stores, so a run's weights file and a user's file are read by the same code:

* ``emb`` — the token embedding, ``(V, d)``;
* ``head`` — the linear head, ``(d, V)`` (logits are ``n(X_L)·head``); optional: the claims never
  read it, it is validated when present;
* for each layer ``l = 0 … L−1``: ``l.Q``, ``l.K``, ``l.V``, ``l.Qs``, ``l.Ks``, ``l.Vs`` ``(d, d)``,
  ``l.W1`` ``(d, m)``, ``l.W2`` ``(m, d)`` — every matrix acts on the right of a row of tokens
  (``n(X)·Q``), the transpose of a ``torch.nn.Linear`` weight; ``l.g`` the gate, shape ``()`` or
  ``(1,)``.

The architecture's other settings are not tensors: ``T`` (context), ``P`` (block size),
``fast_mask``, ``sigma``, ``h``, ``norm_eps`` and ``slow`` come from the file's metadata (safetensors:
the ``__metadata__`` key ``fastslow``, a JSON object; ``.npz``: an entry ``fastslow`` holding the
same JSON as a string) or from ``KEY=VALUE`` settings given with the file (they take precedence).
``T`` and ``P`` are required; the others default to E1's architecture (:data:`DEFAULTS`).

A bad file is bad input: :func:`read` raises ``ValueError`` with one line naming the tensor (or
setting) and what was expected — a missing tensor, a wrong shape, a non-finite entry, a
non-floating dtype, a tensor that is not in the layout (another architecture), a file that is not
``.npz`` or safetensors. Floating tensors of 16, 32 or 64 bits are widened to ``float64`` (exact);
nothing else is cast.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import SIGMAS, WEIGHT_NAMES

__all__ = ["DEFAULTS", "SETTINGS", "LAYOUT", "read", "layer_count", "expected_shapes", "write_npz"]

SETTINGS = ("T", "P", "fast_mask", "sigma", "h", "norm_eps", "slow")
"""The architecture's settings that are not tensors."""
DEFAULTS = {"fast_mask": "causal", "sigma": "tanh", "h": 1.0, "norm_eps": 1e-6, "slow": True}
"""The settings' defaults: E1's architecture (``T`` and ``P`` have none)."""
META_KEY = "fastslow"
"""The metadata key (safetensors) or entry (``.npz``) holding the settings as JSON."""

LAYOUT = {
    "emb": ("(V, d)", "token embedding"),
    "head": ("(d, V)", "linear head (optional)"),
    **{f"l.{n}": ("(d, d)", "") for n in ("Q", "K", "V", "Qs", "Ks", "Vs")},
    "l.W1": ("(d, m)", "MLP input matrix"),
    "l.W2": ("(m, d)", "MLP output matrix"),
    "l.g": ("() or (1,)", "gate"),
}
"""Every tensor name of the layout (``l`` a layer index), its shape and meaning."""

FLOAT_KINDS = ("float16", "float32", "float64")
_LAYER = re.compile(r"^(\d+)\.(\w+)$")


def expected_shapes(V: int, d: int, m: int, L: int) -> dict:
    """``{name: shape}`` of every tensor of the layout for these sizes (the gate as ``()``)."""
    out: dict[str, tuple[int, ...]] = {"emb": (V, d), "head": (d, V)}
    for l in range(L):
        for n in WEIGHT_NAMES:
            out[f"{l}.{n}"] = {"W1": (d, m), "W2": (m, d)}.get(n, (d, d))
        out[f"{l}.g"] = ()
    return out


def layer_count(names) -> int:
    """The number of layers ``L``: one more than the largest layer index among ``names``."""
    idx = [int(m.group(1)) for m in map(_LAYER.match, names) if m]
    return max(idx) + 1 if idx else 0


def _setting(key: str, value):
    """One setting parsed and checked (``ValueError`` naming it)."""
    if key in ("T", "P"):
        try:
            n = int(value)
        except (TypeError, ValueError):
            n = -1
        if isinstance(value, bool) or n < 1 or str(n) != str(value).strip():
            raise ValueError(f"setting {key}={value!r}: expected a positive integer")
        return n
    if key in ("h", "norm_eps"):
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = float("nan")
        if not np.isfinite(x) or x <= 0:
            raise ValueError(f"setting {key}={value!r}: expected a positive finite number")
        return x
    if key == "slow":
        text = str(value).strip().lower()
        if text not in ("true", "false", "1", "0"):
            raise ValueError(f"setting slow={value!r}: expected true or false")
        return text in ("true", "1")
    choices = NAMED_MASKS if key == "fast_mask" else SIGMAS
    if value not in choices:
        raise ValueError(f"setting {key}={value!r}: expected one of {', '.join(choices)}")
    return value


def settings(meta: dict, overrides: dict) -> dict:
    """The architecture's settings: the file's metadata, then ``overrides``, then
    :data:`DEFAULTS`; ``ValueError`` for an unknown or invalid setting or a missing ``T``/``P``."""
    merged = {**DEFAULTS, **meta, **overrides}
    for key in merged:
        if key not in SETTINGS:
            raise ValueError(f"unknown setting {key!r}; expected one of {', '.join(SETTINGS)}")
    missing = [k for k in ("T", "P") if k not in merged]
    if missing:
        raise ValueError(
            f"setting {missing[0]} is missing: give it in the file's metadata "
            f"({META_KEY!r}, docs/trained_weights.md) or as {missing[0]}=VALUE after the file name"
        )
    out = {k: _setting(k, merged[k]) for k in SETTINGS}
    if out["T"] % out["P"]:
        raise ValueError(f"settings T={out['T']}, P={out['P']}: P must divide T")
    return out


def _read_npz(path: Path) -> tuple[dict, dict]:
    try:
        with np.load(path, allow_pickle=False) as z:
            raw = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{path}: not a readable .npz file ({exc})") from None
    meta = raw.pop(META_KEY, None)
    if meta is None:
        return raw, {}
    if meta.dtype.kind != "U" or meta.ndim != 0:
        raise ValueError(
            f"{path}: entry {META_KEY!r} must be a JSON string (docs/trained_weights.md)"
        )
    return raw, _meta_json(path, str(meta))


def _read_safetensors(path: Path) -> tuple[dict, dict]:
    from safetensors import SafetensorError, safe_open  # deferred: only for safetensors files

    try:
        with safe_open(str(path), framework="np") as f:
            meta = (f.metadata() or {}).get(META_KEY)
            raw = {}
            for k in f.keys():
                try:
                    raw[k] = f.get_tensor(k)
                except (TypeError, ValueError, SafetensorError) as exc:  # e.g. bfloat16
                    raise ValueError(
                        f"{path}: tensor {k!r} cannot be read as NumPy ({exc}); expected a "
                        f"floating dtype of {', '.join(FLOAT_KINDS)}"
                    ) from None
    except (SafetensorError, OSError) as exc:
        raise ValueError(f"{path}: not a readable safetensors file ({exc})") from None
    return raw, {} if meta is None else _meta_json(path, meta)


def _meta_json(path: Path, text: str) -> dict:
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: metadata {META_KEY!r} is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: metadata {META_KEY!r} must be a JSON object")
    return meta


def _tensor(path: Path, name: str, arr: np.ndarray, shape: tuple) -> np.ndarray:
    """``arr`` checked against ``shape`` (the gate: ``()`` or ``(1,)``), a floating dtype and
    finite entries; widened to ``float64``."""
    if arr.dtype.name not in FLOAT_KINDS:
        raise ValueError(
            f"{path}: tensor {name!r} has dtype {arr.dtype.name}; expected floating point "
            f"({', '.join(FLOAT_KINDS)})"
        )
    ok = arr.shape == shape or (shape == () and arr.shape == (1,))
    if not ok:
        raise ValueError(f"{path}: tensor {name!r} has shape {arr.shape}; expected {shape}")
    bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    if bad:
        raise ValueError(f"{path}: tensor {name!r} has {bad} non-finite entries; expected finite")
    return np.asarray(arr, dtype=np.float64).reshape(shape)


def check_tensors(path, raw: dict) -> dict:
    """The tensors of ``raw`` checked against the layout (sizes read from ``emb`` and
    ``0.W1``): ``{name: float64 array}``; ``ValueError`` naming the first bad tensor."""
    path = Path(path)
    for key in ("emb", "0.W1"):
        if key not in raw:
            raise ValueError(
                f"{path}: missing tensor {key!r}; expected the layout of docs/trained_weights.md"
            )
    if raw["emb"].ndim != 2 or raw["0.W1"].ndim != 2:
        name = "emb" if raw["emb"].ndim != 2 else "0.W1"
        raise ValueError(f"{path}: tensor {name!r} has shape {raw[name].shape}; expected a matrix")
    (V, d), m, L = raw["emb"].shape, raw["0.W1"].shape[1], layer_count(raw)
    want = expected_shapes(V, d, m, L)
    for name in raw:
        if name not in want:
            raise ValueError(
                f"{path}: unexpected tensor {name!r}: not in the layout (docs/trained_weights.md)"
            )
    out = {}
    for name, shape in want.items():
        if name not in raw:
            if name == "head":
                continue
            raise ValueError(f"{path}: missing tensor {name!r}; expected shape {shape}")
        out[name] = _tensor(path, name, raw[name], shape)
    return out


def read(path, overrides: dict | None = None) -> tuple[dict, dict, str]:
    """``(tensors, settings, sha256)`` of the weights file ``path`` (``.npz`` or
    ``.safetensors``): every tensor checked (:func:`check_tensors`), the settings merged
    (:func:`settings`: metadata, then ``overrides``), the file's SHA-256. ``ValueError`` (one
    line) for anything wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such weights file {str(path)!r}")
    if path.suffix == ".npz":
        raw, meta = _read_npz(path)
    elif path.suffix == ".safetensors":
        raw, meta = _read_safetensors(path)
    else:
        raise ValueError(f"{path}: expected a .npz or .safetensors weights file")
    tensors = check_tensors(path, raw)
    try:
        conf = settings(meta, dict(overrides or {}))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return tensors, conf, sha


def write_npz(path, tensors: dict, conf: dict) -> None:
    """Write ``tensors`` and the settings ``conf`` to ``path`` in the layout (``.npz``)."""
    arrays: dict[str, Any] = {k: np.asarray(a) for k, a in tensors.items()}
    arrays[META_KEY] = np.array(json.dumps(conf))
    with open(path, "wb") as f:
        np.savez(f, **arrays)
