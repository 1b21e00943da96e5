"""F2 — linear generator: the equilibrium manifold is the stationary distribution.

Statement: if the fast dynamics is ``ε dx/dt = Q(y) x`` with ``Q(y)`` an irreducible generator
(column convention) for every y, the equilibrium manifold on the simplex is the graph of
``φ(y) = p_st(y)``; every other eigenvalue has negative real part (it attracts at the spectral
gap), and the coupled system ``y' = −y + cᵀx + sin t`` tracks it: after the initial layer
``x(t) − p_st(y(t)) = O(ε)``, and ``x(t) − p_st(y(t)) − ε h_1(y(t), t) = O(ε²)``.

Checked by:

1. the manifold: ``p_st(y)`` of ``theory.markov`` (Markov chain tree theorem, exact) against the
   normalised numerical null vector of ``Q(y)`` from ``numerics.markov`` on a y-grid (≤
   ``manifold_tol``), after checking that both modules define the same ``Q(y)``; the first-order
   correction ``h_1`` of theory (exact rational-function algebra) against the numerical group-inverse
   formula;
2. the spectral gap on the grid: exactly one eigenvalue at 0, all others with ``Re λ < 0``;
3. tracking: the coupled system integrated with BDF (analytic Jacobian, rtol 1e-10; Radau and LSODA
   agree, see tests/test_markov.py) for ε
   log-spaced in ``[eps_min, eps_max]``; the errors are maxima over ``t ∈ [t0, t1]`` (after the
   layer: ``exp(−gap·t0/ε_max)`` is recorded and must be ≪ ε_max²); fitted log–log slopes with 95%
   intervals must lie in ``1 ± slope_tol0`` and ``2 ± slope_tol1``; two initial conditions with the
   same ``y0`` end O(ε) apart (no memory of x0);
4. the attention link: the within-block frozen kernels as generators ``(K − I)ᵀ``: uniform
   stationary distribution for ``block_bidirectional`` (block-mean pooling is conserved),
   ``e_1`` for ``block_causal`` (first-token pooling is conserved, the block mean is not), both
   numerically (``numerics.masks.frozen_kernel``) and exactly (``theory.markov``). The causal
   within-block chain is *not irreducible* (token 1 is absorbing); its stationary distribution is
   unique because it has exactly one closed class — that weaker hypothesis is what is used.

Negative controls (``chain=``): ``"reducible"`` (two disjoint copies of the chain: two closed
classes, a two-dimensional set of equilibria, the long-time x depends on the initial condition);
``"not_generator_mass"`` (``Q − defect·I``: ``1ᵀQ ≠ 0``, mass decays, the only equilibrium is 0);
``"not_generator_sign"`` (one negative jump rate, mass conserved: the null vector has a negative
entry and the trajectory leaves the simplex).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy import stats

from numerics import _validate as v
from numerics import markov as mk
from numerics.masks import frozen_kernel
from theory import markov as tm

from . import CheckResult

DEFAULTS = {
    "n_states": 3,
    "chain": "irreducible",
    "eps_min": 1e-3, "eps_max": 1e-1, "n_eps": 7,
    "t0": 1.0, "t1": 4.0, "n_t": 121, "y0": 0.5,
    "y_min": -2.0, "y_max": 2.0, "n_grid": 41,
    "method": "BDF", "rtol": 1e-10, "atol": 1e-12,
    "manifold_tol": 1e-12, "slope_tol0": 0.1, "slope_tol1": 0.2,
    "defect": 1.0, "P_max": 6,
}

LIMITS = {"n_eps": (3, 40), "n_t": (2, 10_000), "n_grid": (2, 10_000), "t0": (0.0, 100.0),
          "t1": (0.0, 100.0), "eps_min": (1e-6, 1.0), "eps_max": (1e-6, 1.0), "rtol": (1e-14, 1e-2),
          "atol": (1e-16, 1e-2), "P_max": (2, 64), "y0": (-50.0, 50.0), "y_min": (-50.0, 50.0),
          "y_max": (-50.0, 50.0)}
"""Bounds that keep a user's instance small enough to finish in seconds (``fastslow check`` rejects values outside them)."""

CHAINS = ("irreducible", "reducible", "not_generator_mass", "not_generator_sign")


