"""Python's `ast` of a whole source text, parsed once per text and shared (read only) by the strategies,
the splicer and the verification: a fix decision used to parse the same 100 KB file five to ten times."""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict

KEEP = 8  # texts kept: the open document's versions and a fix's intermediate results

_TREES: OrderedDict[str, ast.Module] = OrderedDict()
_LOCK = threading.Lock()


def module_tree(source: str) -> ast.Module:
    """The `ast.Module` of `source` (raises `SyntaxError` like `ast.parse`); callers must not mutate it."""
    with _LOCK:
        tree = _TREES.get(source)
        if tree is not None:
            _TREES.move_to_end(source)
            return tree
    tree = ast.parse(source)
    with _LOCK:
        _TREES[source] = tree
        while len(_TREES) > KEEP:
            _TREES.popitem(last=False)
    return tree


_NODES: OrderedDict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = OrderedDict()


def all_nodes(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of `tree` in `ast.walk` order, listed once per tree (strategies scan a module's nodes
    several times per decision; the list is held with its tree, so an id is never reused while cached)."""
    with _LOCK:
        hit = _NODES.get(id(tree))
        if hit is not None and hit[0] is tree:
            return hit[1]
    listed = _walk(tree)
    with _LOCK:
        _NODES[id(tree)] = (tree, listed)
        while len(_NODES) > KEEP:
            _NODES.popitem(last=False)
    return listed


def _walk(tree: ast.AST) -> tuple[ast.AST, ...]:
    """`tuple(ast.walk(tree))` (the same breadth-first order) without a generator per node: a third faster."""
    out: list[ast.AST] = [tree]
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                out.append(value)
            elif isinstance(value, list):
                out.extend(item for item in value if isinstance(item, ast.AST))
    return tuple(out)
