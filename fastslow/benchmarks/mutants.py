"""Benchmark section ``mutants``: the mutation catalogue's table (verify/mutants.py).

Every planted bug of the catalogue is applied to a scratch copy of the tree and its claims run
through ``fastslow check``; the table (mutant, claims run, outcomes, caught, seconds) is also what
``docs/mutants.md`` holds. ``quick`` runs only the nine planted bugs of issue 27.
"""

from __future__ import annotations

from fastslow.benchmarks import section
from fastslow.verify import mutants as mu


@section("mutants")
def mutants(quick: bool) -> dict:
    ids = [m.id for m in mu.CATALOGUE if m.origin == "issue 27"] if quick else None
    return mu.table(mu.run_catalogue(ids))
