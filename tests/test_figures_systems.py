"""Figures for your own systems (issue 30, item 1) and the figures' faults the issue names.

Every figure of a claim that checks a kind of user system is drawn for a small system of that
kind (a ``DepthFlow`` with a user boolean mask, a 3-state ``GeneratorFamily``, a ``LinearLoop``)
through :func:`figures.render` (``fastslow figures ID --system FILE.py:NAME``): no exception, the
title and the metadata name the system, its mask and its seed, and no panel is empty (every Axes
holds an artist with data). ``fastslow figures --system`` faults end in one line and exit 2 before
any work. The E1 figures never train unless asked (issue 28). The F1 figures of a user flow take
about a minute on two shared cores: the thorough profile draws them all, the default profile the
two drawn from the verdict.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import sympy as sp
from matplotlib.collections import Collection
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from PIL import Image

from fastslow import figures
from fastslow.cli import main
from fastslow.figures import e1 as e1_figures
from fastslow.toy import DepthFlow, GeneratorFamily, LinearLoop
from fastslow.verify.checks import e1
from fastslow.verify.claim import Claim, describe_system
from fastslow.verify.registry import claims_for, get_claim
from fastslow.verify.verdict import Verdict

SEED = 3
"""The check seed of every figure here (a DepthFlow's own weights' seed is 7)."""

SYSTEMS_FILE = textwrap.dedent(
    """
    import numpy as np
    import sympy as sp
    from fastslow.toy import DepthFlow, GeneratorFamily, LinearLoop

    mask = np.zeros((4, 4), dtype=bool)
    mask[:2, :2] = np.tril(np.ones((2, 2), dtype=bool))
    mask[2:, 2:] = True
    flow = DepthFlow(mask=mask, P=2, d=2, L=2, gamma=1.0, seed=7, name="my flow")
    y, t = sp.Symbol("y"), sp.Symbol("t")
    x = sp.symbols("x0:3")
    Q = sp.Matrix([[-1 - y**2, 1, 1], [1, -2, 1], [y**2, 1, -2]])
    chain = GeneratorFamily(Q, -y + x[0], y=y, x=x, t=t, name="my chain")
    rng = np.random.default_rng(3)
    loop = LinearLoop(
        0.5 * np.eye(4) + 0.05 * rng.standard_normal((4, 4)),
        rng.standard_normal((4, 4)),
        name="my loop",
    )

    class BrokenLoop(LinearLoop):
        def describe(self):
            raise RuntimeError("no description")

    broken = BrokenLoop(0.5 * np.eye(2), np.eye(2), name="broken")
    """
)


def user_mask() -> np.ndarray:
    """A block-local 4×4 mask that is no named mask: a causal block, then a bidirectional one."""
    m = np.zeros((4, 4), dtype=bool)
    m[:2, :2] = np.tril(np.ones((2, 2), dtype=bool))
    m[2:, 2:] = True
    return m


def flow() -> DepthFlow:
    return DepthFlow(mask=user_mask(), P=2, d=2, L=2, gamma=1.0, seed=7, name="my flow")


def chain() -> GeneratorFamily:
    y, t = sp.Symbol("y"), sp.Symbol("t")
    x = sp.symbols("x0:3")
    Q = sp.Matrix([[-1 - y**2, 1, 1], [1, -2, 1], [y**2, 1, -2]])
    return GeneratorFamily(Q, -y + x[0], y=y, x=x, t=t, name="my chain")


def loop() -> LinearLoop:
    rng = np.random.default_rng(3)
    return LinearLoop(
        0.5 * np.eye(4) + 0.05 * rng.standard_normal((4, 4)),
        rng.standard_normal((4, 4)),
        name="my loop",
    )


SYSTEMS = {"DepthFlow": flow, "GeneratorFamily": chain, "LinearLoop": loop}

EXPECTED_LABEL = {
    "DepthFlow": ("'my flow'", "user mask 4×4", "seed 7", f"check seed {SEED}"),
    "GeneratorFamily": ("'my chain'", "3 states", f"seed {SEED}"),
    "LinearLoop": ("'my loop'", "n=4", f"seed {SEED}"),
}
"""What the suptitle of a figure for each system must say: name, mask or size, seed."""

SLOW_CLAIMS = {"F1"}
"""Claims whose figures for a user system take more than 10 s (thorough profile)."""


def has_data(ax) -> bool:
    """Whether ``ax`` holds an artist with data: a line with a point, a non-empty collection
    (scatter, fill, colour bar), or an image."""
    for artist in ax.get_children():
        if isinstance(artist, Line2D) and len(artist.get_xdata()) > 0:
            return True
        if isinstance(artist, AxesImage) and artist.get_array() is not None:
            return True
        if isinstance(artist, Collection) and (
            len(artist.get_offsets()) > 0 or len(artist.get_paths()) > 0
        ):
            return True
    return False


@pytest.fixture
def drawn(monkeypatch):
    """Every figure :func:`figures.save` writes in a test, as ``(name, figure, metadata)``, with
    its text read before it is closed."""
    out: list = []
    save = figures.save

    def keep(fig, outdir, name, meta):
        texts = [fig._suptitle.get_text() if fig._suptitle is not None else ""]
        texts += [ax.get_title() for ax in fig.axes]
        out.append((name, [has_data(ax) for ax in fig.axes], texts, meta))
        return save(fig, outdir, name, meta)

    monkeypatch.setattr(figures.rendering, "save", keep)  # where draw() looks it up
    return out


def cases(slow: bool):
    """(claim, kind) for every claim that checks a kind of system and has a figure for it."""
    figures.available()
    out = []
    for kind, make in SYSTEMS.items():
        for cid in claims_for(make()):
            if any(sp.system_points is not None for sp in figures.FIGURES.get(cid, [])):
                if (cid in SLOW_CLAIMS) == slow:
                    out.append((cid, kind))
    return out


def assert_drawn_for(system_kind: str, drawn: list, paths: list, names: list) -> None:
    assert sorted({n for n, *_ in drawn}) == sorted(names)
    assert len(paths) == 2 * len(names)
    for name, data, texts, meta in drawn:
        assert data and all(data), f"{name}: an empty panel ({data})"
        title = texts[0].replace("\n", " ")  # wrapped to the figure's width
        for piece in EXPECTED_LABEL[system_kind]:
            assert piece in title, (name, title)
        assert meta["system"]["kind"] == system_kind
        assert meta["system_label"] in title
        assert "block_bidirectional" not in json.dumps(meta) + " ".join(texts), name
    for p in paths:
        if p.suffix == ".png":
            desc = json.loads(Image.open(p).text["Description"])
            assert desc["system"]["name"] == meta["system"]["name"]
            assert desc["seed"] == SEED


def render_for(cid: str, kind: str, tmp_path: Path, drawn: list):
    names = [
        sp.name for sp in figures.FIGURES[cid] if sp.system_points is not None
    ]  # every figure of the claim with a form for a system
    paths = figures.render([cid], outdir=tmp_path, seed=SEED, system=SYSTEMS[kind]())
    assert_drawn_for(kind, drawn, paths, names)


@pytest.mark.parametrize("cid, kind", cases(slow=False))
def test_figures_are_drawn_for_a_user_system(cid, kind, tmp_path, drawn):
    render_for(cid, kind, tmp_path, drawn)


@pytest.mark.slow
@pytest.mark.parametrize("cid, kind", cases(slow=True))
def test_slow_figures_are_drawn_for_a_user_system(cid, kind, tmp_path, drawn, request):
    if not request.config.thorough:
        pytest.skip("thorough profile only (--thorough): about a minute on two cores")
    render_for(cid, kind, tmp_path, drawn)


def stub_f1_verdict(claim, params, seed, system=None, **kwargs):
    """A stand-in F1 verdict on ``system`` with the series the F1 figures draw (an error ladder
    with slopes 1 and 2, a depth trajectory): the draw functions' logic without the check's work
    (about 9 s of CPU on the smallest flow; the real one is drawn in the thorough profile)."""
    eps = np.geomspace(1e-5, 1e-1, 9)
    fit = {"slope": 1.0, "ci95": [0.9, 1.1], "window": [1e-3, 1e-5], "converged": True}
    t = np.linspace(0.0, 1.0, 20)
    ladder = {
        "eps": eps.tolist(),
        "err_leading": (0.3 * eps).tolist(),
        "err_first": (0.3 * eps**2).tolist(),
        "fit_leading": fit,
        "fit_first_order": dict(fit, slope=2.0, ci95=[1.9, 2.1]),
    }
    depth = {
        "eps": 1e-2,
        "t": t.tolist(),
        "dev": np.exp(-t / 1e-2 - 1).tolist(),
        "first_order_level": 1e-3,
        "breaks": [0.5],
        "block_means": [t.tolist(), (1 - t).tolist()],
        "reduced": [t.tolist(), (1 - t).tolist()],
    }
    params = {**get_claim("F1").defaults(), **params}
    shown = {k: v for k, v in params.items() if k not in get_claim("F1").replaced_by(system)}
    return Verdict(
        "F1", "holds", {}, {}, {}, shown, seed,
        series={"error_ladder": ladder, "depth_trajectory": depth},
        system=describe_system(system),
    )  # fmt: skip


def test_f1_verdict_figures_of_a_user_mask_name_it_and_have_no_empty_panel(monkeypatch):
    """The issue's ``f1_error_vs_eps``: titled "block_bidirectional" with two empty panels for a
    user mask. Drawn from stand-in verdicts on a user flow, one per coarse map."""
    monkeypatch.setattr(figures.registry, "run_check", stub_f1_verdict)  # verdict_json's
    f1_verdict_figures()


@pytest.mark.slow
def test_f1_verdict_figures_of_a_user_mask_from_the_real_check(request):
    if not request.config.thorough:
        pytest.skip("thorough profile only (--thorough): about 9 s of CPU")
    f1_verdict_figures()


def f1_verdict_figures():
    """``f1_error_vs_eps`` and ``f1_depth_trajectory`` of a user flow, drawn from its verdicts:
    one panel per coarse map, all with data, titled with the flow's name, mask and seed."""
    system = flow()
    desc = describe_system(system)
    specs, _ = figures.system_figures(["F1"], system)
    done: dict = {}
    for spec in specs:
        if spec.name == "f1_integrator_work":
            continue  # a measurement of the integrators (thorough profile, above)
        data = []
        for pt in spec.system_points(SEED, system):
            key = json.dumps(pt["params"], sort_keys=True)
            if key not in done:
                done[key] = figures.system_point(spec.name, pt)
            data.append(done[key])
        fig, meta = figures.build(spec.name, data, SEED, desc)
        try:
            assert all(has_data(ax) for ax in fig.axes), spec.name
            text = fig._suptitle.get_text().replace("\n", " ") + " ".join(
                ax.get_title() for ax in fig.axes
            )
            assert "user mask 4×4" in text and "seed 7" in text and "'my flow'" in text
            assert "block_bidirectional" not in text + json.dumps(meta["params"])
            if spec.name == "f1_error_vs_eps":  # one panel per coarse map of the flow
                coarse = [d["params"]["coarse"] for d in data]
                assert len(fig.axes) == len(coarse) == 2
                assert all(f"coarse map {c!r}" in ax.get_title() for c, ax in zip(coarse, fig.axes))
            else:  # the built-in mask's eigenvalue is not claimed for a user mask
                assert meta["params"]["mask"] == "user mask 4×4"
                legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
                texts = [x.get_text() for lg in legends for x in lg.get_texts()]
                assert texts and not any("λ₂ = 0" in x for x in texts), texts
        finally:
            plt.close(fig)


