"""The automated mutation run's plumbing (tools/mutation/mutate.py) and the coverage table's
reading of Numba-compiled functions (verify/line_coverage.py); cheap: no mutant is run here (the
run is ``bash run.sh mutate``)."""

from collections import Counter

from fastslow.verify import line_coverage
from tools.mutation import mutate, mutate_report


def _population():
    items = []
    for pkg, files in (("theory", 2), ("numerics", 5), ("verify", 4)):
        for f in range(files):
            for op in ("core/NumberReplacer", "core/ReplaceBinaryOperator_Add_Sub", "core/AddNot"):
                for occ in range(7 if op.endswith("Sub") else 2):
                    items.append((f"{pkg}{f}{op}{occ}", f"{pkg}/m{f}.py", op, occ))
    return items


def test_the_sample_is_fixed_by_its_seed_and_shared_equally_by_package():
    pop = _population()
    a, b = mutate.sample(pop, 30, 35), mutate.sample(list(reversed(pop)), 30, 35)
    assert a == b and len(a) == len(set(a)) == 30
    assert Counter(mutate.package_of(x[1]) for x in a) == {
        "theory": 10,
        "numerics": 10,
        "verify": 10,
    }
    assert mutate.sample(pop, 30, 36) != a
    # uniform across operator families: the abundant family gets no more than its fair share
    fams = Counter(mutate.operator_family(x[2]) for x in a)
    assert set(fams) == {"NumberReplacer", "ReplaceBinaryOperator", "AddNot"}
    assert max(fams.values()) <= 16


def test_a_package_with_few_mutations_gives_all_it_has():
    pop = [x for x in _population() if not x[1].startswith("theory")]
    pop += [("t", "theory/m.py", "core/AddNot", 0)]
    s = mutate.sample(pop, 30, 1)
    assert ("t", "theory/m.py", "core/AddNot", 0) in s and len(s) == 30


def test_the_module_map_finds_unit_tests_and_claims():
    g = mutate.module_graph()
    assert "tests/test_markov.py" in mutate.unit_tests(g, "theory/markov.py")
    ids = ("A1", "D7", "F2", "F3")
    assert set(mutate.claims_of(g, "theory/markov.py", ids)) == {"F2", "F3"}
    assert mutate.claims_of(g, "verify/checks/d7/claim.py", ids) == ["D7"]
    assert mutate.near_claims(g, "verify/checks/d7/claim.py", ids) == ["D7"]
    # a claim's test file imports its unit (the registry imports units by name)
    assert "verify/checks/d7/claim.py" in g["verify/tests/test_d7_margin.py"]
    assert mutate.unit_files(g, "A1") == ["verify/checks/a1.py"]
    # a unit of several modules (a package): each of its modules is the unit's
    assert mutate.unit_files(g, "F2")[0] == "verify/checks/f2/__init__.py"
    assert "verify/checks/f2/tracking.py" in mutate.unit_files(g, "F2")
    assert mutate.claims_of(g, "verify/checks/f2/tracking.py", ids) == ["F2"]
    assert mutate.near_claims(g, "verify/checks/f2/tracking.py", ids) == ["F2"]
    assert "verify/checks/f2/tracking.py" in g["verify/tests/test_f2_stationary_manifold.py"]
    assert "tests/test_markov.py" in mutate.unit_tests(g, "verify/checks/f2/tracking.py")


def test_score_counts_timeouts_as_killed_and_survivors_by_triage():
    rows = [
        {"job": "a", "file": "theory/x.py", "outcome": "killed"},
        {"job": "b", "file": "theory/x.py", "outcome": "timeout"},
        {"job": "c", "file": "theory/x.py", "outcome": "survived"},
        {"job": "d", "file": "theory/x.py", "outcome": "survived"},
        {"job": "f", "file": "theory/x.py", "outcome": "survived"},
        {"job": "g", "file": "theory/x.py", "outcome": "survived"},
        {"job": "e", "file": "verify/x.py", "outcome": "pending"},
    ]
    s = mutate_report.score(rows, {"d": "equivalent", "f": "killed", "g": "removed"})
    assert s["theory"] == {
        "sampled": 6,
        "run": 6,
        "killed": 2,
        "timeout": 1,
        "equivalent": 1,
        "killed_since": 1,
        "removed": 1,
        "surviving": 1,
        "score": 2 / 5,
        "score_now": 3 / 4,
    }
    assert s["verify"]["run"] == 0 and s["all"]["sampled"] == 7


def test_compiled_functions_are_the_jitted_ones(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "from numba import njit\n"
        "@njit(cache=True)\n"
        "def a(x):\n    return x\n"
        "def b(x):\n    return x\n"
        "def c(x):\n    return x\n"
        "C = njit('f8(f8)')(c)\n"
        "class K:\n    def d(self):\n        return 1\n"
    )
    assert line_coverage.compiled_functions(f) == {"a", "c"}
