""" "Did you mean" for a name that is not known: the closest known name, for one-line messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``" (did you mean 'X'?)"`` for the known name closest to ``word`` (case-insensitive,
    :func:`difflib.get_close_matches` with cutoff 0.6), or ``""`` when none is close."""
    names = {str(k).lower(): str(k) for k in known}
    near = difflib.get_close_matches(str(word).lower(), list(names), n=1, cutoff=0.6)
    return f" (did you mean {names[near[0]]!r}?)" if near else ""
