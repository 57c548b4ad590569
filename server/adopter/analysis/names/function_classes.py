"""Classes defined in a module-level function's or a top-level method's body, and the names that function binds.

A package that keeps torch optional defines its modules inside the function that builds them, after binding torch
in the function (`torch = _require_torch(); nn = torch.nn`, `import torch.nn as nn`): the classes exist only when
the function runs, and Python names them `build.<locals>.Block` (`__qualname__`). Their bodies read names from the
class, then from the enclosing function's scope, then from the module.

`function_reading` reads, from the text of one module-level function alone (so `statement_reuse` may keep it), the
classes of its body (at any depth of its statements and of the functions nested in it, not in the classes: those
`symbols._class_shapes` reads) with the path to each, and the names its own body binds: imports, aliases of a
dotted name, and `torch = helper()` (an argument-less call of a name the function does not bind, the lazy-import
accessor). `local_bindings` resolves those against the module's names when the symbol table is built.

The rule for a name (`local_bindings`): it is taken only when the function binds it exactly one way (one import or
one dotted alias; a parameter of the same name, a second different binding, an assignment of anything else, a
`for` target or a `with ... as` name bind it otherwise and drop it), so a name bound differently on two paths is
unknown, never guessed. A name spelled `torch` bound to the result of an argument-less call of an imported function
is the torch module: the function then uses it as the package (`torch.nn`, `torch.ones`), and nothing else of that
name reaches the class. The function's parameters and its other locals (`d_model`, `cfg`) are not bound here, so
the analysis reads them as unknown values, as it reads an `__init__` parameter without a default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from tree_sitter import Node

from adopter.analysis.names.dotted import dotted_text
from adopter.analysis.parse.source import Field, SourceText

LOCALS = ".<locals>."  # between a function's name and a name of its scope in `__qualname__`

# Statements whose blocks run in the function's own scope.
_BLOCKS = frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                     "finally_clause", "with_statement", "for_statement", "while_statement", "block",
                     "match_statement", "case_clause"})
_TORCH = "torch"

# A binding as the function's text spells it: ("import", qualified name), ("alias", dotted text), ("call", callee),
# or ("other",): anything else (a parameter, a loop target, another value).
Binding = tuple[str, ...]
# (the qualified name's suffix after the function's name, the path: indices into `named_children` from the function)
Located = tuple[str, tuple[int, ...]]
# What `function_reading` gives: the classes, the names bound (each once, with its only binding, or ("other",))
FunctionReading = tuple[tuple[Located, ...], tuple[tuple[str, Binding], ...]]


FromNames = Callable[[Node], dict[str, str]]  # the names a `from ... import` statement binds, qualified


def function_reading(node: Node, src: SourceText, from_names: FromNames) -> FunctionReading | None:
    """The classes function `node` defines and the names its body binds, or None when it defines no class."""
    if not src.contains_word(node, b"class"):  # the keyword of a class definition (not `classifier`, `config_class`)
        return None
    classes: list[Located] = []
    _find_classes(node, (), "", src, classes)
    if not classes:
        return None
    bound: dict[str, Binding] = {}
    for name in _parameters(node, src):
        bound[name] = ("other",)
    body = node.child_by_field_id(Field.BODY)
    if body is not None:
        for name, binding in _bindings(body, src, from_names):
            if bound.get(name, binding) != binding:
                binding = ("other",)
            bound[name] = binding
    return tuple(classes), tuple(bound.items())


# (the method's name, the path to it from its class, what `function_reading` read of it)
MethodReading = tuple[str, tuple[int, ...], FunctionReading]


def method_readings(node: Node, src: SourceText, from_names: FromNames) -> tuple[MethodReading, ...]:
    """`function_reading` of each method of top-level class `node` that defines a class in its body (a method's
    local classes are named `Class.method.<locals>.Name`); nested classes' methods are not read."""
    body_index = next((i for i, c in enumerate(node.named_children) if c.type == "block"), None)
    if body_index is None:
        return ()
    body = node.named_children[body_index]
    if not src.contains(body, b"class"):
        return ()
    out: list[MethodReading] = []
    for i, child in enumerate(body.named_children):
        path: tuple[int, ...] = (body_index, i)
        if child.type == "decorated_definition":
            inner = child.child_by_field_id(Field.DEFINITION)
            if inner is None:
                continue
            path = (*path, child.named_children.index(inner))
            child = inner
        if child.type != "function_definition":
            continue
        name = child.child_by_field_id(Field.NAME)
        reading = function_reading(child, src, from_names) if name is not None else None
        if name is not None and reading is not None:
            out.append((src.text(name), path, reading))
    return tuple(out)


def follow(node: Node, path: tuple[int, ...]) -> Node:
    """The node `path` (`Located`) leads to from function `node`."""
    for i in path:
        node = node.named_children[i]
    return node


def _find_classes(node: Node, path: tuple[int, ...], prefix: str, src: SourceText, out: list[Located]) -> None:
    """The classes of the body of function `node` (at `path`), named `prefix.<locals>.Name`."""
    body_index = next((i for i, c in enumerate(node.named_children) if c.type == "block"), None)
    if body_index is None:
        return
    stack = [(node.named_children[body_index], (*path, body_index))]
    while stack:
        block, at = stack.pop()
        for i, child in enumerate(block.named_children):
            here = (*at, i)
            if child.type == "decorated_definition":
                inner = child.child_by_field_id(Field.DEFINITION)
                if inner is None:
                    continue
                here = (*here, child.named_children.index(inner))
                child = inner
            kind = child.type
            if kind == "class_definition" or kind == "function_definition":
                name = child.child_by_field_id(Field.NAME)
                if name is None:
                    continue
                if kind == "class_definition":
                    out.append((f"{prefix}{LOCALS}{src.text(name)}", here))
                else:  # a function nested in it: its classes, by its qualified name
                    _find_classes(child, here, f"{prefix}{LOCALS}{src.text(name)}", src, out)
            elif kind in _BLOCKS:
                stack.append((child, here))
    out.sort(key=lambda located: located[1])


