"""numerics.jit_cache: Numba's disk cache follows the content of every source file it depends on.

The end-to-end tests build a throwaway package (a constants module and a module whose
``@njit(cache=True)`` function reads a constant from it) and run it in fresh subprocesses sharing
one cache base directory. Editing the constant keeps the file size and mtime identical, so only
the content differs: without the fingerprint Numba serves the stale value (the control test
shows the bug is real), with it the new value is returned.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fastslow import numerics
from fastslow.numerics import jit_cache

CONSTS_OLD = "VALUE = 1.25\n"
CONSTS_NEW = "VALUE = 7.50\n"  # same length: only the content changes

INIT = textwrap.dedent(f"""\
    import importlib.util, os
    from pathlib import Path
    if os.environ.get("TOY_FINGERPRINT") == "1":
        spec = importlib.util.spec_from_file_location("jit_cache", {str(Path(jit_cache.__file__))!r})
        jc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(jc)
        jc.configure(package_dir=Path(__file__).parent, base=os.environ["TOY_BASE"])
    """)

KERNEL = textwrap.dedent("""\
    from numba import njit
    from .consts import VALUE

    @njit(cache=True)
    def value():
        return VALUE * 2.0
    """)

RUN = (
    "import toypkg.kernel as k, numba; v = k.value(); "
    "print(v, k.value.stats.cache_hits.get(k.value.signatures[0], 0), numba.config.CACHE_DIR)"
)


def _make_package(root: Path) -> Path:
    pkg = root / "src" / "toypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(INIT)
    (pkg / "consts.py").write_text(CONSTS_OLD)
    (pkg / "kernel.py").write_text(KERNEL)
    return pkg


def _edit_same_size_and_mtime(path: Path, new: str) -> None:
    st = path.stat()
    old = path.read_text()
    assert len(old.encode()) == len(new.encode())
    path.write_text(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def _run(pkg: Path, base: Path, fingerprint: bool) -> tuple[float, int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", jit_cache.BASE_ENV)}
    env.update(
        PYTHONPATH=str(pkg.parent),
        PYTHONDONTWRITEBYTECODE="1",
        TOY_BASE=str(base),
        TOY_FINGERPRINT="1" if fingerprint else "0",
        NUMBA_NUM_THREADS="1",
    )
    if not fingerprint:
        env["NUMBA_CACHE_DIR"] = str(base)  # Numba's own behaviour, for the control
    out = subprocess.run(
        [sys.executable, "-c", RUN],
        env=env,
        cwd=pkg.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    value, hits, cache_dir = out.stdout.split()
    return float(value), int(hits), cache_dir


def test_editing_a_dependency_invalidates_the_cache(tmp_path):
    pkg = _make_package(tmp_path)
    base = tmp_path / "cache"
    v1, hits1, dir1 = _run(pkg, base, fingerprint=True)
    assert (v1, hits1) == (2.5, 0)
    assert Path(dir1).parent == base and Path(dir1).name == jit_cache.fingerprint(pkg)[:16]
    v1b, hits1b, _ = _run(pkg, base, fingerprint=True)
    assert (v1b, hits1b) == (2.5, 1)  # unchanged sources: served from disk

    _edit_same_size_and_mtime(pkg / "consts.py", CONSTS_NEW)
    v2, hits2, dir2 = _run(pkg, base, fingerprint=True)
    assert v2 == 15.0 and hits2 == 0 and dir2 != dir1  # recompiled in a fresh directory
    v3, hits3, _ = _run(pkg, base, fingerprint=True)
    assert (v3, hits3) == (15.0, 1)


def test_control_plain_numba_cache_serves_stale_code(tmp_path):
    """Without the fingerprint the same edit is invisible to Numba: the bug this module fixes."""
    pkg = _make_package(tmp_path)
    base = tmp_path / "cache"
    assert _run(pkg, base, fingerprint=False)[:2] == (2.5, 0)
    _edit_same_size_and_mtime(pkg / "consts.py", CONSTS_NEW)
    assert _run(pkg, base, fingerprint=False)[:2] == (2.5, 1)  # stale


def test_fingerprint_of_numerics_follows_tableaux_content(tmp_path):
    copy = tmp_path / "numerics"
    shutil.copytree(jit_cache.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    fp = jit_cache.fingerprint(copy)
    assert fp == jit_cache.fingerprint()  # independent of the location
    tab = copy / "integrators" / "tableaux.py"
    src = tab.read_bytes()
    i = src.index(b"1")
    _edit = src[:i] + b"2" + src[i + 1 :]  # one digit: same size
    st = tab.stat()
    tab.write_bytes(_edit)
    os.utime(tab, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert jit_cache.fingerprint(copy) != fp
    tab.write_bytes(src)
    assert jit_cache.fingerprint(copy) == fp
    (copy / "new_module.py").write_text("")  # a new file counts too
    assert jit_cache.fingerprint(copy) != fp


def test_import_numerics_configured_the_cache():
    assert numerics._jit_cache is jit_cache
    fp, d = jit_cache.ACTIVE["fingerprint"], jit_cache.ACTIVE["dir"]
    assert fp is not None and len(fp) == 16 and Path(d).name == fp
    assert (Path(d) / jit_cache.MARKER).exists()
    numba_config = pytest.importorskip("numba.core.config")
    assert numba_config.CACHE_DIR == d == os.environ["NUMBA_CACHE_DIR"]


@pytest.fixture
def restore_cache_settings(monkeypatch):
    """configure() changes process-wide settings: put them back after the test."""
    for var in ("NUMBA_CACHE_DIR", jit_cache.BASE_ENV, "XDG_CACHE_HOME"):
        if var in os.environ:
            monkeypatch.setenv(var, os.environ[var])
        else:
            monkeypatch.delenv(var, raising=False)
    cfg = sys.modules.get("numba.core.config")
    if cfg is not None:
        monkeypatch.setattr(cfg, "CACHE_DIR", cfg.CACHE_DIR)
    monkeypatch.setattr(jit_cache, "ACTIVE", dict(jit_cache.ACTIVE))


def test_configure_falls_back_when_base_is_not_writable(
    tmp_path, monkeypatch, restore_cache_settings
):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    pkg = _make_package(tmp_path)
    d = jit_cache.configure(package_dir=pkg, base=not_a_dir / "cache")
    assert d == tmp_path / "xdg" / "fastslow" / "numba" / jit_cache.fingerprint(pkg)[:16]
    assert os.environ["NUMBA_CACHE_DIR"] == str(d)
    # a second configure in a child-like environment reuses the same base, no nesting
    assert jit_cache.configure(package_dir=pkg) == d


def test_without_numba_cache_dir_the_cache_is_under_xdg_cache_home(
    tmp_path, monkeypatch, restore_cache_settings
):
    """The order: the ``base`` argument, ``NUMBA_CACHE_DIR``, then ``$XDG_CACHE_HOME/fastslow``
    (``~/.cache/fastslow`` without it)."""
    for var in ("NUMBA_CACHE_DIR", jit_cache.BASE_ENV):
        monkeypatch.delenv(var, raising=False)
    cfg = sys.modules.get("numba.core.config")
    if cfg is not None:
        monkeypatch.setattr(cfg, "CACHE_DIR", "")
    pkg = _make_package(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    fp = jit_cache.fingerprint(pkg)[:16]
    assert jit_cache.configure(package_dir=pkg) == tmp_path / "xdg" / "fastslow" / "numba" / fp
    for var in ("NUMBA_CACHE_DIR", jit_cache.BASE_ENV):
        monkeypatch.delenv(var)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if cfg is not None:
        monkeypatch.setattr(cfg, "CACHE_DIR", "")
    d = tmp_path / "home" / ".cache" / "fastslow" / "numba" / fp
    assert jit_cache.configure(package_dir=pkg) == d
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "explicit"))
    assert jit_cache.configure(package_dir=pkg) == tmp_path / "explicit" / fp


def test_prune_keeps_the_newest_marked_directories(tmp_path):
    now = time.time()
    marked = []
    for i in range(6):
        d = tmp_path / f"{i:016x}"
        d.mkdir()
        (d / jit_cache.MARKER).write_text("")
        os.utime(d, (now - 10 * (6 - i), now - 10 * (6 - i)))
        marked.append(d)
    foreign = [tmp_path / ("f" * 16), tmp_path / "integrators_abc"]
    for d in foreign:
        d.mkdir()
        os.utime(d, (now - 1000, now - 1000))
    removed = jit_cache.prune(tmp_path, current=marked[0], keep=2, grace=0)
    assert sorted(removed) == marked[1:4]
    assert all(d.exists() for d in [marked[0], *marked[4:], *foreign])
    assert jit_cache.prune(tmp_path / "missing") == []  # errors are ignored
    # the grace period protects recently used directories
    assert jit_cache.prune(tmp_path, keep=0, grace=3600) == []


def test_prune_skips_a_directory_it_cannot_read_and_prunes_the_others(tmp_path, monkeypatch):
    """A fingerprint directory whose marker cannot be read (removed or locked by another
    process mid-scan: OSError) is left alone, and every other old one is still pruned."""
    from fastslow.numerics import jit_cache

    old = time.time() - 10 * 3600
    dirs = [tmp_path / f"{i:016x}" for i in range(6)]
    for k, d in enumerate(dirs):
        d.mkdir()
        (d / jit_cache.MARKER).write_text("")
        os.utime(d, (old + k, old + k))
    with os.scandir(tmp_path) as it:  # the one the scan meets first: every other comes after it
        first = tmp_path / next(it).name
    locked = os.path.join(str(first), jit_cache.MARKER)
    others = sorted((d for d in dirs if d != first), key=lambda d: d.stat().st_mtime)
    exists = os.path.exists

    def flaky(path):
        if str(path) == locked:
            raise OSError("stale handle")
        return exists(path)

    monkeypatch.setattr(jit_cache.os.path, "exists", flaky)
    removed = jit_cache.prune(tmp_path, keep=2, grace=0.0)
    assert sorted(p.name for p in removed) == sorted(d.name for d in others[:-2])
    assert first.exists() and all(d.exists() for d in others[-2:])


def test_without_a_home_folder_there_is_no_user_cache_base(monkeypatch):
    from fastslow.numerics import jit_cache

    def no_home():
        raise KeyError("HOME")

    monkeypatch.setattr(jit_cache, "user_cache_dir", no_home)
    assert jit_cache._user_base() is None


SECOND_PROCESS = textwrap.dedent("""\
    import numpy as np
    from numba.core import event

    compiles = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiles.append(1)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())
    from fastslow.numerics.model.coupling.drivers import integrate_coupling
    from fastslow.numerics.model.weights import ModelConfig, init_model

    cfg = ModelConfig(T=4, P=2, d=2, mask="block_bidirectional", gamma=0.5)
    model = init_model(cfg, 2, 3, gate=0.5)
    X0 = np.random.default_rng(0).standard_normal((4, 2))
    for method in ("radau", "rosw", "dopri5"):
        assert integrate_coupling(model, X0, 0.1, method=method).success
    print(len(compiles))
    """)


def test_a_second_process_loads_every_compiled_function_of_an_integration_from_the_cache():
    """What the cache is for: once a process has compiled the coupling flow's integrators (the
    drivers, the method functions handed over by address, the right-hand side and its Jacobian),
    the next process compiles nothing (Numba's compile events: 0). A function compiled without
    ``cache=True`` would be compiled again in every process (seconds each time)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    counts = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", SECOND_PROCESS], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr[-2000:]
        counts.append(int(out.stdout.split()[-1]))
    assert counts[1] == 0, counts


def test_prune_goes_on_past_the_current_directory_and_past_a_recently_used_one(tmp_path):
    """The newest ``keep`` stay; below them the current directory and one used within the grace
    period stay too, and every older one is still removed (the scan does not stop at the first
    directory it keeps)."""
    now = time.time()
    dirs = []
    for i, age in enumerate((10, 20, 30, 7200, 7300, 7400, 7500)):
        d = tmp_path / f"{i:016x}"
        d.mkdir()
        (d / jit_cache.MARKER).write_text("")
        os.utime(d, (now - age, now - age))
        dirs.append(d)
    # keep the newest one; dirs[1] and dirs[2] are within the grace period; dirs[3] is current
    removed = jit_cache.prune(tmp_path, current=dirs[3], keep=1, grace=3600)
    assert sorted(removed) == dirs[4:]
    assert all(d.exists() for d in dirs[:4])
