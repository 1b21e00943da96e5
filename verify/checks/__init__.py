"""The claim units: one per claim (``a1`` … ``f3``, ``e1``), each defining ``CLAIM``.

A unit is the module ``<id>.py``, or, when it is too long for one module, the package ``<id>/``:
one module per job named after what it holds (``instance``, ``measurements``, ``parts``, ...) and
``claim.py``, which declares the claim and decides its verdict; the package's ``__init__`` exports
``CLAIM`` and what other modules and the tests import (D5, D6, D7, E1, F1, F2).

A unit is a subclass of :class:`verify.claim.Claim` that declares the claim's statement,
parameters, hypotheses, conclusion, negative controls and key figures, and decides its verdict
(see :mod:`verify.claim`). Find a unit with :func:`verify.registry.get_claim`; run it with
:func:`verify.registry.run_check` or ``fastslow check ID``.
"""
