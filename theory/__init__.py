"""Symbolic derivations (SymPy): closed forms, slow-manifold expansions, stationary distributions.

Each derivation returns SymPy expressions and a numeric function generated from them with
``lambdify(..., cse=True)``. ``theory`` never imports ``numerics``: the symbolic oracles are independent of the engine.
"""

if __name__ != "fastslow.theory":  # one module name per file (docs/architecture.md)
    raise ImportError(
        f"import fastslow.theory, not {__name__}: the design folders are subpackages of fastslow"
    )
