"""Rendering: computing the figures' points, drawing them and writing their files.

:func:`render` computes the points of the requested figures (:mod:`figures.registry`) in one
:func:`verify.sweep.sweep`, draws each figure in this process (:func:`build`, in :data:`STYLE`)
and writes it as PNG and PDF with deterministic metadata (:func:`save`); for a user system its
figures are computed here and titled with the system (:func:`system_label`). See the package's
docstring for the whole story.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path
from typing import Any, cast

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from fastslow.verify.claim import describe_system
from fastslow.verify.json_values import jsonable
from fastslow.verify.outputs import writable_dir, write_atomic_many
from fastslow.verify.provenance import project_root, provenance
from fastslow.verify.registry import get_claim
from fastslow.verify.sweep import Progress, prepare_cache, sweep

from .registry import (
    FIGURES,
    FigureSpec,
    VerdictPoints,
    discover,
    registered,
    system_figures,
    verdict_json,
)


def default_outdir() -> Path:
    """``figures/out`` of the source checkout, else ``fastslow-figures`` in the working directory
    (never a folder inside an installed package)."""
    root = project_root()
    return root / "figures" / "out" if root is not None else Path.cwd() / "fastslow-figures"


class FigureError(RuntimeError):
    """Some figures could not be drawn because a point of their sweep raised (valid input)."""


class FigureOutsideHypotheses(FigureError):
    """Some figures of a user system could not be drawn because the claim does not apply to it:
    the check is outside its hypotheses and computed none of what they draw."""


STYLE = {
    "figure.figsize": (6.0, 3.8),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "svg.hashsalt": "fastslow",
    "pdf.compression": 6,
}


def system_label(system: dict, seed: int) -> str:
    """One line naming a user system for a figure's title: its name and kind, its mask
    (``user mask T×T`` for an array; a named mask by name), its size and its seed (a
    ``DepthFlow``'s own weights' seed, and the check's seed when it differs)."""
    kind, name = system.get("kind", "system"), system.get("name", "")
    parts = []
    mask = system.get("mask")
    if isinstance(mask, list):
        parts.append(f"user mask {len(mask)}×{len(mask)}")
    elif mask is not None:
        parts.append(f"mask {mask}")
    if "P" in system:
        parts.append(f"P={system['P']}, d={system.get('d')}, L={system.get('L')}")
    elif "n" in system:
        parts.append(f"{system['n']} states" if kind == "GeneratorFamily" else f"n={system['n']}")
    own = system.get("seed")
    if own is None:
        parts.append(f"seed {seed}")
    else:
        parts.append(f"seed {own}" + ("" if own == seed else f", check seed {seed}"))
    return f"{name!r} ({kind}; " + "; ".join(parts) + ")"


def save(fig, outdir: Path, name: str, meta: dict) -> list[Path]:
    """Write ``fig`` as ``name.png`` and ``name.pdf`` with deterministic metadata; close it."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(meta, sort_keys=True, default=str)
    png, pdf = outdir / f"{name}.png", outdir / f"{name}.pdf"
    pdf_meta = {
        "Creator": None,
        "Producer": None,
        "CreationDate": None,
        "Subject": text,
        "Keywords": name,
    }
    try:
        drawn = {}
        for path, meta_ in ((png, {"Software": None, "Description": text}), (pdf, pdf_meta)):
            buffer = io.BytesIO()
            fig.savefig(buffer, format=path.suffix[1:], metadata=meta_)
            drawn[path] = buffer.getvalue()
        write_atomic_many(drawn)  # both or neither; a reader never sees half a file
    finally:
        plt.close(fig)
    return [png, pdf]


def figure_data(figure: str, point: dict):
    """The data of one point of figure ``figure``'s sweep (the sweep function of :func:`render`)."""
    return registered(figure).compute(**point)


def build(name: str, data: list, seed: int = 0, system: dict | None = None):
    """Figure ``name`` drawn from its computed ``data`` and its metadata (nothing written).
    ``system`` (a user system's description) goes into the metadata and, as
    :func:`system_label`, into the figure's suptitle."""
    spec = registered(name)
    with plt.rc_context(cast(Any, STYLE)):  # the style keys are valid rcParams
        fig, params = spec.draw(data, seed)
        if system is not None:
            # wrapped to the figure's width (about 13 characters an inch at 8 pt)
            label = textwrap.fill(system_label(system, seed), int(13 * fig.get_figwidth()))
            own = fig._suptitle.get_text() if fig._suptitle is not None else ""
            fig.suptitle(f"{label}\n{own}" if own else label, fontsize=8)
            if not fig.get_constrained_layout():
                fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.93))
    prov = provenance()
    meta = {
        "claim": spec.claim,
        "figure": name,
        "seed": seed,
        "params": params,
        "git": prov["git"],
        "source_fingerprint": prov["source_fingerprint"],
        "packages": prov["packages"],
        "python": prov["python"],
    }
    if system is not None:
        meta["system"] = system
        meta["system_label"] = system_label(system, seed)
    return fig, meta


def draw(
    name: str, data: list, outdir: Path, seed: int = 0, system: dict | None = None
) -> list[Path]:
    """Draw figure ``name`` from its computed ``data`` and write its PNG and PDF; return the paths.
    ``system`` (a user system's description) goes into the title and the metadata when given."""
    fig, meta = build(name, data, seed, system)
    return save(fig, Path(outdir), name, meta)


def _from_verdicts(spec: FigureSpec) -> bool:
    sys_points = getattr(spec.system_points, "__self__", None)
    return isinstance(sys_points, VerdictPoints) and spec.compute is verdict_json


