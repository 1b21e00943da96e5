"""A2 figure: slow/fast cost ratio against the block size P — FLOP model and measured times."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fastslow.figures import figure
from fastslow.verify.registry import run_check
from fastslow.verify.timing import A2_PS, a2_attention_times

PARAMS = {"T": 2048, "d": 64, "repeat": 3}

WIDTHS = (1, 4)
"""MLP widths ``m = k·d`` of the whole-layer ratio curves."""


def a2_point(seed: int, what: str, P: int = 0, k: int = 0) -> dict:
    """One point: ``what="flop"``, the A2 check at block size ``P`` and MLP width ``m = k·d`` (its
    attention and whole-layer ratios, counted from the products the reference executes and equal
    to the FLOP model); ``what="times"``, the measured times of all block sizes (timed
    round-robin)."""
    T, d = PARAMS["T"], PARAMS["d"]
    if what == "flop":
        res = run_check("A2", {"T": T, "P": P, "d": d, "m": k * d}, seed=seed)
        return {k_: res.figures[k_] for k_ in ("attention_ratio", "layer_ratio")}
    if what == "times":
        return {"times": a2_attention_times(T, d, A2_PS, repeat=PARAMS["repeat"])}
    raise ValueError(f"unknown A2 figure point {what!r}")


def _points(seed: int) -> list[dict]:
    return [dict(seed=seed, what="times")] + [
        dict(seed=seed, what="flop", P=P, k=k) for k in WIDTHS for P in A2_PS
    ]


def _curves(flop: list, Ps: np.ndarray) -> list:
    """The drawn lines ``(label, style, values)`` from the flop points (``WIDTHS`` × ``A2_PS``)."""
    by_width = {k: flop[i * len(Ps) : (i + 1) * len(Ps)] for i, k in enumerate(WIDTHS)}
    curves = [
        (
            "model: attention core 4N²d/4T²d = 1/P²",
            "k-",
            [pt["attention_ratio"] for pt in by_width[1]],
        ),
        ("1/P", "k--", (1.0 / Ps).tolist()),
    ]
    for k, style in zip(WIDTHS, ("C2:", "C3-.")):
        curves.append(
            (
                f"model: slow path / fast layer, m={k}d",
                style,
                [pt["layer_ratio"] for pt in by_width[k]],
            )
        )
    return curves


@figure("A2", "a2_cost_ratio", compute=a2_point, points=_points)
def a2_cost_ratio(data: list, seed: int):
    """Model lines 1/P² (attention core) and 1/P, the whole-layer model ratio for m = d and m = 4d,
    and the measured time ratio slow path / fast attention (NumPy reference and Numba) at T=2048."""
    T, d, repeat = PARAMS["T"], PARAMS["d"], PARAMS["repeat"]
    Ps = np.array(A2_PS)
    times = data[0]["times"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.8), constrained_layout=True)
    for label, style, y in _curves(data[1:], Ps):
        ax.loglog(Ps, y, style, lw=1.2, label=label)
        bx.loglog(Ps, np.array(y) * Ps**2, style, lw=1.2)
    for path, marker, colour in (("numpy", "o", "C0"), ("numba", "s", "C1")):
        r = np.array(times[path]["slow"]) / times[path]["fast"]
        ax.loglog(
            Ps,
            r,
            marker,
            color=colour,
            ms=5,
            label=f"measured time: slow path / fast attention ({path})",
        )
        bx.loglog(Ps, r * Ps**2, marker, color=colour, ms=5)
    ax.set_ylabel("cost ratio slow / fast")
    bx.set_ylabel("ratio · P²  (1 = the 1/P² model)")
    bx.axhline(1.0, color="0.6", lw=0.6)
    bx.set_title(
        "ratio·P²: m=4d dips below 1 at P=2 (0.93), m=d at P=1;\n"
        "measured times leave 1/P² where fixed O(Td) costs dominate",
        fontsize=7,
    )
    ax.set_title(f"A2 cost ratio, T={T}, d={d}", fontsize=8)
    for a_ in (ax, bx):
        a_.set_xlabel("block size P  (N = T/P pooled tokens)")
        a_.set_xticks(Ps, [str(P) for P in Ps])
    ax.legend(fontsize=6.5)
    return fig, {
        "T": T,
        "d": d,
        "Ps": list(A2_PS),
        "repeat": repeat,
        "seed": seed,
        "timer": "process CPU time, round-robin best of repeat",
    }
