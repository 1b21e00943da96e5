"""A2 figure: slow/fast cost ratio against the block size P — FLOP model and measured times."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from figures import figure
from numerics.model.cost import attention_ratio, layer_ratio
from verify.timing import A2_PS, a2_attention_times

PARAMS = {"T": 2048, "d": 64, "repeat": 3}


def a2_data(seed: int) -> dict:
    """The model cost ratios and the measured times of all block sizes P (timed round-robin)."""
    T, d, repeat = PARAMS["T"], PARAMS["d"], PARAMS["repeat"]
    Ps = np.array(A2_PS)
    curves = [
        (
            "model: attention core 4N²d/4T²d = 1/P²",
            "k-",
            [float(attention_ratio(T, P, d)) for P in Ps],
        ),
        ("1/P", "k--", (1.0 / Ps).tolist()),
    ]
    for m, style in ((d, "C2:"), (4 * d, "C3-.")):
        curves.append(
            (
                f"model: slow path / fast layer, m={m // d}d",
                style,
                [float(layer_ratio(T, P, d, m)) for P in Ps],
            )
        )
    return {"curves": curves, "times": a2_attention_times(T, d, A2_PS, repeat=repeat)}


@figure("A2", "a2_cost_ratio", compute=a2_data)
def a2_cost_ratio(data: list, seed: int):
    """Model lines 1/P² (attention core) and 1/P, the whole-layer model ratio for m = d and m = 4d,
    and the measured time ratio slow path / fast attention (NumPy reference and Numba) at T=2048."""
    T, d, repeat = PARAMS["T"], PARAMS["d"], PARAMS["repeat"]
    Ps = np.array(A2_PS)
    (case,) = data
    times = case["times"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 3.8), constrained_layout=True)
    for label, style, y in case["curves"]:
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
