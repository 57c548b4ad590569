"""Same-file factories that look their result up in a table: `def get_act_layer(name): return _ACTS[name]`.

Research code picks an activation by name through a small function over a dict of layer classes
(`_ACTS = {"gelu": nn.GELU, "relu": nn.ReLU}`), returning the class (`get_act_layer(act)()`) or an
instance of it (`return _ACTS[name.lower()]()`). Read statically, the call is the table's entry at the key
the call passes, when that key is evident. This module recognises the factory by its body, never by its
name: a function whose last statement is `return T[p]`, `return T[p]()`, or the same with `p.lower()` /
`p.upper()`, where `T` is a plain name and `p` one of its parameters that no statement before rebinds. The
caller (`scope.bindings`) reads the table and the key; this module only says which parameter is the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import KEYWORD_ONLY, POSITIONAL, VAR_POSITIONAL

__all__ = ["TableLookup", "argument_text", "table_lookup"]

_CASES = {"lower": str.lower, "upper": str.upper}


@dataclass(frozen=True, slots=True)
class TableLookup:
    """What a table factory returns: `table[<parameter>]`, with the key's case changed, called or not."""

    table: str
    parameter: str
    index: int  # the parameter's position (0 for the first), -1 when it is given by keyword only
    default: str | None  # the parameter's default, as written
    case: str | None  # "lower", "upper" or None
    instance: bool  # `return T[p]()`: an instance, not the class

    def key(self, text: str) -> str:
        """The key the table is read at for the evident string `text`."""
        return _CASES[self.case](text) if self.case is not None else text


def table_lookup(function: Node, src: SourceText) -> TableLookup | None:
    """The lookup `function`'s last statement returns (see the module doc), else None."""
    body = function.child_by_field_id(Field.BODY)
    stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if not stmts or stmts[-1].type != "return_statement" or stmts[-1].named_child_count != 1:
        return None
    value: Node | None = stmts[-1].named_children[0]
    instance = False
    if value is not None and value.type == "call":
        args = value.child_by_field_id(Field.ARGUMENTS)
        if args is None or [a for a in args.named_children if a.type != "comment"]:
            return None  # the entry's arguments would be the factory's: only `T[p]()` is read
        value, instance = value.child_by_field_id(Field.FUNCTION), True
    if value is None or value.type != "subscript":
        return None
    table = value.child_by_field_id(Field.VALUE)
    subs = value.children_by_field_name("subscript")
    if table is None or table.type != "identifier" or len(subs) != 1:
        return None
    key: Node | None = subs[0]
    case: str | None = None
    if key is not None and key.type == "call":
        method = key.child_by_field_id(Field.FUNCTION)
        args = key.child_by_field_id(Field.ARGUMENTS)
        if method is None or method.type != "attribute" or args is None or args.named_child_count:
            return None
        case = src.text(method).rsplit(".", 1)[-1]
        key = method.child_by_field_id(Field.OBJECT)
        if case not in _CASES or key is None:
            return None
    if key is None or key.type != "identifier":
        return None
    name = src.text(key)
    ps = params(function, src)
    index = next((i for i, p in enumerate(ps) if p.name == name and p.kind in (
        POSITIONAL, KEYWORD_ONLY)), None)
    if index is None or any(_rebinds(stmt, name, src) for stmt in stmts[:-1]):
        return None
    default = ps[index].default
    if ps[index].kind is KEYWORD_ONLY or any(p.kind is VAR_POSITIONAL for p in ps[:index]):
        index = -1  # given by keyword only
    return TableLookup(src.text(table), name, index, default, case, instance)


def argument_text(lookup: TableLookup, call: Node, src: SourceText) -> str | None:
    """The text `call` passes for the lookup's parameter (by keyword or position), or the parameter's
    default when the call leaves it out and it is a string literal; None when the call unpacks
    `*args`/`**kwargs`."""
    args_node = call.child_by_field_id(Field.ARGUMENTS)
    given = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
    if any(a.type in ("list_splat", "dictionary_splat") for a in given):
        return None
    positional = [a for a in given if a.type != "keyword_argument"]
    for a in given:
        key, value = a.child_by_field_id(Field.NAME), a.child_by_field_id(Field.VALUE)
        if a.type == "keyword_argument" and key is not None and value is not None and src.text(key) == lookup.parameter:
            return src.text(value)
    if 0 <= lookup.index < len(positional):
        return src.text(positional[lookup.index])
    default = (lookup.default or "").strip()
    return default if len(default) >= 2 and default[0] == default[-1] and default[0] in "\"'" else None


def _rebinds(node: Node, name: str, src: SourceText) -> bool:
    """Whether a statement assigns `name` anywhere inside it."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("assignment", "augmented_assignment", "for_statement", "named_expression"):
            left = n.child_by_field_id(Field.LEFT) or n.child_by_field_id(Field.NAME)
            if left is not None and name in src.text(left).replace("(", " ").replace(",", " ").split():
                return True
        stack.extend(n.named_children)
    return False
