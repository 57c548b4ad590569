"""`adopter fix`: apply verified rewrites to files, or show them as a unified diff (`--diff`)."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from adopter.commands._common import add_rule_options, add_run_options, session_for, split_list


def register(subparsers: Any) -> None:
    """Add the `fix` subcommand."""
    p = subparsers.add_parser("fix", help="rewrite sites to optimized kernels (verified)",
                              description="Rewrite the sites `adopter check` reports. A file is only written "
                                          "when its rewrite re-parses and re-analyses clean.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders")
    p.add_argument("--diff", action="store_true", help="print a unified diff instead of writing files")
    p.add_argument("--rule", action="append", default=[], metavar="RULE",
                   help="only fix these rules (ids, id prefixes or family numbers; repeatable)")
    add_rule_options(p)
    add_run_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Fix every Python file under the paths to a fixed point; exit 0 done, 1 sites left (or, with
    --diff, changes), 2 input errors (a file that cannot be read or does not parse)."""
    from adopter.commands.fanout import run_files
    from adopter.executors import ExecutorError

    only = split_list(args.rule)
    session, errors = session_for(args, select=only if only else None)
    try:
        outcomes = run_files(args, "fix", session.context)
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    changed = left = 0
    for outcome in outcomes:
        path, result = outcome.path, outcome.payload
        if result is None or "crash" in result or "error" in result:
            why = (outcome.error if result is None else result["error"] if "error" in result
                   else f"{path}: internal error ({result['crash']}); please report it with the file")
            print(f"error: {why}", file=sys.stderr)
            errors = True
            continue
        for line in result["skipped"]:
            print(line, file=sys.stderr)
        left += len(result["skipped"])
        new_source = result["new_source"]
        if new_source is None:
            continue
        changed += 1
        if args.diff:
            source = path.read_bytes().decode("utf-8")
            sys.stdout.writelines(difflib.unified_diff(
                source.splitlines(keepends=True), new_source.splitlines(keepends=True),
                fromfile=f"a/{path}", tofile=f"b/{path}"))
        else:
            path.write_bytes(new_source.encode("utf-8"))
            n = result["applied"]
            print(f"{path}: fixed {n} site{'s' if n != 1 else ''}", file=sys.stderr)
    if errors:
        return 2
    if args.diff:
        return 1 if changed else 0
    return 1 if left else 0
