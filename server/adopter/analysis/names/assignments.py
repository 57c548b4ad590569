"""Assignment statements read one way for every analysis: chained targets, the value, unpacking.

`__init__`'s bindings (`scope/bindings.py`) and `forward`'s data flow (`flow/`) both walk `a = b = x`,
`a, (b, *c) = x, y, z` and `[a, b] = x, y` through these functions, so the two never disagree on which
target receives which value.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.parse.source import Field

# Node types that bind several names at once, and those that wrap one target.
_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "expression_list", "list"})
_WRAPPERS = frozenset({"list_splat_pattern", "list_splat", "parenthesized_expression"})
# Values whose elements are written out, so that unpacking them pairs target and element statically.
_DISPLAYS = frozenset({"expression_list", "tuple"})


def read_assignment(node: Node) -> tuple[list[Node], Node] | None:
    """`a = b, c = x` -> ([a, (b, c)], x): the targets of an `assignment` node from left to right (each
    may be a pattern), following the chain to the one value; None for an annotation (`x: int`)."""
    targets: list[Node] = []
    right: Node | None = node
    while right is not None and right.type == "assignment":
        left = right.child_by_field_id(Field.LEFT)
        if left is not None:
            targets.append(left)
        right = right.child_by_field_id(Field.RIGHT)
    if right is None or not targets:
        return None
    return targets, right


def target_leaves(target: Node) -> list[Node]:
    """The single targets a target binds, in order: `a, (b, [c, *d])` -> `a`, `b`, `c`, `d`."""
    kind = target.type
    if kind == "identifier":  # the usual target, checked first
        return [target]
    if kind in _PATTERNS:
        out: list[Node] = []
        for child in target.named_children:
            out.extend(target_leaves(child))
        return out
    if kind in _WRAPPERS and target.named_child_count:
        return target_leaves(target.named_children[0])
    return [target]


def element_pairs(leaves: list[Node], value: Node) -> list[tuple[Node, Node]] | None:
    """`a, b = x, y`: each leaf with the element of the value it receives, when there are several leaves
    and the value is a display of exactly as many elements; None when the value is unpacked at run time
    (`a, b = x.chunk(2)`) or is bound whole (`a = x, y`)."""
    if len(leaves) > 1 and value.type in _DISPLAYS and value.named_child_count == len(leaves):
        return list(zip(leaves, value.named_children))
    return None
