"""The items a function adds to a local list, statement by statement, read in the order they are added.

Two readers share this: `adopter.analysis.chains.lists` (runs of items added in one loop body) and
`adopter.analysis.chains.sequential_classes`, for a Sequential subclass that hands its children over as a
list (torchvision's `FCNHead`, `ConvNormActivation`):

    layers = [conv_layer(c_in, c_out, 3, bias=False)]
    if norm_layer is not None:
        layers.append(norm_layer(c_out))
    layers.append(nn.ReLU())
    super().__init__(*layers)
"""

from __future__ import annotations

from collections.abc import Mapping

from tree_sitter import Node

from adopter.analysis.chains.default_branches import taken_block
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText

BREAK = None  # an item whose place in the list is not certain: a chain read from the items is cut there
_COMPOUND = ("for_statement", "while_statement", "with_statement", "try_statement", "if_statement", "match_statement")


def added_items(stmt: Node, target: str, src: SourceText) -> list[Node] | None:
    """The items `stmt` adds to `target` (`target.append(x)`, `.extend([...])`, `target += [...]`), else None."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    expr = stmt.named_children[0]
    if expr.type == "augmented_assignment":
        left = expr.child_by_field_id(Field.LEFT)
        right = expr.child_by_field_id(Field.RIGHT)
        op = expr.child_by_field_id(Field.OPERATOR)
        if (left is not None and right is not None and src.text(left) == target and right.type in ("list", "tuple")
                and (op is None or src.text(op) == "+=")):
            return [c for c in right.named_children if c.type != "comment"]
        return None
    if expr.type != "call":
        return None
    func = expr.child_by_field_id(Field.FUNCTION)
    args = expr.child_by_field_id(Field.ARGUMENTS)
    if func is None or func.type != "attribute" or args is None:
        return None
    obj = func.child_by_field_id(Field.OBJECT)
    method = func.child_by_field_id(Field.ATTRIBUTE)
    if obj is None or method is None or src.text(obj) != target:
        return None
    parts = [a for a in args.named_children if a.type != "comment"]
    if src.text(method) == "append" and len(parts) == 1:
        return parts
    if src.text(method) == "extend" and len(parts) == 1 and parts[0].type in ("list", "tuple"):
        return [c for c in parts[0].named_children if c.type != "comment"]
    return None


def splatted_children(body: Node, target: str, before: int, src: SourceText,
                      defaults: Mapping[str, str | None]) -> list[Node | None]:
    """The items the local list `target` holds when the statement at byte `before` of `body` runs, in order:
    made by `target = [...]` and grown by `append` / `extend` / `+=` statements of `body`; `BREAK` where an
    addition's place is not certain (in a loop, under a test this does not decide). A test the
    parameters' defaults (`defaults`) decide (`if p is not None:`, `if bn:`, `elif norm == "bn":`) is read
    on the default's path (`adopter.analysis.chains.default_branches`), as `norm_layer(c)` is read as the
    default's class. `[BREAK]` when the list
    is not made here or something else touches it (`insert`, `layers[0] = ...`, passing it to a call)."""
    items: list[Node | None] | None = None
    for stmt in body.named_children:
        if stmt.start_byte >= before:
            break
        if stmt.type == "comment" or target.encode() not in code_bytes(src, stmt):
            continue
        made = _made(stmt, target, src)
        if made is not None:
            items = made
        elif items is None or not _grow(stmt, target, items, body, src, defaults):
            return [BREAK]
    return [BREAK] if items is None else items


def _grow(stmt: Node, target: str, items: list[Node | None], body: Node, src: SourceText,
          defaults: Mapping[str, str | None]) -> bool:
    """Add to `items` what `stmt` adds to `target`; False when `stmt` uses the list some other way."""
    added = added_items(stmt, target, src)
    if added is not None:
        items.extend(a if a.type != "list_splat" else BREAK for a in added)
        return True
    block = taken_block(stmt, body, src, defaults)
    if isinstance(block, str):
        return True  # no branch runs with the parameters' defaults: nothing is added
    if isinstance(block, Node):
        for inner in block.named_children:
            if inner.type != "comment" and target.encode() in code_bytes(src, inner):
                if not _grow(inner, target, items, body, src, defaults):
                    return False
        return True
    if stmt.type in _COMPOUND:
        items.append(BREAK)  # added under a test this does not decide, or in a loop
        return True
    return False


def _made(stmt: Node, target: str, src: SourceText) -> list[Node | None] | None:
    """The items of `target = [a, b, ...]`, else None."""
    expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count == 1 else None
    if expr is None or expr.type != "assignment":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    if left is None or right is None or src.text(left) != target or right.type != "list":
        return None
    return [c if c.type != "list_splat" else BREAK for c in right.named_children if c.type != "comment"]
