"""D1 figures: how much the order of the layer-Jacobian product matters.

Left: ``r = ‖J_{L−1}⋯J_0 − J_0⋯J_{L−1}‖_F/‖J_{L−1}⋯J_0‖_F`` against depth ``L`` for untied weights,
tied weights on a generic (moving) trajectory, and tied weights at a fixed point of the tied map
(median and range over seeds). Right: tied weights started at distance ``δ`` from the fixed point;
``r`` grows like ``δ`` (the layer Jacobians differ by ``O(δ)``), so "tied weights agree" is a
statement about stationary trajectories only.

Every value is the D1 check's: the depth panel reads the reversal difference of every prefix
``J_{l−1}⋯J_0`` (the verdict's series) from one check at the largest depth per seed and curve; the
distance panel is one check per seed and distance.

On your own ``DepthFlow`` (untied weights, generic start: a fixed point needs tied weights, which
the flow does not have) the figure is one panel, the D1 check of your flow: ``r`` of every prefix
``J_{l−1}⋯J_0`` against ``l`` up to the flow's depth.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.registry import CLAIMS, run_check
from fastslow.verify.verdict import Verdict

PARAMS = {
    **{k: CLAIMS["D1"].defaults()[k] for k in ("T", "P", "d", "h", "gamma", "gate")},
    "depths": (2, 3, 4, 6, 8, 12),
    "seeds": 5,
    "L_distance": 4,
    "distances": (1e-8, 1e-6, 1e-4, 1e-2, 1.0),
}
"""The D1 instance's sizes, depth step, injection and gate; the depths, seeds and distances drawn."""

NAMES = ("untied, generic $X_0$", "tied, generic $X_0$ (moving)", "tied, fixed point $X^*$")
"""The curves of the depth panel."""

CURVES = {
    NAMES[0]: {"tied": False, "gate_spread": 0.0, "target": "random"},
    NAMES[1]: {"tied": True, "target": "random"},
    NAMES[2]: {"tied": True, "trajectory": "fixed_point"},
}
"""The D1 parameters of each curve: one common gate and a random injection target ``E``
(independent of ``X_0``; a fixed point draws its own)."""


def sub_seed(seed: int, s: int) -> int:
    """The check seed of sub-seed ``s`` of the figure's ``seed``: ``seed + s·2³²``, whose random
    streams are those of ``numpy.random.SeedSequence([seed, s])``."""
    return seed + (s << 32)


def _check(seed: int, s: int, params: dict) -> Verdict | None:
    """The D1 verdict at sub-seed ``s``, or ``None`` when Newton finds no fixed point of the tied
    layer there (that sub-seed is skipped); any other error raises."""
    res = run_check("D1", params, seed=sub_seed(seed, s))
    if res.outcome != "error":
        return res
    assert res.error is not None  # an "error" verdict carries its exception
    if "no fixed point" in res.error["message"]:
        return None
    raise RuntimeError(res.summary())


def _depth_panel(seed: int) -> dict:
    """Per curve, the reversal difference at every drawn depth, one list per usable sub-seed."""
    depths, L = PARAMS["depths"], max(PARAMS["depths"])
    rows: dict = {k: [] for k in NAMES}
    sub_seeds: list[int] = []
    s = 0
    while len(sub_seeds) < PARAMS["seeds"]:
        fixed = _check(seed, s, {**CURVES[NAMES[2]], "L": L})
        if fixed is not None:
            sub_seeds.append(s)
            runs = [_check(seed, s, {**CURVES[k], "L": L}) for k in NAMES[:2]] + [fixed]
            for k, res in zip(NAMES, runs):
                assert res is not None  # only the search for a fixed point can come back empty
                by_depth = res.series["reversal_rel_difference_by_depth"]
                rows[k].append([by_depth[l - 1] for l in depths])
        s += 1
    return {"sub_seeds": sub_seeds, "rows": rows}


def _distance_panel(seed: int) -> dict:
    """Per usable sub-seed, the reversal difference at each distance from the fixed point."""
    params = {**CURVES[NAMES[2]], "L": PARAMS["L_distance"]}
    dist: list[list[float]] = []
    sub_seeds: list[int] = []
    s = 0
    while len(sub_seeds) < PARAMS["seeds"]:
        first = _check(seed, s, {**params, "distance": PARAMS["distances"][0]})
        if first is not None:
            sub_seeds.append(s)
            runs = [first] + [
                _check(seed, s, {**params, "distance": delta}) for delta in PARAMS["distances"][1:]
            ]
            row = []
            for res in runs:
                # the fixed point of sub-seed s was found for the first distance, and every
                # distance starts from that same fixed point
                assert res is not None
                row.append(res.figures["reversal_rel_difference"])
            dist.append(row)
        s += 1
    return {"sub_seeds": sub_seeds, "dist": dist}


