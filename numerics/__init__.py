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

Nothing is re-exported here: import a name from the module that defines it
(``from fastslow.numerics.model.weights import ModelConfig``) or that module itself
(``from fastslow.numerics.model import pooling``); docs/architecture.md, "One import style".
"""

if __name__ != "fastslow.numerics":  # one module name per file (docs/architecture.md)
    raise ImportError(
        f"import fastslow.numerics, not {__name__}: the design folders are subpackages of fastslow"
    )


# First, before any submodule's @njit(cache=True) decorator runs: key Numba's on-disk cache by the
# content of every source file of this package (numerics.jit_cache explains why).
from fastslow.numerics import jit_cache as _jit_cache

_jit_cache.configure()
