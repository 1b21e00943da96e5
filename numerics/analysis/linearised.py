"""The linearised depth flow along a token-homogeneous trajectory (claims D4, D5).

**Statement.** Along ``X_l = 1_T x_lᵀ`` (gate ``g = 0`` or no slow path; ``γ = 0`` or homogeneous
embeddings ``E = 1 eᵀ``) every softmax attention returns the frozen kernel ``K = K_mask`` and the
linearised layer is

::

    δX ↦ δX N_l + K δX M_l,
    N_l = I + h·( J_n(x_l) W1_l diag σ'(z_l) W2_l − γ I ),   z_l = n(x_l) W1_l,
    M_l = h · J_n(x_l) V_l,
    J_n(x) = ( I − x xᵀ / (d r²) ) / r,   r = √(mean(x²) + ε_norm)      (I without the norm).

(The softmax-derivative term ``δA · n(X)V`` vanishes: every row of ``δA`` sums to zero and all rows
of ``n(X)V`` are equal.) Hence the depth product is the matrix polynomial

::

    δX_L = Σ_j K^j δX_0 C_j,   C_j ← C_j N_l + C_{j−1} M_l  (l = 0, …, L−1; C_0 = I at the start)

and, for a diagonalisable ``K`` with spectral projectors ``P_λ``, the eigen form
``δX_L = Σ_λ P_λ δX_0 D_λ``, ``D_λ = Σ_j λ^j C_j = (N_0 + λM_0)⋯(N_{L−1} + λM_{L−1})``.

**Which form to use.** The polynomial form (Horner in ``K``) only multiplies by the row-stochastic
``K`` and is well conditioned. The eigen form is exact algebra but the causal kernel is strongly
non-normal: its eigenvector matrix (binomial coefficients) has condition number ≈ 1e3 at T = 8 and
≈ 1e20 at T = 64, so the eigen form is useless in float64 beyond T ≈ 20. The functions here build the
projectors from the closed-form eigenvectors (never from ``numpy.linalg.eig``) and are meant for
small ``T``; the mode products ``D_λ``, the mode ratio ``r(L)``, the saturation depth ``L*(τ)`` and the
kernel constant ``c_K`` need only d×d work and the eigenvalues, and are safe at any ``T``.

``σ`` is the config's activation (:mod:`numerics.model.activations`: tanh, relu, gelu, identity
or a user pair ``(f, df)``); only ``σ`` and ``σ'`` enter, so every statement here is first order.
For relu (``smooth=False``) ``σ'`` jumps at 0 (``σ'(0) := 0``): the factors are the derivative
wherever no pre-activation ``z_l`` is exactly 0.

Caveats: the RMS norm's Jacobian annihilates the radial direction ``x_l``; a perturbation of a
token along its own state passes every layer through the residual stream unchanged, for every λ,
so with the norm on ``r(L)`` does not fall below ≈ 1 (``r(1) ≥ 1`` exactly when ``ε_norm → 0``):
saturation needs ``norm=False`` (or a trajectory that rotates enough). See claim D5.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from math import comb

import numpy as np

from fastslow.numerics import lapack, validation
from fastslow.numerics.model.layer import check_layer_params
from fastslow.numerics.model.masks import NAMED_MASKS, coarse_maps, kernel_eigenvalues, make_mask
from fastslow.numerics.model.weights import Model, ModelConfig, init_model

__all__ = [
    "random_model",
    "norm_jacobian",
    "single_token_increment",
    "homogeneous_trajectory",
    "layer_factors",
    "linearised_layer",
    "linearised_stack",
    "depth_polynomial",
    "apply_depth_polynomial",
    "mode_products",
    "mode_ratio",
    "per_mode_ratios",
    "saturation_depth",
    "distinct_eigenvalues",
    "causal_eigenvectors",
    "spectral_projectors",
    "kernel_constant",
    "eigen_form",
    "coarse_factorisation",
    "causal_eigenvector_condition",
    "coarse_stack",
    "exact_kernel",
    "exact_spectral_projectors",
    "exact_projector_residuals",
]


# --------------------------------------------------------------------------- the random model


def random_model(params: Mapping, seed) -> Model:
    """The seeded random model of a linearisation instance (claims D4, D5, the saturation benchmark).

    The config is read from the mapping ``params`` (:meth:`ModelConfig.from_params`); ``params["L"]``
    layers with the fast weights scaled by ``params["scale"]`` and ``params["value_gain"]·I`` added
    to every value matrix (:func:`numerics.model.weights.init_model`); the gates are 0.
    """
    return init_model(
        ModelConfig.from_params(params),
        params["L"],
        seed,
        scale=params["scale"],
        value_gain=params["value_gain"],
    )


# --------------------------------------------------------------------------- single-token map


def _norm_jacobian(x: np.ndarray, eps: float) -> np.ndarray:
    d = x.shape[0]
    r = np.sqrt(np.mean(x * x) + eps)
    return (np.eye(d) - np.outer(x, x) / (d * r * r)) / r


def norm_jacobian(x, eps: float = 1e-6) -> np.ndarray:
    """``J_n(x) = (I − x xᵀ/(d r²))/r`` with ``r = √(mean(x²) + eps)``: the Jacobian of the RMS norm.

    Symmetric, so the row convention ``δn = δx J_n`` and the column convention agree. Its near-null
    vector is ``x`` itself (exactly null when ``eps = 0``).
    """
    x = validation.finite_array("x", x, ndim=1)
    eps = validation.real("eps", eps, low=0.0, low_open=True)
    return _norm_jacobian(x, eps)


def _normed_rows(cfg: ModelConfig, x: np.ndarray) -> np.ndarray:
    if not cfg.norm:
        return x
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + cfg.norm_eps)


def _act(cfg: ModelConfig, z: np.ndarray) -> np.ndarray:
    """``σ(z)`` with the config's activation (:mod:`numerics.model.activations`)."""
    return cfg.activation.f(z)


