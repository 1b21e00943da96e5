"""The numerical engine: pooling, masks and kernels, the layer and the stack, the depth flow.

``numerics`` never imports ``theory`` (SPEC §5, independent oracles).
"""

# First, before any submodule's @njit(cache=True) decorator runs: key Numba's on-disk cache by the
# content of every source file of this package (numerics.jit_cache explains why).
from . import jit_cache as _jit_cache

_jit_cache.configure()

from .masks import (NAMED_MASKS, as_mask, coarse_maps, frozen_kernel, kernel_eigenvalues,
                    make_mask, spectral_projector)
from .model import (FAST_WEIGHTS, SLOW_WEIGHTS, WEIGHT_NAMES, LayerParams, Model, ModelConfig,
                    init_layer, init_model)
from .pooling import (block_constant_part, block_mean, causal_upsample, upsample, weighted_pool)
from .layer import (attention, attention_kernel, layer, layer_increment, masked_softmax, mlp,
                    rms_norm, slow_path, stack, stack_trajectory)
from .flow import FORMS, coupling_rhs, depth_rhs, make_rhs
