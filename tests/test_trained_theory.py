"""The theory's predictions on trained networks (:mod:`verify.trained_theory`,
:mod:`verify.trained_section`) and their figure.

* On a small network trained by the suite (seconds, its own run cache): D6t holds on the frozen
  arm (gates 0: the response to the trained weight change is persistent and Q, K, Qs, Ks are
  invisible), and is outside ``gates_closed`` on the coupled arm; D7t is outside
  ``injection_positive`` (γ = 0) and certifies ``m⁺`` at the RMS norm's ε level; D5t decides.
* The shuffled-block control corpus has no cross-block structure by D9t's rule; E1's text has.
* The figure ``e1_trained_theory`` and the REPORT.md section regenerate from the committed
  ``docs/report/trained_short.json`` without training (training raises in this test).
"""

from __future__ import annotations

import numpy as np
import pytest

from fastslow import figures
from fastslow.numerics.lm import train as lm_train
from fastslow.verify import trained_section, trained_theory
from fastslow.verify.trained import train_small


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    cache = tmp_path_factory.mktemp("lm")
    kw = dict(T=16, P=4, d=4, m=8, L=2, tokens=4_000, fast_mask="causal", cache_dir=cache)
    return {arm: train_small(arm=arm, **kw) for arm in ("coupled", "frozen")}


def test_d6_the_trained_weight_change_acts_on_the_persistent_side(nets):
    v = trained_theory.TrainedD6().check(system=nets["frozen"])
    assert v.outcome == "holds", v.reason()
    assert v.figures["decaying_share_of_response"] <= trained_theory.D6_TOL
    assert 0 < v.figures["invisible_share_of_weight_change"] < 1
    coupled = trained_theory.TrainedD6().check(system=nets["coupled"])
    assert coupled.outcome == "outside-hypotheses"
    assert coupled.violated == ["gates_closed"]


def test_d7_a_normed_stack_without_injection_is_outside_the_margin_statement(nets):
    v = trained_theory.TrainedD7().check(system=nets["coupled"])
    assert v.outcome == "outside-hypotheses"
    assert v.violated == ["injection_positive"]
    # J·X = X up to the RMS norm's ε: the distance to instability is certified tiny
    assert max(v.figures["m_upper"]) < 1e-3
    assert all(g > 0 for g in v.figures["G_lower"])


def test_d5_decides_saturation_on_the_frozen_arm(nets):
    v = trained_theory.TrainedD5().check(system=nets["frozen"])
    assert v.hypotheses["gates_closed"].holds
    assert v.outcome in ("holds", "outside-hypotheses")
    assert len(v.figures["r"]) == 2


def test_the_shuffled_block_control_has_no_cross_block_structure():
    P = 16
    shuffled = trained_theory.structure(trained_theory.corpus_named("shuffled", P), P, 0)
    pydoc = trained_theory.structure(trained_theory.corpus_named("pydoc", P), P, 0)
    rule = trained_theory.STRUCTURE_SDS
    assert abs(shuffled["mi_excess_bits"]) <= rule * shuffled["mi_shuffled_sd"]
    assert abs(pydoc["mi_excess_bits"]) > rule * pydoc["mi_shuffled_sd"]


