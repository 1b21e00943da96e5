"""Shared measurement: relative errors with a declared scale, fitted log–log slopes with their
intervals, finite differences, Taylor-remainder orders, and the symbolic-against-numeric comparison.

Every claim that measures one of these measures it here, so that a rule (what "relative" means on a
zero reference, what the asymptotic window of a rate is) is stated once.

**Relative errors.** :func:`relative_error` divides by a *declared* scale (by default the norm of
the reference) and says what happens on a zero scale: an exact zero difference is ``0.0``, any other
difference is ``inf`` (never a division by a tiny guard constant). :func:`ratio` is the same rule
for two numbers.

**Rates.** An asymptotic claim "error = O(h^k)" is a statement about small ``h``. A slope fitted
over a fixed range of ``h`` mixes the asymptotic regime with the pre-asymptotic bend of the error
curve (higher-order terms, a nearby singularity of the right-hand side), and then either misses
``k`` or has an interval too wide to decide, although the error does converge at rate ``k``; the
first straight stretch of a curve is no better (``c·h + h²`` with ``c = 1e-3`` is straight at
slope 2 for two decades before it bends to 1). The rule of :func:`asymptotic_slope` is fixed in
advance and decides on the finest resolvable part of the curve only:

1. the ``h`` values form a ladder from coarse to fine (e.g. ``ε_j = 10^(−1 − j/4)``), evaluated
   from a start index chosen by the caller from a computable criterion (never from the error
   curve itself) down to the *accuracy floor*: the ladder ends where the error falls below
   :data:`RATE_RESOLUTION` times the absolute accuracy the caller measured for it (or is zero,
   negative, not finite);
2. the *asymptotic window* is the finest run of ``window`` consecutive resolved points whose local
   slopes spread by at most ``spread`` (default ``tol/2``) and below which, down to the floor, no
   local slope drifts further than ``spread`` from the window's fitted slope;
3. the slope is the least-squares fit over that window with its 95% t-interval, and the order
   ``k`` is accepted when the whole interval lies in the band ``[k − tol, k + tol]`` (the claims
   state their ``tol``: F1 uses 0.05 for order 1 and 0.1 for order 2, so ``ε^1.85``,
   ``ε²·log(1/ε)`` and a leading-order interval ``[0.924, 0.933]`` are not accepted);
4. three outcomes: ``holds``; ``fails`` (a window whose interval is disjoint from the band and
   whose local slopes are not approaching ``k``: the rate is measured and it is not ``k``);
   ``unresolved`` (no window above the floor, a drift below it, an interval straddling the
   band's edge, slopes still approaching ``k`` at the floor): a limit of the measurement, which a
   claim reports as ``undecided``, never as a counterexample.

Where sharpness is not part of a claim and the error of a degenerate instance sits at its accuracy
floor everywhere (nothing resolved), the claim's conclusion is the bound ``error ≤ C·h^k``, which
:func:`at_accuracy_floor` decides at every ladder point.

**Derivatives.** :func:`central_difference` and :func:`richardson_difference` (``(4·D(δ/2) −
D(δ))/3``, truncation ``O(δ⁴)``) along a direction; :func:`taylor_remainder_order` decides that an
oracle is the derivative by the order 2 of its Taylor remainder, never by a fixed tolerance.

**Theory against numerics.** :func:`symbolic_agrees` is the one comparison of a value generated from
a SymPy expression (``theory/``) with the value the engine computed (``numerics/``): the relative
error on a declared scale, against a tolerance the caller states in its own units.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import SupportsFloat

import numpy as np
from scipy import stats

from fastslow.verify.verdict import Diagnostic

UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2
"""The unit roundoff ``u = 2^-53`` of float64."""


# --------------------------------------------------------------------------- relative errors


def _norm(x, norm: str) -> float:
    x = np.asarray(x, dtype=float)
    if norm == "fro":
        return float(np.linalg.norm(x.ravel()))
    if norm == "max":
        return float(np.abs(x).max(initial=0.0))
    raise ValueError(f"norm={norm!r}: expected 'fro' or 'max'")


def ratio(x: SupportsFloat, scale: SupportsFloat) -> float:
    """``x / scale``; on a zero scale an exact zero ``x`` is ``0.0`` and any other ``x`` is ``inf``."""
    x, scale = float(x), float(scale)
    if scale > 0:
        return x / scale
    return 0.0 if x == 0 else math.inf


def relative_error(actual, reference, *, scale: float | None = None, norm: str = "fro") -> float:
    """``‖actual − reference‖ / scale`` in the 2-norm of the flattened arrays (``norm="fro"``) or
    the max norm (``norm="max"``).

    ``scale`` is the declared size the error is relative to; by default ``‖reference‖`` in the same
    norm. A zero scale gives ``0.0`` for an exact match and ``inf`` otherwise (:func:`ratio`).
    """
    a, r = np.asarray(actual, dtype=float), np.asarray(reference, dtype=float)
    diff = _norm(a - r, norm)
    return ratio(diff, _norm(r, norm) if scale is None else scale)


def elementwise_relative_error(actual, reference) -> np.ndarray:
    """``|actual − reference| / |reference|`` entry by entry, with :func:`ratio`'s zero rule."""
    a, r = np.asarray(actual, dtype=float), np.asarray(reference, dtype=float)
    diff, scale = np.abs(a - r), np.abs(r)
    out = np.where(diff == 0, 0.0, np.inf)
    np.divide(diff, scale, out=out, where=scale > 0)
    return out


