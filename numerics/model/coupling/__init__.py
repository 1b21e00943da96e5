"""The coupling form ``dX/dt = (1/ε)(A_t(X) − I)X + R_t(X)`` compiled for :mod:`numerics.integrators`.

Modules, bottom to top: :mod:`~numerics.model.coupling.layout` (the header slots of the packed
parameter vector, the one namespace every other module reads), :mod:`~numerics.model.coupling.packing`
(the packed vector and where each block of it lies), :mod:`~numerics.model.coupling.lanes` and
:mod:`~numerics.model.coupling.rhs` (the right-hand side: eight-lane path, row path; ``rhs_for``
hands a run the one path its instance takes), :mod:`~numerics.model.coupling.jacobian` (the
frozen-kernel Jacobian; ``jac_for`` likewise) and :mod:`~numerics.model.coupling.drivers` (the
flow by our integrators and by SciPy). Nothing is re-exported: import a name from the module that
defines it.
"""
