"""``fastslow readme``: its options and what it does (publishes a complete report through
:func:`fastslow.readme.update_readme`; refusals exit 2 with one line, nothing written)."""

from __future__ import annotations

import sys
from pathlib import Path

from fastslow.readme import MalformedReport, update_readme
from fastslow.verify.verdict import BAD_INPUT_EXIT


def add_readme(sub) -> None:
    """The ``readme`` subcommand."""
    s = sub.add_parser(
        "readme",
        help="publish the last complete report: the README's claim table, docs/claims.md and "
        "docs/report/",
        description="Publish a complete report written by pytest verify: copy it to docs/report/, "
        "write docs/claims.md from the claim units and rewrite the README's claim table, all four "
        "files or none. Refused (exit 2, nothing written, one line why): a report that is not one "
        "(not JSON, not matching its schema, a claim missing or repeated), partial, pending, from "
        "a working tree with uncommitted changes, whose statuses disagree with its own verdicts, "
        "whose text holds the table's markers, or whose rows are of a lower profile than those "
        "already published (a default run never replaces a thorough one unless "
        "--allow-lower-profile). Exit 0 when published.",
    )
    s.add_argument(
        "--report",
        default="verify/report/report.json",
        metavar="PATH",
        help="the report.json to publish (REPORT.md beside it is copied too; default "
        "%(default)s, written by pytest verify)",
    )
    s.add_argument(
        "--readme",
        default="README.md",
        metavar="PATH",
        help="the README whose table (between its claims:begin and claims:end markers) is "
        "rewritten; docs/ beside it receives claims.md and report/ (default %(default)s)",
    )
    s.add_argument(
        "--figure-dir",
        default="docs/figures",
        metavar="DIR",
        help="the folder the table's figure links point to, relative to the README (default "
        "%(default)s)",
    )
    s.add_argument(
        "--allow-lower-profile",
        action="store_true",
        help="publish even rows of a lower profile than those already published (a default run "
        "over a thorough one, E1's short run over its paper-scale row); the footer names them",
    )
    s.set_defaults(func=cmd_readme)


def cmd_readme(args) -> int:

    from fastslow import figures  # deferred: matplotlib adds 0.5 s to every other command

    try:
        update_readme(
            Path(args.readme),
            Path(args.report),
            figures.available(),
            args.figure_dir,
            allow_lower_profile=args.allow_lower_profile,
        )
    except FileNotFoundError as exc:
        report = Path(exc.filename or "").parent == Path(args.report).parent
        hint = " (run pytest verify first)" if report else ""
        print(f"fastslow readme: bad input: {exc.filename}: no such file{hint}", file=sys.stderr)
        return BAD_INPUT_EXIT
    except MalformedReport as exc:
        print(f"fastslow readme: bad input: {exc}", file=sys.stderr)
        return BAD_INPUT_EXIT
    except OSError as exc:  # nothing was replaced, or every replaced file was restored
        print(
            f"fastslow readme: cannot write {exc.filename or 'an output'}: {exc.strerror or exc}; "
            "nothing was published",
            file=sys.stderr,
        )
        return BAD_INPUT_EXIT
    except ValueError as exc:  # a well-formed report that may not be published
        print(f"fastslow readme: {exc}", file=sys.stderr)
        return BAD_INPUT_EXIT
    print(f"updated the claim table in {args.readme}, docs/claims.md and docs/report/")
    return 0
