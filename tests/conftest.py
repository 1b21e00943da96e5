"""Shared fixtures of the unit tests."""

import os

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


@pytest.fixture(autouse=True)
def fastslow_environment_restored():
    """Every ``FASTSLOW_*`` variable as it was before the test: the command line writes
    ``--memory-budget`` and ``--time-budget`` into the environment (so that sweep workers see
    them), and a test that calls ``main()`` in this process must not leave a budget behind for the
    tests after it (a leaked 401M budget refused D2, D8 and E1's checks in verify/)."""
    before = {k: v for k, v in os.environ.items() if k.startswith("FASTSLOW_")}
    yield
    for k in [k for k in os.environ if k.startswith("FASTSLOW_") and k not in before]:
        del os.environ[k]
    os.environ.update(before)
