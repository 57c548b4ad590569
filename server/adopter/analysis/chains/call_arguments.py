"""What a file's calls pass to a function's parameters, read from the tree: the shared reading of
`adopter.analysis.chains.methods` (`self._make_layer(block, ...)` in a class) and
`adopter.analysis.chains.class_callers` (`ResNet(Bottleneck, [3, 4, 6, 3])` in the file)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText

_NESTED = ("function_definition", "class_definition", "decorated_definition", "lambda")


def self_call_arguments(method: Node, param: str, methods: dict[str, Node], src: SourceText,
                ) -> tuple[tuple[str, ...], str] | None:
    """What the class's `self.<method>(...)` calls pass as its parameter `param`: the names written there
    (`self._make_layer(Bottleneck, 64, 3)`) and the `__init__` parameter passed on unchanged
    (`self._make_layer(block, 64, layers[0])` in `__init__(self, block, layers)`). None when any call passes
    something else, `self.<method>` occurs other than as such a call, or either parameter is rebound."""
    name = next((k for k, v in methods.items() if v == method), None)
    order = positional_names(method, src)
    if name is None or param not in order or rebinds(method, param, src):
        return None
    init = methods.get("__init__")
    init_params = positional_names(init, src) if init is not None else []
    names: list[str] = []
    parameters: set[str] = set()
    calls = 0
    for caller, body in methods.items():
        locals_ = parameter_names(body, src) | bound_names(body, src)
        for node in walk(body):
            func = node.child_by_field_id(Field.FUNCTION) if node.type == "call" else None
            if func is None or func.type != "attribute" or src.text(func) != f"self.{name}":
                continue
            calls += 1
            value = argument_at(node, order.index(param) - 1, param, src)
            if value is None or value.type != "identifier":
                return None
            text = src.text(value)
            if caller == "__init__" and text in init_params and init is not None and not rebinds(init, text, src):
                parameters.add(text)
            elif text in locals_:
                return None
            elif text not in names:
                names.append(text)
    occurrences = len(re.findall(rf"\bself\.{name}\b".encode(), b"".join(code_bytes(src, m) for m in methods.values())))
    if calls == 0 or calls != occurrences or len(parameters) > 1:
        return None
    return tuple(names), next(iter(parameters), "")


def positional_names(function: Node, src: SourceText) -> list[str]:
    """The names of `function`'s parameters that a call may pass by position, in order (`self` first)."""
    params = function.child_by_field_id(Field.PARAMETERS)
    out: list[str] = []
    for p in params.named_children if params is not None else ():
        if p.type in ("list_splat_pattern", "dictionary_splat_pattern", "keyword_separator"):
            break
        key = p if p.type == "identifier" else p.child_by_field_id(Field.NAME) if p.type != "typed_parameter" else (
            p.named_children[0] if p.named_children else None)
        if key is None or key.type != "identifier":
            break
        out.append(src.text(key))
    return out


def parameter_names(function: Node, src: SourceText) -> set[str]:
    """Every parameter name of `function` (`*args` and `**kwargs` included)."""
    params = function.child_by_field_id(Field.PARAMETERS)
    out: set[str] = set()
    for p in params.named_children if params is not None else ():
        key = p if p.type == "identifier" else p.child_by_field_id(Field.NAME) if p.type not in (
            "typed_parameter", "list_splat_pattern", "dictionary_splat_pattern") else (
            p.named_children[0] if p.named_children else None)
        if key is not None and key.type == "identifier":
            out.add(src.text(key))
    return out


def argument_at(call: Node, position: int, keyword: str, src: SourceText) -> Node | None:
    """The argument `call` passes at `position` (none after a splat) or as `keyword`, else None."""
    args = call.child_by_field_id(Field.ARGUMENTS)
    at = 0
    for a in args.named_children if args is not None and args.type == "argument_list" else ():
        if a.type == "comment":
            continue
        if a.type == "keyword_argument":
            key = a.child_by_field_id(Field.NAME)
            if key is not None and src.text(key) == keyword:
                return a.child_by_field_id(Field.VALUE)
        elif a.type in ("list_splat", "dictionary_splat"):
            at = -1 << 20
        else:
            if at == position:
                return a
            at += 1
    return None


def bound_names(function: Node, src: SourceText) -> set[str]:
    """The plain names `function`'s body binds (assignments, loop targets, `with ... as`, walrus)."""
    out: set[str] = set()
    for node in walk(function):
        target = None
        if node.type in ("assignment", "augmented_assignment", "named_expression"):
            target = node.child_by_field_id(Field.LEFT) or node.child_by_field_id(Field.NAME)
        elif node.type in ("for_statement", "for_in_clause", "as_pattern_target"):
            target = node.child_by_field_id(Field.LEFT) if node.type != "as_pattern_target" else node
        out.update(_target_names(target, src) if target is not None else ())
    return out


def _target_names(target: Node, src: SourceText) -> Iterator[str]:
    """The plain names an assignment target binds (`a, (b, c)`; not `self.x` nor `d[k]`)."""
    if target.type == "identifier":
        yield src.text(target)
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "list_splat_pattern",
                         "parenthesized_expression", "as_pattern_target"):
        for child in target.named_children:
            yield from _target_names(child, src)


def rebinds(function: Node, name: str, src: SourceText) -> bool:
    return name in bound_names(function, src)


def walk(function: Node) -> Iterator[Node]:
    """The nodes of `function`'s body, nested definitions excluded."""
    body = function.child_by_field_id(Field.BODY)
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop()
        if node.type in _NESTED:
            continue
        yield node
        stack.extend(node.named_children)
