"""`adopter fix`: apply verified rewrites to files, or show them as a unified diff (`--diff`)."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from adopter.commands._common import add_rule_options, load, python_files, split_list


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
    """Fix every Python file under the paths; exit 0 done, 1 sites left (or, with --diff, changes), 2 errors."""
    from adopter.engine import detect_environment
    from adopter.synth.fixing import fix_source

    only = split_list(args.rule)
    ruleset, errors = load(args, select=only if only else None)
    env = detect_environment(args.target)
    changed = left = 0
    for path, missing in python_files(args.paths):
        if missing:
            print(f"error: {missing}", file=sys.stderr)
            errors = True
            continue
        try:
            source = path.read_bytes().decode("utf-8")
        except OSError as exc:
            print(f"error: {path}: {exc.strerror or exc}", file=sys.stderr)
            errors = True
            continue
        except UnicodeDecodeError:
            print(f"{path}: not UTF-8 text; skipped", file=sys.stderr)
            continue
        outcome = fix_source(source, str(path), ruleset.rules, env)
        for s in outcome.skipped:
            f = s.finding
            print(f"{path}:{f.span.start_line + 1}:{f.span.start_col + 1}: {f.rule_id}: not fixed: {s.reason}",
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
