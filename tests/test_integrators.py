"""numerics.integrators: tableaux, order of accuracy (fitted slopes), breakpoints, work counters."""

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
from numba import njit
from scipy import stats

from fastslow.numerics.integrators import tableaux
from fastslow.numerics.integrators.base import JAC_SIG, RHS_SIG
from fastslow.numerics.integrators.integration import (
    DENSE_ORDERS,
    FD_JACOBIAN_MAX_N,
    ORDERS,
    integrate,
)
from fastslow.numerics.model.activations import SIGMAS, Activation
from fastslow.numerics.model.coupling.drivers import integrate_coupling, integrate_coupling_scipy
from fastslow.numerics.model.coupling.jacobian import frozen_kernel_jac_nb
from fastslow.numerics.model.coupling.packing import is_lower_triangular, pack_coupling
from fastslow.numerics.model.coupling.rhs import KERNEL_PANEL, coupling_rhs_nb
from fastslow.numerics.model.flow import make_rhs
from fastslow.numerics.model.layer import attention_kernel
from fastslow.numerics.model.masks import NAMED_MASKS
from fastslow.numerics.model.weights import Model, ModelConfig, init_layer, init_model


# ------------------------------------------------------------------ catalogue of problems
def linear_problem(n=6, seed=0):
    """``y' = M y`` with a known solution ``expm(tM) y0`` (diffrax's order test problem)."""
    rng = np.random.default_rng(seed)
    M = 0.5 * rng.standard_normal((n, n)) - 1.5 * np.eye(n)
    y0 = rng.standard_normal(n)
    return M, y0, lambda t: scipy.linalg.expm(t * M) @ y0


@njit(RHS_SIG, cache=True)
def stiff_rhs(t, y, p, seg, out):
    """Prothero–Robinson-type: ``y₀' = −(y₀ − cos t)/ε − sin t``, ``y₁' = y₀`` (``ε = p[0]``)."""
    out[0] = -(y[0] - np.cos(t)) / p[0] - np.sin(t)
    out[1] = y[0]


@njit(JAC_SIG, cache=True)
def stiff_jac(t, y, p, seg, J):
    J[0, 0] = -1.0 / p[0]
    J[0, 1] = 0.0
    J[1, 0] = 1.0
    J[1, 1] = 0.0


def fitted_order(method, jac=None, ks=range(3, 9)):
    M, y0, exact = linear_problem()
    errs, hs = [], []
    for k in ks:
        h = 2.0**-k
        r = integrate(lambda t, y: M @ y, (0.0, 1.0), y0, method=method, jac=jac, h_fixed=h)
        errs.append(np.abs(r.y[:, -1] - exact(1.0)).max())
        hs.append(h)
    return stats.linregress(np.log2(hs), np.log2(errs)).slope


# ------------------------------------------------------------------ tableaux
def test_dopri5_tableau_identities():
    assert np.allclose(tableaux.DP_A.sum(axis=1), tableaux.DP_C, rtol=0, atol=1e-15)
    assert abs(tableaux.DP_B.sum() - 1) < 1e-15 and abs(tableaux.DP_BHAT.sum() - 1) < 1e-15
    # order conditions up to 4 for the 5th-order weights
    b, c, A = tableaux.DP_B, tableaux.DP_C, tableaux.DP_A
    assert abs(b @ c - 1 / 2) < 1e-15 and abs(b @ c**2 - 1 / 3) < 1e-15
    assert abs(b @ A @ c - 1 / 6) < 1e-15 and abs(b @ c**3 - 1 / 4) < 1e-15


def test_ros34pw2_order_conditions_hold_for_main_and_embedded_weights():
    g, b, bh = tableaux.ROS_GAMMA, tableaux.ROS_B, tableaux.ROS_BHAT
    alpha = tableaux.ROS_ALPHA
    beta = alpha + tableaux.ROS_GAMMA_MATRIX - np.diag(np.diag(tableaux.ROS_GAMMA_MATRIX))
    bp = beta.sum(axis=1)
    a = alpha.sum(axis=1)
    for w, order in ((b, 3), (bh, 2)):
        assert abs(w.sum() - 1) < 1e-14
        assert abs(w @ bp - (0.5 - g)) < 1e-14
        if order == 3:
            assert abs(w @ a**2 - 1 / 3) < 1e-14
            assert abs(w @ beta @ bp - (1 / 6 - g + g * g)) < 1e-14
    # stiffly accurate: the weights are the last row of (α + Γ)
    assert np.allclose(b, (alpha + tableaux.ROS_GAMMA_MATRIX)[3], atol=1e-15)


def test_dop853_tableau_identities():
    """The order-8 quadrature conditions ``b·c^k = 1/(k+1)`` (k < 8, and not k = 8), those of the
    embedded weights ``b − E5`` (order 5) and ``b − E3`` (order 3), the row sums and four
    conditions of trees with inner nodes."""
    A, c, b = tableaux.DOP_A[:12], tableaux.DOP_C, tableaux.DOP_B
    assert np.allclose(A.sum(axis=1), c, rtol=0, atol=2e-15)
    for w, order in ((b, 8), (b - tableaux.DOP_E5, 5), (b - tableaux.DOP_E3, 3)):
        for k in range(order):
            assert abs(w @ c**k - 1 / (k + 1)) < 2e-15, (order, k)
        assert abs(w @ c**order - 1 / (order + 1)) > 1e-6  # exactly of this order
    assert abs(b @ A @ c - 1 / 6) < 1e-15 and abs(b @ A @ c**2 - 1 / 12) < 1e-15
    assert abs(b @ A @ A @ c - 1 / 24) < 1e-15 and abs(b @ (c * (A @ c)) - 1 / 8) < 1e-15


# ------------------------------------------------------------------ orders (diffrax-style)
ORDER_KS = {"dopri5": range(4, 9), "rosw": range(3, 9), "radau": range(1, 6), "dop853": range(4)}
"""Step sizes ``2^-k`` of the fixed-step order tests: above round-off, in the asymptotic range."""


@pytest.mark.parametrize("method", ["dopri5", "rosw", "radau", "dop853"])
def test_fixed_step_order_matches_the_method(method):
    M, _, _ = linear_problem()
    jac = (lambda t, y: M) if method not in ("dopri5", "dop853") else None
    ks = ORDER_KS[method]
    order = fitted_order(method, jac, ks=ks)
    assert abs(order - ORDERS[method]) < 0.3, order


@njit(RHS_SIG, cache=True)
def linear_rhs(t, y, p, seg, out):
    """``y' = M y`` with ``M = p`` read as n×n (the compiled path of the order tests)."""
    n = y.size
    out[:] = np.dot(p.reshape((n, n)), y)


@njit(JAC_SIG, cache=True)
def linear_jac(t, y, p, seg, J):
    n = y.size
    J[:, :] = p.reshape((n, n))


def fitted_slope(errs, hs):
    """Slope of log error against log step and its 95 % interval half-width."""
    fit = stats.linregress(np.log2(hs), np.log2(errs))
    return fit.slope, stats.t.ppf(0.975, len(hs) - 2) * fit.stderr


@pytest.mark.parametrize("method", ["dopri5", "rosw", "radau", "dop853"])
def test_compiled_fixed_step_order_matches_the_method_within_the_fitted_interval(method):
    """The compiled driver and step: the order of each method is inside the 95 % interval of the
    fitted slope widened by 0.3 (pre-asymptotic curvature)."""
    M, y0, exact = linear_problem()
    ks = ORDER_KS[method]
    errs, hs = [], []
    for k in ks:
        h = 2.0**-k
        r = integrate(
            linear_rhs, (0.0, 1.0), y0, method=method, jac=linear_jac, p=M.ravel(), h_fixed=h
        )
        assert r.compiled
        errs.append(np.abs(r.y[:, -1] - exact(1.0)).max())
        hs.append(h)
    slope, half = fitted_slope(errs, hs)
    assert abs(slope - ORDERS[method]) < half + 0.3, (slope, half)