def slope_fit(eps: np.ndarray, err: np.ndarray) -> dict:
    """Least-squares slope of ``log err`` against ``log eps`` with its 95% interval (t quantile)."""
    r = stats.linregress(np.log(eps), np.log(err))
    q = stats.t.ppf(0.975, len(eps) - 2)
    return {"slope": float(r.slope), "ci95": [float(r.slope - q * r.stderr),
                                              float(r.slope + q * r.stderr)],
            "stderr": float(r.stderr), "intercept": float(r.intercept), "r2": float(r.rvalue ** 2)}


def chain_functions(p: dict):
    """``(generator(y), generator_dy(y), c)`` of the instance selected by ``p["chain"]``."""
    n = p["n_states"]
    c = np.arange(n, dtype=float)
    kind = p["chain"]
    if kind == "irreducible":
        return (lambda y: mk.example_generator(n, y), lambda y: mk.example_generator_dy(n, y), c)
    if kind == "reducible":  # two disjoint copies: Q(y) on states 0..n−1, Q(−y) on n..2n−1
        def gen(y):
            return np.block([[mk.example_generator(n, y), np.zeros((n, n))],
                             [np.zeros((n, n)), mk.example_generator(n, -y)]])

        def gen_dy(y):
            return np.block([[mk.example_generator_dy(n, y), np.zeros((n, n))],
                             [np.zeros((n, n)), -mk.example_generator_dy(n, -y)]])
        return gen, gen_dy, np.arange(2 * n, dtype=float)
    if kind == "not_generator_mass":
        k = p["defect"]
        return (lambda y: mk.example_generator(n, y) - k * np.eye(n),
                lambda y: mk.example_generator_dy(n, y), c)
    # not_generator_sign: one jump rate made negative, column sums kept at zero
    # n = 2: rate 0 → 1 set to −1/4 (stable for all y; p_1 < 0);
    # n = 3: rate 1 → 2 set to −(1 + y²)/2 (p has a negative entry for all y in [−3, 3])
    i, j = (1, 0) if n == 2 else (2, 1)

    def bump(Q, y):
        rate = -0.25 if n == 2 else -0.5 * (1.0 + y * y)
        Q = Q.copy()
        d = rate - Q[i, j]
        Q[i, j] += d
        Q[j, j] -= d
        return Q

    def bump_dy(y):
        dQ = mk.example_generator_dy(n, y)
        d = (0.0 if n == 2 else -y) - dQ[i, j]
        dQ[i, j] += d
        dQ[j, j] -= d
        return dQ
    return (lambda y: bump(mk.example_generator(n, y), y), bump_dy, c)


def _validate(p: dict) -> None:
    v.choice("chain", p["chain"], CHAINS)
    if p["n_states"] not in tm.EXAMPLE_CHAINS:
        raise ValueError(f"n_states must be one of {tm.EXAMPLE_CHAINS} (chains with closed-form "
                         f"stationary distributions), got {p['n_states']}")
    lo = v.real("eps_min", p["eps_min"], low=0.0, low_open=True)
    hi = v.real("eps_max", p["eps_max"], low=lo, low_open=True)
    if hi > 0.5:
        raise ValueError(f"eps_max must be ≤ 0.5 (a small parameter), got {hi}")
    if v.positive_int("n_eps", p["n_eps"]) < 3:
        raise ValueError(f"n_eps must be ≥ 3 to fit a slope with an interval, got {p['n_eps']}")
    t0 = v.real("t0", p["t0"], low=0.0, low_open=True)
    v.real("t1", p["t1"], low=t0, low_open=True)
    v.positive_int("n_t", p["n_t"])
    v.real("y0", p["y0"], low=-3.0, high=3.0)
    ylo = v.real("y_min", p["y_min"], low=-5.0)
    v.real("y_max", p["y_max"], low=ylo, low_open=True, high=5.0)
    v.positive_int("n_grid", p["n_grid"])
    v.choice("method", p["method"], ("Radau", "BDF", "LSODA"))
    v.real("rtol", p["rtol"], low=0.0, low_open=True)
    v.real("atol", p["atol"], low=0.0, low_open=True)
    for k in ("manifold_tol", "slope_tol0", "slope_tol1", "defect"):
        v.real(k, p[k], low=0.0, low_open=True)
    if v.positive_int("P_max", p["P_max"]) < 2:
        raise ValueError(f"P_max must be ≥ 2, got {p['P_max']}")


