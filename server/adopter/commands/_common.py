"""What `check`, `fix` and `rules` share: rule options, file discovery, loading rules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adopter.engine import RuleSet

SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", ".mypy_cache", ".pytest_cache", ".cache"}


def add_rule_options(parser: argparse.ArgumentParser, *, select: bool = True) -> None:
    """--rules, --select/--ignore and --target, the options every rule command takes."""
    parser.add_argument("--rules", action="append", default=[], metavar="PATH",
                        help="extra rule file or folder (repeatable); .adopter/rules/ of the cwd is read too")
    if select:
        parser.add_argument("--select", action="append", default=[], metavar="RULES",
                            help="only these rules: ids, id prefixes or family numbers, comma-separated")
        parser.add_argument("--ignore", action="append", default=[], metavar="RULES",
                            help="skip these rules: ids, id prefixes or family numbers, comma-separated")
    parser.add_argument("--target", choices=("auto", "cpu", "cuda"), default="auto",
                        help="the device kernels should run on (default: auto-detect)")


def split_list(values: Sequence[str]) -> list[str] | None:
    items = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return items or None


def load(args: argparse.Namespace, select: list[str] | None = None) -> tuple[RuleSet, bool]:
    """Load rules per the options; print rule-file problems; return (RuleSet, had_errors)."""
    from adopter.dsl.types import Severity
    from adopter.engine import load_rules, workspace_rule_paths

    extra = [*workspace_rule_paths(Path.cwd()), *args.rules]
    ruleset = load_rules(extra, select=select if select is not None else split_list(getattr(args, "select", [])),
                         ignore=split_list(getattr(args, "ignore", [])))
    for p in ruleset.problems:
        print(p.render(), file=sys.stderr)
    return ruleset, any(p.severity == Severity.ERROR for p in ruleset.problems)


def python_files(paths: Sequence[str]) -> Iterator[tuple[Path, str | None]]:
    """Every .py file under `paths`, with an error message for paths that do not exist."""
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path, None
        elif path.is_dir():
            for p in sorted(path.rglob("*.py")):
                if not SKIP_DIRS.intersection(p.relative_to(path).parts[:-1]):
                    yield p, None
        else:
            yield path, f"{raw}: no such file or directory"
