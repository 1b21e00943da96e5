"""Claim verification: the registry of claim IDs, the check functions and the report.

``verify`` is where ``theory`` (symbolic) and ``numerics`` (numerical) meet. Each claim ID of
SPEC §2 has a statement in :mod:`verify.registry`, a check function in ``verify.checks.<id>``
(also run by ``fastslow check``) and test modules ``verify/test_<id>_*.py`` run by
``pytest verify``, which writes ``verify/report/report.json`` and ``REPORT.md``.
"""
