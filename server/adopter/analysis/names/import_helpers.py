"""Module-level names bound by an import helper: `nn = _safe_import("torch.nn")`.

A package that keeps torch optional imports it through a function of its own or of a library
(`_safe_import` in sktime, `try_import` in deeptime, `LazyImport` in auto-round, `importlib.import_module`):
called with the module's dotted name as a string literal, the helper returns that module (or, for a dotted path
past a module, the object it names: `_safe_import("torch.nn.Module")`). Where the file then uses the name, it uses
it as that module, so the name is an alias of the dotted path, as `import torch.nn as nn` would make it.

The helper is recognised by its name (a word `import` in it, `import_module`, `importorskip`) and must be imported
or reached through an imported module (`importlib.import_module`), never a function of this file; `__import__`
is not one (it returns the top-level package). Only a single positional string argument that is a dotted
identifier path qualifies; keyword arguments (`pkg_name=...`, `return_object=...`) do not change what is named.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText

_LITERAL = re.compile(r"([\"'])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\1")
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _is_import_helper_name(name: str) -> bool:
    if name.startswith("__"):
        return False
    words = {w.lower() for part in name.split("_") for w in _WORD.findall(part)}
    return "import" in words or "importorskip" in words


def import_helper_target(node: Node | None, src: SourceText, is_imported: Callable[[str], bool]) -> str | None:
    """The dotted path an import-helper call names (`"torch.nn"` for `_safe_import("torch.nn")`), else None.

    `is_imported(root)` says whether the callee's root name is imported in the file."""
    if node is None or node.type != "call":
        return None
    func = node.child_by_field_id(Field.FUNCTION)
    args = node.child_by_field_id(Field.ARGUMENTS)
    if func is None or args is None or func.type not in ("identifier", "attribute"):
        return None
    callee = src.text(func)
    if not _is_import_helper_name(callee.rsplit(".", 1)[-1]) or not is_imported(callee.split(".")[0]):
        return None
    items = [a for a in args.named_children if a.type != "comment"]
    positional = [a for a in items if a.type != "keyword_argument"]
    if len(positional) != 1 or positional[0].type != "string":
        return None
    literal = _LITERAL.fullmatch(src.text(positional[0]))
    return literal.group(2) if literal else None
