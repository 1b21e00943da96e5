"""D7 — stability margin of the gate.

Statement: let ``J`` be the Jacobian of the weight-tied looped layer ``Φ`` (gate 0) at a fixed point
``X*`` with ``ρ(J) < 1`` (contractive reference: input injection ``γ > 0``), and ``G = h·∂Slow/∂X``
the linearised slow path there, so that the gated layer linearises to ``J + gG``. With the distance
to instability ``m(J) = min_{|z|=1} σ_min(zI − J)``: ``ρ(J + gG) < 1`` for every
``|g| < m(J)/‖G‖₂``, and the critical gates ``g_c^± = inf{g ≥ 0 : ρ(J ± gG) ≥ 1}`` satisfy
``g_c^± ≥ m/‖G‖₂``. When the gate can move the spectrum at all, ``g_c`` is finite: the bound binds.
Nonlinear check: the looped map ``X ← Φ_g(X)`` converges to ``X*`` for ``|g| = below·g_c`` and does
not at the gate of largest ``ρ`` in ``(g_c, above·g_c]``: ``ρ(J + gG)`` need not grow monotonically
past ``g_c`` (thorough profile, seed 190, T = 2, P = 1, d = 3: ρ = 0.998 again at 1.5·g_c, where
the loop duly converges), so a fixed multiple of ``g_c`` is not "clearly above".

The instance (``reference="origin"``): embeddings ``E = 0`` and ``norm=False``. Then ``X* = 0`` is
a fixed point of ``Φ_g`` for *every* gate (``Attn(0) = MLP(0) = Slow(0) = 0``), and the Jacobian of
the gated map there is exactly ``J + gG``: the linear statement and the nonlinear iteration are about
the same fixed point. ``reference="embedding"`` uses random embeddings (and the RMS norm if
``norm=True``): ``X*`` is found by iterating at ``g = 0``; the linear statement is checked the same
way, but ``Slow(X*) ≠ 0`` moves the fixed point with ``g``, so ``J + gG`` is not the Jacobian at the
gated fixed point and the nonlinear iteration is only reported (the conclusion part says so).

Hypotheses, measured on the instance:

* ``reference_is_fixed_point``: ``‖Φ_0(X*) − X*‖_F`` is at rounding level;
* ``reference_contractive``: ``ρ(J_ref) < 1`` with ``J_ref`` the Jacobian of the reference layer
  written from the §1 formulas (:mod:`verify.reference.layer`, complex step), not the ``J`` under
  test (a user ``LinearLoop``'s ``J`` is its input); the conclusion part
  ``jacobians_match_reference`` compares ``J`` and ``G`` with the reference's within 64 units of
  round-off, so a wrong linearisation fails instead of leaving the hypotheses;
* ``gate_moves_spectrum``: ``J + gG`` is *not* block lower-triangular in token-block order with
  ``g``-independent diagonal blocks, i.e. not (``J`` has no entry above the ``P·d`` block diagonal
  and ``G`` none on or above it). When that structure is present, ``ρ(J + gG) = ρ(J)`` for every
  ``g`` (the measured variation of ``ρ`` over a wide gate grid is reported with the diagnostic).

Finding (the negative controls ``autoregressive_slow_path*``): with the autoregressive slow path
(``slow_mask="blockcausal"``: the slow path reads only earlier blocks, ``U_c`` shifts by one block)
and any causal or block-local fast mask, the structure above is exact, so ``g_c = ∞`` and the
margin bound holds only vacuously. The bound binds only for v1's ``slow_mask="full"``, which is
therefore the default instance.

Checked by: the margin computed twice (grid on the circle refined by Brent, ``stability_margin``;
the symplectic-pencil bisection, ``margin_certificate``) plus a brute-force dense grid; ``ρ(J + gG)``
on a gate grid strictly inside the margin; the critical gates by scan and bisection; the looped
nonlinear map iterated at ``0``, ``±below·g_c`` and the most unstable gate of ``(g_c, above·g_c]``.
Eigenvalues enter only through ``ρ`` (a multiset's largest modulus), singular values are unique: no
verdict depends on LAPACK's choices. The verdict's series carry what the figure draws: ``ρ(J + gG)``
on a gate grid around the critical gates, ``σ_min(e^{iθ}I − J)`` on the circle and the loop runs.

Your own system: a :class:`~verify.systems.LinearLoop` ``(J, G)`` is checked the same way on the
loop ``x ← (J + gG)x`` (fixed point 0 for every gate, so the loop part is always decided). It has
no token blocks to read, so ``gate_moves_spectrum`` is the measured variation of ``ρ(J + gG)`` over
``|g| ≤ 10/‖G‖₂``, above 100 units of rounding of ``max(1, ‖J‖₂)``; a ``J`` with ``ρ(J) ≥ 1`` is
outside the hypotheses.

Your own depth flow: a :class:`~verify.systems.DepthFlow` is checked as the built-in instance is,
with the flow's config and weights, on *every* layer in turn: layer ``l``'s loop ``Φ`` ties the
weights of ``layers[l]`` of ``system.model()`` (drawn from the flow's own seed, or trained; its
``gate`` is not used: D7 sets the gate itself, 0 for ``J``), and each hypothesis and conclusion part
holds when it holds for every layer's loop (its value per layer; the figures at the top level are
layer 0's, ``per_layer`` has every layer's margin, bound and critical gate). An untied stack has no
single looped layer: each layer's loop is an instance of the statement. The fixed point follows the
flow's normalisation, as the built-in ``reference`` does: ``norm=False`` → ``X* = 0`` with
``E = 0`` (a fixed point of every ``Φ_g``, so the nonlinear loop is decided); ``norm=True`` →
random embeddings ``E`` from the check's ``seed`` and ``X*`` found by iterating ``Φ_0`` (the loop
is reported only). ``J`` and ``G = h·∂Slow/∂X`` are the implementation's linearisations there and
every hypothesis is decided the same way (``reference_contractive`` from the reference layer's
complex-step Jacobian, ``gate_moves_spectrum`` from the token-block structure). So a flow with
``gamma = 0`` (the default of :class:`DepthFlow`) is outside ``reference_contractive``, and one
with ``slow_mask="blockcausal"`` (also the default) is outside ``gate_moves_spectrum`` (``g_c =
∞``, the finding above): pass ``gamma > 0`` and ``slow_mask="full"`` for the bound to bind. The masks decide
``gate_moves_spectrum`` before the sizes (:func:`masks_fix_spectrum`): such a flow is outside
at any size (E1's networks: causal fast mask, autoregressive slow path). Bad
input (exit 2): ``T·d > 96`` (dense Jacobians: the default check's 2001-point grid of smallest
singular values is hours at ``T·d = 2048``, 12.7 s per 2048² SVD on one core), a field of the flow beyond the bounds of D7's
parameter of the same name (T, P, d, γ, scale, slow_scale), or a user nonlinearity (the reference layer has no
formula for it, so contractivity cannot be decided from the reference).

Negative controls: ``γ = 0`` (additive injection: ``ρ(J) ≥ 1``, the conclusion fails at ``g = 0``
already), and the autoregressive slow path (``g_c = ∞``: the margin does not bind).

Time. The cost grows with ``dense_grid`` (a smallest singular value of an ``n × n`` matrix per
angle, ``n = T·d ≤ 96``), ``n_gates`` (an eigenvalue problem each) and ``n_iter`` (the loop runs
that do not converge). ``D7.work`` counts that work and the calibrated cost model
(:mod:`verify.cost_model`) bounds its time from the parameters; parameters beyond the time budget
are bad input. The measured times are in docs/benchmarks.md.
"""

