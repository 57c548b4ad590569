"""Same-file "default" helpers: `def default(val, d): return val if val is not None else d`.

Research code picks a constructor argument's fallback through such a helper (`activation =
default(activation, nn.GELU)` with `activation=None`, lucidrains' repositories and their many copies). Read
statically, the call is its second argument whenever the first is None. This module recognises the helper by
its body, never by its name: a function of `(v, d)` whose body is one of

- `return v if T else d` / `return d if T else v`;
- `if T: return v` then `return d` / `if T: return d` then `return v`;

where `T` is a test whose value is known when `v` is None: `v is None`, `v is not None`, a same-file
`exists(v)` whose body is `return x is not None` (or `is None`), and `not` of those. The value returned
for None may be `d` itself or `d if not isfunction(d) else d()` (the callable-default variant, which
returns a class as it is).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText

__all__ = ["fallback_argument"]

FunctionLookup = Callable[[str], "Node | None"]


def fallback_argument(function: Node, call: Node, src: SourceText, lookup: FunctionLookup) -> Node | None:
    """The argument node of `call` that `function` returns when its first argument is None, when
    `function` is a default helper (see the module doc) and the call passes both positionally; else None.
    `lookup` finds a same-file function by name (for `exists`)."""
    ps = params(function, src)
    body = function.child_by_field_id(Field.BODY)
    if len(ps) != 2 or body is None:
        return None
    v, d = ps[0].name, ps[1].name
    stmts = [c for c in body.named_children if c.type != "comment" and not _is_docstring(c)]
    pair = _branches(stmts)
    if pair is None:
        return None
    test, when_true, when_false = pair
    truth = _when_none(test, v, src, lookup, 0)
    if truth is None:
        return None
    chosen, other = (when_true, when_false) if truth else (when_false, when_true)
    if not _is_name(other, v, src) or not _is_fallback(chosen, d, src):
        return None
    args_node = call.child_by_field_id(Field.ARGUMENTS)
    args = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
    if len(args) != 2 or any(a.type in ("keyword_argument", "list_splat", "dictionary_splat") for a in args):
        return None
    return args[1]


def _branches(stmts: list[Node]) -> tuple[Node, Node, Node] | None:
    """(test, value when true, value when false) of the body's one choice."""
    if len(stmts) == 1:
        parts = _conditional(_returned(stmts[0]))
        return (parts[1], parts[0], parts[2]) if parts is not None else None
    if len(stmts) == 2 and stmts[0].type == "if_statement" and stmts[1].type == "return_statement":
        test = stmts[0].child_by_field_id(Field.CONDITION)
        block = stmts[0].child_by_field_id(Field.CONSEQUENCE)
        inner = [c for c in (block.named_children if block is not None else ()) if c.type != "comment"]
        if test is None or _has_else(stmts[0]) or len(inner) != 1:
            return None
        yes, no = _returned(inner[0]), _returned(stmts[1])
        return (test, yes, no) if yes is not None and no is not None else None
    return None


def _when_none(test: Node, v: str, src: SourceText, lookup: FunctionLookup, depth: int) -> bool | None:
    """The value of `test` when `v` is None, if evident."""
    test = _unparen(test)
    if test.type == "not_operator":
        arg = test.child_by_field_id(Field.ARGUMENT)
        inner = _when_none(arg, v, src, lookup, depth) if arg is not None else None
        return None if inner is None else not inner
    text = " ".join(src.text(test).split())
    if text == f"{v} is None":
        return True
    if text == f"{v} is not None":
        return False
    if test.type == "call" and depth == 0:
        func = test.child_by_field_id(Field.FUNCTION)
        args = test.child_by_field_id(Field.ARGUMENTS)
        items = [a for a in (args.named_children if args is not None else ()) if a.type != "comment"]
        if func is None or func.type != "identifier" or len(items) != 1 or not _is_name(items[0], v, src):
            return None
        helper = lookup(src.text(func))
        body = helper.child_by_field_id(Field.BODY) if helper is not None else None
        ps = params(helper, src) if helper is not None else ()
        stmts = [c for c in (body.named_children if body is not None else ()) if c.type != "comment"
                 and not _is_docstring(c)]
        if len(ps) != 1 or len(stmts) != 1:
            return None
        value = _returned(stmts[0])
        return _when_none(value, ps[0].name, src, lookup, depth + 1) if value is not None else None
    return None


def _is_fallback(node: Node | None, d: str, src: SourceText) -> bool:
    if _is_name(node, d, src):
        return True
    parts = _conditional(node)
    return parts is not None and _is_name(parts[0], d, src)


def _unparen(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def _conditional(node: Node | None) -> tuple[Node, Node, Node] | None:
    node = _unparen(node) if node is not None else None
    if node is None or node.type != "conditional_expression":
        return None
    parts = [c for c in node.named_children if c.type != "comment"]
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def _is_docstring(stmt: Node) -> bool:
    return stmt.type == "expression_statement" and stmt.named_child_count == 1 and stmt.named_children[0].type == "string"


def _returned(stmt: Node) -> Node | None:
    return stmt.named_children[0] if stmt.type == "return_statement" and stmt.named_child_count == 1 else None


def _has_else(stmt: Node) -> bool:
    return any(c.type in ("else_clause", "elif_clause") for c in stmt.named_children)


def _is_name(node: Node | None, name: str, src: SourceText) -> bool:
    return node is not None and node.type == "identifier" and src.text(node) == name
