"""`adopter check`: report where optimized kernels fit (text, JSON or SARIF); exit codes like ruff."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from adopter.commands._common import add_rule_options, load, python_files

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
    p.set_defaults(run=run)


def finding_record(f: Any) -> dict[str, Any]:
    """One JSON record per finding (lines and columns 1-based, columns in code points, end exclusive)."""
    return {
        "path": f.path, "rule": f.rule_id, "family": f.family, "severity": f.severity.value,
        "title": f.title, "message": f.message, "scope": f.scope_name,
        "range": {"start": {"line": f.span.start_line + 1, "column": f.span.start_col + 1},
                  "end": {"line": f.span.end_line + 1, "column": f.span.end_col + 1}},
        "statements": [[s.start_line + 1, s.end_line + 1] for s in f.stmt_spans],
        "init": [[s.start_line + 1, s.end_line + 1] for s in f.init_spans],
        "fixable": f.fixable, "targets": list(f.targets), "no_fix_reason": f.no_fix_reason,
    }


def sarif(findings: list[Any], rules: tuple[Any, ...]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of `findings`."""
    from adopter import __version__

    index = {r.id: i for i, r in enumerate(rules)}
    driver_rules = [{
        "id": r.id, "name": r.id, "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.message},
        "defaultConfiguration": {"level": SARIF_LEVEL[r.severity.value]},
        "properties": {"family": r.family},
    } for r in rules]
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.rule_id, "level": SARIF_LEVEL[f.severity.value], "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": (f.path or "").replace("\\", "/")},
                "region": {"startLine": f.span.start_line + 1, "startColumn": f.span.start_col + 1,
                           "endLine": f.span.end_line + 1, "endColumn": f.span.end_col + 1},
            }}],
            "properties": {"family": f.family, "scope": f.scope_name, "fixable": f.fixable},
        }
        if f.rule_id in index:
            result["ruleIndex"] = index[f.rule_id]
        results.append(result)
    return {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [{
        "tool": {"driver": {"name": "adopter", "version": __version__,
                            "informationUri": "https://github.com/adopter/adopter", "rules": driver_rules}},
        "results": results,
        # Adopter counts columns in code points; SARIF's default would be UTF-16 code units.
        "columnKind": "unicodeCodePoints",
    }]}


def run(args: argparse.Namespace) -> int:
    """Check every Python file under the paths."""
    from adopter.analysis import analyse
    from adopter.dsl.types import Severity
    from adopter.engine import check, detect_environment

    ruleset, rule_errors = load(args)
    env = detect_environment(args.target)
    findings: list[Any] = []
    errors = rule_errors
    unreadable = False
    for path, missing in python_files(args.paths):
        if missing:
            print(f"error: {missing}", file=sys.stderr)
            errors = True
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            print(f"error: {path}: {exc.strerror}", file=sys.stderr)
            errors = True
            continue
        module_file = analyse(data, str(path))
        result = check(module_file, ruleset.rules, env)
        for p in (*module_file.problems, *result.problems):
            if p.severity == Severity.ERROR or args.format == "text":
                print(p.render(), file=sys.stderr)
            # Like ruff: a file that cannot be analysed (syntax error, binary) fails the check.
            unreadable = unreadable or p.severity == Severity.ERROR
        findings.extend(result.findings)
    if args.format == "json":
        json.dump([finding_record(f) for f in findings], sys.stdout, indent=2)
        print()
    elif args.format == "sarif":
        json.dump(sarif(findings, ruleset.rules), sys.stdout, indent=2)
        print()
    else:
        for f in findings:
            fix = " [fixable]" if f.fixable else (f" (no automatic fix: {f.no_fix_reason})" if f.no_fix_reason else "")
            print(f"{f.path}:{f.span.start_line + 1}:{f.span.start_col + 1}: {f.rule_id} "
                  f"(family {f.family}) {f.message}{fix}")
        fixable = sum(f.fixable for f in findings)
        if findings:
            print(f"Found {len(findings)} site{'s' if len(findings) != 1 else ''} ({fixable} fixable with "
                  "`adopter fix`).")
        else:
            print("No sites found.")
    if errors:
        return 2
    return 1 if findings or unreadable else 0
