"""The `adopter` command line: one subcommand module per verb in `adopter.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from adopter import __version__, _native

# Subcommand modules, each with `register(subparsers)` and `run(args) -> int`. They import their
# heavy dependencies inside `run`, so `adopter --help` stays fast.
COMMANDS = ("arch", "check", "fix", "verify", "rules", "wham", "lsp", "demo")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `only` that one (which then imports no other command's module:
    `adopter lsp` starts without the CLI commands' imports)."""
    parser = argparse.ArgumentParser(
        prog="adopter",
        description="Find where optimized DL kernels fit in PyTorch model code; search accelerator designs.",
    )
    parser.add_argument("--version", action="version", version=f"adopter {__version__} ({_native.describe()})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        try:
            module = importlib.import_module(f"adopter.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"adopter.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in given if not a.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS and given[0] == first else None)
    args = parser.parse_args(given)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
