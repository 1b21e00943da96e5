"""The ``fastslow`` command line (SPEC §3).

::

    fastslow claims                                   list the claim IDs and statements
    fastslow check ID [--param KEY=VALUE ...] [--seed N] [--json]
    fastslow figures [ID ...] [--out DIR] [--seed N]
    fastslow bench [--quick] [--out FILE]

``check`` exits 0 when the claim's conclusion holds on the instance, 1 when it does not, and 2 on
bad input (with a one-line reason on stderr), including a claim that is still pending.
"""

from __future__ import annotations

import argparse
import json
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
        params = _parse_kv(args.param)
        result = run_check(args.id, params, seed=args.seed)
    except PendingClaim as exc:
        print(f"fastslow check: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        print(f"fastslow check: bad input: {exc}", file=sys.stderr)
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

    try:
        paths = figures.render(args.ids or None, outdir=args.out, seed=args.seed)
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

    return bench.main(quick=args.quick, out=args.out)


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
    s.set_defaults(func=_cmd_check)

    s = sub.add_parser("figures", help="regenerate figures (all, or those of the given claims)")
    s.add_argument("ids", nargs="*", help="claim IDs (default: all)")
    s.add_argument("--out", default=None, help="output folder (default figures/out)")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_cmd_figures)

    s = sub.add_parser("bench", help="run the benchmarks and print the ratio tables")
    s.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    s.add_argument("--out", default=None, help="also write the results as JSON to this file")
    s.set_defaults(func=_cmd_bench)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage already
        return int(exc.code or 0)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