def test_f2_figures_of_the_built_in_chain_draw(tmp_path, drawn):
    """``f2_tracking_error`` raised ``KeyError: 'intercept'`` (the verdict carries the slope and
    its window, not the intercept) even on the default chain; the line is fitted on the window."""
    paths = figures.render(["F2"], outdir=tmp_path, seed=0)
    assert len(paths) == 4
    assert all(all(data) for _, data, _, _ in drawn)
    assert any("3-state chain" in t for _, _, texts, _ in drawn for t in texts)


def test_window_intercept_is_the_least_squares_line_of_the_window():
    eps = np.geomspace(1e-3, 1e-1, 7)
    err = 3.0 * eps**2
    err[-1] *= 10  # outside the window: ignored
    fit = {"slope": 2.0, "window": [eps[-2], eps[0]]}
    from fastslow.figures.f2 import window_intercept

    assert window_intercept(eps, err, fit) == pytest.approx(np.log(3.0), rel=1e-12)


def test_a_verdict_of_a_user_flow_names_the_flows_seed(tmp_path, drawn):
    """``draw_verdict`` of a verdict on ``DepthFlow(seed=7)`` checked at seed 3: the title says
    seed 7 (the flow's) and check seed 3, never "seed 0"."""
    v = get_claim("D3").check({}, SEED, system=flow())
    figures.draw_verdict("d3_frozen_kernel", v, tmp_path)
    ((_, data, texts, meta),) = drawn
    title = texts[0].replace("\n", " ")
    assert all(data) and "seed 7, check seed 3" in title and "seed 0" not in title
    assert meta["system"]["seed"] == 7 and meta["seed"] == SEED


