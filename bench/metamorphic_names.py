"""Name facts of a parsed module for the metamorphic rewrites: what binds what, fresh names, renaming passes."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Iterator

BUILTINS = frozenset(dir(builtins))
NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def identifiers(tree: ast.AST) -> set[str]:
    """Every identifier the module spells: names, attributes, arguments, definitions, import aliases."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
    return out


def fresh(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ...: the first not in `taken` (which it joins)."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def strings(tree: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def module_imports(tree: ast.Module) -> dict[str, str]:
    """Top-level (and guarded) import bindings: bound name -> dotted target (`F` -> `torch.nn.functional`)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def bound_elsewhere(tree: ast.Module, name: str) -> bool:
    """Whether `name` is bound by anything but an import: an assignment, a parameter, a def or class."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
    return False


def own_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of statements, not descending into nested functions, lambdas or classes (comprehensions: yes)."""
    stack = list(body)[::-1]
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(child, NESTED_SCOPES):
                # a nested def's decorators and defaults run in this scope
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    stack.extend([*child.decorator_list, *child.args.defaults,
                                  *[d for d in child.args.kw_defaults if d is not None]])
                continue
            stack.append(child)


def params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names


def stores(nodes: Iterable[ast.AST]) -> list[str]:
    """Names bound by assignment among `nodes`, in order, without repeats."""
    out: dict[str, None] = {}
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out[n.id] = None
    return list(out)


def loads(nodes: Iterable[ast.AST]) -> list[str]:
    out: dict[str, None] = {}
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out[n.id] = None
    return list(out)


class NameRenamer(ast.NodeTransformer):
    """Renames `Name` nodes (and, with `strings`, string constants equal to a name) by a mapping."""

    def __init__(self, mapping: dict[str, str], strings: bool = False) -> None:
        self.mapping = mapping
        self.strings = strings

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if self.strings and isinstance(node.value, str) and node.value in self.mapping:
            node.value = self.mapping[node.value]
        return node


def rename_in(nodes: Iterable[ast.AST], mapping: dict[str, str]) -> None:
    """Renames Name nodes among already-collected `nodes` (in place)."""
    for n in nodes:
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an attribute chain on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def resolved(node: ast.AST, imports: dict[str, str]) -> str | None:
    """The dotted target of an attribute chain through the module's imports (`F.softmax` -> `torch.nn.functional.softmax`)."""
    text = dotted(node)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    if head not in imports:
        return None
    return imports[head] + ("." + rest if rest else "")
