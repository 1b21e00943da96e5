"""The coupling form integrated over depth: by our integrators and by SciPy.

* :func:`integrate_coupling`: the flow by :func:`numerics.integrators.integrate` (Numba loops),
  stopping exactly at every ``l/L``; for block-local masks the inverse of ``I/(hγ) − J`` is taken
  block by block, for a causal mask ``J`` is declared lower triangular (``jac_lower``: solved by
  substitution on ``J`` itself, no T×T factorisation kept).
* :func:`integrate_coupling_scipy`: the same flow by :func:`scipy.integrate.solve_ivp`, interval by
  interval (stops at every ``l/L``), with the compiled right-hand side
  (:func:`numerics.model.coupling.rhs.coupling_rhs_nb`) or the NumPy one, and the frozen-kernel
  Jacobian (:func:`numerics.model.coupling.jacobian.frozen_kernel_jac_nb`, dense or sparse) or
  SciPy's own finite-difference one.

A user :class:`~numerics.model.activations.Activation` is not compiled: :func:`integrate_coupling`
and ``integrate_coupling_scipy(rhs="compiled")`` refuse it with a ``ValueError`` naming the NumPy
right-hand side (``integrate_coupling_scipy(rhs="numpy")``, :func:`numerics.model.flow.make_rhs`).

Caveat: integrator runs of the eight-lane and the row right-hand side end within rounding of
each other with the same counts (tested), not bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps
from scipy.integrate import solve_ivp

from fastslow.numerics import validation
from fastslow.numerics.integrators.integration import IntegratorResult, integrate
from fastslow.numerics.model import kernels
from fastslow.numerics.model.coupling.jacobian import jac_for
from fastslow.numerics.model.coupling.packing import (
    is_block_local,
    is_lower_triangular,
    pack_coupling,
)
from fastslow.numerics.model.coupling.rhs import rhs_for
from fastslow.numerics.model.weights import Model, ModelConfig

__all__ = [
    "layer_breakpoints",
    "integrate_coupling",
    "ScipyCouplingResult",
    "SCIPY_JACOBIANS",
    "integrate_coupling_scipy",
]


def layer_breakpoints(L: int) -> np.ndarray:
    """The interior breakpoints ``l/L`` (``l = 1 … L−1``) of ``L`` piecewise-constant intervals."""
    L = validation.positive_int("L", L)
    return np.arange(1, L) / L


def _checked_problem(model: Model, X0, eps: float, E, jacobian_only: bool = False):
    """``(config, X0, E, packed vector)`` after checking the arguments; ``E`` defaults to ``X0``
    when ``γ > 0``; ``jacobian_only`` as in :func:`pack_coupling`."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a numerics.model.weights.Model, got {type(model).__name__}")
    cfg = model.config
    X0 = validation.finite_array("X0", X0, shape=(cfg.T, cfg.d))
    if cfg.gamma and E is None:
        E = X0
    return cfg, X0, E, pack_coupling(cfg, model.layers, eps, E, jacobian_only=jacobian_only)


def integrate_coupling(
    model: Model,
    X0,
    eps: float,
    *,
    E=None,
    t_span=(0.0, 1.0),
    t_eval=None,
    dense_output: bool = False,
    method: str = "auto",
    rtol: float = 1e-6,
    atol: float = 1e-9,
    h_fixed: float | None = None,
    max_steps: int = 1_000_000,
) -> IntegratorResult:
    """Integrate the coupling form of ``model`` (weights of layer ``l`` on ``[l/L, (l+1)/L)``).

    ``E`` defaults to ``X0`` when ``γ > 0``. The integration stops exactly at every ``l/L``. The
    result's ``y`` has shape ``(T·d, K)``; ``result.extra["X"]`` holds the states as ``(K, T, d)``.
    ``method="auto"`` (the default) starts explicit (DOPRI5) and hands over to Radau IIA when it
    detects stiffness (:func:`numerics.integrators.integrate`): the explicit method wins at mild
    stiffness (``ε ≈ 1e-2`` on ``[0, 1]``), Radau IIA below. ``dense_output=True`` reads ``t_eval``
    from the continuous extension instead of landing on it.
    """
    cfg, X0, E, p = _checked_problem(model, X0, eps, E)
    t0, t1 = float(t_span[0]), float(t_span[1])
    bps = [b for b in layer_breakpoints(model.L)] if not model.tied else []
    block = cfg.P if is_block_local(cfg.mask_array, cfg.P) else None
    res = integrate(
        rhs_for(p),  # the path this instance takes, compiled alone (not coupling_rhs_nb's two)
        (t0, t1),
        X0,
        method=method,
        jac=jac_for(p),  # frozen_kernel_jac_nb's branch for this mask, compiled alone
        jac_size=cfg.T,
        jac_block=block,
        jac_lower=block is None and is_lower_triangular(cfg.mask_array),
        p=p,
        rtol=rtol,
        atol=atol,
        t_eval=t_eval,
        dense_output=dense_output,
        breakpoints=bps,
        h_fixed=h_fixed,
        max_steps=max_steps,
    )
    res.extra["X"] = res.y.T.reshape(-1, cfg.T, cfg.d)
    return res