# --------------------------------------------------------------------------- rates


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


def mean_interval(x, confidence: float) -> dict:
    """The two-sided Student-t interval of the mean of the i.i.d. sample ``x`` at ``confidence``.

    ``se = s/√n`` with ``s`` the sample SD (``ddof = 1``), ``half = t_{n−1}(½ + confidence/2)·se``
    (``n − 1`` degrees of freedom), ``ci = mean ± half``, ``z = mean/se`` (the one-sample t
    statistic against 0). Exact coverage for Gaussian samples, asymptotically for others (the
    central limit theorem). With one value the interval is unbounded (``se = inf``). Returns
    ``mean``, ``se``, ``df``, ``half``, ``ci`` and ``z``.
    """
    x = np.asarray(x, dtype=float).ravel()
    n, mean = x.size, float(np.mean(x))
    if n < 2:
        return {
            "mean": mean,
            "se": math.inf,
            "df": 0,
            "half": math.inf,
            "ci": (-math.inf, math.inf),
            "z": 0.0,
        }
    se = float(np.std(x, ddof=1) / math.sqrt(n))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * se
    return {
        "mean": mean,
        "se": se,
        "df": n - 1,
        "half": half,
        "ci": (mean - half, mean + half),
        "z": ratio(mean, se) if mean >= 0 else -ratio(-mean, se),
    }


def local_slopes(h, err) -> np.ndarray:
    """Slopes of ``log err`` against ``log h`` between neighbouring points."""
    lh, le = np.log(np.asarray(h, float)), np.log(np.asarray(err, float))
    return np.diff(le) / np.diff(lh)


ROUNDING_FLOOR = 10 * float(np.finfo(float).eps)
"""The smallest accuracy a measured error of a quantity of size 1 is credited with (ten machine
epsilons): two computations that agree to the last bits measure an accuracy of this, not 0, so an
error is never resolved against an accuracy rounding cannot give (F1's relative errors of states,
F2's probabilities)."""


RATE_RESOLUTION = 10.0
"""An error is resolved when it is at least this many times its measured accuracy floor (the
deviation of two independent computations of it, which bounds the larger of their errors): a
local slope on a quarter-decade ladder then moves by at most ``2·0.1/log(10^{1/4}) ≈ 0.35``, and a
window whose local slopes are moved that much is not straight (spread ≤ the claim's tolerance),
so noise near the floor ends ``unresolved``, never ``holds``."""


