"""Optimiser, schedule, clipping, the gate's noise band, and the training loop (numerics.lm).

Oracles: AdamW's first step in closed form (``θ₁ = θ₀ − η·g/(|g| + ε)`` plus decay); the
schedule's defining values; the noise band against ``√(Σ η_s²)``, the drift of a zero-mean
gradient under Adam; bit-for-bit equality of repeated, resumed and cached runs.
"""

import hashlib
import json
import math

import numpy as np
import pytest

from fastslow.numerics import threads
from fastslow.numerics.lm import corpus
from fastslow.numerics.lm import train as train_module
from fastslow.numerics.lm.optim import AdamW, Schedule, clip_scale, gate_noise_band, learning_rate
from fastslow.numerics.lm.params import LMConfig, gate_names
from fastslow.numerics.lm.train import RunSpec, cached, run, run_key, train, training_step
from fastslow.verify.sweep import local_executor, sweep


def test_adamw_first_step_in_closed_form():
    p = {"W": np.array([[1.0, -2.0], [0.5, 0.0]]), "g": np.array(0.3)}
    grads = {"W": np.array([[0.2, -0.1], [0.0, 3.0]]), "g": np.array(-0.05)}
    opt = AdamW(p, ["W", "g"], betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    W0 = p["W"].copy()
    opt.step(p, grads, lr=0.01)
    want = W0 - 0.01 * (grads["W"] / (np.abs(grads["W"]) + 1e-8) + 0.1 * W0)
    assert np.allclose(p["W"], want, rtol=0, atol=1e-15)
    assert abs(float(p["g"]) - (0.3 + 0.01 * 0.05 / (0.05 + 1e-8))) < 1e-15  # no decay on gates


def test_untrained_entries_never_move():
    p = {"W": np.ones((2, 2)), "0.g": np.array(0.0)}
    opt = AdamW(p, ["W"], weight_decay=0.5)
    for _ in range(3):
        opt.step(p, {"W": np.ones((2, 2)), "0.g": np.array(1.0)}, lr=0.1)
    assert float(p["0.g"]) == 0.0


def test_schedule_warms_up_then_decays_to_the_final_fraction():
    sch = Schedule(lr=1e-2, warmup=4, steps=21, final=0.1)
    r = sch.rates()
    assert np.allclose(r[:4], [2.5e-3, 5e-3, 7.5e-3, 1e-2])
    assert r[4] == pytest.approx(1e-2) and r[-1] == pytest.approx(1e-3)
    assert np.all(np.diff(r[4:]) <= 0)
    assert learning_rate(sch, 12) == pytest.approx(
        1e-3 + 0.9e-2 * 0.5 * (1 + math.cos(math.pi / 2))
    )


def test_clipping_scales_to_the_bound():
    g = {"a": np.array([3.0, 0.0]), "b": np.array(4.0)}
    assert clip_scale(g, ["a", "b"], 1.0) == (5.0, 0.2)
    assert clip_scale(g, ["a", "b"], 10.0) == (5.0, 1.0)


def test_noise_band_is_the_adam_random_walk():
    sch = Schedule(lr=3e-3, warmup=10, steps=200)
    band = gate_noise_band(sch, gates=4, alpha=0.01, sims=4000, seed=1)
    assert 0.8 < band["sd"] / band["sqrt_sum_lr2"] < 1.25
    assert band["band"] == pytest.approx(band["z"] * band["sd"])
    assert band["z"] == pytest.approx(3.023, abs=1e-3)  # two-sided normal quantile at 0.01/4
    # a gate whose gradients have zero mean stays inside, one with a consistent sign leaves it
    rng = np.random.default_rng(3)
    for mean, inside in ((0.0, True), (0.5, False)):
        p = {"g": np.array(0.0)}
        opt = AdamW(p, ["g"])
        for s in range(sch.steps):
            opt.step(p, {"g": np.array(mean + rng.standard_normal())}, learning_rate(sch, s))
        assert (abs(float(p["g"])) <= band["band"]) == inside


@pytest.fixture(scope="module")
def tiny_corpus():
    return corpus.pydoc_corpus()


def spec(kind="coupled", tokens=2400, seed=4, **kw):
    cfg = LMConfig(vocab=corpus.VOCAB, T=16, P=4, d=8, m=16, L=2, kind=kind)
    kw = {"batch": 4, "lr": 1e-2, "evals": 3, "eval_windows": 4, "eval_max": 8, **kw}
    return RunSpec(cfg, tokens, seed, **kw)


def same(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def strip(result):
    return {k: val for k, val in result.items() if k not in ("train_seconds", "seconds_per_token")}


def test_same_seed_same_run_bit_for_bit(tiny_corpus):
    a, pa = train(spec(), tiny_corpus)
    b, pb = train(spec(), tiny_corpus)
    assert same(strip(a), strip(b))
    assert all(np.array_equal(pa[k], pb[k]) for k in pa)
    c, _ = train(spec(seed=5), tiny_corpus)
    assert c["heldout_loss"] != a["heldout_loss"]
    assert len(a["history"]) == 3 and a["tokens"] == spec().steps * 4 * 16 >= 2400


def test_resumed_run_equals_the_uninterrupted_one(tiny_corpus, tmp_path):
    ckpt = tmp_path / "run.ckpt.npz"
    full, pf = train(spec(), tiny_corpus)
    assert train(spec(), tiny_corpus, checkpoint=ckpt, stop_after=17)[0] is None
    assert ckpt.exists() and not list(tmp_path.glob("*.tmp"))
    resumed, pr = train(spec(), tiny_corpus, checkpoint=ckpt)
    assert same(strip(resumed), strip(full))
    assert all(np.array_equal(pf[k], pr[k]) for k in pf)


def test_finished_runs_are_cached_by_spec_corpus_and_code(tiny_corpus, tmp_path):
    a = run(spec(), tiny_corpus, cache_dir=tmp_path)
    key = run_key(spec(), tiny_corpus)
    assert (tmp_path / f"{key}.json").exists() and (tmp_path / f"{key}.npz").exists()
    assert not (tmp_path / f"{key}.ckpt.npz").exists()
    assert run(spec(), tiny_corpus, cache_dir=tmp_path) == a  # read back, not retrained
    params = train_module.run_params(spec(), tiny_corpus, tmp_path, train_missing=False)
    _, trained = train(spec(), tiny_corpus)
    assert params.keys() == trained.keys()
    assert all(np.array_equal(params[k], trained[k]) for k in trained)
    assert cached(spec(), tiny_corpus, tmp_path) and not cached(spec(seed=9), tiny_corpus, tmp_path)
    with pytest.raises(LookupError, match="not in the cache"):
        run(spec(seed=9), tiny_corpus, cache_dir=tmp_path, train_missing=False)
    assert run_key(spec(lr=2e-2), tiny_corpus) != key
    other = corpus.Corpus("x", tiny_corpus.train, tiny_corpus.heldout, "0" * 64, "test")
    assert run_key(spec(), other) != key
    # the same text hash with another held-out split is another run
    resplit = corpus.Corpus(
        "pydoc", tiny_corpus.train, tiny_corpus.heldout[1:], tiny_corpus.sha256, "test",
        validation=tiny_corpus.validation,
    )  # fmt: skip
    assert run_key(spec(), resplit) != key


def test_the_run_key_holds_the_thread_count_and_a_single_thread_keeps_the_old_key(
    tiny_corpus, monkeypatch
):
    """Results differ in the last digits between BLAS thread counts, so the count is in the key;
    at one thread (the default) the key is the one computed before the count was keyed, so runs
    cached then are still found."""
    before = json.dumps(
        {
            "spec": spec().describe(),
            "corpus": tiny_corpus.sha256,
            "splits": tiny_corpus.split_sha256(),
            "code": train_module.code_version(),
        },
        sort_keys=True,
    )
    monkeypatch.setattr(threads, "blas_threads", lambda: 1)
    one = run_key(spec(), tiny_corpus)
    assert one == hashlib.sha256(before.encode()).hexdigest()[:24]
    monkeypatch.setattr(threads, "blas_threads", lambda: 2)
    assert run_key(spec(), tiny_corpus) != one


def test_the_run_cache_is_the_variable_then_xdg_cache_home_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(train_module.CACHE_ENV, raising=False)
    assert train_module.default_cache_dir() == tmp_path / "home" / ".cache" / "fastslow" / "lm"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert train_module.default_cache_dir() == tmp_path / "xdg" / "fastslow" / "lm"
    monkeypatch.setenv(train_module.CACHE_ENV, str(tmp_path / "lm"))
    assert train_module.default_cache_dir() == tmp_path / "lm"


def runs(specs, text, executor=None):
    return sweep(
        run, [dict(spec=s, corpus=text, cache_dir=False) for s in specs], executor=executor
    )


def test_the_three_kinds_share_data_and_initial_weights(tiny_corpus):
    res = runs([spec(k, tokens=640) for k in ("dense", "coupled", "frozen")], tiny_corpus)
    dense, coupled, frozen = res
    assert dense["heldout_loss"] == frozen["heldout_loss"]  # g = 0: the same function
    assert dense["gate_grad"] is None and frozen["gates"] == [0.0, 0.0]
    assert all(g != 0.0 for g in coupled["gates"])
    assert len(frozen["gate_grad"]["z"]) == 2
    # every coupled gate moved on every step; frozen gates never; zeroing frozen gates is a no-op
    assert coupled["gate_updates"] == [coupled["steps"]] * 2 and frozen["gate_updates"] == [0, 0]
    assert frozen["heldout_loss_gates_zeroed"] == frozen["heldout_loss"]
    assert coupled["heldout_loss_gates_zeroed"] != coupled["heldout_loss"]
    assert dense["heldout_loss_gates_zeroed"] is None
    assert np.isfinite(coupled["validation_loss"])


def test_parallel_runs_equal_serial_runs(tiny_corpus):
    specs = [spec(tokens=640, seed=s) for s in (1, 2)]
    a = runs(specs, tiny_corpus)
    with local_executor(2) as pool:
        b = runs(specs, tiny_corpus, pool)
    assert all(same(strip(x), strip(y)) for x, y in zip(a, b))


def test_training_step_updates_the_trained_parameters_only(tiny_corpus):
    moved = {}
    for kind in ("coupled", "frozen"):
        step, params = training_step(spec(kind).cfg, 4, tiny_corpus)
        before = {k: a.copy() for k, a in params.items()}
        step()
        moved[kind] = {k for k in params if not np.array_equal(params[k], before[k])}
    assert {"0.g", "1.g", "0.Q", "emb"} <= moved["coupled"]
    assert moved["frozen"] == moved["coupled"] - {"0.g", "1.g"}


def test_progress_line_on_stderr(tiny_corpus, capsys, monkeypatch):
    clock = iter(np.arange(0.0, 1e4, 3.0))
    monkeypatch.setattr("fastslow.numerics.lm.train.time.perf_counter", lambda: float(next(clock)))
    train(spec(tokens=640, progress=True, meta={"label": "demo"}), tiny_corpus)
    err = capsys.readouterr().err
    assert "[lm demo]" in err and "tok/s" in err and "loss" in err and "max|g|" in err
    assert gate_names(spec().cfg) == ["0.g", "1.g"]