from __future__ import annotations

import numpy as np

from fastslow.numerics import lapack
from fastslow.numerics.analysis.stability import (
    iterate_linear_loop,
    iterate_looped_map,
    layer_jacobian,
    slow_jacobian,
    spectral_radius,
)
from fastslow.numerics.model import kernels
from fastslow.numerics.model.weights import ModelConfig, init_layer

from ...against_reference import (
    JACOBIAN_UNITS,
    jacobian_deviation,
    reference_layer_jacobian,
    reference_slow_jacobian,
)
from ...claim import Claim, Conclusion, control_table
from ...measure import UNIT_ROUNDOFF
from ...model_params import model_params
from ...params import Param
from ...systems import DepthFlow, LinearLoop
from ...verdict import Diagnostic, not_evaluated
from .spectrum import (
    curves,
    gate_parts,
    margin_parts,
    margin_search_part,
    rho_variation,
    token_block_structure,
)

FIXED_POINT_RTOL = 1e-10
"""``‖Φ_0(X*) − X*‖_F ≤ FIXED_POINT_RTOL·max(1, ‖X*‖_F)`` for ``X*`` to count as a fixed point."""

REFERENCE_DISTANCE = 1e-8
"""A loop run converges *to X** when it stops within this Frobenius distance of it."""

LOOP_STEP_TOL = 1e-12
"""A loop run has converged when its step ``‖Φ_g(X) − X‖_F`` falls to this."""

LOOP_MAX_ITER = 200_000
"""The largest iteration budget of a loop run, whatever its linear rate."""