@dataclass
class ScipyCouplingResult:
    """Result of :func:`integrate_coupling_scipy`: the end state and the summed SciPy counters.

    ``y`` is the state at the end of the last interval integrated (``T·d``; the end of the span when
    ``success``); ``nsteps`` the accepted steps; ``capped`` whether the CPU-time cap stopped it;
    ``ncalls`` every call of the right-hand side, including those of SciPy's finite-difference
    Jacobian, which SciPy's ``nfev`` leaves out for Radau and BDF.
    """

    y: np.ndarray
    success: bool
    message: str
    nfev: int
    njev: int
    nlu: int
    nsteps: int
    capped: bool = False
    ncalls: int = 0


SCIPY_JACOBIANS = ("dense", "sparse", None)
"""Jacobians handed to SciPy: the frozen kernel ``((A − I)/ε − γI) ⊗ I_d`` as a dense array or a
sparse CSC matrix, or ``None`` (SciPy's own finite differences)."""


def _scipy_segment_rhs(
    model: Model, p: np.ndarray, seg: int, rhs: str, E, eps: float, calls: list
):  # fmt: skip
    """``f(t, y)`` of interval ``seg``: the compiled kernel or the NumPy reference
    (:func:`numerics.model.kernels.coupling`); every call is counted in ``calls[0]``."""
    cfg = model.config
    if rhs == "compiled":
        out = np.empty(cfg.T * cfg.d)
        kernel = rhs_for(p)  # coupling_rhs_nb's path for this p, compiled alone

        def f(t, y):
            calls[0] += 1
            kernel(t, np.ascontiguousarray(y), p, seg, out)
            return out.copy()

        return f
    lp = model.layers[seg]

    def f_numpy(t, y):
        calls[0] += 1
        return kernels.coupling(cfg, lp, y.reshape(cfg.T, cfg.d), E, eps).ravel()

    return f_numpy


def _scipy_segment_jac(cfg: ModelConfig, p: np.ndarray, seg: int, jac: str):
    """The frozen-kernel Jacobian of interval ``seg``, dense or sparse, as SciPy's ``jac``."""
    J = np.empty((cfg.T, cfg.T))
    kernel = jac_for(p)  # frozen_kernel_jac_nb's branch for this mask, compiled alone

    def dense(t, y):
        kernel(t, np.ascontiguousarray(y), p, seg, J)
        return np.kron(J, np.eye(cfg.d))

    def sparse(t, y):
        kernel(t, np.ascontiguousarray(y), p, seg, J)
        return sps.kron(sps.csr_matrix(J), sps.identity(cfg.d), format="csc")

    return dense if jac == "dense" else sparse


def integrate_coupling_scipy(
    model: Model,
    X0,
    eps: float,
    *,
    E=None,
    method: str = "Radau",
    rtol: float = 1e-6,
    atol: float = 1e-9,
    jac: str | None = "sparse",
    rhs: str = "compiled",
    time_cap: float | None = None,
) -> ScipyCouplingResult:
    """Integrate the coupling form of ``model`` over ``[0, 1]`` with :func:`scipy.integrate.solve_ivp`.

    One ``solve_ivp`` call per layer interval ``[l/L, (l+1)/L]`` (the weights of layer ``l``), each
    starting from the end of the previous one; ``method`` is SciPy's (``"Radau"``, ``"BDF"``,
    ``"LSODA"``, ``"RK45"`` …). ``rhs="compiled"`` evaluates :func:`coupling_rhs_nb` (the same
    kernel as :func:`integrate_coupling`), ``rhs="numpy"`` the NumPy reference
    :func:`numerics.model.kernels.coupling`; ``jac`` is one of :data:`SCIPY_JACOBIANS`. ``E``
    defaults to ``X0`` when ``γ > 0``. The integration stops at the first interval that fails, or,
    with ``time_cap``, after the interval at which the CPU time spent exceeds ``time_cap`` seconds.
    """
    if jac not in SCIPY_JACOBIANS:
        raise ValueError(f"jac={jac!r}: expected one of {SCIPY_JACOBIANS}")
    if rhs not in ("compiled", "numpy"):
        raise ValueError(f"rhs={rhs!r}: expected 'compiled' or 'numpy'")
    cfg, X0, E, p = _checked_problem(model, X0, eps, E, jacobian_only=rhs == "numpy")
    edges = np.concatenate([[0.0], layer_breakpoints(model.L), [1.0]])
    y = X0.ravel().copy()
    counts = {"nfev": 0, "njev": 0, "nlu": 0, "nsteps": 0}
    calls = [0]
    t_start = time.process_time()
    for seg in range(len(edges) - 1):
        kw = {} if jac is None else {"jac": _scipy_segment_jac(cfg, p, seg, jac)}
        res = solve_ivp(
            _scipy_segment_rhs(model, p, seg, rhs, E, eps, calls),
            (edges[seg], edges[seg + 1]),
            y,
            method=method,
            rtol=rtol,
            atol=atol,
            **kw,
        )
        if not res.success:
            return ScipyCouplingResult(y, False, res.message, **counts, ncalls=calls[0])
        y = res.y[:, -1]
        for k in ("nfev", "njev", "nlu"):
            counts[k] += int(getattr(res, k))
        counts["nsteps"] += res.t.size - 1
        if time_cap is not None and time.process_time() - t_start > time_cap:
            return ScipyCouplingResult(
                y, False, "CPU-time cap reached", **counts, capped=True, ncalls=calls[0]
            )
    return ScipyCouplingResult(
        y, True, "the end of the span was reached", **counts, ncalls=calls[0]
    )