@pytest.fixture
def no_training(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a figure or report section trained a network")

    monkeypatch.setattr(lm_train, "train", refuse)


@pytest.mark.parametrize(
    "name,profile", [("e1_trained_theory", "short"), ("e1_trained_theory_paper", "paper")]
)
def test_the_figure_regenerates_from_the_committed_section(tmp_path, no_training, name, profile):
    data = [figures.figure_data(name, {"profile": profile})]
    paths = figures.draw(name, data, tmp_path)
    assert all(p.stat().st_size > 0 for p in paths)


def test_the_report_section_renders_from_the_committed_section(no_training):
    section = trained_section.load("short")
    lines = trained_section.markdown(section)
    assert any(line.startswith("| D7t | coupled |") for line in lines)
    assert sum(line.startswith("| shuffled |") for line in lines) == len(section["tokens"])
    outcomes = {r["D6t"]["verdict"] for r in section["networks"] if r["arm"] == "frozen"}
    assert outcomes <= {"holds", "outside-hypotheses", "undecided", "fails"}


def test_a_missing_section_names_the_command(tmp_path):
    with pytest.raises(ValueError, match="fastslow trained-report --profile paper"):
        trained_section.load("paper", tmp_path)
    assert np.isfinite(trained_theory.TAU)


def test_a_measured_range_in_the_section_is_its_least_and_largest_value():
    """The section's ranges: missing values left out, one value once, none as a dash."""
    assert trained_section._range([2.0, None, 0.5, 1.0]) == "0.5 – 2"
    assert trained_section._range([3.0, 3.0]) == "3"
    assert trained_section._range([None]) == "—"


def test_a_token_count_whose_learning_rate_selection_is_not_cached_is_listed_missing(monkeypatch):
    """``missing_runs`` names the learning-rate selection of a count that has none cached (E1's
    run spec raises ValueError there) and goes on to the next count."""

    def spec(arm, seed, tokens, *args):
        if tokens == 150:
            raise ValueError("no learning-rate selection cached")
        return ("spec", arm, seed, tokens), "corpus"

    monkeypatch.setattr(trained_section, "e1_run_spec", spec)
    monkeypatch.setattr(trained_section, "run_spec", lambda *a: (("spec", *a), "corpus"))
    from fastslow.numerics.lm import train as lm_train

    monkeypatch.setattr(lm_train, "cached", lambda spec, corpus: spec[3] != 50)
    prof = {"tokens": (50, 150), "seeds": (0,), "d9_seeds": (), "control_seeds": ()}
    missing = trained_section.missing_runs(prof, "short")
    assert missing[-1] == "the learning-rate selection for 150 tokens"
    assert missing[:-1] == [f"E1 {arm} seed 0 at 50 tokens" for arm in trained_section.ARMS]


def test_the_section_never_trains_unless_asked(monkeypatch):
    """``compute`` without ``train=True`` refuses a section with a run missing from the cache
    (bad input naming the first one and how to train it) before any work."""
    from fastslow.numerics.lm import train as lm_train

    monkeypatch.setattr(trained_section, "missing_runs", lambda prof, profile: ["E1 dense seed 0"])
    monkeypatch.setattr(lm_train, "train", lambda *a, **k: pytest.fail("trained without asking"))
    with pytest.raises(ValueError, match=r"first: E1 dense seed 0\); train them with fastslow"):
        trained_section.compute("short")


def test_each_d9_text_is_checked_on_its_own_seeds(monkeypatch):
    """The section's D9 rows: E1's text on ``d9_seeds``, the shuffled control on
    ``control_seeds`` (given apart here, so a swap shows)."""
    from types import SimpleNamespace

    calls = []

    class Recorded:
        def check(self, params):
            calls.append(params)
            return SimpleNamespace(to_json=lambda: {})

    monkeypatch.setattr(trained_section, "TrainedD9", Recorded)
    monkeypatch.setattr(trained_section, "UNITS", ())
    monkeypatch.setattr(trained_section, "network", lambda *a: SimpleNamespace(gates=[]))
    trained_section.compute(
        "short", train=True, tokens=[50], seeds=[0], d9_seeds=[1, 2, 3], control_seeds=[4, 5, 6]
    )
    assert {c["corpus"]: c["seeds"] for c in calls} == {"pydoc": (1, 2, 3), "shuffled": (4, 5, 6)}


def _synthetic_runs(cost, frozen_losses):
    """A ``run_result`` stand-in: coupled runs whose held-out loss rises by ``cost[s]`` when their
    gates are zeroed, frozen runs with held-out losses ``frozen_losses[s]``."""

    def run_result(corpus_name, kind, seed, tokens, profile):
        if kind == "coupled":
            return {
                "heldout_loss": 2.0,
                "heldout_loss_gates_zeroed": 2.0 + cost[seed],
                "gates": [0.01],
            }
        return {"heldout_loss": frozen_losses[seed]}

    return run_result


def test_d9t_decides_the_cost_of_zeroing_the_gates_by_tost_against_the_frozen_spread(monkeypatch):
    """D9t on the shuffled-block control (no cross-block structure: its hypothesis holds) with
    synthetic runs in place of the cached ones: the 90 % t-interval of the paired cost of zeroing
    the gates (mean ± t₀.₉₅,₄·s/√5, from SciPy's t quantile) against Δ = SD of the frozen runs'
    losses; inside ±Δ the gates are closed (holds), wholly above Δ they are not (fails, decided)."""
    from scipy import stats

    frozen = [2.00, 2.05, 1.95, 2.02, 1.98]
    margin = float(np.std(frozen, ddof=1))
    params = {"corpus": "shuffled", "tokens": 2000, "profile": "short", "seeds": (0, 1, 2, 3, 4)}
    for cost, outcome in (
        ([0.001, -0.002, 0.0005, 0.0015, -0.001], "holds"),
        ([0.30, 0.31, 0.29, 0.305, 0.295], "fails"),
    ):
        monkeypatch.setattr(trained_section, "run_result", _synthetic_runs(cost, frozen))
        v = trained_section.TrainedD9().check(params)
        assert v.outcome == outcome, v.reason()
        assert v.hypotheses["no_cross_block_structure"].holds
        half = stats.t.ppf(0.95, 4) * np.std(cost, ddof=1) / np.sqrt(5)
        ci = v.figures["cost_ci90"]
        assert np.allclose(ci, [np.mean(cost) - half, np.mean(cost) + half], rtol=1e-12)
        assert v.figures["margin_delta"] == pytest.approx(margin, rel=1e-12)
        assert (-margin < ci[0] and ci[1] < margin) == (outcome == "holds")
    with pytest.raises(ValueError, match="at least 3 runs"):
        trained_section.TrainedD9().check({**params, "seeds": (0, 1)})


@pytest.mark.parametrize(
    "unit", [trained_theory.TrainedD5, trained_theory.TrainedD6, trained_theory.TrainedD7]
)
def test_a_trained_prediction_without_trained_weights_says_what_to_give(unit):
    """D5t, D6t and D7t have no instance of their own (``_OnTrained.build``): checked without a
    system they compute nothing and the verdict says to give a TrainedStack."""
    v = unit().check({})
    assert v.outcome == "error" and not v.conclusion
    assert f"{unit.id} is checked on trained weights: give a TrainedStack" in v.reason()


def test_a_run_of_the_section_is_read_from_the_cache_and_trained_only_when_asked(
    tmp_path, monkeypatch
):
    """``run_result`` and ``network`` on an empty run cache: without ``TRAIN`` a missing run (here
    the shuffled control's coupled seed 3, E1's text's network) is a ValueError naming it, the
    cache and how to train it, and nothing is written; a cached run is ``lm_train.run`` of the
    run's own spec on its own corpus, and ``TRAIN`` is what lets a missing one train."""
    monkeypatch.setenv(lm_train.CACHE_ENV, str(tmp_path))
    with pytest.raises(ValueError, match="fastslow trained-report --profile short --train") as e:
        trained_section.run_result("shuffled", "coupled", 3, 2000, "short")
    assert "run shuffled coupled seed 3 at 2000 tokens (short profile)" in str(e.value)
    assert str(tmp_path) in str(e.value)
    with pytest.raises(ValueError, match="not in the run cache"):
        trained_section.network("coupled", 3, 2000, "short")
    assert not any(tmp_path.iterdir())  # nothing trained, nothing written

    calls = []
    monkeypatch.setattr(lm_train, "run", lambda spec, corpus, **k: calls.append((spec, corpus, k)))
    monkeypatch.setattr(lm_train, "cached", lambda spec, corpus, cache_dir=None: True)
    trained_section.run_result("shuffled", "frozen", 4, 2000, "short")
    spec, corpus = trained_section.run_spec("shuffled", "frozen", 4, 2000, "short")
    assert calls == [(spec, corpus, {"train_missing": False})]
    assert spec.meta == {"label": "D9 control shuffled frozen seed 4 2000 tokens"}
    monkeypatch.setattr(lm_train, "cached", lambda spec, corpus, cache_dir=None: False)
    monkeypatch.setitem(trained_section.TRAIN, "on", True)
    trained_section.run_result("pydoc", "coupled", 0, 2000, "short")
    assert calls[-1][2] == {"train_missing": True}
    seen = []
    monkeypatch.setattr(
        trained_section.TrainedStack, "from_e1", lambda *a, **k: seen.append((a, k))
    )
    trained_section.network("dense", 1, 6000, "short")
    assert seen == [(("dense", 1, 6000, "short"), {"train": True})]
