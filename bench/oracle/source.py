"""A model file's syntax tree, parsed once per process (the upgrade's class lookups, family 9's parameter reading)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parsed(path: str) -> ast.Module | None:
    """The file's tree; None when it cannot be read or parsed."""
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
