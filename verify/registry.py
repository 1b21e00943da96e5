"""The claim registry: every claim ID of SPEC §2 with its abstract sentence and formal statement.

The IDs are the API: test markers, the report, the figures and ``fastslow check`` all use them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    abstract: str
    statement: str


_CLAIMS = [
    Claim("A1", "Timescale and causality",
          "the slow variable y evolves at one update per P tokens ... enforced structurally by "
          "causal block-mean pooling",
          "The slow input of token t changes only at block boundaries, and with "
          "slow_mask='blockcausal' the model is autoregressive: ∂out_t/∂X_s = 0 for all s > t, "
          "any weights, any g ≠ 0."),
    Claim("A2", "Cost of the slow path",
          "a slow path of full attention over T/P pooled tokens (P²× cheaper per layer)",
          "Slow attention over N = T/P pooled tokens costs 1/P² of fast attention over T tokens in "
          "score and mixing FLOPs (4N²d vs 4T²d); the whole layer lies between 1/P² and 1/P when "
          "3d(P−1) ≥ 2m (finding: the lower bound fails otherwise, e.g. P = 2, m = 4d)."),
    Claim("A3", "Zero-initialised gate",
          "fed back into the fast path through a zero-initialised gate",
          "With g = 0 the coupled output equals the fast-only output bit for bit, every slow-weight "
          "gradient is exactly 0, and ∂L/∂g_l = h⟨∂L/∂X_{l+1}, Slow_l(X_l)⟩."),
    Claim("D1", "Depth-ordered product",
          "The linearised dynamics is a depth-ordered product of layer maps.",
          "∂X_L/∂X_0 = J_{L−1}⋯J_0; with untied weights the reversed product differs (≥ 1e-2 "
          "relative); with tied weights it agrees where the layer Jacobians coincide, e.g. at a "
          "fixed point (finding: not on a moving trajectory)."),
    Claim("D2", "Non-autonomous flow",
          "untied weights as its non-autonomous feature",
          "With h = 1/L and smooth θ(t) the stack converges to dX/dt = F(t, X) with order 1 "
          "(fitted slope 1 ± 0.1); tied weights give the autonomous case."),
    Claim("D3", "Frozen kernel",
          "a frozen attention kernel",
          "On a token-homogeneous state every softmax attention equals K_mask exactly, independent "
          "of Q, K, temperature and depth; fast layers keep homogeneous states homogeneous."),
    Claim("D4", "Eigenbasis factorisation",
          "the linearised layer factorises along the eigenbasis of a frozen attention kernel",
          "At a homogeneous state the linearised layer is δX ↦ δX N_l + K δX M_l, so "
          "δX_L = Σ_λ P_λ δX_0 D_λ with D_λ = Π_l (N_l + λ M_l); checked exactly, by the "
          "polynomial form and by JVPs."),
    Claim("D5", "Saturation depth and coarse-graining",
          "Past a computable saturation depth, the flow factors through the block coarse-graining",
          "For L ≥ L*(τ), ‖δX_L − Π δX_0 D_1‖ ≤ c_K r(L) σ_min(D_1) ‖δX_0‖; L* computed from d×d "
          "products; block-constant inputs run exactly as the coarse stack (finding: with the RMS norm "
          "on, L* = ∞)."),
    Claim("D6", "Visible and invisible directions",
          "Weight perturbations supported on the decaying bundle move neither the persistent "
          "component ... nor the frozen kernel to first order",
          "Along the homogeneous trajectory (g = 0) Q, K are invisible to all orders, E_d forcing "
          "leaves Lᵀ X_L unmoved to first order, and the slow coupling G reads/writes only "
          "block-constant information."),
    Claim("D7", "Stability margin of the gate",
          "How large a gate the slow path can carry is bounded by a stability margin.",
          "For a contractive reference J and slow linearisation G, ρ(J + gG) < 1 for |g| < "
          "m(J)/‖G‖₂ with m(J) = min_{|z|=1} σ_min(zI − J); the critical gate g_c ≥ m/‖G‖ "
          "(finding: with the autoregressive slow path g_c = ∞, so the bound binds only for "
          "slow_mask='full')."),
    Claim("D8", "Exponential-family sufficiency",
          "if block emissions follow an exponential family, block-mean pooling captures all the "
          "information the slow path can use",
          "For exponential-family emissions with T(x) = x the block mean is sufficient: the Bayes "
          "predictive given block means equals the one given all tokens (to 1e-10)."),
    Claim("D9", "Independent blocks close the gate",
          "if neighbouring blocks carry no shared structure ... the gate amplitude is invisible in "
          "the prediction risk",
          "With independent blocks min_slow R(g) is constant in g and ∂R/∂g = 0 at g = 0, so the "
          "learned gate stays within sampling noise (∝ 1/√n); shared structure opens it."),
    Claim("F1", "Tikhonov along depth",
          "a fast-slow, singularly perturbed flow along depth",
          "For block-local masks the critical manifold is the block-constant states, attracting at "
          "rate (1 − λ₂)/ε; the reduced flow is O(ε)-accurate and the first-order one O(ε²)."),
    Claim("F2", "Equilibrium manifold = stationary distribution",
          "under a linear-generator assumption ... the equilibrium manifold x = φ(y) is exactly the "
          "master-equation stationary distribution p_st(y)",
          "If ε dx/dt = Q(y)x with Q(y) an irreducible generator, the equilibrium manifold is "
          "p_st(y), attracting at the spectral gap, tracked to O(ε) (O(ε²) with the correction)."),
    Claim("F3", "Variational approximation",
          "a learned MLP φ_θ(y) is a variational approximation of it (the trained block is not a "
          "generator)",
          "An MLP φ_θ(y) trained on E_y KL(p_st ‖ φ_θ) approaches p_st as width and steps grow; an "
          "attention block's token-mixing operator is not a generator."),
]

CLAIMS: dict[str, Claim] = {c.id: c for c in _CLAIMS}
"""All claims of SPEC §2, keyed by ID, in SPEC order."""


def get_claim(claim_id: str) -> Claim:
    """The claim with this ID; ``ValueError`` naming the known IDs otherwise."""
    if not isinstance(claim_id, str):
        raise TypeError(f"a claim ID is a string like 'A1', got {claim_id!r}")
    key = claim_id.strip().upper()
    if key not in CLAIMS:
        raise ValueError(f"unknown claim ID {claim_id!r}; expected one of {', '.join(CLAIMS)}")
    return CLAIMS[key]