def _act_prime(cfg: ModelConfig, z: np.ndarray) -> np.ndarray:
    """``σ'(z)`` with the config's activation (relu: ``σ'(0) = 0``)."""
    return cfg.activation.df(z)


def _single_token_increment(cfg, p, x, e):
    xn = _normed_rows(cfg, x)
    out = xn @ p.V + _act(cfg, xn @ p.W1) @ p.W2
    if cfg.gamma:
        out = out + cfg.gamma * (e - x)
    return out


def single_token_increment(config: ModelConfig, params, x, e=None) -> np.ndarray:
    """``f(x) = n(x)V + σ(n(x)W1)W2 + γ(e − x)`` row by row (``x`` of shape (d,) or (n, d)).

    This is the layer increment of a single token (T = 1: attention returns the token's own value).
    The slow path is not included. ``e`` defaults to ``x`` (no injection).
    """
    p = check_layer_params(config, params)
    x = validation.finite_array("x", x)
    if x.shape[-1] != config.d or x.ndim not in (1, 2):
        raise ValueError(f"x must have shape (d,) or (n, d) with d={config.d}, got {x.shape}")
    e = x if e is None else validation.finite_array("e", e, shape=x.shape)
    return _single_token_increment(config, p, x, e)


def _check_homogeneous_model(model) -> Model:
    if not isinstance(model, Model):
        raise TypeError(f"model must be a numerics.model.weights.Model, got {type(model).__name__}")
    cfg = model.config
    if cfg.slow and any(p.g != 0 for p in model.layers):
        gates = [p.g for p in model.layers]
        raise ValueError(
            "the token-homogeneous trajectory needs g = 0 or slow=False: the slow path "
            "gives block 1 zero (U_c) and breaks homogeneity; got gates "
            f"{gates[:4]}{'…' if len(gates) > 4 else ''}"
        )
    return model


