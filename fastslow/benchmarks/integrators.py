"""Stiff depth-flow integrators: the Numba methods against ``scipy.integrate.solve_ivp``, their FLOP
floor, work-precision tables, scaling in ``T`` and compile times.

Problem (``Problem``): the coupling form ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)``
(block-bidirectional mask, ``P = 8``, RMS norm, tanh MLP, slow path with gate 0.5, ``γ = 1``
towards a random ``E``, ``L = 4`` untied layers: integrated interval by interval with stops at
``l/L``) from a random ``X₀`` to ``t = 1``, at ``T = 64, d = 8`` and ``ε ∈ {1e-2, 1e-3, 1e-4}``;
next to it the same flow without norm and slow path (``plain``).

*Matched final error*: every method runs a ladder of tolerances (``rtol = 10⁻³ … 10⁻¹⁰`` in
half-decades, ``atol = 10⁻³·rtol``) and is timed at the loosest tolerance whose relative error at
``t = 1`` (against Radau IIA at ``rtol = 1e-12``, cross-checked against ROS34PW2) is at most
``target``. Times are CPU times (``time.process_time``), one BLAS thread; runs under 0.2 s are
the best of at least 4 (repeated up to 0.6 s of CPU). The machine may be shared: only ratios
measured in one run are meaningful.

What each method gets: the Numba methods of :func:`numerics.integrators.integrate` (``auto``,
``radau``, ``rosw``, ``dopri5``, ``dop853``) with the block-diagonal frozen-kernel ``W``; every method of
``scipy.integrate.solve_ivp`` (the explicit RK23, RK45 and DOP853, and LSODA, BDF and Radau) — as
a user runs them (the NumPy right-hand side
``numerics.model.kernels.coupling`` and SciPy's own finite-difference Jacobian, whose calls are
counted: ``fd calls``) and handed the *same compiled right-hand side* and the frozen-kernel
Jacobian ``((A − I)/ε − γI) ⊗ I_d`` (sparse for BDF/Radau, dense for LSODA; the explicit methods
take none); in between, the NumPy right-hand side with the frozen-kernel Jacobian (``numpy+J``,
the implicit methods only). A run over its CPU cap is reported as capped, never silently dropped.

*FLOP floor* (:func:`flop_floor`): the floating-point operations a run cannot avoid — its
right-hand-side calls, factorisations and Newton solves counted from its work counters with the
operation counts of this problem (exp and tanh as 10 each) — at the DGEMM rate measured in the
same run; the ratio is the run's CPU time over that.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
from numba import njit
from scipy import stats

from fastslow.benchmarks import section
from fastslow.numerics.integrators.driver import METHODS as DRIVER_METHODS
from fastslow.numerics.integrators.integration import integrate
from fastslow.numerics.lanes import aligned_zeros
from fastslow.numerics.model.coupling.drivers import integrate_coupling_scipy, layer_breakpoints
from fastslow.numerics.model.coupling.jacobian import frozen_kernel_jac_nb
from fastslow.numerics.model.coupling.packing import (
    is_block_local,
    is_lower_triangular,
    pack_coupling,
)
from fastslow.numerics.model.coupling.rhs import coupling_rhs_nb
from fastslow.numerics.model.weights import ModelConfig, init_model

EPSILONS = (1e-2, 1e-3, 1e-4)
RTOLS = tuple(10.0 ** -(k / 2) for k in range(6, 21))  # half-decade ladder 1e-3 … 1e-10
WP_RTOLS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
SCIPY_EXPLICIT = ("RK23", "RK45", "DOP853")
SCIPY_METHODS = (*SCIPY_EXPLICIT, "LSODA", "BDF", "Radau")
SCIPY_KINDS = ("numpy", "numpy+J", "compiled")
"""SciPy as a user runs it (NumPy RHS, its own finite-difference Jacobian), the NumPy RHS with the
frozen-kernel Jacobian, and the compiled RHS with the frozen-kernel Jacobian."""
NUMBA_METHODS = ("auto", "radau", "rosw", "dopri5", "dop853")
EXP_FLOPS = 10


class Problem:
    """The benchmark flow at ``(T, d, ε)`` (``plain``: no norm, no slow path)."""

    def __init__(self, T, d, eps, L=4, P=8, seed=0, plain=False, mask="block_bidirectional"):
        self.cfg = ModelConfig(T=T, P=P, d=d, mask=mask, gamma=1.0, norm=not plain, slow=not plain)
        self.model = init_model(self.cfg, L, seed, gate=0.5)
        rng = np.random.default_rng(seed + 1)
        self.X0 = rng.standard_normal((T, d))
        self.E = rng.standard_normal((T, d))
        self.eps = eps
        self.p = pack_coupling(self.cfg, self.model, eps, self.E)
        self.breakpoints = layer_breakpoints(L)
        self.T = T
        self.block = P if is_block_local(self.cfg.mask_array, P) else None
        self.lower = self.block is None and is_lower_triangular(self.cfg.mask_array)

    def numba(self, method, rtol, **kw):
        r = integrate(
            coupling_rhs_nb,
            (0.0, 1.0),
            self.X0,
            method=method,
            jac=frozen_kernel_jac_nb,
            jac_size=self.T,
            jac_block=self.block,
            jac_lower=self.lower,
            p=self.p,
            rtol=rtol,
            atol=rtol * 1e-3,
            breakpoints=self.breakpoints,
            **kw,
        )
        work = {"nfev": r.nfev, "njev": r.njev, "nlu": r.nlu, "steps": r.nsteps, "fd": 0}
        return (r.y[:, -1] if r.success else None), work

    def scipy(self, method, rtol, rhs_kind, time_cap):
        """SciPy's ``method`` (:func:`integrate_coupling_scipy`): with the NumPy right-hand side
        and SciPy's finite-difference Jacobian (``rhs_kind="numpy"``, as a user runs it), the
        NumPy one and the frozen-kernel Jacobian (``"numpy+J"``) or the compiled one and the
        frozen-kernel Jacobian (``"compiled"``)."""
        jac = None
        if rhs_kind != "numpy" and method not in SCIPY_EXPLICIT:
            jac = "dense" if method == "LSODA" else "sparse"
        r = integrate_coupling_scipy(
            self.model,
            self.X0,
            self.eps,
            E=self.E,
            method=method,
            rtol=rtol,
            atol=rtol * 1e-3,
            jac=jac,
            rhs="numpy" if rhs_kind.startswith("numpy") else "compiled",
            time_cap=time_cap,
        )
        if r.capped:
            return None, {"capped": True}
        if not r.success:
            return None, {"failed": r.message}
        fd = r.ncalls - r.nfev
        return r.y, {"nfev": r.nfev, "njev": r.njev, "nlu": r.nlu, "steps": r.nsteps, "fd": fd}


def _timed(fn, min_repeat_time=0.2, repeat=3, budget=0.6, max_repeat=40):
    """Best CPU time of ``fn`` (runs under ``min_repeat_time`` repeated at least ``repeat`` more
    times and until ``budget`` seconds are spent); the same rule for every method."""
    t0 = time.process_time()
    out = fn()
    t = time.process_time() - t0
    if t < min_repeat_time:
        spent, k = t, 0
        while k < repeat or (spent < budget and k < max_repeat):
            t0 = time.process_time()
            fn()
            dt = time.process_time() - t0
            t, spent, k = min(t, dt), spent + dt, k + 1
    return t, out


def rel_error(y, ref) -> float:
    return float(np.linalg.norm(y - ref) / np.linalg.norm(ref))


def matched(run, ref, target, rtols=RTOLS):
    """Loosest tolerance of the ladder meeting ``target``: ``(time, error, rtol, work)``, or
    ``(None, None, None, work)`` when capped or failed."""
    for rtol in rtols:
        y, work = run(rtol)
        if y is None:
            return None, None, None, work
        err = rel_error(y, ref)
        if err <= target:
            t, (_, work) = _timed(lambda: run(rtol))
            return t, err, rtol, work
    return None, None, None, {"failed": "no tolerance of the ladder meets the target"}


def dgemm_rate(n=256, repeat=20) -> float:
    """FLOP/s of ``n×n`` matrix products in this process (best of ``repeat``)."""
    A = np.random.default_rng(0).standard_normal((n, n))
    B = A.copy()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def rhs_flops(cfg: ModelConfig) -> float:
    """Operations of one block-local right-hand-side call (scores, mixing, MLP, slow path)."""
    T, P, d, m, N = cfg.T, cfg.P, cfg.d, cfg.m, cfg.T // cfg.P
    f = 2 * T * d * (d + m) + 4 * T * P * d + 2 * T * m * d + EXP_FLOPS * T * (P + m)
    if cfg.norm:
        f += 3 * T * d
    if cfg.slow:
        f += 2 * N * d * 2 * d + 2 * N * N * d + EXP_FLOPS * N * N
    return float(f + 3 * T * d)


def flop_floor(cfg: ModelConfig, method: str, work: dict) -> float:
    """FLOP of a run from its counters: RHS calls, factorisations (real ``(2/3)P³`` per block,
    complex 4× that), Newton/stage solves (``2P·d`` per row, complex 4×). The factorisation
    count is an LU's, the least a factorisation can cost: the integrators invert each block
    (``2P³``, :mod:`numerics.integrators.linalg`) so that a solve is one product, at the same
    ``2P·d`` per row as the two substitutions it replaces."""
    T, P, d = cfg.T, cfg.P, cfg.d
    f = work["nfev"] * rhs_flops(cfg)
    lu = (T // P) * (2 / 3) * P**3
    solve = 2 * T * P * d
    if method == "radau":
        f += work["nlu"] / 2 * 5 * lu + work["nfev"] / 3 * 5 * solve
    elif method == "rosw":
        f += work["nlu"] * lu + work["nfev"] * solve
    return f


def _row(name, eps, r, floor_s=None):
    t, err, rtol, work = r
    if t is None:
        why = "capped" if work.get("capped") else work.get("failed", "—")
        return [eps, name, "—", "—", "—", "—", "—", "—", why]
    counts = f"{work['nfev']}/{work['njev']}/{work['nlu']}"
    ratio = t / floor_s if floor_s else "—"
    return [eps, name, t * 1e3, err, rtol, work["steps"], counts, work["fd"], ratio]


def compare(prob: Problem, target, time_cap, rate):
    """Rows and times of every method on one problem; the references agree."""
    for meth in DRIVER_METHODS:  # compile / load outside the timings
        prob.numba(meth, 1e-3)
    ref, _ = prob.numba("radau", 1e-12)
    ref2, _ = prob.numba("rosw", 1e-11)
    if rel_error(ref2, ref) > 10 * target:
        raise RuntimeError("the two Numba references disagree")
    rows, times, runs = [], {}, {}
    for meth in NUMBA_METHODS:
        r = matched(lambda rt, meth=meth: prob.numba(meth, rt), ref, target)
        floor = None
        if r[0] is not None and meth != "auto":
            floor = flop_floor(prob.cfg, meth, r[3]) / rate
        rows.append(_row(f"Numba {meth}", prob.eps, r, floor))
        times[meth] = r[0]
        runs[meth] = lambda meth=meth, rt=r[2]: prob.numba(meth, rt)
    for rhs in SCIPY_KINDS:
        explicit_only_once = rhs == "numpy+J"  # without a Jacobian numpy+J is the numpy run
        for m in [m for m in SCIPY_METHODS if not (explicit_only_once and m in SCIPY_EXPLICIT)]:
            r = matched(lambda rt, m=m: prob.scipy(m, rt, rhs, time_cap), ref, target)
            rows.append(_row(f"SciPy {m} ({rhs} RHS)", prob.eps, r))
            times[m, rhs] = r[0]
            runs[m, rhs] = lambda m=m, rhs=rhs, rt=r[2]: prob.scipy(m, rt, rhs, time_cap)
    return rows, times, runs


def interleaved_times(slow, fast, rounds=3, budget=2.0, max_rounds=40) -> tuple[float, float]:
    """The least CPU times ``(slow, fast)`` of ``slow()`` and ``fast()`` run alternately (at
    least ``rounds`` rounds, more while under ``budget`` seconds): a machine whose speed drifts
    during the benchmark (a shared VM: ±25 % between runs seen) slows both alike, where times
    taken minutes apart in the table would not."""
    best_s = best_f = np.inf
    spent, k = 0.0, 0
    while k < rounds or (spent < budget and k < max_rounds):
        t0 = time.process_time()
        fast()
        t1 = time.process_time()
        slow()
        t2 = time.process_time()
        best_f, best_s = min(best_f, t1 - t0), min(best_s, t2 - t1)
        spent, k = spent + t2 - t0, k + 1
    return best_s, best_f


def speedups(times: dict, runs: dict) -> dict:
    """The best SciPy method (per RHS kind) against the best Numba method, both chosen by their
    times in the table and then re-timed alternately (:func:`interleaved_times`): the ratio per
    kind, the Numba method, SciPy's per kind (``"theirs"``) and the two re-timed CPU seconds per
    kind (``"times"``, SciPy's first)."""
    ours = {k: v for k, v in times.items() if isinstance(k, str) and v is not None}
    best = min(ours, key=ours.get)
    out: dict = {"ours": best, "theirs": {}, "times": {}}
    for rhs in SCIPY_KINDS:
        theirs = {k: v for k, v in times.items() if isinstance(k, tuple) and k[1] == rhs and v}
        if not theirs:
            out[rhs] = float("nan")
            continue
        fastest = min(theirs, key=theirs.get)
        out["theirs"][rhs] = fastest[0]
        out["times"][rhs] = interleaved_times(runs[fastest], runs[best])
        out[rhs] = out["times"][rhs][0] / out["times"][rhs][1]
    return out


@njit(cache=True)
def _rhs_loop(y, p, out, reps):
    for _ in range(reps):
        coupling_rhs_nb(0.0, y, p, 0, out)


def rhs_seconds(prob: Problem, reps: int = 1000, repeat: int = 10) -> float:
    """CPU seconds of one compiled right-hand-side call at the problem's initial state (first
    layer), in a compiled loop on line-aligned arrays: the least of ``repeat`` loops."""
    y, out = aligned_zeros(prob.X0.size), aligned_zeros(prob.X0.size)
    y[:] = prob.X0.ravel()
    _rhs_loop(y, prob.p, out, 1)
    best, _ = _timed(lambda: _rhs_loop(y, prob.p, out, reps), np.inf, repeat, 0.0)
    return best / reps


def overheads(table: list, sp: dict, c: float) -> tuple[float, float]:
    """CPU seconds per right-hand-side call beyond the call itself (``c``, :func:`rhs_seconds`),
    ``(ours, SciPy's)``, of the two runs of the compiled-RHS speed-up: what each integrator adds
    to a call (its step loop, stage passes and fixed cost, spread over its calls)."""
    calls = (_calls(table, "Numba " + sp["ours"]),
             _calls(table, f"SciPy {sp['theirs'].get('compiled')} (compiled RHS)"))  # fmt: skip
    if "—" in calls or "compiled" not in sp["times"]:
        return float("nan"), float("nan")
    t_theirs, t_ours = sp["times"]["compiled"]
    return t_ours / int(calls[0]) - c, t_theirs / int(calls[1]) - c


def checked_instance(prob: Problem, target: float, time_cap: float, rate: float) -> dict:
    """One instance's target checks: the table rows (:func:`compare`), the speed-ups
    (:func:`speedups`), one RHS call's seconds (:func:`rhs_seconds`), the per-call overheads
    ``(ours, SciPy's)`` (:func:`overheads`) and the Radau run against its FLOP floor (``"—"``
    if it had none)."""
    rows, times, runs = compare(prob, target, time_cap, rate)
    sp = speedups(times, runs)
    c = rhs_seconds(prob)
    floor = next((r[-1] for r in rows if r[1] == "Numba radau"), "—")
    return {"rows": rows, "sp": sp, "c": c, "overheads": overheads(rows, sp, c), "floor": floor}


def _times(ratio: float) -> str:
    """A speed-up with three significant digits (``2.96×``, ``61.1×``, ``473×``), so that a
    ratio near a target is not rounded onto it."""
    digits = 2 if ratio < 10 else 1 if ratio < 100 else 0
    return f"{ratio:.{digits}f}×"


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


COLUMNS = ["ε", "method", "CPU ms", "final rel. error", "rtol", "steps", "nfev/njev/nlu",
           "fd calls", "× FLOP floor"]  # fmt: skip


@section("integrators")
def integrator_benchmark(quick: bool) -> dict:
    """Numba auto/Radau/ROS34PW2/DOPRI5/DOP853 vs every SciPy method at matched final error."""
    target = 1e-6
    epsilons = EPSILONS[:2] if quick else EPSILONS
    time_cap = 10.0 if quick else 60.0
    rate = dgemm_rate()
    table, notes, worst = [], [], {"numpy": np.inf, "compiled": np.inf, "floor": 0.0}
    for plain in (False, True):
        for eps in epsilons:
            checked = checked_instance(Problem(64, 8, eps, plain=plain), target, time_cap, rate)
            rows, sp, c = checked["rows"], checked["sp"], checked["c"]
            o_ours, o_theirs = checked["overheads"]
            kind = "plain (no norm, no slow path)" if plain else "full"
            table += [[kind, *row] for row in rows]
            table.append([kind, eps, f"speed-up of Numba {sp['ours']}", "", "", "", "", "", "",
                          f"{_times(sp['numpy'])} vs best SciPy (NumPy RHS), "
                          f"{_times(sp['numpy+J'])} (NumPy RHS + frozen J), "
                          f"{_times(sp['compiled'])} (compiled RHS + frozen J; per RHS call of "
                          f"{c * 1e6:.2f} µs, beyond it: ours {o_ours * 1e6:.2f} µs, SciPy's "
                          f"{o_theirs * 1e6:.2f} µs)"])  # fmt: skip
            worst["numpy"] = min(worst["numpy"], sp["numpy"])
            worst["compiled"] = min(worst["compiled"], sp["compiled"])
            floor = checked["floor"]
            worst["floor"] = max(worst["floor"], np.inf if floor == "—" else floor)
    notes.append(
        f"T = 64, d = 8, P = 8, L = 4; matched final relative error ≤ {target:g}; DGEMM rate of "
        f"this run {rate / 1e9:.1f} GF/s (one thread), the rate of the FLOP floor. Targets: "
        "≥ 10× the best SciPy method with the NumPy RHS, ≥ 3× with the compiled RHS and frozen "
        "J, at every ε; a Radau run within 5× of its FLOP floor."
    )
    notes.append(
        "In this run, over every problem and ε: the least speed-up against the best SciPy method "
        f"with the NumPy RHS {_times(worst['numpy'])} (target ≥ 10×: "
        f"{_met(worst['numpy'] >= 10)}), with the compiled RHS and frozen J "
        f"{_times(worst['compiled'])} (target ≥ 3×: {_met(worst['compiled'] >= 3)}); the "
        f"largest Radau run against its FLOP floor {worst['floor']:.2f}× (target ≤ 5×: "
        f"{_met(worst['floor'] <= 5)})."
    )
    notes.append(
        "fd calls: right-hand-side calls of SciPy's finite-difference Jacobian (not in SciPy's "
        "nfev for Radau/BDF). Times are CPU seconds on a possibly shared machine: compare "
        "ratios within this table only. The speed-ups re-time the best Numba and the best "
        "SciPy run of the table alternately (best of ≥ 3 rounds each), so that a drift of the "
        "machine's speed between table rows does not enter them."
    )
    return {
        "title": f"Stiff depth flow: Numba integrators vs SciPy at matched final error ≤ {target:g}",
        "columns": ["problem", *COLUMNS],
        "rows": table,
        "notes": notes,
    }


INSTANCES = ((64, 8, 8, 3), (32, 8, 8, 1), (128, 8, 8, 0), (64, 16, 8, 0), (64, 8, 16, 0))
"""``(T, d, P, seed)`` of the other instances of the full flow checked at ε = 1e-2 and 1e-3."""


def _calls(rows, name) -> str:
    """The RHS calls (``nfev``) of the row named ``name``, or ``—``."""
    row = next((r for r in rows if r[1] == name), None)
    return "—" if row is None or row[6] == "—" else row[6].split("/")[0]


@section("integrators_instances")
def other_instances(quick: bool) -> dict:
    """The targets on other seeds and sizes of the full flow than the benchmark's, at ε = 1e-2
    (where both sides run an explicit method) and 1e-3: the checks of the `integrators` table,
    repeated, so that a target met on one instance is not read as met in general."""
    rate = dgemm_rate()
    rows = []
    cases = [(eps, *inst) for eps in (1e-2, 1e-3) for inst in INSTANCES]
    for eps, T, d, P, seed in cases[:2] if quick else cases:
        checked = checked_instance(Problem(T, d, eps, P=P, seed=seed), 1e-6, 10.0, rate)
        table, sp, c, floor = checked["rows"], checked["sp"], checked["c"], checked["floor"]
        o_ours, o_theirs = checked["overheads"]
        ours, theirs = sp["ours"], sp["theirs"].get("compiled", "—")
        rows.append([
            eps, T, d, P, seed, f"{ours} ({_calls(table, 'Numba ' + ours)})",
            f"{theirs} ({_calls(table, 'SciPy ' + theirs + ' (compiled RHS)')})",
            _times(sp["numpy"]), _times(sp["compiled"]), c * 1e6,
            f"{o_ours * 1e6:.2f} / {o_theirs * 1e6:.2f}", floor,
        ])  # fmt: skip
    return {
        "title": "The integrator targets on other instances of the full flow",
        "columns": ["ε", "T", "d", "P", "seed", "ours (RHS calls)", "best SciPy, compiled (calls)",
                    "× SciPy (NumPy RHS)", "× SciPy (compiled RHS + J)", "RHS µs per call",
                    "µs per call beyond the RHS: ours / SciPy", "Radau × FLOP floor"],
        "rows": rows,
        "notes": [
            "Matched final error 1e-6 as in the integrators table (its tolerance ladder, its "
            "interleaved ratios); SciPy's runs capped at 10 s CPU. Targets: ≥ 10× with the NumPy "
            "RHS, ≥ 3× with the compiled RHS, Radau ≤ 5× its floor.",
            "RHS µs per call: one compiled call in a loop at the initial state; beyond the RHS: "
            "the re-timed runs of the compiled-RHS speed-up per call, less that (the step loop, "
            "stage passes and fixed costs of each integrator, and any cache misses the loop "
            "does not see). With equal calls the speed-up is (c + SciPy's)/(c + ours).",
        ],
    }  # fmt: skip


@section("integrators_work_precision")
def work_precision(quick: bool) -> dict:
    """Error against CPU time over a tolerance ladder, per ε (Numba auto/Radau, SciPy's best)."""
    rows = []
    epsilons = EPSILONS[:1] if quick else EPSILONS
    for eps in epsilons:
        prob = Problem(64, 8, eps)
        ref, _ = prob.numba("radau", 1e-12)
        runs = {f"Numba {m}": (lambda rt, m=m: prob.numba(m, rt)) for m in ("auto", "radau")}
        for m in ("RK45", "Radau", "BDF"):
            runs[f"SciPy {m} (NumPy RHS)"] = lambda rt, m=m: prob.scipy(m, rt, "numpy", 20.0)
        for name, run in runs.items():
            for rtol in WP_RTOLS:
                t, (y, work) = _timed(lambda run=run, rtol=rtol: run(rtol))
                if y is None:
                    rows.append([eps, name, rtol, "capped", "—", "—"])
                    break
                rows.append(
                    [eps, name, rtol, rel_error(y, ref), t * 1e3, work["nfev"] + work["fd"]]
                )
    return {
        "title": "Work-precision: final relative error against CPU time (T = 64, d = 8, P = 8)",
        "columns": ["ε", "method", "rtol", "final rel. error", "CPU ms", "RHS calls"],
        "rows": rows,
        "notes": [
            "atol = 1e-3·rtol; SciPy gets its own finite-difference Jacobian (fd calls "
            "included in 'RHS calls'); RK45 stops at the 20 s CPU cap."
        ],  # fmt: skip
    }


def _per_step(prob: Problem, steps: int) -> tuple[float, dict]:
    """CPU seconds per accepted step of Radau over its first ``steps`` steps (max_steps)."""
    run = lambda: integrate(
        coupling_rhs_nb, (0.0, 1.0), prob.X0, method="radau", jac=frozen_kernel_jac_nb,
        jac_size=prob.T, jac_block=prob.block, jac_lower=prob.lower, p=prob.p, rtol=1e-5, atol=1e-8,
        breakpoints=prob.breakpoints, max_steps=steps,
    )  # fmt: skip
    t, r = _timed(run, min_repeat_time=1.0, repeat=1, budget=2.0)
    return t / max(r.nsteps + r.nreject, 1), {"nfev": r.nfev, "steps": r.nsteps + r.nreject}


def memory_bytes(prob: Problem) -> int:
    """Bytes of the packed vector and the Radau workspaces (what grows with ``T``)."""
    n, T = prob.T * prob.cfg.d, prob.T
    nws, nwc, niw = DRIVER_METHODS["radau"][0].workspace(n, T, prob.block or T, prob.lower)
    return 8 * (prob.p.size + nws + niw) + 16 * nwc


@section("integrators_scaling")
def scaling(quick: bool) -> dict:
    """Cost per Radau step in ``T`` (d = 16) for a block-local and the causal mask."""
    sizes = (256, 1024) if quick else (256, 512, 1024, 2048, 4096)
    rows, notes = [], []
    for mask, P in (("block_bidirectional", 16), ("causal", 16)):
        per = []
        for T in sizes:
            prob = Problem(T, 16, 1e-3, P=P, mask=mask)
            _per_step(prob, 2)  # compile / warm
            cost, work = _per_step(prob, 6)
            per.append(cost)
            rows.append(
                [mask, T, cost * 1e3, work["nfev"] / work["steps"], memory_bytes(prob) / 1e6]
            )
        fit = stats.linregress(np.log(sizes), np.log(per))
        half = stats.t.ppf(0.975, len(sizes) - 2) * fit.stderr if len(sizes) > 2 else float("nan")
        notes.append(f"{mask}: cost per step ∝ T^{fit.slope:.2f} ± {half:.2f} (95 %)")
    notes.append("Radau IIA, ε = 1e-3, rtol = 1e-5, the first 6 steps (accepted or rejected) from "
                 "the generic start; memory: packed parameters + scratch + Radau workspaces.")  # fmt: skip
    return {
        "title": "Scaling of the Radau step in T (d = 16, P = 16)",
        "columns": ["mask", "T", "CPU ms per step", "RHS calls per step", "memory MB"],
        "rows": rows,
        "notes": notes,
    }


_COLD = """
import time, numpy as np
t0 = time.process_time()
from fastslow.numerics.model.coupling.drivers import integrate_coupling
from fastslow.numerics.model.weights import ModelConfig, init_model
t1 = time.process_time()
cfg = ModelConfig(T=8, P=4, d=2, mask="block_bidirectional", gamma=1.0)
X0 = np.random.default_rng(0).standard_normal((8, 2))
for method in ("radau", "rosw", "dopri5", "dop853"):
    t = time.process_time()
    integrate_coupling(init_model(cfg, 2, 0), X0, 1e-3, method=method)
    print(method, time.process_time() - t)
print("import", t1 - t0)
"""


@section("integrators_jit")
def jit_times(quick: bool) -> dict:
    """Compile time, reported apart from the run times: first use of each method in a fresh
    process with an empty Numba cache, then with the cache filled."""
    rows = []
    cache = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fastslow-jit-bench-{os.getpid()}")
    for label in ("empty cache", "filled cache"):
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", _COLD], env=env, capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        for line in out.strip().splitlines():
            name, secs = line.split()
            rows.append([label, name, float(secs)])
    return {
        "title": "Compile time of the integrators (first use; CPU seconds)",
        "columns": ["Numba cache", "first use of", "CPU s"],
        "rows": rows,
        "notes": [
            "radau includes the driver, the coupling RHS and Jacobian; rosw, dopri5 and "
            "dop853 then add their own step functions and drivers. Nothing compiles at import."
        ],  # fmt: skip
    }
