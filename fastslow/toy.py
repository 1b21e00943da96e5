"""Your own toy systems (re-exported from :mod:`verify.systems`); check one with
:func:`fastslow.check` or ``fastslow check ID --system FILE.py:NAME``."""

from fastslow.verify.systems import KINDS, DepthFlow, GeneratorFamily, LinearLoop, System

__all__ = ["KINDS", "DepthFlow", "GeneratorFamily", "LinearLoop", "System"]
