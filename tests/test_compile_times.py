"""What a first run compiles (issue #30, item 6: times a user feels), not how long it takes.

A cold ``fastslow check F1`` spent most of its CPU time compiling code the instance never runs:
the eight-lane and other-mask paths of the coupling right-hand side, and the lower-triangular,
dense and eight-lane paths of the implicit methods' linear algebra. These tests check that the
entries an instance is handed hold only its own paths (no callee of another path is typed into
them), that the pruned copies compute exactly what the full functions compute, and that the
switches select the right copy. No test here measures time (``docs/benchmarks.md`` has the
numbers: "Times a user feels").
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import numpy as np
import pytest
from numba import njit, types

from fastslow.benchmarks import discover, user_times
from fastslow.numerics.integrators import driver, linalg
from fastslow.numerics.integrators.integration import integrate
from fastslow.numerics.integrators.numba_binding import with_globals
from fastslow.numerics.model import compiled
from fastslow.numerics.model.activations import COMPILED_CODES
from fastslow.numerics.model.coupling import jacobian as coupling_jacobian
from fastslow.numerics.model.coupling import layout as coupling_layout
from fastslow.numerics.model.coupling import rhs as coupling_rhs
from fastslow.numerics.model.coupling.packing import pack_coupling
from fastslow.numerics.model.weights import ModelConfig, init_model


def callees(dispatcher_copy, args) -> set[str]:
    """Names of the compiled functions a fresh (uncached) compile of ``dispatcher_copy`` types."""
    fresh = njit(cache=False, error_model="numpy")(dispatcher_copy)
    fresh.compile(args)
    cres = fresh.overloads[args]
    return {
        t.dispatcher.py_func.__name__
        for t in cres.fndesc.typemap.values()
        if isinstance(t, types.Dispatcher)
    }


F2 = types.float64[:, ::1]
F1 = types.float64[::1]
I1 = types.int64[::1]
SOLVE_REAL_ARGS = (F2, F2, I1, F1, F1, types.int64, types.int64, types.int64, types.int64, F1)


@pytest.mark.parametrize(
    ("structure", "kept", "pruned"),
    [
        ("block", {"_real_blocks"}, {"_real_blocks8", "_forward_lower", "_lower_buffers"}),
        ("block_lanes", {"_real_blocks", "_real_blocks8"}, {"_forward_lower"}),
        ("lower", {"_forward_lower", "_lower_buffers"}, {"_real_blocks", "_real_blocks8"}),
        ("dense", {"_swap_rows"}, {"_forward_lower", "_real_blocks", "_real_blocks8"}),
        ("all", {"_real_blocks", "_real_blocks8", "_forward_lower", "_swap_rows"}, set()),
    ],
)
def test_a_specialised_solver_types_only_its_structures_callees(structure, kept, pruned):
    flags = dict(
        zip(("HAS_BLOCK", "HAS_LANES", "HAS_LOWER", "HAS_DENSE"), linalg._FLAGS[structure])
    )
    copy = with_globals(linalg.solve_real.py_func, f"probe_{structure}", flags)
    names = callees(copy, SOLVE_REAL_ARGS)
    assert kept <= names
    assert not (pruned & names)


@pytest.mark.parametrize(("structure", "typed"), [("block", False), ("block_lanes", True)])
def test_the_block_copy_of_the_inverse_types_no_eight_by_eight_elimination(structure, typed):
    flags = dict(
        zip(("HAS_BLOCK", "HAS_LANES", "HAS_LOWER", "HAS_DENSE"), linalg._FLAGS[structure])
    )
    copy = with_globals(linalg._invert_blocks.py_func, f"probe_inv_{structure}", flags)
    assert ("_eliminate8" in callees(copy, (F2, I1, types.int64, types.int64))) == typed


def test_the_inverse_without_the_eight_by_eight_elimination_gives_the_same_bits():
    flags = dict(zip(("HAS_BLOCK", "HAS_LANES", "HAS_LOWER", "HAS_DENSE"), linalg._FLAGS["block"]))
    scalar = njit(error_model="numpy")(
        with_globals(linalg._invert_blocks.py_func, "probe_inv_scalar", flags)
    )
    F = np.random.default_rng(3).standard_normal((24, 8))
    a, b = F.copy(), F.copy()
    pa, pb = np.zeros(24, np.int64), np.zeros(24, np.int64)
    linalg._invert_blocks(a, pa, 24, 8)  # through _eliminate8
    scalar(b, pb, 24, 8)
    assert np.array_equal(a, b) and np.array_equal(pa, pb)


def test_the_row_path_copies_type_only_their_branch():
    args = (types.float64, F1, F1, types.int64, F1)
    rows = coupling_rhs.coupling_rhs_rows_nb.py_func
    block = callees(with_globals(rows, "probe_block", {"ROWS_OTHER_MASKS": False}), args)
    other = callees(with_globals(rows, "probe_other", {"ROWS_BLOCK_LOCAL": False}), args)
    assert "block_weights" in block and "_dense_attention_into" not in block
    assert "_dense_attention_into" in other and "block_weights" not in other
    # and the copies rows_copy hands out are those probes' sources (its switch, not only ours)
    tanh = COMPILED_CODES["tanh"]
    for block_local, kept, dropped in ((True, block, other), (False, other, block)):
        names = callees(coupling_rhs.rows_copy(block_local, tanh).py_func, args)
        assert names >= kept - dropped and not names & (dropped - kept), (block_local, names)


def test_the_jacobian_copies_jac_for_hands_out_type_only_their_branch():
    """As the row path: ``jac_for``'s copy for a block-local mask never types the dense kernel's
    rows, the other never the block weights (a copy with both branches on computes the same, at
    the compile time the copies exist to save)."""
    args = (types.float64, F1, F1, types.int64, types.float64[:, ::1])
    for block_local, kept, dropped in (
        (True, "block_weights", "_kernel_rows_into"),
        (False, "_kernel_rows_into", "block_weights"),
    ):
        p = np.zeros(coupling_layout.HEADER + 1)
        p[coupling_layout.BLOCK_LOCAL] = float(block_local)
        names = callees(coupling_jacobian.jac_for(p).py_func, args)
        assert kept in names and dropped not in names, (block_local, sorted(names))


@pytest.mark.parametrize(
    ("sigma", "kept"),
    [("tanh", {"tanh_row"}), ("relu", {"relu_row"}), ("gelu", {"gelu_row"}), ("identity", set())],
)
def test_an_activation_copy_types_only_its_activations_kernel(sigma, kept):
    H2 = types.float64[:, ::1]
    flags = {f"HAS_{k.upper()}": k == sigma for k in ("tanh", "relu", "gelu")}
    copy = with_globals(compiled.activation_rows.py_func, f"probe_{sigma}", flags)
    names = callees(copy, (types.int64, H2, F1, F1, F1, F1))
    assert names & {"tanh_row", "relu_row", "gelu_row"} == kept
    assert callees(  # the module's own function holds all three
        with_globals(compiled.activation_rows.py_func, "probe_all", {}),
        (types.int64, H2, F1, F1, F1, F1),
    ) >= {"tanh_row", "relu_row", "gelu_row"}


@pytest.mark.parametrize("sigma", ["tanh", "gelu"])  # each copy compiles the whole row path
def test_rhs_for_hands_out_the_copy_of_the_instances_activation(sigma):
    cfg = ModelConfig(T=4, P=2, d=2, m=4, mask="block_bidirectional", gamma=0.5, sigma=sigma)
    model = init_model(cfg, 2, 3, gate=0.5)
    E = np.random.default_rng(1).standard_normal((cfg.T, cfg.d))
    p = pack_coupling(cfg, model.layers, 1e-2, E)
    fn = coupling_rhs.rhs_for(p)
    assert fn is coupling_rhs.rows_copy(True, COMPILED_CODES[sigma])
    assert fn.py_func.__qualname__ == f"coupling_rhs_rows_block_{sigma}"
    y = np.random.default_rng(2).standard_normal(cfg.T * cfg.d)
    a, b = np.empty_like(y), np.empty_like(y)
    fn(0.3, y, p, 1, a)
    coupling_rhs.coupling_rhs_nb(0.3, y, p, 1, b)
    assert np.array_equal(a, b)  # the same code on this p: the same bits


@pytest.mark.parametrize(
    ("mask", "P", "d", "m", "expected"),
    [
        ("block_bidirectional", 2, 2, 4, "block"),
        ("causal", 2, 2, 4, "other"),
        ("block_causal", 8, 8, 8, "lanes"),
    ],
)
def test_rhs_for_hands_out_the_path_the_instance_takes(mask, P, d, m, expected):
    cfg = ModelConfig(T=2 * P, P=P, d=d, m=m, mask=mask, gamma=0.5)
    model = init_model(cfg, 2, 3, gate=0.5)
    E = np.random.default_rng(1).standard_normal((cfg.T, d))
    p = pack_coupling(cfg, model.layers, 1e-2, E)
    tanh = COMPILED_CODES["tanh"]
    want = {
        "block": coupling_rhs.rows_copy(True, tanh),
        "other": coupling_rhs.rows_copy(False, tanh),
        "lanes": coupling_rhs.coupling_rhs_lanes_nb,
    }[expected]
    assert coupling_rhs.rhs_for(p) is want
    y = np.random.default_rng(2).standard_normal(cfg.T * d)
    a, b = np.empty_like(y), np.empty_like(y)
    coupling_rhs.rhs_for(p)(0.3, y, p, 1, a)
    coupling_rhs.coupling_rhs_nb(0.3, y, p, 1, b)
    assert np.array_equal(a, b)  # the same code on this p: the same bits


@pytest.mark.parametrize(
    ("m", "mb", "k", "lower", "structure"),
    [
        (8, 2, 3, False, "block"),
        (8, 2, 8, False, "block_lanes"),
        (16, 8, 1, False, "block_lanes"),
        (8, 8, 2, True, "lower"),
        (8, 8, 2, False, "full"),
    ],
)
def test_structure_of(m, mb, k, lower, structure):
    assert linalg.structure_of(m, mb, k, lower) == structure


def test_the_driver_binds_the_specialised_solvers():
    bound = driver.bound_driver("radau", compiled=False, structure="block")
    step = bound.functions[driver.METHOD_FUNCTIONS.index("step")]
    assert step.__globals__["linalg"] is linalg.specialised("block")
    helper = step.__globals__["_error_estimate"].py_func
    assert helper.__globals__["linalg"] is linalg.specialised("block")
    assert driver.bound_driver("dopri5", compiled=False, structure="block") is (
        driver.bound_driver("dopri5", compiled=False)
    )  # the explicit methods are never specialised


def _block_problem():
    rng = np.random.default_rng(5)
    A = -np.eye(8) + 0.3 * np.kron(np.eye(4), rng.standard_normal((2, 2)))

    def f(t, y):
        return A @ y + np.sin(t)

    return f, (lambda t, y: A), rng.standard_normal(8)


def _pendulum():
    def f(t, y):
        return np.array([y[1], -np.sin(y[0]) + 0.1 * np.cos(t)])

    def jac(t, y):
        return np.array([[0.0, 1.0], [-np.cos(y[0]), 0.0]])

    def jac_lower(t, y):
        return np.array([[-1.0, 0.0], [-np.cos(y[0]), -2.0]])

    return f, jac, jac_lower, np.array([0.5, 0.0])


@pytest.mark.parametrize("method", ["radau", "rosw"])
def test_specialised_runs_equal_the_full_solvers_bit_for_bit(method, monkeypatch):
    f, jac, y0 = _block_problem()
    fp, jp, jl, z0 = _pendulum()
    cases = [
        (f, y0, {"jac": jac, "jac_block": 2}),  # block
        (fp, z0, {"jac": jp}),  # full J, dense at run time
        (fp, z0, {"jac": jl}),  # full J, lower triangular at run time
    ]
    got = [integrate(fun, (0.0, 1.0), y, method=method, **kw) for fun, y, kw in cases]
    monkeypatch.setattr(linalg, "structure_of", lambda *a: "all")
    for (fun, y, kw), r in zip(cases, got, strict=True):
        ref = integrate(fun, (0.0, 1.0), y, method=method, **kw)
        assert r.success and ref.success
        assert np.array_equal(r.y, ref.y) and r.nsteps == ref.nsteps and r.nfev == ref.nfev


INTEGRATOR_MODULES = (
    "base",
    "controllers",
    "driver",
    "dopri5",
    "dop853",
    "linalg",
    "radau",
    "rosw",
)


def _array_slice_assignments(path) -> list[str]:
    """``a[..:..] = b`` with ``b`` a name or a subscript (an array) in the source at ``path``."""
    tree = ast.parse(path.read_text())
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Subscript)):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and any(
                    isinstance(s, ast.Slice) for s in ast.walk(target.slice)
                ):
                    hits.append(f"{path.name}:{node.lineno}")
    return hits


def test_the_compiled_integrators_copy_arrays_without_slice_assignment():
    """An array assigned to a slice compiles Numba's shape-mismatch message (string formatting,
    about 2 s per error model in a fresh process); the integrators copy with ``copy_into``."""
    folder = Path(driver.__file__).parent
    hits = [h for m in INTEGRATOR_MODULES for h in _array_slice_assignments(folder / f"{m}.py")]
    assert hits == []


def test_the_user_times_section_runs_each_command_in_a_fresh_process_with_the_cache_given(
    monkeypatch,
):
    calls = []

    def fake_run(cmd, env, **kw):
        calls.append((cmd, env["NUMBA_CACHE_DIR"], "FASTSLOW_NUMBA_CACHE_BASE" in env))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setenv("FASTSLOW_NUMBA_CACHE_BASE", "/elsewhere")
    monkeypatch.setattr(user_times.subprocess, "run", fake_run)
    table = user_times.user_times(quick=True)
    assert "user_times" in discover()
    assert [r[1].split(":")[0] for r in table["rows"]] == ["cold", "warm"]
    assert [r[4] for r in table["rows"]] == [0, 0]
    (cmd, cache, leaked), (_, cache2, _) = calls
    assert cmd[-3:] == ["fastslow", "check", "F1"] and cache == cache2 and not leaked
