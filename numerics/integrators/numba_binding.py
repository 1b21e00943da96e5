"""The one module of the integrators that relies on Numba's internals.

**Statement.** The one compiled driver calls the problem's ``rhs`` and ``jac`` and the method's
``start``, ``step``, ``accept`` and ``interp`` through first-class function values rebuilt from
three addresses each (:func:`function_addresses`, :func:`compiled_functions`); copies of a
function with some of its globals replaced (:func:`with_globals`: the solvers specialised to one
structure of ``J``, compiled by :func:`compile_bound` or ``njit``) get their own cache entries.
Everything else in :mod:`numerics.integrators` uses Numba's public API (``njit``, ``types``).

**Hypotheses** (what this module assumes of Numba, checked by ``tests/test_numba_binding.py`` and
the driver tests):

* a first-class function value (:class:`numba.core.types.FunctionType`) is a struct of three
  pointers ``c_addr`` (the cfunc wrapper), ``py_addr`` (the Python object) and ``jit_addr`` (the
  function in Numba's calling convention, so exceptions propagate), as since Numba 0.58
  (numba/numba#9077);
* a dispatcher's compile result (``fn.overloads[sig.args]``) names its wrapper
  (``fndesc.llvm_cfunc_wrapper_name``) and its function (``fndesc.llvm_func_name``) in a library
  that gives their addresses (``library.get_pointer_to_function``);
* Numba's on-disk cache names an entry by the function's qualified name and source file, so a
  copy of a function's code named ``<name>_<structure>`` gets its own entry;
* the target option ``no_cpython_wrapper`` (Numba's own, not in its documented API) compiles a
  function without its Python entry and keeps its C wrapper (:func:`compile_for_addresses`);
  ``no_cfunc_wrapper`` (likewise) compiles it without its C wrapper, which only a first-class
  function value (an address) uses (:data:`NO_C_ENTRY`, :data:`COMPILED_ONLY`);
* ``njit``'s ``_target`` option names an entry of ``numba.core.target_extension.target_registry``
  (a hardware target class) whose ``dispatcher_registry`` entry is the dispatcher class ``njit``
  makes; compiled code calls a dispatcher's machine code, never its Python ``__call__``
  (:class:`CompiledOnlyDispatcher`).

These are internals, not API: :data:`NUMBA_TESTED` is the range of Numba versions this module is
declared for (the ``numba`` pin of ``pyproject.toml``); the tests fail with a message naming it
when the installed Numba is outside it.

**Why.** Passed as a first-class function argument, a dispatcher is typed and unboxed by Numba on
every call of the driver (its signature unpickled twice, its compile result looked up, two
addresses asked of LLVM); passed as arguments, the method's own functions were unboxed the same
way. Bound as the globals of one driver copy per method instead, they were linked into it, so
each copy re-optimised and re-emitted its method's whole step code on first use. Called through
their addresses they are neither unboxed per call nor linked: one driver, compiled once, runs
every method. The measurements are in ``docs/benchmarks.md`` ("The fixed cost of an
``integrate`` call", "Times a user feels").
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from types import FunctionType
from typing import Any

from numba import njit, types
from numba.core import cgutils, event, target_extension
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaExperimentalFeatureWarning
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

from fastslow.numerics.integrators.base import JAC_TYPE, METHOD_TYPES, RHS_TYPE

NUMBA_TESTED = ((0, 59), (0, 69))
"""The Numba versions this module is declared for: at least the first, below the second
(``major.minor``); ``pyproject.toml`` pins ``numba`` to the same range."""

__all__ = [
    "NUMBA_TESTED",
    "NO_C_ENTRY",
    "COMPILED_ONLY",
    "CompiledOnlyDispatcher",
    "numba_version_tested",
    "is_compiled",
    "function_addresses",
    "compiled_functions",
    "python_functions",
    "with_globals",
    "compile_for_addresses",
    "compile_bound",
]


class _NoCyclicCollectionWhileCompiling(event.Listener):
    """Python's cyclic garbage collector paused from the start of an outermost Numba compilation
    to its end (``numba:compile`` events, Numba's public event API; nested compilations, of the
    callees, are inside it), then on again as it was.

    Why: compiling makes many short-lived reference cycles of Numba's compiler objects, each
    batch of which triggers a collection, and a full collection walks the whole heap (SymPy,
    SciPy, Numba's own tables): with the collector on, a first ``fastslow check F1`` spent 3.7 s of
    CPU in 2 600 collections, 3.1 s of it in 18 full ones; paused during the compiles, the check
    took 0.7–3.0 s less CPU in four alternated pairs (median 28.3 → 26.7 s; ``docs/benchmarks.md``,
    "Second pass"). Nothing computed depends on when garbage is collected (the machine code is the
    same); the cost is the cycles of a compile freed at the next collection after it, not during
    it (more memory held while a compile runs). Caveat: the collector is
    process-wide; a collector the caller turned off stays off, and one turned off *during* a
    compile is turned back on at its end."""

    def __init__(self) -> None:
        self.depth = 0
        self.paused = False

    def on_start(self, ev) -> None:
        if self.depth == 0 and gc.isenabled():
            gc.disable()
            self.paused = True
        self.depth += 1

    def on_end(self, ev) -> None:
        self.depth -= 1
        if self.depth == 0 and self.paused:
            self.paused = False
            gc.enable()


event.register("numba:compile", _NoCyclicCollectionWhileCompiling())


NO_C_ENTRY: dict[str, Any] = {"no_cfunc_wrapper": True}  # not in Numba's stubs
"""``njit`` options of a function never passed by address (neither as a problem's ``rhs`` or
``jac`` nor as a method's function, :func:`function_addresses`) nor as a first-class function
argument: compiled without the C wrapper Numba otherwise generates, lowers, optimises and emits
for every function (a cold ``fastslow check F1`` compiles some eighty). Still callable from
Python; the machine code of the function itself is unchanged."""


class CompiledOnlyDispatcher(CPUDispatcher):
    """The dispatcher ``njit(**COMPILED_ONLY)`` and :func:`compile_for_addresses` make (the
    functions compiled without a Python entry): Numba's CPU dispatcher whose call from
    Python raises ``TypeError`` naming the function. Without it the call would jump into the
    Python entry the function was compiled without and end the process (a segmentation fault),
    at once or after a compiled caller had compiled it. Compiled callers are unaffected: they call
    its machine code (typing and inlining read the dispatcher, not ``__call__``)."""

    def __call__(self, *args, **kwargs):
        fn = self.py_func
        raise TypeError(
            f"{fn.__module__}.{fn.__qualname__} is compiled without a Python entry "
            "(numerics.integrators.numba_binding.COMPILED_ONLY): only compiled code may call it"
        )


class _CompiledOnlyCPU(target_extension.CPU):
    """The CPU target under the name :data:`COMPILED_ONLY_TARGET`: it only selects
    :class:`CompiledOnlyDispatcher` (typing and code generation are the CPU's: a dispatcher's
    target is its ``targetdescr``, the CPU's)."""


COMPILED_ONLY_TARGET = "cpu_compiled_only"
"""The ``njit`` target name (option ``_target``) of :data:`COMPILED_ONLY`."""
target_extension.target_registry[COMPILED_ONLY_TARGET] = _CompiledOnlyCPU
target_extension.dispatcher_registry[_CompiledOnlyCPU] = CompiledOnlyDispatcher

COMPILED_ONLY: dict[str, Any] = {
    "no_cfunc_wrapper": True,
    "no_cpython_wrapper": True,
    "_target": COMPILED_ONLY_TARGET,
}
""":data:`NO_C_ENTRY` and, also, no Python entry: for the helpers only compiled code calls
(the boxing and unboxing of every argument is not generated). Called from Python, such a
function raises ``TypeError`` (:class:`CompiledOnlyDispatcher`) instead of ending the process;
only functions whose every caller is compiled get it. The machine code and Numba's cache entry
are those of ``njit(**NO_C_ENTRY, no_cpython_wrapper=True)`` (``_target`` is not a compile
option)."""


def numba_version_tested(version: str) -> bool:
    """Whether the Numba version string ``version`` (``"0.68.1"``, ``"0.69.0rc1"``) lies in
    :data:`NUMBA_TESTED`."""
    parts = version.split(".")
    major = int(parts[0])
    minor = int("".join(c for c in parts[1] if c.isdigit()) or 0) if len(parts) > 1 else 0
    low, high = NUMBA_TESTED
    return low <= (major, minor) < high


def is_compiled(fn) -> bool:
    """Whether ``fn`` is a Numba dispatcher (``njit``); an ``isinstance`` check, not the
    ``signatures`` property (which lists and hashes every compiled signature)."""
    return isinstance(fn, Dispatcher)


def _function_value(fty):
    """The code of an intrinsic making a first-class function value of type ``fty`` from the
    three addresses Numba keeps in one (cfunc wrapper, Python object, jitted function)."""

    def codegen(context, builder, sig, args):
        fn = cgutils.create_struct_proxy(fty)(context, builder)
        vp = context.get_value_type(types.voidptr)
        fn.c_addr = builder.inttoptr(args[0], vp)
        fn.py_addr = builder.inttoptr(args[1], vp)
        fn.jit_addr = builder.inttoptr(args[2], vp)
        return fn._getvalue()

    return codegen


START_TYPE, STEP_TYPE, ACCEPT_TYPE, INTERP_TYPE = METHOD_TYPES


@intrinsic
def _rhs_value(typingctx, c_addr, py_addr, jit_addr):
    return RHS_TYPE(types.int64, types.int64, types.int64), _function_value(RHS_TYPE)


@intrinsic
def _jac_value(typingctx, c_addr, py_addr, jit_addr):
    return JAC_TYPE(types.int64, types.int64, types.int64), _function_value(JAC_TYPE)


@intrinsic
def _start_value(typingctx, c_addr, py_addr, jit_addr):
    return START_TYPE(types.int64, types.int64, types.int64), _function_value(START_TYPE)


@intrinsic
def _step_value(typingctx, c_addr, py_addr, jit_addr):
    return STEP_TYPE(types.int64, types.int64, types.int64), _function_value(STEP_TYPE)


@intrinsic
def _accept_value(typingctx, c_addr, py_addr, jit_addr):
    return ACCEPT_TYPE(types.int64, types.int64, types.int64), _function_value(ACCEPT_TYPE)


@intrinsic
def _interp_value(typingctx, c_addr, py_addr, jit_addr):
    return INTERP_TYPE(types.int64, types.int64, types.int64), _function_value(INTERP_TYPE)


@njit(cache=True)
def compiled_functions(fns):
    """``(rhs, jac, start, step, accept, interp)`` as first-class function values from their
    addresses ``fns`` (three each, in that order: :func:`function_addresses`)."""
    return (
        _rhs_value(fns[0], fns[1], fns[2]),
        _jac_value(fns[3], fns[4], fns[5]),
        _start_value(fns[6], fns[7], fns[8]),
        _step_value(fns[9], fns[10], fns[11]),
        _accept_value(fns[12], fns[13], fns[14]),
        _interp_value(fns[15], fns[16], fns[17]),
    )


def python_functions(fns):
    """``(rhs, jac, start, step, accept, interp)`` for the Python driver: ``fns`` is that tuple
    already."""
    return fns


_ADDRESSES: dict[int, tuple] = {}


def function_addresses(fn, sig) -> tuple[int, int, int]:
    """The addresses the compiled driver calls ``fn`` (a dispatcher) through for ``sig``, compiled
    now if it has no such overload: its cfunc wrapper, the dispatcher object, its jitted function.

    Looked up once per compile result (kept with it, so an address is never reused while it is
    cached; a recompiled ``fn`` has a new compile result); the driver rebuilds the function values
    from them (:func:`compiled_functions`). The jitted function's address makes the driver
    call ``fn`` with Numba's calling convention, as a first-class function argument would, so
    exceptions raised inside it still propagate. ``fn`` must stay alive while the driver runs (the
    caller holds it)."""
    cres = fn.overloads.get(sig.args)
    if cres is None:
        fn.compile(sig.args)
        cres = fn.overloads[sig.args]
    entry = _ADDRESSES.get(id(cres))
    if entry is None or entry[0] is not cres:
        lib = cres.library
        wrapper = lib.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)
        jitted = lib.get_pointer_to_function(cres.fndesc.llvm_func_name)
        entry = (cres, int(wrapper), int(jitted))
        _ADDRESSES[id(cres)] = entry
    return entry[1], id(fn), entry[2]


def with_globals(fn: FunctionType, name: str, bound: dict) -> FunctionType:
    """A copy of ``fn`` (its code object) named ``name`` whose globals are ``fn``'s with the names
    of ``bound`` set to its values: a jitted copy calls them directly, as any jitted function calls
    another, and Numba's cache keeps one entry per ``name``."""
    scope = dict(fn.__globals__)
    scope.update(bound)
    copy = FunctionType(fn.__code__, scope, name)
    copy.__qualname__ = name
    copy.__doc__ = fn.__doc__
    return copy


def compile_for_addresses(fn: FunctionType, sig) -> Callable:
    """``fn`` compiled for ``sig`` and cached on disk, to be called only from compiled code through
    its addresses (:func:`function_addresses`): without the CPython wrapper Numba otherwise
    generates for every compiled function (the boxing and unboxing of each argument from Python
    objects; measured, about 0.8 s of the 5 s the first use of Radau IIA's and ROS34PW2's four
    functions costs). Its C wrapper, whose address the driver is given, is kept.

    Caveat: the dispatcher cannot be called from Python (its Python entry has no code: the call
    raises ``TypeError``, :class:`CompiledOnlyDispatcher`); it is for the driver's method
    functions, which only the compiled driver calls."""
    options: dict[str, Any] = {  # not in Numba's stubs
        "cache": True,
        "no_cpython_wrapper": True,
        "_target": COMPILED_ONLY_TARGET,
    }
    return njit(sig, **options)(fn)


def compile_bound(fn: FunctionType, sig) -> Callable:
    """``fn`` compiled lazily for ``sig`` and cached on disk; first-class function values in its
    body are the design (Numba's experimental-feature warning silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaExperimentalFeatureWarning)
        return njit(sig, cache=True)(fn)