def test_draw_verdict_refuses_a_figure_not_drawn_from_one_verdict(tmp_path):
    v = get_claim("D1").check({}, SEED, system=flow())
    with pytest.raises(ValueError, match="not drawn from one verdict"):
        figures.draw_verdict("d1_product_order", v, tmp_path)


def test_a_figure_without_a_form_for_systems_is_skipped_with_its_reason(monkeypatch, tmp_path):
    figures.available()
    (spec,) = [sp for sp in figures.FIGURES["D7"] if sp.name == "d7_gate_spectral_radius"]
    extra = figures.FigureSpec("D7", "d7_built_in_only", spec.draw, spec.compute, spec.points,
                               None, "a built-in ladder")  # fmt: skip
    monkeypatch.setitem(figures.FIGURES, "D7", [spec, extra])
    specs, skipped = figures.system_figures(["D7"], loop())
    assert [s.name for s in specs] == ["d7_gate_spectral_radius"]
    assert skipped == [("d7_built_in_only", "a built-in ladder")]
    monkeypatch.setitem(figures.FIGURES, "D7", [extra])
    with pytest.raises(ValueError, match="no figure of D7 can be drawn for a LinearLoop"):
        figures.system_figures(["D7"], loop())


def test_registering_a_figure_of_a_system_claim_needs_a_system_form_or_a_reason():
    with pytest.raises(TypeError, match="give system_points or no_system"):
        figures.figure("D7", "d7_no_form", compute=figures.verdict_json)(lambda data, seed: None)