def homogeneous_trajectory(model: Model, x0, e=None) -> np.ndarray:
    """``[x_0, …, x_L]`` (shape (L+1, d)) of the single-token map ``x ← x + h f_l(x)``.

    Hypotheses: ``g = 0`` in every layer or ``slow=False`` (else ``ValueError``); ``e`` is the
    homogeneous injection target (defaults to ``x_0``, like :func:`numerics.model.layer.stack`). Then
    ``stack(model, 1 x_0ᵀ, 1 eᵀ) = 1 x_Lᵀ`` (claim D3).
    """
    model = _check_homogeneous_model(model)
    cfg = model.config
    x = validation.finite_array("x0", x0, shape=(cfg.d,))
    e = x.copy() if e is None else validation.finite_array("e", e, shape=(cfg.d,))
    xs = np.empty((model.L + 1, cfg.d))
    xs[0] = x
    for l, p in enumerate(model.layers):
        x = x + cfg.h * _single_token_increment(cfg, p, x, e)
        xs[l + 1] = x
    if not np.all(np.isfinite(xs)):
        raise FloatingPointError("the homogeneous trajectory overflowed; reduce the weight scale")
    return xs


def layer_factors(model: Model, xs) -> tuple[np.ndarray, np.ndarray]:
    """``(N, M)``, each of shape (L, d, d): the factors of the linearised layers along ``xs``.

    ``N_l = I + h(J_n W1 diag σ'(z) W2 − γI)``, ``M_l = h J_n V`` at ``x_l = xs[l]`` (only the first
    ``L`` rows of ``xs`` are used). Same hypotheses as :func:`homogeneous_trajectory`.
    """
    model = _check_homogeneous_model(model)
    cfg = model.config
    xs = validation.finite_array("xs", xs, ndim=2)
    if xs.shape[0] < model.L or xs.shape[1] != cfg.d:
        raise ValueError(f"xs must have shape (≥{model.L}, {cfg.d}), got {xs.shape}")
    d, h = cfg.d, cfg.h
    N = np.empty((model.L, d, d))
    M = np.empty((model.L, d, d))
    for l, p in enumerate(model.layers):
        x = xs[l]
        J = _norm_jacobian(x, cfg.norm_eps) if cfg.norm else np.eye(d)
        z = _normed_rows(cfg, x) @ p.W1
        N[l] = np.eye(d) + h * ((J @ p.W1) * _act_prime(cfg, z)) @ p.W2 - h * cfg.gamma * np.eye(d)
        M[l] = h * (J @ p.V)
    return N, M


# --------------------------------------------------------------------------- linear maps


def _check_factors(N, M) -> tuple[np.ndarray, np.ndarray]:
    N = validation.finite_array("N", N, ndim=3)
    M = validation.finite_array("M", M, shape=N.shape)
    if N.shape[1] != N.shape[2]:
        raise ValueError(f"N and M must have shape (L, d, d), got {N.shape}")
    return N, M


def _check_kernel(K, dX) -> np.ndarray:
    K = validation.finite_array("K", K, ndim=2)
    if K.shape != (dX.shape[0], dX.shape[0]):
        raise ValueError(
            f"K must be {dX.shape[0]}×{dX.shape[0]} to act on δX {dX.shape}, got {K.shape}"
        )
    return K


def linearised_layer(K, dX, N, M) -> np.ndarray:
    """``δX N + K δX M`` (one linearised layer; ``N``, ``M`` d×d)."""
    dX = validation.finite_array("dX", dX, ndim=2)
    K = _check_kernel(K, dX)
    N, M = _check_factors(np.asarray(N)[None], np.asarray(M)[None])
    return dX @ N[0] + K @ (dX @ M[0])


def linearised_stack(K, dX0, N, M) -> np.ndarray:
    """The layer-by-layer recursion ``δX_{l+1} = δX_l N_l + K δX_l M_l``, returning ``δX_L``."""
    dX = validation.finite_array("dX0", dX0, ndim=2)
    K = _check_kernel(K, dX)
    N, M = _check_factors(N, M)
    for l in range(N.shape[0]):
        dX = dX @ N[l] + K @ (dX @ M[l])
    return dX


def _depth_polynomial(N: np.ndarray, M: np.ndarray) -> np.ndarray:
    L, d, _ = N.shape
    C = np.zeros((L + 1, d, d))
    C[0] = np.eye(d)
    for l in range(L):
        # C_j ← C_j N_l + C_{j−1} M_l, highest j first so C_{j−1} is still the old value
        C[1 : l + 2] = C[1 : l + 2] @ N[l] + C[0 : l + 1] @ M[l]
        C[0] = C[0] @ N[l]
    return C


