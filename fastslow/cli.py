"""The ``fastslow`` command line.

::

    fastslow claims [--json]                          list the claims and the systems they check
    fastslow check ID [--param KEY=VALUE ...] [--seed N] [--control NAME | --system SYSTEM]
                      [--json] [--describe]
    fastslow figures [ID ...] [--out DIR] [--seed N] [--workers N | --scheduler ADDR] [--cache DIR]
                     [--system SYSTEM]
    fastslow bench [SECTION ...] [--quick] [--out FILE] [--markdown FILE]
    fastslow readme [--report PATH] [--readme PATH] [--figure-dir DIR] [--allow-lower-profile]
    fastslow sweep ID [--grid KEY=V1,V2 ...] [--seeds A:B] [--system SYSTEM]
                      [--workers N | --scheduler ADDR] [--cache DIR] [--out FILE]
    fastslow trained-report [--profile short|paper] [--train] [--out DIR]

``SYSTEM`` is ``FILE.py:NAME`` (a :mod:`fastslow.toy` system defined in a Python file), trained
weights ``FILE.safetensors`` or ``FILE.npz[:KEY=VALUE,...]`` (docs/trained_weights.md) or an E1
run ``e1:ARM:SEED:TOKENS[:PROFILE][:train]`` from the run cache (:mod:`verify.trained`).

``check`` decides the claim's verdict on one instance and exits 0 ``holds``, 1 ``fails``,
4 ``outside-hypotheses``, 5 ``undecided`` (the check's own numerics cannot decide the instance),
3 ``error`` (the check raised on a valid input), 2 bad input (a one-line reason on stderr naming
the value), including a claim that is still pending. ``sweep`` prints its counts per outcome and
exits with the code of the worst verdict among its points (worst first: error, fails, undecided,
outside-hypotheses, holds). ``figures`` exits 0 when every figure is drawn, 3 when a check or a
drawing raised on valid input, 4 when a user system is outside a claim's hypotheses and its check
computed nothing to draw (one line each, the other figures still drawn). ``readme`` exits 2 on a report that is not one (not JSON, not
matching its schema, a registered claim missing or repeated, an unknown claim, a summary that
does not count the rows), an output it cannot write, or a report it refuses to publish
(partial, pending, from a dirty tree, statuses that disagree with its own verdicts, text holding
the table's markers, rows of a lower profile than those published unless
``--allow-lower-profile``); either way nothing is published (the README, ``docs/claims.md`` and
``docs/report/`` are replaced together or not at all).

Every command checks its inputs and outputs before the work starts and ends a fault in one line:
a parameter given twice, a grid with an empty or repeated axis, ``--workers`` below 1, parameters
whose estimated memory exceeds the budget (``--memory-budget`` or ``FASTSLOW_MEMORY_BUDGET``,
default half the machine's memory) or whose estimated time for one check exceeds the time budget
(``--time-budget`` or ``FASTSLOW_TIME_BUDGET``, default 1800 s; per sweep point), both estimated
on a user system's own sizes, an output or cache that cannot be written, an unreachable
``--scheduler``, a broken ``--system`` (a file that raises or exits while loading, a ``NAME`` that
is not a system, non-finite, complex or wrongly shaped entries, a field mutated after
construction, a ``describe()`` that raises), a ``--grid`` over a parameter the system replaces:
exit 2 before anything is computed. A full standard output exits 2.

Signals, one rule from the command's first statement to its last (:mod:`fastslow.signals`):
Ctrl-C (SIGINT) ends any command with exit 130 and SIGTERM with 143, one line and no traceback
wherever it lands (while the command loads, parses, starts its workers or runs), after keeping
every finished sweep point in the cache; nothing partial is written. A command started with SIGINT
ignored (a script's background job, as POSIX shells start it) keeps ignoring it to its end;
SIGTERM still stops it.

Threads: BLAS, OpenMP and Numba run ``FASTSLOW_THREADS`` threads (default 1), set by the command
itself for it and its workers whatever ``OPENBLAS_NUM_THREADS`` and the like say
(:mod:`numerics.threads`): timings and cached results are those of ``bash run.sh``.

Outputs (``--out``, ``--markdown``, the README and report files) never destroy what they point at
(:mod:`verify.outputs`): a regular file is replaced atomically and gets the umask's permissions
(an existing one keeps its mode), a symbolic link is followed and stays a link, a character device
or a FIFO (``/dev/null``, ``/dev/stdout``, a named pipe) is written directly, ``-`` is standard
output, and a folder, block device or socket is refused before any work (exit 2).
"""

