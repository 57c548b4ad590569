"""Which branch of an `if` a function's parameter defaults take, for the readers of layer lists.

Builders add a layer only when a parameter asks for it:

    def __init__(self, c_in, c_out, bn=True, norm="bn"):
        layers = [nn.Conv2d(c_in, c_out, 3)]
        if bn:                        # taken with the default
            layers.append(nn.BatchNorm2d(c_out))
        if norm == "ln":              # not taken: the `elif` is
            ...
        elif norm == "bn":
            ...

The list readers (`adopter.analysis.chains.list_items`, `.lists`, `.functions`) read such a test as the
default decides it, the way `norm_layer(c)` is read as the default's class: the chain is the one the
function builds when called with its defaults. A test is decided only when each name it reads is a
parameter with a literal default (`True`, `0.5`, `"bn"`, `None`; `is not None` also for any other default)
that the function never rebinds; anything else leaves the `if` undecided (the readers cut the chain there).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.literal_truth import literal_truth

_NAME = r"[A-Za-z_]\w*"
_LITERAL = r"""True|False|None|-?\d+(?:\.\d*)?|'[^'\\]*'|"[^"\\]*\""""
_BARE = re.compile(rf"(not\s+)?({_NAME})")
_IS_NONE = re.compile(rf"({_NAME})\s+is\s+(not\s+)?None")
_EQUALS = re.compile(rf"({_NAME})\s*(==|!=)\s*({_LITERAL})|({_LITERAL})\s*(==|!=)\s*({_NAME})")
NOT_TAKEN = "not taken"  # no branch of the `if` runs with the defaults (no `else`)


def taken_block(stmt: Node, body: Node, src: SourceText, defaults: Mapping[str, str | None]) -> Node | str | None:
    """The block of `if_statement` `stmt` that runs when the parameters have their defaults (`defaults`:
    parameter -> its default's source text, None without one), `NOT_TAKEN` when none runs, None when the
    tests are not decided that way (see the module doc). `body` is the function's body (for rebinding)."""
    if stmt.type != "if_statement":
        return None
    fallback: Node | None = None
    for is_else, test, block in clauses(stmt):
        if is_else:
            fallback = block
            continue
        truth = _truth(test, body, src, defaults) if test is not None else None
        if truth is None or block is None:
            return None
        if truth:
            return block
    return fallback if fallback is not None else NOT_TAKEN


def clauses(stmt: Node) -> list[tuple[bool, Node | None, Node | None]]:
    """(is the `else`, test, block) of each clause of `if_statement` `stmt` in order: its own, each `elif`'s,
    and the `else`'s (no test)."""
    out: list[tuple[bool, Node | None, Node | None]] = [
        (False, stmt.child_by_field_id(Field.CONDITION), stmt.child_by_field_id(Field.CONSEQUENCE))]
    for clause in stmt.children_by_field_name("alternative"):
        if clause.type == "elif_clause":
            out.append((False, clause.child_by_field_id(Field.CONDITION), clause.child_by_field_id(Field.CONSEQUENCE)))
        else:
            out.append((True, None, clause.child_by_field_id(Field.BODY)))
    return out


def _truth(test: Node, body: Node, src: SourceText, defaults: Mapping[str, str | None]) -> bool | None:
    text = " ".join(src.text(test).split())
    while text.startswith("(") and text.endswith(")") and test.type == "parenthesized_expression":
        text = text[1:-1].strip()
    m = _IS_NONE.fullmatch(text)
    if m is not None:
        default = _default(m.group(1), body, src, defaults)
        return None if default is None else (default == "None") != bool(m.group(2))
    m = _BARE.fullmatch(text)
    if m is not None and m.group(2) not in ("True", "False", "None"):
        truth = literal_truth(_default(m.group(2), body, src, defaults))
        return None if truth is None else truth != bool(m.group(1))
    m = _EQUALS.fullmatch(text)
    if m is not None:
        name, op, literal = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(6), m.group(5), m.group(4))
        default = _default(name, body, src, defaults)
        if default is None or literal_truth(default) is None or literal_truth(literal) is None:
            return None
        return (_value(default) == _value(literal)) == (op == "==")
    return None


def _default(name: str, body: Node, src: SourceText, defaults: Mapping[str, str | None]) -> str | None:
    """The default's text of parameter `name`, when it has one and `body` never rebinds `name`."""
    default = defaults.get(name)
    if default is None or _rebinds(body, name, src):
        return None
    return " ".join(default.split())


def _value(literal: str) -> str:
    """A literal's value as text (`'bn'` and `"bn"` are the same; `1` and `1.0` compare as floats)."""
    if literal[:1] in ("'", '"'):
        return "s:" + literal[1:-1]
    if re.fullmatch(r"-?\d+(?:\.\d*)?", literal):
        return f"n:{float(literal)}"
    return literal


def _rebinds(node: Node, name: str, src: SourceText) -> bool:
    """Whether an assignment (or a `for`/`with` target) under `node` binds `name`."""
    stack = [node]
    while stack:
        n = stack.pop()
        left: Node | None = None
        if n.type in ("assignment", "augmented_assignment"):
            left = n.child_by_field_id(Field.LEFT)
        elif n.type == "named_expression":
            left = n.child_by_field_id(Field.NAME)
        elif n.type == "for_statement":
            left = n.child_by_field_id(Field.LEFT)
        if left is not None and name in re.findall(_NAME, src.text(left)):
            return True
        stack.extend(n.named_children)
    return False
