"""fastslow: a numerical verification suite for the fast–slow ODE reading of hierarchical Transformers.

The packages: ``theory`` (SymPy derivations), ``numerics`` (the engine), ``verify`` (claim checks
and the report), ``figures`` (one function per figure). This package holds the command line and
the provenance record shared by reports, figures and benchmarks.
"""

__version__ = "0.1.0"