from __future__ import annotations

import os
import sys

from fastslow import signals

try:  # a signal while the command line loads (a second of imports): one line, 130 or 143
    import argparse
    import contextlib
    import json
    import re
    from pathlib import Path

    signals.point("imports")
    import fastslow
    from fastslow import cli_help
    from fastslow.cli_output import as_json, brief, print_verdict  # noqa: F401 (brief: API)
    from fastslow.cli_readme import add_readme
    from fastslow.numerics import threads
    from fastslow.verify import sweep, systems
    from fastslow.verify.budgets import (
        BASE_BYTES,
        MEMORY_BUDGET_ENV,
        TIME_BUDGET_ENV,
        budget_hint,
        format_bytes,
        memory_budget,
        parse_bytes,
        parse_seconds,
    )
    from fastslow.verify.claim import PendingClaim
    from fastslow.verify.outputs import stdout_to_stderr, writable_dir, writable_file, write_output
    from fastslow.verify.registry import CLAIMS, get_claim
    from fastslow.verify.suggest import did_you_mean
    from fastslow.verify.verdict import BAD_INPUT_EXIT, EXIT_CODES, outcome_counts, worst_outcome
except KeyboardInterrupt:
    print("fastslow: interrupted while starting", file=sys.stderr, flush=True)
    # at once: nothing ran yet, and an interrupted extension import would make the interpreter
    # kill itself with SIGINT on a normal exit instead of exiting 130
    os._exit(signals.exit_code())


def _parse_kv(items, option: str = "--param") -> dict:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} expects KEY=VALUE, got {item!r}")
        if key.strip() in out:
            raise ValueError(f"{option} {key.strip()} is given twice; give each parameter once")
        out[key.strip()] = value
    return out


def _set_budget(args) -> None:
    """``--memory-budget`` and ``--time-budget`` (validated) as :data:`MEMORY_BUDGET_ENV` and
    :data:`TIME_BUDGET_ENV`, so sweep workers see them."""
    if getattr(args, "memory_budget", None):
        parse_bytes(args.memory_budget, "--memory-budget")
        os.environ[MEMORY_BUDGET_ENV] = args.memory_budget
    if getattr(args, "time_budget", None):
        parse_seconds(args.time_budget, "--time-budget")
        os.environ[TIME_BUDGET_ENV] = args.time_budget


def _cmd_claims(args) -> int:
    if args.json:
        rows = [c.to_json() for c in CLAIMS.values()]
        print(as_json(rows))
        return 0
    for c in CLAIMS.values():
        state = "implemented" if c.implemented else "pending"
        kinds = ", ".join(c.system_kinds()) or "built-in only"
        print(f"{c.id:>3}  [{state}; systems: {kinds}]  {c.title}: {c.statement}")
        for kind, needs in c.system_terms.items():  # the hypotheses in the kind's own fields
            print(f"       your {kind} needs: {needs}")
    return 0


load_system = systems.load
"""The user system of ``FILE.py:NAME`` (:func:`verify.systems.load`)."""


def _cmd_check(args) -> int:
    try:
        _set_budget(args)
        unit = get_claim(args.id)
        params = _parse_kv(args.param)
        if args.describe:  # what it would check, after the same input checks as a check
            _describe_inputs(unit, params, args)
            print(as_json(unit.to_json()) if args.json else unit.describe())
            return 0
        system = load_system(args.system) if args.system else None
        with stdout_to_stderr() if args.json else contextlib.nullcontext():  # user code prints
            verdict = fastslow.check(unit.id, system, params, args.seed, control=args.control)
    except (PendingClaim, ValueError, TypeError) as exc:  # raised before any work
        print(f"fastslow check: bad input: {exc}", file=sys.stderr)
        return BAD_INPUT_EXIT
    if args.json:
        print(as_json(verdict.to_json()))
    else:
        print_verdict(verdict)
    if verdict.outcome == "error":
        print(
            f"fastslow check: {verdict.id} could not be decided on this valid input: "
            f"{(verdict.error or {}).get('type')}: {(verdict.error or {}).get('message')}",
            file=sys.stderr,
        )
    return verdict.exit_code


