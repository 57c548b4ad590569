"""What `check`, `fix` and `rules` share: rule options, file discovery, loading rules."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adopter.engine import RuleSet
    from adopter.session import Session

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


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """--jobs, --ray-address, --quiet and --no-cache, the options of commands that run over many files."""
    parser.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                        help="worker processes (default: one per CPU; 1: none, everything in this process)")
    parser.add_argument("--ray-address", metavar="ADDRESS", default=None,
                        help="run on the Ray cluster at ADDRESS (host:port, ray://host:port or auto); "
                             "needs `pip install ray` and the same Adopter on its workers")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    parser.add_argument("--no-cache", action="store_true",
                        help="compute every file again (results are otherwise reused while the file, the "
                             "files it imports from, the rules and Adopter are unchanged)")


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a whole number of worker processes, 1 or more")
    return n


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


def session_for(args: argparse.Namespace, select: list[str] | None = None) -> tuple[Session, bool]:
    """The session of one command: rules per the options (problems printed), the `--target` environment."""
    from adopter.session import RuleContext, Session

    ruleset, errors = load(args, select)
    from adopter.engine import detect_environment

    return Session(RuleContext(tuple(ruleset.rules), tuple(ruleset.problems), detect_environment(args.target))), errors


def python_files(paths: Sequence[str]) -> Iterator[tuple[Path, str | None]]:
    """Every .py file under `paths`, with an error message for a path that does not exist or a
    folder that holds no Python file."""
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path, None
        elif path.is_dir():
            found = [p for p in sorted(path.rglob("*.py"))
                     if not SKIP_DIRS.intersection(p.relative_to(path).parts[:-1])]
            if not found:
                yield path, f"{raw}: no Python (.py) files in this folder; give a .py file or a folder that has some"
            for p in found:
                yield p, None
        else:
            yield path, f"{raw}: no such file or directory; check the path"


def read_source(path: Path) -> tuple[str | None, str | None]:
    """The file's text, or why it cannot be analysed (one line naming the file and what to do)."""
    data, why = read_input(path)
    return (None, why) if data is None else (data.decode("utf-8"), None)


def read_input(path: Path) -> tuple[bytes | None, str | None]:
    """The file's bytes, checked to be UTF-8 text the analysis takes, or why they are not (one line
    naming the file and what to do). A file too large to analyse is not read at all."""
    from adopter.analysis.parse.source import MAX_BYTES

    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_BYTES:
                return None, (f"{path}: too large to analyse ({size / 2**20:.1f} MiB, the limit is "
                              f"{MAX_BYTES / 2**20:g} MiB); leave it out")
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        return None, f"{path}: cannot read it ({exc.strerror or exc}); check its permissions"
    if len(data) > MAX_BYTES:  # it grew while being read
        return None, f"{path}: too large to analyse (over {MAX_BYTES / 2**20:g} MiB); leave it out"
    if b"\0" in data:
        return None, f"{path}: a binary file, not Python source; leave it out"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
    return data, None
