"""D2 — the stack with ``h = 1/L`` converges to the depth flow with order 1.

Claim: write the layer as ``X_{l+1} = X_l + h·F(t_l, X_l)``; with ``h = 1/L`` and a smooth ``θ(t)``
the stack (layer ``l`` uses ``θ(l/L)``) converges to the solution at ``t = 1`` of
``dX/dt = F(t, X)`` (:func:`numerics.flow.make_rhs`, ``form="layer"``) with order 1 in ``h``; tied
weights (a constant path) give the autonomous case.

Checked by: a smooth path between two random layers (:class:`numerics.depth_path.SmoothPath`,
weights and gate) and a constant (tied) path, stacks for ``L`` in ``Ls``, the flow integrated by
DOPRI5 (:mod:`numerics.integrators`) at tight tolerance; the relative error at ``t = 1`` is fitted
against ``h = 1/L`` on log–log axes (slope with 95% interval, :func:`verify.checks.f2.slope_fit`).
The verdict requires ``|slope − 1| ≤ slope_tol`` for both paths, both 95% intervals narrower than
``slope_tol`` (the fit decides: the asymptotic regime is reached), and, for the untied path, that
every refinement ``L → L'`` divides the error by ``L'/L`` to within 10% (monotone convergence, not
just on average).

Hypotheses, measured on the instance: every built stack has depth step ``h`` with ``h·L = 1``; the
paths are Lipschitz (:func:`numerics.depth_path.lipschitz_estimate` at spacings 1/1024 and 1/2048
agree to 10%; a jump doubles it).

Negative controls: ``h_mode="one"``, the plain stack (``h = 1``): it is not a discretisation of the
flow on ``[0, 1]`` (it runs the dynamics to depth ``L``), so the error does not shrink as ``L``
grows; ``path="step"``, a piecewise-constant ``θ(t)`` with ``n_jumps`` jumps at random times off
the grid: the order stays 1 on average (each jump costs one O(h) local error and their number is
fixed) but the convergence is irregular, so the fit's interval is wide and the per-refinement rate
fails.

Caveat: on some random smooth paths the tied fit is still pre-asymptotic at ``L = 64`` (e.g. seed
400, ``mask="block_causal"``, ``Ls = (64, …, 512)``: tied slope 1.064 with interval width 0.128);
the verdict is then ``fails`` (the fit does not decide).
"""

from __future__ import annotations

import numpy as np

import numerics as nm
from numerics.depth_path import StepPath, lipschitz_estimate, random_smooth_path, stack_from_path
from numerics.integrators import integrate
from numerics.model import init_layer

from ..claim import Claim, Conclusion, Control, Diagnostic, Param
from ..rates import slope_fit

PATHS = ("smooth", "step")
H_MODES = ("1/L", "one")
SMOOTHNESS_GRID = 1024
"""The path is sampled at spacings 1/1024 and 1/2048 to measure its Lipschitz constant."""
SMOOTHNESS_RATIO = 1.1
RATE_RTOL = 0.1
"""Each refinement L → L' must divide the untied error by L'/L to within 10%."""


def flow_solution(cfg, path, X0, E, rtol, atol):
    """``X(1)`` of ``dX/dt = F(t, X)`` by DOPRI5 (stopping at the path's breakpoints)."""
    f = nm.make_rhs(path, form="layer", E=E, config=cfg)
    T, d = X0.shape
    res = integrate(lambda t, y: f(t, y.reshape(T, d)), (0.0, 1.0), X0, method="dopri5", rtol=rtol,
                    atol=atol, breakpoints=getattr(path, "breakpoints", ()))
    if not res.success:
        raise RuntimeError(f"flow integration failed: {res.message}")
    return res.y[:, -1].reshape(T, d), res


def convergence(cfg, path, stacks, X0, E, rtol, atol) -> dict:
    """The relative error at t = 1 of every stack against the flow, and its log–log slope in 1/L."""
    Xref, res = flow_solution(cfg, path, X0, E, rtol, atol)
    errs = []
    Ls = [m.L for m in stacks]
    for model in stacks:
        XL = nm.stack(model, X0, E)
        errs.append(np.linalg.norm(XL - Xref) / np.linalg.norm(Xref))
    h = 1.0 / np.asarray(Ls, dtype=float)
    return {"h": h, "err": np.asarray(errs), "fit": slope_fit(h, np.asarray(errs)),
            "reference_steps": res.nsteps, "reference_nfev": res.nfev}