def _run(p, gen, gen_dy, c, eps, x0):
    t_eval = np.concatenate([[0.0], np.linspace(p["t0"], p["t1"], p["n_t"])])
    run = mk.integrate_coupled(gen, gen_dy, eps, x0, p["y0"], c, t_eval, method=p["method"],
                               rtol=p["rtol"], atol=p["atol"], require_generator=False)
    return run, slice(1, None)


def attention_link(P_max: int) -> dict:
    """Stationary distributions of the within-block frozen kernels, numerically and exactly."""
    out = {}
    for kind in ("block_bidirectional", "block_causal"):
        rows = []
        for P in range(2, P_max + 1):
            K = frozen_kernel(kind, P, P)  # one block: T = P
            G = (K - np.eye(P)).T          # column convention
            p_num = mk.stationary_distribution(G)
            exact = tm.within_block_stationary(kind, P)
            p_ex = np.array([float(x) for x in exact["p_st"]])
            K_ex = np.array(exact["kernel"].tolist(), dtype=float)
            uniform, first = np.full(P, 1.0 / P), np.eye(P)[0]
            mean_defect = float(np.abs(uniform @ (K - np.eye(P))).max())   # d/dτ of the block mean
            first_defect = float(np.abs(first @ (K - np.eye(P))).max())    # d/dτ of the first token
            rows.append({
                "P": P,
                "kernel_vs_exact": float(np.abs(K - K_ex).max()),
                "p_numeric_vs_exact": float(np.abs(p_num - p_ex).max()),
                "p_vs_uniform": float(np.abs(p_num - uniform).max()),
                "p_vs_first_token": float(np.abs(p_num - first).max()),
                "block_mean_conservation_defect": mean_defect,
                "first_token_conservation_defect": first_defect,
                "irreducible_numeric": mk.is_irreducible(G),
                "irreducible_exact": bool(exact["irreducible"]),
                "closed_classes": mk.closed_classes(G),
                "null_dim_exact": int(exact["null_dim"]),
                "spectral_gap": mk.spectral_gap(G),
            })
        out[kind] = rows
    bi, ca = out["block_bidirectional"], out["block_causal"]
    out["summary"] = {
        "max_p_numeric_vs_exact": max(r["p_numeric_vs_exact"] for r in bi + ca),
        "max_kernel_vs_exact": max(r["kernel_vs_exact"] for r in bi + ca),
        "bidirectional_max_p_vs_uniform": max(r["p_vs_uniform"] for r in bi),
        "bidirectional_max_block_mean_defect": max(r["block_mean_conservation_defect"] for r in bi),
        "causal_max_p_vs_first_token": max(r["p_vs_first_token"] for r in ca),
        "causal_max_first_token_defect": max(r["first_token_conservation_defect"] for r in ca),
        "causal_min_block_mean_defect": min(r["block_mean_conservation_defect"] for r in ca),
        "bidirectional_irreducible": all(r["irreducible_numeric"] and r["irreducible_exact"]
                                         for r in bi),
        "causal_irreducible": any(r["irreducible_numeric"] or r["irreducible_exact"] for r in ca),
        "causal_single_closed_class": all(r["closed_classes"] == [[0]] and r["null_dim_exact"] == 1
                                          for r in ca),
    }
    return out