def d1_case(seed: int, panel: str, system=None) -> dict:
    """The data of one panel: ``"depth"`` or ``"distance"``, or ``"system"``: the D1 verdict
    (JSON) on the user ``system``."""
    if panel == "system":
        return run_check("D1", {}, seed=seed, system=system).to_json()
    if panel == "depth":
        return _depth_panel(seed)
    if panel == "distance":
        return _distance_panel(seed)
    raise ValueError(f"unknown D1 panel {panel!r}")


def _points(seed: int) -> list[dict]:
    return [dict(seed=seed, panel="depth"), dict(seed=seed, panel="distance")]


def _system_points(seed: int, system) -> list[dict]:
    return [dict(seed=seed, panel="system", system=system)]


def _system_panel(verdict: Verdict):
    """The one panel of a user flow: ``r`` of each prefix of its product against depth."""
    by_depth = np.asarray(verdict.series["reversal_rel_difference_by_depth"], dtype=float)
    depth = np.arange(1, by_depth.size + 1)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(depth, np.maximum(by_depth, 1e-17), marker="o", label="your flow (exact 0 at 1e-17)")
    tol = verdict.params["order_tol"]
    ax.axhline(tol, color="k", lw=0.8, ls="--", label=f"{tol:g} (D1 order_tol)")
    ax.set_yscale("log")
    ax.set_xlabel("depth $l$ of the prefix $J_{l-1}⋯J_0$")
    ax.set_ylabel("relative difference, reversed product")
    ax.set_title(f"D1: {verdict.outcome}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig, dict(verdict.params, reversal_by_depth=by_depth.tolist())


@figure("D1", "d1_product_order", compute=d1_case, points=_points, system_points=_system_points)
def d1_product_order(data: list, seed: int):
    if len(data) == 1 and data[0].get("id") == "D1":  # a user flow: one verdict (JSON)
        return _system_panel(Verdict.from_json(data[0]))
    p = PARAMS
    depth, distance = data
    # (depths × sub-seeds) per curve; exact agreement (0.0) is drawn at 1e-17 on the log axis
    curves = {k: np.array(depth["rows"][k]).T for k in NAMES}
    curves[NAMES[2]] = np.maximum(curves[NAMES[2]], 1e-17)
    dist = np.array(distance["dist"])

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for k, vals in curves.items():
        med = np.median(vals, axis=1)
        ax.plot(p["depths"], med, marker="o", label=k)
        ax.fill_between(p["depths"], vals.min(axis=1), vals.max(axis=1), alpha=0.2)
    tol = CLAIMS["D1"].defaults()["order_tol"]
    ax.axhline(tol, color="k", lw=0.8, ls="--", label=f"{tol:g} (D1 order_tol)")
    ax.set_yscale("log")
    ax.set_xlabel("depth $L$")
    ax.set_ylabel("relative difference, reversed product")
    ax.set_title(f"T={p['T']}, d={p['d']}, h={p['h']}, γ={p['gamma']}; {p['seeds']} seeds")
    ax.legend(fontsize=7)
    d = np.array(p["distances"])
    bx.loglog(d, np.median(dist, axis=0), marker="o", label="tied, $X_0 = X^* + δ·v$")
    bx.fill_between(d, dist.min(axis=0), dist.max(axis=0), alpha=0.2)
    ref = np.median(dist[:, -2]) * d / d[-2]
    bx.loglog(d, ref, "k:", lw=0.8, label="slope 1")
    bx.set_xlabel("distance δ from the fixed point (max norm)")
    bx.set_ylabel("relative difference, reversed product")
    bx.set_title(f"L = {p['L_distance']}")
    bx.legend(fontsize=7)
    fig.tight_layout()
    out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in p.items()}
    out["sub_seeds"] = distance["sub_seeds"]
    out["median_reversal"] = {k: [float(np.median(r)) for r in v] for k, v in curves.items()}
    out["median_reversal_vs_distance"] = np.median(dist, axis=0).tolist()
    return fig, out
