"""The command line's help texts: what the tool is, what each command does, its exit codes.

Kept apart from the parser (:mod:`fastslow.cli`) so that ``fastslow --help`` and each
``fastslow COMMAND --help`` read as a page; every option's own help stays beside its option.
"""

from __future__ import annotations

TOOL = (
    "fastslow checks, claim by claim, a theory paper's reading of a Transformer as a fast-slow "
    "ODE along depth (the claims and our formal statement of each: docs/claims.md). Each claim "
    "has an ID (A1-A3, D1-D9, F1-F3, E1) and a check that decides its verdict on one instance: "
    "holds, fails, outside-hypotheses (the instance breaks a hypothesis, named with the value "
    "that decided it), undecided (the check's own numerics cannot decide it) or error. Any "
    "claim that takes a system of your own (fastslow.toy: LinearLoop, GeneratorFamily, "
    "DepthFlow) checks it with --system FILE.py:NAME. Start with 'fastslow claims', then "
    "'fastslow check ID --describe'."
)

EXIT_CODES = (
    "exit codes: 0 holds (or the command did its work), 1 fails, 2 bad input (one line naming "
    "the value and what was expected; nothing computed), 3 error (the check raised on a valid "
    "input), 4 outside-hypotheses, 5 undecided, 130 interrupted (Ctrl-C), 143 terminated. Run "
    "'fastslow COMMAND --help' for a command's options."
)

COMMANDS = {
    "claims": (
        "List every claim: its ID, whether a check is implemented, the kinds of your own system "
        "it checks, its title and statement. With --json: each claim's parameters (type, "
        "default, range), hypotheses and their sources, conclusion, limits, negative controls "
        "and, per kind of system, the parameters it replaces and what its hypotheses ask of that "
        "kind's fields."
    ),
    "check": (
        "Decide a claim's verdict on one instance: the built-in one (its parameters changed "
        "with --param), a negative control (--control), or your own system (--system). Exit "
        "codes: 0 holds, 1 fails, 4 outside-hypotheses, 5 undecided (the check's own numerics "
        "cannot decide the instance), 3 error (the check raised on a valid input), 2 bad input. "
        "--describe prints what the claim checks and which fields of your system its hypotheses "
        "ask for, after checking the other options as a check would."
    ),
    "figures": (
        "Regenerate the figures (PNG and PDF, deterministic, with their provenance) of the given "
        "claims, or of all. With --system: the figures of the claims that check your system's "
        "kind, drawn for it (a claim whose limits refuse the system is skipped with the reason). "
        "Exit 0 when every figure is drawn, 3 when a point or a drawing raised, 4 when your "
        "system is outside a claim's hypotheses and nothing was computed to draw, 2 bad input."
    ),
    "bench": (
        "Run the benchmarks (the integrators against SciPy, the layer against the BLAS floor, "
        "A2's timed cost ratio, the saturation depth, training, the limits of the cost model, "
        "...) and print their tables as ratios measured within one run."
    ),
    "sweep": (
        "Run a claim's check over a grid of parameters (--grid) and many seeds (--seeds), on "
        "local processes or a Dask cluster, optionally cached (--cache) and written as JSON "
        "(--out). Prints the count per outcome and each point that does not hold; exits with "
        "the code of the worst verdict (worst first: error, fails, undecided, "
        "outside-hypotheses, holds)."
    ),
}
"""Each subcommand's description (``fastslow COMMAND --help``); ``readme``'s is beside its
options in :mod:`fastslow.cli`."""
