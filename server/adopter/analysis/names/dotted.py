"""The dotted name a tree-sitter identifier/attribute chain spells (`torch.nn.functional.gelu`).

A leaf module, so that the readers `names.symbols` itself imports (`dropout_form`, `function_classes`) share one
reading with every other module; `names.ast_dotted` is the same for stdlib `ast` trees.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText


def dotted_text(node: Node | None, src: SourceText) -> str | None:
    """The dotted name `a.b.c` an identifier/attribute chain spells, or None for anything else."""
    parts: list[str] = []
    while node is not None:
        if node.type == "identifier":
            parts.append(src.text(node))
            return ".".join(reversed(parts))
        if node.type != "attribute":
            return None
        attr = node.child_by_field_id(Field.ATTRIBUTE)
        if attr is None:
            return None
        parts.append(src.text(attr))
        node = node.child_by_field_id(Field.OBJECT)
    return None
