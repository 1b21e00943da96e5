"""Trained weights as a user system (:mod:`verify.trained`, :mod:`verify.weights_file`).

* A tiny PyTorch-style ``state_dict`` (``(out, in)`` matrices), converted by the mapping of
  docs/trained_weights.md and written with ``safetensors.numpy.save_file``, loads with the same
  weights and is checked by the claims (API and command line).
* Broken files (missing tensor, wrong shape, non-finite entry, wrong dtype, unexpected tensor,
  missing setting, not a weights file): each is exit 2 with one line naming it.
* An E1 run missing from the run cache is one line saying how to train it, never trained.

Sizes: V = 5, T = 8, P = 4, d = 3, m = 4, L = 2 (each check about a second).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from fastslow import check
from fastslow.cli import main
from fastslow.toy import TrainedStack
from fastslow.verify import weights_file
from fastslow.verify.systems import load

V, T, P, d, m, L = 5, 8, 4, 3, 4, 2
SETTINGS = {"T": T, "P": P, "fast_mask": "block_causal"}


def torch_state_dict(seed: int = 0) -> dict:
    """A ``state_dict`` of the architecture as PyTorch stores it (``nn.Linear`` weights are
    ``(out, in)``), as NumPy arrays (what ``.numpy()`` gives)."""
    rng = np.random.default_rng(seed)
    sd = {
        "embedding.weight": rng.standard_normal((V, d)).astype(np.float32),
        "head.weight": rng.standard_normal((V, d)).astype(np.float32),
    }
    for l in range(L):
        for part, names in (("attn", "qkv"), ("slow", "qkv")):
            for n in names:
                sd[f"layers.{l}.{part}.{n}.weight"] = (
                    rng.standard_normal((d, d)) / np.sqrt(d)
                ).astype(np.float32)
        sd[f"layers.{l}.mlp.fc1.weight"] = rng.standard_normal((m, d)).astype(np.float32)
        sd[f"layers.{l}.mlp.fc2.weight"] = rng.standard_normal((d, m)).astype(np.float32)
        sd[f"layers.{l}.gate"] = np.array([0.1 - 0.15 * l], np.float32)  # trained, open
    return sd


def to_layout(sd: dict) -> dict:
    """The mapping of docs/trained_weights.md, as written there."""
    t = {"emb": sd["embedding.weight"], "head": sd["head.weight"].T}
    for l in range(L):
        a, f, s = f"layers.{l}.attn.", f"layers.{l}.mlp.", f"layers.{l}.slow."
        t |= {
            f"{l}.Q": sd[a + "q.weight"].T,
            f"{l}.K": sd[a + "k.weight"].T,
            f"{l}.V": sd[a + "v.weight"].T,
            f"{l}.W1": sd[f + "fc1.weight"].T,
            f"{l}.W2": sd[f + "fc2.weight"].T,
            f"{l}.Qs": sd[s + "q.weight"].T,
            f"{l}.Ks": sd[s + "k.weight"].T,
            f"{l}.Vs": sd[s + "v.weight"].T,
            f"{l}.g": sd[f"layers.{l}.gate"],
        }
    return {k: np.ascontiguousarray(v) for k, v in t.items()}


@pytest.fixture
def weights(tmp_path):
    """``(path, state_dict)`` of the tiny network written to safetensors with its settings."""
    sd = torch_state_dict()
    path = tmp_path / "tiny.safetensors"
    save_file(to_layout(sd), str(path), metadata={"fastslow": json.dumps(SETTINGS)})
    return path, sd


def one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_a_state_dict_in_safetensors_loads_with_its_weights(weights):
    path, sd = weights
    net = TrainedStack.from_file(path)
    assert (net.T, net.P, net.d, net.m, net.L, net.vocab) == (T, P, d, m, L, V)
    model = net.model()
    assert model.config.mask_name == "block_causal"
    np.testing.assert_array_equal(model.layers[1].W1, sd["layers.1.mlp.fc1.weight"].T)
    np.testing.assert_array_equal(model.layers[0].Vs, sd["layers.0.slow.v.weight"].T)
    np.testing.assert_array_equal(net.embedding, sd["embedding.weight"])
    assert model.layers[0].W1.dtype == np.float64
    # the same tensors as .npz, settings given with the file name: the same system
    npz = path.with_suffix(".npz")
    np.savez(npz, **to_layout(sd))
    again = load(f"{npz}:T={T},P={P},fast_mask=block_causal")
    assert again.weights_sha256() == net.weights_sha256()
    assert again.fingerprint() == net.fingerprint()


def test_the_claims_check_a_trained_stack(weights):
    path, _ = weights
    net = TrainedStack.from_file(path)
    assert check("A1", system=net).outcome == "holds"
    d7 = check("D7", system=net)  # block_causal, a tiny stack: decided on it like any flow
    assert d7.outcome in ("holds", "outside-hypotheses")
    assert d7.system["kind"] == "TrainedStack"
    assert d7.system["source"]["sha256"]


def test_the_command_line_checks_a_weights_file(weights, capsys):
    path, _ = weights
    assert main(["check", "A1", "--system", str(path)]) == 0
    assert "TrainedStack" in capsys.readouterr().out


def test_claims_lists_the_trained_stack(capsys):
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("D7"))
    assert "TrainedStack" in line


def broken(tensors: dict, name: str, kind: str) -> dict:
    t = dict(tensors)
    if kind == "missing":
        del t[name]
    elif kind == "shape":
        t[name] = np.zeros((d, d + 1), np.float32)
    elif kind == "nonfinite":
        t[name] = t[name].copy()
        t[name].flat[1] = np.nan
    elif kind == "dtype":
        t[name] = t[name].astype(np.int32)
    elif kind == "unexpected":
        t[name] = np.zeros(d, np.float32)
    return t


BROKEN = [
    ("1.W2", "missing", "missing tensor '1.W2'; expected shape (4, 3)"),
    ("0.Q", "shape", "tensor '0.Q' has shape (3, 4); expected (3, 3)"),
    ("0.K", "nonfinite", "tensor '0.K' has 1 non-finite entries"),
    ("emb", "dtype", "tensor 'emb' has dtype int32; expected floating point"),
    ("0.bias", "unexpected", "unexpected tensor '0.bias': not in the layout"),
]


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
@pytest.mark.parametrize("name,kind,message", BROKEN, ids=[b[1] for b in BROKEN])
def test_a_broken_weights_file_is_exit_2_naming_the_tensor(
    tmp_path, capsys, suffix, name, kind, message
):
    tensors = broken(to_layout(torch_state_dict()), name, kind)
    path = tmp_path / f"w{suffix}"
    if suffix == ".npz":
        weights_file.write_npz(path, tensors, SETTINGS)
    else:
        save_file(tensors, str(path), metadata={"fastslow": json.dumps(SETTINGS)})
    assert main(["check", "D7", "--system", str(path)]) == 2
    line = one_line(capsys.readouterr().err)
    assert message in line and str(path) in line


@pytest.mark.parametrize(
    "spec,message",
    [
        ("{npz}", "setting T is missing"),
        ("{npz}:T=8,P=3", "P must divide T"),
        ("{npz}:T=8,P=4,fast_mask=diagonal", "setting fast_mask='diagonal': expected one of"),
        ("{npz}:T=8,P=4,colour=red", "unknown setting 'colour'"),
        ("{bad}", "not a readable safetensors file"),
        ("{tmp}/none.npz", "no such weights file"),
        ("e1:coupled:x:20000", "expects e1:ARM:SEED:TOKENS"),
        ("e1:sparse:0:20000", "E1 arm 'sparse'"),
    ],
)
def test_bad_settings_and_files_are_exit_2(tmp_path, capsys, spec, message):
    npz = tmp_path / "plain.npz"
    np.savez(npz, **to_layout(torch_state_dict()))
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    arg = spec.format(npz=npz, bad=bad, tmp=tmp_path)
    assert main(["check", "A1", "--system", arg]) == 2
    assert message in one_line(capsys.readouterr().err)


def test_a_missing_e1_run_says_how_to_train_it_and_trains_nothing(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"not in the run cache .*e1:coupled:3:2000:train"):
        TrainedStack.from_e1("coupled", 3, 2000, cache_dir=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing trained, nothing written


def test_trained_report_refuses_bad_seeds_and_never_trains_silently(tmp_path, monkeypatch, capsys):
    assert main(["trained-report", "--d9-seeds", "0,1"]) == 2
    assert "at least 3 seeds" in one_line(capsys.readouterr().err)
    assert main(["trained-report", "--seeds", "a,b"]) == 2
    assert "--seeds expects integers" in one_line(capsys.readouterr().err)
    monkeypatch.setenv("FASTSLOW_LM_CACHE", str(tmp_path))  # an empty run cache
    assert main(["trained-report", "--tokens", "3000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    # every run of the section is looked up before any work: one line, never an error verdict
    assert "not in the run cache" in one_line(err) and "first: E1 coupled seed 0" in err
    assert "--train" in err and not list(tmp_path.glob("*.json"))  # nothing trained or written


def layout_of_width(width: int, seed: int = 1) -> dict:
    """Tensors of the layout at width ``width`` (V, m, L as above), gates open."""
    rng = np.random.default_rng(seed)
    t = {"emb": rng.standard_normal((V, width))}
    for l in range(L):
        for n in ("Q", "K", "V", "Qs", "Ks", "Vs"):
            t[f"{l}.{n}"] = rng.standard_normal((width, width)) / np.sqrt(width)
        t[f"{l}.W1"] = rng.standard_normal((width, m))
        t[f"{l}.W2"] = rng.standard_normal((m, width))
        t[f"{l}.g"] = np.array(0.05)
    return t


def test_a_hypothesis_its_declaration_decides_comes_before_the_size_limits(tmp_path, capsys):
    # d = 5 is beyond F1's sizes (d ≤ 4): with E1's causal mask the flow is outside F1's
    # hypothesis fast_mask_block_local, which the declaration decides: exit 4 naming it
    path = tmp_path / "wide.npz"
    weights_file.write_npz(path, layout_of_width(5), {"T": T, "P": P, "fast_mask": "causal"})
    v = check("F1", system=TrainedStack.from_file(path))
    assert v.outcome == "outside-hypotheses" and v.violated == ["fast_mask_block_local"]
    assert v.hypotheses["fast_mask_block_local"].value == P * P  # the block below the diagonal
    assert not v.conclusion and "d=5" in v.notes[0]
    assert main(["check", "F1", "--system", str(path)]) == 4
    assert "fast_mask_block_local" in capsys.readouterr().out
    # a block-local mask of the same size: the size limit decides, bad input naming it
    assert main(["check", "F1", "--system", f"{path}:fast_mask=block_causal"]) == 2
    assert "d=5" in one_line(capsys.readouterr().err)


def test_d7_loops_every_trained_layer_and_d6_reads_every_layers_gate(weights):
    net = TrainedStack.from_file(weights[0])  # gates 0.1 and -0.05: one per layer
    d7 = check("D7", system=net)
    assert d7.outcome != "error", d7.summary()
    assert set(d7.hypotheses["reference_is_fixed_point"].value) == {"layer 0", "layer 1"}
    assert len(d7.figures["per_layer"]) == L
    # within D7's limits a flow outside a declared hypothesis is checked as any other: the
    # hypothesis measured, the conclusion computed and reported
    assert "gate_moves_spectrum" in d7.violated and d7.conclusion
    d6 = check("D6", system=net)  # per-layer gates are the input, not an error
    assert d6.outcome == "outside-hypotheses" and d6.violated == ["gate_zero"]
    assert d6.hypotheses["gate_zero"].value == pytest.approx(0.1)
    assert not d6.conclusion and "gamma=0.0" in d6.notes[0]  # D6's limit γ > 0 refuses it


def test_declared_hypotheses_of_d6_and_d7_come_before_their_size_limits(tmp_path, capsys):
    # T·d = 8·17 beyond D7's dense limit (96) and D6's d ≤ 16; E1's causal mask and
    # autoregressive slow path fix ρ(J + gG) (g_c = ∞); the gates are open
    path = tmp_path / "wide.npz"
    weights_file.write_npz(path, layout_of_width(17), {"T": T, "P": P, "fast_mask": "causal"})
    net = TrainedStack.from_file(path)
    d7 = check("D7", system=net)
    assert d7.outcome == "outside-hypotheses" and d7.violated == ["gate_moves_spectrum"]
    assert d7.hypotheses["gate_moves_spectrum"].value["slow_mask"] == "blockcausal"
    d6 = check("D6", system=net)
    assert d6.outcome == "outside-hypotheses" and d6.violated == ["gate_zero"]
    assert main(["check", "D7", "--system", str(path)]) == 4
    capsys.readouterr()
    # a sweep plans on the same order: outside on every point, never refused for its size
    assert main(["sweep", "D7", "--system", str(path), "--seeds", "0,1", "--workers", "1"]) == 4
    out = capsys.readouterr().out
    assert "2 outside-hypotheses" in out and "conclusion not computed" in out
    # closed gates and no slow path: D6's hypothesis holds, its size limit decides (bad input);
    # D7's gate cannot move a spectrum without a slow path: outside at any size
    closed = tmp_path / "closed.npz"
    tensors = {k: (np.zeros(()) if k.endswith(".g") else a) for k, a in layout_of_width(17).items()}
    weights_file.write_npz(closed, tensors, {"T": T, "P": P, "fast_mask": "causal", "slow": False})
    assert main(["check", "D6", "--system", str(closed)]) == 2
    assert "d=17" in one_line(capsys.readouterr().err)
    assert main(["sweep", "D6", "--system", str(closed), "--seeds", "0", "--workers", "1"]) == 2
    assert "d=17" in one_line(capsys.readouterr().err)
    assert check("D7", system=TrainedStack.from_file(closed)).violated == ["gate_moves_spectrum"]


def test_a_paper_run_at_any_token_count_has_the_rate_e1_chose_after_lr_tokens(monkeypatch):
    # E1 picks one learning rate for every token count, from selection runs of lr_tokens
    # tokens; a trained network of the sweep (50k) must be the run E1 trained, not one whose
    # rate was selected after 50k tokens (another spec, another cache key)
    from fastslow.numerics.lm import train as lm_train
    from fastslow.verify.checks import e1
    from fastslow.verify.trained import e1_run_spec

    seen = []

    def selection_run(spec, corpus, cache_dir=None):
        seen.append(spec)
        return {"validation_loss": -spec.lr}  # the largest rate wins

    monkeypatch.setattr(lm_train, "cached", lambda *a, **k: True)
    monkeypatch.setattr(lm_train, "run", selection_run)
    spec, _ = e1_run_spec("coupled", 1, 50_000, "paper", False, "pydoc", None)
    p = e1.CLAIM.resolve({"tokens": 50_000})
    assert len(p["lr_grid"]) > 1 and p["lr_tokens"] != 50_000
    assert sorted(s.lr for s in seen) == sorted(p["lr_grid"])
    assert {s.tokens for s in seen} == {p["lr_tokens"]}
    assert spec.lr == max(p["lr_grid"]) and spec.tokens == 50_000


def test_trained_report_checks_its_output_folder_before_any_work(tmp_path, monkeypatch, capsys):
    from fastslow.verify import trained_section

    def no_work(*a, **k):
        raise AssertionError("computed before the output was checked")

    monkeypatch.setattr(trained_section, "compute", no_work)
    missing = tmp_path / "no" / "such" / "folder"
    assert main(["trained-report", "--out", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "does not exist" in err


def test_trained_report_writes_the_section_where_load_reads_it(tmp_path, monkeypatch, capsys):
    """``fastslow trained-report --out F`` writes the computed section to
    ``F/trained_<profile>.json`` (:func:`trained_section.write`), prints that path and exits 0;
    :func:`trained_section.load` reads the same section back (here a stand-in for the
    computation, which needs the cached runs)."""
    from fastslow.verify import trained_section

    section = {"profile": "short", "networks": [], "d9": [], "tokens": [2000]}
    monkeypatch.setattr(trained_section, "compute", lambda *a, **k: section)
    assert main(["trained-report", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "trained_short.json")
    assert trained_section.load("short", tmp_path) == section


def test_claims_on_gives_a_row_per_claim_bad_input_included_and_says_what_decided_each():
    """``claims_on`` (the tutorial's table of a network's claims) keeps going after a claim that
    refuses the system as bad input (one line, exit 2), and says which hypothesis put a system
    outside, with its value."""
    from fastslow.toy import LinearLoop
    from fastslow.verify.trained_claims import claims_on

    loop = LinearLoop(J=0.5 * np.eye(3), G=0.1 * np.ones((3, 3)))
    rows = claims_on(loop, ids=("A1", "D7", "F2"))
    assert [(r["claim"], r["outcome"], r["exit"]) for r in rows] == [
        ("A1", "bad input", 2),
        ("D7", "holds", 0),
        ("F2", "bad input", 2),
    ]
    assert rows[0]["why"] == "A1 cannot be checked on a LinearLoop; claims that can: D7"
    assert rows[1]["why"] == ""
    (outside,) = claims_on(LinearLoop(J=1.5 * np.eye(3), G=0.1 * np.ones((3, 3))), ids=("D7",))
    assert outside["outcome"] == "outside-hypotheses" and outside["exit"] == 4
    assert outside["why"].startswith("outside: reference_contractive (1.5")


def test_a_run_trained_on_request_shows_its_progress_and_a_cached_one_is_read_quietly(tmp_path):
    """``e1_run_spec``: with ``train`` the run's spec asks for progress lines (a user waiting on a
    training run sees it advance); without, the spec is E1's own (read from the cache)."""
    from fastslow.verify import trained  # the spec builder, no training here

    args = ("coupled", 0, 2000, "short", "pydoc", tmp_path)
    shown, _ = trained.e1_run_spec(args[0], args[1], args[2], args[3], True, args[4], args[5])
    quiet, _ = trained.e1_run_spec(args[0], args[1], args[2], args[3], False, args[4], args[5])
    assert shown.progress is True and quiet.progress is not True
    assert dataclasses.replace(shown, progress=quiet.progress) == quiet
