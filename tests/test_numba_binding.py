"""The integrators' Numba binding layer (numerics.integrators.numba_binding) runs only on the Numba
versions it is declared for, and pyproject.toml pins the same range."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numba

from fastslow.numerics.integrators.numba_binding import NUMBA_TESTED, numba_version_tested

ROOT = Path(__file__).resolve().parent.parent


def _dotted(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


def test_the_installed_numba_is_in_the_range_the_binding_layer_is_declared_for():
    low, high = NUMBA_TESTED
    assert numba_version_tested(numba.__version__), (
        f"Numba {numba.__version__} is outside the range the integrators' binding layer "
        f"(numerics/integrators/numba_binding.py) is declared for: >={_dotted(low)}, "
        f"<{_dotted(high)}. That module builds first-class function values from addresses with "
        "an @intrinsic and reads compile results' LLVM names, which are Numba internals: install "
        f"a Numba in the range (pip install 'numba>={_dotted(low)},<{_dotted(high)}'), or run "
        "tests/test_integrators.py on this version and widen NUMBA_TESTED and the pyproject pin"
    )


def test_pyproject_pins_numba_to_the_declared_range():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if re.match(r"numba\b", d)]
    low, high = NUMBA_TESTED
    assert pin.replace(" ", "") == f"numba>={_dotted(low)},<{_dotted(high)}", pin


def test_the_range_check_rejects_versions_on_either_side():
    """Non-vacuity: the check accepts both ends of the declared range and nothing beyond them."""
    (lo_major, lo_minor), (hi_major, hi_minor) = NUMBA_TESTED
    assert numba_version_tested(f"{lo_major}.{lo_minor}.0")
    assert numba_version_tested(f"{hi_major}.{hi_minor - 1}.3")
    assert not numba_version_tested(f"{lo_major}.{lo_minor - 1}.9")
    assert not numba_version_tested(f"{hi_major}.{hi_minor}.0")
    assert not numba_version_tested(f"{hi_major}.{hi_minor}.0rc1")


def test_the_cyclic_collector_is_paused_while_numba_compiles_and_restored_after():
    """``numba_binding`` pauses Python's cyclic garbage collector from the start of an outermost
    compilation to its end (a listener registered before this test's sees it off), then puts it
    back as it was: on after a compile started with it on, off after one started with it off."""
    import gc

    from numba.core import event

    seen: list[bool] = []

    class Record(event.Listener):
        def on_start(self, ev):
            seen.append(gc.isenabled())

        def on_end(self, ev):
            pass

    def compile_fresh(k):
        fn = numba.njit(lambda x: x + k)  # a new function each time: a compilation, not a load
        return fn(1)

    listener = Record()
    event.register("numba:compile", listener)
    try:
        assert gc.isenabled()
        assert compile_fresh(2) == 3
        assert seen and not any(seen)
        assert gc.isenabled()
        gc.disable()
        try:
            compile_fresh(3)
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        event.unregister("numba:compile", listener)
