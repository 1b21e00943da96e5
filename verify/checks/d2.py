"""D2 — the stack with ``h = 1/L`` converges to the depth flow with order 1.

Statement (SPEC §2, D2): write the layer as ``X_{l+1} = X_l + h·F(t_l, X_l)``; with ``h = 1/L`` and a
smooth ``θ(t)`` the stack (layer ``l`` uses ``θ(l/L)``) converges to the solution at ``t = 1`` of
``dX/dt = F(t, X)`` (:func:`numerics.flow.make_rhs`, ``form="layer"``) with order 1 in ``h``; tied
weights (a constant path) give the autonomous case.

Checked by: a smooth path between two random layers (:class:`numerics.depth_path.SmoothPath`,
weights and gate), stacks for ``L`` in ``Ls``, the flow integrated by DOPRI5
(:mod:`numerics.integrators`) at tight tolerance; the relative error at ``t = 1`` is fitted against
``h = 1/L`` on log–log axes (slope with 95% interval); holds when ``|slope − 1| ≤ slope_tol`` for
the untied and the tied path and both intervals have half-width ≤ ``slope_tol``.
``path="step"`` replaces the smooth path by a piecewise-constant one
with ``n_jumps`` jumps at random times off the grid (reported: the order stays 1, because each jump
costs one O(h) local error and their number is fixed).

Negative control: ``h_mode="one"``, the plain stack (``h = 1``): it is not a discretisation of the
flow on ``[0, 1]`` (it runs the dynamics to depth ``L``), so the error does not shrink as ``L`` grows.
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics.depth_path import StepPath, random_smooth_path, stack_from_path
from numerics.integrators import integrate
from numerics.model import init_layer

from . import CheckResult
from .f2 import slope_fit

DEFAULTS = {
    "T": 8, "P": 2, "d": 4, "mask": "causal", "gamma": 0.5,
    "Ls": (16, 32, 64, 128, 256, 512), "scale": 1.0, "gate": 0.5,
    "path": "smooth", "n_jumps": 3, "h_mode": "1/L",
    "rtol": 1e-11, "atol": 1e-13, "slope_tol": 0.1,
}

LIMITS = {"T": (1, 64), "P": (1, 64), "d": (1, 16), "gamma": (0.0, 10.0), "Ls": (1, 4096),
          "scale": (0.0, 10.0), "gate": (-10.0, 10.0), "n_jumps": (1, 20), "rtol": (1e-13, 1e-4),
          "atol": (1e-15, 1e-4), "slope_tol": (0.0, 10.0)}

PATHS = ("smooth", "step")
H_MODES = ("1/L", "one")


def flow_solution(cfg, path, X0, E, rtol, atol):
    """``X(1)`` of ``dX/dt = F(t, X)`` by DOPRI5 (stopping at the path's breakpoints)."""
    f = nm.make_rhs(path, form="layer", E=E, config=cfg)
    T, d = X0.shape
    res = integrate(lambda t, y: f(t, y.reshape(T, d)), (0.0, 1.0), X0, method="dopri5", rtol=rtol,
                    atol=atol, breakpoints=getattr(path, "breakpoints", ()))
    if not res.success:
        raise RuntimeError(f"flow integration failed: {res.message}")
    return res.y[:, -1].reshape(T, d), res


def convergence(cfg, path, X0, E, Ls, h_mode, rtol, atol) -> dict:
    Xref, res = flow_solution(cfg, path, X0, E, rtol, atol)
    errs = []
    for L in Ls:
        model = stack_from_path(cfg, path, L, h=1.0 if h_mode == "one" else None)
        XL = nm.stack(model, X0, E)
        errs.append(np.linalg.norm(XL - Xref) / np.linalg.norm(Xref))
    h = 1.0 / np.asarray(Ls, dtype=float)
    return {"h": h, "err": np.asarray(errs), "fit": slope_fit(h, np.asarray(errs)),
            "reference_steps": res.nsteps, "reference_nfev": res.nfev}


def check(params: dict, seed: int) -> CheckResult:
    p = params
    if p["path"] not in PATHS:
        raise ValueError(f"path must be one of {list(PATHS)}, got {p['path']!r}")
    if p["h_mode"] not in H_MODES:
        raise ValueError(f"h_mode must be one of {list(H_MODES)}, got {p['h_mode']!r}")
    Ls = tuple(int(x) for x in p["Ls"])
    if len(Ls) < 3 or len(set(Ls)) != len(Ls):
        raise ValueError(f"Ls needs at least 3 distinct depths, got {Ls}")
    if p["mask"] not in nm.NAMED_MASKS:
        raise ValueError(f"mask must be one of {list(nm.NAMED_MASKS)}, got {p['mask']!r}")
    ss = np.random.SeedSequence(seed)
    w_seed, t_seed, x_seed, j_seed = ss.spawn(4)
    cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], gamma=p["gamma"])
    rx = np.random.default_rng(x_seed)
    X0 = rx.standard_normal((cfg.T, cfg.d))
    E = X0 + 0.5 * rx.standard_normal((cfg.T, cfg.d)) if cfg.gamma else None
    if p["path"] == "smooth":
        path = random_smooth_path(cfg, w_seed, scale=p["scale"], gate=p["gate"])
    else:
        rng = np.random.default_rng(w_seed)
        thetas = [init_layer(cfg, rng, scale=p["scale"], gate=p["gate"]) for _ in range(p["n_jumps"] + 1)]
        jumps = np.sort(np.random.default_rng(j_seed).uniform(0.05, 0.95, p["n_jumps"]))
        path = StepPath(thetas, jumps)
    tied = random_smooth_path(cfg, t_seed, tied=True, scale=p["scale"], gate=p["gate"])
    untied = convergence(cfg, path, X0, E, Ls, p["h_mode"], p["rtol"], p["atol"])
    auto = convergence(cfg, tied, X0, E, Ls, p["h_mode"], p["rtol"], p["atol"])
    tol = p["slope_tol"]
    hws = [(f["fit"]["ci95"][1] - f["fit"]["ci95"][0]) / 2 for f in (untied, auto)]
    # a fit decides only if its 95% interval is narrower than the tolerance band
    holds = (abs(untied["fit"]["slope"] - 1) <= tol and abs(auto["fit"]["slope"] - 1) <= tol
             and max(hws) <= tol)
    hypotheses = p["h_mode"] == "1/L" and p["path"] == "smooth"
    figures = {
        "slope_untied": untied["fit"]["slope"], "slope_untied_ci95": untied["fit"]["ci95"],
        "slope_tied": auto["fit"]["slope"], "slope_tied_ci95": auto["fit"]["ci95"],
        "Ls": list(Ls), "err_untied": untied["err"], "err_tied": auto["err"],
        "error_constant_untied": float(np.exp(untied["fit"]["intercept"])),
        "reference_steps": untied["reference_steps"], "reference_nfev": untied["reference_nfev"],
    }
    notes = [f"flow reference: DOPRI5 rtol={p['rtol']}; errors relative Frobenius at t = 1"]
    if p["path"] == "step":
        figures["jumps"] = list(path.breakpoints)
        notes.append("piecewise-constant path with jumps off the grid: each jump adds one O(h) "
                     "local error, so the global order stays 1")
    return CheckResult(id="D2", holds=bool(holds), hypotheses_hold=bool(hypotheses), figures=figures,
                       params=dict(p), seed=seed, tolerance={"slope_abs": tol}, notes=notes)
