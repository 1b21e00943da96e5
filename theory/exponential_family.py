"""Fisher–Neyman factorisation of a block's joint density for the emission families of D8.

Statement. Let ``x_1 … x_P`` be i.i.d. given a parameter ``θ`` with density (or pmf)
``p(x | θ) = h₀(x)·exp(η(θ)·x − A(η(θ)))`` — an exponential family with sufficient statistic
``T(x) = x``. Then the joint density factorises as

    p(x_1..x_P | θ) = h(x) · g(S, θ),   h(x) = Π h₀(x_i),   g(S, θ) = exp(η(θ)·S − P·A(η(θ))),

with ``S = Σ x_i``: the block sum (equivalently the block mean) is sufficient for ``θ``, and for two
samples ``x, x'`` with the same sum the likelihood ratio ``p(x | θ)/p(x' | θ) = h(x)/h(x')`` does
not depend on ``θ``. This module derives it symbolically for

* ``gaussian``: ``N(m, σ²)`` with known ``σ`` (parameter ``m``; ``η = m/σ²``),
* ``poisson``: ``Poisson(λ)`` (``η = log λ``),
* ``bernoulli``: ``Bernoulli(p)`` (``η = log(p/(1−p))``),

and shows that the conclusion fails for the control ``gaussian_scale`` (``N(m, s²)`` with the
*scale* ``s`` as the parameter: the sufficient statistic is ``(Σx, Σx²)``, the ratio depends on
``s``). The check is by residuals (``simplify(a − b) == 0``), never by comparing expression strings.

Caveat: the factorisation is shown for a concrete block size ``P`` (symbols ``x_1..x_P``); the
sum factor ``g`` is also given for a symbolic count ``k`` (:func:`sum_factor`) and turned into a
numeric function with ``lambdify(..., cse=True)``.

``theory`` never imports ``numerics``.
"""

from __future__ import annotations

from functools import cache

import sympy as sp

__all__ = [
    "FAMILIES",
    "CONTROL_FAMILIES",
    "token_log_density",
    "natural_form",
    "factorisation",
    "likelihood_ratio",
    "sum_factor",
]

FAMILIES = ("gaussian", "poisson", "bernoulli")
CONTROL_FAMILIES = ("gaussian_scale",)

_SIGMA = sp.Symbol("sigma", positive=True)  # known noise scale of the Gaussian family
_M = sp.Symbol("m", real=True)  # known mean of the latent-scale control


def _parameter(family: str) -> sp.Symbol:
    return {
        "gaussian": sp.Symbol("m", real=True),
        "poisson": sp.Symbol("lambda", positive=True),
        "bernoulli": sp.Symbol("p", positive=True),
        "gaussian_scale": sp.Symbol("s", positive=True),
    }[family]


def _token_symbol(family: str, name: str) -> sp.Symbol:
    if family == "poisson":
        return sp.Symbol(name, integer=True, nonnegative=True)
    if family == "bernoulli":
        return sp.Symbol(name, integer=True, nonnegative=True)
    return sp.Symbol(name, real=True)


def _check_family(family: str, allow_controls: bool = True) -> str:
    names = FAMILIES + (CONTROL_FAMILIES if allow_controls else ())
    if family not in names:
        raise ValueError(f"unknown family {family!r}; expected one of {list(names)}")
    return family


def token_log_density(family: str, x: sp.Expr) -> tuple[sp.Expr, sp.Symbol]:
    """``(log p(x | θ), θ)`` for one token ``x``."""
    _check_family(family)
    th = _parameter(family)
    if family == "gaussian":
        return -((x - th) ** 2) / (2 * _SIGMA**2) - sp.log(2 * sp.pi * _SIGMA**2) / 2, th
    if family == "poisson":
        return x * sp.log(th) - th - sp.loggamma(x + 1), th
    if family == "bernoulli":
        return x * sp.log(th) + (1 - x) * sp.log(1 - th), th
    return -((x - _M) ** 2) / (2 * th**2) - sp.log(2 * sp.pi * th**2) / 2, th


