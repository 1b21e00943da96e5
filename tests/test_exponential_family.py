"""theory.exponential_family: each family's token log density against SciPy's distributions
(an oracle that shares no code with the derivation), so that a wrong density — including the
control family's, which D8 only needs to be "not sufficient" — is seen for what it is."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy import stats

from fastslow.theory import exponential_family as ef

SIGMA, M = 1.7, -0.4
"""The Gaussian family's known noise scale and the control's known mean, at which the densities
are evaluated."""


def _log_density(family: str, x: float, theta: float) -> float:
    xs = sp.Symbol("x", real=True)
    expr, th = ef.token_log_density(family, xs)
    known = {ef._SIGMA: SIGMA} if family != "gaussian_scale" else {ef._M: M}
    # (the Gaussian family's mean and the control's known mean are one SymPy symbol, ``m``)
    return float(expr.subs({**known, xs: x, th: theta}).evalf(30))


@pytest.mark.parametrize(
    "family, x, theta, oracle",
    [
        ("gaussian", 0.3, 1.2, lambda x, th: stats.norm.logpdf(x, th, SIGMA)),
        ("gaussian", -2.5, -0.7, lambda x, th: stats.norm.logpdf(x, th, SIGMA)),
        ("poisson", 3, 2.5, lambda x, th: stats.poisson.logpmf(x, th)),
        ("poisson", 0, 0.4, lambda x, th: stats.poisson.logpmf(x, th)),
        ("bernoulli", 1, 0.3, lambda x, th: stats.bernoulli.logpmf(x, th)),
        ("bernoulli", 0, 0.8, lambda x, th: stats.bernoulli.logpmf(x, th)),
        ("gaussian_scale", 0.9, 0.6, lambda x, th: stats.norm.logpdf(x, M, th)),
        ("gaussian_scale", -3.0, 2.2, lambda x, th: stats.norm.logpdf(x, M, th)),
    ],
)
def test_token_log_density_is_scipy_s(family, x, theta, oracle):
    assert _log_density(family, x, theta) == pytest.approx(oracle(x, theta), rel=1e-13, abs=1e-13)


def test_the_control_s_likelihood_ratio_derivative_is_its_closed_form():
    """For N(m, s²) the θ-derivative of the log likelihood ratio of two blocks with the same sum
    is ``(Σ(x − m)² − Σ(y − m)²)/s³`` (with ``y_P`` eliminated): non-zero, hence no sufficiency."""
    P = 3
    lr = ef.likelihood_ratio("gaussian_scale", P)
    xs, ys, s = lr["xs"], lr["ys"], lr["theta"]
    y_last = sum(xs) - sum(ys)
    closed = (
        sum((x - ef._M) ** 2 for x in xs) - sum((y - ef._M) ** 2 for y in [*ys, y_last])
    ) / s**3
    assert sp.simplify(lr["d_dtheta"] - closed) == 0
    assert np.isfinite(
        float(closed.subs({**dict(zip(xs, (1, 2, 3))), **dict(zip(ys, (0, 5))), s: 1, ef._M: 0}))
    )


@pytest.mark.parametrize("P", [0, -2, 2.0, True])
def test_a_block_size_that_is_not_a_positive_integer_is_refused(P):
    with pytest.raises(ValueError, match="P must be a positive integer"):
        ef.factorisation("gaussian", P)


def test_the_control_family_has_no_natural_form():
    """N(m, s²) with the scale as parameter is not an exponential family in ``x`` alone: asked
    for its natural form, the derivation refuses it (it must not fall through to another
    family's formulas)."""
    with pytest.raises(ValueError, match="unknown family 'gaussian_scale'"):
        ef.natural_form("gaussian_scale")
