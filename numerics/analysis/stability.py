"""Stability margin of a linear map and the critical gate of a perturbation (claim D7).

For a square real or complex matrix ``J`` (the linearised looped layer at a fixed point) and a
perturbation direction ``G`` (the linearised slow path there):

* :func:`spectral_radius` ``ρ(J) = max |λ_i(J)|``;
* :func:`stability_margin` ``m(J) = min_{|z|=1} σ_min(zI − J)``, the (complex, unstructured)
  *distance to instability* of a discrete-time map: the smallest ``‖Δ‖₂`` that puts an eigenvalue
  of ``J + Δ`` on the unit circle. It equals ``1 − ρ(J)`` when ``J`` is normal and is at most that
  in general (``σ_min(zI − J) ≤ |z − λ|`` for an eigenvalue ``λ``);
* :func:`critical_gate` ``g_c = inf{g ≥ 0 : ρ(J + s·g·G) ≥ 1}`` for a sign ``s = ±1``
  (``0`` if ``ρ(J) ≥ 1``, ``inf`` if the scan never reaches 1);
* :func:`margin_certificate` a second, independent computation of ``m(J)``: bisection on ``r`` with
  the symplectic-pencil test "``r`` is a singular value of ``zI − J`` for some ``|z| = 1``"
  (Byers' distance-to-instability test, discrete-time form).

Statement checked with these functions (D7): if ``ρ(J) < 1`` then ``ρ(J + gG) < 1`` for every
``|g| < m(J)/‖G‖₂``, hence ``g_c ≥ m/‖G‖₂`` for both signs. Proof: ``zI − J − gG`` is invertible on
``|z| = 1`` while ``‖gG‖₂ < m``, so no eigenvalue crosses the circle along ``[0, g]``.

Caveats.

* The margin uses a grid on the half circle (``J`` real: ``σ_min`` is symmetric under ``z ↦ z̄``;
  the full circle for complex ``J``) refined by a bounded Brent search around every grid local
  minimum; a minimum narrower than the grid spacing could be missed, which is what the pencil
  certificate guards against.
* ``critical_gate`` finds the *first* crossing on a scan grid, then bisects; a crossing and
  re-entry that both fall between two grid points would be missed. Eigenvalues of strongly
  non-normal ``J + gG`` carry errors of order ``eps·‖J + gG‖·κ``: ``ρ`` within ``1e-12`` of 1 is
  not resolved.
* Dense ``O(n³)`` linear algebra: for the small Jacobians of the checks (``n = T·d ≤ 64``).
* A causal model's Jacobians are block lower-triangular in token order and the block-causal slow
  path (shifted by ``U_c``) is strictly so: then ``ρ(J + gG) = ρ(J)`` for every ``g`` and
  :func:`critical_gate` returns ``inf``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize_scalar

from fastslow.numerics import lapack, validation
from fastslow.numerics.model import kernels, tangents
from fastslow.numerics.model.layer import check_layer_params, check_state
from fastslow.numerics.model.weights import ModelConfig

__all__ = [
    "spectral_radius",
    "stability_margin",
    "critical_gate",
    "gate_spectral_radii",
    "margin_certificate",
    "MarginCertificate",
    "sigma_min_on_circle",
    "layer_jacobian",
    "slow_jacobian",
    "LoopResult",
    "iterate_looped_map",
]


def _square(name: str, M) -> np.ndarray:
    if isinstance(M, (str, bytes)) or M is None:
        raise TypeError(f"{name} must be a square matrix, got {type(M).__name__}")
    arr = np.asarray(M)
    if not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.complexfloating)
        or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be a real or complex matrix, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, found non-finite entries")
    return arr.astype(np.complex128 if np.iscomplexobj(arr) else np.float64)


# --------------------------------------------------------------------------- unvalidated kernels


def _rho(M: np.ndarray) -> float:
    # the eigenvalues are used as a multiset (their largest modulus): LAPACK's order is irrelevant
    return float(np.max(np.abs(lapack.eigvals(M))))


def _sigma_min_at(J: np.ndarray, theta) -> np.ndarray:
    """``σ_min(e^{iθ} I − J)`` for an array of angles (batched SVD)."""
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    n = J.shape[0]
    out = np.empty(theta.size)
    idx = np.arange(n)
    chunk = max(1, 2**16 // (n * n))
    for s in range(0, theta.size, chunk):
        z = np.exp(1j * theta[s : s + chunk])
        Z = np.empty((z.size, n, n), dtype=np.complex128)
        Z[:] = -J
        Z[:, idx, idx] += z[:, None]
        out[s : s + chunk] = lapack.svdvals(Z)[:, -1]
    return out


def _grid_angles(J: np.ndarray, n_grid: int) -> np.ndarray:
    top = np.pi if not np.iscomplexobj(J) else 2 * np.pi
    # closed interval [0, π] for real J (both ends matter); half-open for the full circle
    return np.linspace(0.0, top, n_grid, endpoint=not np.iscomplexobj(J))


def _margin(J: np.ndarray, n_grid: int, n_refine: int = 6) -> tuple[float, float]:
    thetas = _grid_angles(J, n_grid)
    s = _sigma_min_at(J, thetas)
    periodic = np.iscomplexobj(J)
    left = np.roll(s, 1) if periodic else np.concatenate(([np.inf], s[:-1]))
    right = np.roll(s, -1) if periodic else np.concatenate((s[1:], [np.inf]))
    cand = np.flatnonzero((s <= left) & (s <= right))
    cand = cand[np.argsort(s[cand])][:n_refine]
    best, best_theta = float(s.min()), float(thetas[np.argmin(s)])
    step = thetas[1] - thetas[0]
    lo_lim, hi_lim = (-np.inf, np.inf) if periodic else (0.0, np.pi)
    for i in cand:
        a = max(thetas[i] - step, lo_lim)
        b = min(thetas[i] + step, hi_lim)
        if b <= a:
            continue
        res = minimize_scalar(
            lambda t: float(_sigma_min_at(J, t)[0]),
            bounds=(a, b),
            method="bounded",
            options={"xatol": 1e-13},
        )
        if res.fun < best:
            best, best_theta = float(res.fun), float(res.x)
    return best, best_theta


def _has_unimodular(J: np.ndarray, r: float, tol: float) -> np.ndarray:
    """Unimodular generalised eigenvalues ``z`` of the pencil ``z·Bp − Ap`` (possibly empty).

    ``Ap = [[J, rI], [0, I]]``, ``Bp = [[I, 0], [rI, Jᴴ]]``: ``z`` with ``|z| = 1`` is an eigenvalue
    iff ``r`` is a singular value of ``zI − J`` (``(zI − J)v = r u``, ``(zI − J)ᴴu = r v``).
    """
    n = J.shape[0]
    I, O = np.eye(n), np.zeros((n, n))
    Ap = np.block([[J, r * I], [O, I]])
    Bp = np.block([[I, O], [r * I, J.conj().T]])
    # generalised eigenvalues only (no vectors), used as a set: the unimodular ones, each
    # re-evaluated by σ_min(ẑI − J); LAPACK's order cannot change the result
    a, b = sla.eig(Ap, Bp, right=False, homogeneous_eigvals=True)
    finite = np.abs(b) > 1e-14 * np.maximum(np.abs(a), 1.0)
    z = a[finite] / b[finite]
    return z[np.abs(np.abs(z) - 1.0) < tol]


# --------------------------------------------------------------------------- public functions


def spectral_radius(J) -> float:
    """``ρ(J) = max_i |λ_i(J)|`` of a square matrix (dense eigenvalues)."""
    return _rho(_square("J", J))


def sigma_min_on_circle(J, theta) -> np.ndarray:
    """``σ_min(e^{iθ} I − J)`` at the angles ``theta`` (radians); the curve whose minimum is ``m(J)``."""
    J = _square("J", J)
    theta = validation.finite_array("theta", np.atleast_1d(theta), ndim=1)
    return _sigma_min_at(J, theta)


def stability_margin(J, *, n_grid: int | None = None) -> float:
    """The distance to instability ``m(J) = min_{|z|=1} σ_min(zI − J)``.

    A grid of ``n_grid`` angles (default ``max(512, 16·n)``) on the half circle (real ``J``) or the
    full circle (complex ``J``), refined by a bounded Brent search around the best grid local minima.
    Equals ``1 − ρ(J)`` for normal ``J`` with ``ρ(J) ≤ 1``; in general ``m(J) ≤ |1 − ρ(J)|``.
    Cross-check with :func:`margin_certificate`.
    """
    J = _square("J", J)
    n_grid = (
        max(512, 16 * J.shape[0]) if n_grid is None else validation.positive_int("n_grid", n_grid)
    )
    if n_grid < 3:
        raise ValueError(f"n_grid must be at least 3, got {n_grid}")
    return _margin(J, n_grid)[0]


@dataclass(frozen=True)
class MarginCertificate:
    """The result of the pencil bisection for ``m(J)``.

    Attributes:
        margin: the midpoint of the final bracket.
        lower: ``r`` for which the pencil has no unimodular eigenvalue (so ``m ≥ lower`` up to the
            eigenvalue tolerance).
        upper: a value ``σ_min(zI − J)`` attained at a unimodular ``z`` (so ``m ≤ upper``).
        argmin: the point ``z`` on the circle where ``upper`` is attained.
        iterations: bisection steps taken.
    """

    margin: float
    lower: float
    upper: float
    argmin: complex
    iterations: int


def margin_certificate(
    J, *, tol: float = 1e-12, unimodular_tol: float = 1e-7, max_iter: int = 200
) -> MarginCertificate:
    """Bracket ``m(J)`` by bisection on the symplectic-pencil test (independent of the grid search).

    Start from ``upper = σ_min(I − J)`` (any point of the circle bounds ``m`` from above) and
    ``lower = 0``. At each step ``r = (lower + upper)/2``: if the pencil of :func:`_has_unimodular`
    has an eigenvalue within ``unimodular_tol`` of the circle, some ``σ(zI − J) = r`` and
    ``upper`` drops to ``min(r, σ_min(ẑI − J))`` at the normalised eigenvalues ``ẑ = z/|z|``
    (Boyd–Balakrishnan acceleration); otherwise ``lower = r``. Stops when
    ``upper − lower ≤ tol·max(1, upper)``.
    """
    J = _square("J", J)
    tol = validation.real("tol", tol, low=0.0, low_open=True)
    unimodular_tol = validation.real("unimodular_tol", unimodular_tol, low=0.0, low_open=True)
    max_iter = validation.positive_int("max_iter", max_iter)
    upper = float(_sigma_min_at(J, 0.0)[0])
    arg = 1.0 + 0j
    lower, it = 0.0, 0
    while upper - lower > tol * max(1.0, upper) and it < max_iter:
        it += 1
        r = 0.5 * (lower + upper)
        z = _has_unimodular(J, r, unimodular_tol)
        if z.size:
            th = np.angle(z)
            s = _sigma_min_at(J, th)
            k = int(np.argmin(s))
            if s[k] < r:
                upper, arg = float(s[k]), complex(np.exp(1j * th[k]))
            else:
                upper = r
        else:
            lower = r
    return MarginCertificate(0.5 * (lower + upper), lower, upper, arg, it)


def gate_spectral_radii(J, G, gates) -> np.ndarray:
    """``ρ(J + g·G)`` for every ``g`` in ``gates``."""
    J = _square("J", J)
    G = _square("G", G)
    if G.shape != J.shape:
        raise ValueError(f"G must have the shape of J {J.shape}, got {G.shape}")
    gates = validation.finite_array("gates", np.atleast_1d(gates), ndim=1)
    return np.array([_rho(J + g * G) for g in gates])


def critical_gate(
    J, G, *, sign: int = +1, g_max: float | None = None, n_scan: int = 400, tol: float = 1e-12
) -> float:
    """The first gate ``g ≥ 0`` at which ``ρ(J + sign·g·G)`` reaches 1.

    Scans ``n_scan`` equally spaced gates on ``[0, g_max]`` (default ``g_max = 4(‖J‖₂ + 1)/‖G‖₂``),
    then doubling segments up to ``2^16·g_max`` (for ``G`` with ``ρ(G) ≪ ‖G‖``), and bisects the
    first bracket to ``tol·max(1, g)``. Returns ``0.0`` if ``ρ(J) ≥ 1`` and ``inf`` if ``ρ < 1`` on
    the whole scan (e.g. ``J + gG`` block-triangular with ``g``-independent diagonal blocks: the
    autoregressive slow path, claim D7).
    """
    J = _square("J", J)
    G = _square("G", G)
    if G.shape != J.shape:
        raise ValueError(f"G must have the shape of J {J.shape}, got {G.shape}")
    if sign not in (1, -1) or isinstance(sign, bool):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    n_scan = validation.positive_int("n_scan", n_scan)
    tol = validation.real("tol", tol, low=0.0, low_open=True)
    nG = float(np.linalg.norm(G, 2))
    if _rho(J) >= 1.0:
        return 0.0
    if nG == 0.0:
        return float("inf")
    if g_max is None:
        g_max = 4.0 * (float(np.linalg.norm(J, 2)) + 1.0) / nG
    g_max = validation.real("g_max", g_max, low=0.0, low_open=True)
    Gs = sign * G
    # [0, g_max] finely, then doubling segments [2^(k−1), 2^k]·g_max (k ≤ 16), n_scan/10 points each
    segments = [np.linspace(0.0, g_max, n_scan + 1)[1:]]
    segments += [
        np.linspace(g_max * 2.0 ** (k - 1), g_max * 2.0**k, max(n_scan // 10, 2) + 1)[1:]
        for k in range(1, 17)
    ]
    lo, hi = 0.0, None
    for g in np.concatenate(segments):
        if _rho(J + g * Gs) >= 1.0:
            hi = g
            break
        lo = g
    if hi is None:
        return float("inf")
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if _rho(J + mid * Gs) >= 1.0:
            hi = mid
        else:
            lo = mid
    return float(0.5 * (lo + hi))


# --------------------------------------------------------------------------- the looped layer


def _point(config, params, X, E):
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    p = check_layer_params(config, params)
    X = check_state(config, X)
    E = check_state(config, E, "E") if E is not None else (X.copy() if config.gamma else None)
    return p, X, E


def _dense(shape: tuple, jvp) -> np.ndarray:
    """The dense matrix of the linear map ``jvp`` on states of ``shape`` (row-major ``vec``):
    column ``k`` is ``jvp(e_k)`` for the ``k``-th unit state."""
    n = int(np.prod(shape))
    M = np.empty((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        M[:, k] = np.asarray(jvp(e.reshape(shape))).ravel()
    return M


def layer_jacobian(config: ModelConfig, params, X, E=None) -> np.ndarray:
    """Dense ``∂Φ/∂X`` at ``X`` (``T·d × T·d``, row-major ``vec``: index ``t·d + i``).

    Built from exact JVPs (:mod:`numerics.model.autodiff`) of the basis vectors; ``E`` is held constant
    (defaults to ``X``). For small checks only (``T·d ≲ 100``).
    """
    p, X, E = _point(config, params, X, E)
    c = tangents.layer_fwd(config, p, X, E)
    return _dense(X.shape, lambda dX: tangents.layer_jvp_cached(config, p, c, dX, None))


def slow_jacobian(config: ModelConfig, params, X) -> np.ndarray:
    """Dense ``∂Slow/∂X`` at ``X`` (ungated, without ``h``): the linearised slow path.

    At a token-homogeneous ``X`` it is ``δX ↦ U_c K_s B δX M_s`` (claim D6 (c)); the gate enters the
    layer Jacobian as ``∂Φ/∂X = J_fast + g·h·∂Slow/∂X``.
    """
    p, X, _ = _point(config, params, X, None)
    if not config.slow:
        raise ValueError("the model has no slow path (config.slow is False)")
    q = p.copy()
    q.g = 1.0
    c = tangents.layer_fwd(config, q, X, X if config.gamma else None)
    satt = c["slow_attn"]

    def slow_jvp(dX):
        dYh = tangents.norm_lin(satt["Xn"], c["rs"], kernels.block_mean(dX, config.P))
        dO = tangents.attn_jvp(config.score_scale, satt, p.Qs, p.Ks, p.Vs, dYh, None, None, None)
        return kernels.causal_upsample(dO, config.P)

    return _dense(X.shape, slow_jvp)


@dataclass(frozen=True)
class LoopResult:
    """The outcome of iterating the looped layer ``X ← Φ(X)``.

    Attributes:
        status: ``"converged"`` (``‖Φ(X) − X‖_F ≤ tol``), ``"diverged"`` (``‖X‖_max`` above
            ``blowup`` or non-finite) or ``"not_settled"`` (neither within ``max_iter``).
        X: the last iterate.
        iterations: iterations performed.
        step: the last ``‖Φ(X) − X‖_F``.
        distance: ``‖X − X_ref‖_F`` to the reference fixed point, if one was given.
    """

    status: str
    X: np.ndarray
    iterations: int
    step: float
    distance: float


def iterate_looped_map(
    config: ModelConfig,
    params,
    X0,
    E=None,
    *,
    X_ref=None,
    max_iter: int = 5000,
    tol: float = 1e-12,
    blowup: float = 1e8,
) -> LoopResult:
    """Iterate the weight-tied layer ``X ← Φ(X)`` from ``X0`` (``E`` defaults to ``X0``).

    Stops at convergence (``‖Φ(X) − X‖_F ≤ tol``), divergence (``max |X| > blowup``) or after
    ``max_iter`` steps. Converging to *a* fixed point is not converging to ``X_ref``: compare
    ``distance``.
    """
    p, X, E = _point(config, params, X0, E)
    ref = None if X_ref is None else check_state(config, X_ref, "X_ref")
    return _iterate(lambda Z: kernels.layer(config, p, Z, E), X, ref, max_iter, tol, blowup)


def iterate_linear_loop(
    M, x0, *, x_ref=None, max_iter: int = 5000, tol: float = 1e-12, blowup: float = 1e8
) -> LoopResult:
    """Iterate the linear loop ``x ← M x`` from ``x0`` with the stopping rules of
    :func:`iterate_looped_map` (``x_ref`` defaults to the fixed point 0)."""
    M = validation.finite_array("M", M, ndim=2)
    x0 = validation.finite_array("x0", x0, shape=(M.shape[1],))
    ref = (
        np.zeros(M.shape[0])
        if x_ref is None
        else validation.finite_array("x_ref", x_ref, shape=x0.shape)
    )
    return _iterate(lambda z: M @ z, x0, ref, max_iter, tol, blowup)


def _iterate(step_map, X, ref, max_iter, tol, blowup) -> LoopResult:
    """``X ← step_map(X)`` until the step is ≤ ``tol`` (converged), an entry exceeds ``blowup``
    or is not finite (diverged), or ``max_iter`` steps (not settled)."""
    max_iter = validation.positive_int("max_iter", max_iter)
    tol = validation.real("tol", tol, low=0.0, low_open=True)
    blowup = validation.real("blowup", blowup, low=0.0, low_open=True)
    step = float("inf")
    status = "not_settled"
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, max_iter + 1):  # noqa: B007  (k is the step count returned)
            Y = step_map(X)
            if not np.all(np.isfinite(Y)) or np.abs(Y).max() > blowup:
                status = "diverged"
                X = Y
                break
            step = float(np.linalg.norm(Y - X))
            X = Y
            if step <= tol:
                status = "converged"
                break
    dist = (
        float("nan")
        if ref is None or not np.all(np.isfinite(X))
        else float(np.linalg.norm(X - ref))
    )
    return LoopResult(status, X, k, step, dist)
