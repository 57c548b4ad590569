"""The dotted name a Python `ast` expression spells (`torch.nn.functional.gelu`), for the readers that work on `ast`
trees (other files' summaries, formula functions and norms)."""

from __future__ import annotations

import ast


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for `Name`/`Attribute` chains, None for anything else (a call, a subscript)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_name(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None
