"""`adopter fix`: apply verified rewrites to files, or show them as a unified diff (`--diff`)."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from adopter.commands._common import add_rule_options, python_files, read_source, session_for, split_list


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
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Fix every Python file under the paths to a fixed point; exit 0 done, 1 sites left (or, with
    --diff, changes), 2 input errors (a file that cannot be read or does not parse)."""
    only = split_list(args.rule)
    session, errors = session_for(args, select=only if only else None)
    changed = left = 0
    for path, missing in python_files(args.paths):
        source, why = (None, missing) if missing else read_source(path)
        if source is None:
            print(f"error: {why}", file=sys.stderr)
            errors = True
            continue
        outcome = session.fix(source, str(path))
        if not outcome.parses:
            first = next((p for p in outcome.problems if p.severity.value == "error" and p.span is not None), None)
            where = f":{first.span.start_line + 1}:{first.span.start_col + 1}" if first and first.span else ""
            print(f"error: {path}{where}: the file does not parse ({first.message if first else 'syntax error'}); "
                  "fix the syntax error first, nothing was rewritten", file=sys.stderr)
            errors = True
            continue
        for f, reason in outcome.skipped:
            print(f"{path}:{f.span.start_line + 1}:{f.span.start_col + 1}: {f.rule_id}: not fixed: {reason}",
                  file=sys.stderr)
        left += len(outcome.skipped)
        if not outcome.changed:
            continue
        changed += 1
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(
                source.splitlines(keepends=True), outcome.new_source.splitlines(keepends=True),
                fromfile=f"a/{path}", tofile=f"b/{path}"))
        else:
            path.write_bytes(outcome.new_source.encode("utf-8"))
            print(f"{path}: fixed {len(outcome.applied)} site{'s' if len(outcome.applied) != 1 else ''}",
                  file=sys.stderr)
    if errors:
        return 2
    if args.diff:
        return 1 if changed else 0
    return 1 if left else 0
