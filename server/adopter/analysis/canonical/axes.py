"""Which axes a reduction's `dim` names when it is written as a list: the trailing k axes of a tensor.

`x.mean(dim=dims)` with `dims = [-(i + 1) for i in range(len(self.normalized_shape))]` (labml's LayerNorm),
`(-2, -1)`, `tuple(range(-n, 0))`: each names the last k axes, whatever k is, which is what `F.layer_norm`
normalises over. The text is read, never run: a comprehension over `range` whose bounds hold one unknown
size is evaluated here for sizes 1 to 4 with that size substituted, by an evaluator of integer arithmetic.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_SIZES = (1, 2, 3, 4)
_LONGEST = 200  # longer texts are not axis lists worth reading


def trailing_axes(text: str) -> bool:
    """Whether `text` (an axis argument as written) names the last k axes for every k it can take: `-1`, a
    literal sequence of -1..-k in any order, or a `range` or comprehension over one building them."""
    text = text.strip()
    if text == "-1":
        return True
    if len(text) > _LONGEST:
        return False
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return False
    build = _builder(tree)
    if build is None:
        return False
    for k in _SIZES:
        size = _Size(k)
        try:
            axes = build(size)
        except (_Unreadable, ValueError, OverflowError):
            return False
        if (len(size.seen) > 1 or not axes or len(set(axes)) != len(axes)
                or set(axes) != set(range(-len(axes), 0))):
            return False
    return True


class _Size:
    """The value given to the one expression the text leaves unknown, and the expressions seen as unknown."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.seen: set[str] = set()


class _Unreadable(Exception):
    """A part of the text this evaluator does not read."""


def _builder(tree: ast.expr) -> Callable[[_Size], list[int]] | None:
    """A function of the unknown size giving the axes `tree` lists; None for a form not read."""
    if isinstance(tree, ast.List | ast.Tuple):
        return lambda k: [_int(e, {}, k) for e in tree.elts]
    if (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id in ("list", "tuple")
            and len(tree.args) == 1 and not tree.keywords):
        inner = tree.args[0]
        if isinstance(inner, ast.GeneratorExp | ast.ListComp):
            return _builder(ast.ListComp(inner.elt, inner.generators))
        if _is_range(inner):
            assert isinstance(inner, ast.Call)
            return lambda k: list(range(*(_int(a, {}, k) for a in inner.args)))
        return None
    if isinstance(tree, ast.ListComp | ast.GeneratorExp) and len(tree.generators) == 1:
        gen = tree.generators[0]
        if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name) or not _is_range(gen.iter):
            return None
        name, element, bounds = gen.target.id, tree.elt, gen.iter
        assert isinstance(bounds, ast.Call)
        return lambda k: [_int(element, {name: i}, k)
                          for i in range(*(_int(a, {}, k) for a in bounds.args))]
    return None


def _is_range(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
            and 1 <= len(node.args) <= 3 and not node.keywords)


def _int(node: ast.expr, names: dict[str, int], k: _Size) -> int:
    """The integer `node` computes, `names` bound, the unknown size `k`; `_Unreadable` for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _int(node.operand, names, k)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        a, b = _int(node.left, names, k), _int(node.right, names, k)
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    if isinstance(node, ast.Call | ast.Attribute | ast.Name) and not _is_range(node):
        k.seen.add(ast.dump(node))  # the size the text does not fix (two different ones: not read)
        return k.value
    raise _Unreadable(ast.dump(node))