def _weakly_nonlinear_oscillator(t, y):
    return np.array([y[1], -y[0] + 0.5 * np.sin(t) * y[0] ** 2])


def test_dop853_has_order_eight_on_a_nonlinear_problem():
    """A linear problem checks only the conditions of the trees ``b·Aᵏc``; a nonlinear one all:
    the fitted slope is 8 within its 95 % interval widened by 0.3."""
    y0 = np.array([1.0, 0.0])
    ref = scipy.integrate.solve_ivp(
        _weakly_nonlinear_oscillator, (0.0, 4.0), y0, method="DOP853", rtol=1e-13, atol=1e-16
    ).y[:, -1]
    errs, hs = [], []
    for k in ORDER_KS["dop853"]:
        r = integrate(
            _weakly_nonlinear_oscillator, (0.0, 4.0), y0, method="dop853", h_fixed=2.0**-k
        )
        errs.append(np.abs(r.y[:, -1] - ref).max())
        hs.append(2.0**-k)
    slope, half = fitted_slope(errs, hs)
    assert abs(slope - 8) < half + 0.3, (slope, half)


def test_dop853_solution_and_error_norm_are_scipys_formula():
    """One pass gives ``y + h·Σ b_j k_j`` and SciPy's DOP853 norm ``h‖e₅‖²/√(n(‖e₅‖² +
    0.01‖e₃‖²))`` (scaled by ``atol + rtol·max(|y|, |y₁|)``), for ``n`` with and without a tail
    of ``n mod 8`` entries."""
    from fastslow.numerics.integrators.dop853 import solution_and_error_norm

    rng = np.random.default_rng(3)
    for n in (16, 21):
        k = rng.standard_normal((14, n))
        y = rng.standard_normal(n)
        h, rtol, atol = 0.037, 1e-5, 1e-8
        ynew = np.empty(n)
        en = solution_and_error_norm(h, y, ynew, k.ravel(), n, rtol, atol)
        expect = y + h * (tableaux.DOP_B @ k[:12])
        np.testing.assert_allclose(ynew, expect, rtol=1e-14, atol=1e-15)
        sc = atol + rtol * np.maximum(np.abs(y), np.abs(expect))
        e5 = np.sum((tableaux.DOP_E5 @ k[:12] / sc) ** 2)
        e3 = np.sum((tableaux.DOP_E3 @ k[:12] / sc) ** 2)
        assert en == pytest.approx(h * e5 / np.sqrt(n * (e5 + 0.01 * e3)), rel=1e-13)


def test_dop853_takes_about_scipys_steps_for_the_same_tolerance():
    """The same pair, error norm and starting step as SciPy's DOP853 (the controller grows steps
    at most fivefold, SciPy's tenfold): the accepted steps within 20 % of SciPy's and the final
    error within five tolerances."""
    y0 = np.array([1.0, 0.0])
    ref = scipy.integrate.solve_ivp(
        _weakly_nonlinear_oscillator, (0.0, 10.0), y0, method="DOP853", rtol=1e-13, atol=1e-16
    ).y[:, -1]
    for rtol in (1e-6, 1e-9):
        kw = dict(rtol=rtol, atol=rtol * 1e-3)
        ours = integrate(_weakly_nonlinear_oscillator, (0.0, 10.0), y0, method="dop853", **kw)
        sp = scipy.integrate.solve_ivp(
            _weakly_nonlinear_oscillator, (0.0, 10.0), y0, method="DOP853", **kw
        )
        assert abs(ours.nsteps - (sp.t.size - 1)) <= 0.2 * (sp.t.size - 1), (ours.nsteps, sp.t.size)
        err = np.abs(ours.y[:, -1] - ref) / (kw["atol"] + rtol * np.abs(ref))
        assert ours.success and err.max() < 5, err


@pytest.mark.parametrize("method", ["dopri5", "radau"])
@pytest.mark.parametrize("compiled", [False, True])
def test_dense_output_has_the_order_of_the_continuous_extension(method, compiled):
    """Dense output at the midpoints of fixed steps: error ``O(h^(q+1))`` for the continuous
    extension of order ``q`` (DOPRI5: 4, Radau's collocation polynomial: 3), fitted slope with
    interval; the step ends are the steps' values exactly."""
    M, y0, exact = linear_problem()
    errs, hs = [], []
    for k in range(2, 7):
        h = 2.0**-k
        te = np.concatenate([[0.0], np.arange(0.5, 2**k) * h, [1.0]])
        fun, jac = (linear_rhs, linear_jac) if compiled else (lambda t, y: M @ y, lambda t, y: M)
        kw = dict(method=method, jac=jac, h_fixed=h, p=M.ravel())
        r = integrate(fun, (0.0, 1.0), y0, t_eval=te, dense_output=True, **kw)
        plain = integrate(fun, (0.0, 1.0), y0, **kw)
        assert r.success and np.array_equal(r.t, te) and r.nsteps == 2**k
        assert np.array_equal(r.y[:, -1], plain.y[:, -1]) and np.array_equal(r.y[:, 0], y0)
        ex = np.array([exact(t) for t in te[1:-1]]).T
        errs.append(np.abs(r.y[:, 1:-1] - ex).max())
        hs.append(h)
    slope, half = fitted_slope(errs, hs)
    assert abs(slope - (DENSE_ORDERS[method] + 1)) < half + 0.35, (slope, half)


@pytest.mark.parametrize("method", ["rosw", "dop853"])
def test_dense_output_is_refused_for_a_method_without_a_continuous_extension(method):
    """ROS34PW2 and DOP853 have no ``interp``: ``dense_output=True`` is refused before any step,
    so the driver never calls the placeholder bound in its stead (``driver.no_interp``), which
    writes NaN, the value of a dense output nothing wrote, never a number that passes for the
    solution."""
    from fastslow.numerics.integrators import driver

    with pytest.raises(ValueError, match="continuous extension"):
        integrate(lambda t, y: -y, (0.0, 1.0), [1.0], method=method, dense_output=True)
    for compiled in (True, False):
        interp = driver.bound_driver(method, compiled=compiled).functions[3]
        assert getattr(interp, "py_func", interp) is driver.no_interp
    out = np.zeros(3)
    driver.no_interp(0.5, 0.1, np.ones(3), np.full(3, 2.0), np.ones(8), out)
    assert np.isnan(out).all()


def test_rosenbrock_w_keeps_order_three_with_a_wrong_jacobian():
    M, _, _ = linear_problem()
    for J in (np.zeros_like(M), 0.3 * M + np.eye(len(M)), -np.eye(len(M))):
        assert abs(fitted_order("rosw", lambda t, y, J=J: J) - 3) < 0.3


def test_radau_transform_diagonalises_the_inverse_butcher_matrix():
    L = tableaux.RADAU_TI @ np.linalg.inv(tableaux.RADAU_A) @ tableaux.RADAU_T
    alpha, beta = tableaux.RADAU_MU_COMPLEX.real, -tableaux.RADAU_MU_COMPLEX.imag
    want = np.array([[tableaux.RADAU_MU_REAL, 0, 0], [0, alpha, beta], [0, -beta, alpha]])
    assert np.allclose(L, want, atol=1e-12)
    assert np.allclose(tableaux.RADAU_A.sum(axis=1), tableaux.RADAU_C, atol=1e-15)
    assert np.allclose(tableaux.RADAU_A[2], [(16 - np.sqrt(6)) / 36, (16 + np.sqrt(6)) / 36, 1 / 9])


