"""The user's cache folder for fastslow: ``$XDG_CACHE_HOME/fastslow``, else ``~/.cache/fastslow``.

Every cache of the project that has no folder given explicitly lives under it (the language-model
run cache in ``lm/``, Numba's compiled code in ``numba/``); each one's own variable
(``FASTSLOW_LM_CACHE``, ``NUMBA_CACHE_DIR``) comes first. An empty or relative
``XDG_CACHE_HOME`` is ignored, as the XDG base directory specification says.
"""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/fastslow`` when that variable is an absolute path, else
    ``~/.cache/fastslow`` (not created here)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "fastslow"
    return Path.home() / ".cache" / "fastslow"