def asymptotic_slope(
    ladder: Sequence[float] | np.ndarray,
    error_of: Callable[[float], float],
    expected: float,
    tol: float,
    *,
    start: int = 0,
    window: int = 5,
    spread: float | None = None,
    floor: float | Callable[[float], float] | None = None,
    resolution: float = RATE_RESOLUTION,
) -> dict:
    """The rate of ``error_of(h)`` over its asymptotic window on ``ladder`` (coarse to fine).

    The rule (fixed in advance):

    1. ``error_of`` is evaluated on the ladder from ``ladder[start]`` down to the *accuracy floor*:
       the ladder ends at the first point whose error is not finite, not positive, or below
       ``resolution × floor`` (``floor`` an absolute accuracy of the error, a number or a function
       of ``h``, measured by the caller; ``None``: only the first two conditions);
    2. the asymptotic window is the *finest* run of ``window`` consecutive resolved points whose
       local slopes spread by at most ``spread`` (default ``tol/2``), such that every local slope
       from the window down to the floor stays within ``spread`` of the window's fitted slope
       (no drift below it: a curve still bending at the floor has no window);
    3. the slope is the least-squares fit over the window with its 95% t-interval; the band is
       ``[k − tol, k + tol]`` (``k = expected``).

    Verdict (``verdict``): ``"holds"`` when a window exists and the interval lies in the band;
    ``"fails"`` when a window exists, the interval is disjoint from the band and the window's local
    slopes are not approaching ``k`` (its finest local slope is not closer to ``k`` than its
    coarsest by more than ``spread/2``): the rate is measured and is not ``k``; ``"unresolved"``
    otherwise (no window above the floor, a drift below it, an interval straddling the band's edge,
    or a window still approaching ``k``): the ladder cannot decide the rate above the floor, a
    limit of the measurement, never a counterexample.

    Returns ``verdict``, ``holds`` (``verdict == "holds"``), ``converged`` (a window was found),
    ``slope``, ``ci95``, ``window`` (its coarse and fine ends), ``band``, ``h`` and ``err`` (every
    resolved point), ``local_slopes``, ``floor_reached`` (the ladder ended at the accuracy floor,
    not at its last point) and ``why`` (one line).
    """
    if window < 3:
        raise ValueError(f"window={window}: expected at least 3 points")
    spread = tol / 2 if spread is None else float(spread)
    band = [expected - tol, expected + tol]
    hs: list[float] = []
    errs: list[float] = []
    floor_reached = False
    for h in ladder[start:]:
        e = float(error_of(h))
        f = 0.0 if floor is None else float(floor(h) if callable(floor) else floor)
        if not np.isfinite(e) or e <= 0.0 or e < resolution * f:
            floor_reached = True
            break
        hs.append(float(h))
        errs.append(e)
    ls = local_slopes(hs, errs) if len(hs) > 1 else np.zeros(0)
    out = {
        "band": band,
        "h": hs,
        "err": errs,
        "local_slopes": ls.tolist(),
        "floor_reached": floor_reached,
    }
    for k in range(len(hs) - window, -1, -1):
        win = ls[k : k + window - 1]
        if win.max() - win.min() > spread:
            continue
        fit = slope_fit(hs[k : k + window], errs[k : k + window])
        below = ls[k + window - 1 :]
        if below.size and np.abs(below - fit["slope"]).max() > spread:
            continue  # straight, but the curve bends away below it: not the asymptotic window
        lo, hi = fit["ci95"]
        approaching = abs(win[-1] - expected) < abs(win[0] - expected) - spread / 2
        if band[0] <= lo and hi <= band[1]:
            verdict, why = "holds", "the interval lies in the band"
        elif (hi < band[0] or lo > band[1]) and not approaching:
            verdict, why = "fails", "the interval is outside the band and not approaching it"
        else:
            verdict = "unresolved"
            why = (
                "the local slopes are still approaching the expected order at the floor"
                if approaching
                else "the interval straddles the band's edge"
            )
        return {
            **out,
            "verdict": verdict,
            "holds": verdict == "holds",
            "converged": True,
            "slope": fit["slope"],
            "ci95": fit["ci95"],
            "window": [hs[k], hs[k + window - 1]],
            "why": why,
        }
    fit = (
        slope_fit(hs[-window:], errs[-window:])
        if len(hs) >= 3
        else {"slope": float("nan"), "ci95": [float("nan")] * 2}
    )
    return {
        **out,
        "verdict": "unresolved",
        "holds": False,
        "converged": False,
        "slope": fit["slope"],
        "ci95": fit["ci95"],
        "window": [],
        "why": f"no window of {window} resolved points with straight local slopes and no drift "
        f"below it ({len(hs)} resolved points)",
    }


# --------------------------------------------------------------------------- derivatives


def central_difference(f: Callable, x, direction, step: float):
    """``(f(x + step·direction) − f(x − step·direction)) / (2·step)``; truncation ``O(step²)``."""
    x, direction = np.asarray(x, dtype=float), np.asarray(direction, dtype=float)
    return (np.asarray(f(x + step * direction)) - np.asarray(f(x - step * direction))) / (2 * step)


def richardson_difference(f: Callable, x, direction, step: float):
    """Richardson-extrapolated central difference ``(4·D(step/2) − D(step))/3``; truncation
    ``O(step⁴)``, rounding about ``3·u·|f|/step``."""
    return (
        4.0 * central_difference(f, x, direction, step / 2)
        - central_difference(f, x, direction, step)
    ) / 3.0


