"""The numerical engine, independent of :mod:`theory` (the symbolic oracles never share code with it).

Subpackages, bottom to top:

* :mod:`numerics.model` — the Transformer read as a depth flow: masks, pooling, weights, the layer
  and the stack (NumPy reference), its unvalidated kernels, exact derivatives, the compiled
  (Numba) layer, the depth flow and the coupling form's compiled right-hand side, cost counts.
* :mod:`numerics.analysis` — what the model's linearisation says: the closed-form linearised
  stack, the gate's stability margin, visible and invisible parameter directions.
* :mod:`numerics.toy` — toy data and exact filters: block-structured sequences, Bayes filters,
  Markov generators, the variational slow path and the gated predictor.
* :mod:`numerics.integrators` — generic compiled stiff and non-stiff integrators.

Top-level modules are infrastructure: :mod:`numerics.validation` (argument checks),
:mod:`numerics.lapack` (decompositions with non-unique answers, in one place) and
:mod:`numerics.jit_cache` (Numba's on-disk cache keyed by this package's sources).

The names below are re-exported for ``import fastslow.numerics as nm``.
"""

# First, before any submodule's @njit(cache=True) decorator runs: key Numba's on-disk cache by the
# content of every source file of this package (numerics.jit_cache explains why).
from fastslow.numerics import jit_cache as _jit_cache

_jit_cache.configure()

from fastslow.numerics.model.activations import SIGMAS, Activation  # noqa: E402
from fastslow.numerics.model.flow import FORMS, coupling_rhs, depth_rhs, make_rhs  # noqa: E402
from fastslow.numerics.model.layer import (  # noqa: E402
    attention,
    attention_kernel,
    layer,
    layer_increment,
    masked_softmax,
    mlp,
    mlp_preactivations,
    rms_norm,
    slow_path,
    stack,
    stack_trajectory,
)
from fastslow.numerics.model.masks import (  # noqa: E402
    NAMED_MASKS,
    as_mask,
    coarse_maps,
    frozen_kernel,
    is_block_local,
    kernel_eigenvalues,
    make_mask,
    spectral_projector,
    stationary_weighting,
)
from fastslow.numerics.model.pooling import (  # noqa: E402
    block_constant_part,
    block_mean,
    causal_upsample,
    upsample,
    weighted_pool,
)
from fastslow.numerics.model.weights import (  # noqa: E402
    FAST_WEIGHTS,
    SLOW_WEIGHTS,
    WEIGHT_NAMES,
    LayerParams,
    Model,
    ModelConfig,
    init_layer,
    init_model,
    spread_gates,
)

__all__ = [
    "SIGMAS",
    "Activation",
    "FORMS",
    "coupling_rhs",
    "depth_rhs",
    "make_rhs",
    "attention",
    "attention_kernel",
    "layer",
    "layer_increment",
    "masked_softmax",
    "mlp",
    "rms_norm",
    "slow_path",
    "stack",
    "stack_trajectory",
    "mlp_preactivations",
    "NAMED_MASKS",
    "as_mask",
    "coarse_maps",
    "frozen_kernel",
    "is_block_local",
    "kernel_eigenvalues",
    "make_mask",
    "spectral_projector",
    "stationary_weighting",
    "block_constant_part",
    "block_mean",
    "causal_upsample",
    "upsample",
    "weighted_pool",
    "FAST_WEIGHTS",
    "SLOW_WEIGHTS",
    "WEIGHT_NAMES",
    "LayerParams",
    "Model",
    "ModelConfig",
    "init_layer",
    "init_model",
    "spread_gates",
]