def _describe_inputs(unit, params: dict, args) -> None:
    """``--describe``'s other options checked as a check would check them (``ValueError``):
    every ``--param`` value, the seed, the control's name."""
    if args.control is not None:
        unit.control(args.control)
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {args.seed}")
    unit.resolve({**(unit.control(args.control).params if args.control else {}), **params})


def _cmd_figures(args) -> int:
    from fastslow import figures  # deferred: matplotlib adds 0.5 s to every other command

    outdir = Path(args.out or figures.default_outdir())
    made = not outdir.exists()  # a folder this command creates is removed again if left empty
    try:
        _set_budget(args)
        sweep.max_workers(args.workers)
        if args.seed < 0:
            raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
        ids = [get_claim(c).id for c in args.ids]
        system = load_system(args.system) if args.system else None
        if system is not None and (args.cache is not None or args.scheduler):
            raise ValueError(
                "--cache and --scheduler do not apply with --system (your system's figure points "
                "are computed in this process and not cached)"
            )
        outdir = writable_dir(outdir, "--out")
        if args.cache is not None:
            sweep.prepare_cache(args.cache, "--cache")
        skipped: list = []
        workers = 1 if system is not None else args.workers
        with sweep.executor_for(workers, args.scheduler) as executor:
            paths = figures.render(
                ids or None,
                outdir=outdir,
                seed=args.seed,
                executor=executor,
                cache_dir=args.cache,
                system=system,
                skipped=skipped,
            )
        for name, why in skipped:
            print(f"fastslow figures: {name} not drawn for your system: {why}", file=sys.stderr)
    except (ValueError, TypeError) as exc:
        _remove_if_empty(outdir, made)
        print(f"fastslow figures: bad input: {exc}", file=sys.stderr)
        return 2
    except figures.FigureOutsideHypotheses as exc:  # the claim does not apply: its verdict's code
        _remove_if_empty(outdir, made)
        print(f"fastslow figures: {exc}", file=sys.stderr)
        return EXIT_CODES["outside-hypotheses"]
    except figures.FigureError as exc:
        _remove_if_empty(outdir, made)
        print(f"fastslow figures: {exc}", file=sys.stderr)
        return EXIT_CODES["error"]
    for p in paths:
        print(p)
    if not paths:
        print("no figures registered for these claims", file=sys.stderr)
    return 0


def _remove_if_empty(folder: Path, made: bool) -> None:
    """Remove ``folder`` when this command created it (``made``) and left nothing in it."""
    if made:
        try:
            folder.rmdir()  # only an empty folder; anything written stays
        except OSError:
            pass


def _cmd_bench(args) -> int:
    from fastslow import bench  # deferred: the benchmark sections import the compiled kernels

    return bench.main(
        quick=args.quick, out=args.out, only=args.sections or None, markdown=args.markdown
    )


