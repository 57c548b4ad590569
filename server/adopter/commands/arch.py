"""`adopter arch PATH[:Class] [--format dsl|json]`: print the architecture extracted from Python files."""

from __future__ import annotations

import argparse
import sys
from enum import Enum
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "arch",
        help="print the architecture (nn.Module classes) of a Python file or folder",
        description="Statically extract every nn.Module of a Python file (or of each .py file of a folder) "
        "and print it in the Adopter DSL or as JSON. PATH:Class prints one class.",
    )
    p.add_argument("path", metavar="PATH[:Class]", help="a .py file, a folder, or FILE:ClassName")
    p.add_argument("--format", choices=("dsl", "json"), default="dsl", help="output format (default: dsl)")
    p.add_argument("--problems", action="store_true", help="also print analysis problems (to stderr)")
    p.add_argument(
        "--all", action="store_true", help="print module-level functions and top-level code too (DSL format)"
    )
    p.set_defaults(run=run)


def _split(arg: str) -> tuple[Path, str | None]:
    """`file.py:Class` → (file.py, Class) (`file.py:Outer.Inner` for a nested class, `file.py:build.<locals>.Block`
    for one defined in a function); a bare path (even with a drive colon) → (path, None)."""
    head, sep, tail = arg.rpartition(":")
    if sep and all(part.isidentifier() or part == "<locals>" for part in tail.split(".")) and not Path(arg).exists():
        return Path(head), tail
    return Path(arg), None


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _to_json(obj: Any) -> Any:
    import dataclasses

    data = dataclasses.asdict(obj)
    return _plain(data)


def _error(message: str) -> int:
    print(f"adopter arch: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    import json

    from adopter.commands._common import read_source
    from adopter.dsl.types import Architecture, ModuleFile, Severity
    from adopter.session import RuleContext, Session

    path, class_name = _split(args.path)
    if not path.exists():
        return _error(f"{path}: no such file or directory")
    if path.is_dir():
        if class_name is not None:
            return _error(f"{path} is a folder; PATH:Class needs a file")
        files = sorted(p for p in path.rglob("*.py") if p.is_file())
        if not files:
            return _error(f"{path}: no .py files in this folder")
    else:
        files = [path]
    results: list[ModuleFile] = []
    status = 0
    session = Session(RuleContext(()))  # architectures only: no rules to match
    for f in files:
        text, why = read_source(f)
        if text is None:
            if len(files) == 1:
                return _error(str(why))
            print(f"adopter arch: {why}", file=sys.stderr)
            status = 2
            continue
        mf = session.analyse(text, str(f))
        broken = [p for p in mf.problems if p.severity == Severity.ERROR]
        if broken:  # the classes that still parse are printed; say the rest is missing
            print(f"adopter arch: warning: {broken[0].render()}; classes after it may be missing or partial",
                  file=sys.stderr)
        if class_name is not None:
            chosen: tuple[Architecture, ...] = tuple(a for a in mf.architectures if a.name == class_name)
            if not chosen:
                names = ", ".join(a.name for a in mf.architectures) or "none"
                return _error(f"{f}: no nn.Module class {class_name!r} (classes found: {names})")
            mf = ModuleFile(mf.path, chosen, mf.problems, ())
        if args.problems:
            for p in mf.problems:
                print(p.render(), file=sys.stderr)
        results.append(mf)
    if args.format == "json":
        payload = [_to_json(mf) for mf in results]
        print(json.dumps(payload[0] if len(payload) == 1 and not path.is_dir() else payload, indent=2))
        return status
    from adopter.dsl import format_architecture, format_module_file

    first = True
    for mf in results:
        if len(files) > 1:
            print(f"{'' if first else chr(10)}# {mf.path}")
        first = False
        if args.all:
            print(format_module_file(mf))
        elif mf.architectures:
            print("\n\n".join(format_architecture(a) for a in mf.architectures))
        else:
            # A comment in the DSL: the output stays a valid document.
            print(f"# no nn.Module classes in {mf.path} (--all also prints its functions and top-level code)")
    return status
