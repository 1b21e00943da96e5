"""Convergence rates: a log–log slope with its interval, and the asymptotic-window rule.

An asymptotic claim "error = O(h^k)" is a statement about small ``h``. A slope fitted over a fixed
range of ``h`` mixes the asymptotic regime with the pre-asymptotic bend of the error curve (higher
order terms, a nearby singularity of the right-hand side), and then either misses ``k`` or has an
interval too wide to decide, although the error does converge at rate ``k``. The rule of
:func:`asymptotic_slope` is fixed in advance and decides on the asymptotic part only:

1. the ``h`` values form a ladder from coarse to fine (e.g. ``ε_j = 10^(−1 − j/4)`` or
   ``h = 1/L`` with ``L`` doubling), evaluated lazily from a start index chosen by the caller from
   a computable criterion (never from the error curve itself);
2. windows of ``window`` consecutive ladder points slide from coarse to fine; the *asymptotic
   window* is the first whose local slopes (between neighbouring points) spread by at most
   ``tol/2``: the curve is a straight line there;
3. the slope is the least-squares fit over that window, with its 95% t-interval; the rate is
   verified when the whole interval lies in ``[k − tol, k + tol]``;
4. if no window converges before the ladder ends, the rate is not verified (``converged`` is
   False) and the result says so.

With ``finest=True`` the whole ladder is evaluated (down to where ``error_of`` returns NaN, e.g. a
rounding floor) and the *finest* converged window is taken instead: for a Taylor-remainder test,
where points are cheap, the asymptotic regime is the one just above rounding, and a straight
pre-asymptotic stretch at coarse steps cannot be mistaken for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats


def slope_fit(h, err) -> dict:
    """Least-squares slope of ``log err`` against ``log h`` with its 95% interval (t quantile).

    ``h`` and ``err`` are positive; at least three points (two degrees of freedom are needed for
    an interval). Returns ``slope``, ``ci95``, ``stderr``, ``intercept`` and ``r2``.
    """
    h, err = np.asarray(h, float), np.asarray(err, float)
    r = stats.linregress(np.log(h), np.log(err))
    q = stats.t.ppf(0.975, len(h) - 2)
    return {
        "slope": float(r.slope),
        "ci95": [float(r.slope - q * r.stderr), float(r.slope + q * r.stderr)],
        "stderr": float(r.stderr),
        "intercept": float(r.intercept),
        "r2": float(r.rvalue**2),
    }


def local_slopes(h, err) -> np.ndarray:
    """Slopes of ``log err`` against ``log h`` between neighbouring points."""
    lh, le = np.log(np.asarray(h, float)), np.log(np.asarray(err, float))
    return np.diff(le) / np.diff(lh)


def asymptotic_slope(
    ladder: Sequence[float],
    error_of: Callable[[float], float],
    expected: float,
    tol: float,
    *,
    start: int = 0,
    window: int = 5,
    finest: bool = False,
) -> dict:
    """The rate of ``error_of(h)`` over its asymptotic window on ``ladder`` (coarse to fine).

    ``error_of`` is called once per ladder point that the rule needs, from ``ladder[start]`` on.
    Returns ``slope``, ``ci95``, ``holds`` (the interval lies in ``[expected ± tol]``),
    ``converged`` (a window was found), ``window`` (its coarse and fine ends), ``h`` and ``err``
    (every evaluated point) and ``local_slopes``. A non-positive or non-finite error ends the
    ladder there (the rate cannot be measured below it).
    """
    if window < 3:
        raise ValueError(f"window={window}: expected at least 3 points")
    hs, errs = [], []

    def decided(wh, we):
        fit = slope_fit(wh, we)
        lo, hi = fit["ci95"]
        return {
            "slope": fit["slope"],
            "ci95": fit["ci95"],
            "holds": bool(expected - tol <= lo and hi <= expected + tol),
            "converged": True,
            "window": [wh[0], wh[-1]],
            "h": hs,
            "err": errs,
            "local_slopes": local_slopes(hs, errs).tolist(),
        }

    for h in ladder[start:]:
        e = float(error_of(h))
        if not np.isfinite(e) or e <= 0.0:
            break
        hs.append(float(h))
        errs.append(e)
        if finest or len(hs) < window:
            continue
        ls = local_slopes(hs[-window:], errs[-window:])
        if ls.max() - ls.min() <= tol / 2:
            return decided(hs[-window:], errs[-window:])
    if finest:
        for k in range(len(hs) - window, -1, -1):
            ls = local_slopes(hs[k : k + window], errs[k : k + window])
            if ls.max() - ls.min() <= tol / 2:
                return decided(hs[k : k + window], errs[k : k + window])
    fit = (
        slope_fit(hs[-window:], errs[-window:])
        if len(hs) >= 3
        else {"slope": float("nan"), "ci95": [float("nan")] * 2}
    )
    return {
        "slope": fit["slope"],
        "ci95": fit["ci95"],
        "holds": False,
        "converged": False,
        "window": [hs[-min(window, len(hs))], hs[-1]] if hs else [],
        "h": hs,
        "err": errs,
        "local_slopes": local_slopes(hs, errs).tolist() if len(hs) > 1 else [],
    }