# -- fastslow figures --system: the command line ----------------------------------------------


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def systems_file(tmp_path) -> Path:
    f = tmp_path / "mine.py"
    f.write_text(SYSTEMS_FILE)
    return f


def test_cli_draws_the_figures_of_a_user_system(systems_file, tmp_path, capsys, drawn):
    out = tmp_path / "out"
    argv = ["figures", "D7", "--system", f"{systems_file}:loop", "--out", str(out)]
    assert main([*argv, "--seed", str(SEED)]) == 0
    printed = capsys.readouterr().out.split()
    assert sorted(Path(p).name for p in printed) == [
        "d7_gate_spectral_radius.pdf",
        "d7_gate_spectral_radius.png",
    ]
    assert_drawn_for("LinearLoop", drawn, [Path(p) for p in printed], ["d7_gate_spectral_radius"])


BAD = [
    (["F2", "--system", "{file}:flow"], "F2 cannot be checked on a DepthFlow"),
    (["A1", "--system", "{file}:loop"], "A1 cannot be checked on a LinearLoop"),
    (["D7", "--system", "{file}:broken"], "describe() raised RuntimeError: no description"),
    (["D7", "--system", "{file}:nothing"], "defines no 'nothing'"),
    (["D7", "--system", "{file}:loop", "--cache", "{tmp}/c"], "--cache and --scheduler"),
    (["D7", "--system", "{file}"], "--system expects FILE.py:NAME"),
]


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_figures_system_faults_are_one_line_and_exit_2_before_any_work(
    argv, message, systems_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(Claim, "decide", lambda *a, **k: pytest.fail("work started"))
    argv = [a.format(file=systems_file, tmp=tmp_path) for a in argv]
    assert main(["figures", *argv, "--out", str(tmp_path / "out")]) == 2
    assert message in one_line(capsys.readouterr().err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_figures_of_a_claim_without_a_form_for_the_system_are_bad_input(
    systems_file, tmp_path, capsys, monkeypatch
):
    """D4's figure is a ladder of built-in sizes: whether or not D4 checks a DepthFlow, asking
    for it on one is one line and exit 2, before any work."""
    monkeypatch.setattr(Claim, "decide", lambda *a, **k: pytest.fail("work started"))
    argv = ["figures", "D4", "--system", f"{systems_file}:flow", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "D4" in one_line(capsys.readouterr().err)


# -- E1: never trained silently (issue 28) ----------------------------------------------------


def test_e1_figures_never_train_without_being_asked(monkeypatch):
    """Runs missing from the cache and the report: the E1 figure does not train (the check is
    asked with training off) and the error says how to get the runs."""
    calls = []

    def decide(p, seed, *a, **k):
        calls.append(dict(e1.TRAIN_MISSING))
        return _lookup_error(seed)

    monkeypatch.setattr(e1.CLAIM, "decide", decide)
    monkeypatch.setattr(e1_figures, "from_report", lambda p, seed: None)
    monkeypatch.delenv(e1_figures.TRAIN_ENV, raising=False)
    with pytest.raises(RuntimeError, match=f"set {e1_figures.TRAIN_ENV}=1 to train them"):
        e1_figures.e1_verdict(0, {})
    assert calls == [{"on": False, "progress": None}]
    assert e1.TRAIN_MISSING["on"] is True  # restored for the check itself


def test_e1_figures_prefer_the_committed_report_and_train_only_when_asked(monkeypatch):
    calls = []

    def decide(p, seed, *a, **k):
        calls.append(dict(e1.TRAIN_MISSING))
        return _lookup_error(seed)

    monkeypatch.setattr(e1.CLAIM, "decide", decide)
    monkeypatch.setattr(e1_figures, "from_report", lambda p, seed: {"from": "report"})
    assert e1_figures.e1_verdict(0, {}) == {"from": "report"}
    assert calls == [{"on": False, "progress": None}]
    calls.clear()
    monkeypatch.setattr(e1_figures, "from_report", lambda p, seed: None)
    monkeypatch.setenv(e1_figures.TRAIN_ENV, "1")
    e1_figures.e1_verdict(0, {})
    # asked: the second decide trains, with its progress shown
    assert calls == [{"on": False, "progress": None}, {"on": True, "progress": True}]


def _lookup_error(seed: int):
    """A stand-in E1 verdict whose runs are not in the cache."""

    class Stub:
        error = {"type": "LookupError", "message": "run not in the cache"}

        def to_json(self):
            return {"id": "E1", "seed": seed}

    return Stub()


def _boom(*args, **kwargs):
    raise FloatingPointError("overflow in the stub")


@pytest.mark.parametrize("part", ["compute", "draw"])
def test_a_figure_that_fails_on_a_valid_system_is_an_error_in_one_line(
    part, systems_file, tmp_path, capsys, monkeypatch
):
    """A check or a drawing that raises on a valid system: exit 3 (error), one line naming the
    figure, no traceback."""
    figures.available()
    (spec,) = figures.FIGURES["D7"]
    monkeypatch.setitem(figures.FIGURES, "D7", [dataclasses.replace(spec, **{part: _boom})])
    argv = ["figures", "D7", "--system", f"{systems_file}:loop", "--out", str(tmp_path)]
    assert main(argv) == 3
    line = one_line(capsys.readouterr().err)
    assert "d7_gate_spectral_radius" in line and "FloatingPointError: overflow in the stub" in line


BLOW_UP = """
import sympy as sp
from fastslow.toy import GeneratorFamily
y, t = sp.symbols("y t", real=True)
x = sp.symbols("x0:2")
family = GeneratorFamily(sp.Matrix([[-(1 + y**2), 1], [1 + y**2, -1]]), y**2, y, x, t, name="y²")
"""


def test_figures_of_a_system_outside_the_hypotheses_say_so_with_its_exit_code(tmp_path, capsys):
    """F2's figures of a family whose reduced solution leaves the grid (y' = y²): the check is
    outside its hypotheses and computed no tracking errors, so the figures are not drawn; one line
    naming the hypothesis, exit 4 (the verdict's code), never a drawing's KeyError as exit 3."""
    path = tmp_path / "blow.py"
    path.write_text(BLOW_UP)
    argv = ["figures", "F2", "--system", f"{path}:family", "--out", str(tmp_path / "out")]
    assert main(argv) == 4
    line = one_line(capsys.readouterr().err)
    assert "outside the claim's hypotheses" in line and "reduced_solution_inside_grid" in line
    assert "KeyError" not in line
