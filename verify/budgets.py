"""The memory and time budgets of one check, read from the environment.

A check refuses, before any work, parameters whose estimated peak memory
(:meth:`verify.claim.Claim.memory_bytes` + :data:`BASE_BYTES`) exceeds :func:`memory_budget`, or
whose estimated time (:meth:`verify.claim.Claim.seconds_estimate`: the claim's counts of work at
the rates of :mod:`verify.cost_model`) exceeds :func:`time_budget` (bad input, exit 2). The budgets come from :data:`MEMORY_BUDGET_ENV` and :data:`TIME_BUDGET_ENV`
(the command line's ``--memory-budget`` and ``--time-budget`` set them, so sweep workers see them).
"""

from __future__ import annotations

import math
import os

MEMORY_BUDGET_ENV = "FASTSLOW_MEMORY_BUDGET"
"""Environment variable overriding the memory budget: bytes (``8G``, ``512M``, ``1.5GiB``,
``2000000000``) or a share of this machine's memory (``25%``)."""

DEFAULT_BUDGET_SHARE = 0.5
"""The default budget: this share of the machine's physical memory."""

BASE_BYTES = 400 << 20
"""The memory of a check before it allocates anything of its own: the interpreter, NumPy, SciPy,
SymPy, Numba and the compiled kernels (about 300 MiB measured, rounded up)."""

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def machine_memory() -> int:
    """Physical memory of this machine in bytes (0 when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def parse_bytes(text: str, what: str = MEMORY_BUDGET_ENV) -> int:
    """``text`` (``8G``, ``512MiB``, ``123456``, ``25%`` of the machine's memory) in bytes;
    ``ValueError`` naming ``what`` and the value."""
    s = str(text).strip().lower().replace("ib", "").replace("b", "")
    try:
        if s.endswith("%"):
            share = float(s[:-1]) / 100
            if not 0 < share <= 1:
                raise ValueError
            value = share * machine_memory()
        else:
            value = float(s[:-1]) * _UNITS[s[-1]] if s and s[-1] in _UNITS else float(s)
        if not (math.isfinite(value) and value > 0) or "_" in s:
            raise ValueError
    except (ValueError, KeyError, IndexError):
        raise ValueError(
            f"{what}={text!r}: expected a positive size like 8G, 512M, 2000000000 or a share "
            "of this machine's memory like 25%"
        ) from None
    return int(value)


def memory_budget() -> int:
    """The memory one check (or one sweep) may use: :data:`MEMORY_BUDGET_ENV` if set, else
    :data:`DEFAULT_BUDGET_SHARE` of the machine's memory (16 GiB when the machine does not say)."""
    env = os.environ.get(MEMORY_BUDGET_ENV)
    if env:
        return parse_bytes(env)
    total = machine_memory()
    return int(DEFAULT_BUDGET_SHARE * total) if total else 16 << 30


def format_bytes(n: float) -> str:
    """``n`` bytes as ``1.5 GiB`` / ``300 MiB``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1024:.3g} KiB"


def budget_hint() -> str:
    """Where the budget comes from and how to change it, for messages."""
    source = (
        f"{MEMORY_BUDGET_ENV}={os.environ[MEMORY_BUDGET_ENV]}"
        if os.environ.get(MEMORY_BUDGET_ENV)
        else f"{DEFAULT_BUDGET_SHARE:.0%} of this machine's memory"
    )
    return f"{format_bytes(memory_budget())} ({source}; set {MEMORY_BUDGET_ENV} or --memory-budget)"


TIME_BUDGET_ENV = "FASTSLOW_TIME_BUDGET"
"""Environment variable overriding the time budget of one check: seconds (``600``, ``90s``,
``10m``, ``1.5h``)."""

DEFAULT_TIME_BUDGET = 1800.0
"""The default time budget of one check, in seconds (a sweep applies it to each point). Every
claim's declared main instances fit in it (tests/test_sources.py): the largest is E1's paper-scale
experiment, estimated at about 11 minutes."""

_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_seconds(text: str, what: str = TIME_BUDGET_ENV) -> float:
    """``text`` (``600``, ``90s``, ``10m``, ``1.5h``) in seconds; ``ValueError`` naming ``what``
    and the value."""
    s = str(text).strip().lower()
    try:
        value = float(s[:-1]) * _SECONDS[s[-1]] if s and s[-1] in _SECONDS else float(s)
        if not (math.isfinite(value) and value > 0) or "_" in s:
            raise ValueError
    except (ValueError, KeyError, IndexError):
        raise ValueError(
            f"{what}={text!r}: expected a positive duration like 600, 90s, 10m or 1.5h"
        ) from None
    return value


def time_budget() -> float:
    """The time one check may take, in seconds: :data:`TIME_BUDGET_ENV` if set, else
    :data:`DEFAULT_TIME_BUDGET`."""
    env = os.environ.get(TIME_BUDGET_ENV)
    return parse_seconds(env) if env else DEFAULT_TIME_BUDGET


def time_hint() -> str:
    """Where the time budget comes from and how to change it, for messages."""
    source = (
        f"{TIME_BUDGET_ENV}={os.environ[TIME_BUDGET_ENV]}"
        if os.environ.get(TIME_BUDGET_ENV)
        else "the default"
    )
    return f"{time_budget():.0f} s ({source}; set {TIME_BUDGET_ENV} or --time-budget)"
