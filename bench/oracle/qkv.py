"""Family 9 as the labelling defines it (bench/data/LABELLING.md, "Family 9"), beyond the head-split patterns.

Two questions the patterns alone do not answer:
- `attends`: three projections of one input with one width that feed attention however the code splits heads
  (a (T, B, C) layout, another projection first, `nn.MultiheadAttention` or SDPA taking them): two of them meet
  at one product (the scores, or SDPA itself) and the third reaches that product or a product computed from it
  (the weights times v). Three projections that feed no attention (an MLP's, a detection head's) are no site.
- `caller_aliased`: "the same input" is the same value inside the forward. Projections of different parameters
  of the forward that calls them are no site even when a caller passes one tensor for all of them (SAM's
  `Attention(q, k, v)` called with `q=k=v`): the aliasing is the caller's, not the class's code.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterable

import torch

from oracle.source import parsed
from oracle.trace import frames

_BATCHED = {torch.ops.aten.bmm.default, torch.ops.aten.baddbmm.default}
_DEPTH = 32  # ops between a projection and its attention product: views, a head split, another projection


def _is_product(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and (node.target in _BATCHED or "scaled_dot_product" in str(node.target))


def _reach(start: torch.fx.Node, stop_at_products: bool) -> set[torch.fx.Node]:
    """Nodes reached from `start` through its users within `_DEPTH` steps; with `stop_at_products`, only the
    first attention products met on each path."""
    seen, found, frontier = {start}, set(), [start]
    for _ in range(_DEPTH):
        following: list[torch.fx.Node] = []
        for node in frontier:
            for user in node.users:
                if user in seen:
                    continue
                seen.add(user)
                if _is_product(user):
                    found.add(user)
                    if stop_at_products:
                        continue
                elif not stop_at_products:
                    found.add(user)
                following.append(user)
        frontier = following
    return found


def _is_softmax(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and "softmax" in str(node.target)


def attends(outputs: Iterable[torch.fx.Node]) -> bool:
    """Whether the projections' outputs feed one attention: all three meet at SDPA, or two meet at a product
    (the scores) and the third reaches a product computed from that one's softmax (the weights times v). A
    product of gated projections with no softmax between (a triangle multiplication) is no attention."""
    reached = [_reach(n, True) for n in outputs]
    for i, j in itertools.combinations(range(len(reached)), 2):
        others = [reached[k] for k in range(len(reached)) if k not in (i, j)]
        for product in reached[i] & reached[j]:
            if "scaled_dot_product" in str(product.target):
                if any(product in other for other in others):
                    return True
                continue
            weighted: set[torch.fx.Node] = set()
            for node in _reach(product, False):
                if _is_softmax(node):
                    weighted |= _reach(node, False)
            if any(other & weighted for other in others):
                return True
    return False


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (node.end_lineno or 0):
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def _assigned_before(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, line: int) -> bool:
    for node in ast.walk(fn):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor | ast.NamedExpr):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        if node is not fn and getattr(node, "lineno", line) < line and any(
                isinstance(t, ast.Name) and t.id == name for tgt in targets for t in ast.walk(tgt)):
            return True
    return False


def parameter_projected(path: str, line: int) -> str | None:
    """The forward parameter a projection call at `path:line` projects as it came in (`self.q_proj(q)` where
    `q` is a parameter of the enclosing function, not bound again before the line); None when the line
    projects a value the function computes, or does not say which (several names, no such call)."""
    tree = parsed(path)
    fn = _function_at(tree, line) if tree is not None else None
    if fn is None:
        return None
    a = fn.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} - {"self"}
    names = {call.args[0].id for call in ast.walk(fn)
             if isinstance(call, ast.Call) and call.lineno <= line <= (call.end_lineno or call.lineno)
             and isinstance(call.func, ast.Attribute) and len(call.args) == 1 and not call.keywords
             and isinstance(call.args[0], ast.Name)}
    if len(names) != 1:
        return None
    name = names.pop()
    return name if name in params and not _assigned_before(fn, name, line) else None


def _projection_line(nodes: Iterable[torch.fx.Node], is_model_file: Callable[[str], bool]) -> tuple[str, int] | None:
    """The model line that called the projection: the innermost model frame of its matrix product."""
    for node in nodes:
        if node.op == "call_function" and node.target in (torch.ops.aten.addmm.default, torch.ops.aten.mm.default):
            for f, ln in reversed(frames(node)):
                if is_model_file(f):
                    return f, ln
    return None


def caller_aliased(members: Iterable[Iterable[torch.fx.Node]], is_model_file: Callable[[str], bool]) -> bool:
    """Whether the projections take different parameters of the forward that calls them (so only a caller
    makes them one tensor)."""
    params: set[str] = set()
    for nodes in members:
        where = _projection_line(nodes, is_model_file)
        name = parameter_projected(*where) if where is not None else None
        if name is None:
            return False
        params.add(name)
    return len(params) >= 2