def at_accuracy_floor(err, floors, resolution: float = RATE_RESOLUTION) -> dict:
    """Whether every error of a ladder lies within ``resolution`` × its measured accuracy floor:
    then no point is resolved, the errors are indistinguishable from 0 at this accuracy, and the
    bound ``error ≤ C·h^k`` holds for every ``C > 0`` (the conclusion where sharpness is not part
    of a claim: a degenerate instance whose error sits at round-off). Returns ``holds`` and
    ``max_ratio`` (the largest ``err/floor``)."""
    err, floors = np.asarray(err, float), np.asarray(floors, float)
    ratios = np.array([ratio(e, f) for e, f in zip(err, floors)])
    return {"holds": bool(np.all(ratios < resolution)), "max_ratio": float(ratios.max())}


def taylor_window(
    ladder: Sequence[float] | np.ndarray,
    error_of: Callable[[float], float],
    expected: float,
    tol: float,
    *,
    start: int = 0,
    window: int = 5,
    finest: bool = False,
) -> dict:
    """The window rule of the derivative test (:func:`taylor_remainder_order`): the first (or,
    with ``finest=True``, the finest) window of ``window`` points whose local slopes spread by at
    most ``tol/2``; ``holds`` when its 95% interval lies in ``[expected ± tol]``. Its only floor is
    rounding (``error_of`` returns NaN there), and the derivative test guards it with secant
    tests; an asymptotic *rate* claim uses :func:`asymptotic_slope` instead.

    ``error_of`` is called once per ladder point that the rule needs, from ``ladder[start]`` on.
    Returns ``slope``, ``ci95``, ``holds`` (the interval lies in ``[expected ± tol]``),
    ``converged`` (a window was found), ``window`` (its coarse and fine ends), ``h`` and ``err``
    (every evaluated point) and ``local_slopes``. A non-positive or non-finite error ends the
    ladder there (the rate cannot be measured below it).
    """
    if window < 3:
        raise ValueError(f"window={window}: expected at least 3 points")
    hs: list[float] = []
    errs: list[float] = []

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


TAYLOR_SECANT_TOL = 1e-6
"""Without a measurable order (a map affine along the direction, or one whose ``O(s²)`` remainder
reaches rounding before five ladder points agree), the oracle must match the secants: the smallest
``r(s)/(s‖o‖)`` above the rounding floor ≤ 1e-6, or the finest local slope above the floor is still
≥ 2 − slope_tol (an oracle off by Δ would bend it towards 1 once s‖Δ‖ dominates; the smallest
secant defect is then the resolution the instance allows, reported)."""
TAYLOR_LADDER_LEN = 56
TAYLOR_LADDER_TOP = 100.0
"""Default ladder ``s_j = s_0·10^(−j/4)``, ``j = 1…56``, from ``s_0`` = 100× the state's scale
down 14 decades: a nearly affine map reaches the rounding floor within a decade or two of its own
scale, so the ladder starts above it (the finest converged window decides, so coarse steps cost only
evaluations)."""
TAYLOR_WINDOW = 5
"""Points of the asymptotic window of the Taylor remainder."""
TAYLOR_OUTPUT_RESOLUTION = 1e3
"""By default the ladder ends where the output's change or the remainder is within 1e3 units of
rounding of the output, ``1e3·u·‖f(X)‖``: below that the remainder is rounding (a saturated map stops
changing at all and ``r(s) = s‖o‖`` would look like a clean order 1)."""


def taylor_ladder(X, dX) -> np.ndarray:
    """The default ladder ``s_j = s_0·10^(−j/4)``, ``j = 1…56``, ``s_0 = 100·max(‖X‖, 1)/‖dX‖``
    (:data:`TAYLOR_LADDER_TOP`, :data:`TAYLOR_LADDER_LEN`)."""
    s0 = TAYLOR_LADDER_TOP * max(float(np.linalg.norm(X)), 1.0)
    s0 = ratio(s0, float(np.linalg.norm(dX)))
    return s0 * 10.0 ** (-np.arange(1, TAYLOR_LADDER_LEN + 1) / 4)