def check(params: dict, seed: int) -> CheckResult:
    p = dict(params)
    _validate(p)
    n = p["n_states"]
    gen, gen_dy, c = chain_functions(p)
    m = c.size
    x_seed, x2_seed = np.random.SeedSequence(seed).spawn(2)
    x0 = np.random.default_rng(x_seed).dirichlet(np.ones(m))
    x0b = np.random.default_rng(x2_seed).dirichlet(np.ones(m))
    if p["chain"] == "reducible":  # all mass in one class vs all in the other
        x0 = np.r_[x0[:n] / x0[:n].sum(), np.zeros(n)]
        x0b = np.r_[np.zeros(n), x0b[n:] / x0b[n:].sum()]
    ys = np.linspace(p["y_min"], p["y_max"], p["n_grid"])
    figures: dict = {}
    notes: list = []

    # ---- structure of Q(y) on the grid: generator? irreducible? null space, gap
    viol = [mk.generator_violation(gen(y)) for y in ys]
    irreducible = [mk.is_irreducible(gen(y)) for y in ys]
    n_closed = [len(mk.closed_classes(gen(y))) for y in ys]
    eig = [np.linalg.eigvals(gen(y)) for y in ys]
    zero_tol = 1e-10 * max(1.0, max(float(np.abs(gen(y)).max()) for y in ys))
    n_zero = [int(np.sum(np.abs(lam) <= zero_tol)) for lam in eig]
    max_re_rest = [float(np.delete(lam, np.argmin(np.abs(lam))).real.max()) for lam in eig]
    is_gen = all(w["negative_offdiag"] == 0.0 and w["sum_defect"] <= zero_tol for w in viol)
    figures.update({
        "generator_on_grid": bool(is_gen),
        "max_negative_rate": max(w["negative_offdiag"] for w in viol),
        "max_column_sum_defect": max(w["sum_defect"] for w in viol),
        "irreducible_on_grid": bool(all(irreducible)),
        "max_closed_classes": int(max(n_closed)),
        "max_zero_eigenvalues": int(max(n_zero)),
        "min_zero_eigenvalues": int(min(n_zero)),
        "max_re_nonleading_eigenvalue": max(max_re_rest),
        "min_spectral_gap": -max(max_re_rest),
    })
    hypotheses = bool(is_gen and all(irreducible))
    try:
        mk.stationary_distribution(gen(p["y0"]))
        figures["numeric_stationary_error"] = None
    except ValueError as exc:
        figures["numeric_stationary_error"] = str(exc)
    null_vecs = [mk._null_vector(gen(y)) for y in ys]
    figures["min_null_vector_entry"] = float(min(q.min() for q in null_vecs))

    # ---- long-time dependence on the initial condition, and staying on the simplex
    eps_lo = p["eps_min"]
    ra, sl = _run(p, gen, gen_dy, c, eps_lo, x0)
    rb, _ = _run(p, gen, gen_dy, c, eps_lo, x0b)
    figures["x0_dependence_at_t1"] = float(np.abs(ra.x[-1] - rb.x[-1]).max())
    figures["mass_defect"] = float(np.abs(ra.x[sl].sum(axis=1) - 1.0).max())
    figures["min_x_entry"] = float(ra.x[sl].min())
    on_simplex = figures["mass_defect"] <= 1e-8 and figures["min_x_entry"] >= -1e-8
    unique_eq = figures["max_zero_eigenvalues"] == 1 and figures["min_zero_eigenvalues"] == 1 \
        and figures["min_null_vector_entry"] >= -1e-12 \
        and figures["max_re_nonleading_eigenvalue"] < 0
    no_memory = figures["x0_dependence_at_t1"] <= eps_lo
    tol = {"manifold_abs": p["manifold_tol"],
           "slope_order0": [1 - p["slope_tol0"], 1 + p["slope_tol0"]],
           "slope_order1": [2 - p["slope_tol1"], 2 + p["slope_tol1"]],
           "x0_dependence_abs": eps_lo, "simplex_abs": 1e-8}

    if p["chain"] != "irreducible":
        figures["unique_probability_equilibrium"] = bool(unique_eq)
        figures["stays_on_simplex"] = bool(on_simplex)
        notes.append(f"negative control {p['chain']}: tracking of a unique probability equilibrium "
                     "manifold is not defined; measured the failing conclusion instead")
        holds = bool(unique_eq and on_simplex and no_memory)
        return CheckResult(id="F2", holds=holds, hypotheses_hold=hypotheses, figures=figures,
                           params=p, seed=seed, tolerance=tol, notes=notes)

    # ---- 1. manifold: theory vs numerics
    sm = tm.slow_manifold(n)
    Q_th = sp.lambdify(tm.y, sm.Q, modules="numpy", cse=True)
    figures["generator_definition_mismatch"] = float(max(np.abs(np.array(Q_th(y), dtype=float)
                                                                - gen(y)).max() for y in ys))
    p_num = np.array([mk.stationary_distribution(gen(y)) for y in ys])
    p_th = np.array(sm.p_numeric(ys)).T
    figures["manifold_max_abs_error"] = float(np.abs(p_num - p_th).max())
    figures["manifold_residual_theory"] = float(max(np.abs(gen(y) @ q).max()
                                                    for y, q in zip(ys, p_th)))
    tt = 0.7
    h_num = np.array([mk.first_order_correction(gen(y), gen_dy(y), c, y, tt) for y in ys])
    h_th = np.array(sm.h1_numeric(ys, np.full_like(ys, tt))).T
    figures["h1_max_abs_error"] = float(np.abs(h_num - h_th).max())
    figures["h1_exact_residuals_zero"] = bool(all(r == 0 for r in sm.residual_invariance)
                                              and sm.residual_sum == 0)

    # ---- 3. tracking slopes
    eps = np.geomspace(p["eps_min"], p["eps_max"], p["n_eps"])
    e0, e1, nfev, y_range = [], [], [], [np.inf, -np.inf]
    for e in eps:
        run = ra if e == eps_lo else _run(p, gen, gen_dy, c, e, x0)[0]
        yy, ts, xx = run.y[sl], run.t[sl], run.x[sl]
        P_ = np.array(sm.p_numeric(yy)).T
        H_ = np.array(sm.h1_numeric(yy, ts)).T
        e0.append(float(np.abs(xx - P_).max()))
        e1.append(float(np.abs(xx - P_ - e * H_).max()))
        nfev.append(run.nfev)
        y_range = [min(y_range[0], float(run.y.min())), max(y_range[1], float(run.y.max()))]
    fit0, fit1 = slope_fit(eps, np.array(e0)), slope_fit(eps, np.array(e1))
    layer = np.exp(-figures["min_spectral_gap"] * p["t0"] / eps)  # per ε
    figures.update({"eps": eps.tolist(), "err_order0": e0, "err_order1": e1, "nfev": nfev,
                    "slope_order0": fit0, "slope_order1": fit1,
                    "initial_layer_factor": float(layer.max()),
                    "y_range_visited": y_range})
    if y_range[0] < p["y_min"] or y_range[1] > p["y_max"]:
        notes.append(f"trajectory visits y in {y_range}, outside the checked grid")
    layer_ok = bool(np.all(layer <= 1e-3 * np.array(e1)))
    hypotheses = hypotheses and layer_ok and p["y_min"] <= y_range[0] and y_range[1] <= p["y_max"]

    # ---- 4. attention link
    link = attention_link(p["P_max"])
    figures["attention_link"] = link
    s = link["summary"]
    link_ok = (s["max_p_numeric_vs_exact"] <= p["manifold_tol"] and s["max_kernel_vs_exact"] == 0.0
               and s["bidirectional_max_p_vs_uniform"] <= p["manifold_tol"]
               and s["bidirectional_max_block_mean_defect"] <= p["manifold_tol"]
               and s["causal_max_p_vs_first_token"] <= p["manifold_tol"]
               and s["causal_max_first_token_defect"] == 0.0
               and s["causal_min_block_mean_defect"] > 0.1
               and s["bidirectional_irreducible"] and not s["causal_irreducible"]
               and s["causal_single_closed_class"])
    notes.append("within-block block_causal chain: not irreducible (token 1 absorbing, others "
                 "transient) but exactly one closed class, so p_st = e_1 is unique; the hypothesis "
                 "used is 'one closed class', of which irreducibility is the special case")

    def inside(fit, centre, half):
        return centre - half <= fit["ci95"][0] and fit["ci95"][1] <= centre + half
    holds = bool(unique_eq and on_simplex and no_memory
                 and figures["generator_definition_mismatch"] <= p["manifold_tol"]
                 and figures["manifold_max_abs_error"] <= p["manifold_tol"]
                 and figures["h1_max_abs_error"] <= 1e3 * p["manifold_tol"]
                 and figures["h1_exact_residuals_zero"]
                 and inside(fit0, 1.0, p["slope_tol0"]) and inside(fit1, 2.0, p["slope_tol1"])
                 and link_ok)
    figures["attention_link_holds"] = bool(link_ok)
    tol["h1_abs"] = 1e3 * p["manifold_tol"]
    return CheckResult(id="F2", holds=holds, hypotheses_hold=hypotheses, figures=figures,
                       params=p, seed=seed, tolerance=tol, notes=notes)
