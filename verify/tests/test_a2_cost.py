"""A2: the slow path's FLOP, counted from the products the reference executes, against the model.

The verdict is decided by :data:`verify.checks.a2.CLAIM` (attention core exactly 1/P²; whole slow
path over whole fast layer ≤ 1/P always, ≥ 1/P² under its hypothesis 3d(P − 1) ≥ 2m; the bracket
condition is exact over a grid of sizes); these tests only read it. The negative controls (unpooled
slow attention, wide MLPs) run in ``verify/tests/test_negative_controls.py``. Timings are in the
benchmark, not here.
"""

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model.cost import layer_flops
from fastslow.verify.portability import assert_portable
from fastslow.verify.registry import CLAIMS, run_check
from fastslow.verify.strategies import blocked_params

pytestmark = pytest.mark.claim("A2")


def test_counted_flop_equal_the_model_and_attention_costs_one_over_P_squared(claim):
    claim.holds({}, seed=3)


@given(
    params=blocked_params(
        dict(N=(1, 8), P=(1, 8), d=(1, 9), m=(1, 20)),
        mask=st.sampled_from(["causal", "block_causal", "block_bidirectional"]),
    ),
    seed=st.integers(0, 2**16),
)
def test_verdict_for_random_sizes_holds_exactly_inside_the_hypotheses(params, seed):
    """Inside the hypotheses the claim holds; outside (a wide MLP) it is never 'fails' or 'error'
    (the bracket part then fails, as the grid part of the verdict shows it must)."""
    result = run_check("A2", params, seed=seed)
    assert result.outcome == ("holds" if result.hypotheses_hold else "outside-hypotheses"), (
        result.summary()
    )


def test_symbolic_bracket_identities():
    """The closed forms behind the bracket condition, and numerics.model.cost is these polynomials."""
    T, P, d, m = sp.symbols("T P d m", positive=True)
    N = T / P
    slow = 4 * N**2 * d + 6 * N * d**2
    fast = 4 * T**2 * d + 6 * T * d**2 + 4 * T * d * m
    assert sp.expand(P**2 * slow - fast - (6 * T * d**2 * (P - 1) - 4 * T * d * m)) == 0
    assert sp.expand(fast / P - slow - (4 * T**2 * d * (P - 1) / P**2 + 4 * T * d * m / P)) == 0
    f = layer_flops(96, 4, 8, 20)
    vals = {T: 96, P: 4, d: 8, m: 20}
    assert f["slow_path"] == slow.subs(vals) and f["fast_layer"] == fast.subs(vals)


@pytest.mark.parametrize("control", [None] + [c.name for c in CLAIMS["A2"].controls])
def test_verdict_does_not_depend_on_lapack_choices(control):
    """A2 calls no non-unique decomposition; the verdict and its key figures are identical."""
    assert_portable("A2", {} if control else {"T": 16}, 3, control=control)


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="P=5 must divide T=48"):
        run_check("A2", {"P": 5})
    with pytest.raises(ValueError, match="pooled"):
        run_check("A2", {"pooled": "maybe"})
    with pytest.raises(ValueError, match="m=0"):
        run_check("A2", {"m": 0})
