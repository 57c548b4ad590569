"""Same-file functions that choose a layer class by tests on a parameter: which class a call returns.

pix2pix's `get_norm_layer(norm_type)` (copied into many packages) binds a local on each branch of a string
test and returns it:

    if norm_type == "batch":
        norm_layer = functools.partial(nn.BatchNorm2d, affine=True)
    elif norm_type == "instance":
        norm_layer = functools.partial(nn.InstanceNorm2d, affine=False)
    elif norm_type == "none":
        def norm_layer(x): return Identity()
    else:
        raise NotImplementedError(norm_type)
    return norm_layer

and a type-dispatch factory returns a class chosen by `is` tests on a class argument (`if norm_layer is
nn.BatchNorm2d: return BatchNormAct2d`). Read statically (tree-sitter nodes, never executed), the function's
top-level statements are followed in order for the key a call passes: a test `p == "lit"` / `"lit" == p` /
`p is Cls` of a parameter `p` is decided when the call's value of `p` is evident (`Passed`), `else` follows,
a binding of the local replaces its value, the first `return` reached gives the result. Anything else on a
path the key takes (a test not of that form, a `raise`, a nested definition or loop binding the local, a
return of something that names no class) leaves the call not evident.

When the key is not evident, `chosen_classes` gives every class a return can yield, provided each return is
a class or the local and each binding of the local is a class: the caller decides what to make of several
(`scope.bindings` takes them only when all are BatchNorms, the same layer whichever the key).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import KEYWORD_ONLY, POSITIONAL

__all__ = ["Choice", "chosen_classes", "own_nodes"]

# (parameter, its position or -1 when keyword-only, "str" | "class") -> what the call passes for it:
# the string (without quotes) or the qualified class; None when not evident.
Passed = Callable[[str, int, str], str | None]
# A value node -> the qualified classes it names (`nn.BatchNorm2d`, `partial(nn.BatchNorm2d, ...)`), or None.
ClassValues = Callable[[Node], list[str] | None]

_SKIPPED = frozenset({"comment", "pass_statement", "expression_statement", "assert_statement"})


@dataclass(frozen=True, slots=True)
class Choice:
    """The classes a call of the function returns; `decided`: the call's key chose the one path taken."""

    classes: tuple[str, ...]
    decided: bool


class _Unknown(Exception):
    """The path taken is not evident."""


def chosen_classes(function: Node, src: SourceText, class_values: ClassValues, passed: Passed) -> Choice | None:
    """What `function` returns for a call (see the module doc), else None."""
    body = function.child_by_field_id(Field.BODY)
    if body is None:
        return None
    stmts = [c for c in body.named_children if c.type != "comment"]
    returns = [r for r in own_nodes(body) if r.type == "return_statement"]
    names = {src.text(r.named_children[0]) for r in returns
             if r.named_child_count == 1 and r.named_children[0].type == "identifier"}
    if not returns or len(names) > 1:
        return None
    local = names.pop() if names else None
    ps = params(function, src)
    index = {p.name: (-1 if p.kind is KEYWORD_ONLY else i) for i, p in enumerate(ps)
             if p.kind in (POSITIONAL, KEYWORD_ONLY)}
    if local is not None and local in index:
        return None  # a parameter returned (`return norm_layer` of the argument itself): not a choice
    reader = _Reader(src, class_values, passed, local, index)
    # a parameter the function rebinds (`norm_type = norm_type.lower()`) is not the call's value in its tests
    reader.rebound = {p for p in index if any(_stores(n, p, src) for n in own_nodes(body))}
    try:
        found = reader.block(stmts)
    except _Unknown:
        found = None
    if found is not None:
        return Choice(tuple(found), True)
    every = reader.every(body, returns)
    return Choice(tuple(every), False) if every else None


def own_nodes(node: Node) -> list[Node]:
    """The nodes of a function body outside nested definitions."""
    out: list[Node] = []
    stack = list(node.named_children)
    while stack:
        n = stack.pop()
        out.append(n)
        if n.type not in ("function_definition", "class_definition", "decorated_definition", "lambda"):
            stack.extend(n.named_children)
    return out


