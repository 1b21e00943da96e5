"""User toy systems: construction rules, the strategies' promises, and the command line's answers."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings

import fastslow
from fastslow.cli import main
from fastslow.strategies import block_local_masks, depth_flows, generator_families, linear_loops
from fastslow.toy import DepthFlow, GeneratorFamily, LinearLoop
from fastslow.verify.registry import claims_for

# --------------------------------------------------------------------------- construction


def test_a_system_is_validated_when_it_is_made():
    with pytest.raises(ValueError, match="square"):
        LinearLoop(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="G"):
        LinearLoop(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="finite|nan|NaN"):
        LinearLoop(np.array([[np.nan]]), np.eye(1))
    y, t = sp.symbols("y t")
    x = sp.symbols("x0:2")
    with pytest.raises(ValueError, match="2 SymPy symbols"):
        GeneratorFamily(sp.Matrix([[-1, 1], [1, -1]]), -y, y=y, x=x[:1])
    with pytest.raises(ValueError, match="unknown"):
        GeneratorFamily(sp.Matrix([[-1, 1], [1, -1]]), -y + sp.Symbol("z"), y=y, x=x, t=t)
    with pytest.raises(ValueError, match="boolean"):
        DepthFlow(mask=np.ones((4, 4)), P=2, d=2)
    with pytest.raises(ValueError, match="P"):
        DepthFlow(mask=np.eye(4, dtype=bool), P=3, d=2)


# --------------------------------------------------------------------------- strategies


@settings(max_examples=20, deadline=None)
@given(linear_loops(spectral_radius=0.9))
def test_linear_loops_have_the_stated_spectral_radius(loop):
    assert abs(np.abs(np.linalg.eigvals(loop.J)).max() - 0.9) < 1e-8


@settings(max_examples=10, deadline=None)
@given(generator_families())
def test_generator_families_are_generators_with_positive_rates(fam):
    for yv in (-1.0, 0.0, 1.0):
        Q = np.array(fam.Q.subs(fam.y, yv), dtype=float)
        assert np.allclose(Q.sum(axis=0), 0.0, atol=1e-12)
        off = Q[~np.eye(fam.n, dtype=bool)]
        assert (off > 0).all()


@settings(max_examples=10, deadline=None)
@given(generator_families(reducible=True))
def test_reducible_families_have_two_closed_classes(fam):
    Q = np.array(fam.Q.subs(fam.y, 0.3), dtype=float)
    k = fam.n // 2
    assert (Q[:k, k:] == 0).all() and (Q[k:, :k] == 0).all()


@settings(max_examples=20, deadline=None)
@given(block_local_masks(T=8, P=4))
def test_block_local_masks_never_cross_a_block(mask):
    blocks = np.kron(np.eye(2, dtype=bool), np.ones((4, 4), dtype=bool))
    assert not (mask & ~blocks).any() and mask.diagonal().all()


@settings(max_examples=10, deadline=None)
@given(depth_flows())
def test_depth_flows_build_a_model(flow):
    model = flow.model()
    assert model.config.T == 8 and len(model.layers) == flow.L


# --------------------------------------------------------------------------- the command line


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_each_kind_states_its_sizes_and_the_base_class_states_none():
    """The sizes a system stands for in a claim's cost model and the text messages give them:
    ``n`` states of a loop (dense ``T = n``, ``d = P = 1``), of a chain (``n_states``), a flow's
    sizes joined; the base class has none (``"no sizes"``) and no description of its own
    (``NotImplementedError`` naming the kind)."""
    from dataclasses import dataclass

    from fastslow.verify.systems import System

    loop = LinearLoop(J=0.5 * np.eye(3), G=0.1 * np.ones((3, 3)))
    assert (loop.sizes(), loop.size_text()) == ({"T": 3, "d": 1, "P": 1}, "n=3")
    y, x = sp.Symbol("y"), [sp.Symbol("x0"), sp.Symbol("x1")]
    chain = GeneratorFamily(sp.Matrix([[-1, 1 + y**2], [1, -1 - y**2]]), -y + x[0], y, x)
    assert (chain.sizes(), chain.size_text()) == ({"n_states": 2}, "n=2 states")
    flow = DepthFlow(mask="block_causal", T=8, P=4, d=2, L=2)
    assert flow.size_text().startswith("T=8, P=4, d=2, L=2, gamma=")

    @dataclass
    class Bare(System):
        kind: str = "bare"

    bare = Bare()
    assert (bare.sizes(), bare.size_text()) == ({}, "no sizes")
    with pytest.raises(NotImplementedError, match="^Bare does not implement System.describe$"):
        bare.describe()


def test_system_file_errors_are_one_line_and_exit_2(tmp_path, capsys):
    good = tmp_path / "mine.py"
    good.write_text(
        "import numpy as np\nfrom fastslow.toy import LinearLoop\n"
        "loop = LinearLoop(0.5 * np.eye(2), np.eye(2))\nnot_a_system = 3\n"
        "def broken():\n    raise RuntimeError('no')\n"
    )
    (tmp_path / "crash.py").write_text("raise ImportError('missing dependency')\n")
    cases = {
        "nofile.py:loop": "no such file",
        f"{good}": "FILE.py:NAME",
        f"{good}:nothere": "defines no 'nothere'",
        f"{good}:not_a_system": "expected one of the fastslow.toy systems",
        f"{good}:broken": "broken() failed: RuntimeError: no",
        f"{tmp_path / 'crash.py'}:loop": "failed to load: ImportError: missing dependency",
    }
    for spec, message in cases.items():
        code, out, err = _run(["check", "D7", "--system", spec], capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (spec, err)


def test_a_claim_that_does_not_check_a_kind_names_the_claims_that_do(tmp_path, capsys):
    f = tmp_path / "mine.py"
    f.write_text(
        "import numpy as np\nfrom fastslow.toy import LinearLoop\n"
        "loop = LinearLoop(0.5 * np.eye(2), np.eye(2))\n"
    )
    code, _, err = _run(["check", "A1", "--system", f"{f}:loop"], capsys)
    assert code == 2
    assert "A1 cannot be checked on a LinearLoop" in err
    assert ("claims that can: " + (", ".join(claims_for(LinearLoop)) or "none yet")) in err


def test_fastslow_check_without_a_system_is_the_built_in_verdict():
    v = fastslow.check("A1", params={"T": 8, "P": 2})
    assert v.outcome == "holds" and v.system is None
    assert "system" not in json.dumps(v.to_json())
