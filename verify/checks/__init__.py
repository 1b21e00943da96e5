"""The claim units: one module per claim (``a1`` … ``f3``, ``e1``), each defining ``CLAIM``.

A unit too long for one module keeps the claim in ``<id>.py`` and the rest in helper modules
``<id>_<topic>.py`` named after what they hold (``f1_instance``, ``f1_parts``, ``d7_spectrum``, ...).

A unit is a subclass of :class:`verify.claim.Claim` that declares the claim's statement,
parameters, hypotheses, conclusion, negative controls and key figures, and decides its verdict
(see :mod:`verify.claim`). Find a unit with :func:`verify.registry.get_claim`; run it with
:func:`verify.registry.run_check` or ``fastslow check ID``.
"""
