"""Unit and property tests of numerics.toy.markov and theory.markov (claims F2, F3)."""

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from fastslow.numerics.model.layer import attention
from fastslow.numerics.model.weights import ModelConfig, init_model
from fastslow.numerics.toy import markov
from fastslow.theory import markov as theory_markov


def _random_generator(rng, n, density=1.0):
    R = rng.uniform(0.1, 2.0, (n, n)) * (rng.uniform(size=(n, n)) < density)
    for i in range(n):  # a directed cycle keeps it irreducible
        R[(i + 1) % n, i] = rng.uniform(0.1, 2.0)
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(axis=0))


def _example_functions(n: int) -> tuple:
    """``Q(y)`` and ``∂Q/∂y`` of the example chain with ``n`` states, as functions of ``y``."""
    return (lambda y: markov.example_generator(n, y)), (lambda y: markov.example_generator_dy(n, y))


# --------------------------------------------------------------------------- validation


def test_check_generator_names_the_violation():
    Q = np.array([[-1.0, 2.0], [1.0, -2.0]])
    assert markov.check_generator(Q) is not None
    with pytest.raises(ValueError, match=r"Q\[0, 1\] = -2 is negative"):
        markov.check_generator(np.array([[2.0, -2.0], [-2.0, 2.0]]))
    with pytest.raises(ValueError, match="column 0 sums to"):
        markov.check_generator(np.array([[-1.0, 2.0], [0.5, -2.0]]))
    with pytest.raises(ValueError, match="row 0 sums to"):
        markov.check_generator(Q, convention="row")
    markov.check_generator(Q.T, convention="row")
    with pytest.raises(ValueError, match="square"):
        markov.check_generator(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        markov.check_generator(np.array([[np.nan, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="convention"):
        markov.check_generator(Q, convention="columns")


def test_classes_irreducibility_and_uniqueness():
    # 0 → 1 → 2 → 1 : {1, 2} closed, 0 transient
    Q = np.zeros((3, 3))
    Q[1, 0], Q[2, 1], Q[1, 2] = 1.0, 2.0, 3.0
    Q -= np.diag(Q.sum(axis=0))
    assert sorted(map(sorted, markov.communicating_classes(Q))) == [[0], [1, 2]]
    assert markov.closed_classes(Q) == [[1, 2]]
    assert not markov.is_irreducible(Q)
    p = markov.stationary_distribution(Q)  # unique: one closed class
    assert np.allclose(p, [0.0, 3 / 5, 2 / 5], atol=1e-14)
    # two disjoint chains: two closed classes, no unique p
    Q2 = np.zeros((4, 4))
    Q2[:2, :2] = [[-1, 1], [1, -1]]
    Q2[2:, 2:] = [[-1, 2], [1, -2]]
    with pytest.raises(ValueError, match="2 closed communicating classes"):
        markov.stationary_distribution(Q2)


@given(st.integers(1, 9), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1))
def test_reachability_is_the_transitive_closure(n, density, seed):
    """Warshall's closure against repeated Boolean squaring (the form claim F1 used before)."""
    A = np.random.default_rng(seed).uniform(size=(n, n)) < density
    R = A | np.eye(n, dtype=bool)
    while not np.array_equal(R2 := (R.astype(int) @ R.astype(int)) > 0, R):
        R = R2
    assert np.array_equal(markov.reachability(A), R)


def test_closed_classes_of_mask_graphs_and_their_periods():
    """Block masks: one closed class per block, aperiodic; a causal mask: token 0 alone; a
    directed cycle of 4 tokens: one class of period 4; two tokens attending to each other only:
    period 2."""
    cfg = ModelConfig(T=8, P=4, d=2, mask="block_bidirectional")
    assert markov.mask_closed_classes(cfg.mask_array) == [
        {"tokens": [0, 1, 2, 3], "period": 1},
        {"tokens": [4, 5, 6, 7], "period": 1},
    ]
    causal = ModelConfig(T=8, P=4, d=2, mask="causal").mask_array
    assert markov.mask_closed_classes(causal) == [{"tokens": [0], "period": 1}]
    cycle = np.roll(np.eye(4, dtype=bool), 1, axis=1)
    assert markov.mask_closed_classes(cycle) == [{"tokens": [0, 1, 2, 3], "period": 4}]
    swap = np.array([[0, 1], [1, 0]], dtype=bool)
    assert markov.mask_closed_classes(swap) == [{"tokens": [0, 1], "period": 2}]


def test_two_state_closed_forms():
    a, b = 0.7, 2.3
    Q = np.array([[-a, b], [a, -b]])
    assert np.allclose(markov.stationary_distribution(Q), [b / (a + b), a / (a + b)], atol=1e-15)
    assert markov.spectral_gap(Q) == pytest.approx(a + b, rel=1e-12)


@given(n=st.integers(2, 6), seed=st.integers(0, 2**16), density=st.floats(0.0, 1.0))
def test_random_irreducible_generators(n, seed, density):
    Q = _random_generator(np.random.default_rng(seed), n, density)
    assert markov.is_irreducible(Q)
    p = markov.stationary_distribution(Q)
    assert p.min() > 0 and abs(p.sum() - 1) <= 1e-14
    assert np.abs(Q @ p).max() <= 1e-13 * np.abs(Q).max()
    assert markov.spectral_gap(Q) > 0
    b = np.random.default_rng(seed + 1).standard_normal(n)
    b -= b.mean()
    h = markov.zero_sum_solve(Q, b)
    assert np.abs(Q @ h - b).max() <= 1e-12 * (1 + np.abs(b).max()) * np.abs(Q).max()
    assert abs(h.sum()) <= 1e-12


@pytest.mark.parametrize("n", [2, 3])
def test_example_derivatives_by_finite_differences(n):
    c = np.arange(n, dtype=float)
    for y in (-1.3, 0.0, 0.4, 1.7):
        h = 1e-6
        fd = (markov.example_generator(n, y + h) - markov.example_generator(n, y - h)) / (2 * h)
        assert np.abs(fd - markov.example_generator_dy(n, y)).max() <= 1e-8
        Q, dQ = markov.example_generator(n, y), markov.example_generator_dy(n, y)
        dp = markov.stationary_derivative(Q, dQ)
        fdp = (
            markov.stationary_distribution(markov.example_generator(n, y + h))
            - markov.stationary_distribution(markov.example_generator(n, y - h))
        ) / (2 * h)
        assert np.abs(dp - fdp).max() <= 1e-8
        h1 = markov.first_order_correction(Q, dQ, c, y, 0.3)
        g0 = -y + c @ markov.stationary_distribution(Q) + np.sin(0.3)
        assert np.abs(Q @ h1 - dp * g0).max() <= 1e-13 and abs(h1.sum()) <= 1e-14


def test_example_chains_agree_with_theory():
    for n in theory_markov.EXAMPLE_CHAINS:
        Qs = sp.lambdify(theory_markov.y, theory_markov.example_generator(n), modules="numpy")
        for y in np.linspace(-2, 2, 9):
            assert (
                np.abs(np.array(Qs(y), dtype=float) - markov.example_generator(n, y)).max() <= 1e-15
            )
    with pytest.raises(ValueError, match="example chains"):
        markov.example_generator(4, 0.0)


def test_integrate_coupled_stays_on_simplex_and_validates():
    gen, gdy = _example_functions(3)
    run = markov.integrate_coupled(gen, gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [0, 0.5, 1.0])
    assert run.success and np.abs(run.x.sum(axis=1) - 1).max() <= 1e-10 and run.x.min() >= -1e-12
    with pytest.raises(ValueError, match="method"):
        markov.integrate_coupled(
            gen, gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [0, 1], method="RK45"
        )
    with pytest.raises(ValueError, match="eps must be >"):
        markov.integrate_coupled(gen, gdy, 0.0, [1, 0, 0], 0.2, np.arange(3.0), [0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        markov.integrate_coupled(gen, gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [1, 0])
    with pytest.raises(ValueError, match="sums to"):
        markov.integrate_coupled(
            lambda y: gen(y) - np.eye(3), gdy, 1e-2, [1, 0, 0], 0.2, np.arange(3.0), [0, 1]
        )


def test_generator_violation_measures():
    G = np.array([[-1.0, 0.5], [1.0, -0.5]])
    assert all(v == 0 for v in markov.generator_violation(G).values())
    B = G.copy()
    B[0, 1] = -0.25
    w = markov.generator_violation(B)
    assert w["negative_offdiag"] == 0.25 and w["sum_defect"] == pytest.approx(0.75)
    assert w["negative_mass_fraction"] == pytest.approx(0.25 / 1.25)
    assert markov.generator_violation(G.T, "row") == markov.generator_violation(G, "column")


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("mask", ["causal", "block_bidirectional"])
def test_attention_linearisation_matches_central_differences(norm, mask):
    cfg = ModelConfig(T=4, P=2, d=3, mask=mask, norm=norm)
    lp = init_model(cfg, 1, 5).layers[0]
    X = np.random.default_rng(1).standard_normal((4, 3))
    J = markov.attention_mixing_operator(cfg, lp, X, "linearised")
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
        markov.attention_mixing_operator(cfg, lp, X, "jacobian")


# --------------------------------------------------------------------------- theory


def test_theory_two_state_closed_form_and_generator_test():
    Q = theory_markov.example_generator(2)
    assert theory_markov.is_generator(Q) and theory_markov.is_generator(Q.T, "row")
    p = theory_markov.stationary_distribution(Q).expr
    a, b = sp.exp(theory_markov.y), 1 + theory_markov.y**2
    assert sp.simplify(p[0] - b / (a + b)) == 0 and sp.simplify(p[1] - a / (a + b)) == 0
    with pytest.raises(ValueError, match="closed classes"):
        theory_markov.stationary_distribution(sp.zeros(2, 2))


@pytest.mark.parametrize("n", [2, 3])
def test_theory_slow_manifold_residuals_are_exactly_zero(n):
    sm = theory_markov.slow_manifold(n)
    assert all(r == 0 for r in sm.residual_invariance) and sm.residual_sum == 0
    y0 = 0.37
    assert abs(sum(sm.p_numeric(y0)) - 1) <= 1e-15
    assert abs(sum(sm.h1_numeric(y0, 0.8))) <= 1e-14


@pytest.mark.parametrize("P", [1, 2, 5])
def test_theory_within_block_stationary(P):
    bi = theory_markov.within_block_stationary("block_bidirectional", P)
    assert list(bi["p_st"]) == [sp.Rational(1, P)] * P and bi["irreducible"]
    ca = theory_markov.within_block_stationary("block_causal", P)
    assert list(ca["p_st"]) == [1] + [0] * (P - 1)
    assert ca["closed_classes"] == [[0]] and ca["null_dim"] == 1
    assert ca["irreducible"] == (P == 1)
    assert ca["eigenvalues"] == {sp.Rational(1, k) - 1: 1 for k in range(1, P + 1)}


def test_stiff_methods_agree_on_the_coupled_system():
    gen, gdy = _example_functions(3)
    t = np.linspace(0.0, 2.0, 5)
    runs = [
        markov.integrate_coupled(gen, gdy, 1e-3, [0.2, 0.3, 0.5], 0.5, np.arange(3.0), t, method=m)
        for m in ("Radau", "BDF", "LSODA")
    ]
    for r in runs[1:]:
        assert np.abs(r.x - runs[0].x).max() <= 1e-8 and np.abs(r.y - runs[0].y).max() <= 1e-8


# --------------------------------------------------------------------------- user families

Y, T = sp.symbols("y t", real=True)
X3 = sp.symbols("x0:3")


def _family_generator(rates: dict, n: int) -> sp.Matrix:
    """``Q`` with the jump rates ``{(i, j): rate of j → i}`` and zero column sums."""
    Q = sp.zeros(n, n)
    for (i, j), rate in rates.items():
        Q[i, j] = rate
    for j in range(n):
        Q[j, j] = -sum(Q[i, j] for i in range(n) if i != j)
    return Q


FAMILY_Q = _family_generator(
    {
        (1, 0): sp.Rational(7, 10) * sp.exp(sp.Rational(3, 10) * Y),
        (0, 1): 1 + 2 / (1 + Y**2),
        (2, 1): sp.Rational(3, 2) + sp.sin(Y) / 2,
        (1, 2): sp.sqrt(1 + Y**2),
        (0, 2): sp.Float(1.3) * sp.exp(-Y / 2),
        (2, 0): sp.Rational(1, 2),
    },
    3,
)
"""A 3-state family with fractional exponential rates, a float, a root and a sine."""
FAMILY_SLOW = -Y + 4 * X3[0] * X3[1] - X3[2] * Y / 2 + sp.cos(2 * T) / 2
"""A slow field nonlinear in the fast state."""


def test_family_algebra_reads_exponentials_roots_floats_and_functions():
    alg = theory_markov.family_algebra([sp.exp(sp.Rational(3, 10) * Y), 2 * sp.exp(-Y / 2)], Y)
    assert alg.atoms == (sp.exp(Y / 10),)  # one base: exp(3y/10) = u³, exp(−y/2) = u⁻⁵
    assert alg.convert(sp.exp(Y / 2) * sp.exp(-Y / 2)) == 1
    alg = theory_markov.family_algebra(
        [sp.exp(Y / 97) + sp.exp(Y / 89)], Y
    )  # lcm 8633 > 60: two atoms
    assert set(alg.atoms) == {sp.exp(Y / 97), sp.exp(Y / 89)}
    alg = theory_markov.family_algebra([sp.Float(0.3) * sp.sqrt(1 + Y**2) + sp.sin(Y) + T], Y)
    assert alg.convert(sp.Float(0.3)) == alg.convert(sp.Rational(3, 10))  # floats as decimals
    assert sp.cos(Y) in alg.atoms  # the derivative of sin(y) is a generator too
    for atom, d in zip(alg.atoms, alg.derivs[1:]):  # derivs[0] is dy/dy
        if d is not None:
            assert sp.simplify(alg.to_sympy(d) - sp.diff(atom, Y)) == 0, atom


def test_family_stationary_distribution_is_a_probability_in_the_kernel_of_q():
    st_ = theory_markov.stationary_distribution(FAMILY_Q, Y)
    assert all(r == 0 for r in st_.residual)
    fQ = sp.lambdify(Y, FAMILY_Q, modules="numpy")
    for yv in (-1.7, 0.0, 0.9):
        p = np.array(st_.numeric(yv), dtype=float)
        Q = np.array(fQ(yv), dtype=float)
        assert abs(p.sum() - 1) <= 1e-15 and p.min() > 0
        assert np.abs(Q @ p).max() <= 1e-15 * np.abs(Q).max() * 4
        assert np.abs(p - markov.stationary_distribution(Q)).max() <= 1e-14


def test_family_h1_solves_its_defining_equations_exactly():
    sm = theory_markov.family_slow_manifold(FAMILY_Q, FAMILY_SLOW, Y, X3, T)
    assert all(r == 0 for r in sm.residual_invariance) and sm.residual_sum == 0
    assert sm.c is None and sm.slow == FAMILY_SLOW
    # the same equations with SymPy's own derivative, evaluated at 40 digits (independent of the
    # field in which they were derived): Q p = 0, 1ᵀp = 1, Q h_1 = ∂_y p · g(p), 1ᵀh_1 = 0 (for
    # Q with its float 1.3 read as the decimal 13/10, as the derivation reads it)
    Q = sp.nsimplify(FAMILY_Q, rational=True)
    g0 = FAMILY_SLOW.xreplace(dict(zip(X3, sm.p)))
    residuals = [
        *(Q * sm.p),
        sum(sm.p) - 1,
        *(Q * sm.h1 - sp.diff(sm.p, Y) * g0),
        sum(sm.h1),
    ]
    at_40_digits = sp.lambdify((Y, T), residuals, modules="mpmath")
    with mpmath.workdps(40):
        for yv, tv in ((-1.5, 0.3), (0.4, 2.0), (1.9, -1.0)):
            assert max(abs(r) for r in at_40_digits(mpmath.mpf(yv), mpmath.mpf(tv))) < 1e-30


def test_family_functions_and_h1_agree_with_the_numerics():
    sm = theory_markov.family_slow_manifold(FAMILY_Q, FAMILY_SLOW, Y, X3, T)
    fn = theory_markov.family_functions(FAMILY_Q, FAMILY_SLOW, Y, X3, T)
    slow = markov.SlowField(fn.slow, fn.slow_gradient)
    x, h = np.array([0.2, 0.3, 0.5]), 1e-6
    for yv, tv in ((-1.2, 0.4), (0.7, 2.0)):
        fd = (fn.generator(yv + h) - fn.generator(yv - h)) / (2 * h)
        assert np.abs(fd - fn.generator_dy(yv)).max() <= 1e-8
        gx, gy = fn.slow_gradient(yv, x, tv)
        assert abs((fn.slow(yv + h, x, tv) - fn.slow(yv - h, x, tv)) / (2 * h) - gy) <= 1e-8
        e0 = np.eye(3)[0] * h
        assert abs((fn.slow(yv, x + e0, tv) - fn.slow(yv, x - e0, tv)) / (2 * h) - gx[0]) <= 1e-8
        Q, dQ = fn.generator(yv), fn.generator_dy(yv)
        h1 = markov.first_order_correction(Q, dQ, slow, yv, tv)
        assert np.abs(np.array(sm.h1_numeric(yv, tv)) - h1).max() <= 1e-12
        assert np.abs(np.array(sm.Q_numeric(yv), dtype=float) - Q).max() <= 1e-14


def test_family_slow_manifold_of_the_example_chain_matches_the_example():
    x = sp.symbols("x0:3")
    slow = -theory_markov.y + x[1] + 2 * x[2] + sp.sin(theory_markov.t)
    fam = theory_markov.family_slow_manifold(
        theory_markov.example_generator(3), slow, theory_markov.y, x, theory_markov.t
    )
    ex = theory_markov.slow_manifold(3)
    ys, ts = np.linspace(-2, 2, 9), np.linspace(0, 3, 9)
    assert np.abs(np.array(fam.p_numeric(ys)) - np.array(ex.p_numeric(ys))).max() <= 1e-14
    assert np.abs(np.array(fam.h1_numeric(ys, ts)) - np.array(ex.h1_numeric(ys, ts))).max() <= 1e-13
    assert sp.simplify(fam.g0 - ex.g0) == 0


def test_family_slow_manifold_rejects_several_closed_classes_and_non_generators():
    blocks = _family_generator({(1, 0): sp.exp(Y), (0, 1): 1, (3, 2): 2, (2, 3): 1 + Y**2}, 4)
    x4 = sp.symbols("x0:4")
    with pytest.raises(ValueError, match="closed"):
        theory_markov.family_slow_manifold(blocks, -Y + x4[0], Y, x4, T)
    leaky = FAMILY_Q - sp.eye(3) / 2  # columns sum to −1/2: mass decays, Q p_st ≠ 0
    with pytest.raises(ArithmeticError, match="Q p = 0"):
        theory_markov.family_slow_manifold(leaky, FAMILY_SLOW, Y, X3, T)


def test_a_slow_field_reproduces_the_coupling_vector_exactly():
    """``integrate_coupled`` with the example field as a SlowField is the run with ``c``."""
    gen, gdy = _example_functions(3)
    c, t = np.arange(3.0), np.linspace(0.0, 1.0, 5)
    a = markov.integrate_coupled(gen, gdy, 1e-2, [0.2, 0.3, 0.5], 0.4, c, t)
    b = markov.integrate_coupled(
        gen, gdy, 1e-2, [0.2, 0.3, 0.5], 0.4, markov.linear_slow_field(c), t
    )
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    with pytest.raises(ValueError, match="c must have shape"):
        markov.integrate_coupled(gen, gdy, 1e-2, [0.2, 0.3, 0.5], 0.4, c[:2], t)


# --------------------------------------------------------------------------- F2's zero test


@pytest.mark.parametrize(
    "expr, zero",
    [
        (sp.Integer(0), True),
        (
            sp.sin(theory_markov.y) ** 2 + sp.cos(theory_markov.y) ** 2 - 1,
            True,
        ),  # 0 only after simplify
        (
            sp.exp(theory_markov.y) / (1 + sp.exp(theory_markov.y))
            - 1
            + 1 / (1 + sp.exp(theory_markov.y)),
            True,
        ),
        (
            sp.exp(theory_markov.y) - 1 - theory_markov.y,
            False,
        ),  # ≠ 0 at every sample point but y = 0
        (sp.Float("1e-25") * sp.exp(theory_markov.y), False),  # tiny, still not 0
    ],
)
def test_f2_decides_whether_d_p_st_is_identically_zero_exactly(expr, zero):
    from fastslow.verify.checks.f2 import identically_zero

    points = [sp.Float(v, 50) for v in (-1.15, 0.0, 1.15)]
    assert identically_zero(expr, points) is zero


@pytest.mark.parametrize("n", [2, 3])
def test_the_reference_example_chain_is_theorys(n):
    """verify.reference.chains writes F2's example chain from its definition, apart from theory:
    the two must be the same generator (a difference is a bug in one of them)."""
    from fastslow.verify.reference import chains

    difference = chains.example_chain(n, theory_markov.y) - theory_markov.example_generator(n)
    assert difference.applyfunc(sp.simplify) == sp.zeros(n, n)


def test_only_a_non_zero_rational_rate_of_y_makes_an_exponential_a_rate():
    """``exp(r·y)`` counts as a rate (a power of one shared atom ``exp(y/L)``) only for a
    rational ``r ≠ 0``; ``exp(√2·y)`` and ``exp(t·y)`` are atoms of their own."""
    ys, ts = sp.Symbol("y"), sp.Symbol("t")
    rate = theory_markov._exp_rate
    assert rate(sp.exp(ys / 3), ys) == sp.Rational(1, 3)
    assert rate(sp.exp(-2 * ys), ys) == -2
    assert rate(sp.exp(sp.sqrt(2) * ys), ys) is None
    assert rate(sp.exp(ts * ys), ys) is None
    assert rate(sp.exp(ts), ys) is None
    rates, atoms = set(), []
    theory_markov._collect_atoms(sp.exp(sp.sqrt(2) * ys) + sp.exp(ys / 2), ys, set(), rates, atoms)
    assert rates == {sp.Rational(1, 2)} and atoms == [sp.exp(sp.sqrt(2) * ys)]


@pytest.mark.parametrize(
    "kind", ["irreducible", "reducible", "not_generator_mass", "not_generator_sign"]
)
@pytest.mark.parametrize("n", [2, 3])
def test_every_example_chains_analytic_derivative_is_the_derivative_of_its_generator(kind, n):
    """``generator_dy`` is ``∂Q/∂y`` of ``generator`` (central difference at 1e-6, to 1e-8) for
    the example chain and each of its negative controls, at points of the checked grid."""
    chain = markov.example_chain(n, kind)
    h = 1e-6
    for y in (-2.5, -0.3, 0.8, 2.9):
        fd = (chain.generator(y + h) - chain.generator(y - h)) / (2 * h)
        assert np.abs(fd - chain.generator_dy(y)).max() <= 1e-8, (kind, n, y)


@pytest.mark.parametrize("P", [0, -2, 1.5, True])
def test_the_within_block_kernel_refuses_a_block_size_that_is_not_a_positive_integer(P):
    with pytest.raises(ValueError, match="P must be a positive integer"):
        theory_markov.within_block_kernel("block_causal", P)
