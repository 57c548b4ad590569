"""What an inlined callee's `return` gives each of the caller's outputs.

`a, b = self.helper(x)` binds two outputs; the callee's `return a, b` (an expression list) gives one value
to each. The same tuple written in parentheses, `return (a, b)` (as `ast.unparse` and many authors write it),
is the same two values, not one tuple op bound to neither output.
"""

from __future__ import annotations

from tree_sitter import Node


def tuple_items(node: Node, count: int) -> list[Node] | None:
    """The items of a parenthesised tuple `(a, b)` (parentheses around it aside) when it has exactly `count`
    items and none is starred; else None (the value is read whole)."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type != "tuple":
        return None
    items = [n for n in node.named_children if n.type != "comment"]
    if len(items) != count or any(n.type == "list_splat" for n in items):
        return None
    return items