def taylor_remainder_order(
    f: Callable,
    X,
    dX,
    oracle,
    slope_tol: float,
    *,
    ladder: Sequence[float] | np.ndarray | None = None,
    finest: bool = True,
    resolution: float | None = TAYLOR_OUTPUT_RESOLUTION,
) -> dict:
    """Order of ``r(s) = ‖f(X + s dX) − f(X) − s·oracle‖`` on a ladder of steps ``s`` (coarse to fine).

    Statement: ``oracle`` is the derivative of ``f`` at ``X`` along ``dX`` when ``r(s) = O(s²)``.
    ``order_2`` when the asymptotic-window slope's 95% interval (:func:`taylor_window`; the
    finest converged window with ``finest=True``, the first one otherwise) lies in
    ``2 ± slope_tol``. ``holds`` when ``order_2``, or when the oracle matches the secants
    (:data:`TAYLOR_SECANT_TOL`), or when no window converges above rounding but the finest local
    slope is still ≥ ``2 − slope_tol``. Caveat: an oracle off by ``Δ`` with ``‖Δ‖`` below the
    instance's resolution (reported as ``secant_defect_rel``) cannot be told from the derivative.

    ``ladder`` defaults to :func:`taylor_ladder`. The ladder ends where the output's change or the
    remainder falls to ``resolution·u·‖f(X)‖`` (``resolution=None``: only where ``r`` is zero or
    not finite). A perturbation along a parameter direction is ``X = 0.0``, ``dX = 1.0`` with ``f``
    applying the step ``s`` itself. Also returned: ``secant_defect_coarsest_rel``,
    ``r(s_1)/(s_1‖o‖)`` at the coarsest step (the test of an oracle for a map affine along ``dX``).
    """
    base = f(X)
    steps = taylor_ladder(X, dX) if ladder is None else ladder
    floor = None if resolution is None else resolution * UNIT_ROUNDOFF * float(np.linalg.norm(base))
    evaluated: dict = {}

    def raw(s):
        """``(r(s), ‖f(X + s dX) − f(X)‖)``, each step evaluated once."""
        if s not in evaluated:
            moved = f(X + s * dX) - base
            evaluated[s] = float(np.linalg.norm(moved - s * oracle)), float(np.linalg.norm(moved))
        return evaluated[s]

    def remainder(s):
        """``r(s)``, or NaN (which ends the ladder) once the output's change or the remainder
        falls to the output's rounding resolution: below it ``r`` measures rounding, not order."""
        r, change = raw(s)
        if floor is not None and (change <= floor or r <= floor):
            return float("nan")
        return r

    res = taylor_window(steps, remainder, 2.0, slope_tol, window=TAYLOR_WINDOW, finest=finest)
    # the derivative test without an order: r(s)/(s‖o‖) → 0 for the derivative, → ‖Δ‖/‖o‖ for an
    # oracle off by Δ; its smallest value above the rounding floor bounds ‖Δ‖/‖o‖
    no = float(np.linalg.norm(oracle))
    coarsest = ratio(raw(steps[0])[0], steps[0] * no)
    defects = [ratio(r, h * no) for h, r in zip(res["h"], res["err"])] or [coarsest]
    secant = float(min(defects))
    finest_slope = res["local_slopes"][-1] if res["local_slopes"] else None
    return {
        "slope": res["slope"],
        "ci95": res["ci95"],
        "s": res["h"],
        "remainder": res["err"],
        "local_slopes": res["local_slopes"],
        "order_2": bool(res["holds"]),
        "converged": res["converged"],
        "window": res["window"],
        "secant_defect_rel": secant,
        "secant_defect_coarsest_rel": coarsest,
        "finest_local_slope": None if finest_slope is None else float(finest_slope),
        "holds": bool(res["holds"])
        or secant <= TAYLOR_SECANT_TOL
        or bool(
            not res["converged"] and finest_slope is not None and finest_slope >= 2.0 - slope_tol
        ),
    }


# --------------------------------------------------------------------------- theory against numerics


def symbolic_agrees(
    symbolic, numeric, *, tol: float, scale: float | None = None, norm: str = "max", what: str = ""
) -> Diagnostic:
    """The value generated from a SymPy expression agrees with the engine's value.

    ``holds`` when :func:`relative_error` ``(numeric, symbolic, scale=scale, norm=norm) ≤ tol``;
    the diagnostic's value is that relative error and its rule names ``what`` was compared. The
    caller states ``tol`` in its own units (a multiple of the solver tolerance or of ``u``).
    """
    err = relative_error(numeric, symbolic, scale=scale, norm=norm)
    label = f"{what}: " if what else ""
    return Diagnostic(
        bool(err <= tol), err, f"{label}symbolic vs numeric relative error ≤ {tol:.3g}"
    )
