"""The mutation catalogue (tools.mutation.mutants) applies cleanly to the current tree, and its
runner applies, reverts and reads outcomes as it says (cheap: no claim is run here; the full run
is ``pytest verify --thorough``, verify/tests/test_mutants_caught.py)."""

import os
from pathlib import Path

from tools.mutation import mutants


def test_every_snippet_occurs_exactly_once_in_the_current_tree():
    assert mutants.catalogue_problems() == []


def test_the_catalogue_is_large_and_holds_the_nine_of_issue_27():
    assert len(mutants.CATALOGUE) >= 34
    assert sum(m.origin == "issue 27" for m in mutants.CATALOGUE) == 9
    tops = {m.file.split("/")[0] for m in mutants.CATALOGUE}
    assert {"theory", "numerics", "verify"} <= tops
    parts = {m.file.split("/")[1] for m in mutants.CATALOGUE if m.file.startswith("numerics/")}
    assert {"model", "analysis", "toy", "lm", "integrators"} <= parts


def test_problems_are_reported(tmp_path):
    bad = mutants.Mutant("x", "numerics/model/kernels.py", "no such text", "y", ("A1",), "nothing")
    twice = mutants.Mutant("x", "numerics/model/kernels.py", "return", "y", ("Z9",), "nothing")
    probs = mutants.catalogue_problems(catalogue=(bad, twice))
    assert any("occurs 0 times" in p for p in probs)
    assert any("duplicated id" in p for p in probs)
    assert any("not registered" in p for p in probs)


def test_applied_reverts_content_and_mtime(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\ny = 2\n")
    os.utime(f, ns=(10**18, 10**18))
    m = mutants.Mutant("t", "a.py", "y = 2", "y = 3", ("A1",), "test")
    with mutants.applied(m, tmp_path):
        assert f.read_text() == "x = 1\ny = 3\n"
    assert f.read_text() == "x = 1\ny = 2\n"
    assert f.stat().st_mtime_ns == 10**18


def test_scratch_tree_keeps_mtimes_and_leaves_caches_out(tmp_path):
    src = tmp_path / "src"
    (src / "pkg" / "__pycache__").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("pass\n")
    (src / "pkg" / "__pycache__" / "m.pyc").write_text("")
    os.utime(src / "pkg" / "m.py", ns=(10**18, 10**18))
    dst = mutants.scratch_tree(src, tmp_path / "dst")
    assert (dst / "pkg" / "m.py").stat().st_mtime_ns == 10**18
    assert not (dst / "pkg" / "__pycache__").exists()


def test_only_fails_counts_as_caught():
    table = mutants.table(
        [
            {
                **mutants.CATALOGUE[0].__dict__,
                "runs": {"D5": {"outcome": o, "seconds": 1.0}},
                "caught": o == "fails",
            }
            for o in ("fails", "outside-hypotheses", "undecided", "holds", "error")
        ]
    )
    assert [r[5] for r in table["rows"]] == ["caught"] + ["SURVIVED"] * 4


def test_the_mutated_file_is_really_imported_from_the_scratch_tree():
    """The runner refuses a scratch tree whose checks would import another copy (it compares
    ``fastslow.verify.claim.__file__`` with the scratch root)."""
    root = Path(mutants.ROOT)
    where = mutants.imported_from(root, mutants.environment(root, root / ".numba_cache"))
    assert root.resolve() in where.resolve().parents


def test_a_claim_is_checked_on_further_seeds_until_one_fails(tmp_path, monkeypatch):
    """A planted bug visible only on a later seed is caught; seeds after a failing one are not
    run; the claim's sweep instance (with the mutant's parameters) is what each seed decides."""
    (tmp_path / "a.py").write_text("x = 1\n")
    m = mutants.Mutant("t", "a.py", "x = 1", "x = 2", ("D7",), "test", params={"extra": 3})
    calls = []

    def fake(root, env, cid, timeout, params, seed):
        calls.append((cid, seed, params))
        return {"outcome": "fails" if seed == mutants.SEEDS[1] else "holds", "seconds": 1.0}

    monkeypatch.setattr(mutants, "run_check", fake)
    monkeypatch.setattr(mutants, "check_instance", lambda cid: {"sweep": True})
    res = mutants.run_mutant(m, tmp_path, tmp_path / "cache")
    assert res["caught"]
    assert [c[1] for c in calls] == list(mutants.SEEDS[:2])
    assert all(c[2] == {"sweep": True, "extra": 3} for c in calls)
    assert res["runs"]["D7"]["seeds"] == {mutants.SEEDS[0]: "holds", mutants.SEEDS[1]: "fails"}
    assert len(mutants.SEEDS) >= 3 and mutants.SEEDS[0] == 0
