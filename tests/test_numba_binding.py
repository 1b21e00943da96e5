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


CALLED_FROM_PYTHON = """
import numpy as np
from numba import njit
from fastslow.numerics.model import compiled

@njit
def caller(row):
    compiled.relu_row(row)
    return row

row = np.array([-1.0, 2.0])
print(caller(row))  # compiles relu_row for this row: the Python call below finds that overload
try:
    compiled.relu_row(row)
except TypeError as exc:
    print("TypeError:", exc)
"""


def test_a_function_compiled_without_a_python_entry_refuses_a_python_call():
    """A helper compiled with ``COMPILED_ONLY`` (``relu_row``), called from Python after a
    compiled caller compiled it, raises ``TypeError`` naming it instead of ending the process
    (a segmentation fault without :class:`CompiledOnlyDispatcher`: hence a subprocess); the
    compiled caller computes ``relu`` as before."""
    import os
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", CALLED_FROM_PYTHON],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "[0. 2.]"
    assert lines[1] == (
        "TypeError: fastslow.numerics.model.compiled.relu_row is compiled without a Python entry "
        "(numerics.integrators.numba_binding.COMPILED_ONLY): only compiled code may call it"
    )


def test_every_module_function_without_a_python_entry_refuses_a_python_call():
    """Every dispatcher of ``numerics`` compiled without its Python entry (the Numba option
    ``no_cpython_wrapper``, set by ``COMPILED_ONLY``) is a :class:`CompiledOnlyDispatcher`, so a
    Python call raises; the six helpers of the coupling form and the compiled layer's among them
    (non-vacuous)."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    from fastslow.numerics.integrators.numba_binding import CompiledOnlyDispatcher

    without = {}
    for info in pkgutil.walk_packages([str(ROOT / "numerics")], "fastslow.numerics."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and value.targetoptions.get("no_cpython_wrapper"):
                without[f"{value.py_func.__module__}.{name}"] = value
    assert {
        "fastslow.numerics.model.compiled.relu_row",
        "fastslow.numerics.model.compiled.gelu_row",
        "fastslow.numerics.model.compiled.softmax_row",
        "fastslow.numerics.model.coupling.rhs.normed_rows",
        "fastslow.numerics.model.coupling.rhs.block_weights",
        "fastslow.numerics.model.coupling.packing.matrix_view",
        "fastslow.numerics.model.coupling.packing.scratch_arrays",
    } <= set(without)
    assert all(isinstance(f, CompiledOnlyDispatcher) for f in without.values()), [
        k for k, f in without.items() if not isinstance(f, CompiledOnlyDispatcher)
    ]


def test_the_drivers_function_values_are_typed_as_the_method_signatures():
    """``compiled_functions`` turns eighteen addresses into the six first-class function values
    the compiled driver calls; compiled afresh here (a warm cache would skip the intrinsics that
    build them, which run only when Numba compiles), its result has exactly the types of the
    right-hand side, the Jacobian and the method's four functions, in that order."""
    from numba import types  # Numba's type objects, for the signature compiled here

    from fastslow.numerics.integrators import base, numba_binding

    fresh = numba.njit(numba_binding.compiled_functions.py_func)
    fresh.compile((types.UniTuple(types.int64, 18),))
    (cres,) = fresh.overloads.values()
    assert tuple(cres.signature.return_type) == (
        base.RHS_TYPE,
        base.JAC_TYPE,
        *base.METHOD_TYPES,
    )
