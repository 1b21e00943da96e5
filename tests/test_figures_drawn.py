"""Every figure of ``figures/`` is drawn by a test: the figures no other test draws (``bash run.sh
figures`` only, docs/benchmarks.md "Line coverage"), each through the public path
(:func:`figures.render`, or :func:`figures.compute` then :func:`figures.draw`) on a small instance.

A figure whose default sweep is cheap (D4, D5, D6) is drawn as ``bash run.sh figures`` draws it. A
figure whose sweep is a claim over an expensive grid is drawn from the same computation on a small
one: its module's grid constants (read when the figure computes and draws) are monkeypatched, or
for a figure of verdicts (:func:`figures.verdict_points`) its points are replaced by the same
variants on a smaller instance of the claim. The E1 figures are drawn from the committed report
(the check asked with its runs missing from the cache, as in a fresh checkout), never trained.

Each test checks the written files (a PNG and a PDF whose metadata name the figure, its seed and
its parameters), the panels, and that the plotted data are the computed points' values.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from PIL import Image

from fastslow import figures
from fastslow.figures import a2 as a2_figures
from fastslow.figures import d1 as d1_figures
from fastslow.figures import d4 as d4_figures
from fastslow.figures import d5 as d5_figures
from fastslow.figures import d6 as d6_figures
from fastslow.figures import d8 as d8_figures
from fastslow.figures import d9 as d9_figures
from fastslow.figures import e1 as e1_figures
from fastslow.figures import f1 as f1_figures
from fastslow.figures import f3 as f3_figures
from fastslow.verify.checks import e1
from fastslow.verify.registry import get_claim
from fastslow.verify.timing import A2_PS
from fastslow.verify.verdict import Verdict

SEED = 0
"""The root seed of every figure here (the E1 report's verdicts are of seed 0)."""


@dataclasses.dataclass
class Panel:
    """What one Axes shows: its title, its labelled lines (``label -> (x, y)``), every line with
    data, its collections' point offsets, its x tick labels, its bars (height, colour) and its
    labelled error bars (``label -> (x, y)`` of the points)."""

    title: str
    lines: dict
    all_lines: list
    offsets: list
    xticklabels: list
    bars: list
    errorbars: dict


@dataclasses.dataclass
class Drawn:
    name: str
    data: list
    meta: dict
    suptitle: str
    panels: list


def panel_of(ax) -> Panel:
    """What ``ax`` shows (:class:`Panel`)."""
    lines, all_lines = {}, []
    for line in ax.get_lines():
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
        if x.size:
            all_lines.append((x, y, line))
            if not line.get_label().startswith("_"):
                lines[line.get_label()] = (x, y)
    offsets = [np.asarray(c.get_offsets(), dtype=float) for c in ax.collections]
    bars = [
        (p.get_height(), mcolors.to_hex(p.get_facecolor(), keep_alpha=False))
        for p in ax.patches
        if hasattr(p, "get_height")
    ]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    errorbars = {
        c.get_label(): tuple(np.asarray(a, dtype=float) for a in c.lines[0].get_data())
        for c in ax.containers
        if isinstance(c, ErrorbarContainer) and c.lines[0] is not None  # None: fmt="none"
    }
    return Panel(ax.get_title(), lines, all_lines, offsets, ticks, bars, errorbars)


@pytest.fixture
def drawn(monkeypatch) -> dict:
    """Every figure drawn in a test, by name: its data, metadata, suptitle and panels, read from
    the open figure before it is written and closed."""
    out: dict = {}
    build = figures.build

    def keep(name, data, seed=0, system=None):
        fig, meta = build(name, data, seed, system)
        sup = fig._suptitle.get_text() if fig._suptitle is not None else ""
        out[name] = Drawn(name, data, meta, sup, [panel_of(ax) for ax in fig.axes])
        return fig, meta

    monkeypatch.setattr(figures.rendering, "build", keep)  # where draw() looks it up
    return out


def assert_written(paths: list, drawn: dict, seed: int = SEED) -> None:
    """A PNG and a PDF per drawn figure, both valid, with the figure's provenance."""
    assert sorted(p.name for p in paths) == sorted(
        f"{n}.{ext}" for n in drawn for ext in ("png", "pdf")
    )
    for p in paths:
        name = p.stem
        raw = p.read_bytes()
        if p.suffix == ".png":
            assert raw.startswith(b"\x89PNG\r\n\x1a\n")
            with Image.open(p) as im:
                im.verify()
            with Image.open(p) as im:
                desc = json.loads(im.text["Description"])
            assert desc["figure"] == name and desc["seed"] == seed
            assert desc["params"] == json.loads(json.dumps(drawn[name].meta["params"], default=str))
            assert desc["git"] == drawn[name].meta["git"]
        else:
            assert raw.startswith(b"%PDF-") and raw.rstrip().endswith(b"%%EOF")
            assert f"/Keywords ({name})".encode() in raw


def draw_only(names: list, tmp_path: Path, seed: int = SEED) -> list:
    """The named figures computed in this process and drawn (the steps of :func:`figures.render`
    for figures of a claim whose other figures are not wanted here)."""
    data = figures.compute(names, seed=seed)
    return [p for n in names for p in figures.draw(n, data[n], tmp_path, seed=seed)]


def replace_points(monkeypatch, claim: str, name: str, points) -> None:
    """Figure ``name`` of ``claim`` with sweep points ``points`` (the registry restored after)."""
    figures.available()
    specs = [dataclasses.replace(sp, points=points) if sp.name == name else sp
             for sp in figures.FIGURES[claim]]  # fmt: skip
    monkeypatch.setitem(figures.FIGURES, claim, specs)


# -- A2 ---------------------------------------------------------------------------------------


def test_a2_cost_ratio_draws_the_model_ratios_and_the_measured_times(monkeypatch, tmp_path, drawn):
    """At T = 64, d = 4 (default T = 2048, d = 64): the attention model line is 1/P², every
    model line is the A2 check's ratio, and the measured markers are the timed slow/fast ratios;
    the right panel is each left line times P²."""
    monkeypatch.setattr(a2_figures, "PARAMS", {"T": 64, "d": 4, "repeat": 1})
    paths = figures.render(["A2"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    fig = drawn["a2_cost_ratio"]
    assert fig.meta["params"]["T"] == 64 and fig.meta["params"]["Ps"] == list(A2_PS)
    left, right = fig.panels
    Ps = np.array(A2_PS, dtype=float)
    times, flop = fig.data[0]["times"], fig.data[1:]
    assert len(flop) == len(a2_figures.WIDTHS) * len(A2_PS)
    attention = left.lines["model: attention core 4N²d/4T²d = 1/P²"]
    np.testing.assert_allclose(attention[0], Ps)
    np.testing.assert_allclose(attention[1], 1 / Ps**2, rtol=1e-12)
    np.testing.assert_allclose(left.lines["1/P"][1], 1 / Ps)
    for i, k in enumerate(a2_figures.WIDTHS):
        want = [pt["layer_ratio"] for pt in flop[i * len(Ps) : (i + 1) * len(Ps)]]
        np.testing.assert_allclose(left.lines[f"model: slow path / fast layer, m={k}d"][1], want)
    for path in ("numpy", "numba"):
        want = np.array(times[path]["slow"]) / times[path]["fast"]
        label = f"measured time: slow path / fast attention ({path})"
        np.testing.assert_allclose(left.lines[label][1], want)
    # the right panel: the same curves times P², in the same order (and the line at 1)
    curves = [y for x, y, _ in left.all_lines if x.size == Ps.size]
    scaled = [y for x, y, _ in right.all_lines if x.size == Ps.size]
    assert len(curves) == len(scaled) == 2 + len(a2_figures.WIDTHS) + 2
    for y, y2 in zip(curves, scaled):
        np.testing.assert_allclose(y2, y * Ps**2, rtol=1e-12)


# -- D1 ---------------------------------------------------------------------------------------


def test_d1_product_order_draws_the_medians_over_sub_seeds(monkeypatch, tmp_path, drawn):
    """Two sub-seeds, three depths, three distances (default 5, 6, 5): each depth curve is the
    median over sub-seeds of the checks' reversal differences; tied weights at a fixed point agree
    to D1's tolerance while the untied ones do not; the distance curve grows with δ."""
    small = dict(d1_figures.PARAMS, seeds=2, depths=(2, 3, 4), distances=(1e-6, 1e-4, 1e-2))
    monkeypatch.setattr(d1_figures, "PARAMS", small)
    paths = figures.render(["D1"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    fig = drawn["d1_product_order"]
    depth, distance = fig.data
    assert len(fig.panels) == 2
    ax, bx = fig.panels
    assert len(depth["sub_seeds"]) == len(distance["sub_seeds"]) == 2
    for name in d1_figures.NAMES:
        x, y = ax.lines[name]
        np.testing.assert_array_equal(x, small["depths"])
        want = np.median(np.array(depth["rows"][name]), axis=0)
        if name == d1_figures.NAMES[2]:
            want = np.maximum(want, 1e-17)
        np.testing.assert_allclose(y, want, rtol=1e-12)
        assert fig.meta["params"]["median_reversal"][name] == pytest.approx(list(want))
    tol = get_claim("D1").defaults()["order_tol"]
    assert max(ax.lines[d1_figures.NAMES[2]][1]) < get_claim("D1").defaults()["agree_tol"]
    assert min(ax.lines[d1_figures.NAMES[0]][1]) > tol
    x, y = bx.lines["tied, $X_0 = X^* + δ·v$"]
    np.testing.assert_array_equal(x, small["distances"])
    np.testing.assert_allclose(y, np.median(np.array(distance["dist"]), axis=0))
    assert np.all(np.diff(y) > 0)
    assert "2 seeds" in ax.title


# -- D4 ---------------------------------------------------------------------------------------


def test_d4_causal_eigenbasis_condition_draws_the_checks_numbers(tmp_path, drawn):
    """As ``bash run.sh figures`` draws it (one D4 check of the condition numbers, five of the
    accuracy): the exact condition number grows with T; the errors are the checks'."""
    paths = figures.render(["D4"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    fig = drawn["d4_causal_eigenbasis_condition"]
    cond, acc = fig.data[0], fig.data[1:]
    a, b = fig.panels
    x, y = a.lines["exact (closed-form eigenvectors)"]
    np.testing.assert_array_equal(x, d4_figures.TS)
    np.testing.assert_allclose(y, cond["exact"])
    assert np.all(np.diff(y) > 0)  # non-normality grows with T
    np.testing.assert_allclose(a.lines["numpy.linalg.eig, float64"][1], cond["numpy_eig"])
    x, y = b.lines["eigen form vs polynomial form"]
    np.testing.assert_array_equal(x, d4_figures.EIG_TS)
    np.testing.assert_allclose(y, [c["eig_err"] for c in acc])
    np.testing.assert_allclose(b.lines["polynomial form vs JVP"][1], [c["poly_err"] for c in acc])
    assert min(y) >= d4_figures.ERROR_FLOOR
    assert fig.meta["params"] == {"Ts": list(d4_figures.TS), "eig_Ts": list(d4_figures.EIG_TS),
                                  "seed": SEED}  # fmt: skip


# -- D5 ---------------------------------------------------------------------------------------


def test_d5_figures_draw_one_panel_per_case_from_the_verdicts(tmp_path, drawn):
    """As ``bash run.sh figures`` draws them: one panel per (mask, T) case, each the D5 verdict's
    mode ratios and r(L) (mode ratios) or its measured and bounded fluctuation (fluctuation)."""
    paths = figures.render(["D5"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    modes = drawn["d5_mode_ratios"]
    assert len(modes.panels) == len(d5_figures.MODE_CASES) == len(modes.data)
    for ax, (mask, T), case in zip(modes.panels, d5_figures.MODE_CASES, modes.data):
        v = Verdict.from_json(case)
        assert v.params["mask"] == mask and v.params["T"] == T
        assert ax.title.startswith(f"{mask} (T={T})")
        np.testing.assert_allclose(ax.lines["r(L)"][1], v.figures["r_by_depth"])
        ratios = np.asarray(v.series["mode_ratios"])
        for k, lam in enumerate(v.series["lams"][1:]):
            np.testing.assert_allclose(ax.lines[f"λ = {lam:.3g}"][1], ratios[:, k])
    fluct = drawn["d5_within_block_fluctuation"]
    assert len(fluct.panels) == len(d5_figures.FLUCTUATION_CASES) == len(fluct.data)
    for ax, (mask, T), case in zip(fluct.panels, d5_figures.FLUCTUATION_CASES, fluct.data):
        f = Verdict.from_json(case).figures
        assert case["params"]["brute_max_Td"] == 0 and ax.title.startswith(f"{mask} (T={T}")
        lin = np.array(f["within_block_fluctuation_by_depth"])
        np.testing.assert_allclose(ax.lines["linearised"][1], lin[lin > 0])
        bound = ax.lines["bound c_K r(L) σ_min(D_1)‖δX_0‖/‖δX_L‖"][1]
        np.testing.assert_allclose(bound, f["within_block_fluctuation_bound_by_depth"])


# -- D6 ---------------------------------------------------------------------------------------


def test_d6_figures_draw_both_reference_states(tmp_path, drawn):
    """As ``bash run.sh figures`` draws them: the visibility spectra of every block (zeros at the
    floor) for both reference states, and the persistent E_d changes against s with their fitted
    slopes."""
    paths = figures.render(["D6"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    vis = drawn["d6_visibility_spectrum"]
    assert len(vis.panels) == len(d6_figures.REFERENCES) == 2
    for ax, reference, case in zip(vis.panels, d6_figures.REFERENCES, vis.data):
        assert case["params"]["reference"] == reference and ax.title.startswith(reference)
        spectra = Verdict.from_json(case).series["visibility_spectra"]
        shown = [np.asarray(s, dtype=float) for s in spectra.values() if len(s)]
        assert ax.xticklabels == list(spectra)
        assert len(ax.offsets) == len(shown)  # one scatter per block with singular values
        for off, s in zip(ax.offsets, shown):
            np.testing.assert_allclose(off[:, 1], np.maximum(s, d6_figures.FLOOR))
    second = drawn["d6_second_order"]
    (ax,) = second.panels
    hom, het = (Verdict.from_json(c) for c in second.data)
    assert len(ax.lines) == 6
    for kind in ("X0_Ed", "E_Ed", "F_Ed"):
        for v, reference in ((hom, "homogeneous"), (het, "heterogeneous")):
            slope = v.figures["Ed_second_order_slopes"][kind]["slope"]
            x, y = ax.lines[f"{kind}, {reference}: slope {slope:.3f}"]
            np.testing.assert_allclose(x, hom.figures["perturbation_sizes"])
            np.testing.assert_allclose(y, v.figures["Ed_persistent_changes"][kind])


# -- D8 ---------------------------------------------------------------------------------------


def test_d8_logloss_gap_draws_every_family_from_its_verdict(monkeypatch, tmp_path, drawn):
    """Every family and control at n_seq = 200 (default 4000): one bar per design, its height the
    verdict's mean gap, blue where the hypotheses hold and red where they do not; the right panel
    the largest exact full-vs-pooled difference."""
    small = {"n_seq": 200, "n_future": 2}
    variants = [dict(small, family=fam) for fam in d8_figures.FAMILIES]
    replace_points(monkeypatch, "D8", "d8_logloss_gap", figures.verdict_points("D8", variants))
    paths = figures.render(["D8"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    fig = drawn["d8_logloss_gap"]
    rows = [Verdict.from_json(c) for c in fig.data]
    assert [r.params["family"] for r in rows] == list(d8_figures.FAMILIES)
    assert fig.meta["params"]["n_seq"] == 200
    gap, diff = fig.panels
    assert gap.xticklabels == diff.xticklabels == list(d8_figures.FAMILIES)
    blue, red = mcolors.to_hex("tab:blue"), mcolors.to_hex("tab:red")
    assert [h for h, _ in gap.bars] == pytest.approx([r.figures["gap_mean"] for r in rows])
    assert [c for _, c in gap.bars] == [blue if r.hypotheses_hold else red for r in rows]
    assert {True, False} <= {r.hypotheses_hold for r in rows}  # families and controls both drawn
    (x, y, _), *marks = diff.all_lines
    np.testing.assert_allclose(y, np.maximum([r.series["max_abs_diff"] for r in rows], 1e-17))
    assert len(marks) == len(rows) + 1  # a coloured mark per design, the tolerance line


# -- D9 ---------------------------------------------------------------------------------------

D9_SMALL = {
    "rhos": (0.0, 0.3, 0.6),
    "n_train": 64,
    "n_test": 128,
    "n_grad": 256,
    "seeds": 3,
    "n_grid": (32, 64, 128),
    "steps": 30,
}
"""A D9 instance for the figure: three correlations, three training sizes, three seeds."""


def test_d9_gate_vs_rho_draws_the_sweep_and_the_gate_decay(monkeypatch, tmp_path, drawn):
    """Both D9 checks on the small instance: the left panel the ρ = 0 check's gate sweep over ρ
    below its margin, the right the RMS learned gate against n for both."""
    monkeypatch.setattr(d9_figures, "PARAMS", D9_SMALL)
    variants = [dict(D9_SMALL, rho=rho) for rho, _, _ in d9_figures.RHO_CASES]
    replace_points(monkeypatch, "D9", "d9_gate_vs_rho", figures.verdict_points("D9", variants))
    paths = figures.render(["D9"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    fig = drawn["d9_gate_vs_rho"]
    r0, r1 = (Verdict.from_json(c) for c in fig.data)
    assert (r0.params["rho"], r1.params["rho"]) == (0.0, 0.6)
    assert list(fig.meta["params"]["n_grid"]) == list(D9_SMALL["n_grid"])
    left, right = fig.panels
    label = f"learned gate (n = {D9_SMALL['n_train']}, {D9_SMALL['seeds']} seeds)"
    x, y = left.errorbars[label]
    np.testing.assert_allclose(x, D9_SMALL["rhos"])
    np.testing.assert_allclose(y, r0.figures["sweep_gate_mean"])
    x, y = left.lines["trained on population risk"]
    np.testing.assert_allclose(x, D9_SMALL["rhos"])
    np.testing.assert_allclose(y, r0.figures["sweep_gate_population"])
    margin = r0.figures["margin_over_normG"]
    assert left.lines[f"D7 margin m(J)/‖G‖ = {margin:.2f}"][1] == pytest.approx([margin] * 2)
    assert max(r0.figures["sweep_gate_mean"]) < margin
    for v in (r0, r1):
        curves = [y for x, y, _ in right.all_lines if len(x) == len(D9_SMALL["n_grid"])]
        assert any(np.allclose(c, v.figures["learned_gate_rms_by_n"]) for c in curves)
    x, y = right.lines["n^(-1/2)"]
    np.testing.assert_allclose(x, D9_SMALL["n_grid"])
    np.testing.assert_allclose(y[0] / y[-1], np.sqrt(x[-1] / x[0]))


# -- F3 ---------------------------------------------------------------------------------------


def test_f3_error_vs_width_draws_the_checks_table(monkeypatch, tmp_path, drawn):
    """Widths 1, 2, 4 and 0, 30 steps (default six widths, four step counts): one curve per step
    count in each panel, its values the F3 verdict's KL and TV table."""
    widths, steps = (1, 2, 4), (0, 30)
    small = {"widths": widths, "steps": steps, "n_seeds": 2, "attn_seeds": 2, "n_test": 100,
             "n_train": 16}  # fmt: skip
    monkeypatch.setattr(f3_figures, "WIDTHS", widths)
    monkeypatch.setattr(f3_figures, "STEPS", steps)
    replace_points(monkeypatch, "F3", "f3_error_vs_width", figures.verdict_points("F3", [small]))
    paths = figures.render(["F3"], outdir=tmp_path, seed=SEED)
    assert_written(paths, drawn)
    fig = drawn["f3_error_vs_width"]
    res = Verdict.from_json(fig.data[0])
    assert fig.meta["params"]["widths"] == list(widths)
    table = res.figures["kl_width_table"]
    for ax, metric in zip(fig.panels, ("mean_kl", "max_tv")):
        assert ax.xticklabels == [str(w) for w in widths]
        for s in steps:
            x, y = ax.lines[f"{s} steps"]
            np.testing.assert_array_equal(x, widths)
            np.testing.assert_allclose(
                y, [table[f"width={w}"][f"steps={s}"][metric] for w in widths]
            )
    assert fig.panels[1].lines["threshold"][1][0] == res.params["tv_threshold"]
    assert fig.suptitle.startswith("F3: softmax MLP")


# -- F1 ---------------------------------------------------------------------------------------


def test_f1_integrator_work_draws_every_integrators_work(monkeypatch, tmp_path, drawn):
    """Two ε on a T×d = 4×2 problem (default seven ε on 16×4): one curve per integrator in each
    panel, its values the measured evaluations and CPU times; every integrator evaluated the right
    hand side, and more often at the smaller ε."""
    monkeypatch.setattr(f1_figures, "WORK_EPS", np.array([1e-2, 1e-1]))
    monkeypatch.setattr(f1_figures, "WORK_SIZE", {"T": 4, "P": 2, "d": 2, "L": 2})
    paths = draw_only(["f1_integrator_work"], tmp_path)
    assert_written(paths, drawn)
    fig = drawn["f1_integrator_work"]
    nfev, cpu = fig.panels
    assert len(fig.data) == 2
    for name in f1_figures.WORK_METHODS:
        x, y = nfev.lines[name]
        np.testing.assert_allclose(x, [1e-2, 1e-1])
        assert list(y) == [case["nfev"][name] for case in fig.data]
        assert y[0] >= y[1] > 0
        np.testing.assert_allclose(
            cpu.lines[name][1], [1e3 * c["cpu_seconds"][name] for c in fig.data]
        )
    assert "T×d = 4×2" in fig.suptitle
    assert fig.meta["params"]["eps"] == [1e-2, 1e-1]


# -- E1 ---------------------------------------------------------------------------------------


@pytest.fixture
def runs_not_cached(monkeypatch):
    """E1 as in a fresh checkout: the check, asked with training off, finds no run in the cache
    (its ``LookupError`` verdict), so the figures read the committed report; nothing trains."""
    calls = []

    class Missing:
        error = {"type": "LookupError", "message": "run not in the cache"}

    def decide(p, seed, *args, **kwargs):
        calls.append(dict(e1.TRAIN_MISSING))
        return Missing()

    monkeypatch.setattr(e1.CLAIM, "decide", decide)
    monkeypatch.delenv(e1_figures.TRAIN_ENV, raising=False)
    return calls


def committed_e1() -> dict:
    report = json.loads((Path(__file__).parents[1] / e1_figures.REPORT).read_text())
    return next(c for c in report["claims"] if c["id"] == "E1")


def test_e1_figures_are_drawn_from_the_committed_report(runs_not_cached, tmp_path, drawn):
    """``e1_neutrality`` and ``e1_shared_structure`` draw the report's verdicts (four panels:
    both endpoints' per-seed values and intervals, the planned power, the pilot), and
    ``e1_token_sweep`` its ``token_sweep`` rows, one interval per token count and endpoint."""
    names = ["e1_neutrality", "e1_token_sweep", "e1_shared_structure"]
    paths = draw_only(names, tmp_path)
    assert_written(paths, drawn)
    assert runs_not_cached and all(c["on"] is False for c in runs_not_cached)
    entry = committed_e1()
    (paper,) = drawn["e1_neutrality"].data
    assert paper in entry["verdicts"]
    (control,) = drawn["e1_shared_structure"].data
    assert control in entry["controls"]
    for name, v in (("e1_neutrality", paper), ("e1_shared_structure", control)):
        fig, f = drawn[name], v["figures"]
        assert len(fig.panels) == 4 and fig.suptitle.startswith(f"E1 {v['verdict']}")
        gap, ablation, power, pilot = fig.panels
        np.testing.assert_allclose(gap.lines["test seeds"][1], f["gap_per_seed"])
        np.testing.assert_allclose(ablation.lines["test seeds"][1], f["gate_ablation_per_seed"])
        ci = f["gap_ci90"]
        x, y = gap.errorbars[f"90 % CI: {f['gap_decision']}"]
        assert y == pytest.approx([np.mean(ci)]) and x[0] > len(f["gap_per_seed"]) - 1
        assert power.title.startswith("(c) planned power")
        for key in ("gap", "gate_ablation"):
            sd = f[f"pilot_{key}_sd_high"]
            x, y = power.lines[f"{key.replace('_', ' ')} (σ_high = {sd:.4f})"]
            assert x[0] == 2 and np.all((0 <= y) & (y <= 1))
        np.testing.assert_allclose(pilot.lines["frozen"][1], f["pilot_values"]["frozen"])
        np.testing.assert_allclose(pilot.lines["coupled"][1], f["pilot_values"]["coupled"])
    sweep = drawn["e1_token_sweep"]
    rows = entry["figures"]["token_sweep"]
    assert [r["tokens"] for r in rows] == list(e1.SWEEP_TOKENS) == sweep.meta["params"]["tokens"]
    assert sweep.data == rows
    for ax, key in zip(sweep.panels, ("gap", "gate_ablation")):
        segments = [(x, y) for x, y, line in ax.all_lines if x.size == 2 and x[0] == x[1]]
        assert [list(y) for _, y in segments] == [r[f"{key}_ci90"] for r in rows]
        assert [x[0] for x, _ in segments] == [r["tokens_per_run"] for r in rows]
        for r in rows:
            assert f"{r['tokens'] // 1000}k {r[f'{key}_decision']}" in ax.title
    assert all(f"{r['tokens'] // 1000}k {r['verdict']}" in sweep.suptitle for r in rows)


# -- the registry's default sweep ---------------------------------------------------------------


def seed_echo(seed: int) -> dict:
    """A figure's computation that returns its point."""
    return {"seed": seed}


def test_a_figure_registered_without_points_is_drawn_from_one_point_its_seed(
    monkeypatch, tmp_path, drawn
):
    """:func:`figures.single_point`, the default sweep of :func:`figures.figure`: the figure's
    data is one computation at the root seed."""
    figures.available()
    monkeypatch.setitem(figures.FIGURES, "A1", list(figures.FIGURES["A1"]))  # restored after

    @figures.figure("A1", "x_one_point", compute=seed_echo, no_system="a test figure")
    def one_point(data, seed):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot([0, 1], [data[0]["seed"]] * 2, label="seed")
        return fig, {"n_points": len(data)}

    assert figures.registered("x_one_point").points(7) == [{"seed": 7}]
    paths = draw_only(["x_one_point"], tmp_path, seed=7)
    assert_written(paths, drawn, seed=7)
    fig = drawn["x_one_point"]
    assert fig.data == [{"seed": 7}] and fig.meta["params"] == {"n_points": 1}
    assert list(fig.panels[0].lines["seed"][1]) == [7, 7]


def test_f1_integrator_work_times_each_integrator_after_its_first_call(monkeypatch):
    """The CPU-time panel shows the work of integrating, not a process's one-time cost (Numba
    compiling or loading its cache on an integrator's first call, up to 60× the run): each
    integrator is called once untimed, then timed. Here a first call that burns 0.3 s of CPU."""
    import time

    calls: dict = {}

    def fake(kind):
        def run(model, X0, eps, *, method, **kw):
            calls[(kind, method)] = calls.get((kind, method), 0) + 1
            if calls[(kind, method)] == 1:
                t0 = time.process_time()
                while time.process_time() - t0 < 0.3:
                    pass
            return type("R", (), {"nfev": 7})()

        return run

    monkeypatch.setattr(f1_figures, "integrate_coupling", fake("numba"))
    monkeypatch.setattr(f1_figures, "integrate_coupling_scipy", fake("scipy"))
    out = f1_figures.integrator_work(
        {**f1_figures.get_claim("F1").defaults(), "T": 4, "P": 2, "d": 2, "L": 2},
        0,
        0.1,
        rtol=1e-6,
        atol=1e-9,
    )
    assert set(calls.values()) == {2} and len(calls) == len(f1_figures.WORK_METHODS)
    assert all(t < 0.1 for t in out["cpu_seconds"].values()), out
    assert set(out["nfev"].values()) == {7}
