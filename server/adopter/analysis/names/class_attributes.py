"""Class attributes that name a layer class: `class Block(nn.Module): act_layer = nn.GELU` read as
`self.act_layer()` in `__init__`.

Configurable blocks keep their default layer classes in the class body so that a subclass can swap one
(`class ReluBlock(Block): act_layer = nn.ReLU`). Read statically, `self.act_layer` is the first class in the
method resolution order whose body assigns `act_layer` at its top level, unless some method of those
classes assigns `self.act_layer` (an instance attribute then shadows it). This module reads one class
body; the caller walks the order.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText

__all__ = ["assigns_instance_attribute", "class_attribute"]


def class_attribute(class_node: Node, name: str, src: SourceText) -> Node | None:
    """The value of the last top-level `name = value` in the class body, else None."""
    body = class_node.child_by_field_id(Field.BODY)
    found: Node | None = None
    for stmt in body.named_children if body is not None else ():
        if stmt.type != "expression_statement" or stmt.named_child_count != 1:
            continue
        assignment = stmt.named_children[0]
        if assignment.type != "assignment":
            continue
        left, right = assignment.child_by_field_id(Field.LEFT), assignment.child_by_field_id(Field.RIGHT)
        if left is not None and right is not None and left.type == "identifier" and src.text(left) == name:
            found = right
    return found


def assigns_instance_attribute(class_node: Node, name: str, src: SourceText) -> bool:
    """Whether any text of the class assigns `<receiver>.name` (`self.act_layer = ...`, `setattr`)."""
    text = src.text(class_node)
    return re.search(rf"\.{re.escape(name)}\s*(?:=(?!=)|[-+*/|&]=)", text) is not None or "setattr(" in text
