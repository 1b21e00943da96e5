"""Shared fixtures of the unit tests."""

import pytest

from fastslow.verify.claim import Claim
from fastslow.verify.registry import CLAIMS


class PendingE1(Claim):
    """A stand-in for a declared claim without a check: every claim of the suite is implemented
    now, and the pending path (CLI exit 2, "not implemented yet" in the report) still needs one."""

    id = "E1"
    title = "a declared claim without a check"
    abstract = "(the paper's sentence)"
    statement = "declared, not implemented"
    implemented = False


@pytest.fixture
def pending_e1(monkeypatch):
    """The registry's E1 replaced by :class:`PendingE1` for one test."""
    CLAIMS["E1"]  # load the real unit first, so that the stand-in replaces it
    monkeypatch.setitem(CLAIMS._loaded, "E1", PendingE1())
    return CLAIMS["E1"]