class Instance:
    def __init__(self, p: dict, seed: int):
        w_seed, t_seed, x_seed, j_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        self.cfg = cfg = nm.ModelConfig(T=p["T"], P=p["P"], d=p["d"], mask=p["mask"], gamma=p["gamma"])
        rx = np.random.default_rng(x_seed)
        self.X0 = rx.standard_normal((cfg.T, cfg.d))
        self.E = self.X0 + 0.5 * rx.standard_normal((cfg.T, cfg.d)) if cfg.gamma else None
        if p["path"] == "smooth":
            self.path = random_smooth_path(cfg, w_seed, scale=p["scale"], gate=p["gate"])
        else:
            rng = np.random.default_rng(w_seed)
            thetas = [init_layer(cfg, rng, scale=p["scale"], gate=p["gate"])
                      for _ in range(p["n_jumps"] + 1)]
            jumps = np.sort(np.random.default_rng(j_seed).uniform(0.05, 0.95, p["n_jumps"]))
            self.path = StepPath(thetas, jumps)
        self.tied_path = random_smooth_path(cfg, t_seed, tied=True, scale=p["scale"], gate=p["gate"])
        h = 1.0 if p["h_mode"] == "one" else None
        self.stacks = {"untied": [stack_from_path(cfg, self.path, L, h=h) for L in p["Ls"]],
                       "tied": [stack_from_path(cfg, self.tied_path, L, h=h) for L in p["Ls"]]}


