"""The identifier nodes of a subtree, read one way for every analysis.

Two readings: every identifier node under a node (`identifier_nodes`: a name mentioned anywhere, attribute
names included), and the bare names an expression reads (`read_names`: `cfg.dims` reads `cfg`, not `dims`).
The names an assignment or loop target binds are `names.assignments.target_leaves`.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.assignments import target_leaves
from adopter.analysis.parse.source import Field


def identifier_nodes(node: Node) -> list[Node]:
    """Every `identifier` node of `node`'s subtree, `node` included."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.append(n)
        stack.extend(n.named_children)
    return out


def read_names(node: Node) -> list[Node]:
    """The bare names an expression reads: an attribute contributes its object only (`cfg.dims` reads `cfg`)."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.append(n)
        elif n.type == "attribute":
            obj = n.child_by_field_id(Field.OBJECT)
            if obj is not None:
                stack.append(obj)
        else:
            stack.extend(n.named_children)
    return out


def bound_identifiers(target: Node) -> list[Node]:
    """The plain names a target binds (`t, (c, *n)` -> `t`, `c`, `n`); attributes and subscripts bind none."""
    return [leaf for leaf in target_leaves(target) if leaf.type == "identifier"]
