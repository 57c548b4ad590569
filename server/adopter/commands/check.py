"""`adopter check`: report where optimized kernels fit (text, JSON or SARIF); exit codes like ruff."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from adopter.commands._common import add_rule_options, add_run_options, session_for

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}


def register(subparsers: Any) -> None:
    """Add the `check` subcommand."""
    p = subparsers.add_parser("check", help="find where optimized kernels fit",
                              description="Find where optimized DL kernels fit. Exit 0: clean, 1: findings, "
                                          "2: usage or errors.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    add_rule_options(p)
    add_run_options(p)
    p.set_defaults(run=run)


def sarif(records: list[dict[str, Any]], rules: tuple[Any, ...]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of the findings' `records` (`filework.finding_record`)."""
    from adopter import __version__

    index = {r.id: i for i, r in enumerate(rules)}
    driver_rules = [{
        "id": r.id, "name": r.id, "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.message},
        "defaultConfiguration": {"level": SARIF_LEVEL[r.severity.value]},
        "properties": {"family": r.family},
    } for r in rules]
    results = []
    for f in records:
        start, end = f["range"]["start"], f["range"]["end"]
        result: dict[str, Any] = {
            "ruleId": f["rule"], "level": SARIF_LEVEL[f["severity"]], "message": {"text": f["message"]},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": (f["path"] or "").replace("\\", "/")},
                "region": {"startLine": start["line"], "startColumn": start["column"],
                           "endLine": end["line"], "endColumn": end["column"]},
            }}],
            "properties": {"family": f["family"], "scope": f["scope"], "fixable": f["fixable"]},
        }
        if f["rule"] in index:
            result["ruleIndex"] = index[f["rule"]]
        results.append(result)
    return {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [{
        "tool": {"driver": {"name": "adopter", "version": __version__,
                            "informationUri": "https://github.com/adopter/adopter", "rules": driver_rules}},
        "results": results,
        # Adopter counts columns in code points; SARIF's default would be UTF-16 code units.
        "columnKind": "unicodeCodePoints",
    }]}


def run(args: argparse.Namespace) -> int:
    """Check every Python file under the paths; 0 clean, 1 findings or syntax errors, 2 input errors."""
    from adopter.commands.fanout import run_files
    from adopter.executors import ExecutorError

    session, errors = session_for(args)
    try:
        outcomes = run_files(args, "check", session.context)
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    records: list[dict[str, Any]] = []
    broken = analysed_files = 0  # files with a syntax error; files analysed at all
    for outcome in outcomes:
        result = outcome.payload
        if result is None or "crash" in result:
            why = outcome.error if result is None else (f"{outcome.path}: internal error ({result['crash']}); "
                                                        "please report it with the file")
            print(f"error: {why}", file=sys.stderr)
            errors = True
            continue
        analysed_files += 1
        for is_error, rendered in result["problems"]:
            if is_error or args.format == "text":
                print(rendered, file=sys.stderr)
        broken += not result["parses"]
        records.extend(result["findings"])
    # One write: `json.dump` with an indent writes each token on its own (131k writes for transformers).
    if args.format == "json":
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    elif args.format == "sarif":
        sys.stdout.write(json.dumps(sarif(records, session.rules), indent=2) + "\n")
    elif analysed_files:
        print_text(records, broken)
    if errors:
        return 2
    return 1 if records or broken else 0


def print_text(records: list[dict[str, Any]], broken: int) -> None:
    """One line per finding, then the summary (which counts files that do not parse)."""
    shared = Counter((f["path"], f["range"]["start"]["line"], f["range"]["start"]["column"], f["rule"]) for f in records)
    for f in records:
        reason = f["no_fix_reason"]
        fix = " [fixable]" if f["fixable"] else (f" (no automatic fix: {reason})" if reason else "")
        start = f["range"]["start"]
        # Sites sharing a forward line (pairs of one Sequential's items) are told apart by their __init__ lines.
        where = (f" (__init__ lines {', '.join(f'{a}-{b}' if a != b else str(a) for a, b in f['init'])})"
                 if shared[(f["path"], start["line"], start["column"], f["rule"])] > 1 and f["init"] else "")
        print(f"{f['path']}:{start['line']}:{start['column']}: {f['rule']} "
              f"(family {f['family']}){where} {f['message']}{fix}")
    parts = []
    if records:
        n, k = len(records), sum(bool(f["fixable"]) for f in records)
        parts.append(f"Found {n} site{'s' if n != 1 else ''} ({k} fixable with `adopter fix`)")
    if broken:
        parts.append(f"{broken} file{'s' if broken != 1 else ''} with a syntax error (analysed without the "
                     "statements that do not parse; see above)")
    print("; ".join(parts) + "." if parts else "No sites found.")
