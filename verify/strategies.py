"""Hypothesis strategies for toy systems, so that you can write property tests of your own systems.

Needs Hypothesis (``pip install 'fastslow[test]'``). Each strategy draws a valid
:mod:`fastslow.toy` system with the property its name states, so a test can assert what a claim
says about every such system::

    from hypothesis import given
    import fastslow
    from fastslow.verify.strategies import linear_loops

    @given(linear_loops(spectral_radius=0.9))
    def test_d7_holds_on_every_contractive_loop(loop):
        assert fastslow.check("D7", loop).outcome == "holds"

* :func:`linear_loops` — ``LinearLoop(J, G)`` with a non-normal ``J`` of spectral radius
  ``spectral_radius`` (below one: inside D7's hypotheses; at or above: outside) and a random ``G``.
* :func:`generator_families` — ``GeneratorFamily`` whose off-diagonal rates are positive on every
  ``y`` (irreducible), or split into two closed classes (``reducible=True``).
* :func:`block_local_masks` — boolean T×T masks that never attend across blocks of ``P`` tokens
  and keep the diagonal (every row has a key).
* :func:`depth_flows` — ``DepthFlow`` systems on such masks.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import strategies as st

from fastslow.verify.systems import DepthFlow, GeneratorFamily, LinearLoop

__all__ = [
    "block_local_masks",
    "blocked_params",
    "depth_flows",
    "generator_families",
    "in_blocks",
    "linear_loops",
]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@st.composite
def linear_loops(draw, n=st.integers(2, 6), spectral_radius: float = 0.9) -> LinearLoop:
    """``J = S·diag(λ)·S⁻¹`` with ``|λ| ≤ spectral_radius`` (the largest exactly that) and a
    non-orthogonal ``S`` (so ``J`` is non-normal), and a standard normal ``G``."""
    size = draw(n) if isinstance(n, st.SearchStrategy) else int(n)
    rng = _rng(draw(st.integers(0, 2**32 - 1)))
    lam = rng.uniform(-1.0, 1.0, size)
    lam *= spectral_radius / np.abs(lam).max()
    S = np.eye(size) + rng.standard_normal((size, size)) / np.sqrt(size)
    J = S @ np.diag(lam) @ np.linalg.inv(S)
    return LinearLoop(J, rng.standard_normal((size, size)), name=f"random loop n={size}")


@st.composite
def generator_families(
    draw, n_states=st.integers(2, 4), reducible: bool = False
) -> GeneratorFamily:
    """Rates ``Q[i, j](y) = a_ij·exp(b_ij·y)`` (``a_ij ∈ [0.2, 2]``, ``b_ij ∈ [−1, 1]``) for the
    jump ``j → i``, diagonal making the columns sum to zero, and the slow field
    ``dy/dt = −y + Σ_i c_i x_i + sin t``: irreducible for every ``y``. With ``reducible=True`` the
    states split into two groups with no jump between them: two closed classes, so the stationary
    law is not unique (outside F2's hypothesis ``one_closed_class_on_grid``)."""
    n = draw(n_states) if isinstance(n_states, st.SearchStrategy) else int(n_states)
    rng = _rng(draw(st.integers(0, 2**32 - 1)))
    y, t = sp.symbols("y t")
    x = sp.symbols(f"x0:{n}")
    Q = sp.zeros(n, n)
    for i in range(n):
        for j in range(n):
            if i != j and not (reducible and (i < n // 2) != (j < n // 2)):
                a = sp.Rational(int(rng.integers(2, 21)), 10)
                b = sp.Rational(int(rng.integers(-10, 11)), 10)
                Q[i, j] = a * sp.exp(b * y)
    for j in range(n):
        Q[j, j] = -sum(Q[i, j] for i in range(n) if i != j)
    c = [sp.Rational(int(rng.integers(-10, 11)), 10) for _ in range(n)]
    slow = -y + sum(ci * xi for ci, xi in zip(c, x)) + sp.sin(t)
    name = f"{'reducible ' if reducible else ''}{n}-state family"
    return GeneratorFamily(Q, slow, y=y, x=x, t=t, name=name)


@st.composite
def block_local_masks(draw, T: int = 8, P: int = 4) -> np.ndarray:
    """A boolean T×T mask that is zero across blocks of ``P`` tokens, with a true diagonal."""
    if T % P:
        raise ValueError(f"P={P} must divide T={T}")
    rng = _rng(draw(st.integers(0, 2**32 - 1)))
    mask = np.zeros((T, T), dtype=bool)
    for b in range(T // P):
        block = rng.random((P, P)) < draw(st.floats(0.3, 1.0))
        np.fill_diagonal(block, True)
        mask[b * P : (b + 1) * P, b * P : (b + 1) * P] = block
    return mask


@st.composite
def depth_flows(draw, T: int = 8, P: int = 4, d=st.integers(1, 3)) -> DepthFlow:
    """A ``DepthFlow`` on a :func:`block_local_masks` mask with random widths and seed."""
    mask = draw(block_local_masks(T, P))
    width = draw(d) if isinstance(d, st.SearchStrategy) else int(d)
    return DepthFlow(
        mask=mask,
        P=P,
        d=width,
        L=draw(st.integers(1, 3)),
        gamma=draw(st.sampled_from([0.0, 0.5])),
        gate=draw(st.sampled_from([0.0, 0.3])),
        seed=draw(st.integers(0, 1000)),
        name="random block-local flow",
    )


def in_blocks(p: dict) -> dict:
    """Drawn parameters with ``N`` blocks of ``P`` tokens written as ``T = N·P`` (``N`` dropped)."""
    return {"T": p["N"] * p["P"], **{k: v for k, v in p.items() if k != "N"}}


def blocked_params(sizes: dict, **fields) -> st.SearchStrategy:
    """Claim parameters with ``N`` blocks of ``P`` tokens: ``sizes`` maps ``N``, ``P`` and other
    integer parameters to inclusive ranges ``(low, high)``, ``fields`` maps the rest to strategies;
    the drawn dict has ``T = N·P`` instead of ``N``."""
    if "N" not in sizes or "P" not in sizes:
        raise ValueError("blocked_params needs ranges for N and P")
    ints = {k: st.integers(lo, hi) for k, (lo, hi) in sizes.items()}
    return st.fixed_dictionaries({**ints, **fields}).map(in_blocks)