class D2(Claim):
    id = "D2"
    title = "Non-autonomous flow"
    abstract = "untied weights as its non-autonomous feature"
    statement = ("With h = 1/L and smooth θ(t) the stack converges to dX/dt = F(t, X) with order 1 "
                 "(fitted slope 1 ± 0.1); tied weights give the autonomous case.")
    params = {
        "T": Param(8, "tokens (a multiple of P)", low=1, high=64),
        "P": Param(2, "tokens per block", low=1, high=64),
        "d": Param(4, "features", low=1, high=16),
        "mask": Param("causal", "fast attention mask", choices=tuple(nm.NAMED_MASKS)),
        "gamma": Param(0.5, "injection strength γ (E = X_0 + 0.5·noise)", low=0.0, high=10.0),
        "Ls": Param((16, 32, 64, 128, 256, 512), "depths L of the stacks (distinct)", low=1, high=4096,
                    min_len=3),
        "scale": Param(1.0, "scale of the weights", low=0.0, high=10.0),
        "gate": Param(0.5, "gate at t = 0 (the untied path runs to −gate)", low=-10.0, high=10.0),
        "path": Param("smooth", "θ(t): smooth (cosine blend of two random layers) or step "
                                "(piecewise constant, jumps off the grid)", choices=PATHS),
        "n_jumps": Param(3, "jumps of the step path", low=1, high=20),
        "h_mode": Param("1/L", "depth step of the stacks: 1/L (the Euler discretisation) or one "
                               "(the plain stack)", choices=H_MODES),
        "rtol": Param(1e-11, "DOPRI5 relative tolerance of the flow reference", low=1e-13, high=1e-4),
        "atol": Param(1e-13, "DOPRI5 absolute tolerance of the flow reference", low=1e-15, high=1e-4),
        "slope_tol": Param(0.1, "allowed |slope − 1|, and the largest width of its 95% interval",
                           low=0.0, high=10.0, open_low=True),
    }
    hypotheses = {
        "depth_step_is_one_over_L": "every stack of L layers has depth step h with h·L = 1",
        "path_is_smooth": f"θ(t) is Lipschitz: its difference-quotient bound on grids of 1/{SMOOTHNESS_GRID} "
                          f"and 1/{2 * SMOOTHNESS_GRID} agree to a factor {SMOOTHNESS_RATIO} "
                          "(a jump doubles it), for the untied and the tied path",
    }
    conclusion = {
        "order_one_untied": "|fitted slope of error vs h − 1| ≤ slope_tol (untied path)",
        "order_one_tied": "|fitted slope of error vs h − 1| ≤ slope_tol (tied path: autonomous flow)",
        "fit_decides": "both slopes' 95% intervals are narrower than slope_tol",
        "error_rate_at_every_refinement":
            f"untied: every refinement L → L' divides the error by L'/L to within {RATE_RTOL:.0%}",
    }
    controls = (
        Control("plain_stack_h_one", {"h_mode": "one"}, breaks="depth_step_is_one_over_L",
                meaning="the plain stack (h = 1) runs the dynamics to depth L, not to t = 1: the "
                        "error does not shrink as L grows", seed=0),
        Control("jumps_off_the_grid", {"path": "step"}, breaks="path_is_smooth",
                meaning="a piecewise-constant θ(t) with jumps off the grid: order 1 on average (each "
                        "jump adds one O(h) local error) but irregular, the fit does not decide",
                seed=0),
    )
    key_figures = ("slope_untied", "slope_tied", "slope_untied_ci95")

    def validate(self, p):
        if p["T"] % p["P"]:
            raise ValueError(f"parameter P={p['P']} must divide T={p['T']}")
        if len(set(p["Ls"])) != len(p["Ls"]):
            raise ValueError(f"parameter Ls={p['Ls']}: expected at least 3 distinct depths")

    def build(self, p, seed):
        return Instance(p, seed)

    def diagnose(self, inst):
        steps = [[m.config.h * m.L for m in stacks] for stacks in inst.stacks.values()]
        worst = max(abs(x - 1.0) for s in steps for x in s)
        lips = {name: [lipschitz_estimate(path, SMOOTHNESS_GRID), lipschitz_estimate(path, 2 * SMOOTHNESS_GRID)]
                for name, path in (("untied", inst.path), ("tied", inst.tied_path))}
        smooth = all(fine <= SMOOTHNESS_RATIO * coarse for coarse, fine in lips.values())
        return {
            "depth_step_is_one_over_L": Diagnostic(worst <= 1e-12, worst, "max_L |h·L − 1| ≤ 1e-12"),
            "path_is_smooth": Diagnostic(
                smooth, lips, f"[Lip(1/{SMOOTHNESS_GRID}), Lip(1/{2 * SMOOTHNESS_GRID})] per path; "
                              f"fine ≤ {SMOOTHNESS_RATIO}·coarse"),
        }

    def conclude(self, inst):
        p, cfg = inst.p, inst.cfg
        untied = convergence(cfg, inst.path, inst.stacks["untied"], inst.X0, inst.E, p["rtol"], p["atol"])
        auto = convergence(cfg, inst.tied_path, inst.stacks["tied"], inst.X0, inst.E, p["rtol"], p["atol"])
        tol = p["slope_tol"]
        widths = [f["fit"]["ci95"][1] - f["fit"]["ci95"][0] for f in (untied, auto)]
        Ls = np.asarray(p["Ls"], dtype=float)
        order = np.argsort(Ls, kind="stable")
        err = untied["err"][order]
        rate = (err[:-1] / err[1:]) / (Ls[order][1:] / Ls[order][:-1])
        rate_dev = float(np.abs(rate - 1.0).max())
        figures = {
            "slope_untied": untied["fit"]["slope"], "slope_untied_ci95": untied["fit"]["ci95"],
            "slope_tied": auto["fit"]["slope"], "slope_tied_ci95": auto["fit"]["ci95"],
            "Ls": list(p["Ls"]), "err_untied": untied["err"], "err_tied": auto["err"],
            "error_rate_over_expected": rate.tolist(),
            "error_constant_untied": float(np.exp(untied["fit"]["intercept"])),
            "reference_steps": untied["reference_steps"], "reference_nfev": untied["reference_nfev"],
        }
        parts = {
            "order_one_untied": Diagnostic(abs(untied["fit"]["slope"] - 1) <= tol, untied["fit"]["slope"],
                                           f"|slope − 1| ≤ {tol}"),
            "order_one_tied": Diagnostic(abs(auto["fit"]["slope"] - 1) <= tol, auto["fit"]["slope"],
                                         f"|slope − 1| ≤ {tol}"),
            "fit_decides": Diagnostic(max(widths) < tol, widths,
                                      f"[untied, tied] 95% interval widths < {tol}"),
            "error_rate_at_every_refinement": Diagnostic(
                rate_dev < RATE_RTOL, rate_dev,
                f"max |(err_L/err_L')/(L'/L) − 1| < {RATE_RTOL}"),
        }
        notes = [f"flow reference: DOPRI5 rtol={p['rtol']}; errors relative Frobenius at t = 1"]
        if isinstance(inst.path, StepPath):
            figures["jumps"] = list(inst.path.breakpoints)
            notes.append("piecewise-constant path with jumps off the grid: each jump adds one O(h) "
                         "local error, so the global order stays 1 on average, irregularly")
        return Conclusion(parts, figures, tolerance={"slope_abs": tol, "ci95_width": tol,
                                                     "rate_rel": RATE_RTOL}, notes=notes)


CLAIM = D2()
