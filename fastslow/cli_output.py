"""What the command line prints for a person: verdicts and values, shortened and rounded.

Human output shows a float to 4 significant digits and an array as its shape and range; ``--json``
prints every value whole (:func:`as_json`).
"""

from __future__ import annotations

import json

import numpy as np

from fastslow.verify.registry import get_claim

SHOWN_NUMBERS = 8
"""Human output prints an array of more numbers than this as its shape and range."""
SHOWN_WIDTH = 200
"""Human output shortens a value printed wider than this (``--json`` prints every value whole)."""


def brief(value, width: int = SHOWN_WIDTH) -> str:
    """``value`` (a verdict's JSON-able number, string, list or dict) for a person: a float to 4
    significant digits, an array of more than :data:`SHOWN_NUMBERS` numbers as ``16×16 array,
    min …, max …, RMS …``, containers shortened to about ``width`` characters with ``…``; the whole
    value is in ``--json``."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and value:
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):  # ragged or not numbers: shown item by item
            arr = None
        if arr is not None and arr.size > SHOWN_NUMBERS:
            shape = "×".join(map(str, arr.shape))
            finite = arr[np.isfinite(arr)]
            if not finite.size:
                return f"{shape} array, no finite entry"
            rms = float(np.sqrt(np.mean(finite**2)))
            nonfinite = f", {arr.size - finite.size} non-finite" if finite.size < arr.size else ""
            return (
                f"{shape} array, min {finite.min():.4g}, max {finite.max():.4g}, "
                f"RMS {rms:.4g}{nonfinite}"
            )
        text = "[" + ", ".join(brief(x, width // 2) for x in value) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {brief(x, width // 2)}" for k, x in value.items()) + "}"
    elif isinstance(value, (float, np.floating)):  # 4 significant digits; --json has them all
        text = f"{float(value):.4g}"
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _instance_text(v) -> str:
    """Which instance a verdict is about: the seed, the negative control, or the user system
    (its kind, its name and, when it has one, its own seed beside the check's)."""
    if v.system is None:
        ctl = f", negative control {v.control}" if v.control else ""
        return f"seed {v.seed}{ctl}"
    own = f", its seed {v.system['seed']}" if "seed" in v.system else ""
    return f"your {v.system.get('kind')} {v.system.get('name')!r}{own}; check seed {v.seed}"


def print_verdict(v) -> None:
    head = f"{v.id}: {v.outcome.upper()} ({_instance_text(v)}): {v.reason()}"
    shown = get_claim(v.id).control_text(v) if v.control else None
    if shown:  # a control's verdict says whether it failed as it should
        head += f" [{shown}]"
    print(head)
    for kind, diags in (
        ("hypothesis", v.hypotheses),
        ("conclusion", v.conclusion),
        ("limit", v.limits),
    ):
        for k, d in diags.items():
            source = f" [source: {v.sources[k]}]" if kind == "hypothesis" and k in v.sources else ""
            print(
                f"  {kind} {k}: {d.shown()} (value {brief(d.value)}; {d.rule}){source}"
                if d.evaluated
                else f"  {kind} {k}: {d.value}"
            )
    for k, val in v.figures.items():
        print(f"  {k}: {brief(val)}")
    for n in v.notes:
        if n != shown:
            print(f"  note: {n}")
    print("  (arrays and long values summarised; --json prints them whole)")


def as_json(data) -> str:
    """``data`` as the command line prints JSON: strict (no NaN), indented, keys in their order."""
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)
