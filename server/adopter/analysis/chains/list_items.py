"""The items a function adds to a local list, statement by statement, read in the order they are added.

Two readers share this: `adopter.analysis.chains.lists` (runs of items added in one loop body) and
`adopter.analysis.chains.sequential_classes`, for a Sequential subclass that hands its children over as a
list (torchvision's `FCNHead`, `ConvNormActivation`):

    layers = [conv_layer(c_in, c_out, 3, bias=False)]
    if norm_layer is not None:
        layers.append(norm_layer(c_out))
    layers.append(nn.ReLU())
    super().__init__(*layers)

or as a dict filled key by key (torchdistill's `ConvReg`: `module_dict = OrderedDict()`, `module_dict['conv'] =
nn.Conv2d(...)`, `module_dict['bn'] = nn.BatchNorm2d(...)`, `super().__init__(module_dict)`): an `OrderedDict`
(and a `dict`, ordered since Python 3.7) runs its values in the order its keys were first set.
"""

from __future__ import annotations

from collections.abc import Mapping

from tree_sitter import Node

from adopter.analysis.chains.default_branches import taken_block
from adopter.analysis.parse.source import Field, SourceText

BREAK = None  # an item whose place in the list is not certain: a chain read from the items is cut there
_COMPOUND = ("for_statement", "while_statement", "with_statement", "try_statement", "if_statement", "match_statement")


def added_items(stmt: Node, target: str, src: SourceText, keyed: bool = False) -> list[Node] | None:
    """The items `stmt` adds to `target` (`target.append(x)`, `.extend([...])`, `target += [...]`; with
    `keyed`, a dict's `target[key] = x` of a key it does not hold yet), else None."""
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    expr = stmt.named_children[0]
    if keyed:
        return _keyed_item(expr, target, src)
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


def _keyed_item(expr: Node, target: str, src: SourceText) -> list[Node] | None:
    """`[x]` for `target["name"] = x` with a string key (a key set again would keep its first place:
    `_set_keys` refuses those)."""
    if expr.type != "assignment":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    if left is None or right is None or left.type != "subscript":
        return None
    container, key = left.child_by_field_id(Field.VALUE), left.child_by_field_id(Field.SUBSCRIPT)
    if container is None or key is None or src.text(container) != target or key.type != "string":
        return None
    return [right]


def keyed_children(body: Node, target: str, before: int, src: SourceText,
                   defaults: Mapping[str, str | None]) -> list[Node | None]:
    """The values the local dict `target` holds when the statement at byte `before` of `body` runs, in the
    order their keys were set: made empty (`OrderedDict()`, `dict()`, `{}`) and filled by `target["k"] = x`
    statements of `body`, read as `splatted_children` reads a list (`BREAK` for a value set under a test
    this does not decide, or in a loop). `[BREAK]` when the dict is not made so, a key is set twice or the
    dict is used any other way."""
    keys = [k for k in _set_keys(body, target, before, src)]
    if len(keys) != len(set(keys)):
        return [BREAK]
    return splatted_children(body, target, before, src, defaults, keyed=True)


def _set_keys(node: Node, target: str, before: int, src: SourceText) -> list[str]:
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.start_byte >= before or n.type in ("function_definition", "class_definition", "lambda"):
            continue
        if n.type == "subscript" and n.parent is not None and n.parent.type == "assignment" and (
                n.parent.child_by_field_id(Field.LEFT) == n):
            container, key = n.child_by_field_id(Field.VALUE), n.child_by_field_id(Field.SUBSCRIPT)
            if container is not None and key is not None and src.text(container) == target:
                out.append(src.text(key))
        stack.extend(n.named_children)
    return out


def splatted_children(body: Node, target: str, before: int, src: SourceText,
                      defaults: Mapping[str, str | None], keyed: bool = False) -> list[Node | None]:
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
        if stmt.type == "comment" or target.encode() not in src.raw(stmt):
            continue
        made = _made(stmt, target, src, keyed)
        if made is not None:
            items = made
        elif items is None or not _grow(stmt, target, items, body, src, defaults, keyed):
            return [BREAK]
    return [BREAK] if items is None else items


def _grow(stmt: Node, target: str, items: list[Node | None], body: Node, src: SourceText,
          defaults: Mapping[str, str | None], keyed: bool = False) -> bool:
    """Add to `items` what `stmt` adds to `target`; False when `stmt` uses the list some other way."""
    added = added_items(stmt, target, src, keyed)
    if added is not None:
        items.extend(a if a.type != "list_splat" else BREAK for a in added)
        return True
    block = taken_block(stmt, body, src, defaults)
    if isinstance(block, str):
        return True  # no branch runs with the parameters' defaults: nothing is added
    if isinstance(block, Node):
        for inner in block.named_children:
            if inner.type != "comment" and target.encode() in src.raw(inner):
                if not _grow(inner, target, items, body, src, defaults, keyed):
                    return False
        return True
    if stmt.type in _COMPOUND:
        items.append(BREAK)  # added under a test this does not decide, or in a loop
        return True
    return False


def _made(stmt: Node, target: str, src: SourceText, keyed: bool = False) -> list[Node | None] | None:
    """The items of `target = [a, b, ...]` (with `keyed`: none, for `target = OrderedDict()`, `dict()`, `{}`),
    else None."""
    expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count == 1 else None
    if expr is None or expr.type != "assignment":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    if keyed:
        if left is None or right is None or src.text(left) != target:
            return None
        empty = right.type == "dictionary" and right.named_child_count == 0
        if right.type == "call":
            func, args = right.child_by_field_id(Field.FUNCTION), right.child_by_field_id(Field.ARGUMENTS)
            empty = (func is not None and src.text(func).rsplit(".", 1)[-1] in ("OrderedDict", "dict")
                     and args is not None and args.named_child_count == 0)
        return [] if empty else None
    if left is None or right is None or src.text(left) != target or right.type != "list":
        return None
    return [c if c.type != "list_splat" else BREAK for c in right.named_children if c.type != "comment"]
