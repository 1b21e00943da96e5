"""Independent references written from the formulas of the model, the frozen kernels and the
integrators' tableaux.

They share no code with :mod:`numerics` or :mod:`theory` (a test in ``tests/test_architecture.py``
enforces it): plain NumPy, with :mod:`fractions` for exact arithmetic (SymPy for the chains).

* :mod:`~verify.reference.layer`: the named masks, block pooling ``B``, up-sampling ``U`` and its
  causal shift ``U_c``, RMS norm, softmax attention with ``β = 1/√d``, the MLP, the slow path, the
  gate and one layer ``Φ_l``, written out as dense matrices; derivatives by the complex step.
* :mod:`~verify.reference.spectra`: the named masks' frozen kernels, their spectra and spectral
  projectors in exact rational arithmetic.
* :mod:`~verify.reference.chains`: F2's example chain and slow field in SymPy, from their
  definition (the built-in instance's ``reduced_solution_inside_grid``).
* :mod:`~verify.reference.optim`: Adam and AdamW from their published update rules (Kingma & Ba
  2015; Loshchilov & Hutter 2019), step by step, against which the optimisers are checked.
* :mod:`~verify.reference.tableaux`: the order conditions of Runge–Kutta and Rosenbrock tableaux,
  evaluated exactly on the rationals the float64 coefficients stand for.

Hypotheses of the claims are decided from these (source ``reference``) where the code under test
would otherwise decide its own hypotheses, and conclusion parts compare the implementation with
them.
"""
