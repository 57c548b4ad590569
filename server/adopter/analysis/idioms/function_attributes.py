"""Attributes that `__init__` binds to a same-file function: calling the attribute calls the function.

ChatGLM's MLP (and its copies) writes its gated activation as a function and stores it on the module:

    def swiglu(x):                       # at module level, or defined in `__init__` itself
        x = torch.chunk(x, 2, dim=-1)
        return F.silu(x[0]) * x[1]
    ...
        self.activation_func = swiglu    # in `__init__`
    ...
        h = self.activation_func(self.dense_h_to_4h(x))   # in `forward`

`self.activation_func(h)` is then `swiglu(h)`: the flow analysis inlines the function where the attribute is
called, as it inlines a direct call of a same-file function, so the ops inside it join the forward's.

Read only where the binding is evident: one statement of `__init__`'s own body (not under an `if`, a loop
or a `try`) assigns `self.<attr> = <name>`, no other statement of `__init__` assigns `self.<attr>`, and
`<name>` is a function defined in `__init__`'s body before that statement or a module-level function of the
file that `__init__` does not rebind (a parameter or local of that name is something else). A binding on
some paths only (`if config.gated: self.act = glu else: ...`) is left as it is: which function runs depends
on the configuration, and the call stays opaque. A function that computes the exact GELU as a formula is not
inlined either: the rules already read an attribute holding it as `F.gelu` (`names.formula_functions`), a
fusable activation rather than a formula.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.formula_functions import exact_gelu
from adopter.analysis.names.identifiers import bound_identifiers, identifier_nodes
from adopter.analysis.names.signature import params
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import Field, SourceText


def function_attributes(init: Node | None, symbols: ModuleSymbols, src: SourceText) -> dict[str, tuple[Node, bool]]:
    """attr -> (function node, nested) for each attribute `init` (an `__init__` definition) binds to a
    same-file function evidently (the module docstring); `nested`: defined in `__init__` itself."""
    body = init.child_by_field_id(Field.BODY) if init is not None else None
    if init is None or body is None:
        return {}
    shadowed = {p.name for p in params(init, src)}
    nested: dict[str, Node] = {}
    candidates: dict[str, str] = {}
    for stmt in body.named_children:
        function = _definition(stmt)
        if function is not None:
            name_node = function.child_by_field_id(Field.NAME)
            if name_node is not None:
                nested[src.text(name_node)] = function
            continue
        bound = _self_name_binding(stmt, src)
        if bound is not None and bound[1] in nested:
            candidates[bound[0]] = bound[1]
        elif bound is not None and bound[1] not in shadowed:
            candidates[bound[0]] = bound[1]
    if not candidates:
        return {}
    assigned = _self_assignments(body, src)
    locals_ = _assigned_names(body, src)
    found: dict[str, tuple[Node, bool]] = {}
    for attr, name in candidates.items():
        if assigned.get(attr, 0) != 1:
            continue
        if name in nested:
            found[attr] = (nested[name], True)
        elif name not in locals_ and not symbols.has_class(name):
            function = symbols.function_node(name)
            if function is not None and function.type == "function_definition" and not exact_gelu(
                    src.text(function)):
                found[attr] = (function, False)
    return found


def _definition(stmt: Node) -> Node | None:
    """The function a statement defines (`def f(...)`, decorated or not), else None."""
    if stmt.type == "decorated_definition":
        stmt = stmt.child_by_field_id(Field.DEFINITION) or stmt
    return stmt if stmt.type == "function_definition" else None


def _self_name_binding(stmt: Node, src: SourceText) -> tuple[str, str] | None:
    """(attr, name) of a statement `self.<attr> = <name>`, else None."""
    expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count == 1 else None
    if expr is None or expr.type != "assignment":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    if left is None or right is None or left.type != "attribute" or right.type != "identifier":
        return None
    obj, attr = left.child_by_field_id(Field.OBJECT), left.child_by_field_id(Field.ATTRIBUTE)
    if obj is None or attr is None or src.text(obj) != "self":
        return None
    return src.text(attr), src.text(right)


def _self_assignments(body: Node, src: SourceText) -> dict[str, int]:
    """attr -> how many assignments to `self.<attr>` the body holds, at any depth (nested functions too)."""
    counts: dict[str, int] = {}
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in ("assignment", "augmented_assignment"):
            left = node.child_by_field_id(Field.LEFT)
            targets = [left] if left is not None and left.type == "attribute" else (
                [c for c in left.named_children if c.type == "attribute"] if left is not None else [])
            for target in targets:
                obj, attr = target.child_by_field_id(Field.OBJECT), target.child_by_field_id(Field.ATTRIBUTE)
                if obj is not None and attr is not None and src.text(obj) == "self":
                    counts[src.text(attr)] = counts.get(src.text(attr), 0) + 1
        stack.extend(node.named_children)
    return counts


def _assigned_names(body: Node, src: SourceText) -> set[str]:
    """Plain names the body assigns or imports (at any depth): locals that shadow a module-level function."""
    names: set[str] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in ("assignment", "augmented_assignment", "for_statement"):
            left = node.child_by_field_id(Field.LEFT)
            if left is not None:
                names.update(src.text(n) for n in bound_identifiers(left))
        elif node.type in ("import_statement", "import_from_statement", "aliased_import"):
            names.update(src.text(n) for n in identifier_nodes(node))
        stack.extend(node.named_children)
    return names
