"""Unit and property tests of numerics.toy.markov and theory.markov (claims F2, F3)."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from numerics.model.layer import attention
from numerics.model.weights import ModelConfig, init_model
from numerics.toy import markov as mk
from theory import markov as tm


def _random_generator(rng, n, density=1.0):
    R = rng.uniform(0.1, 2.0, (n, n)) * (rng.uniform(size=(n, n)) < density)
    for i in range(n):  # a directed cycle keeps it irreducible
        R[(i + 1) % n, i] = rng.uniform(0.1, 2.0)
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(axis=0))


# --------------------------------------------------------------------------- validation


def test_check_generator_names_the_violation():
    Q = np.array([[-1.0, 2.0], [1.0, -2.0]])
    assert mk.check_generator(Q) is not None
    with pytest.raises(ValueError, match=r"Q\[0, 1\] = -2 is negative"):
        mk.check_generator(np.array([[2.0, -2.0], [-2.0, 2.0]]))
    with pytest.raises(ValueError, match="column 0 sums to"):
        mk.check_generator(np.array([[-1.0, 2.0], [0.5, -2.0]]))
    with pytest.raises(ValueError, match="row 0 sums to"):
        mk.check_generator(Q, convention="row")
    mk.check_generator(Q.T, convention="row")
    with pytest.raises(ValueError, match="square"):
        mk.check_generator(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        mk.check_generator(np.array([[np.nan, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="convention"):
        mk.check_generator(Q, convention="columns")


def test_classes_irreducibility_and_uniqueness():
    # 0 → 1 → 2 → 1 : {1, 2} closed, 0 transient
    Q = np.zeros((3, 3))
    Q[1, 0], Q[2, 1], Q[1, 2] = 1.0, 2.0, 3.0
    Q -= np.diag(Q.sum(axis=0))
    assert sorted(map(sorted, mk.communicating_classes(Q))) == [[0], [1, 2]]
    assert mk.closed_classes(Q) == [[1, 2]]
    assert not mk.is_irreducible(Q)
    p = mk.stationary_distribution(Q)  # unique: one closed class
    assert np.allclose(p, [0.0, 3 / 5, 2 / 5], atol=1e-14)
    # two disjoint chains: two closed classes, no unique p
    Q2 = np.zeros((4, 4))
    Q2[:2, :2] = [[-1, 1], [1, -1]]
    Q2[2:, 2:] = [[-1, 2], [1, -2]]
    with pytest.raises(ValueError, match="2 closed communicating classes"):
        mk.stationary_distribution(Q2)


def test_two_state_closed_forms():
    a, b = 0.7, 2.3
    Q = np.array([[-a, b], [a, -b]])
    assert np.allclose(mk.stationary_distribution(Q), [b / (a + b), a / (a + b)], atol=1e-15)
    assert mk.spectral_gap(Q) == pytest.approx(a + b, rel=1e-12)


@given(n=st.integers(2, 6), seed=st.integers(0, 2**16), density=st.floats(0.0, 1.0))
def test_random_irreducible_generators(n, seed, density):
    Q = _random_generator(np.random.default_rng(seed), n, density)
    assert mk.is_irreducible(Q)
    p = mk.stationary_distribution(Q)
    assert p.min() > 0 and abs(p.sum() - 1) <= 1e-14
    assert np.abs(Q @ p).max() <= 1e-13 * np.abs(Q).max()
    assert mk.spectral_gap(Q) > 0
    b = np.random.default_rng(seed + 1).standard_normal(n)
    b -= b.mean()
    h = mk.zero_sum_solve(Q, b)
    assert np.abs(Q @ h - b).max() <= 1e-12 * (1 + np.abs(b).max()) * np.abs(Q).max()
    assert abs(h.sum()) <= 1e-12


@pytest.mark.parametrize("n", [2, 3])
def test_example_derivatives_by_finite_differences(n):
    c = np.arange(n, dtype=float)
    for y in (-1.3, 0.0, 0.4, 1.7):
        h = 1e-6
        fd = (mk.example_generator(n, y + h) - mk.example_generator(n, y - h)) / (2 * h)
        assert np.abs(fd - mk.example_generator_dy(n, y)).max() <= 1e-8
        Q, dQ = mk.example_generator(n, y), mk.example_generator_dy(n, y)
        dp = mk.stationary_derivative(Q, dQ)
        fdp = (
            mk.stationary_distribution(mk.example_generator(n, y + h))
            - mk.stationary_distribution(mk.example_generator(n, y - h))
        ) / (2 * h)
        assert np.abs(dp - fdp).max() <= 1e-8
        h1 = mk.first_order_correction(Q, dQ, c, y, 0.3)
        g0 = -y + c @ mk.stationary_distribution(Q) + np.sin(0.3)
        assert np.abs(Q @ h1 - dp * g0).max() <= 1e-13 and abs(h1.sum()) <= 1e-14


def test_example_chains_agree_with_theory():
    for n in tm.EXAMPLE_CHAINS:
        Qs = sp.lambdify(tm.y, tm.example_generator(n), modules="numpy")
        for y in np.linspace(-2, 2, 9):
            assert np.abs(np.array(Qs(y), dtype=float) - mk.example_generator(n, y)).max() <= 1e-15
    with pytest.raises(ValueError, match="example chains"):
        mk.example_generator(4, 0.0)


def test_integrate_coupled_stays_on_simplex_and_validates():
    n = 3

    def gen(y):
        return mk.example_generator(n, y)

    def gdy(y):
        return mk.example_generator_dy(n, y)

    run = mk.integrate_coupled(gen, gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [0, 0.5, 1.0])
    assert run.success and np.abs(run.x.sum(axis=1) - 1).max() <= 1e-10 and run.x.min() >= -1e-12
    with pytest.raises(ValueError, match="method"):
        mk.integrate_coupled(gen, gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [0, 1], method="RK45")
    with pytest.raises(ValueError, match="eps must be >"):
        mk.integrate_coupled(gen, gdy, 0.0, [1, 0, 0], 0.2, np.arange(3.0), [0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        mk.integrate_coupled(gen, gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [1, 0])
    with pytest.raises(ValueError, match="sums to"):
        mk.integrate_coupled(
            lambda y: gen(y) - np.eye(3), gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [0, 1]
        )


def test_generator_violation_measures():
    G = np.array([[-1.0, 0.5], [1.0, -0.5]])
    assert all(v == 0 for v in mk.generator_violation(G).values())
    B = G.copy()
    B[0, 1] = -0.25
    w = mk.generator_violation(B)
    assert w["negative_offdiag"] == 0.25 and w["sum_defect"] == pytest.approx(0.75)
    assert w["negative_mass_fraction"] == pytest.approx(0.25 / 1.25)
    assert mk.generator_violation(G.T, "row") == mk.generator_violation(G, "column")


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("mask", ["causal", "block_bidirectional"])
def test_attention_linearisation_matches_central_differences(norm, mask):
    cfg = ModelConfig(T=4, P=2, d=3, mask=mask, norm=norm)
    lp = init_model(cfg, 1, 5).layers[0]
    X = np.random.default_rng(1).standard_normal((4, 3))
    J = mk.attention_mixing_operator(cfg, lp, X, "linearised")
    h = 1e-6
    fd = np.empty_like(J)
    for k in range(12):
        E = np.zeros(12)
        E[k] = h
        fd[:, k] = (
            attention(cfg, lp, X + E.reshape(4, 3)) - attention(cfg, lp, X - E.reshape(4, 3))
        ).ravel() / (2 * h)
    assert np.abs(J - fd).max() <= 1e-8
    with pytest.raises(ValueError, match="kind"):
        mk.attention_mixing_operator(cfg, lp, X, "jacobian")


# --------------------------------------------------------------------------- theory


def test_theory_two_state_closed_form_and_generator_test():
    Q = tm.example_generator(2)
    assert tm.is_generator(Q) and tm.is_generator(Q.T, "row")
    p = tm.stationary_distribution(Q).expr
    a, b = sp.exp(tm.y), 1 + tm.y**2
    assert sp.simplify(p[0] - b / (a + b)) == 0 and sp.simplify(p[1] - a / (a + b)) == 0
    with pytest.raises(ValueError, match="closed classes"):
        tm.stationary_distribution(sp.zeros(2, 2))


@pytest.mark.parametrize("n", [2, 3])
def test_theory_slow_manifold_residuals_are_exactly_zero(n):
    sm = tm.slow_manifold(n)
    assert all(r == 0 for r in sm.residual_invariance) and sm.residual_sum == 0
    y0 = 0.37
    assert abs(sum(sm.p_numeric(y0)) - 1) <= 1e-15
    assert abs(sum(sm.h1_numeric(y0, 0.8))) <= 1e-14


@pytest.mark.parametrize("P", [1, 2, 5])
def test_theory_within_block_stationary(P):
    bi = tm.within_block_stationary("block_bidirectional", P)
    assert list(bi["p_st"]) == [sp.Rational(1, P)] * P and bi["irreducible"]
    ca = tm.within_block_stationary("block_causal", P)
    assert list(ca["p_st"]) == [1] + [0] * (P - 1)
    assert ca["closed_classes"] == [[0]] and ca["null_dim"] == 1
    assert ca["irreducible"] == (P == 1)
    assert ca["eigenvalues"] == {sp.Rational(1, k) - 1: 1 for k in range(1, P + 1)}


def test_stiff_methods_agree_on_the_coupled_system():
    n = 3

    def gen(y):
        return mk.example_generator(n, y)

    def gdy(y):
        return mk.example_generator_dy(n, y)

    t = np.linspace(0.0, 2.0, 5)
    runs = [
        mk.integrate_coupled(gen, gdy, 1e-3, [0.2, 0.3, 0.5], 0.5, np.arange(3.0), t, method=m)
        for m in ("Radau", "BDF", "LSODA")
    ]
    for r in runs[1:]:
        assert np.abs(r.x - runs[0].x).max() <= 1e-8 and np.abs(r.y - runs[0].y).max() <= 1e-8
