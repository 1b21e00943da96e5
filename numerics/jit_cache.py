"""Numba's on-disk cache, keyed by the content of every source file of the package.

**Statement.** After :func:`configure` (called at the top of ``numerics/__init__.py``, before any
``@njit(cache=True)`` decorator in ``numerics`` runs), a cached compiled function is only ever
loaded if *every* ``.py`` file of the ``numerics`` package has exactly the content it had when the
function was compiled.

**Why.** Numba invalidates a cache entry only by the timestamp and size of the *one* file that
defines the function. A compiled function that reads a global array from another module (the
Butcher tableaux of ``integrators/tableaux.py`` baked into the steps of ``integrators/radau.py``)
or calls an ``@njit`` function of another module is not recompiled when that other module changes,
so stale machine code would run.

**How.** :func:`fingerprint` is a SHA-256 over the sorted relative paths and the bytes of every
``.py`` file of the package; :func:`configure` points Numba's cache at ``<base>/<fingerprint[:16]>``.
Any edit of any source file therefore selects a fresh, empty directory (Numba's own per-file
check keeps working inside it). ``<base>`` is, in order: the ``base`` argument; the user's
``NUMBA_CACHE_DIR`` (``run.sh`` sets ``$PWD/.numba_cache``); ``numba.config.CACHE_DIR`` if Numba
is already imported and it is set; the user's cache folder, ``$XDG_CACHE_HOME/fastslow/numba`` or
``~/.cache/fastslow/numba`` (:mod:`numerics.user_cache`). If ``<base>`` is not writable, the user's
cache folder, then the temporary directory, is used; if none is, a warning is issued and Numba's
default applies (the staleness problem comes back, but importing never fails).

The directory is set both in ``os.environ["NUMBA_CACHE_DIR"]`` and, if Numba is already
imported, in ``numba.config.CACHE_DIR``. The environment variable matters: Numba reads it at
import, and its compiler re-reads the environment (``config.reload_config``) whenever a
``NUMBA_*`` variable changed, which would silently reset a value set only in ``numba.config``.
Child processes (worker pools) inherit it; ``FASTSLOW_NUMBA_CACHE_BASE`` records the base so a
child recomputes the fingerprint of *its* sources under the same base instead of nesting.
``numba`` itself is not imported here (importing ``numerics`` stays as cheap as before).

Old fingerprint directories (marked by a ``.fastslow-jit-cache`` file, so nothing else in a
shared base is touched) are pruned: the newest ``keep`` by modification time are kept, and none
used within the last ``grace`` seconds is removed, so a long run of an older checkout sharing the
base keeps its cache (if one is removed anyway, Numba recreates the directory and recompiles).
Errors (races, permissions) are ignored.

**Caveats.**

* Only sources inside the fingerprinted package count. ``numerics`` imports nothing but NumPy,
  SciPy, Numba and the standard library; compiled functions of *other* packages that happen to be
  decorated after ``configure`` (tests, user code) share the directory, so they are keyed by
  ``numerics`` plus Numba's usual per-file check, not by their own imports.
* Library upgrades are not in the fingerprint: Numba checks its own version in each index, and
  NumPy/llvmlite changes are Numba's responsibility, as before.
* A setting of ``numba.config.CACHE_DIR`` made *after* ``import numerics`` overrides this one
  for the functions decorated afterwards.
* Conservative: *any* edit of the package (a comment, a module no compiled function uses)
  recompiles every cached function once (seconds per integrator method, compiled on first use).
* Cost when nothing changed: one read and hash of every ``.py`` file of the package per process,
  a small fraction of the import time; ``import numerics`` does not import Numba.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from fastslow.numerics.user_cache import user_cache_dir

PACKAGE_DIR = Path(__file__).resolve().parent
"""The ``numerics`` package directory (the default package to fingerprint)."""

BASE_ENV = "FASTSLOW_NUMBA_CACHE_BASE"
"""Environment variable recording the base directory under which the fingerprint directory lies."""

MARKER = ".fastslow-jit-cache"
"""File marking a directory created by :func:`configure` (only such directories are pruned)."""

_HEX16 = re.compile(r"[0-9a-f]{16}")

ACTIVE: dict = {"fingerprint": None, "dir": None}
"""What the last successful :func:`configure` set: the 16-digit fingerprint and the directory."""


def fingerprint(package_dir: str | os.PathLike | None = None) -> str:
    """SHA-256 (hex) over the sorted relative paths and bytes of every ``.py`` file under ``package_dir``.

    ``package_dir`` defaults to :data:`PACKAGE_DIR`. ``__pycache__`` and other non-``.py`` files
    are ignored; path separators are normalised, so the value is the same on every OS.
    """
    root = Path(package_dir).resolve() if package_dir is not None else PACKAGE_DIR
    files = sorted((f.relative_to(root).as_posix(), f) for f in root.rglob("*.py"))
    h = hashlib.sha256()
    for rel, f in files:
        data = f.read_bytes()
        h.update(rel.encode())
        h.update(b"\0%d\0" % len(data))
        h.update(data)
    return h.hexdigest()


def _strip_applied(path: str) -> str:
    """The base of ``path`` if ``path`` is a directory this module set (``<base>/<hex16>``), else ``path``."""
    base = os.environ.get(BASE_ENV)
    p = Path(path)
    if _HEX16.fullmatch(p.name) and (
        (base and os.path.abspath(p.parent) == os.path.abspath(base)) or (p / MARKER).exists()
    ):
        return str(p.parent)
    return path


def _default_base(package_dir: Path) -> Path:
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return Path(_strip_applied(env))
    cfg = sys.modules.get("numba.core.config")
    if cfg is not None and getattr(cfg, "CACHE_DIR", ""):
        return Path(_strip_applied(cfg.CACHE_DIR))
    return _user_base() or Path(tempfile.gettempdir()) / f"fastslow-numba-{_uid()}"


def _user_base() -> Path | None:
    """``<user cache folder>/numba`` (None when there is no home folder to put it in)."""
    try:
        return user_cache_dir() / "numba"
    except (RuntimeError, KeyError, OSError):
        return None


def _uid():
    return os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def _fallback_bases() -> list[Path]:
    out = []
    user = _user_base()
    if user is not None:
        out.append(user)
    out.append(Path(tempfile.gettempdir()) / f"fastslow-numba-{_uid()}")
    return out


def _usable(d: Path) -> bool:
    """Create ``d`` (with the marker) and check that it is writable, as Numba does."""
    try:
        d.mkdir(parents=True, exist_ok=True)
        marker = d / MARKER
        if not marker.exists():
            marker.write_bytes(b"")
        else:
            os.utime(d)  # mark as recently used (pruning keeps the newest)
        return os.access(d, os.W_OK | os.X_OK)
    except OSError:
        return False


def prune(
    base: str | os.PathLike,
    current: str | os.PathLike | None = None,
    keep: int = 4,
    grace: float = 3600.0,
) -> list[Path]:
    """Remove old fingerprint directories under ``base``; return those removed.

    Only directories named by 16 hex digits and holding :data:`MARKER` are candidates; the newest
    ``keep`` (by modification time) and ``current`` are kept, and so is any directory used within
    the last ``grace`` seconds. Every error is ignored (another process may prune concurrently).
    """
    removed = []
    try:
        cur = os.path.abspath(current) if current is not None else None
        cands = []
        with os.scandir(base) as it:
            for e in it:
                if _HEX16.fullmatch(e.name) and e.is_dir(follow_symlinks=False):
                    try:
                        if os.path.exists(os.path.join(e.path, MARKER)):
                            cands.append((e.stat(follow_symlinks=False).st_mtime, e.path))
                    except OSError:
                        continue
        cands.sort(reverse=True)
        now = time.time()
        for mtime, path in cands[keep:]:
            if os.path.abspath(path) == cur or now - mtime < grace:
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(Path(path))
    except OSError:
        pass
    return removed


def configure(
    package_dir: str | os.PathLike | None = None,
    base: str | os.PathLike | None = None,
    keep: int = 4,
    grace: float = 3600.0,
) -> Path | None:
    """Point Numba's cache at ``<base>/<fingerprint(package_dir)[:16]>``; return that directory.

    Must run before the ``@njit(cache=True)`` decorators it should cover (Numba's cache locator
    reads ``config.CACHE_DIR`` when the decorator runs). Returns ``None`` (with a warning) if no
    directory is writable; never raises.
    """
    try:
        pkg = Path(package_dir).resolve() if package_dir is not None else PACKAGE_DIR
        fp = fingerprint(pkg)[:16]
        first = Path(base) if base is not None else _default_base(pkg)
        for b in [first, *_fallback_bases()]:
            d = b / fp
            if _usable(d):
                break
        else:
            warnings.warn(
                f"numerics.jit_cache: no writable Numba cache directory (tried {first}); "
                "using Numba's default cache, which may serve stale code",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        os.environ[BASE_ENV] = str(b)
        os.environ["NUMBA_CACHE_DIR"] = str(d)
        cfg = sys.modules.get("numba.core.config")
        if cfg is not None:
            cfg.CACHE_DIR = str(d)
        ACTIVE.update(fingerprint=fp, dir=str(d))
        prune(b, current=d, keep=keep, grace=grace)
        return d
    except Exception as exc:  # never fail an import because of the cache
        warnings.warn(
            f"numerics.jit_cache: could not configure the Numba cache ({exc!r})",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