def _parse_seeds(text: str) -> range | list[int]:
    """``A:B`` as a ``range`` (never expanded here) or ``a,b,c`` as a list of distinct seeds."""
    try:
        if ":" in text:
            a, b = (_integer(x) for x in text.split(":", 1))
            seeds: range | list[int] = range(a, b)
        else:
            seeds = [_integer(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--seeds expects A:B (a range) or a comma list, got {text!r}") from None
    lowest = seeds.start if isinstance(seeds, range) else min(seeds, default=0)
    if len(seeds) == 0 or lowest < 0:
        raise ValueError(f"--seeds must give at least one non-negative seed, got {text!r}")
    if not isinstance(seeds, range) and len(set(seeds)) != len(seeds):  # a range never repeats
        raise ValueError(f"--seeds {text!r} repeats a seed; give each seed once")
    return seeds


def _integer(text: str) -> int:
    s = text.strip()
    if not s.isascii() or "_" in s:  # int("1_6") == 16: never what was meant
        raise ValueError(text)
    return int(s)


def _grid_axes(unit, items) -> dict:
    """The ``--grid`` axes of ``unit``, every value parsed and validated; an axis given twice is
    bad input."""
    axes: dict = {}
    for item in items or []:
        key, _, values = item.partition("=")
        key = key.strip()
        if not key or not values:
            raise ValueError(f"--grid expects KEY=V1,V2,..., got {item!r}")
        if key not in unit.params:
            raise ValueError(
                f"--grid {key}: unknown parameter of {unit.id}{did_you_mean(key, unit.params)}; "
                f"expected one of {', '.join(unit.params)}"
            )
        if key in axes:
            raise ValueError(f"--grid {key} is given twice; give each axis once")
        sep = ";" if unit.params[key].kind.startswith("tuple") else ","  # commas inside tuples
        axes[key] = [unit.params[key].parse(key, v) for v in values.split(sep)]
    return axes


def _sweep_system(unit, spec: str | None, axes: dict) -> tuple:
    """The sweep's user system (``--system FILE.py:NAME``) checked for ``unit`` as
    :meth:`~verify.claim.Claim.check` would, and the keys it adds to every point (the spec and
    the system's fingerprint, so the cache keys see the system); a ``--grid`` over a parameter
    the system replaces is bad input naming it. ``(None, {})`` without a system."""
    if spec is None:
        return None, {}
    system = unit.checked_system(sweep.planned_system(spec), limits=False)
    if not unit.declaration_rules_out(system):  # else every point is outside, whatever its size
        unit.accepts(system)
    replaced = unit.replaced_by(system)
    for key in axes:
        if key in replaced:
            raise ValueError(
                f"--grid {key}: parameter {key} is set by your system "
                f"({type(system).__name__}); grid over the parameters it leaves: "
                f"{', '.join(k for k in unit.params if k not in replaced) or 'none'}"
            )
    return system, {"system": spec, "system_fingerprint": system.fingerprint()}


def _plan_sweep(args):
    """Validate a sweep before anything is built: workers, outputs, axes, the user system, the
    size of the grid and its memory and time (on the system's sizes); return ``(claim id, axes,
    number of points, workers, the keys a user system adds to each point)``."""
    _set_budget(args)
    sweep.max_workers(args.workers)
    unit = get_claim(args.id)
    if args.out:
        writable_file(args.out, "--out")
    if args.cache is not None:
        sweep.prepare_cache(args.cache, "--cache")
    axes = _grid_axes(unit, args.grid)
    system, extra = _sweep_system(unit, args.system, axes)
    sizes = {k: len(v) for k, v in axes.items()}
    axes["seed"] = _parse_seeds(args.seeds)
    total = sweep.grid_size(**axes)
    held = BASE_BYTES + total * sweep.RESULT_BYTES
    if held > memory_budget():
        raise ValueError(
            f"a sweep of {total} points ({' × '.join(f'{k} {n}' for k, n in sizes.items())}"
            f"{' × ' if sizes else ''}{len(axes['seed'])} seeds) would hold about "
            f"{format_bytes(held)} of results, beyond the memory budget of {budget_hint()}"
        )
    no_seed = {k: v for k, v in axes.items() if k != "seed"}
    if system is not None and unit.declaration_rules_out(system):
        need = BASE_BYTES  # every point is outside its hypotheses: nothing is built
    else:
        need = max(
            unit.within_budget(unit.resolve(p, system), system) for p in sweep.iter_grid(**no_seed)
        )
    workers = sweep.max_workers(args.workers, total)
    fits = max(1, memory_budget() // need)
    if workers > fits:
        print(
            f"fastslow sweep: {workers} workers would need {format_bytes(workers * need)}; "
            f"using {fits} to stay within the memory budget",
            file=sys.stderr,
        )
        workers = fits
    return unit.id, axes, total, workers, extra


def _cmd_sweep(args) -> int:
    try:
        cid, axes, total, workers, extra = _plan_sweep(args)
        points = [dict(p, claim=cid, **extra) for p in sweep.iter_grid(**axes)]
        with sweep.executor_for(workers, args.scheduler, tasks=total) as executor:
            results = sweep.sweep(
                sweep.check_point,
                points,
                executor=executor,
                cache_dir=args.cache,
                label=f"sweep {cid}",
                on_error=sweep.check_point_error,
            )
    except (PendingClaim, ValueError, TypeError) as exc:  # raised before any work
        print(f"fastslow sweep: bad input: {exc}", file=sys.stderr)
        return BAD_INPUT_EXIT
    except sweep.SweepInterrupted as exc:
        hint = "" if exc.cache else "; rerun with --cache DIR to keep finished points"
        print(f"fastslow sweep: {exc}{hint}", file=sys.stderr)
        return signals.exit_code()
    counts = outcome_counts(r["verdict"] for r in results)
    summary = sys.stderr if args.out == "-" else sys.stdout  # standard output holds the JSON
    print(
        f"{cid}: "
        + ", ".join(f"{n} {k}" for k, n in counts.items())
        + f" of {len(results)} instances",
        file=summary,
    )
    for p, r in zip(points, results):
        if r["verdict"] != "holds":
            shown = {k: v for k, v in p.items() if k not in ("claim", "system_fingerprint")}
            print(f"  {r['verdict']} at {shown}: {r['reason']}", file=summary)
    if args.out:  # checked writable before the sweep
        # keys sorted: a cached result (read back from JSON) and a fresh one give the same bytes
        rows = [{"point": p, "result": r} for p, r in zip(points, results)]
        text = json.dumps(rows, indent=1, sort_keys=True)
        try:
            write_output(args.out, text + "\n", "--out")
        except OSError as exc:
            print(
                f"fastslow sweep: cannot write --out {args.out!r}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return BAD_INPUT_EXIT
    return EXIT_CODES[worst_outcome(r["verdict"] for r in results)]


def _add_budget(s) -> None:
    s.add_argument(
        "--memory-budget",
        default=None,
        metavar="SIZE",
        help=f"refuse parameters whose estimated memory exceeds SIZE (8G, 512M, 25%%; default "
        f"${MEMORY_BUDGET_ENV} or half this machine's memory)",
    )
    s.add_argument(
        "--time-budget",
        default=None,
        metavar="SECONDS",
        help=f"refuse parameters whose estimated time for one check exceeds SECONDS (600, 90s, "
        f"10m, 1.5h; each sweep point separately; default ${TIME_BUDGET_ENV} or 1800 s)",
    )


SYSTEM_HELP = (
    "your own system: FILE.py:NAME (a fastslow.toy system defined in FILE.py), trained weights "
    "FILE.safetensors or FILE.npz[:KEY=VALUE,...] (layout and settings: docs/trained_weights.md), "
    "or an E1 run e1:ARM:SEED:TOKENS[:PROFILE][:train] (ARM coupled, frozen or dense; read from "
    "the run cache, trained only with :train)"
)


def _add_claims(sub) -> None:
    """The ``claims`` subcommand."""
    s = sub.add_parser(
        "claims",
        help="list the claim IDs, their statements and the kinds of your own system each checks",
        description=cli_help.COMMANDS["claims"],
    )
    s.add_argument(
        "--json",
        action="store_true",
        help="print every claim as JSON: id, title, statement, status, the system kinds it "
        "checks with the parameters each replaces, and the parameters with their ranges",
    )
    s.set_defaults(func=_cmd_claims)


def _add_check(sub) -> None:
    """The ``check`` subcommand."""
    s = sub.add_parser(
        "check",
        help="decide one claim's verdict on an instance of your choice",
        description=cli_help.COMMANDS["check"],
    )
    s.add_argument("id", help="claim ID, e.g. A1")
    s.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="override a parameter of the check (repeatable)",
    )
    s.add_argument(
        "--seed",
        type=int,
        default=None,
        help="root seed (default 0, or the negative control's own seed)",
    )
    s.add_argument(
        "--control",
        default=None,
        metavar="NAME",
        help="run the named negative control (see --describe)",
    )
    s.add_argument(
        "--system",
        default=None,
        metavar="SYSTEM",
        help="check " + SYSTEM_HELP + "; --describe lists the kinds this claim checks",
    )
    _add_budget(s)
    s.add_argument("--json", action="store_true", help="print the verdict as JSON")
    s.add_argument(
        "--describe",
        action="store_true",
        help="print the claim's parameters, the kinds of your own system it checks (and the "
        "parameters each replaces), hypotheses, conclusion and controls, and exit",
    )
    s.set_defaults(func=_cmd_check)


def _add_figures(sub) -> None:
    """The ``figures`` subcommand."""
    s = sub.add_parser(
        "figures",
        help="regenerate figures (all, or those of the given claims)",
        description=cli_help.COMMANDS["figures"],
    )
    s.add_argument("ids", nargs="*", help="claim IDs (default: all)")
    s.add_argument(
        "--out",
        default=None,
        help="output folder (default figures/out of the source checkout, else ./fastslow-figures)",
    )
    s.add_argument(
        "--seed",
        type=int,
        default=0,
        help="root seed of every figure's points (a non-negative integer; default 0)",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="compute the figures' sweep points on this many local processes "
        "(default: all CPUs; 1 runs in this process)",
    )
    s.add_argument(
        "--scheduler",
        default=None,
        help="address of a Dask distributed scheduler (needs fastslow[dask])",
    )
    s.add_argument(
        "--cache",
        default=None,
        help="cache folder for the computed points; an interrupted run resumes from it",
    )
    s.add_argument(
        "--system",
        default=None,
        metavar="SYSTEM",
        help="draw the figures for " + SYSTEM_HELP + " (those of the given claims, default "
        "every claim that checks its kind); computed in this process",
    )
    _add_budget(s)
    s.set_defaults(func=_cmd_figures)


def _add_bench(sub) -> None:
    """The ``bench`` subcommand."""
    s = sub.add_parser(
        "bench",
        help="run the benchmarks and print the ratio tables",
        description=cli_help.COMMANDS["bench"],
    )
    s.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    s.add_argument("--out", default=None, help="also write the results as JSON to this file")
    s.add_argument(
        "--markdown", default=None, help="also write the tables as Markdown to this file"
    )
    s.add_argument("sections", nargs="*", help="benchmark sections to run (default: all)")
    s.set_defaults(func=_cmd_bench)


def _add_sweep(sub) -> None:
    """The ``sweep`` subcommand."""
    s = sub.add_parser(
        "sweep",
        help="run a claim's check over a parameter grid and many seeds",
        description=cli_help.COMMANDS["sweep"],
    )
    s.add_argument("id", help="claim ID, e.g. D5")
    s.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2",
        help="an axis of the grid (repeatable); values parsed like --param",
    )
    s.add_argument(
        "--seeds", default="0:4", help="seeds as A:B (range) or a comma list (default 0:4)"
    )
    s.add_argument(
        "--system",
        default=None,
        metavar="SYSTEM",
        help="sweep " + SYSTEM_HELP + " over the seeds (and --grid over the parameters it does "
        "not replace); each worker loads it again",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="local worker processes (default: all CPUs; 1 runs in this process)",
    )
    s.add_argument(
        "--scheduler",
        default=None,
        help="address of a Dask distributed scheduler (needs fastslow[dask])",
    )
    s.add_argument(
        "--cache", default=None, help="cache folder; an interrupted sweep resumes from it"
    )
    s.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="write every point and its verdict as JSON (keys sorted: the same bytes fresh or "
        "from the cache; - for standard output)",
    )
    _add_budget(s)
    s.set_defaults(func=_cmd_sweep)


def _add_trained_report(sub) -> None:
    """The ``trained-report`` subcommand."""
    s = sub.add_parser(
        "trained-report",
        help="compute the report's section on E1's trained networks (D5, D6, D7, D9 predictions)",
        description="Check what the theory predicts for E1's trained networks (three arms, "
        "seeds 0-2, the profile's token counts) and D9 with its shuffled-block control, and "
        "write docs/report/trained_<profile>.json, which REPORT.md's section and the figure "
        "e1_trained_theory (fastslow figures E1) are drawn from. Reads the run cache; a missing "
        "run is bad input unless --train.",
    )
    s.add_argument(
        "--profile",
        choices=("short", "paper"),
        default="short",
        help="the token counts: short (the default pytest verify's) or paper (up to 500k)",
    )
    s.add_argument(
        "--train",
        action="store_true",
        help="train the runs missing from the cache (progress on stderr)",
    )
    s.add_argument("--out", default=None, help="folder (default docs/report of the checkout)")
    for opt, what in (
        ("--tokens", "token counts (default: the profile's three)"),
        ("--seeds", "run seeds of the D5/D6/D7 networks (default 0,1,2)"),
        ("--d9-seeds", "run seeds of each D9 verdict on E1's text, at least 3 (default 0,1,2,3,4)"),
        ("--control-seeds", "run seeds of the shuffled-block control (default: --d9-seeds)"),
    ):
        s.add_argument(opt, default=None, metavar="A,B,...", help=what)
    s.set_defaults(func=_cmd_trained_report)


def _cmd_trained_report(args) -> int:
    from fastslow.verify import trained_section  # deferred: imports the language models

    def progress(msg: str) -> None:
        print(f"[trained-report] {msg}", file=sys.stderr, flush=True)

    try:
        lists = {}
        for key in ("tokens", "seeds", "d9_seeds", "control_seeds"):
            raw = getattr(args, key)
            try:
                lists[key] = [int(x) for x in raw.split(",")] if raw else None
            except ValueError:
                raise ValueError(
                    f"--{key.replace('_', '-')} expects integers A,B,..., got {raw!r}"
                ) from None
        folder = Path(args.out) if args.out else None
        # the output is checked before the work: hours of training are never lost to it
        writable_file(trained_section.path_for(args.profile, folder), "--out")
        section = trained_section.compute(
            args.profile, train=args.train, progress=progress, **lists
        )
        path = trained_section.write(section, folder)
    except (ValueError, TypeError) as exc:
        print(f"fastslow trained-report: bad input: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors suggest the closest subcommand or option ("did you
    mean"). Its error is still argparse's: the usage line, then the error, exit 2."""

    def error(self, message: str):
        bad = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if bad:
            choices = re.findall(r"'([^']*)'", bad.group(2))
            message += did_you_mean(bad.group(1), choices)
        elif message.startswith("unrecognized arguments: "):
            options = {o for a in _all_parsers(self) for o in a._option_string_actions}
            words = message.removeprefix("unrecognized arguments: ").split()
            hints = [did_you_mean(w.split("=")[0], options) for w in words if w.startswith("-")]
            message += next((h for h in hints if h), "")
        super().error(message)


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and its subcommands' parsers."""
    subs = [
        p
        for a in parser._actions
        if isinstance(a, argparse._SubParsersAction)
        for p in a.choices.values()
    ]
    return [parser, *subs]


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="fastslow",
        description=cli_help.TOOL,
        epilog=cli_help.EXIT_CODES
        + f" Environment: {threads.ENV}=N runs BLAS, OpenMP and Numba on N threads (default "
        "1, for every command and its workers; it overrides OPENBLAS_NUM_THREADS and the like). "
        "Ctrl-C exits 130 and SIGTERM 143 at any moment, without a traceback or a partial output; "
        "a command started with SIGINT ignored (a script's background job) keeps ignoring it.",
    )
    p.add_argument("--version", action="version", version=f"fastslow {fastslow.__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    signals.point("parse")

    _add_claims(sub)
    _add_check(sub)
    _add_figures(sub)
    _add_bench(sub)
    _add_sweep(sub)
    add_readme(sub)
    _add_trained_report(sub)
    return p


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv=None) -> int:
    """Run one command (``argv``: the arguments, default ``sys.argv[1:]``) and return its exit
    code, under the signal rule of :mod:`fastslow.signals` (installed here when the ``fastslow``
    entry point has not done so already, and then put back on return)."""
    previous = signals.install()
    command = "fastslow"
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on bad usage already
            return int(exc.code or 0)
        command = f"fastslow {args.command}"
        try:
            threads.pin()
        except ValueError as exc:
            print(f"{command}: bad input: {exc}", file=sys.stderr)
            return BAD_INPUT_EXIT
        signals.point("run")
        code = args.func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # e.g. `fastslow claims | head`
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:  # SIGINT or SIGTERM (fastslow.signals)
        signals.stop_handling()
        print(f"{command}: interrupted", file=sys.stderr)
        return signals.exit_code()
    except OSError as exc:  # a full disk or a failing device under stdout or an output
        where = exc.filename or "standard output"
        print(f"{command}: cannot write {where}: {exc.strerror}", file=sys.stderr)
        if exc.filename is None:
            _quiet_stdout()
        return BAD_INPUT_EXIT
    finally:
        signals.restore(previous)


if __name__ == "__main__":
    sys.exit(main())
