"""The linearised layer at a token-homogeneous state, derived symbolically (claims D3, D4).

**Statement.** Let ``Φ(X) = X + h[ softmax_mask(β n(X)Q (n(X)K)ᵀ) n(X)V + σ(n(X)W1)W2 ] + hγ(E − X)``
(fast layer, gate 0) with ``n`` the row-wise RMS norm ``n(x) = x/√(mean(x²) + ε)`` and
``E = 1eᵀ`` homogeneous. At ``X = 1 xᵀ`` the Jacobian of ``Φ`` is, in the row-major vectorisation
``vec(X)[t·d + i] = X[t, i]``,

::

    ∂vec Φ / ∂vec X = I_T ⊗ Nᵀ + K_mask ⊗ Mᵀ      (i.e. δX ↦ δX N + K δX M),
    N = I + h( J_n W1 diag(σ'(z)) W2 − γ I ),   M = h J_n V,   z = n(x) W1,
    J_n = ∂n/∂x = ( I − x xᵀ/(d r²) ) / r,       r = √(mean(x²) + ε),

for every mask, every ``Q, K`` and every temperature ``β``: the softmax-derivative term multiplies
``n(X)V``, whose rows are all equal, and each row of the softmax derivative sums to zero.

This module derives ``J_n``, ``N`` and ``M`` from the single-token map by differentiation, checks the
closed form of ``J_n``, and proves the Kronecker identity for small symbolic ``T`` and ``d`` by
building the whole T×d layer with fully symbolic weights, differentiating, substituting the
homogeneous state and simplifying the difference to the zero matrix.

``σ`` is a named activation (tanh, relu = ``Max(z, 0)``, gelu (tanh approximation), identity) or
a user SymPy expression (:func:`activation`). The statement is first order in ``σ``: for relu it
holds wherever no pre-activation is 0 (``σ'`` is ``Heaviside``).

Nothing here imports :mod:`numerics` (independent oracle); :func:`factors_function` is the numeric
function generated with ``lambdify(..., cse=True)``. A user activation is a SymPy expression here
and a NumPy pair in numerics; a check that needs both passes both.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import sympy as sp

__all__ = [
    "SIGMA_NAMES",
    "activation",
    "activation_derivative",
    "rms_norm",
    "norm_jacobian_closed_form",
    "factor_matrices",
    "factors_function",
    "homogeneous_jacobian_residual",
    "mask_matrix",
]


def rms_norm(x: sp.Matrix, eps) -> sp.Matrix:
    """``n(x) = x / √(mean(x²) + ε)`` for a row or column vector ``x``."""
    d = len(x)
    return x / sp.sqrt(sum(xi**2 for xi in x) / d + eps)


def norm_jacobian_closed_form(x: sp.Matrix, eps) -> sp.Matrix:
    """``J_n = (I − x xᵀ/(d r²))/r``, ``r = √(mean(x²) + ε)`` (x a column vector)."""
    d = len(x)
    r = sp.sqrt(sum(xi**2 for xi in x) / d + eps)
    return (sp.eye(d) - x * x.T / (d * r**2)) / r


SIGMA_NAMES = ("tanh", "relu", "gelu", "identity")
"""The named activations; ``numerics`` has the same names (its NumPy and Numba counterparts)."""

GELU_K = sp.Rational(44715, 1000000)
"""The cubic coefficient 0.044715 of the tanh approximation of GELU, exact."""


def _gelu(z):
    """The tanh approximation of GELU, ``½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))``."""
    return z / 2 * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (z + GELU_K * z**3)))


_NAMED = {
    "tanh": sp.tanh,
    "relu": lambda z: sp.Max(z, 0),
    "gelu": _gelu,
    "identity": lambda z: z,
}


def _sigma(sigma):
    """The function ``expr ↦ σ(expr)`` that builds the activation of ``sigma`` on SymPy
    expressions (see :func:`activation`)."""
    if isinstance(sigma, str):
        if sigma not in _NAMED:
            raise ValueError(
                f"unknown sigma {sigma!r}; expected one of {list(SIGMA_NAMES)}, a sympy.Lambda of "
                "one variable or a SymPy expression in one symbol"
            )
        return _NAMED[sigma]
    lam = _user_lambda(sigma)
    return lambda z: lam(z)


def _user_lambda(sigma) -> sp.Lambda:
    """A user activation as a one-variable :class:`sympy.Lambda`."""
    if isinstance(sigma, sp.Lambda):
        if len(sigma.variables) != 1:
            raise ValueError(f"a sigma Lambda must take one variable, got {sigma}")
        return sigma
    if isinstance(sigma, sp.Expr):
        free = sorted(sigma.free_symbols, key=str)
        if len(free) != 1:
            raise ValueError(
                f"a sigma expression must contain exactly one symbol (the pre-activation), got "
                f"{sigma} with symbols {free}"
            )
        return sp.Lambda(free[0], sigma)
    raise TypeError(
        f"sigma must be one of {list(SIGMA_NAMES)}, a sympy.Lambda or a SymPy expression in one "
        f"symbol, got {sigma!r} of type {type(sigma).__name__} (a numerics Activation is the "
        "NumPy counterpart: pass its SymPy expression here)"
    )


def activation(sigma) -> sp.Lambda:
    """``σ`` as a one-variable :class:`sympy.Lambda`: a name of :data:`SIGMA_NAMES`, a
    ``sympy.Lambda`` of one variable, or an expression in exactly one symbol (that symbol is the
    pre-activation).

    relu is ``Max(z, 0)``; its derivative (:func:`activation_derivative`) is SymPy's
    ``Heaviside(z)``, with ``Heaviside(0) = 1/2`` (numerics uses ``σ'(0) = 0``: compare the two away
    from 0). gelu is the tanh approximation ``½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))`` with the
    exact rational 0.044715. relu is not differentiable at 0, so a derivation that needs second
    derivatives of ``σ`` does not apply to it there.
    """
    z = sp.Symbol("z", real=True)
    return sp.Lambda(z, _sigma(sigma)(z))


def activation_derivative(sigma) -> sp.Lambda:
    """``σ'`` as a one-variable :class:`sympy.Lambda` (differentiated by SymPy; see
    :func:`activation` for ``sigma`` and relu's value at 0)."""
    lam = activation(sigma)
    z = lam.variables[0]
    return sp.Lambda(z, sp.diff(lam.expr, z))


