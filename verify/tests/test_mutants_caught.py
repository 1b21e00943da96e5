"""Mutation testing (thorough profile): every planted bug of the catalogue
(tools/mutation/mutants.py) ends ``fails`` on at least one claim, never only ``holds``,
``outside-hypotheses``, ``undecided`` or ``error``. Each mutant is applied to a scratch copy of the
tree and its claims run through ``python -m fastslow check ID --json``."""

import pytest

from tools.mutation import mutants


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("mutants")


@pytest.mark.slow
@pytest.mark.parametrize(
    "mutant",
    # a surviving planted bug is a defect of the check of the first claim it should fail
    [pytest.param(m.id, marks=pytest.mark.claim(m.claims[0])) for m in mutants.CATALOGUE],
)
def test_planted_bug_is_caught(mutant, scratch, thorough):
    if not thorough:
        pytest.skip("thorough profile only (--thorough)")
    root = scratch / "tree"
    if not root.exists():
        mutants.scratch_tree(mutants.ROOT, root)
    m = next(x for x in mutants.CATALOGUE if x.id == mutant)
    res = mutants.run_mutant(m, root, scratch / "numba_cache")
    assert res["caught"], {c: mutants.describe_run(r) for c, r in res["runs"].items()}
