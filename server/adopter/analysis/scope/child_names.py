"""Whether adding a child to a Sequential keeps the children it holds at their positions.

`nn.Module.add_module(name, m)` (and `append`, named by the count so far) adds `m` at the end, except that
a name the Sequential already holds replaces that child in place. A Sequential whose first children are
known (`Ctor.lead`) keeps them there while each later addition has a name none of them has: a name whose
leading literal text (`"denseblock%d" % i`, `f"block{i}"`, `"stage" + str(i)`) starts no name of theirs
(positional children are named `"0"`, `"1"`, ...; an `OrderedDict` names them).
"""

from __future__ import annotations

from typing import Literal

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import Ctor

# An `append`/`extend`: named by the count of children (`str(len(self))`), after every one.
COUNTED: Literal["counted"] = "counted"
Added = tuple[str, bool] | Literal["counted"]


def added_name(node: Node, src: SourceText) -> tuple[str, bool] | None:
    """The leading literal text of an `add_module` name and whether it is all of the name: `"conv"` ->
    ("conv", True), `f"block{i}"` / `"block%d" % i` / `"block" + str(i)` / `"block{}".format(i)` ->
    ("block", False); None when the name does not start with literal text."""
    if node.type == "string":
        content = _content(node, src)
        interpolated = any(c.type == "interpolation" for c in node.named_children)
        return (content.split("{", 1)[0], False) if interpolated else (content, True)
    if node.type == "binary_operator":
        left, op = node.child_by_field_id(Field.LEFT), node.child_by_field_id(Field.OPERATOR)
        if left is None or op is None or left.type != "string" or src.text(op) not in ("%", "+"):
            return None
        content = _content(left, src)
        return (content.split("%", 1)[0] if src.text(op) == "%" else content), False
    func = node.child_by_field_id(Field.FUNCTION) if node.type == "call" else None
    obj = func.child_by_field_id(Field.OBJECT) if func is not None and func.type == "attribute" else None
    attr = func.child_by_field_id(Field.ATTRIBUTE) if func is not None and func.type == "attribute" else None
    if obj is not None and attr is not None and obj.type == "string" and src.text(attr) == "format":
        return _content(obj, src).split("{", 1)[0], False
    return None


def keeps_positions(value: Ctor, name: Added | None) -> bool:
    """Whether adding a child named `name` (`added_name`, `COUNTED`) to the container `value` leaves its
    children where they are."""
    keys = value.keys  # the names of the children it was built with (`add_module` adds none to a Sequential's)
    if name is None or (keys and len(keys) != len(value.lead or value.items)):
        return False
    if name == COUNTED:
        return not any(k.isdigit() for k in keys)
    prefix, exact = name
    if not prefix or prefix.isdigit():
        return False  # may be a positional child's `"0"`, `"1"`, ...
    return prefix not in keys if exact else not any(k.startswith(prefix) for k in keys)


def _content(node: Node, src: SourceText) -> str:
    """The text between a string literal's quotes (its prefix letters and quotes left out)."""
    text = src.text(node)
    start = 0
    while start < len(text) and text[start] not in "\"'":
        start += 1
    quote = text[start:start + 3] if text[start:start + 3] in ('"""', "'''") else text[start:start + 1]
    end = len(text) - len(quote) if text.endswith(quote) and len(text) >= start + 2 * len(quote) else len(text)
    return text[start + len(quote):end]