ABOVE_CANDIDATES = 41
"""Gates of ``[g_c, above·g_c]`` (the first, ``g_c`` itself, excluded) searched for the largest ρ."""


# --------------------------------------------------------------------------- the instance


def reference_point(p: dict, seed: int, point=None):
    """``(config, layer params, X*, E)`` of the parameters ``p`` (gate 0; ``X*`` found by iterating
    the looped map when ``reference="embedding"``). ``point``: a given ``(config, layer params)``
    (a user flow's) instead of the seeded draw."""
    w_seed, e_seed, _ = np.random.SeedSequence(seed).spawn(3)
    if point is None:
        cfg = ModelConfig.from_params(p)
        lp = init_layer(
            cfg,
            np.random.default_rng(w_seed),
            scale=p["scale"],
            slow_scale=p["slow_scale"],
            gate=0.0,
        )
    else:
        cfg, lp = point
    if p["reference"] == "origin":
        zero = np.zeros((cfg.T, cfg.d))
        return cfg, lp, zero, zero.copy()
    E = np.random.default_rng(e_seed).standard_normal((cfg.T, cfg.d))
    res = iterate_looped_map(cfg, lp, E, E, max_iter=p["n_iter"], tol=1e-13)
    return cfg, lp, res.X, E


class Instance:
    """The reference point, the linearisations ``J`` (gate 0) and ``G = h·∂Slow/∂X`` there, and
    the loop's start ``X*`` + ``init_size``·noise."""

    def __init__(self, p: dict, seed: int, point=None):
        _, _, i_seed = np.random.SeedSequence(seed).spawn(3)
        self.p = p
        self.cfg, self.lp, self.Xs, self.E = reference_point(p, seed, point)
        self.J = layer_jacobian(self.cfg, self.lp, self.Xs, self.E)
        self.G = self.cfg.h * slow_jacobian(self.cfg, self.lp, self.Xs)
        # the same linearisations from the reference written from the formulas (complex step)
        self.J_ref = reference_layer_jacobian(self.cfg, self.lp, self.Xs, self.E)
        self.G_ref = self.cfg.h * reference_slow_jacobian(self.cfg, self.lp, self.Xs)
        self.X_init = self.Xs + p["init_size"] * np.random.default_rng(i_seed).standard_normal(
            self.Xs.shape
        )

    def fixed_point_residual(self) -> tuple[float, float]:
        """``(‖Φ_0(X*) − X*‖_F, its bound)``."""
        residual = float(
            np.linalg.norm(kernels.layer(self.cfg, self.lp, self.Xs, self.E) - self.Xs)
        )
        return residual, FIXED_POINT_RTOL * max(1.0, float(np.linalg.norm(self.Xs)))

    def gate_moves_spectrum(self) -> Diagnostic:
        """Not the exact token-block triangular structure of ``J + gG`` (which fixes ρ)."""
        structure = token_block_structure(self.J, self.G, self.cfg.P * self.cfg.d)
        triangular = (
            structure["J_above_block_diagonal_rel"] == 0.0
            and structure["G_on_or_above_block_diagonal_rel"] == 0.0
        )
        nG = float(np.linalg.norm(self.G, 2))
        structure["rho_variation_over_gates_10_over_normG"] = rho_variation(
            self.J, self.G, 1.0 / nG if nG > 0 else 1.0
        )
        self.structure = structure
        return Diagnostic(
            not triangular,
            structure,
            "J above and G on/above the token-block diagonal not both exactly 0",
        )

    def loop(self, gate: float, max_iter: int):
        """The looped map ``X ← Φ_gate(X)`` from the start, measured against ``X*``."""
        q = self.lp.copy()
        q.g = gate
        return iterate_looped_map(
            self.cfg, q, self.X_init, self.E, X_ref=self.Xs, max_iter=max_iter, tol=LOOP_STEP_TOL
        )

    def slow_output_at_reference(self) -> float:
        """``‖Φ_1(X*) − Φ_0(X*)‖_F = h·‖Slow(X*)‖_F``: X* is a fixed point of every Φ_g iff it is
        0 (``Φ_g = Φ_0 + g·h·Slow``)."""
        q1 = self.lp.copy()
        q1.g = 1.0
        gated = kernels.layer(self.cfg, q1, self.Xs, self.E)
        return float(np.linalg.norm(gated - kernels.layer(self.cfg, self.lp, self.Xs, self.E)))