def _parameters(node: Node, src: SourceText) -> Iterator[str]:
    params = node.child_by_field_id(Field.PARAMETERS)
    for child in params.named_children if params is not None else ():
        if child.type == "identifier":
            yield src.text(child)
            continue
        first = child.named_children[0] if child.named_child_count else None
        while first is not None and first.type != "identifier":  # `x: int = 1`, `*args`
            first = first.named_children[0] if first.named_child_count else None
        if first is not None:
            yield src.text(first)


def _bindings(block: Node, src: SourceText, from_names: FromNames) -> Iterator[tuple[str, Binding]]:
    """Each (name, binding) of a statement of the function's own scope, in text order."""
    for child in block.named_children:
        kind = child.type
        if kind == "import_statement":
            for part in child.children_by_field_name("name"):
                if part.type == "aliased_import":
                    name_node, alias = part.child_by_field_id(Field.NAME), part.child_by_field_id(Field.ALIAS)
                    if name_node is not None and alias is not None:
                        yield src.text(alias), ("import", src.text(name_node))
                else:
                    root = src.text(part).split(".")[0]
                    yield root, ("import", root)
        elif kind == "import_from_statement":
            for name, target in from_names(child).items():
                yield name, ("import", target)
        elif kind == "expression_statement":
            yield from _assigned(child, src)
        elif kind in ("for_statement", "with_statement"):
            for target in _targets(child, src):
                yield target, ("other",)
            yield from _nested(child, src, from_names)
        elif kind in _BLOCKS:
            yield from _nested(child, src, from_names)
        elif kind in ("function_definition", "class_definition", "decorated_definition"):
            inner = child.child_by_field_id(Field.DEFINITION) if kind == "decorated_definition" else child
            defined = inner.child_by_field_id(Field.NAME) if inner is not None else None
            if defined is not None:
                yield src.text(defined), ("other",)


def _nested(node: Node, src: SourceText, from_names: FromNames) -> Iterator[tuple[str, Binding]]:
    for child in node.named_children:
        if child.type == "block":
            yield from _bindings(child, src, from_names)
        elif child.type in _BLOCKS:
            yield from _nested(child, src, from_names)


def _targets(node: Node, src: SourceText) -> Iterator[str]:
    """The names a `for` statement's target or a `with` item's `as` binds."""
    if node.type == "for_statement":
        left = node.child_by_field_id(Field.LEFT)
        yield from _identifiers(left, src)
        return
    stack = [c for c in node.named_children if c.type != "block"]
    while stack:
        item = stack.pop()
        if item.type == "as_pattern_target":
            yield from _identifiers(item, src)
        else:
            stack.extend(item.named_children)


def _identifiers(node: Node | None, src: SourceText) -> Iterator[str]:
    stack = [node] if node is not None else []
    while stack:
        item = stack.pop()
        if item.type == "identifier":
            yield src.text(item)
        elif item.type in ("pattern_list", "tuple_pattern", "list_pattern", "as_pattern_target", "parenthesized_expression",
                           "tuple", "list"):
            stack.extend(item.named_children)


def _assigned(statement: Node, src: SourceText) -> Iterator[tuple[str, Binding]]:
    node = statement.named_children[0] if statement.named_child_count else None
    if node is None or node.type not in ("assignment", "augmented_assignment"):
        return
    left = node.child_by_field_id(Field.LEFT)
    right = node.child_by_field_id(Field.RIGHT)
    if left is None:
        return
    if left.type != "identifier":
        for name in _identifiers(left, src):
            yield name, ("other",)
        return
    name = src.text(left)
    if node.type == "augmented_assignment" or right is None:
        yield name, ("other",)
        return
    if right.type == "assignment":  # `a = b = torch.nn`: not read
        yield name, ("other",)
        return
    dotted = dotted_text(right, src)
    if dotted is not None:
        yield name, ("alias", dotted)
        return
    if right.type == "call":
        func = right.child_by_field_id(Field.FUNCTION)
        args = right.child_by_field_id(Field.ARGUMENTS)
        callee = dotted_text(func, src) if func is not None else None
        if callee is not None and args is not None and not any(a.type != "comment" for a in args.named_children):
            yield name, ("call", callee)
            return
    yield name, ("other",)


def local_bindings(bound: tuple[tuple[str, Binding], ...], qualify: dict[str, str], imported: frozenset[str]
                   ) -> dict[str, str]:
    """What each name function reading `bound` binds one way resolves to, given the module's imports and aliases
    (`qualify`: name -> qualified name) and its imported names (`imported`, for a lazy-import accessor)."""
    out: dict[str, str] = {}
    for name, binding in bound:  # in text order: an alias reads the names bound before it
        kind = binding[0]
        if kind == "import":
            out[name] = binding[1]
        elif kind == "alias":
            root, dot, rest = binding[1].partition(".")
            target = out.get(root) or qualify.get(root)
            if target is not None:
                out[name] = f"{target}{dot}{rest}"
        elif kind == "call" and name == _TORCH and binding[1].split(".")[0] in imported:
            out[name] = _TORCH
    return out
