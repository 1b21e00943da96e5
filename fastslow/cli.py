"""The ``fastslow`` command line (SPEC §3).

::

    fastslow claims                                   list the claim IDs and statements
    fastslow check ID [--param KEY=VALUE ...] [--seed N] [--json] [--defaults]
    fastslow figures [ID ...] [--out DIR] [--seed N] [--workers N | --scheduler ADDR] [--cache DIR]
    fastslow bench [SECTION ...] [--quick] [--out FILE] [--markdown FILE]
    fastslow readme [--report PATH] [--readme PATH]
    fastslow sweep ID [--grid KEY=V1,V2 ...] [--seeds A:B] [--workers N | --scheduler ADDR]
                      [--cache DIR] [--out FILE]

``check`` exits 0 when the claim's conclusion holds on the instance, 1 when it does not, and 2 on
bad input (with a one-line reason on stderr), including a claim that is still pending.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _parse_kv(items) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        if not key:
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def _cmd_claims(args) -> int:
    from verify.checks import PendingClaim, load
    from verify.registry import CLAIMS

    for c in CLAIMS.values():
        try:
            load(c.id)
            state = "implemented"
        except PendingClaim:
            state = "pending"
        print(f"{c.id:>3}  [{state}]  {c.title}: {c.statement}")
    return 0


def _cmd_check(args) -> int:
    from verify.checks import PendingClaim, run_check

    try:
        if args.defaults:
            from verify.checks import defaults, jsonable
            print(json.dumps(jsonable(defaults(args.id)), indent=1, ensure_ascii=False))
            return 0
        params = _parse_kv(args.param)
        result = run_check(args.id, params, seed=args.seed)
    except PendingClaim as exc:
        print(f"fastslow check: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        print(f"fastslow check: bad input: {exc}", file=sys.stderr)
        return 2
    except FloatingPointError as exc:
        print(f"fastslow check: the instance is out of numerical range: {exc}", file=sys.stderr)
        return 2
    payload = {"id": result.id, "holds": result.holds, "hypotheses_hold": result.hypotheses_hold,
               "figures": result.figures, "params": result.params, "seed": result.seed,
               "tolerance": result.tolerance, "notes": result.notes}
    if args.json:
        from verify.checks import jsonable
        print(json.dumps(jsonable(payload), indent=1, ensure_ascii=False, allow_nan=False))
    else:
        verdict = "HOLDS" if result.holds else "DOES NOT HOLD"
        hyp = "hypotheses hold" if result.hypotheses_hold else "hypotheses violated (control)"
        print(f"{result.id}: {verdict} ({hyp}), seed {result.seed}")
        for k, v in result.figures.items():
            print(f"  {k}: {v}")
        for n in result.notes:
            print(f"  note: {n}")
    return 0 if result.holds else 1


def _cmd_figures(args) -> int:
    import figures

    from fastslow import sweep as sw

    try:
        with sw.executor_for(args.workers, args.scheduler) as executor:
            paths = figures.render(args.ids or None, outdir=args.out, seed=args.seed,
                                   executor=executor, cache_dir=args.cache)
    except (ValueError, TypeError) as exc:
        print(f"fastslow figures: bad input: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    if not paths:
        print("no figures registered for these claims", file=sys.stderr)
    return 0


def _cmd_bench(args) -> int:
    from fastslow import bench

    return bench.main(quick=args.quick, out=args.out, only=args.sections or None,
                      markdown=args.markdown)


def _parse_seeds(text: str) -> list[int]:
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            seeds = list(range(int(a), int(b)))
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--seeds expects A:B (a range) or a comma list, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise ValueError(f"--seeds must give at least one non-negative seed, got {text!r}")
    return seeds


def _cmd_sweep(args) -> int:
    from fastslow import sweep as sw
    from verify.checks import PendingClaim, defaults, resolve_params
    from verify.registry import get_claim

    try:
        cid = get_claim(args.id).id
        base = defaults(cid)
        axes = {}
        for item in args.grid or []:
            key, _, values = item.partition("=")
            if not key or not values:
                raise ValueError(f"--grid expects KEY=V1,V2,..., got {item!r}")
            sep = ";" if isinstance(base.get(key), tuple) else ","  # tuples use commas inside
            axes[key] = [resolve_params(base, {key: v})[key] for v in values.split(sep)]
        axes["seed"] = _parse_seeds(args.seeds)
        points = [dict(p, claim=cid) for p in sw.grid(**axes)]
    except PendingClaim as exc:
        print(f"fastslow sweep: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        print(f"fastslow sweep: bad input: {exc}", file=sys.stderr)
        return 2
    try:
        with sw.executor_for(args.workers, args.scheduler) as executor:
            results = sw.sweep(sw.check_point, points, executor=executor, cache_dir=args.cache,
                               label=f"sweep {cid}")
    except ValueError as exc:
        print(f"fastslow sweep: bad input: {exc}", file=sys.stderr)
        return 2
    holds = sum(r["holds"] for r in results)
    print(f"{cid}: conclusion holds on {holds}/{len(results)} instances")
    for p, r in zip(points, results):
        if not r["holds"]:
            shown = {k: v for k, v in p.items() if k != "claim"}
            print(f"  does not hold at {shown} (hypotheses hold: {r['hypotheses_hold']})")
    if args.out:
        from pathlib import Path
        Path(args.out).write_text(json.dumps([{"point": p, "result": r} for p, r in zip(points, results)],
                                             indent=1))
    return 0 if holds == len(results) else 1


def _cmd_readme(args) -> int:
    from pathlib import Path

    from verify.readme import update_readme

    try:
        update_readme(Path(args.readme), Path(args.report), args.figure_dir)
    except (OSError, ValueError) as exc:
        print(f"fastslow readme: {exc}", file=sys.stderr)
        return 2
    print(f"updated the claim table in {args.readme}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastslow", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("claims", help="list the claim IDs and their statements")
    s.set_defaults(func=_cmd_claims)

    s = sub.add_parser("check", help="check one claim on an instance of your choice")
    s.add_argument("id", help="claim ID, e.g. A1")
    s.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="override a parameter of the check (repeatable)")
    s.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--defaults", action="store_true",
                   help="print the check's parameters and their defaults, and exit")
    s.set_defaults(func=_cmd_check)

    s = sub.add_parser("figures", help="regenerate figures (all, or those of the given claims)")
    s.add_argument("ids", nargs="*", help="claim IDs (default: all)")
    s.add_argument("--out", default=None, help="output folder (default figures/out)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="compute the figures' sweep points on this many local processes "
                        "(default: all CPUs; 1 runs in this process)")
    s.add_argument("--scheduler", default=None,
                   help="address of a Dask distributed scheduler (needs fastslow[dask])")
    s.add_argument("--cache", default=None,
                   help="cache folder for the computed points; an interrupted run resumes from it")
    s.set_defaults(func=_cmd_figures)

    s = sub.add_parser("bench", help="run the benchmarks and print the ratio tables")
    s.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    s.add_argument("--out", default=None, help="also write the results as JSON to this file")
    s.add_argument("--markdown", default=None, help="also write the tables as Markdown to this file")
    s.add_argument("sections", nargs="*", help="benchmark sections to run (default: all)")
    s.set_defaults(func=_cmd_bench)
    s = sub.add_parser("sweep", help="run a claim's check over a parameter grid and many seeds")
    s.add_argument("id", help="claim ID, e.g. D5")
    s.add_argument("--grid", action="append", metavar="KEY=V1,V2",
                   help="an axis of the grid (repeatable); values parsed like --param")
    s.add_argument("--seeds", default="0:4", help="seeds as A:B (range) or a comma list (default 0:4)")
    s.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="local worker processes (default: all CPUs; 1 runs in this process)")
    s.add_argument("--scheduler", default=None,
                   help="address of a Dask distributed scheduler (needs fastslow[dask])")
    s.add_argument("--cache", default=None, help="cache folder; an interrupted sweep resumes from it")
    s.add_argument("--out", default=None, help="write every point and result as JSON")
    s.set_defaults(func=_cmd_sweep)
    s = sub.add_parser("readme", help="regenerate the README's claim table from the last report")
    s.add_argument("--report", default="verify/report/report.json")
    s.add_argument("--readme", default="README.md")
    s.add_argument("--figure-dir", default="docs/figures")
    s.set_defaults(func=_cmd_readme)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage already
        return int(exc.code or 0)
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `fastslow claims | head`
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