class FlowInstance(Instance):
    """A user :class:`~verify.systems.DepthFlow`: the loop ties the flow's layer ``layer`` (its
    weights from the flow's seed or trained, gate 0); the fixed point is ``X* = 0`` with ``E = 0``
    when the flow has no RMS norm, else ``X*`` of random embeddings (from ``seed``) found by
    iterating ``Φ_0``. ``J``, ``G`` and their reference twins are computed there as for
    :class:`Instance`."""

    def __init__(self, p: dict, seed: int, system: DepthFlow, layer: int = 0):
        reference = "embedding" if system.norm else "origin"
        model = system.model()
        lp = model.layers[layer].copy()
        lp.g = 0.0
        self.layer = layer
        super().__init__({**p, "reference": reference}, seed, point=(model.config, lp))


class LayerLoops:
    """Every layer's loop of a user :class:`~verify.systems.DepthFlow` (:class:`FlowInstance`
    per layer, the same check seed)."""

    def __init__(self, p: dict, seed: int, system: DepthFlow):
        self.p = p
        self.loops = [FlowInstance(p, seed, system, l) for l in range(system.L)]


def every_layer(found: list[dict]) -> dict:
    """``{name: Diagnostic}`` that holds when it holds for every layer's loop (``found[l]``), its
    value per layer."""
    return {
        k: Diagnostic(
            all(f[k].holds for f in found),
            {f"layer {l}": f[k].value for l, f in enumerate(found)},
            f"{found[0][k].rule}, for every layer's loop",
        )
        for k in found[0]
    }


def masks_fix_spectrum(system) -> Diagnostic:
    """``gate_moves_spectrum`` as a :class:`~verify.systems.DepthFlow`'s declared masks decide it:
    with no fast-mask entry above the ``P×P`` block diagonal, ``J`` has none (the MLP, the norm and
    the injection act token by token), and the autoregressive slow path (``slow_mask =
    "blockcausal"``, ``U_c`` shifts by one block) puts ``G`` strictly below it; without a slow
    path ``G = 0``. Either way ``ρ(J + gG) = ρ(J)`` for every ``g``. Other declarations (and a
    :class:`~verify.systems.LinearLoop`) are left to the measured diagnostic."""
    rule = (
        "the declared masks do not force J + gG block lower-triangular with g-independent "
        "diagonal blocks (no slow path, or no fast-mask entry above the P×P block diagonal with "
        "slow_mask='blockcausal', force it)"
    )
    if not isinstance(system, DepthFlow):
        return Diagnostic(True, "not decided by the declaration (a linear loop)", rule)
    cfg = system.config
    blocks = np.arange(cfg.T) // cfg.P
    above = int((cfg.mask_array & (blocks[:, None] < blocks[None, :])).sum())
    slow = bool(getattr(cfg, "slow", True))
    fixed = not slow or (above == 0 and cfg.slow_mask == "blockcausal")
    value = {"fast_mask_above_block_diagonal": above, "slow_mask": cfg.slow_mask, "slow": slow}
    return Diagnostic(not fixed, value, rule)


VARIATION_UNITS = 100.0
"""A user loop's gate moves the spectrum when ρ(J + gG) varies over the wide gate grid by more than
100 units of rounding of ``max(1, ‖J‖₂)``."""


class LoopInstance:
    """A user :class:`~verify.systems.LinearLoop`: the loop ``x ← (J + gG)x`` with fixed point
    ``x* = 0`` for every gate, started at ``init_size``·noise."""

    def __init__(self, p: dict, seed: int, system: LinearLoop):
        _, _, i_seed = np.random.SeedSequence(seed).spawn(3)
        self.p, self.J, self.G = p, system.J, system.G
        self.J_ref, self.G_ref = None, None  # the input is the linearisation itself
        self.Xs = np.zeros(self.J.shape[0])
        self.X_init = p["init_size"] * np.random.default_rng(i_seed).standard_normal(self.Xs.shape)

    def fixed_point_residual(self) -> tuple[float, float]:
        return 0.0, FIXED_POINT_RTOL  # x* = 0 is a fixed point of every linear loop

    def gate_moves_spectrum(self) -> Diagnostic:
        """No token structure to read: ρ(J + gG) must vary measurably over the wide gate grid."""
        nG = float(np.linalg.norm(self.G, 2))
        variation = rho_variation(self.J, self.G, 1.0 / nG if nG > 0 else 1.0)
        floor = VARIATION_UNITS * UNIT_ROUNDOFF * max(1.0, float(np.linalg.norm(self.J, 2)))
        self.structure = {"rho_variation_over_gates_10_over_normG": variation, "floor": floor}
        return Diagnostic(
            variation > floor,
            self.structure,
            "ρ(J + gG) varies over |g| ≤ 10/‖G‖₂ by more than 100 units of rounding",
        )

    def loop(self, gate: float, max_iter: int):
        return iterate_linear_loop(
            self.J + gate * self.G, self.X_init, max_iter=max_iter, tol=LOOP_STEP_TOL
        )

    def slow_output_at_reference(self) -> float:
        return 0.0  # x* = 0 for every gate


