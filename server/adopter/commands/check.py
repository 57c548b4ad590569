"""`adopter check`: report where optimized kernels fit (text, JSON or SARIF); exit codes like ruff."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from adopter.commands._common import add_rule_options, python_files, read_source, session_for

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


def finding_record(f: Any, fixable: bool, reason: str | None) -> dict[str, Any]:
    """One JSON record per finding (lines and columns 1-based, columns in code points, end exclusive)."""
    return {
        "path": f.path, "rule": f.rule_id, "family": f.family, "severity": f.severity.value,
        "title": f.title, "message": f.message, "scope": f.scope_name,
        "range": {"start": {"line": f.span.start_line + 1, "column": f.span.start_col + 1},
                  "end": {"line": f.span.end_line + 1, "column": f.span.end_col + 1}},
        "statements": [[s.start_line + 1, s.end_line + 1] for s in f.stmt_spans],
        "init": [[s.start_line + 1, s.end_line + 1] for s in f.init_spans],
        "fixable": fixable, "targets": list(f.targets), "no_fix_reason": reason,
    }


def sarif(findings: list[tuple[Any, bool, str | None]], rules: tuple[Any, ...]) -> dict[str, Any]:
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
    for f, fixable, _ in findings:
        result: dict[str, Any] = {
            "ruleId": f.rule_id, "level": SARIF_LEVEL[f.severity.value], "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": (f.path or "").replace("\\", "/")},
                "region": {"startLine": f.span.start_line + 1, "startColumn": f.span.start_col + 1,
                           "endLine": f.span.end_line + 1, "endColumn": f.span.end_col + 1},
            }}],
            "properties": {"family": f.family, "scope": f.scope_name, "fixable": fixable},
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
    """Check every Python file under the paths; 0 clean, 1 findings or syntax errors, 2 input errors."""
    from adopter.dsl.types import Severity

    session, errors = session_for(args)
    findings: list[tuple[Any, bool, str | None]] = []  # (finding, fixable by `fix`, why not)
    broken = analysed_files = 0  # files with a syntax error; files analysed at all
    for path, missing in python_files(args.paths):
        text, why = (None, missing) if missing else read_source(path)
        if text is None:
            print(f"error: {why}", file=sys.stderr)
            errors = True
            continue
        analysed = session.analysed(text, str(path))
        analysed_files += 1
        for p in analysed.problems:
            if p.severity == Severity.ERROR or args.format == "text":
                print(p.render(), file=sys.stderr)
        broken += not analysed.parses
        for f in analysed.findings:
            decision = session.planned(analysed, f)
            findings.append((f, decision.fixable, decision.reason))
    if args.format == "json":
        json.dump([finding_record(*item) for item in findings], sys.stdout, indent=2)
        print()
    elif args.format == "sarif":
        json.dump(sarif(findings, session.rules), sys.stdout, indent=2)
        print()
    elif analysed_files:
        print_text(findings, broken)
    if errors:
        return 2
    return 1 if findings or broken else 0


def print_text(findings: list[tuple[Any, bool, str | None]], broken: int) -> None:
    """One line per finding, then the summary (which counts files that do not parse)."""
    for f, fixable, reason in findings:
        fix = " [fixable]" if fixable else (f" (no automatic fix: {reason})" if reason else "")
        print(f"{f.path}:{f.span.start_line + 1}:{f.span.start_col + 1}: {f.rule_id} "
              f"(family {f.family}) {f.message}{fix}")
    parts = []
    if findings:
        n, k = len(findings), sum(fixable for _, fixable, _ in findings)
        parts.append(f"Found {n} site{'s' if n != 1 else ''} ({k} fixable with `adopter fix`)")
    if broken:
        parts.append(f"{broken} file{'s' if broken != 1 else ''} with a syntax error (analysed as far as "
                     "it parses; see above)")
    print("; ".join(parts) + "." if parts else "No sites found.")
