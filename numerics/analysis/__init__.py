"""What the model's linearisation says.

:mod:`~numerics.analysis.linearised` (the stack linearised at homogeneous states: closed-form
polynomial and eigen forms, saturation depth), :mod:`~numerics.analysis.stability` (dense layer
Jacobians, the gate's spectral radius, critical gate and stability margin, looped maps),
:mod:`~numerics.analysis.fixed_points` (fixed points of a tied layer by Newton's method with
continuation in γ) and
:mod:`~numerics.analysis.visibility` (which parameter directions the output can see: the
visibility map and its decaying subspace).
"""
