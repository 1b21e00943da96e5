"""Mutation testing of the suite: the checks of the checks (docs/mutants.md).

* :mod:`tools.mutation.mutants` — the hand catalogue of planted bugs (the regression set), each
  applied to a scratch copy of the tree and caught when one of its claims ends ``fails``; run by
  ``pytest verify --thorough`` (``verify/tests/test_mutants_caught.py``) or
  ``python -m tools.mutation.mutants --markdown docs/mutants.md``;
* :mod:`tools.mutation.mutate` — the cosmic-ray run (``bash run.sh mutate``: a seeded sample of
  source mutations of ``theory/``, ``numerics/`` and ``verify/``, each killed by the tests and the
  claims that import the mutated module), resumable in ``build/mutate/``;
* :mod:`tools.mutation.mutate_report` — that run's score and its survivors' triage
  (``triage/<commit>.json``, one file per session), written into docs/mutants.md.

They import ``fastslow`` (the checkout's, through its ``__path__``) and are imported as
``tools.mutation.<module>`` from the repository's root, never installed.
"""