def natural_form(family: str) -> dict:
    """Natural parameter ``η(θ)``, log-partition ``A`` and base measure ``log h₀(x)`` with
    ``log p(x | θ) = η·x − A + log h₀(x)``; ``residual`` is the simplified difference (0)."""
    _check_family(family, allow_controls=False)
    x = _token_symbol(family, "x")
    logp, th = token_log_density(family, x)
    if family == "gaussian":
        eta, A, logh0 = (
            th / _SIGMA**2,
            th**2 / (2 * _SIGMA**2),
            -(x**2) / (2 * _SIGMA**2) - sp.log(2 * sp.pi * _SIGMA**2) / 2,
        )
    elif family == "poisson":
        eta, A, logh0 = sp.log(th), th, -sp.loggamma(x + 1)
    else:
        eta, A, logh0 = sp.log(th / (1 - th)), -sp.log(1 - th), sp.Integer(0)
    residual = sp.simplify(sp.expand_log(logp - (eta * x - A + logh0), force=True))
    return {"x": x, "theta": th, "eta": eta, "A": A, "log_h0": logh0, "residual": residual}


@cache
def factorisation(family: str, P: int = 4) -> dict:
    """Factorise the joint log density of a block of ``P`` tokens as ``log h(x) + log g(S, θ)``.

    Returns the token symbols ``xs``, the parameter ``theta``, ``log_joint``, ``log_h`` (no ``θ``),
    ``log_g`` (a function of ``S`` and ``θ`` only, with ``S`` the symbol ``S``), and ``residual`` =
    ``log_joint − log_h − log_g(S = Σx)``, which simplifies to 0 for the exponential families.
    For the control ``gaussian_scale`` there is no such factorisation through ``S`` alone: the
    entry ``log_g`` is then ``None`` and ``residual`` is ``None``.
    """
    _check_family(family)
    if isinstance(P, bool) or not isinstance(P, int) or P < 1:
        raise ValueError(f"P must be a positive integer, got {P!r}")
    xs = [_token_symbol(family, f"x{i + 1}") for i in range(P)]
    S = sp.Symbol("S", real=True)
    parts = [token_log_density(family, xi) for xi in xs]
    th = parts[0][1]
    log_joint = sp.Add(*[p for p, _ in parts])
    if family == "gaussian_scale":
        return {
            "xs": xs,
            "theta": th,
            "S": S,
            "log_joint": log_joint,
            "log_h": None,
            "log_g": None,
            "residual": None,
        }
    nf = natural_form(family)
    log_h = sp.Add(*[nf["log_h0"].subs(nf["x"], xi) for xi in xs])
    log_g = nf["eta"] * S - P * nf["A"]
    residual = sp.simplify(
        sp.expand_log(log_joint - log_h - log_g.subs(S, sp.Add(*xs)), force=True)
    )
    return {
        "xs": xs,
        "theta": th,
        "S": S,
        "log_joint": log_joint,
        "log_h": log_h,
        "log_g": log_g,
        "residual": residual,
    }


@cache
def likelihood_ratio(family: str, P: int = 4) -> dict:
    """Log likelihood ratio ``log p(x | θ) − log p(x' | θ)`` for two blocks with the same sum.

    ``x'_P`` is eliminated by ``x'_P = Σ x − Σ_{i<P} x'_i``. Returns ``log_ratio`` and its derivative
    ``d_dtheta`` (simplified): 0 for the exponential families (the ratio does not depend on ``θ``),
    non-zero for ``gaussian_scale``.
    """
    _check_family(family)
    f = factorisation(family, P)
    xs, th = f["xs"], f["theta"]
    ys = [_token_symbol(family, f"y{i + 1}") for i in range(P)]
    y_last = sp.Add(*xs) - sp.Add(*ys[:-1])
    log_y = (
        sp.Add(*[token_log_density(family, yi)[0] for yi in ys[:-1]])
        + token_log_density(family, y_last)[0]
    )
    log_ratio = f["log_joint"] - log_y
    d = sp.simplify(sp.expand_log(sp.diff(log_ratio, th), force=True))
    return {"xs": xs, "ys": ys[:-1], "theta": th, "log_ratio": log_ratio, "d_dtheta": d}


@cache
def sum_factor(family: str) -> dict:
    """The sufficient-statistic factor for a symbolic count ``k``: ``log g_k(S, θ) = η(θ)S − kA``.

    Returns the expression and ``numeric(S, k, theta, sigma)`` (``lambdify(..., cse=True)``;
    ``sigma`` is used by the Gaussian family only). Up to a term free of ``θ``, it is the log
    likelihood of ``θ`` given the sum ``S`` of ``k`` tokens.
    """
    _check_family(family, allow_controls=False)
    nf = natural_form(family)
    S, k = sp.Symbol("S", real=True), sp.Symbol("k", nonnegative=True)
    expr = nf["eta"] * S - k * nf["A"]
    fn = sp.lambdify((S, k, nf["theta"], _SIGMA), expr, modules="numpy", cse=True)
    return {"S": S, "k": k, "theta": nf["theta"], "expr": expr, "numeric": fn}