def depth_polynomial(N, M) -> np.ndarray:
    """The coefficients ``C_0, …, C_L`` (shape (L+1, d, d)) of ``δX_L = Σ_j K^j δX_0 C_j``.

    ``D_λ = Σ_j λ^j C_j``. Cost O(L² d³).
    """
    N, M = _check_factors(N, M)
    return _depth_polynomial(N, M)


def apply_depth_polynomial(K, dX0, C) -> np.ndarray:
    """``Σ_j K^j δX_0 C_j`` by Horner's rule: ``S ← K S + δX_0 C_j`` from ``j = L`` down to 0.

    Only multiplies by the row-stochastic ``K`` (no eigendecomposition): well conditioned.
    """
    dX0 = validation.finite_array("dX0", dX0, ndim=2)
    K = _check_kernel(K, dX0)
    C = validation.finite_array("C", C, ndim=3)
    if C.shape[1:] != (dX0.shape[1], dX0.shape[1]):
        raise ValueError(f"C must have shape (L+1, {dX0.shape[1]}, {dX0.shape[1]}), got {C.shape}")
    S = dX0 @ C[-1]
    for j in range(C.shape[0] - 2, -1, -1):
        S = K @ S + dX0 @ C[j]
    return S


def _mode_products_all_depths(N, M, lams):
    """``D_λ`` after each layer: shape (L, n_λ, d, d)."""
    L, d, _ = N.shape
    lams = np.asarray(lams, dtype=np.float64)
    out = np.empty((L, lams.size, d, d))
    D = np.broadcast_to(np.eye(d), (lams.size, d, d)).copy()
    for l in range(L):
        D = D @ (N[l][None] + lams[:, None, None] * M[l][None])
        out[l] = D
    return out


def mode_products(N, M, lams, all_depths: bool = False) -> np.ndarray:
    """``D_λ = (N_0 + λM_0)⋯(N_{L−1} + λM_{L−1})`` for each ``λ`` in ``lams``: shape (n_λ, d, d).

    With ``all_depths=True`` returns every partial product, shape (L, n_λ, d, d) (entry ``l`` is
    the depth-``l+1`` product). Only d×d work: O(L · n_λ · d³).
    """
    N, M = _check_factors(N, M)
    lams = validation.finite_array("lams", lams, ndim=1)
    out = _mode_products_all_depths(N, M, lams)
    return out if all_depths else out[-1]


