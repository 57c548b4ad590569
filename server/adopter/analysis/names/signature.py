"""Function signatures: parameters of a `def` as `Param` values."""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import KEYWORD_ONLY, POSITIONAL, VAR_KEYWORD, VAR_POSITIONAL, Param


def params(function: Node, src: SourceText) -> tuple[Param, ...]:
    """Every parameter of `function`, including `self`, in order."""
    # Memoised per file: an inlined helper's signature is read at every call site.
    key = ("params", function.start_byte)
    found = src.memo.get(key)
    if found is None:
        found = src.memo[key] = _params(function, src)
    return found  # type: ignore[return-value]


def _params(function: Node, src: SourceText) -> tuple[Param, ...]:
    node = function.child_by_field_id(Field.PARAMETERS)
    if node is None:
        return ()
    out: list[Param] = []
    keyword_only = False
    for child in node.named_children:
        kind = child.type
        default: str | None = None
        if kind == "keyword_separator":
            keyword_only = True
            continue
        if kind == "positional_separator":
            continue
        if kind in ("default_parameter", "typed_default_parameter"):
            name_node = child.child_by_field_id(Field.NAME)
            value = child.child_by_field_id(Field.VALUE)
            default = src.norm(value) if value is not None else None
        elif kind == "typed_parameter":
            name_node = child.named_children[0] if child.named_child_count else None
        else:
            name_node = child
        if name_node is None:
            continue
        if name_node.type == "list_splat_pattern":
            keyword_only = True
            out.append(Param(_inner_name(name_node, src), VAR_POSITIONAL))
        elif name_node.type == "dictionary_splat_pattern":
            out.append(Param(_inner_name(name_node, src), VAR_KEYWORD))
        elif name_node.type == "identifier":
            kind_ = KEYWORD_ONLY if keyword_only else POSITIONAL
            out.append(Param(src.text(name_node), kind_, default))
    return tuple(out)


def _inner_name(node: Node, src: SourceText) -> str:
    for child in node.named_children:
        if child.type == "identifier":
            return src.text(child)
    return src.text(node).lstrip("*")


def function_name(function: Node, src: SourceText) -> str:
    name = function.child_by_field_id(Field.NAME)
    return src.text(name) if name is not None else "<lambda>"
