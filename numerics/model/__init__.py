"""The model: a Transformer read as a flow along depth.

:mod:`~numerics.model.masks` (attention masks, frozen kernels and their spectra),
:mod:`~numerics.model.pooling` (block pooling and up-sampling by reshaping),
:mod:`~numerics.model.weights` (``ModelConfig``, ``LayerParams``, ``Model`` and their random
initialisation), :mod:`~numerics.model.layer` (the validated NumPy reference layer and stack),
:mod:`~numerics.model.kernels` and :mod:`~numerics.model.tangents` (the same pieces and their
derivatives without argument checks, for inner loops), :mod:`~numerics.model.autodiff` (exact
JVPs and VJPs), :mod:`~numerics.model.compiled` (the Numba layer), :mod:`~numerics.model.flow`
(the depth flow's right-hand sides), the subpackage :mod:`~numerics.model.coupling` (the
coupling form compiled for :mod:`numerics.integrators`: header layout, packed parameter vector,
right-hand side, frozen-kernel Jacobian, drivers), :mod:`~numerics.model.depth_path` (smooth
weight paths θ(t)), :mod:`~numerics.model.cost` (exact operation counts) and
:mod:`~numerics.model.activations` (the MLP nonlinearity σ: the named ones and your own
:class:`~numerics.model.activations.Activation`).
"""
