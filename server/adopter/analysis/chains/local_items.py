"""An item of a function's `nn.Sequential(...)` given as a plain local: the value that built it.

A factory may name a layer before handing it to the Sequential it returns:

    def conv_bn(inp, oup, stride):
        conv = nn.Conv2d(inp, oup, 3, stride, 1, bias=False)
        return nn.Sequential(conv, nn.BatchNorm2d(oup), nn.LeakyReLU(0.1))

The Sequential runs that layer exactly where the name stands, so the item reads as its constructor, provided the
name holds nothing else there: bound once, by a plain assignment among the function's own top-level statements
before the Sequential's statement, and read nowhere else in the function (not a parameter, not captured by a
nested definition, not passed, changed or reused elsewhere: then the module is shared and the chain is not
only this Sequential's).
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.identifiers import identifier_nodes
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText

_VALUES = ("call", "conditional_expression")  # what builds a layer as written inline


def local_item_value(item: Node, call: Node, function: Node, src: SourceText) -> Node | None:
    """The value the local `item` (an argument of the Sequential `call` in `function`) was built by, or None."""
    if item.type != "identifier":
        return None
    body = function.child_by_field_id(Field.BODY)
    if body is None:
        return None
    name = src.text(item)
    value: Node | None = None
    for stmt in body.named_children:
        if stmt.end_byte > call.start_byte:
            break
        bound = _assigned(stmt, name, src)
        if bound is not None:
            if value is not None:
                return None  # bound twice: which layer runs is the later one, and the earlier may run too
            value = bound
    if value is None or value.type not in _VALUES:
        return None
    # every other occurrence of the name (a parameter, a rebinding, a use, a nested definition's capture) refuses
    uses = [n for n in _named(function, name.encode(), src) if n != item]
    target = value.parent.child_by_field_id(Field.LEFT) if value.parent is not None else None
    return value if [n for n in uses if n != target] == [] else None


def _assigned(stmt: Node, name: str, src: SourceText) -> Node | None:
    """The value of `name = value` when `stmt` is that statement alone, else None."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    expr = stmt.named_children[0]
    if expr.type != "assignment":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    if left is None or right is None or left.type != "identifier" or src.text(left) != name:
        return None
    return right if expr.child_by_field_name("type") is None else None


def _named(node: Node, name: bytes, src: SourceText) -> list[Node]:
    """The identifiers spelled `name` under `node` (the function itself: its parameters and nested scopes too)."""
    if name not in code_bytes(src, node):
        return []
    return [n for n in identifier_nodes(node) if src.text(n).encode() == name]
