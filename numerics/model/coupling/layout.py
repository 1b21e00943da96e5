"""Where each header field lies in the packed parameter vector of the coupling form.

One public namespace: the header's slots as module-level integer constants, read as
``layout.T``, ``layout.EPS``, ... by every module of :mod:`numerics.model.coupling` (the packing
writes them, the compiled right-hand side and Jacobian read them). A module of constants, not a
dataclass instance: inside ``@njit`` code Numba freezes a module attribute that is an integer into
a compile-time constant, as it does a module-level global, while a dataclass instance is not
usable there.

The packed vector (:func:`numerics.model.coupling.packing.pack_coupling`) starts with
:data:`HEADER` float64 slots; the blocks after it (mask, ``E``, per-layer weights, fused products,
scratch) are located by :mod:`numerics.model.coupling.packing` from these fields.
"""

from __future__ import annotations

HEADER = 16
"""Slots of the header; the mask starts at this offset."""

T = 0  # number of tokens
P = 1  # block size
D = 2  # width d
M = 3  # MLP width m
L = 4  # number of piecewise-constant intervals (layers)
NORM = 5  # 1.0 when the RMS norm is on
SIGMA = 6  # the activation's compiled code (numerics.model.activations.COMPILED_CODES)
SLOW = 7  # 1.0 when the slow path is on
SLOW_FULL = 8  # 1.0 for the slow mask "full", 0.0 for the shifted block-causal U_c
GAMMA = 9  # injection rate γ
BETA = 10  # score scale β
NORM_EPS = 11  # the RMS norm's ε
EPS = 12  # the time-scale ratio ε of the coupling form
BLOCK_LOCAL = 13  # 1.0 when the mask is block-local (mask packed as its T×P diagonal blocks)
SCRATCH = 14  # offset of the scratch tail
MASK_WIDTH = 15  # columns of the packed mask: P when block-local, else T