def draw_verdict(name: str, verdict, outdir: Path) -> list[Path]:
    """Draw figure ``name`` from one verdict, e.g. a claim checked on your own system
    (:func:`fastslow.check`), and write its PNG and PDF. Figures whose sweep has several variants
    draw the first (the claim's default) from this verdict; the title and metadata name the
    verdict's system. Only figures drawn from verdicts can (``ValueError`` for the others: use
    :func:`render` with ``system=``)."""
    spec = registered(name)
    if verdict.system is not None and not _from_verdicts(spec):
        raise ValueError(
            f"figure {name} is not drawn from one verdict; draw it with "
            f"figures.render([{spec.claim!r}], system=...)"
        )
    return draw(name, [verdict.to_json()], outdir, seed=verdict.seed, system=verdict.system)


def system_point(figure: str, point: dict):
    """The data of one point of figure ``figure`` on a user system (``point`` holds it)."""
    return registered(figure).compute(**point)


def _render_system(ids, outdir: Path, seed: int, system, skipped: list | None) -> list[Path]:
    """:func:`render` for a user ``system`` (see the module docstring)."""
    desc = describe_system(system)
    specs, not_drawn = system_figures(ids, system)
    if skipped is not None:
        skipped.extend(not_drawn)
    # one computation per distinct (compute, point): figures drawn from the same verdict share it
    keys: list[tuple] = []
    points: list[dict] = []
    where: dict[str, list[int]] = {}
    for sp in specs:
        where[sp.name] = []
        assert sp.system_points is not None  # system_figures keeps only the drawable ones
        for pt in sp.system_points(seed, system):
            rest = {k: v for k, v in pt.items() if k != "system"}
            key = (sp.compute, json.dumps(jsonable(rest), sort_keys=True))
            if key not in keys:
                keys.append(key)
                points.append(dict(figure=sp.name, point=pt))
            where[sp.name].append(keys.index(key))
    results = sweep(system_point, points, executor=None, label="figure data (your system)")
    paths, failed, outside = [], [], []
    for sp in specs:
        data = [results[i] for i in where[sp.name]]
        errors = [d["error"] for d in data if isinstance(d, dict) and set(d) == {"error"}]
        errors += [d["error"] for d in data if isinstance(d, dict) and d.get("verdict") == "error"]
        if errors:
            failed.append(f"{sp.name} ({errors[0]['type']}: {errors[0]['message']})")
            continue
        try:
            paths += draw(sp.name, data, outdir, seed=seed, system=desc)
        except Exception as exc:  # valid input the figure could not draw: an error, one line
            away = [
                d for d in data if isinstance(d, dict) and d.get("verdict") == "outside-hypotheses"
            ]
            if away:  # the claim does not apply to the system: nothing was computed to draw
                outside.append(f"{sp.name} ({away[0].get('reason', 'outside the hypotheses')})")
            else:
                failed.append(f"{sp.name} (drawing: {type(exc).__name__}: {exc})")
    if failed:
        raise FigureError(
            f"{len(failed)} figure(s) not drawn for your system, a check or drawing raised: "
            + "; ".join(failed)
        )
    if outside:
        raise FigureOutsideHypotheses(
            f"{len(outside)} figure(s) not drawn: your system is outside the claim's hypotheses, "
            "so its check computed nothing to draw: " + "; ".join(outside)
        )
    return paths


def compute(names: list[str], seed: int = 0, executor=None, cache_dir=None) -> dict[str, list]:
    """The data of figures ``names``: all their points in one sweep on ``executor``."""

    points = [dict(figure=n, point=pt) for n in names for pt in registered(n).points(seed)]
    results = sweep(
        figure_data, points, executor=executor, cache_dir=cache_dir, label="figure data"
    )
    data: dict[str, list] = {n: [] for n in names}
    for pt, res in zip(points, results):
        data[pt["figure"]].append(res)
    return data


def render(
    claim_ids=None,
    outdir: Path | None = None,
    seed: int = 0,
    executor=None,
    cache_dir=None,
    *,
    system=None,
    skipped: list | None = None,
) -> list[Path]:
    """Compute and draw the figures of ``claim_ids`` (all registered ones if ``None``) into
    ``outdir``. With a user ``system``: the figures of those claims (default: of every claim that
    checks its kind) drawn for it, computed in this process (``executor`` and ``cache_dir`` are
    not used); the figures with no form for a system are appended to ``skipped`` as
    ``(name, reason)``. Bad input (a claim that does not check the system's kind, a system whose
    ``describe()`` raises, no figure to draw) raises ``ValueError`` before any work."""

    discover()
    outdir = writable_dir(default_outdir() if outdir is None else outdir, "output folder")
    if system is not None:
        return _render_system(claim_ids, outdir, seed, system, skipped)
    ids = list(FIGURES) if claim_ids is None else [get_claim(c).id for c in claim_ids]
    if cache_dir is not None:
        prepare_cache(cache_dir, "cache folder")
    names = [spec.name for cid in ids for spec in FIGURES.get(cid, [])]
    data = compute(names, seed=seed, executor=executor, cache_dir=cache_dir)
    bar = Progress(len(names), "drawing")
    paths, failed = [], []
    for n in names:
        errors = [d["error"] for d in data[n] if isinstance(d, dict) and set(d) == {"error"}]
        if errors:
            failed.append(f"{n} ({errors[0]['type']}: {errors[0]['message']})")
            continue
        try:
            paths += draw(n, data[n], outdir, seed=seed)
        except Exception as exc:  # drawing valid data raised: named below (exit 3), others drawn
            failed.append(f"{n} (drawing raised {type(exc).__name__}: {exc})")
            continue
        bar.update()
    if failed:
        raise FigureError(
            f"{len(failed)} figure(s) not drawn, a point or its drawing raised: "
            + "; ".join(failed)
        )
    return paths
