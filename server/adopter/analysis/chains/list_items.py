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

import re
from collections.abc import Mapping

from tree_sitter import Node

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
    addition's place is not certain (in a loop, under a test this does not decide). A test `if p is not
    None:` on a parameter `p` whose default (`defaults`) is a value and that nothing rebinds is read as
    taken: the default's path, as `norm_layer(c)` is read as the default's class. `[BREAK]` when the list
    is not made here or something else touches it (`insert`, `layers[0] = ...`, passing it to a call)."""
    items: list[Node | None] | None = None
    for stmt in body.named_children:
        if stmt.start_byte >= before:
            break
        if stmt.type == "comment" or target.encode() not in src.raw(stmt):
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
    block = stmt.child_by_field_id(Field.CONSEQUENCE) if stmt.type == "if_statement" else None
    if block is not None and _taken(stmt, body, src, defaults):
        for inner in block.named_children:
            if inner.type != "comment" and target.encode() in src.raw(inner):
                if not _grow(inner, target, items, body, src, {}):
                    return False
        return True
    if stmt.type in _COMPOUND:
        items.append(BREAK)  # added under a test this does not decide, or in a loop
        return True
    return False


def _taken(stmt: Node, body: Node, src: SourceText, defaults: Mapping[str, str | None]) -> bool:
    """`if p is not None:` (no `elif`/`else`) on a parameter with a default other than None that `body`
    never rebinds."""
    test = stmt.child_by_field_id(Field.CONDITION)
    if test is None or stmt.child_by_field_id(Field.ALTERNATIVE) is not None:
        return False
    m = _NOT_NONE.fullmatch(src.text(test))
    if m is None or defaults.get(m.group(1)) in (None, "None"):
        return False
    return not _rebinds(body, m.group(1), src)


def _rebinds(node: Node, name: str, src: SourceText) -> bool:
    """Whether an assignment under `node` binds `name`."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("assignment", "augmented_assignment", "named_expression"):
            left = n.child_by_field_id(Field.LEFT) or n.child_by_field_id(Field.NAME)
            if left is not None and name in re.findall(r"[A-Za-z_]\w*", src.text(left)):
                return True
        stack.extend(n.named_children)
    return False


_NOT_NONE = re.compile(r"([A-Za-z_]\w*)\s+is\s+not\s+None")


def _made(stmt: Node, target: str, src: SourceText) -> list[Node | None] | None:
    """The items of `target = [a, b, ...]`, else None."""
    expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count == 1 else None
    if expr is None or expr.type != "assignment":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    if left is None or right is None or src.text(left) != target or right.type != "list":
        return None
    return [c if c.type != "list_splat" else BREAK for c in right.named_children if c.type != "comment"]
