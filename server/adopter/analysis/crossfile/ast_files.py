"""Other files read with the standard library's `ast`: the second parser, beside tree-sitter.

Cross-file reach reads files the user did not open (a package's other modules, installed libraries):
for those only module-level structure matters (imports, top-level classes, functions and assignments,
one `forward`), never positions to report or text to edit, so the standard library's parser, which
needs no grammar and gives typed nodes, reads them. The analysed file itself is always read with
tree-sitter (`adopter.analysis.parse`). Never imports or runs anything.
"""

from __future__ import annotations

import ast
import os
import sysconfig
from dataclasses import dataclass

from adopter.analysis.canonical.spellings import (
    CANONICAL,
    GELU,
    MODULES,
    RELU,
    SIGMOID,
    SILU,
    TANH,
    TRANSPARENT_METHODS,
    Key,
)
from adopter.analysis.names.ast_dotted import dotted_name

# The function each stateless torch activation computes, inverted: canonical op -> torch.nn class.
LAYER_OF_OP: dict[Key, str] = {s.op: name for name, s in MODULES.items() if s.op in (GELU, SILU, RELU, SIGMOID, TANH)}


@dataclass(frozen=True, slots=True)
class ParsedFile:
    stamp: float
    tree: ast.Module | None
    imports: dict[str, str]  # local name -> qualified (relative modules keep their dots)
    toplevel: dict[str, ast.AST]  # module-level classes, functions and assigned names
    has_global: bool = True  # whether the text holds the word `global` (a function may rebind a module name)


def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)}
    return tuple(sorted(roots))


_STDLIB = _stdlib_roots()


def in_stdlib(path: str) -> bool:
    real = os.path.realpath(path)
    return real.startswith(_STDLIB) and "site-packages" not in real and "dist-packages" not in real


def bound_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Every name function `fn` binds: its parameters, any name it assigns, defines or imports, at any depth."""
    args = fn.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n is not fn:
            names.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
    return frozenset(names)


def qualify(dotted: str, imports: dict[str, str]) -> str:
    root, dot, rest = dotted.partition(".")
    target = imports.get(root)
    if target is None:
        return dotted
    return f"{target}{dot}{rest}" if dot else target


_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def statements_in(tree: ast.AST) -> list[ast.AST]:
    """`tree` and the statements inside it (with the `except` handlers and `case` clauses that hold them) in
    `ast.walk` order: the walk without the expressions, a fifth of the nodes. Statements sit only in list
    fields of statements, handlers and cases, so every parent of one is listed and the order is the walk's."""
    out: list[ast.AST] = [tree]
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                out.extend(item for item in value if isinstance(item, _HOLDERS))
    return out


def imports_of(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for stmt in statements_in(tree):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for a in stmt.names:
                if a.name != "*":
                    sep = "" if module.endswith(".") else "."
                    out.setdefault(a.asname or a.name, f"{module}{sep}{a.name}")
    return out


def toplevel_of(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef):
            out[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = stmt
    return out


def node_at(tree: ast.Module, name: str, line: int) -> ast.AST | None:
    found: ast.AST | None = None
    for stmt in tree.body:
        names: list[str] = []
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        if name in names:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) or found is None:
                found = stmt
    return found


def entry_class(node: ast.AST, imports: dict[str, str]) -> str | None:
    if isinstance(node, ast.Tuple) and node.elts:
        return None  # a class with arguments (`(ClippedGELU, {"min": -10})`): not the plain layer
    dotted = dotted_name(node)
    return None if dotted is None else qualify(dotted, imports)


def peel(node: ast.AST) -> ast.AST:
    """The value under casts and copies (`x.float()`, `y.to(x.dtype)`, `.type_as(x)`)."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in TRANSPARENT_METHODS):
        node = node.func.value
    return node


def elementwise_layer(forward: ast.FunctionDef, imports: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The torch layer a `forward` computes when it is one elementwise activation of its input."""
    params = [a.arg for a in forward.args.posonlyargs + forward.args.args]
    if len(params) != 2 or forward.args.vararg or forward.args.kwonlyargs:
        return None
    x = params[1]
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    call = peel(body[0].value)
    if not isinstance(call, ast.Call) or not call.args:
        return None
    first = peel(call.args[0])
    dotted = dotted_name(call.func)
    if dotted is None or not isinstance(first, ast.Name) or first.id != x or len(call.args) > 1:
        return None
    key: Key = ("function", qualify(dotted, imports))
    layer = LAYER_OF_OP.get(CANONICAL.get(key, key))
    if layer is None:
        return None
    kwargs: list[tuple[str, str]] = []
    for k in call.keywords:
        if k.arg == "inplace":
            continue
        if layer == "torch.nn.GELU" and k.arg == "approximate" and isinstance(k.value, ast.Constant):
            kwargs.append(("approximate", repr(k.value.value).replace("'", '"')))
            continue
        return None
    return layer, tuple(kwargs)