@cache
def factor_matrices(d: int, m: int | None = None, norm: bool = True, sigma="tanh"):
    """Symbols and the d×d matrices ``(N, M)`` of the linearised homogeneous layer.

    ``sigma`` is a name of :data:`SIGMA_NAMES`, a ``sympy.Lambda`` of one variable or an
    expression in one symbol (:func:`activation`).

    Returns ``(symbols, N, M, J_n)`` with ``symbols = dict(x, V, W1, W2, h, gamma, eps)``. ``N`` and
    ``M`` are obtained by differentiating the single-token increment
    ``f(x) = n(x)V + σ(n(x)W1)W2 − γx`` split into its value part (multiplied by ``K``) and the rest
    (multiplied by ``I``); ``J_n`` is the Jacobian of ``n`` computed by ``sympy`` (identity without
    the norm). Row convention: ``δ(row) = δx · J``.
    """
    m = d if m is None else m
    x = sp.Matrix(sp.symbols(f"x0:{d}", real=True))
    V = sp.Matrix(d, d, sp.symbols(f"V0:{d * d}", real=True))
    W1 = sp.Matrix(d, m, sp.symbols(f"Wa0:{d * m}", real=True))
    W2 = sp.Matrix(m, d, sp.symbols(f"Wb0:{m * d}", real=True))
    h, gamma, eps = sp.symbols("h gamma eps", positive=True)
    act = _sigma(sigma)
    xn = rms_norm(x, eps) if norm else x  # column vector
    value = (xn.T * V).T  # n(x)V as a column
    rest = ((xn.T * W1).applyfunc(act) * W2).T - gamma * x  # σ(n(x)W1)W2 − γx
    # row convention: δ(out_row) = δx_row · (∂out/∂x)ᵀ
    Jn = xn.jacobian(x).T
    M = h * value.jacobian(x).T
    N = sp.eye(d) + h * rest.jacobian(x).T
    syms = {"x": x, "V": V, "W1": W1, "W2": W2, "h": h, "gamma": gamma, "eps": eps}
    return syms, N, M, Jn


@cache
def _factors_lambda(d: int, m: int, norm: bool, sigma):
    syms, N, M, _ = factor_matrices(d, m, norm, sigma)
    args = [
        list(syms["x"]),
        list(syms["V"]),
        list(syms["W1"]),
        list(syms["W2"]),
        syms["h"],
        syms["gamma"],
        syms["eps"],
    ]
    return sp.lambdify(args, [N, M], modules="numpy", cse=True)


def factors_function(d: int, m: int | None = None, norm: bool = True, sigma="tanh"):
    """A numeric ``f(x, V, W1, W2, h, gamma, eps) -> (N, M)`` (float64 arrays) generated with
    ``lambdify(..., cse=True)`` from :func:`factor_matrices` (``sigma`` as there; relu's
    ``Heaviside(0)`` is 1/2)."""
    m = d if m is None else m
    fn = _factors_lambda(d, m, bool(norm), sigma)

    def factors(x, V, W1, W2, h, gamma, eps):
        N, M = fn(
            list(np.ravel(x)),
            list(np.ravel(V)),
            list(np.ravel(W1)),
            list(np.ravel(W2)),
            h,
            gamma,
            eps,
        )
        return np.array(N, dtype=np.float64), np.array(M, dtype=np.float64)

    return factors


