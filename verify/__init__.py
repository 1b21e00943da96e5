"""Claim verification: the claim units, the shared measurement, the sweeps and the report.

``verify`` is where ``theory`` (symbolic) and ``numerics`` (numerical) meet. Each claim ID
(statements in ``docs/claims.md``, generated from the units) is one unit ``verify.checks.<id>``
(a :class:`verify.claim.Claim`, found by :mod:`verify.registry`, also run by ``fastslow check``)
with test modules ``verify/tests/test_<id>_*.py`` (not part of the package) run by ``pytest verify``, which writes
``verify/report/report.json`` and ``REPORT.md`` (:mod:`verify.report`). Shared pieces:
:mod:`verify.measure` (relative errors, rates, finite differences, theory against numerics),
:mod:`verify.model_params`, :mod:`verify.sweep` (sweeps on any executor, with a cache),
:mod:`verify.provenance`, :mod:`verify.timing`. See ``docs/architecture.md``.
"""

if __name__ != "fastslow.verify":  # one module name per file (docs/architecture.md)
    raise ImportError(
        f"import fastslow.verify, not {__name__}: the design folders are subpackages of fastslow"
    )