def test_adaptive_error_is_within_a_few_tolerances():
    M, y0, exact = linear_problem()
    for method in ("dopri5", "rosw", "radau", "dop853"):
        for rtol in (1e-4, 1e-7):
            r = integrate(
                lambda t, y: M @ y,
                (0.0, 2.0),
                y0,
                method=method,
                rtol=rtol,
                atol=rtol * 1e-2,
                jac=(lambda t, y: M) if method not in ("dopri5", "dop853") else None,
            )
            ref = exact(2.0)
            err = np.sqrt(np.mean(((r.y[:, -1] - ref) / (rtol * 1e-2 + rtol * np.abs(ref))) ** 2))
            assert r.success and err < 5, (method, rtol, err)


def test_radau_takes_scipys_steps_and_factorisations_on_van_der_pol():
    """Radau IIA runs Hairer's controller as SciPy's Radau does (Gustafsson's predictive step,
    the Newton safety factor, a step kept unchanged, its factorisation reused, while the proposed
    growth is below 1.2): on the stiff van der Pol oscillator (μ = 1000, a relaxation period) the
    accepted steps, the LU factorisations and the right-hand-side evaluations (the Newton
    iterations) within 5 % of SciPy's over three tolerances (measured within 1.5 %; the 1.2 band
    widened to 2.2 gives 12–22 % fewer factorisations; Newton iterating on after convergence
    2.5 times the evaluations)."""
    mu = 1000.0

    def f(t, y):
        return np.array([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])

    def jac(t, y):
        return np.array([[0.0, 1.0], [-2.0 * mu * y[0] * y[1] - 1.0, mu * (1.0 - y[0] ** 2)]])

    y0 = np.array([2.0, 0.0])
    for rtol in (1e-4, 1e-6, 1e-8):
        kw = dict(rtol=rtol, atol=rtol * 1e-2)
        ours = integrate(f, (0.0, 3000.0), y0, method="radau", jac=jac, **kw)
        sp = scipy.integrate.solve_ivp(f, (0.0, 3000.0), y0, method="Radau", jac=jac, **kw)
        assert ours.success and sp.success
        assert abs(ours.nsteps - (sp.t.size - 1)) <= 0.05 * (sp.t.size - 1), (
            rtol,
            ours.nsteps,
            sp.t.size,
        )
        assert abs(ours.nlu - sp.nlu) <= 0.05 * sp.nlu, (rtol, ours.nlu, sp.nlu)
        assert abs(ours.nfev - sp.nfev) <= 0.05 * sp.nfev, (rtol, ours.nfev, sp.nfev)


# ------------------------------------------------------------------ stiffness and work counters
def test_stiff_mode_work_budget_and_explicit_cost_grows_like_one_over_eps():
    p = np.array([1e-4])
    y0 = np.array([1.0, 0.0])
    r = integrate(
        stiff_rhs, (0.0, 2.0), y0, method="rosw", jac=stiff_jac, p=p, rtol=1e-6, atol=1e-9
    )
    exact0 = np.cos(2.0)
    assert r.success and abs(r.y[0, -1] - exact0) < 1e-5
    # if the stiff part were not treated implicitly these numbers would be much bigger
    # four stages per step, f(t0, y0) and the starting-step estimate's call
    assert r.nsteps < 200 and r.nfev == 4 * (r.nsteps + r.nreject) + 2 and r.njev <= r.nsteps + 2
    rd = integrate(
        stiff_rhs, (0.0, 2.0), y0, method="radau", jac=stiff_jac, p=p, rtol=1e-6, atol=1e-9
    )
    assert (
        rd.success and abs(rd.y[0, -1] - exact0) < 1e-5 and rd.nsteps < 100 and rd.njev < rd.nsteps
    )
    e = integrate(stiff_rhs, (0.0, 2.0), y0, method="dopri5", p=p, rtol=1e-6, atol=1e-9)
    assert e.success and e.nsteps > 2.0 / p[0] / 10
    assert r.compiled and e.compiled


