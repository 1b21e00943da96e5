"""Symbolic derivations (SymPy): closed forms, slow-manifold expansions, stationary distributions.

Each derivation returns SymPy expressions and a numeric function generated from them with
``lambdify(..., cse=True)``. ``theory`` never imports ``numerics``: the symbolic oracles are independent of the engine.
"""