# --------------------------------------------------------------------------- hypotheses


def reference_part(inst) -> Diagnostic:
    """``jacobians_match_reference``: ``J`` and ``G`` against the reference's, in units of
    round-off relative to their largest entries."""
    if inst.J_ref is None:
        return not_evaluated("a user LinearLoop's J and G are its input")
    dev = {
        "J_units": jacobian_deviation(inst.J, inst.J_ref),
        "G_units": jacobian_deviation(inst.G, inst.G_ref) if np.any(inst.G_ref) else 0.0,
    }
    if not np.any(inst.G_ref):
        dev["G_units"] = float("inf") if np.any(inst.G) else 0.0
    return Diagnostic(
        max(dev.values()) <= JACOBIAN_UNITS,
        dev,
        f"max|J − J_ref|, max|G − G_ref| in units of u·max|ref| ≤ {JACOBIAN_UNITS}",
    )


# --------------------------------------------------------------------------- conclusion parts


def loop_budget(rho: float, p: dict) -> int:
    """Iterations the linear rate ρ needs to shrink the initial offset to the step tolerance
    (three times over), at least ``n_iter`` and at most :data:`LOOP_MAX_ITER`."""
    if rho >= 1.0 or rho <= 0.0:
        return p["n_iter"]
    need = 3.0 * np.log(LOOP_STEP_TOL / p["init_size"]) / np.log(rho)
    return int(min(max(p["n_iter"], need), LOOP_MAX_ITER))


def loop_run(inst: Instance, gate: float, rho: float) -> dict:
    """The looped map ``X ← Φ_gate(X)`` from the instance's start: its status and whether it
    stopped at ``X*`` (within :data:`REFERENCE_DISTANCE`)."""
    res = inst.loop(gate, loop_budget(rho, inst.p))
    return {
        "gate": float(gate),
        "rho": float(rho),
        "status": res.status,
        "converged_to_reference": bool(
            res.status == "converged" and res.distance < REFERENCE_DISTANCE
        ),
        "iterations": res.iterations,
        "distance_to_reference": res.distance,
    }


def loop_runs(inst: Instance, rho_J: float, gc_plus: float, gc_minus: float) -> dict:
    """The loop at ``g = 0``, at ``±below·g_c`` and at the gate of largest ρ in
    ``(g_c, above·g_c]`` on each side with a finite, non-zero critical gate."""
    J, G, p = inst.J, inst.G, inst.p
    runs = {"zero_gate": loop_run(inst, 0.0, rho_J)}
    for sign, gcs in ((+1, gc_plus), (-1, gc_minus)):
        if not np.isfinite(gcs) or gcs == 0.0:
            continue
        side = "plus" if sign > 0 else "minus"
        g = sign * p["below"] * gcs
        runs[f"below_{side}"] = loop_run(inst, g, spectral_radius(J + g * G))
        # "clearly above": ρ(J + gG) need not grow monotonically past g_c (it can fall back
        # below 1), so the unstable run uses the gate of largest ρ in (g_c, above·g_c]
        cand = sign * gcs * np.linspace(1.0, p["above"], ABOVE_CANDIDATES)[1:]
        rhos = [spectral_radius(J + c * G) for c in cand]
        k = int(np.argmax(rhos))
        runs[f"above_{side}"] = loop_run(inst, float(cand[k]), rhos[k])
    return runs


def nonlinear_loop_part(runs: dict, slow_at_ref: float) -> Diagnostic:
    """The part ``nonlinear_loop``: the runs at 0 and ±below·g_c reach X*, the runs above g_c do
    not (with ρ > 1 there); decided only when ``Slow(X*) = 0``, otherwise reported."""
    applicable = slow_at_ref == 0.0
    loop_ok = runs["zero_gate"]["converged_to_reference"]
    for key, run in runs.items():
        if key.startswith("below"):
            loop_ok &= run["converged_to_reference"]
        elif key.startswith("above"):
            loop_ok &= (not run["converged_to_reference"]) and run["rho"] > 1.0
    value = {
        "applicable": applicable,
        "slow_output_at_reference": slow_at_ref,
        "runs": {
            k: r["status"] + ("@X*" if r["converged_to_reference"] else "") for k, r in runs.items()
        },
    }
    return Diagnostic(
        bool(loop_ok) if applicable else True,
        value,
        "converges to X* at 0 and ±below·g_c, not at the most unstable gate of "
        "(g_c, above·g_c] (ρ > 1); decided only when Slow(X*) = 0",
    )


# --------------------------------------------------------------------------- time estimate