def _ratio_from_products(D_all: np.ndarray, lams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    one = np.flatnonzero(lams == 1.0)
    others = np.flatnonzero(lams != 1.0)
    # σ_min(D_1) needs the SVD; the largest singular values of the others come from the largest
    # eigenvalue of DᵀD (relative accuracy ~eps for the top of the spectrum, and cheaper)
    smin1 = lapack.svdvals(D_all[:, one[0]])[:, -1]
    if others.size:
        Do = D_all[:, others]
        top = np.sqrt(np.maximum(np.linalg.eigvalsh(np.swapaxes(Do, -1, -2) @ Do)[..., -1], 0.0))
        top = top.max(axis=1)
    else:
        top = np.zeros(D_all.shape[0])
    with np.errstate(divide="ignore"):
        r = np.where(smin1 > 0, top / np.where(smin1 > 0, smin1, 1.0), np.inf)
    return r, smin1


def mode_ratio(N, M, lams) -> tuple[np.ndarray, np.ndarray]:
    """``(r, σ_min(D_1))`` at depths 1…L: ``r(L) = max_{λ≠1} ‖D_λ‖₂ / σ_min(D_1)``.

    ``lams`` are the distinct eigenvalues of ``K`` and must contain 1. ``r = inf`` where ``D_1`` is
    singular.
    """
    N, M = _check_factors(N, M)
    lams = validation.finite_array("lams", lams, ndim=1)
    if not np.any(lams == 1.0):
        raise ValueError(f"lams must contain the persistent eigenvalue 1, got {lams.tolist()}")
    return _ratio_from_products(_mode_products_all_depths(N, M, lams), lams)


def per_mode_ratios(D_all) -> np.ndarray:
    """``‖D_λ‖₂ / σ_min(D_1)`` for every eigenvalue after the first at every depth, shape
    (L, n_λ − 1), from the products ``D_all`` of :func:`mode_products` (``all_depths=True``) with
    ``λ = 1`` first. ``inf`` where ``D_1`` is singular (``nan`` where ``D_λ`` is 0 too)."""
    s = lapack.svdvals(np.asarray(D_all, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        return s[:, 1:, 0] / s[:, :1, -1]


def saturation_depth(r, tau: float) -> float:
    """``L*(τ) = min{L ≥ 1 : r(L) ≤ τ}`` over the depths of ``r`` (``r[0]`` is depth 1); ``inf``
    if no depth qualifies. Returned as a float so that ``inf`` is representable."""
    r = np.asarray(r, dtype=np.float64)
    if r.ndim != 1 or np.isnan(r).any():
        raise ValueError(f"r must be a 1-d array without NaN, got shape {r.shape}")
    tau = validation.real("tau", tau, low=0.0, low_open=True)
    hits = np.flatnonzero(r <= tau)
    return float(hits[0] + 1) if hits.size else float("inf")


# --------------------------------------------------------------------------- spectral data of K


def distinct_eigenvalues(name: str, T: int, P: int | None = None) -> np.ndarray:
    """The distinct eigenvalues of ``K_name``, largest (1) first."""
    return np.array(sorted(kernel_eigenvalues(name, T, P), reverse=True))


def _causal_vectors_int(T: int) -> tuple[list, list]:
    """Exact integer right/left eigenvectors of the T×T causal kernel, ``λ = 1/k``:
    ``v_t = C(t−1, k−1)``, ``w_s = (−1)^{k−s} C(k−1, s−1)``, with ``wᵀv = 1``."""
    V = [[comb(t, k) if t >= k else 0 for k in range(T)] for t in range(T)]
    W = [[(-1) ** (k - s) * comb(k, s) if s <= k else 0 for k in range(T)] for s in range(T)]
    return V, W


def causal_eigenvectors(T: int) -> tuple[np.ndarray, np.ndarray]:
    """``(V, W)``: column ``k`` of ``V`` (of ``W``) is the right (left) eigenvector of the causal
    kernel for ``λ = 1/(k+1)``, in closed form (binomial coefficients), with ``WᵀV = I``.

    Exact integers converted to float64 (exact up to 2^53; beyond that rounded entrywise, which is
    harmless for norms). ``V`` is unit lower triangular and extremely ill conditioned.
    """
    T = validation.positive_int("T", T)
    Vi, Wi = _causal_vectors_int(T)
    return np.array(Vi, dtype=np.float64), np.array(Wi, dtype=np.float64)


def spectral_projectors(name: str, T: int, P: int | None = None) -> dict:
    """``{λ: P_λ}`` (dense T×T) for a named mask, from the closed-form eigenvectors.

    causal: ``P_{1/k} = v_k w_kᵀ``; block_causal: ``I_N ⊗ p_λ`` with ``p_λ`` the P×P causal
    projectors; block_bidirectional: ``P_1 = UB``, ``P_0 = I − UB``. Small ``T`` only (the causal
    projectors have entries up to ~4^T).
    """
    validation.choice("mask", name, NAMED_MASKS)
    T = validation.positive_int("T", T)
    if name == "causal":
        V, W = causal_eigenvectors(T)
        return {1.0 / (k + 1): np.outer(V[:, k], W[:, k]) for k in range(T)}
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = validation.divides(P, T)
    if name == "block_causal":
        V, W = causal_eigenvectors(P)
        return {1.0 / (k + 1): np.kron(np.eye(N), np.outer(V[:, k], W[:, k])) for k in range(P)}
    UB = np.kron(np.eye(N), np.full((P, P), 1.0 / P))
    out = {1.0: UB}
    if P > 1:
        out[0.0] = np.eye(T) - UB
    return out


def exact_kernel(name: str, T: int, P: int | None = None) -> np.ndarray:
    """``K_name`` as a T×T object array of exact :class:`fractions.Fraction` entries."""
    mask = make_mask(name, T, P)
    return np.array([[Fraction(int(m), int(row.sum())) for m in row] for row in mask], dtype=object)


def exact_spectral_projectors(name: str, T: int, P: int | None = None) -> dict:
    """``{λ: P_λ}`` with exact rational ``λ`` (:class:`fractions.Fraction`) and T×T object arrays of
    Fractions, from the same closed forms as :func:`spectral_projectors` (integer binomial
    eigenvectors; ``UB`` and ``I − UB``). No floating point is involved."""
    validation.choice("mask", name, NAMED_MASKS)
    T = validation.positive_int("T", T)

    def causal(n):
        V, W = _causal_vectors_int(n)
        return {
            Fraction(1, k + 1): np.array(
                [[Fraction(V[t][k] * W[s][k]) for s in range(n)] for t in range(n)], dtype=object
            )
            for k in range(n)
        }

    def block_diag(block, N):
        n = block.shape[0]
        out = np.full((N * n, N * n), Fraction(0), dtype=object)
        for b in range(N):
            out[b * n : (b + 1) * n, b * n : (b + 1) * n] = block
        return out

    if name == "causal":
        return causal(T)
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    N = validation.divides(P, T)
    if name == "block_causal":
        return {lam: block_diag(p, N) for lam, p in causal(P).items()}
    UB = block_diag(np.full((P, P), Fraction(1, P), dtype=object), N)
    out = {Fraction(1): UB}
    if P > 1:
        eye = np.array([[Fraction(int(i == j)) for j in range(T)] for i in range(T)], dtype=object)
        out[Fraction(0)] = eye - UB
    return out


def exact_projector_residuals(name: str, T: int, P: int | None = None) -> dict:
    """Exact (rational) residuals of the closed-form spectral projectors of ``K_name``:
    ``{"sum": max|Σ_λ P_λ − I|, "right": max_λ max|K P_λ − λ P_λ|, "left": max_λ max|P_λ K − λ P_λ|}``
    as Fractions (all zero iff the projectors are K's spectral projectors: with distinct ``λ``,
    ``P_μ K P_λ`` gives ``P_μ P_λ = 0`` for ``μ ≠ λ``, and ``Σ P = I`` then gives ``P_λ² = P_λ``).
    Cost O(n_λ T³) rational operations: small ``T`` only."""
    K = exact_kernel(name, T, P)
    projs = exact_spectral_projectors(name, T, P)
    eye = np.array([[Fraction(int(i == j)) for j in range(T)] for i in range(T)], dtype=object)
    total = sum(projs.values()) - eye
    right = max(max(abs(x) for x in (K.dot(Pl) - lam * Pl).ravel()) for lam, Pl in projs.items())
    left = max(max(abs(x) for x in (Pl.dot(K) - lam * Pl).ravel()) for lam, Pl in projs.items())
    return {"sum": max(abs(x) for x in total.ravel()), "right": right, "left": left}


def _causal_projector_norms(T: int) -> list[float]:
    """``‖P_{1/k}‖₂ = ‖v_k‖ ‖w_k‖`` (rank one, ``w_kᵀv_k = 1``), from exact integer sums."""
    out = []
    for k in range(T):
        vv = sum(comb(t, k) ** 2 for t in range(k, T))
        ww = comb(2 * k, k)  # Σ_s C(k, s)² = C(2k, k)
        out.append(float(np.sqrt(float(vv)) * np.sqrt(float(ww))))
    return out


def kernel_constant(name: str, T: int, P: int | None = None) -> float:
    """``c_K = Σ_{λ≠1} ‖P_λ‖₂`` for a named mask, from closed forms (no eigendecomposition).

    block_bidirectional: 1 (``P_0 = I − UB`` is an orthogonal projector; 0 when P = 1);
    block_causal: the causal constant of size P (``P_λ = I_N ⊗ p_λ``); causal: grows like ~4^T.
    """
    validation.choice("mask", name, NAMED_MASKS)
    T = validation.positive_int("T", T)
    if name == "causal":
        return float(sum(_causal_projector_norms(T)[1:]))
    if P is None:
        raise ValueError(f"mask {name!r} needs the block size P")
    validation.divides(P, T)
    if name == "block_causal":
        return float(sum(_causal_projector_norms(P)[1:]))
    return 1.0 if P > 1 else 0.0


def causal_eigenvector_condition(T: int) -> float:
    """2-norm condition number of the causal kernel's eigenvector matrix, columns scaled to unit
    length, computed from the exact closed forms: ``‖V̂‖₂ ‖V̂⁻¹‖₂`` with ``V̂⁻¹ = diag(‖v_k‖) Wᵀ``.

    No eigendecomposition and no inversion of an ill-conditioned matrix is involved.
    """
    V, W = causal_eigenvectors(T)
    norms = np.sqrt(np.array([float(sum(comb(t, k) ** 2 for t in range(k, T))) for k in range(T)]))
    Vh = V / norms
    Vinv = W.T * norms[:, None]
    return float(np.linalg.norm(Vh, 2) * np.linalg.norm(Vinv, 2))


def eigen_form(projectors: dict, dX0, D: dict) -> np.ndarray:
    """``Σ_λ P_λ δX_0 D_λ`` given ``{λ: P_λ}`` and ``{λ: D_λ}`` (same keys)."""
    dX0 = validation.finite_array("dX0", dX0, ndim=2)
    if set(projectors) != set(D):
        raise ValueError(
            f"projectors and D must have the same eigenvalues, got {sorted(projectors)}"
            f" and {sorted(D)}"
        )
    return sum(projectors[lam] @ dX0 @ D[lam] for lam in projectors)


def coarse_factorisation(name: str, T: int, P, dX0, D1) -> np.ndarray:
    """``Π δX_0 D_1 = R (Lᵀ δX_0) D_1``: pool by ``Lᵀ``, evolve by ``D_1``, broadcast by ``R``."""
    R, Lm = coarse_maps(name, T, P)
    dX0 = validation.finite_array("dX0", dX0, shape=(T, None))
    D1 = validation.finite_array("D1", D1, shape=(dX0.shape[1], dX0.shape[1]))
    return R @ ((Lm.T @ dX0) @ D1)


# --------------------------------------------------------------------------- coarse stack


def coarse_stack(model: Model, Y0, e=None) -> np.ndarray:
    """The coarse stack on block values ``Y`` (N×d): each layer is the single-token map on every
    block value plus the gated slow path on the block values,

    ::

        Y ← Y + h·[ f_l(Y) + g_l · shift( softmax_slowmask(β Ŷ Qs (Ŷ Ks)ᵀ) Ŷ Vs ) ],  Ŷ = n(Y),

    where ``shift`` moves row ``b−1`` to row ``b`` and puts zero in row 0 (``U_c`` at block level).
    Claim D5: for block-local fast masks and ``γ = 0`` (or block-constant ``E = U e``), the full
    stack on ``X_0 = U Y_0`` equals ``U`` times this. ``e`` (N×d) defaults to ``Y_0``.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a numerics.model.weights.Model, got {type(model).__name__}")
    cfg = model.config
    Y = validation.finite_array("Y0", Y0, shape=(cfg.N, cfg.d))
    e = Y.copy() if e is None else validation.finite_array("e", e, shape=(cfg.N, cfg.d))
    smask = (
        np.tril(np.ones((cfg.N, cfg.N), bool))
        if cfg.slow_mask == "blockcausal"
        else np.ones((cfg.N, cfg.N), bool)
    )
    for p in model.layers:
        F = _single_token_increment(cfg, p, Y, e)
        if cfg.slow and p.g != 0:
            Yh = _normed_rows(cfg, Y)
            S = cfg.score_scale * (Yh @ p.Qs) @ (Yh @ p.Ks).T
            S = np.where(smask, S, -np.inf)
            A = np.exp(S - S.max(axis=1, keepdims=True))
            A /= A.sum(axis=1, keepdims=True)
            out = A @ (Yh @ p.Vs)
            shifted = np.zeros_like(out)
            shifted[1:] = out[:-1]
            F = F + p.g * shifted
        Y = Y + cfg.h * F
    return Y
