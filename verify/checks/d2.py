"""D2 — the stack with ``h = 1/L`` converges to the depth flow with order 1.

Claim: write the layer as ``X_{l+1} = X_l + h·F(t_l, X_l)``; with ``h = 1/L`` and a smooth ``θ(t)``
the stack (layer ``l`` uses ``θ(l/L)``) converges to the solution at ``t = 1`` of
``dX/dt = F(t, X)`` (:func:`numerics.model.flow.make_rhs`, ``form="layer"``) with order 1 in ``h``; tied
weights (a constant path) give the autonomous case.

Checked by: a smooth path between two random layers (:class:`numerics.model.depth_path.SmoothPath`,
weights and gate) and a constant (tied) path; the flow is integrated by DOPRI5
(:mod:`numerics.integrators`) at tight tolerance and the relative error at ``t = 1`` of the stack
is measured on the doubling ladder ``L = L_min·2^j ≤ L_max``, coarse to fine and lazily. The rate
is decided by the asymptotic-window rule of :func:`verify.measure.asymptotic_slope`, fixed in
advance: the first ``window`` consecutive ladder points whose local log–log slopes spread by at
most ``slope_tol/2`` form the asymptotic window, and the order is 1 when the 95% interval of the
slope fitted there lies in ``[1 − slope_tol, 1 + slope_tol]``, for the untied and the tied path.
A ladder that ends (at ``L_max``) before its local slopes settle does not verify the rate: the
part ``asymptotic_window_*`` fails. Points before the window (the pre-asymptotic bend of the
error curve, e.g. seed 400 with ``mask="block_causal"``, whose tied local slopes are 1.63, 1.31,
1.12, 1.05, 1.02, … from ``L = 16``: its window is ``L = 128…2048``) are measured but do not enter
the fit; usually only the first window (``L = 16…256``) is computed.

On the asymptotic window every refinement ``L → 2L`` divides the error by ``2^s`` with ``s``
within ``slope_tol/2`` of the fitted slope, hence within ``1.5·slope_tol`` of 1: convergence is
regular there, not only on average, so no separate per-refinement part is needed; the ratios
``(err_L/err_2L)/2`` on the window are recorded as a figure.

Hypotheses, measured on the instance: the stacks have depth step ``h`` with ``h·L = 1``
(measured on the stacks of the first ``window`` ladder depths, which every verdict evaluates;
deeper stacks are built by the same :meth:`Instance.stack`, and ``max |h·L − 1|`` over every
evaluated stack is recorded); the paths are Lipschitz
(:func:`numerics.model.depth_path.lipschitz_estimate` at spacings 1/1024 and 1/2048 agree to 10%; a
jump doubles it).

Negative controls: ``h_mode="one"``, the plain stack (``h = 1``): it is not a discretisation of the
flow on ``[0, 1]`` (it runs the dynamics to depth ``L``), so the error does not shrink as ``L``
grows (its local slopes settle near 0); ``path="step"``, a piecewise-constant ``θ(t)`` with
``n_jumps`` jumps at random times off the grid: each jump costs one O(h) local error whose size
depends on where the jump falls between grid points, so the local slopes keep oscillating and no
asymptotic window is found before ``L_max``.

Caveat: the window rule decides on a finite ladder; a path whose pre-asymptotic bend extends
beyond ``L_max`` is reported as ``fails`` (``asymptotic_window_*`` not found), not as a
counterexample: raise ``L_max``.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics.integrators.integration import integrate
from fastslow.numerics.model.depth_path import (
    SmoothPath,
    StepPath,
    lipschitz_estimate,
    random_smooth_path,
    stack_from_path,
)
from fastslow.numerics.model.flow import make_rhs
from fastslow.numerics.model.layer import stack
from fastslow.numerics.model.weights import ModelConfig, init_layer

from ..claim import Claim, Conclusion, Control
from ..integrator_calibration import error_control_part
from ..measure import asymptotic_slope, relative_error
from ..model_params import model_params
from ..params import Param
from ..verdict import Diagnostic

PATHS = ("smooth", "step")
"""θ(t) of the untied path: a smooth blend of two random layers, or piecewise constant."""
H_MODES = ("1/L", "one")
"""The depth step of the stacks: ``1/L`` (Euler for the flow on [0, 1]) or 1 (the plain stack)."""
SMOOTHNESS_GRID = 1024
"""The path is sampled at spacings 1/1024 and 1/2048 to measure its Lipschitz constant."""
SMOOTHNESS_RATIO = 1.1
"""A Lipschitz path's difference-quotient bound changes by at most this factor when the spacing
halves (a jump doubles it)."""
DEPTH_STEP_TOL = 1e-12
"""``|h·L − 1|`` of every stack of the first window is at most this."""
PATH_NAMES = ("untied", "tied")
"""The two paths whose rate is decided: the untied path of ``path`` and a constant (tied) one."""


def flow_solution(cfg, path, X0, E, rtol, atol):
    """``X(1)`` of ``dX/dt = F(t, X)`` by DOPRI5 (stopping at the path's breakpoints)."""
    f = make_rhs(path, form="layer", E=E, config=cfg)
    T, d = X0.shape
    res = integrate(
        lambda t, y: np.asarray(f(t, y.reshape(T, d))).ravel(),
        (0.0, 1.0),
        X0,
        method="dopri5",
        rtol=rtol,
        atol=atol,
        breakpoints=getattr(path, "breakpoints", ()),
    )
    if not res.success:
        raise RuntimeError(f"flow integration failed: {res.message}")
    return res.y[:, -1].reshape(T, d), res


def depth_ladder(L_min: int, L_max: int) -> list[int]:
    """The doubling ladder ``L_min·2^j`` up to ``L_max`` (coarse to fine)."""
    out = [L_min]
    while 2 * out[-1] <= L_max:
        out.append(2 * out[-1])
    return out


class Instance:
    """The initial state and injection, the untied and the tied path, the ladder of depths and the
    stacks built on it (on demand, kept)."""

    def __init__(self, p: dict, seed: int):
        w_seed, t_seed, x_seed, j_seed = np.random.SeedSequence(seed).spawn(4)
        self.p = p
        self.cfg = cfg = ModelConfig.from_params(p)
        rx = np.random.default_rng(x_seed)
        self.X0 = rx.standard_normal((cfg.T, cfg.d))
        self.E = self.X0 + 0.5 * rx.standard_normal((cfg.T, cfg.d)) if cfg.gamma else None
        path: SmoothPath | StepPath
        if p["path"] == "smooth":
            path = random_smooth_path(cfg, w_seed, scale=p["scale"], gate=p["gate"])
        else:
            rng = np.random.default_rng(w_seed)
            thetas = [
                init_layer(cfg, rng, scale=p["scale"], gate=p["gate"])
                for _ in range(p["n_jumps"] + 1)
            ]
            jumps = np.sort(np.random.default_rng(j_seed).uniform(0.05, 0.95, p["n_jumps"]))
            path = StepPath(thetas, jumps)
        self.paths = {
            "untied": path,
            "tied": random_smooth_path(cfg, t_seed, tied=True, scale=p["scale"], gate=p["gate"]),
        }
        self.ladder = depth_ladder(p["L_min"], p["L_max"])
        self._stacks: dict = {}

    def stack(self, name: str, L: int):
        """The ``L``-layer stack of path ``name`` (depth step ``1/L``, or 1 for the plain stack)."""
        key = (name, L)
        if key not in self._stacks:
            h = 1.0 if self.p["h_mode"] == "one" else None
            self._stacks[key] = stack_from_path(self.cfg, self.paths[name], L, h=h)
        return self._stacks[key]

    @property
    def stacks(self) -> list:
        """Every stack built so far (both paths, every evaluated depth)."""
        return list(self._stacks.values())

    def error_at_depth(self, name: str, Xref):
        """``h ↦ ‖X_L − X(1)‖/‖X(1)‖`` with ``L = 1/h`` (the stack built on demand)."""

        def error_of(h: float) -> float:
            XL = stack(self.stack(name, int(round(1.0 / h))), self.X0, self.E)
            return relative_error(XL, Xref)

        return error_of


# --------------------------------------------------------------------------- conclusion parts


def measured_rate(inst: Instance, name: str) -> tuple[dict, dict]:
    """The flow reference ``X(1)`` of path ``name`` (DOPRI5) and the rate of the stack's error
    against it on the ladder (:func:`verify.measure.asymptotic_slope`), with the reference's cost."""
    p = inst.p
    Xref, res = flow_solution(inst.cfg, inst.paths[name], inst.X0, inst.E, p["rtol"], p["atol"])
    rate = asymptotic_slope(
        [1.0 / L for L in inst.ladder],
        inst.error_at_depth(name, Xref),
        1.0,
        p["slope_tol"],
        window=p["window"],
    )
    return rate, {"steps": res.nsteps, "nfev": res.nfev}


def rate_figures(name: str, rate: dict, window: int) -> dict:
    """The measured figures of one path's rate: slope and interval, window, every evaluated depth
    and error, the local slopes and, on the window, ``(err_L/err_2L)/2``."""
    Ls = [int(round(1.0 / h)) for h in rate["h"]]
    win = [int(round(1.0 / h)) for h in rate["window"]]
    figures = {
        f"slope_{name}": rate["slope"],
        f"slope_{name}_ci95": rate["ci95"],
        f"window_{name}": win,
        f"converged_{name}": rate["converged"],
        f"Ls_{name}": Ls,
        f"err_{name}": rate["err"],
        f"local_slopes_{name}": rate["local_slopes"],
    }
    if rate["converged"]:
        i0 = Ls.index(win[0])
        err = np.asarray(rate["err"][i0 : i0 + window])
        figures[f"error_rate_over_expected_{name}"] = ((err[:-1] / err[1:]) / 2.0).tolist()
    return figures


def rate_parts(name: str, rate: dict, p: dict) -> dict:
    """The parts ``asymptotic_window_<name>`` (a window of settled local slopes was found) and
    ``order_one_<name>`` (the slope's 95% interval on it lies in 1 ± slope_tol)."""
    tol, window = p["slope_tol"], p["window"]
    win = [int(round(1.0 / h)) for h in rate["window"]]
    spread = (
        float(np.ptp(rate["local_slopes"][-(window - 1) :]))
        if len(rate["local_slopes"]) >= window - 1
        else float("nan")
    )
    return {
        f"asymptotic_window_{name}": Diagnostic(
            rate["converged"],
            {"window_L": win, "local_slope_spread": spread},
            f"local slopes of {window} consecutive depths ≤ L_max={p['L_max']} spread "
            f"≤ {tol / 2} (value: the window found, or the last one tried)",
        ),
        f"order_one_{name}": Diagnostic(
            rate["holds"],
            rate["ci95"],
            f"95% interval on the asymptotic window ⊂ [{1 - tol}, {1 + tol}]"
            + ("" if rate["converged"] else " (no asymptotic window: not verified)"),
        ),
    }


# --------------------------------------------------------------------------- the claim


LAYER_BYTES = 2048
"""Memory estimate: a layer's Python objects besides its ``d × d`` arrays (counted ten)."""
REFERENCE_STATES = 8000
"""Memory estimate: states of ``T × d`` held by the DOPRI5 flow references at ``rtol = 1e-11``,
growing like ``rtol^(−1/5)``."""


def ladder_layers(p: dict) -> int:
    """Layers of every stack the ladder may build, both paths: ``2·Σ L ≤ 4·L_top``, ``L_top``
    the largest ladder depth ``L_min·2^j ≤ L_max`` (the ladder stops early once its window has
    settled; the bound is where it does not)."""
    return 2 * sum(depth_ladder(p["L_min"], p["L_max"]))


class D2(Claim):
    id = "D2"
    title = "Non-autonomous flow"
    abstract = "untied weights as its non-autonomous feature"
    statement = (
        "With h = 1/L and smooth θ(t) the stack converges to dX/dt = F(t, X) with order 1 "
        "(slope 1 ± 0.1 on the asymptotic window of a doubling ladder of depths); tied "
        "weights give the autonomous case."
    )
    params = {
        **model_params(
            T=dict(high=64),
            P=dict(default=2, high=64),
            d=dict(high=16),
            mask=None,
            gamma=dict(
                default=0.5, high=10.0, meaning="injection strength γ (E = X_0 + 0.5·noise)"
            ),
        ),
        "L_min": Param(16, "coarsest depth of the doubling ladder L = L_min·2^j", low=1, high=4096),
        "L_max": Param(
            16384,
            "largest depth of the ladder (reached only if the local slopes have "
            "not settled before; a steep random path, seed 441 under the causal "
            "mask, settles only at L = 1024–16384)",
            low=1,
            high=65536,
        ),
        "window": Param(
            5,
            "ladder points in the asymptotic window (its local slopes spread ≤ "
            "slope_tol/2; the slope is fitted there)",
            low=3,
            high=12,
        ),
        **model_params(
            scale=dict(high=10.0),
            gate=dict(
                default=0.5,
                low=-10.0,
                high=10.0,
                meaning="gate at t = 0 (the untied path runs to −gate)",
            ),
        ),
        "path": Param(
            "smooth",
            "θ(t): smooth (cosine blend of two random layers) or step "
            "(piecewise constant, jumps off the grid)",
            choices=PATHS,
        ),
        "n_jumps": Param(3, "jumps of the step path", low=1, high=20),
        "h_mode": Param(
            "1/L",
            "depth step of the stacks: 1/L (the Euler discretisation) or one (the plain stack)",
            choices=H_MODES,
        ),
        "rtol": Param(
            1e-11, "DOPRI5 relative tolerance of the flow reference", low=1e-13, high=1e-4
        ),
        "atol": Param(
            1e-13, "DOPRI5 absolute tolerance of the flow reference", low=1e-15, high=1e-4
        ),
        "slope_tol": Param(
            0.1,
            "the slope's 95% interval must lie in [1 − slope_tol, 1 + slope_tol]; "
            "the window's local slopes spread ≤ slope_tol/2",
            low=0.0,
            high=10.0,
            open_low=True,
        ),
    }
    hypotheses = {
        "depth_step_is_one_over_L": "the stacks of L layers have depth step h with h·L = 1 (the "
        "stacks of the first `window` ladder depths, both paths)",
        "path_is_smooth": f"θ(t) is Lipschitz: its difference-quotient bound on grids of 1/{SMOOTHNESS_GRID} "
        f"and 1/{2 * SMOOTHNESS_GRID} agree to a factor {SMOOTHNESS_RATIO} "
        "(a jump doubles it), for the untied and the tied path",
        "paths_as_named": "the untied path moves along depth (its difference-quotient bound on the "
        f"grid of 1/{SMOOTHNESS_GRID} is positive) and the tied one does not (it is 0): the two "
        "cases the claim is about are the two checked",
    }
    hypothesis_sources = {
        "depth_step_is_one_over_L": "implementation",
        "path_is_smooth": "implementation",
        "paths_as_named": "implementation",
    }
    conclusion = {
        "asymptotic_window_untied": "untied: some `window` consecutive ladder depths ≤ L_max have "
        "local slopes of error vs h spreading ≤ slope_tol/2",
        "order_one_untied": "untied: the 95% interval of the slope fitted on the asymptotic window "
        "lies in [1 − slope_tol, 1 + slope_tol]",
        "asymptotic_window_tied": "tied (autonomous flow): some `window` consecutive ladder depths ≤ "
        "L_max have local slopes spreading ≤ slope_tol/2",
        "order_one_tied": "tied: the 95% interval of the slope fitted on the asymptotic window lies "
        "in [1 − slope_tol, 1 + slope_tol]",
        "error_control_calibrated": "the reference integrator DOPRI5: its one-step error "
        "estimate equals SciPy's RK45 (threshold rtol on y' = Ay, 1e-6 relative) and identical "
        "copies of a system take the steps of one (the error norm does not depend on the "
        "dimension)",
    }
    controls = (
        Control(
            "plain_stack_h_one",
            {"h_mode": "one"},
            breaks="depth_step_is_one_over_L",
            meaning="the plain stack (h = 1) runs the dynamics to depth L, not to t = 1: the "
            "error does not shrink as L grows (slope ≈ 0)",
            seed=0,
        ),
        Control(
            "jumps_off_the_grid",
            {"path": "step"},
            breaks="path_is_smooth",
            meaning="a piecewise-constant θ(t) with jumps off the grid: each jump adds one O(h) "
            "local error of irregular size, the local slopes never settle",
            seed=0,
        ),
    )
    key_figures = ("slope_untied", "slope_untied_ci95", "slope_tied", "slope_tied_ci95")

    def validate(self, p):
        need = p["L_min"] * 2 ** (p["window"] - 1)
        if p["L_max"] < need:
            raise ValueError(
                f"parameter L_max={p['L_max']}: expected ≥ L_min·2^(window − 1) = {need} "
                f"(the ladder must hold one window of {p['window']} depths)"
            )

    def memory_bytes(self, p):
        """Every stack built is kept (:meth:`Instance.stack`): :func:`ladder_layers` layers of ten
        float64 ``d × d`` arrays and :data:`LAYER_BYTES` of objects, plus the generic attention
        count, plus the flow references' states (:data:`REFERENCE_STATES`). A smooth path usually
        settles on the first window and stays far below the bound."""
        stacks = ladder_layers(p) * (80 * p["d"] ** 2 + LAYER_BYTES)
        tighter = max(1e-11 / p["rtol"], 1e-13 / p["atol"], 1.0) ** 0.2
        reference = 8 * p["T"] * p["d"] * REFERENCE_STATES * tighter
        return int(stacks + reference) + super().memory_bytes(p)

    def work(self, p):
        """:func:`ladder_layers` layers built and evaluated, ``T²·(d + 24)`` attention units each
        (the flow reference is cheap beside the stacks; a smooth path settles on the first window,
        the count assumes the whole ladder)."""
        T, d, layers = p["T"], p["d"], ladder_layers(p)
        return {"start": 1, "layer_build": layers, "attention": layers * T * T * (d + 24)}

    instance = Instance

    def diagnose(self, inst):
        first = inst.ladder[: inst.p["window"]]
        steps = {name: [inst.stack(name, L).config.h * L for L in first] for name in PATH_NAMES}
        worst = max(abs(x - 1.0) for s in steps.values() for x in s)
        lips = {
            name: [
                lipschitz_estimate(inst.paths[name], SMOOTHNESS_GRID),
                lipschitz_estimate(inst.paths[name], 2 * SMOOTHNESS_GRID),
            ]
            for name in PATH_NAMES
        }
        smooth = all(fine <= SMOOTHNESS_RATIO * coarse for coarse, fine in lips.values())
        return {
            "depth_step_is_one_over_L": Diagnostic(
                worst <= DEPTH_STEP_TOL,
                worst,
                f"max |h·L − 1| ≤ 1e-12 over L = {first[0]}…{first[-1]}",
            ),
            "path_is_smooth": Diagnostic(
                smooth,
                lips,
                f"[Lip(1/{SMOOTHNESS_GRID}), Lip(1/{2 * SMOOTHNESS_GRID})] per path; "
                f"fine ≤ {SMOOTHNESS_RATIO}·coarse",
            ),
            "paths_as_named": Diagnostic(
                lips["untied"][0] > 0.0 and lips["tied"][0] == 0.0,
                {name: lips[name][0] for name in PATH_NAMES},
                f"Lip(1/{SMOOTHNESS_GRID}): untied > 0, tied = 0",
            ),
        }

    def check_instruments(self, p):
        """The reference integrator DOPRI5's error control against SciPy's, before the flow it
        integrates is compared with the stacks."""
        return {"error_control_calibrated": error_control_part(("dopri5",))}

    def conclude(self, inst):
        p = inst.p
        parts, figures, reference = {}, {"ladder": list(inst.ladder)}, {}
        for name in PATH_NAMES:
            rate, reference[name] = measured_rate(inst, name)
            figures.update(rate_figures(name, rate, p["window"]))
            parts.update(rate_parts(name, rate, p))
        figures["max_abs_hL_minus_one"] = float(
            max(abs(m.config.h * m.L - 1.0) for m in inst.stacks)
        )
        figures["reference"] = reference
        notes = [
            f"flow reference: DOPRI5 rtol={p['rtol']}; errors relative Frobenius at t = 1; "
            f"ladder L = {inst.ladder[0]}·2^j ≤ {inst.ladder[-1]}, evaluated lazily"
        ]
        if isinstance(inst.paths["untied"], StepPath):
            figures["jumps"] = list(inst.paths["untied"].breakpoints)
            notes.append(
                "piecewise-constant path with jumps off the grid: each jump adds one O(h) "
                "local error of irregular size, so the local slopes oscillate"
            )
        tol = p["slope_tol"]
        return Conclusion(
            parts,
            figures,
            tolerance={"slope_ci95_in": [1 - tol, 1 + tol], "local_slope_spread": tol / 2},
            notes=notes,
        )


CLAIM = D2()
