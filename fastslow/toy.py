"""Your own toy systems (re-exported from :mod:`verify.systems`) and trained weights
(:class:`TrainedStack`, from :mod:`verify.trained`); check one with :func:`fastslow.check` or
``fastslow check ID --system FILE.py:NAME`` (``--system FILE.safetensors``, ``--system
e1:ARM:SEED:TOKENS`` for trained weights)."""

from fastslow.verify.systems import KINDS, DepthFlow, GeneratorFamily, LinearLoop, System
from fastslow.verify.trained import TrainedStack

__all__ = ["KINDS", "DepthFlow", "GeneratorFamily", "LinearLoop", "System", "TrainedStack"]