def mask_matrix(name: str, T: int, P: int | None = None) -> list[list[bool]]:
    """The named boolean mask as nested lists (``causal``, ``block_causal``, ``block_bidirectional``,
    or ``full``)."""
    P = T if P is None else P

    def allowed(t, s):
        same = t // P == s // P
        return {
            "causal": s <= t,
            "block_causal": same and s <= t,
            "block_bidirectional": same,
            "full": True,
        }[name]

    return [[allowed(t, s) for s in range(T)] for t in range(T)]


def homogeneous_jacobian_residual(
    T: int,
    d: int,
    mask: str = "causal",
    P: int | None = None,
    norm: bool = True,
    sigma="tanh",
) -> sp.Matrix:
    """``∂vec Φ/∂vec X |_{X = 1xᵀ} − (I_T ⊗ Nᵀ + K ⊗ Mᵀ)``, simplified (Td×Td; zero if the
    identity holds).

    Fully symbolic: the state ``X`` (T×d), ``Q, K, V, W1, W2`` (d×d), the temperature ``β``, ``h``,
    ``γ`` and ``ε``; the injection target is ``E = 1eᵀ`` with symbolic ``e``. After substitution,
    ``ε`` is replaced by ``ρ² − mean(x²)`` (ρ > 0) so that the norm's square roots become ``ρ``.
    Feasible for ``T·d ≲ 8``.
    """
    syms, N, M, _ = factor_matrices(d, d, norm, sigma)
    x, V, W1, W2 = syms["x"], syms["V"], syms["W1"], syms["W2"]
    h, gamma, eps = syms["h"], syms["gamma"], syms["eps"]
    Q = sp.Matrix(d, d, sp.symbols(f"Q0:{d * d}", real=True))
    Kw = sp.Matrix(d, d, sp.symbols(f"K0:{d * d}", real=True))
    beta = sp.Symbol("beta", positive=True)
    e = sp.Matrix(sp.symbols(f"e0:{d}", real=True))
    X = sp.Matrix(T, d, sp.symbols(f"X0:{T * d}", real=True))
    act = _sigma(sigma)
    # chain rule by computation: Φ(U, X) with U = n(X) a matrix of independent symbols, then
    # ∂Φ/∂X = ∂Φ/∂X|_U + ∂Φ/∂U · ∂U/∂X (∂U/∂X is block diagonal: one d×d norm Jacobian per row)
    U = sp.Matrix(T, d, sp.symbols(f"u0:{T * d}", real=True))
    S = beta * (U * Q) * (U * Kw).T
    mk = mask_matrix(mask, T, P)
    A = sp.zeros(T, T)
    for t in range(T):
        ws = [sp.exp(S[t, s]) if mk[t][s] else 0 for s in range(T)]
        tot = sum(ws)
        for s in range(T):
            A[t, s] = ws[s] / tot
    E = sp.Matrix.vstack(*[e.T for _ in range(T)])
    Phi = X + h * (A * U * V + (U * W1).applyfunc(act) * W2 + gamma * (E - X))
    vec = lambda Z: sp.Matrix([Z[t, i] for t in range(T) for i in range(d)])
    vecX, vecU = list(vec(X)), list(vec(U))
    rowmap = [rms_norm(X[t, :], eps) if norm else X[t, :] for t in range(T)]
    # evaluate at X = 1xᵀ and U = 1uᵀ with a free symbol u: the scores in each row coincide, so
    # the exponentials cancel structurally (xreplace rebuilds exp(a)/(2 exp(a)) as 1/2); then u = n(x)
    u = sp.Matrix(sp.symbols(f"w0:{d}", real=True))
    at = {X[t, i]: x[i] for t in range(T) for i in range(d)}
    at.update({U[t, i]: u[i] for t in range(T) for i in range(d)})
    dU = sp.diag(
        *[sp.Matrix(r).jacobian([X[t, i] for i in range(d)]) for t, r in enumerate(rowmap)]
    )
    JX = vec(Phi).jacobian(vecX).xreplace(at)
    JU = vec(Phi).jacobian(vecU).xreplace(at)
    ustar = rms_norm(x, eps) if norm else x
    J = JX + (JU * dU.xreplace(at)).xreplace({u[i]: ustar[i] for i in range(d)})
    Kmask = sp.Matrix(T, T, lambda t, s: sp.Rational(1, sum(mk[t])) if mk[t][s] else 0)
    pred = sp.kronecker_product(sp.eye(T), N.T) + sp.kronecker_product(Kmask, M.T)
    rho = sp.Symbol("rho", positive=True)
    to_rho = {eps: rho**2 - sum(xi**2 for xi in x) / d}
    R = (J - pred).subs(to_rho) if norm else (J - pred)
    return R.applyfunc(_zero_or_simplified)


def _zero_or_simplified(expr):
    """Cheap normal form first (``cancel``: a rational function in the symbols once ``ε = ρ² −
    mean(x²)``); ``simplify`` only if that is not already zero."""
    e = sp.cancel(expr)
    return e if e == 0 else sp.simplify(e)
