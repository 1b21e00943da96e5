"""Benchmark sections: each module here registers one or more sections with :func:`section`.

A section is ``fn(quick: bool) -> dict`` returning ``{"title": str, "columns": [...],
"rows": [[...], ...], "notes": [...]}``; every timing in it is a ratio measured in the same run
(against SciPy, the NumPy reference, or the BLAS floor measured by the section itself), except in
``user_times``, which reports the absolute CPU and wall time of whole commands a user runs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

SECTIONS: dict[str, Callable] = {}


def section(name: str):
    """Register ``fn(quick) -> table dict`` as benchmark section ``name``."""

    def deco(fn):
        SECTIONS[name] = fn
        return fn

    return deco


def discover() -> dict[str, Callable]:
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return SECTIONS
