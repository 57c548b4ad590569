"""`adopter verify`: run each fix of a class against the original (same outputs and gradients?) and time it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from adopter.commands._common import add_rule_options, read_source, session_for, split_list


def register(subparsers: Any) -> None:
    """Add the `verify` subcommand."""
    p = subparsers.add_parser(
        "verify", help="run each fix against the original class and measure its gain",
        description="For each fix `adopter fix` would write in the class: build the original and the rewritten "
                    "class (your code runs, in a subprocess with a timeout), load the original's state dict "
                    "with strict=True, compare outputs and every gradient, then time forward+backward. "
                    "Nothing is written. Exit 0: every fix is equivalent, 1: one is not, 2: bad input.")
    p.add_argument("where", metavar="PATH[:Class]", help="a Python file, optionally one class of it")
    p.add_argument("--rule", action="append", default=[], metavar="RULE",
                   help="only these rules (ids, id prefixes or family numbers; comma-separated or repeated)")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32")
    p.add_argument("--factory", metavar="module:fn", help="fn(cls) returns the model, or (model, inputs)")
    p.add_argument("--inputs", metavar="module:fn", help="fn(model) returns the inputs (tensor, tuple or dict)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S", help="stop the run after S seconds")
    p.add_argument("--repeats", type=int, default=10, metavar="N", help="timed pairs per fix (0: no timing)")
    p.add_argument("--python", metavar="PATH", help="the Python that runs the model (default: this one)")
    add_rule_options(p, select=False)
    p.set_defaults(run=run)


def _target(raw: str) -> tuple[Path, str | None]:
    path, sep, name = raw.rpartition(":")
    if sep and all(part.isidentifier() for part in name.split(".")) and path and not Path(raw).exists():
        return Path(path), name
    return Path(raw), None


def run(args: argparse.Namespace) -> int:
    """Exit 0 every fix equivalent (or none to run), 1 one is not, 2 bad input (a class not built)."""
    from adopter.verify.cases import fix_cases
    from adopter.verify.report import as_json, text_line, unfixed_line
    from adopter.verify.runner import Options, RunFailed, run_cases

    path, class_name = _target(args.where)
    if args.timeout <= 0 or args.repeats < 0:
        print("error: --timeout must be positive and --repeats at least 0", file=sys.stderr)
        return 2
    if not path.is_file():
        print(f"error: {path}: no such file; give a Python file, optionally with :ClassName", file=sys.stderr)
        return 2
    source, why = read_source(path)
    if source is None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    session, errors = session_for(args, select=split_list(args.rule))
    if errors:
        return 2
    analysed = session.analysed(source, str(path))
    if not analysed.parses:
        print(f"error: {path}: the file does not parse; fix the syntax error first", file=sys.stderr)
        return 2
    names = [a.name for a in analysed.module_file.architectures]
    if class_name is not None and class_name not in names:
        print(f"error: {path} has no nn.Module class {class_name} (it has: {', '.join(names[:8]) or 'none'})",
              file=sys.stderr)
        return 2
    cases, unfixed = fix_cases(session, source, str(path), class_name=class_name)
    result: dict[str, Any] = {"rows": []}
    if cases:
        options = Options(device=args.device, dtype=args.dtype, factory=args.factory, inputs=args.inputs,
                          timeout=args.timeout, repeats=args.repeats, python=args.python)
        try:
            result = run_cases(path, source, cases, options)
        except RunFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    rows = result["rows"]
    if args.format == "json":
        print(json.dumps(as_json(str(path), result, unfixed), indent=2))
    else:
        for row in rows:
            print(text_line(str(path), row))
        for u in unfixed:
            print(unfixed_line(str(path), u))
        if not cases:
            print(f"{path}: no fix to verify" + (f" in {class_name}" if class_name else ""), file=sys.stderr)
    return exit_code(rows)


def exit_code(rows: list[dict[str, Any]]) -> int:
    """1 when a fix that ran is not equivalent; else 2 when a class could not be built; else 0."""
    if any("not_built" not in r and not r.get("equivalent") for r in rows):
        return 1
    return 2 if any("not_built" in r for r in rows) else 0
