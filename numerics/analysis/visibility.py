"""Visible and invisible directions of the persistent component (claim D6).

The *visibility map* of a stack at a reference input ``X_0`` sends a direction ``δθ`` (a parameter
tangent, or one of the position-dependent perturbations below) to the first-order change of the
persistent component ``Lᵀ X_L`` (``Π = R Lᵀ``, :func:`numerics.model.masks.coarse_maps`). It is computed
column by column with exact forward-mode JVPs (:mod:`numerics.model.autodiff`) along one cached
trajectory; :func:`forced_stack` is the nonlinear map used for finite perturbations and
finite-difference cross-checks.

**Position-dependent perturbations with forcing in ``E_d``.** ``E_d = range(I − Π) ⊗ R^d`` is the
decaying bundle, equivalently the kernel of ``Lᵀ`` (``Lᵀ(I − Π) = 0``). We formalise "a
perturbation whose forcing lies in ``E_d``" in three ways, each a block of the visibility map:

* ``"X0_Ed"``: a perturbation of the input (e.g. of positional embeddings), ``δX_0 = (I − Π) Z``;
* ``"E_Ed"``: a perturbation of the injection target (``γ > 0``), ``δE = (I − Π) Z``: every layer is
  forced by ``h·γ·δE``;
* ``"F_Ed"``: an additive forcing of every layer, ``X_{l+1} = Φ_l(X_l) + h·F_l`` with
  ``F_l = (I − Π) Z_l`` (one ``Z_l`` per layer).

For contrast ``"X0_Ep"`` perturbs the input inside the persistent bundle, ``δX_0 = R δY``.
Along a token-homogeneous trajectory (``g = 0``) the linearised layer is ``δX ↦ δX N + K δX M``
(claim D4) and ``Lᵀ K = Lᵀ``, so ``Lᵀ δX_{l+1} = Lᵀ δX_l (N + M) + h Lᵀ(forcing)``: forcing in
``ker Lᵀ`` never reaches the persistent component at first order.

The parameter blocks are the weight names of :data:`numerics.model.weights.WEIGHT_NAMES` and the gate
``"g"``; each block collects the columns of every layer slot (for a tied model one column per
shared entry, moved in every slot).

A custom (boolean) mask is accepted when every block's eigenvalue 1 is simple: block-local, ``R = U``
and ``L`` its blocks' stationary weightings; otherwise the whole mask is one block (``R = 1``, as
for the global causal mask).

Caveats. The map is dense (``k·d`` rows, one JVP per column): for small models only. Ranks are
numerical: singular values above ``rtol`` times the largest singular value of the whole map.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import lapack, validation
from fastslow.numerics.model import kernels, tangents
from fastslow.numerics.model.layer import check_model, check_state
from fastslow.numerics.model.masks import NAMED_MASKS, coarse_maps, is_block_local
from fastslow.numerics.model.weights import WEIGHT_NAMES, LayerParams, Model, ModelConfig

PARAMETER_BLOCKS = WEIGHT_NAMES + ("g",)
"""Parameter blocks of the visibility map (every weight matrix and the gate)."""

POSITION_BLOCKS = ("X0_Ed", "X0_Ep", "E_Ed", "F_Ed")
"""Position-dependent perturbation blocks (see the module docstring)."""

BLOCKS = PARAMETER_BLOCKS + POSITION_BLOCKS

__all__ = [
    "PARAMETER_BLOCKS",
    "POSITION_BLOCKS",
    "BLOCKS",
    "persistent_component",
    "decaying_projector",
    "decaying_basis",
    "persistent_basis",
    "forced_stack",
    "forced_tangent",
    "visibility_map",
    "block_spectra",
    "numerical_rank",
    "kernel_jvp",
]


# --------------------------------------------------------------------------- bundles


def _named(config: ModelConfig) -> str:
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    if config.mask_name not in NAMED_MASKS:
        raise ValueError(
            f"the persistent component needs a named mask {NAMED_MASKS}, got a custom mask"
        )
    return config.mask_name


def _maps(config: ModelConfig):
    """``(R, L)`` of the config's mask: closed forms for a named mask; for a custom mask the
    stationary weighting of each block of ``P`` tokens when it is block-local, else of the whole
    mask as one block (``R = 1``); ``ValueError`` if a block's eigenvalue 1 is not simple
    (:func:`numerics.model.masks.coarse_maps`)."""
    if isinstance(config, ModelConfig) and config.mask_name is None:
        mask = config.mask_array
        P = config.P if is_block_local(mask, config.P) else config.T
        return coarse_maps(mask, config.T, P)
    return coarse_maps(_named(config), config.T, config.P)


def persistent_component(config: ModelConfig, X) -> np.ndarray:
    """``Y = Lᵀ X`` (k×d): token 0 (causal), first tokens (block_causal), block means
    (block_bidirectional)."""
    _, L = _maps(config)
    return L.T @ check_state(config, X)


def decaying_projector(config: ModelConfig) -> np.ndarray:
    """Dense ``I − Π`` (T×T), ``Π = R Lᵀ`` the eigenvalue-1 spectral projector of ``K_mask``."""
    R, L = _maps(config)
    return np.eye(config.T) - R @ L.T


def decaying_basis(config: ModelConfig) -> np.ndarray:
    """An orthonormal basis of ``range(I − Π) = ker Lᵀ`` (T × (T − k)).

    Any orthonormal basis is valid (LAPACK's choice): use it only through basis-free quantities.
    The visibility map's ``E_d`` blocks are right-multiplied by ``Q ⊗ I_d`` (``Q`` orthogonal) when
    the basis changes, so their singular values and ranks do not depend on it.
    """
    _, L = _maps(config)
    return lapack.null_space(L.T)


def persistent_basis(config: ModelConfig) -> np.ndarray:
    """``R`` (T×k): the persistent (block-constant) directions; ``δX_0 = R δY``."""
    return _maps(config)[0]


# --------------------------------------------------------------------------- forced stack


def _check_forcing(model: Model, F) -> np.ndarray | None:
    if F is None:
        return None
    cfg = model.config
    return validation.finite_array("F", F, shape=(model.L, cfg.T, cfg.d))


def _embeddings(cfg: ModelConfig, E, X0):
    if E is None:
        return X0.copy() if cfg.gamma else None
    return check_state(cfg, E, "E")


def forced_stack(model: Model, X0, E=None, F=None) -> np.ndarray:
    """``X_L`` of ``X_{l+1} = Φ_l(X_l) + h·F_l`` (``F`` of shape (L, T, d); ``None``: no forcing).

    ``E`` defaults to ``X_0`` as in :func:`numerics.model.layer.stack`; without forcing the result is
    bit-identical to the stack.
    """
    model = check_model(model)
    cfg = model.config
    X = check_state(cfg, X0, "X0")
    E = _embeddings(cfg, E, X)
    F = _check_forcing(model, F)
    for l, p in enumerate(model.layers):
        X = kernels.layer(cfg, p, X, E)
        if F is not None:
            X = X + cfg.h * F[l]
    if not np.all(np.isfinite(X)):
        raise FloatingPointError("the forced stack produced non-finite values")
    return X


def _caches(model: Model, X0: np.ndarray, E) -> list:
    caches, X = [], X0
    for p in model.layers:
        c = tangents.layer_fwd(model.config, p, X, E)
        caches.append(c)
        X = c["Y"]
    return caches


def _tangent(model: Model, caches: list, dX0, dparams, dE, dF) -> np.ndarray:
    cfg = model.config
    dX = dX0
    for l, (p, c) in enumerate(zip(model.layers, caches)):
        dp = None if dparams is None else dparams[l]
        if dX is not None or dp is not None:
            dX = tangents.layer_jvp_cached(cfg, p, c, dX, dp)
        extra = None
        if dE is not None and cfg.gamma:
            extra = cfg.h * cfg.gamma * dE
        if dF is not None:
            extra = cfg.h * dF[l] if extra is None else extra + cfg.h * dF[l]
        if extra is not None:
            dX = extra if dX is None else dX + extra
    return np.zeros((cfg.T, cfg.d)) if dX is None else dX


def forced_tangent(
    model: Model, X0, *, E=None, dX0=None, dparams=None, dE=None, dF=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(X_L, δX_L)``: the forced stack and its exact first-order response (forward mode).

    ``dX0`` (T×d), ``dparams`` (``L`` :class:`LayerParams` tangents, entries may be ``None``),
    ``dE`` (T×d; acts only when ``γ > 0``) and ``dF`` (L×T×d additive forcing) may each be ``None``.
    """
    model = check_model(model)
    cfg = model.config
    X0 = check_state(cfg, X0, "X0")
    E = _embeddings(cfg, E, X0)
    dX0 = None if dX0 is None else check_state(cfg, dX0, "dX0")
    dE = None if dE is None else check_state(cfg, dE, "dE")
    dF = _check_forcing(model, dF)
    if dparams is not None:
        if len(dparams) != model.L:
            raise ValueError(f"dparams must hold {model.L} tangents, got {len(dparams)}")
        for dp in dparams:
            if dp is not None and not isinstance(dp, LayerParams):
                raise TypeError(
                    f"dparams entries must be LayerParams or None, got {type(dp).__name__}"
                )
    caches = _caches(model, X0, E)
    return caches[-1]["Y"], _tangent(model, caches, dX0, dparams, dE, dF)


# --------------------------------------------------------------------------- the visibility map


def _unit_tangent(zero: LayerParams, name: str, idx) -> LayerParams:
    t = zero.zeros_like()
    if name == "g":
        t.g = 1.0
    else:
        getattr(t, name)[idx] = 1.0
    return t


def _parameter_columns(model: Model, name: str):
    """Yield ``dparams`` lists (one per layer slot) for every basis direction of block ``name``."""
    zero = model.layers[0]
    shape = () if name == "g" else getattr(zero, name).shape
    entries = [()] if name == "g" else list(np.ndindex(*shape))
    slots = [None] if model.tied else range(model.L)
    for slot in slots:
        for idx in entries:
            t = _unit_tangent(zero, name, idx)
            if slot is None:
                yield [t] * model.L
            else:
                yield [t if l == slot else None for l in range(model.L)]


def visibility_map(
    model: Model, X0, E=None, *, blocks=BLOCKS, output: str = "persistent", seed=0
) -> dict:
    """The columns of ``δθ ↦ δ(Lᵀ X_L)`` (``output="persistent"``) or ``δθ ↦ δX_L``
    (``output="state"``), grouped by block.

    Returns ``{block: matrix}``, each matrix of shape ``(k·d, n_block)`` (or ``(T·d, n_block)``).
    Parameter blocks use the unit basis of each weight entry and the gate; position blocks use an
    orthonormal basis of the bundle (``X0_Ed``, ``X0_Ep``, ``E_Ed``) tensored with ``R^d``, and for
    ``F_Ed`` the same basis in every layer separately. ``E_Ed`` is empty when ``γ = 0``.
    ``seed`` is unused (the bases are deterministic); it is accepted for a uniform signature.
    """
    model = check_model(model)
    cfg = model.config
    X0 = check_state(cfg, X0, "X0")
    E = _embeddings(cfg, E, X0)
    if output not in ("persistent", "state"):
        raise ValueError(f"output must be 'persistent' or 'state', got {output!r}")
    for b in blocks:
        validation.choice("block", b, BLOCKS)
    R, L = _maps(cfg)
    caches = _caches(model, X0, E)
    T, d = cfg.T, cfg.d

    def read(dX):
        return (L.T @ dX).ravel() if output == "persistent" else dX.ravel()

    def bundle_states(basis):
        for j in range(basis.shape[1]):
            for i in range(d):
                Z = np.zeros((T, d))
                Z[:, i] = basis[:, j]
                yield Z

    out = {}
    Ed = decaying_basis(cfg)
    Ep = R / np.linalg.norm(R, axis=0)
    for b in blocks:
        cols = []
        if b in PARAMETER_BLOCKS:
            for dps in _parameter_columns(model, b):
                cols.append(read(_tangent(model, caches, None, dps, None, None)))
        elif b == "X0_Ed":
            cols = [read(_tangent(model, caches, Z, None, None, None)) for Z in bundle_states(Ed)]
        elif b == "X0_Ep":
            cols = [read(_tangent(model, caches, Z, None, None, None)) for Z in bundle_states(Ep)]
        elif b == "E_Ed":
            if cfg.gamma:
                cols = [
                    read(_tangent(model, caches, None, None, Z, None)) for Z in bundle_states(Ed)
                ]
        else:  # F_Ed
            for l in range(model.L):
                for Z in bundle_states(Ed):
                    dF = np.zeros((model.L, T, d))
                    dF[l] = Z
                    cols.append(read(_tangent(model, caches, None, None, None, dF)))
        rows = L.shape[1] * d if output == "persistent" else T * d
        out[b] = np.array(cols).T if cols else np.zeros((rows, 0))
    return out


def block_spectra(vmap: dict) -> dict:
    """Singular values of every block of a visibility map (descending; empty blocks give [])."""
    return {b: (lapack.svdvals(M) if M.size else np.zeros(0)) for b, M in vmap.items()}


def numerical_rank(s, scale: float, rtol: float = 1e-9) -> int:
    """Number of singular values ``s`` above ``rtol·scale`` (``scale``: the whole map's largest)."""
    s = np.asarray(s, dtype=float)
    return int(np.count_nonzero(s > rtol * scale))


# --------------------------------------------------------------------------- the kernel's change


def kernel_jvp(config: ModelConfig, params: LayerParams, X, dX=None, dparams=None):
    """``(A, δA)``: the fast attention matrix ``A(X)`` and its first-order change along ``dX`` and
    the ``Q, K`` entries of ``dparams`` (other entries do not move the kernel).

    ``δA = A ⊙ (δS − rowsum(A ⊙ δS))`` with ``δS = β(δ(X_n Q) (X_n K)ᵀ + X_n Q δ(X_n K)ᵀ)``: every
    row of ``δA`` sums to zero, so ``δA·1 = 0`` and ``δA`` annihilates every token-homogeneous
    matrix (``δA·1 xᵀ = 0``).
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
    if not isinstance(params, LayerParams):
        raise TypeError(f"params must be LayerParams, got {type(params).__name__}")
    params.shapes_ok(config.d, config.m)
    X = check_state(config, X)
    dX = None if dX is None else check_state(config, dX, "dX")
    if dparams is not None and not isinstance(dparams, LayerParams):
        raise TypeError(f"dparams must be LayerParams or None, got {type(dparams).__name__}")
    beta = config.score_scale
    Xn, r = tangents.norm_fwd(config, X)
    Qx, Kx = Xn @ params.Q, Xn @ params.K
    A = kernels.masked_softmax(beta * Qx @ Kx.T, config.mask_array)
    dQx = np.zeros_like(Qx)
    dKx = np.zeros_like(Kx)
    if dX is not None:
        dXn = tangents.norm_lin(Xn, r, dX)
        dQx += dXn @ params.Q
        dKx += dXn @ params.K
    if dparams is not None:
        dQx += Xn @ dparams.Q
        dKx += Xn @ dparams.K
    dS = beta * (dQx @ Kx.T + Qx @ dKx.T)
    return A, tangents.softmax_lin(A, dS)