SVDS = 3000
"""Work estimate: smallest singular values besides the dense grid (the 1001 curve angles, the
grid and refinement of :func:`numerics.analysis.stability.stability_margin`)."""
EIGS = 600
"""Work estimate: eigenvalue problems besides the ``n_gates`` grid (critical-gate scans and
bisections, curve gates, candidates above g_c, the pencil certificate)."""
LOOP_RUNS = 2
"""Work estimate: the loop runs above ``g_c``, which may use their whole budget (the runs at
0 and ±below·g_c converge and stop)."""


# --------------------------------------------------------------------------- the claim


class D7(Claim):
    id = "D7"
    title = "Stability margin of the gate"
    abstract = "How large a gate the slow path can carry is bounded by a stability margin."
    statement = (
        "For a contractive reference J and slow linearisation G, ρ(J + gG) < 1 for |g| < "
        "m(J)/‖G‖₂ with m(J) = min_{|z|=1} σ_min(zI − J); the critical gate g_c ≥ m/‖G‖ "
        "(finding: with the autoregressive slow path g_c = ∞, so the bound binds only for "
        "slow_mask='full')."
    )
    params = {
        **model_params(
            T=dict(high=64),
            P=dict(high=64),
            d=dict(high=16),
            mask="block_bidirectional",
            slow_mask="full",
            norm=dict(
                default=False, meaning="RMS normalisation before attention, MLP and slow path"
            ),
            gamma=dict(
                default=1.0,
                high=1e3,
                meaning="input injection γ (γ > 0 makes the reference contractive)",
            ),
            h=None,
            scale=dict(default=0.5, high=1e3),
            slow_scale=dict(high=1e3),
        ),
        "reference": Param(
            "origin",
            "fixed point: X* = 0 with E = 0, or X* of random embeddings",
            choices=("origin", "embedding"),
        ),
        "below": Param(
            0.5,
            "fraction of g_c at which the loop must converge (|g| < g_c)",
            low=0.0,
            high=1.0,
            open_high=True,
        ),
        "above": Param(
            1.5,
            "the loop must lose X* at the gate of largest ρ in (g_c, above·g_c]",
            low=1.0,
            high=100.0,
            open_low=True,
        ),
        "init_size": Param(
            1e-2,
            "size of the random offset of the loop's start from X*",
            low=0.0,
            high=10.0,
            open_low=True,
        ),
        "n_iter": Param(5000, "minimum iteration budget of the loop", low=1, high=100_000),
        "n_gates": Param(41, "gates on the grid strictly inside the margin", low=3, high=1001),
        "margin_tol": Param(
            1e-8,
            "agreement of the two margin computations (absolute)",
            low=0.0,
            high=1.0,
            open_low=True,
        ),
        "dense_grid": Param(
            2001, "angles of the brute-force grid on the circle", low=16, high=100_001
        ),
    }
    hypotheses = {
        "reference_is_fixed_point": "‖Φ_0(X*) − X*‖_F ≤ 1e-10·max(1, ‖X*‖_F)",
        "reference_contractive": "ρ(J) < 1 at the reference (measured)",
        "gate_moves_spectrum": "J + gG is not block lower-triangular in token-block order with "
        "g-independent diagonal blocks (J above, or G on or above, the P·d "
        "block diagonal is non-zero); otherwise ρ(J + gG) = ρ(J) for all g",
    }
    hypothesis_sources = {
        "reference_is_fixed_point": "implementation",
        "reference_contractive": "reference",
        "gate_moves_spectrum": "implementation",
    }
    conclusion = {
        "jacobians_match_reference": "J and G equal the reference layer's and slow path's "
        f"complex-step Jacobians within {JACOBIAN_UNITS} units of round-off (a user LinearLoop: "
        "its input, not evaluated)",
        "margin_two_methods_agree": "|m(grid+Brent) − m(pencil)| ≤ margin_tol",
        "margin_is_a_minimum": "dense-grid min of σ_min − Δ/2 ≤ m ≤ dense-grid min + 1e-12 (Δ the "
        "grid's spacing; σ_min is 1-Lipschitz in θ) and m ≤ 1 − ρ(J) + 1e-12",
        "margin_search_checked": "on six seeded non-normal 6×6 matrices (real and complex, "
        "minima at any angle) the two margin methods agree to margin_tol and lie in the dense "
        "grid's bracket",
        "contractive_inside_margin": "max ρ(J + gG) < 1 over |g| ≤ 0.999·m/‖G‖₂",
        "critical_gates_above_bound": "g_c⁺ ≥ m/‖G‖₂ and g_c⁻ ≥ m/‖G‖₂",
        "critical_gate_finite": "min(g_c⁺, g_c⁻) < ∞: the margin bound binds",
        "nonlinear_loop": "when X* is a fixed point of every Φ_g (Slow(X*) = 0): the loop converges "
        "to X* at g = 0 and g = ±below·g_c, and at the gate of largest ρ in "
        "(g_c, above·g_c] on each side it does not, with ρ > 1 there (ρ(g) need "
        "not be monotone past g_c; reported only when X* moves with g)",
    }
    controls = control_table(
        (
            (
                "additive_injection",
                {"gamma": 0.0},
                "reference_contractive",
                "γ = 0: ρ(J) ≥ 1, so ρ(J + gG) < 1 fails at g = 0 inside the would-be "
                "margin and the loop does not converge",
            ),
            (
                "autoregressive_slow_path",
                {"slow_mask": "blockcausal"},
                "gate_moves_spectrum",
                "finding: the block-causal slow path makes J + gG block-triangular with "
                "g-independent diagonal blocks: ρ(J + gG) = ρ(J), g_c = ∞, the margin "
                "bound holds only vacuously",
            ),
            (
                "autoregressive_slow_path_causal",
                {"slow_mask": "blockcausal", "mask": "causal"},
                "gate_moves_spectrum",
                "the same finding with the token-causal fast mask",
            ),
            (
                "autoregressive_slow_path_embedding",
                {"slow_mask": "blockcausal", "reference": "embedding", "norm": True},
                "gate_moves_spectrum",
                "the same finding at a fixed point of random embeddings with the RMS norm",
            ),
        ),
        seed=0,
    )
    key_figures = ("margin", "bound_m_over_normG", "critical_gate", "rho_variation_over_wide_gates")
    systems = (LinearLoop, DepthFlow)
    declared_hypotheses = {"gate_moves_spectrum": masks_fix_spectrum}
    system_terms = {
        "LinearLoop": "ρ(J) < 1 (reference_contractive: J is the loop's Jacobian with the gate "
        "closed, as given), and J + g·G not block lower-triangular with g-independent diagonal "
        "blocks (gate_moves_spectrum: some entry of J above, or of G on or above, the "
        "diagonal is non-zero; otherwise ρ(J + gG) = ρ(J) for every g)",
        "DepthFlow": "gamma > 0 (reference_contractive: with the default gamma=0.0 the reference "
        "layer's Jacobian has ρ(J) = 1; D7's own instance uses gamma=1.0), slow_mask='full' "
        "(gate_moves_spectrum: with the default 'blockcausal' the gate cannot move the spectrum, "
        "g_c = ∞, a finding; decided from the masks before the size), a named nonlinearity and T·d ≤ 96 "
        "(dense Jacobians); every layer's loop in turn",
    }
    system_replaces = (
        "T",
        "P",
        "d",
        "mask",
        "slow_mask",
        "norm",
        "gamma",
        "h",
        "scale",
        "slow_scale",
        "reference",
    )  # a LinearLoop brings J and G, a DepthFlow its model: these only build the built-in one

    def accepts(self, system) -> None:
        """A :class:`~verify.systems.DepthFlow` small enough for dense Jacobians (``T·d ≤ 96``)
        with a named nonlinearity (the reference layer decides contractivity); bad input
        otherwise."""
        super().accepts(system)
        if not isinstance(system, DepthFlow):
            return
        system.within_limits(self.id, self.params)
        T, d = int(system.T or 0), int(system.d)
        if T * d > 96:
            raise ValueError(
                f"{system.name}: T={T}, d={d}: D7 builds dense Jacobians, T·d must be ≤ 96, "
                f"got {T * d}"
            )
        if not isinstance(system.sigma, str):
            raise ValueError(
                f"{system.name}: sigma {system.sigma!r} is a user nonlinearity; D7 decides "
                "reference_contractive from the reference layer, which has formulas only for "
                "the named ones (tanh, relu, gelu, identity)"
            )

    def validate(self, p):
        if p["T"] * p["d"] > 96:
            raise ValueError(
                f"parameters T={p['T']}, d={p['d']}: D7 builds dense Jacobians, "
                f"T·d must be ≤ 96, got {p['T'] * p['d']}"
            )
        if p["reference"] == "origin" and p["norm"]:
            raise ValueError(
                "parameter norm=True: reference='origin' needs norm=False (the RMS "
                "norm has gain 1/√ε at 0)"
            )

    def work(self, p):
        """The work where the loop runs above ``g_c`` stop within ``n_iter`` iterations:
        ``dense_grid`` + :data:`SVDS` smallest singular values of ``zI − J`` (``n = T·d``),
        ``n_gates`` + :data:`EIGS` spectral radii, and ``n_iter`` iterations of the
        :data:`LOOP_RUNS` runs that need not converge (``T²d + Td²`` multiply-adds each). A run
        whose ρ lies within about 1e-3 of 1 gets up to :data:`LOOP_MAX_ITER` iterations
        (:func:`loop_budget`), which is not known before the spectrum is computed: such an
        instance may take longer."""
        T, d = p["T"], p["d"]
        n = T * d
        svds, eigs = p["dense_grid"] + SVDS, p["n_gates"] + EIGS
        iterations = LOOP_RUNS * p["n_iter"]
        return {
            "start": 1,
            "python_call": svds + iterations,
            "factor_cube": svds * n**3,
            "eigen_call": eigs,
            "eigen_cube": eigs * n**3,
            "numpy_unit": iterations * (T * T * d + T * d * d),
        }

    instance = Instance

    def build_system(self, p, seed, system):
        """A :class:`LoopInstance` of a user ``LinearLoop``; :class:`LayerLoops` (J and G at the
        fixed point of each layer's loop) of a user ``DepthFlow``."""
        if isinstance(system, DepthFlow):
            return LayerLoops(p, seed, system)
        return LoopInstance(p, seed, system)

    def diagnose(self, inst):
        if isinstance(inst, LayerLoops):
            return every_layer([self.diagnose(loop) for loop in inst.loops])
        residual, fp_bound = inst.fixed_point_residual()
        J_ref = inst.J if inst.J_ref is None else inst.J_ref
        rho = float(np.max(np.abs(lapack.eigvals(J_ref)))) if J_ref.size else 0.0
        return {
            "reference_is_fixed_point": Diagnostic(
                residual <= fp_bound, residual, f"‖Φ_0(X*) − X*‖_F ≤ {fp_bound:.3g}"
            ),
            "reference_contractive": Diagnostic(
                rho < 1.0,
                rho,
                "ρ(J_ref) < 1 (J_ref: the reference layer's Jacobian; a user J as given)",
            ),
            "gate_moves_spectrum": inst.gate_moves_spectrum(),
        }

    def conclude(self, inst):
        if isinstance(inst, LayerLoops):
            found = [self.conclude(loop) for loop in inst.loops]
            first = found[0]
            first.figures["per_layer"] = [
                {k: c.figures.get(k) for k in (*self.key_figures, "spectral_radius_J")}
                for c in found
            ]
            notes = list(dict.fromkeys(n for c in found for n in c.notes))
            parts = every_layer([c.parts for c in found])
            return Conclusion(parts, first.figures, first.tolerance, notes, first.series)
        p, J, G = inst.p, inst.J, inst.G
        rho_J = spectral_radius(J)
        margin, margin_figures = margin_parts(J, rho_J, p)
        search, search_figures = margin_search_part(p)
        margin_figures.update(search_figures)
        gates, gate_figures = gate_parts(
            J, G, margin_figures["margin"], margin_figures["margin_methods_abs_gap"], p
        )
        gc_plus, gc_minus = gate_figures["critical_gate_plus"], gate_figures["critical_gate_minus"]
        runs = loop_runs(inst, rho_J, gc_plus, gc_minus)
        slow_at_ref = inst.slow_output_at_reference()
        figures = {
            "spectral_radius_J": rho_J,
            **margin_figures,
            **gate_figures,
            "nonlinear": runs,
            "fixed_point_norm": float(np.linalg.norm(inst.Xs)),
            "dimension": int(J.shape[0]),
            "token_block_structure": getattr(inst, "structure", None),
        }
        notes = []
        if isinstance(inst, FlowInstance):
            notes.append(
                f"your flow: each layer's loop ties that layer's weights (gate 0); fixed point "
                f"reference={inst.p['reference']!r} (from its norm={inst.cfg.norm})"
            )
        if not np.isfinite(gate_figures["critical_gate"]):
            notes.append("ρ(J + gG) never reaches 1: g_c = ∞ and the bound holds only vacuously")
        if slow_at_ref != 0.0:
            notes.append(
                "nonlinear iteration reported only: Slow(X*) ≠ 0 moves the fixed point with g"
            )
        return Conclusion(
            {
                **margin,
                **search,
                **gates,
                "nonlinear_loop": nonlinear_loop_part(runs, slow_at_ref),
                "jacobians_match_reference": reference_part(inst),
            },
            figures,
            tolerance={
                "margin_methods_abs": p["margin_tol"],
                "fixed_point_distance": REFERENCE_DISTANCE,
                "loop_step_fro": LOOP_STEP_TOL,
            },
            notes=notes,
            series={**curves(J, G, gc_plus, gc_minus), "nonlinear": runs},
        )


CLAIM = D7()