class _Reader:
    def __init__(self, src: SourceText, class_values: ClassValues, passed: Passed, local: str | None,
                 index: dict[str, int]) -> None:
        self.src, self.class_values, self.passed, self.local, self.index = src, class_values, passed, local, index
        self.value: list[str] | None = None  # the local's classes on the path followed
        self.rebound: set[str] = set()

    def block(self, stmts: list[Node]) -> list[str] | None:
        """The classes returned by the first `return` the statements reach; None when they fall through."""
        for stmt in stmts:
            if stmt.type in _SKIPPED and not self._binds(stmt):
                continue
            if stmt.type == "return_statement":
                value = stmt.named_children[0] if stmt.named_child_count == 1 else None
                if value is None:
                    raise _Unknown
                if self.local is not None and value.type == "identifier" and self.src.text(value) == self.local:
                    if self.value is None:
                        raise _Unknown
                    return self.value
                classes = self.class_values(value)
                if not classes:
                    raise _Unknown
                return classes
            if stmt.type == "if_statement":
                branch = self._taken(stmt)
                if branch is not None:
                    found = self.block([c for c in branch.named_children if c.type != "comment"])
                    if found is not None:
                        return found
                continue
            if stmt.type == "expression_statement" and stmt.named_child_count == 1 \
                    and stmt.named_children[0].type == "assignment":
                assignment = stmt.named_children[0]
                left = assignment.child_by_field_id(Field.LEFT)
                right = assignment.child_by_field_id(Field.RIGHT)
                if left is not None and left.type == "identifier" and self.src.text(left) == self.local:
                    classes = self.class_values(right) if right is not None else None
                    if not classes:
                        raise _Unknown
                    self.value = classes
                    continue
                if self._binds(stmt):
                    raise _Unknown
                continue
            raise _Unknown  # a raise, a loop, a nested definition, anything else on the path taken
        return None

    def _taken(self, stmt: Node) -> Node | None:
        """The block of the clause of an `if` statement the key takes (None: no clause runs)."""
        clauses: list[tuple[Node | None, Node | None]] = [
            (stmt.child_by_field_id(Field.CONDITION), stmt.child_by_field_id(Field.CONSEQUENCE))]
        for c in stmt.children_by_field_name("alternative"):
            if c.type == "elif_clause":
                clauses.append((c.child_by_field_id(Field.CONDITION), c.child_by_field_id(Field.CONSEQUENCE)))
            elif c.type == "else_clause":
                clauses.append((None, c.child_by_field_id(Field.BODY)))
        for test, block in clauses:
            if test is None or self._test(test):
                return block
        return None

    def _test(self, test: Node) -> bool:
        """`p == "lit"`, `"lit" == p`, `p != "lit"`, `p is Cls`, `p is not Cls`, decided for the call."""
        if test.type == "parenthesized_expression" and test.named_child_count == 1:
            return self._test(test.named_children[0])
        if test.type != "comparison_operator" or test.named_child_count != 2:
            raise _Unknown
        ops = [self.src.text(c) for c in test.children if not c.is_named]
        left, right = test.named_children
        if ops in (["=="], ["!="]):
            if right.type == "identifier" and left.type == "string":
                left, right = right, left
            literal = _string(right, self.src)
            if left.type != "identifier" or literal is None:
                raise _Unknown
            key = self._passed(self.src.text(left), "str")
            return (key == literal) == (ops == ["=="])
        if ops in (["is"], ["is not"]) and left.type == "identifier" and right.type in ("identifier", "attribute"):
            classes = self.class_values(right)
            key = self._passed(self.src.text(left), "class")
            if not classes or len(classes) != 1:
                raise _Unknown
            return (key == classes[0]) == (ops == ["is"])
        raise _Unknown

    def _passed(self, name: str, kind: str) -> str:
        if name not in self.index or name in self.rebound:
            raise _Unknown
        key = self.passed(name, self.index[name], kind)
        if key is None:
            raise _Unknown
        return key

    def _binds(self, stmt: Node) -> bool:
        """Whether a statement binds the returned local anywhere inside it (other than as read above)."""
        return self.local is not None and any(_stores(n, self.local, self.src) for n in [stmt, *own_nodes(stmt)])

    def every(self, body: Node, returns: list[Node]) -> list[str] | None:
        """Every class a return can yield when the key is not evident: each return a class or the local,
        each binding of the local an assignment of a class; None otherwise."""
        out: list[str] = []
        for r in returns:
            value = r.named_children[0] if r.named_child_count == 1 else None
            if value is None:
                return None
            if self.local is not None and value.type == "identifier" and self.src.text(value) == self.local:
                continue
            classes = self.class_values(value)
            if not classes:
                return None
            out.extend(c for c in classes if c not in out)
        if self.local is not None:
            bound = 0
            for n in [body, *own_nodes(body)]:
                if n.type == "assignment" and (left := n.child_by_field_id(Field.LEFT)) is not None \
                        and left.type == "identifier" and self.src.text(left) == self.local:
                    right = n.child_by_field_id(Field.RIGHT)
                    classes = self.class_values(right) if right is not None else None
                    if not classes:
                        return None
                    out.extend(c for c in classes if c not in out)
                    bound += 1
                elif _stores(n, self.local, self.src):  # a tuple target, a loop, a definition of the name
                    return None
            if not bound:
                return None
        return out


def _stores(n: Node, name: str, src: SourceText) -> bool:
    """Whether node `n` itself binds `name`: a definition of that name, or an assignment, loop, walrus or
    `with ... as` whose target names it."""
    if n.type in ("function_definition", "class_definition"):
        found = n.child_by_field_id(Field.NAME)
        return found is not None and src.text(found) == name
    if n.type in ("assignment", "augmented_assignment", "for_statement", "named_expression", "with_item",
                  "as_pattern"):
        left = n.child_by_field_id(Field.LEFT) or n.child_by_field_id(Field.NAME) or n
        return name in src.text(left).replace("(", " ").replace(",", " ").replace("=", " ").split()
    return False


def _string(node: Node, src: SourceText) -> str | None:
    text = src.text(node)
    if node.type == "string" and len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" \
            and "\\" not in text and text[1:-1].count(text[0]) == 0:
        return text[1:-1]
    return None
