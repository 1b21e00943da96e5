"""F2's note for a user family names the atoms the exact derivation worked over."""

from __future__ import annotations

from types import SimpleNamespace

import sympy as sp

from fastslow.verify.checks.f2 import chain
from fastslow.verify.registry import CLAIMS


def test_the_family_note_names_the_atoms_or_says_none():
    p = CLAIMS["F2"].resolve({})
    a, b = sp.symbols("a b")
    assert "the atoms [a, b] (free generators" in chain.family_note(
        SimpleNamespace(atoms=(a, b)), p
    )
    assert "the atoms [none] (free generators" in chain.family_note(SimpleNamespace(atoms=()), p)
