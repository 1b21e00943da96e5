"""D7's ``margin_search_checked`` part (verify/checks/d7/spectrum.py): the grid+Brent margin and the
pencil bisection must agree *and* lie in the brute-force bracket; one method wrong on its own,
low or high, fails the part even where the other method still lies in the bracket."""

from __future__ import annotations

import pytest

from fastslow.verify.checks.d7 import spectrum
from fastslow.verify.registry import CLAIMS


@pytest.fixture
def params():
    return CLAIMS["D7"].resolve({})


def test_the_margin_search_holds_on_the_unchanged_methods(params):
    part, _ = spectrum.margin_search_part(params)
    assert part["margin_search_checked"].holds


@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_one_search_method_off_by_ten_percent_fails_the_part(monkeypatch, params, factor):
    """The grid+Brent margin scaled by ``factor``: below the bracket's lower end or far from the
    pencil's (which stays inside the bracket), so the part fails either way."""
    true = spectrum.stability_margin
    monkeypatch.setattr(spectrum, "stability_margin", lambda J, **kw: factor * true(J, **kw))
    part, _ = spectrum.margin_search_part(params)
    assert not part["margin_search_checked"].holds