def test_compiled_and_python_paths_give_the_same_steps():
    p = np.array([1e-2])
    y0 = np.array([1.0, 0.0])
    a = integrate(
        stiff_rhs, (0.0, 1.0), y0, method="rosw", jac=stiff_jac, p=p, rtol=1e-6, atol=1e-9
    )

    def f(t, y):
        return np.array([-(y[0] - np.cos(t)) / p[0] - np.sin(t), y[0]])

    b = integrate(
        f,
        (0.0, 1.0),
        y0,
        method="rosw",
        jac=lambda t, y: np.array([[-1 / p[0], 0.0], [1.0, 0.0]]),
        rtol=1e-6,
        atol=1e-9,
    )
    assert a.nsteps == b.nsteps and a.nfev == b.nfev and not b.compiled
    assert np.allclose(a.y, b.y, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------------ the automatic choice
@pytest.mark.parametrize("dense", [False, True])
def test_auto_switches_to_radau_on_a_stiff_problem_and_keeps_every_output(dense):
    """``method="auto"``: DOPRI5 detects the stiffness of ``ε = 1e-4`` early and Radau IIA takes
    over after the transient (before t = 0.05, a few dozen explicit steps); outputs before and after the switch, at a
    breakpoint, and the end agree with Radau alone to the tolerance."""
    p = np.array([1e-4])
    y0 = np.array([1.0, 0.0])
    te = np.linspace(0.0, 2.0, 9)
    kw = dict(jac=stiff_jac, p=p, rtol=1e-7, atol=1e-10, t_eval=te, breakpoints=[0.75])
    a = integrate(stiff_rhs, (0.0, 2.0), y0, method="auto", dense_output=dense, **kw)
    r = integrate(stiff_rhs, (0.0, 2.0), y0, method="radau", **kw)
    assert a.success and a.extra["switched_at"] is not None and a.extra["switched_at"] < 0.05
    assert np.array_equal(a.t, te) and a.nsteps < r.nsteps + 40
    assert np.abs(a.y - r.y).max() < 1e-5 and abs(a.y[0, -1] - np.cos(2.0)) < 1e-5


def test_auto_stays_explicit_on_a_non_stiff_problem():
    """On ``y' = My`` (eigenvalues near −1.5) ``"auto"`` is DOPRI5, step for step."""
    M, y0, _ = linear_problem()
    kw = dict(jac=lambda t, y: M, rtol=1e-8, atol=1e-10, t_eval=[0.0, 0.5, 2.0])
    a = integrate(lambda t, y: M @ y, (0.0, 2.0), y0, method="auto", **kw)
    e = integrate(lambda t, y: M @ y, (0.0, 2.0), y0, method="dopri5", **kw)
    assert a.extra["switched_at"] is None and a.nsteps == e.nsteps
    assert np.array_equal(a.y, e.y)


# ------------------------------------------------------------------ breakpoints and outputs
@pytest.mark.parametrize("method", ["dopri5", "rosw", "radau", "dop853"])
def test_breakpoints_are_hit_exactly_and_stages_see_the_left_limit(method):
    jump = 0.3

    def f(t, y):
        return np.array([1.0 if t < jump else -2.0])

    r = integrate(
        f,
        (0.0, 1.0),
        np.array([0.0]),
        method=method,
        breakpoints=[jump],
        t_eval=[0.0, jump, 1.0],
        rtol=1e-8,
        atol=1e-12,
    )
    assert np.array_equal(r.t, [0.0, jump, 1.0])
    assert abs(r.y[0, 1] - jump) < 1e-13 and abs(r.y[0, 2] - (jump - 2 * (1 - jump))) < 1e-13
    # without the breakpoint the jump is smeared into a step and the error is much larger
    bad = integrate(
        f, (0.0, 1.0), np.array([0.0]), method=method, rtol=1e-8, atol=1e-12, first_step=0.25
    )
    assert bad.nreject > 0 or abs(bad.y[0, -1] - (jump - 2 * (1 - jump))) > 1e-13


@pytest.mark.parametrize("sigma", SIGMAS)
def test_coupling_rhs_compiled_equals_numpy_reference(sigma):
    for mask in NAMED_MASKS:
        cfg = ModelConfig(T=8, P=2, d=3, mask=mask, gamma=0.7, sigma=sigma)
        model = init_model(cfg, 3, 5, gate=0.9)
        rng = np.random.default_rng(1)
        X, E = rng.standard_normal((8, 3)), rng.standard_normal((8, 3))
        f = make_rhs(model, form="coupling", eps=0.01, E=E)
        p = pack_coupling(cfg, model, 0.01, E)
        out = np.empty(24)
        J = np.empty((8, 8))
        for seg in range(3):
            t = (seg + 0.5) / 3
            coupling_rhs_nb(t, X.ravel(), p, seg, out)
            assert np.allclose(out, f(t, X).ravel(), rtol=1e-13, atol=1e-12)
            frozen_kernel_jac_nb(t, X.ravel(), p, seg, J)
            A = attention_kernel(cfg, model.layers[seg], X)
            assert np.allclose(J, (A - np.eye(8)) / 0.01 - 0.7 * np.eye(8), rtol=1e-13, atol=1e-10)


def test_dense_mask_jacobian_by_row_panels_equals_the_kernel():
    """For a mask that is not block-local the frozen-kernel ``J`` is computed in row panels (two
    panels at T = 256), each row only up to its last allowed column: it equals
    ``(A − I)/ε − γI`` from the NumPy kernel, the zeros included, for the causal mask and a band."""

    T = 256
    assert 1 < T // (KERNEL_PANEL // T) < T
    banded = np.tril(np.ones((T, T), dtype=bool), 9) & np.triu(np.ones((T, T), dtype=bool), -40)
    for mask in ("causal", banded):  # a custom mask: a band with entries above the diagonal
        cfg = ModelConfig(T=T, P=4, d=3, mask=mask, gamma=0.7)
        model = init_model(cfg, 1, 5, gate=0.9)
        X = np.random.default_rng(1).standard_normal((T, 3))
        p = pack_coupling(cfg, model, 0.01, X)
        J = np.full((T, T), np.nan)
        frozen_kernel_jac_nb(0.5, X.ravel(), p, 0, J)
        A = attention_kernel(cfg, model.layers[0], X)
        assert np.allclose(J, (A - np.eye(T)) / 0.01 - 0.7 * np.eye(T), rtol=1e-13, atol=1e-10)
        assert np.any(np.triu(J, 1)) == (mask is banded)


def test_dense_mask_rhs_by_row_panels_equals_the_numpy_reference():
    """For a mask that is not block-local the right-hand side's attention term is summed panel
    by panel (two panels at T = 256; no T×T array): the whole right-hand side equals the NumPy
    reference for the causal mask and a band with entries above the diagonal, the slow path on."""

    T = 256
    assert 1 < T // (KERNEL_PANEL // T) < T
    banded = np.tril(np.ones((T, T), dtype=bool), 9) & np.triu(np.ones((T, T), dtype=bool), -40)
    for mask in ("causal", banded):
        cfg = ModelConfig(T=T, P=4, d=3, mask=mask, gamma=0.7)
        model = init_model(cfg, 2, 5, gate=0.9)
        rng = np.random.default_rng(1)
        X, E = rng.standard_normal((T, 3)), rng.standard_normal((T, 3))
        f = make_rhs(model, form="coupling", eps=0.01, E=E)
        p = pack_coupling(cfg, model, 0.01, E)
        out = np.full(T * 3, np.nan)
        for seg in range(2):
            t = (seg + 0.5) / 2
            coupling_rhs_nb(t, X.ravel(), p, seg, out)
            ref = f(t, X).ravel()
            assert np.max(np.abs(out - ref)) <= 1e-13 * np.max(np.abs(ref))


def test_declared_lower_triangular_jacobian_gives_the_same_run_and_refuses_an_upper_entry():
    """``jac_lower=True`` (no m×m factorisation kept) on a causal mask: the same steps and
    result as with the triangularity detected from ``J``; a ``J`` with an entry above its
    diagonal is refused."""

    cfg = ModelConfig(T=16, P=4, d=3, mask="causal", gamma=0.7)
    model = init_model(cfg, 2, 5, gate=0.9)
    X0 = np.random.default_rng(1).standard_normal((16, 3))
    p = pack_coupling(cfg, model, 1e-3, X0)
    assert is_lower_triangular(cfg.mask_array)
    kw = dict(jac=frozen_kernel_jac_nb, jac_size=16, p=p, rtol=1e-6, atol=1e-9)
    for method in ("radau", "rosw"):
        runs = [integrate(coupling_rhs_nb, (0, 1), X0, method=method, jac_lower=low, **kw)
                for low in (False, True)]  # fmt: skip
        assert runs[0].success and runs[0].nsteps == runs[1].nsteps
        assert np.allclose(runs[0].y, runs[1].y, rtol=1e-12, atol=1e-14)
    full = ModelConfig(T=16, P=4, d=3, mask=np.ones((16, 16), dtype=bool), gamma=0.7)
    pf = pack_coupling(full, init_model(full, 2, 5, gate=0.9), 1e-3, X0)
    assert not is_lower_triangular(full.mask_array)
    with pytest.raises(ValueError, match="above its diagonal"):
        integrate(coupling_rhs_nb, (0, 1), X0, method="radau", jac_lower=True, **(kw | {"p": pf}))
    with pytest.raises(ValueError, match="jac_block"):
        integrate(coupling_rhs_nb, (0, 1), X0, jac_lower=True, jac_block=4, **kw)


def test_user_activation_is_refused_by_the_compiled_rhs_and_runs_on_the_numpy_one():
    softsign = Activation(
        "softsign", lambda z: z / (1 + np.abs(z)), lambda z: (1 + np.abs(z)) ** -2
    )
    cfg = ModelConfig(T=4, P=2, d=2, mask="block_bidirectional", sigma=softsign)
    model = init_model(cfg, 2, 3, gate=0.5)
    X0 = np.random.default_rng(4).standard_normal((4, 2))
    for call in (
        lambda: pack_coupling(cfg, model, 0.1),
        lambda: integrate_coupling(model, X0, 0.1),
        lambda: integrate_coupling_scipy(model, X0, 0.1, rhs="compiled"),
    ):
        with pytest.raises(ValueError, match=r"user activation 'softsign'.*rhs='numpy'"):
            call()
    r = integrate_coupling_scipy(model, X0, 0.1, rhs="numpy", rtol=1e-8, atol=1e-10)
    same = ModelConfig(T=4, P=2, d=2, mask="block_bidirectional", sigma="identity")
    other = integrate_coupling_scipy(Model(same, model.layers), X0, 0.1, rhs="numpy")
    assert r.success and np.all(np.isfinite(r.y))
    assert np.abs(r.y - other.y).max() > 1e-6  # σ is applied: not the identity's flow


def test_scipy_with_the_dense_frozen_kernel_jacobian_is_the_sparse_one():
    """``integrate_coupling_scipy(jac="dense")`` (as the F1 work figure and the LSODA benchmark
    run it): the dense Jacobian is the sparse one's array, ``((A − I)/ε − γI) ⊗ I_d`` with ``A``
    the attention weights (the softmax of the scores, NumPy's :func:`attention_kernel`) at the
    given state, and Radau and LSODA with it reach our Radau's end state to their tolerance."""
    from fastslow.numerics.model.coupling import drivers

    cfg = ModelConfig(T=6, P=3, d=2, mask="block_bidirectional", gamma=0.5)
    model = init_model(cfg, 2, 4, gate=0.5)
    rng = np.random.default_rng(8)
    X0, E = rng.standard_normal((6, 2)), rng.standard_normal((6, 2))
    eps = 1e-3  # stiff: LSODA switches to BDF and asks for the Jacobian
    p = pack_coupling(cfg, model, eps, E)
    dense = drivers._scipy_segment_jac(cfg, p, 1, "dense")
    sparse = drivers._scipy_segment_jac(cfg, p, 1, "sparse")
    X = rng.standard_normal((6, 2))
    Jd = dense(0.7, X.ravel())
    A = attention_kernel(cfg, model.layers[1], X)
    frozen = (A - np.eye(6)) / eps - cfg.gamma * np.eye(6)
    assert np.allclose(Jd, np.kron(frozen, np.eye(2)), rtol=1e-12, atol=1e-12)
    assert np.array_equal(Jd, sparse(0.7, X.ravel()).toarray())
    ours = integrate_coupling(model, X0, eps, E=E, method="radau", rtol=1e-10, atol=1e-12)
    for method in ("Radau", "LSODA"):
        r = integrate_coupling_scipy(
            model, X0, eps, E=E, method=method, rtol=1e-8, atol=1e-10, jac="dense"
        )
        assert r.success and r.njev > 0
        assert np.abs(r.y - ours.y[:, -1]).max() < 1e-6


def test_integrate_coupling_matches_scipy_radau_on_an_untied_stiff_flow():
    from scipy.integrate import solve_ivp

    cfg = ModelConfig(T=6, P=3, d=2, mask="block_bidirectional", gamma=1.0)
    model = init_model(cfg, 2, 3, gate=0.5)
    rng = np.random.default_rng(2)
    X0, E = rng.standard_normal((6, 2)), rng.standard_normal((6, 2))
    eps = 1e-2
    r = integrate_coupling(model, X0, eps, E=E, rtol=1e-9, atol=1e-11)
    rr = integrate_coupling(model, X0, eps, E=E, rtol=1e-9, atol=1e-11, method="radau")
    f = make_rhs(model, form="coupling", eps=eps, E=E)
    y = X0.ravel()
    for a, b in [(0.0, 0.5), (0.5, 1.0)]:  # interval by interval, left limits at the ends
        s = solve_ivp(
            lambda t, y: f(min(t, np.nextafter(b, 0)), y.reshape(6, 2)).ravel(),
            (a, b),
            y,
            method="Radau",
            rtol=1e-9,
            atol=1e-11,
        )
        y = s.y[:, -1]
    assert r.success and np.abs(r.y[:, -1] - y).max() < 1e-6
    assert rr.success and np.abs(rr.y[:, -1] - y).max() < 1e-6
    assert r.njev == r.nsteps + 1 or r.njev <= r.nsteps + model.L  # one J per accepted step


def test_invalid_arguments_raise_clear_errors():
    f = lambda t, y: -y
    with pytest.raises(ValueError, match="method"):
        integrate(f, (0, 1), [1.0], method="euler")
    with pytest.raises(ValueError, match="t_span"):
        integrate(f, (1, 0), [1.0])
    with pytest.raises(ValueError, match="jac_size"):
        integrate(f, (0, 1), [1.0, 2.0, 3.0], jac_size=2)
    with pytest.raises(ValueError, match="y0"):
        integrate(f, (0, 1), [np.nan])
    with pytest.raises(ValueError, match="t_eval"):
        integrate(f, (0, 1), [1.0], t_eval=[0.5, 2.0])
    with pytest.raises(ValueError, match="eps"):
        pack_coupling(
            ModelConfig(T=2, P=1, d=1),
            [init_layer(ModelConfig(T=2, P=1, d=1), np.random.default_rng(0))],
            0.0,
        )


def _shifted_solve(J, shift, mb, v, k):
    """``((shift·I − J) ⊗ I_k)⁻¹ v`` by numerics.integrators.linalg (real or complex shift)."""
    from fastslow.numerics.integrators import linalg

    m = J.shape[0]
    kind = linalg.structure(J, m, mb)
    Jst = _stored(J, mb)
    piv = np.zeros(m, dtype=np.int64)
    sw = np.empty(linalg.scratch_size(m, k))
    if np.iscomplexobj(shift):
        Fc = np.empty(Jst.shape, complex)
        linalg.factor_shifted(Jst, shift, m, mb, kind, Fc, piv)
        o, o2 = np.empty_like(v.real), np.empty_like(v.real)
        linalg.solve_complex(Jst, Fc, piv, v.real.copy(), v.imag.copy(), o, o2, m, mb, k, kind, sw)
        return kind, o + 1j * o2
    F = np.empty(Jst.shape)
    linalg.factor_shifted(Jst, shift, m, mb, kind, F, piv)
    out = np.empty_like(v)
    linalg.solve_real(Jst, F, piv, v, out, m, mb, k, kind, sw)
    return kind, out


def _stored(J, mb):
    """``J`` as the integrators store it: whole, or the ``m×mb`` rows of its diagonal blocks."""
    m = J.shape[0]
    if mb == m:
        return np.ascontiguousarray(J)
    return np.ascontiguousarray(
        np.concatenate([J[b : b + mb, b : b + mb] for b in range(0, m, mb)])
    )


@pytest.mark.parametrize("shape", ["block", "lower", "lower_blocked", "dense"])
def test_block_and_triangular_factorisations_equal_the_dense_solve(shape):
    """``(σI − J) ⊗ I_k`` solved from the (T/P, P, P) block LU (pivoting needed: a zero leading
    entry), by substitution for a lower-triangular ``J``, and by one dense LU, against ``np.linalg.solve``
    of the Kronecker product, for a real and a complex shift."""
    from fastslow.numerics.integrators import linalg

    rng = np.random.default_rng(3)
    m, mb, k = (150 if shape == "lower_blocked" else 12), 4, 3  # 150 rows: 3 blocks of TRSM_BLOCK
    J = rng.standard_normal((m, m)) / np.sqrt(m)
    shape = "lower" if shape == "lower_blocked" else shape
    if shape == "block":
        J = J * np.kron(np.eye(m // mb), np.ones((mb, mb)))
        for b in range(0, m, mb):
            J[b, b] = 2.0  # σ − J[b, b] = 0 for σ = 2: the first pivot must be swapped
    if shape == "lower":
        J = np.tril(J)
    want_kind = {"block": linalg.BLOCK, "lower": linalg.LOWER, "dense": linalg.DENSE}[shape]
    for shift in (2.0, 2.0 + 0.7j):
        v = rng.standard_normal(m * k) + (1j * rng.standard_normal(m * k) if shift.imag else 0)
        kind, x = _shifted_solve(J, shift, mb if shape == "block" else m, v, k)
        full = np.kron(shift * np.eye(m) - J, np.eye(k))
        assert kind == want_kind
        assert np.allclose(full @ x, v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", ["block", "lower_blocked", "dense"])
def test_radau_pair_solve_equals_the_two_solves(shape):
    """``solve_pair`` (Radau's real and complex systems; one substitution sweep with ``3k``
    columns for a lower-triangular ``J``) gives the real and the complex solve, to rounding."""
    from fastslow.numerics.integrators import linalg

    rng = np.random.default_rng(5)
    m, mb, k = (150, 150, 3) if shape == "lower_blocked" else (12, 4 if shape == "block" else 12, 3)
    J = rng.standard_normal((m, m)) / np.sqrt(m)
    if shape == "block":
        J = J * np.kron(np.eye(m // mb), np.ones((mb, mb)))
    if shape == "lower_blocked":
        J = np.tril(J)
    sr, sc = 2.0, 2.0 + 0.7j
    vr, vc = (
        rng.standard_normal(m * k),
        rng.standard_normal(m * k) + 1j * rng.standard_normal(m * k),
    )
    Jst = _stored(J, mb)
    kind = linalg.structure(Jst, m, mb)
    lower = kind == linalg.LOWER
    Fr = np.empty((m, 1) if lower else Jst.shape)
    Fc = np.empty((m, 1) if lower else Jst.shape, complex)
    pr, pc = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    linalg.factor_shifted(Jst, sr, m, mb, kind, Fr, pr)
    linalg.factor_shifted(Jst, sc, m, mb, kind, Fc, pc)
    sw = np.empty(linalg.scratch_size(m, k))
    outs = [np.empty(m * k) for _ in range(3)]
    linalg.solve_pair(
        Jst, Fr, pr, Fc, pc, vr, vc.real.copy(), vc.imag.copy(), *outs, m, mb, k, kind, sw
    )
    for shift, v, x in ((sr, vr, outs[0]), (sc, vc, outs[1] + 1j * outs[2])):
        assert np.allclose(np.kron(shift * np.eye(m) - J, np.eye(k)) @ x, v, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ the Jacobian is never dropped
def test_implicit_methods_without_jac_use_a_finite_difference_jacobian_for_python_rhs():
    """jac=None on a stiff Python problem: as few steps as with the exact Jacobian, not J = 0."""
    eps = 1e-4

    def f(t, y):
        return np.array([-(y[0] - np.cos(t)) / eps - np.sin(t), y[0]])

    def exact_jac(t, y):
        return np.array([[-1.0 / eps, 0.0], [1.0, 0.0]])

    for method in ("rosw", "radau"):
        kw = dict(method=method, rtol=1e-6, atol=1e-9)
        ref = integrate(f, (0.0, 1.0), [1.0, 0.0], jac=exact_jac, **kw)
        fd = integrate(f, (0.0, 1.0), [1.0, 0.0], **kw)
        zero = integrate(f, (0.0, 1.0), [1.0, 0.0], jac="zero", **kw)
        assert fd.success and fd.extra["fd_fevals"] > 0
        assert fd.nsteps <= 1.5 * ref.nsteps + 5, (method, fd.nsteps, ref.nsteps)
        assert abs(fd.y[0, -1] - np.cos(1.0)) < 1e-5
        assert zero.nsteps > 10 * ref.nsteps  # what jac=None used to do silently


def test_a_compiled_rhs_without_jac_is_refused_with_the_way_out():
    with pytest.raises(ValueError, match="needs a Jacobian.*jac='zero'"):
        integrate(stiff_rhs, (0.0, 1.0), np.array([1.0, 0.0]), p=np.array([1e-3]))
    with pytest.raises(ValueError, match="jac_size=1 < n=2"):
        integrate(lambda t, y: -y, (0.0, 1.0), [1.0, 2.0], jac_size=1, method="radau")
    with pytest.raises(ValueError, match="jac='exact'"):
        integrate(lambda t, y: -y, (0.0, 1.0), [1.0], jac="exact")
    r = integrate(stiff_rhs, (0.0, 0.1), np.array([1.0, 0.0]), p=np.array([1e-1]), jac="zero")
    assert r.success


def test_the_depth_flow_with_jac_none_stays_within_three_times_the_frozen_kernel_run():
    """The Python depth flow (coupling form) without a Jacobian against the frozen-kernel one."""
    import time

    cfg = ModelConfig(T=8, P=4, d=2, mask="block_bidirectional", gamma=0.5)
    X0 = np.random.default_rng(0).standard_normal((8, 2))
    model = init_model(cfg, 2, 3, gate=0.3)
    eps = 1e-3
    f = make_rhs(model, form="coupling", eps=eps, E=X0)
    fun = lambda t, y: f(t, y.reshape(8, 2)).ravel()
    frozen = lambda t, y: np.kron(
        (attention_kernel(cfg, model.layers[int(t >= 0.5)], y.reshape(8, 2)) - np.eye(8)) / eps
        - cfg.gamma * np.eye(8),
        np.eye(2),
    )
    kw = dict(method="radau", rtol=1e-6, atol=1e-9, breakpoints=[0.5])
    t0 = time.process_time()
    ref = integrate(fun, (0.0, 1.0), X0.ravel(), jac=frozen, **kw)
    t_ref = time.process_time() - t0
    t0 = time.process_time()
    fd = integrate(fun, (0.0, 1.0), X0.ravel(), **kw)
    t_fd = time.process_time() - t0
    assert ref.success and fd.success
    assert np.abs(fd.y[:, -1] - ref.y[:, -1]).max() < 1e-5
    assert fd.nsteps <= 3 * ref.nsteps  # work, not wall time: steps and factorisations
    assert fd.nlu <= 3 * ref.nlu
    print(f"depth flow radau: frozen-kernel J {t_ref:.3f} s, finite-difference J {t_fd:.3f} s")


def test_a_large_python_problem_without_jacobian_is_refused_unless_the_difference_is_asked_for():
    n = FD_JACOBIAN_MAX_N + 1
    with pytest.raises(ValueError, match=f"jac=None with n={n} unknowns.*jac='fd'"):
        integrate(lambda t, y: -y, (0.0, 0.01), np.ones(n), method="radau")
    r = integrate(lambda t, y: -y, (0.0, 0.01), np.ones(n), method="radau", jac="fd")
    assert r.success and r.extra["fd_fevals"] >= n + 1
    np.testing.assert_allclose(r.y[:, -1], np.exp(-0.01), rtol=1e-6)


# ------------------------------------------------------------------ no allocation in the hot loop
def _nrt_allocations(fn) -> int:
    """Numba runtime allocations made by ``fn()`` (NRT statistics switched on for the process)."""
    from numba.core.runtime import _nrt_python, rtsys  # deferred: test-only Numba internals

    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats().alloc
    fn()
    return rtsys.get_allocation_stats().alloc - before


@njit(cache=True)
def _repeat_rhs_and_jac(y, p, out, J, n):
    for _ in range(n):
        coupling_rhs_nb(0.2, y, p, 1, out)
        frozen_kernel_jac_nb(0.2, y, p, 1, J)


@pytest.mark.parametrize("mask", ["block_bidirectional", "block_causal"])
def test_coupling_rhs_and_jacobian_allocate_nothing_for_block_local_masks(mask):
    """The compiled right-hand side and frozen-kernel Jacobian of a block-local mask (norm, MLP,
    slow path, injection all on) make no heap allocation: their work arrays are the scratch tail
    of the packed vector (1 or 41 calls from compiled code allocate alike). A dense mask's kernel
    allocates (the control)."""
    cfg = ModelConfig(T=16, P=4, d=3, mask=mask, gamma=0.7, sigma="tanh")
    model = init_model(cfg, 2, 5, gate=0.9)
    rng = np.random.default_rng(1)
    y, E = rng.standard_normal(48), rng.standard_normal((16, 3))
    p = pack_coupling(cfg, model, 0.01, E)
    out, J = np.empty(48), np.empty((16, 4))
    _repeat_rhs_and_jac(y, p, out, J, 1)
    one = _nrt_allocations(lambda: _repeat_rhs_and_jac(y, p, out, J, 1))
    assert _nrt_allocations(lambda: _repeat_rhs_and_jac(y, p, out, J, 41)) == one
    dense = ModelConfig(T=16, P=4, d=3, mask="causal", gamma=0.7)
    pd = pack_coupling(dense, init_model(dense, 2, 5, gate=0.9), 0.01, E)
    Jd = np.empty((16, 16))
    _repeat_rhs_and_jac(y, pd, out, Jd, 1)
    one = _nrt_allocations(lambda: _repeat_rhs_and_jac(y, pd, out, Jd, 1))
    assert _nrt_allocations(lambda: _repeat_rhs_and_jac(y, pd, out, Jd, 41)) > one


@pytest.mark.parametrize("method", ["radau", "rosw", "dopri5"])
def test_the_step_loop_allocates_nothing_per_step(method):
    """A whole compiled run (block-diagonal ``W``) allocates the same number of arrays for short
    and long spans: the driver, the steps and the right-hand side allocate nothing per step (the
    workspaces are allocated once)."""
    cfg = ModelConfig(T=16, P=4, d=3, mask="block_bidirectional", gamma=0.7)
    model = init_model(cfg, 2, 5, gate=0.9)
    X0 = np.random.default_rng(1).standard_normal((16, 3))
    kw = dict(E=X0, method=method, rtol=1e-7, atol=1e-9)
    integrate_coupling(model, X0, 0.01, **kw)
    short = _nrt_allocations(lambda: integrate_coupling(model, X0, 0.01, t_span=(0, 0.1), **kw))
    r = integrate_coupling(model, X0, 0.01, **kw)
    long = _nrt_allocations(lambda: integrate_coupling(model, X0, 0.01, **kw))
    assert r.nsteps > 20 and long == short


@pytest.mark.parametrize("n", [8, 21, 512])
def test_radau_passes_on_eight_lanes_equal_the_scalar_formulas_bit_for_bit(n):
    """Radau's per-iteration passes run eight entries at a time and the rest scalar; every
    output equals the formula evaluated entry by entry in NumPy in the same order (no fused
    multiply-add, no reassociation), so the lanes change no bit of a run."""
    from fastslow.numerics.integrators import radau, tableaux

    rng = np.random.default_rng(n)
    F, W, Qp = (rng.standard_normal((3, n)) for _ in range(3))
    y, zl, dr, dcr, dci = (rng.standard_normal(n) for _ in range(5))
    hs, h_old, rtol, atol = 0.013, 0.02, 1e-5, 1e-8
    Ti, Tm = tableaux.RADAU_TI, tableaux.RADAU_T
    fr, fcr, fci = np.empty(n), np.empty(n), np.empty(n)
    assert radau._newton_residual(F, W, hs, fr, fcr, fci)
    mr, mc = tableaux.RADAU_MU_REAL / hs, tableaux.RADAU_MU_COMPLEX / hs
    a = Ti[1, 0] * F[0] + Ti[1, 1] * F[1] + Ti[1, 2] * F[2]
    b = Ti[2, 0] * F[0] + Ti[2, 1] * F[1] + Ti[2, 2] * F[2]
    assert np.array_equal(fr, Ti[0, 0] * F[0] + Ti[0, 1] * F[1] + Ti[0, 2] * F[2] - mr * W[0])
    assert np.array_equal(fcr, a - (mc.real * W[1] - mc.imag * W[2]))
    assert np.array_equal(fci, b - (mc.real * W[2] + mc.imag * W[1]))
    F[1, n - 1] = np.inf
    assert not radau._newton_residual(F, W, hs, fr, fcr, fci)

    W2, Z, Ys = W.copy(), np.empty((3, n)), np.empty((3, n))
    radau._newton_update(W2, Z, Ys, y, dr, dcr, dci)
    w = (W[0] + dr, W[1] + dcr, W[2] + dci)
    assert np.array_equal(W2, np.stack(w))
    for r in range(3):
        z = Tm[r, 0] * w[0] + Tm[r, 1] * w[1] + Tm[r, 2] * w[2]
        assert np.array_equal(Z[r], z) and np.array_equal(Ys[r], y + z)

    iscale = np.empty(n)
    radau._newton_start(Qp, zl, hs, h_old, True, y, rtol, atol, Z, W2, Ys, iscale)
    for r in range(3):
        x = 1.0 + tableaux.RADAU_C[r] * hs / h_old
        z = x * Qp[0] + (x * x) * Qp[1] + (x * x * x) * Qp[2] - zl
        assert np.array_equal(Z[r], z) and np.array_equal(Ys[r], y + z)
    for r in range(3):
        assert np.array_equal(W2[r], Ti[r, 0] * Z[0] + Ti[r, 1] * Z[1] + Ti[r, 2] * Z[2])
    assert np.array_equal(iscale, 1.0 / (atol + rtol * np.abs(y)))

    s = 0.0
    for x in dr / iscale:
        s += x**2
    assert radau._rms_scaled(dr, iscale) == np.sqrt(s / n)


@pytest.mark.parametrize("n", [5, 21, 512])
def test_dopri5_error_norm_on_eight_lanes_equals_the_scalar_formula_bit_for_bit(n):
    """DOPRI5's embedded-error norm and stiffness sums (eight entries at a time, the rest
    scalar) equal the formula evaluated entry by entry and summed in index order."""
    from fastslow.numerics.integrators import dopri5

    rng = np.random.default_rng(n)
    ws = rng.standard_normal(9 * n + 2)
    y, ynew, y6 = (rng.standard_normal(n) for _ in range(3))
    hs, rtol, atol = 0.021, 1e-6, 1e-9
    en = dopri5._error_norm_and_stiffness(hs, y, ynew, y6, ws, n, rtol, atol, True)
    k = ws[: 7 * n].reshape(7, n)
    E = tableaux.DP_E
    e = E[0] * k[0] + E[2] * k[2] + E[3] * k[3] + E[4] * k[4]
    q = hs * (e + E[5] * k[5] + E[6] * k[6]) / (atol + rtol * np.maximum(abs(y), abs(ynew)))
    s = num = den = 0.0
    for i in range(n):
        s += q[i] ** 2
        num += (k[6, i] - k[5, i]) ** 2
        den += (ynew[i] - y6[i]) ** 2
    assert en == np.sqrt(s / n) and ws[9 * n] == num and ws[9 * n + 1] == den


@pytest.mark.parametrize("shape", ["block", "lower", "dense"])
@pytest.mark.parametrize("shift", [2.0, 2.0 + 0.0j])
def test_a_singular_shifted_matrix_gives_non_finite_factors_not_an_exception(shape, shift):
    """``shift·I − J`` exactly singular: the factorisation holds non-finite entries (the step that
    uses it is then rejected) instead of raising ``ZeroDivisionError`` out of compiled code."""
    from fastslow.numerics.integrators import linalg

    m, mb = 16, (8 if shape == "block" else 16)
    J = np.zeros((m, mb))
    for i in range(m):
        J[i, i % mb] = 2.0
    if shape == "dense":
        J[0, m - 1] = 1.0  # an entry above the diagonal: a dense LU
    kind = linalg.structure(J, m, mb)
    assert kind == {"block": linalg.BLOCK, "lower": linalg.LOWER, "dense": linalg.DENSE}[shape]
    F = np.empty((m, mb), dtype=np.asarray(shift).dtype)
    linalg.factor_shifted(J, shift, m, mb, kind, F, np.zeros(m, dtype=np.int64))
    assert not np.isfinite(F).all()


@pytest.mark.parametrize("jac_block", [None, 8])
def test_radau_steps_past_an_exactly_singular_newton_matrix(jac_block):
    """``y' = λy`` with ``λ = 2μ_r`` and a first step of 0.5: Radau's real Newton matrix
    ``(μ_r/h)I − J`` is exactly singular on the first try; the step is retried with another
    size and the run ends at ``e^{λt}``."""
    from fastslow.numerics.integrators import tableaux

    lam = 2.0 * tableaux.RADAU_MU_REAL
    assert tableaux.RADAU_MU_REAL / 0.5 == lam
    n = 16
    r = integrate(
        lambda t, y: lam * y,
        (0.0, 1.0),
        np.ones(n),
        method="radau",
        jac=lambda t, y: lam * np.eye(n),
        jac_block=jac_block,
        first_step=0.5,
        rtol=1e-8,
        atol=1e-10,
    )
    assert r.success and r.nreject >= 1
    assert np.allclose(r.y[:, -1], np.exp(lam), rtol=1e-6)


# ------------------------------------------------------------------ passing compiled functions
@njit(RHS_SIG, cache=True)
def rhs_refusing_late_times(t, y, p, seg, out):
    """``y' = −y`` that raises past ``t = 0.5`` (a user's check inside compiled code)."""
    if t > 0.5:
        raise ValueError("rhs refused a time past 0.5")
    out[:] = -y


@pytest.mark.parametrize("method", ["dopri5", "radau", "rosw", "auto", "dop853"])
def test_an_exception_raised_inside_a_compiled_rhs_reaches_the_caller(method):
    with pytest.raises(ValueError, match="rhs refused a time past 0.5"):
        integrate(rhs_refusing_late_times, (0.0, 1.0), np.ones(3), method=method, jac="zero")


def test_the_addresses_the_driver_calls_a_problem_function_by_are_numbas_own():
    """``numba_binding.function_addresses`` gives the cfunc wrapper and jitted-function addresses Numba
    itself looks up when a dispatcher is passed as a first-class function, and the object; a
    dispatcher without the overload is compiled for it."""
    from numba.experimental.function_type import _get_jit_address, _get_wrapper_address

    from fastslow.numerics.integrators import numba_binding

    fn = njit(lambda t, y, p, seg, out: None)
    c_addr, py_addr, jit_addr = numba_binding.function_addresses(fn, RHS_SIG)
    assert RHS_SIG.args in fn.overloads and py_addr == id(fn)
    assert (c_addr, jit_addr) == (_get_wrapper_address(fn, RHS_SIG), _get_jit_address(fn, RHS_SIG))
    assert numba_binding.function_addresses(fn, RHS_SIG) == (c_addr, py_addr, jit_addr)


def _decay_with_settable_rate(rate):
    """``y' = −k·y`` compiled with ``k`` frozen at compile time, and a setter for ``k``."""

    def setter(value):
        nonlocal rate
        rate = value

    @njit
    def rhs(t, y, p, seg, out):
        out[:] = -rate * y

    return rhs, setter


def test_a_recompiled_problem_function_is_called_at_its_new_address():
    """A user's dispatcher recompiled between two runs (a new compile result, its old code kept
    alive by the address cache) is run as recompiled: ``k`` 1 → 2 gives ``e^−2``, not ``e^−1``."""
    rhs, set_rate = _decay_with_settable_rate(1.0)
    kw = dict(method="dopri5", rtol=1e-10, atol=1e-12)
    first = integrate(rhs, (0.0, 1.0), np.ones(2), **kw)
    set_rate(2.0)
    rhs.recompile()
    again = integrate(rhs, (0.0, 1.0), np.ones(2), **kw)
    np.testing.assert_allclose(first.y[:, -1], np.exp(-1.0), rtol=1e-8)
    np.testing.assert_allclose(again.y[:, -1], np.exp(-2.0), rtol=1e-8)


@pytest.mark.parametrize("method", ["dopri5", "radau", "rosw", "dop853"])
def test_every_method_runs_the_one_driver_with_its_own_functions(method):
    """``bound_driver`` hands every method the one compiled driver (one entry in Numba's cache)
    with the addresses of that method's compiled functions, and the Python driver with its
    Python ones; the compiled driver links none of them (they are called by address)."""
    from fastslow.numerics.integrators import driver, numba_binding
    from fastslow.numerics.integrators.base import METHOD_SIGS

    compiled = driver.bound_driver(method)
    plain = driver.bound_driver(method, compiled=False)
    assert compiled is driver.bound_driver(method)
    assert compiled.drive is driver.compiled_drive() is driver.bound_driver("radau").drive
    assert compiled.drive.py_func.__qualname__ == "drive_compiled" and plain.drive is driver.drive
    mod = driver.METHODS[method][0]
    for k, name in enumerate(driver.METHOD_FUNCTIONS):
        own = getattr(mod, name, driver.no_interp)
        assert compiled.functions[k].py_func is own and plain.functions[k] is own
        assert isinstance(compiled.functions[k], numba_binding.CompiledOnlyDispatcher)
        address = numba_binding.function_addresses(compiled.functions[k], METHOD_SIGS[k])
        assert compiled.addresses[3 * k : 3 * k + 3] == address
    code = compiled.drive.py_func.__code__  # the method's functions are locals, not globals
    assert set(driver.METHOD_FUNCTIONS) <= set(code.co_varnames)
    assert not set(driver.METHOD_FUNCTIONS) & set(code.co_names)


@pytest.mark.parametrize("method", ["dopri5", "radau", "rosw"])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_repeated_output_time_is_filled_and_so_are_the_ones_after_it(method, compiled):
    """``t_eval`` with a time given twice (a segment of zero length): both columns hold the
    solution there, and the integration goes on to fill every later time (the exact solution
    ``(cos t, sin t)`` of :func:`stiff_rhs` from ``(1, 0)``)."""
    t_eval = np.array([0.0, 0.25, 0.5, 0.5, 0.75, 1.0])
    p = np.array([0.1])
    fun = (
        stiff_rhs
        if compiled
        else (lambda t, y: np.array([-(y[0] - np.cos(t)) / 0.1 - np.sin(t), y[0]]))
    )
    jac = stiff_jac if compiled else (lambda t, y: np.array([[-10.0, 0.0], [1.0, 0.0]]))
    r = integrate(
        fun, (0.0, 1.0), np.array([1.0, 0.0]), method=method, jac=jac, p=p if compiled else None,
        rtol=1e-9, atol=1e-12, t_eval=t_eval,
    )  # fmt: skip
    assert r.success and list(r.t) == list(t_eval)
    exact = np.vstack([np.cos(t_eval), np.sin(t_eval)])
    assert np.abs(r.y - exact).max() < 1e-6


def test_the_coupling_form_refuses_a_zero_or_negative_eps_naming_it():
    """``ε`` divides the fast term: ``make_rhs(form="coupling")`` refuses ``ε ≤ 0`` in one line,
    before any evaluation (never an infinite right-hand side)."""
    cfg = ModelConfig(T=4, P=2, d=2, mask="causal")
    model = init_model(cfg, 2, 1)
    for eps in (0.0, -1e-3):
        with pytest.raises(ValueError, match="eps"):
            make_rhs(model, form="coupling", eps=eps)
    assert make_rhs(model, form="coupling", eps=1e-3)(0.5, np.ones((4, 2))).shape == (4, 2)
