"""`adopter rules`: list the loaded rules, or generate the rule reference (`--docs docs/rules.md`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from adopter.commands._common import load


def register(subparsers: Any) -> None:
    """Add the `rules` subcommand."""
    p = subparsers.add_parser("rules", help="list rules, or write their reference docs")
    p.add_argument("--docs", metavar="OUT", help="write the Markdown rule reference to OUT ('-' for stdout)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--rules", action="append", default=[], metavar="PATH", help="extra rule file or folder")
    p.add_argument("--select", action="append", default=[], metavar="RULES")
    p.add_argument("--ignore", action="append", default=[], metavar="RULES")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """List or document the rules; exit 2 when a rule file is broken."""
    from adopter.engine.rule_docs import rules_markdown

    ruleset, errors = load(args)
    if args.docs:
        text = rules_markdown(ruleset.rules)
        if args.docs == "-":
            sys.stdout.write(text)
        else:
            Path(args.docs).write_text(text, encoding="utf-8")
            print(f"wrote {args.docs} ({len(ruleset.rules)} rules)", file=sys.stderr)
    elif args.format == "json":
        json.dump([{"id": r.id, "family": r.family, "severity": r.severity.value, "title": r.title,
                    "scope": r.scope, "fixable": r.replacement is not None,
                    "targets": [t.name for t in r.targets], "path": r.path} for r in ruleset.rules],
                  sys.stdout, indent=2)
        print()
    else:
        for r in sorted(ruleset.rules, key=lambda r: (r.family, r.id)):
            fix = "fix" if r.replacement else "   "
            print(f"{r.id:40} family {r.family:2}  {r.severity.value:7}  {fix}  {r.title}")
    return 2 if errors else 0
