"""The rank a forward expects of its first input, read from its own source (`b, c, h, w = x.shape`,
`rearrange(x, "b n (h d) -> ...")`, `assert x.dim() == 4`), and the inputs to retry when the first one is
rejected: the same features at that rank first, then the other usual layouts (`inputs.alternatives`)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import torch
from torch import nn

from adopter.construction.inputs import alternatives, first_layer
from adopter.construction.names import SEQ, SPATIAL

_EINOPS = ("rearrange", "reduce", "repeat", "pack", "unpack")
DEPTH = 8  # frames or slices of a volume made up for a rank-5 input


def _forward_def(model: Any) -> ast.FunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(type(model).forward))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    fn = tree.body[0] if tree.body else None
    return fn if isinstance(fn, ast.FunctionDef) else None


def _shape_of(node: ast.expr, name: str) -> bool:
    """`name.shape` or `name.size()`."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return isinstance(node.value, ast.Name) and node.value.id == name
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"
            and not node.args and isinstance(node.func.value, ast.Name) and node.func.value.id == name)


def _pattern_rank(pattern: str) -> int | None:
    """The axes an einops pattern's input side names (a parenthesised group is one axis); None with `...`."""
    left = pattern.split("->")[0]
    if "..." in left or "," in left:
        return None
    depth, axes, in_word = 0, 0, False
    for ch in left:
        if ch == "(":
            if depth == 0:
                axes += 1
            depth += 1
            in_word = False
        elif ch == ")":
            depth -= 1
        elif ch.isspace():
            in_word = False
        elif depth == 0 and not in_word:
            axes += 1
            in_word = True
    return axes or None


def _rank_in(node: ast.AST, name: str) -> int | None:
    """The rank one statement or expression says `name` has, or None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
        elts = node.targets[0].elts
        if _shape_of(node.value, name) and not any(isinstance(e, ast.Starred) for e in elts):
            return len(elts)
    if isinstance(node, ast.Call):
        fn = node.func
        called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if (called in _EINOPS and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
                and node.args[0].id == name and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            return _pattern_rank(node.args[1].value)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        left, right = node.left, node.comparators[0]
        if isinstance(right, ast.Constant) and isinstance(right.value, int) and _ndim_of(left, name):
            return right.value
    return None


def _ndim_of(node: ast.expr, name: str) -> bool:
    """`name.ndim`, `name.dim()`, `name.ndimension()` or `len(name.shape)`."""
    if isinstance(node, ast.Attribute) and node.attr == "ndim":
        return isinstance(node.value, ast.Name) and node.value.id == name
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("dim", "ndimension"):
        return isinstance(node.func.value, ast.Name) and node.func.value.id == name
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
            and len(node.args) == 1 and _shape_of(node.args[0], name))


def forward_rank(model: Any) -> int | None:
    """The rank the forward's own code reads its first input as, the first such reading in source order
    (an unpacking of its shape, an einops pattern applied to it, an equality on its rank); None when it
    reads none or the source is not available."""
    fn = _forward_def(model)
    if fn is None:
        return None
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]][1:]
    if not params:
        return None
    name = params[0]
    found = [(getattr(n, "lineno", 0), getattr(n, "col_offset", 0), r) for n in ast.walk(fn)
             if (r := _rank_in(n, name)) is not None and 1 <= r <= 6]
    return min(found)[2] if found else None


def at_rank(x: torch.Tensor, rank: int, *, seq: int = SEQ, spatial: int = SPATIAL) -> torch.Tensor | None:
    """A tensor of `rank` with `x`'s batch and features (the last axis of a sequence or vector, the channels
    of an image or volume), laid out as such inputs are: `(B, F)`, `(B, T, F)`, `(B, F, H, W)`,
    `(B, F, D, H, W)`; None when `x` is not a floating batch or already has that rank."""
    if not x.is_floating_point() or x.dim() < 2 or x.dim() == rank:
        return None
    features = x.shape[-1] if x.dim() <= 3 else x.shape[1]
    b = x.shape[0]
    shape = {2: (b, features), 3: (b, seq, features), 4: (b, features, spatial, spatial),
             5: (b, features, DEPTH, spatial, spatial)}.get(rank)
    return torch.randn(shape, device=x.device, dtype=x.dtype) if shape is not None else None


def _in_size(layer: nn.Module) -> int | None:
    for attr in ("in_channels", "in_features", "num_features", "num_channels", "embed_dim", "input_size"):
        v = getattr(layer, attr, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    shape = getattr(layer, "normalized_shape", None)
    return int(shape[-1]) if isinstance(shape, tuple) and shape else None


def other_widths(model: nn.Module, x: torch.Tensor, most: int = 3) -> list[torch.Tensor]:
    """`x` with its features as many as another layer of the first layer's type takes: the layer registered
    first is not always the one applied first (an offset network built before the projections it feeds)."""
    layer = first_layer(model)
    if layer is None or not x.is_floating_point() or x.dim() < 2:
        return []
    axis = 1 if isinstance(layer, (nn.modules.conv._ConvNd, nn.modules.batchnorm._BatchNorm, nn.GroupNorm)) else -1
    own = x.shape[axis]
    sizes = [n for n in dict.fromkeys(_in_size(m) for m in model.modules() if type(m) is type(layer))
             if n is not None and n != own][:most]
    out = []
    for n in sizes:
        shape = list(x.shape)
        shape[axis] = n
        out.append(torch.randn(shape, device=x.device, dtype=x.dtype))
    return out


def candidates(model: Any, x: torch.Tensor) -> list[torch.Tensor]:
    """Inputs to try, in order, when `model` rejects `x`: `x`'s features at the rank its forward reads, `x`
    as wide as another layer like its first takes (`other_widths`), then the other usual layouts of `x`
    (`alternatives`); each shape once, `x`'s own never."""
    rank = forward_rank(model)
    first = at_rank(x, rank) if rank is not None else None
    out: list[torch.Tensor] = []
    seen = {tuple(x.shape)}
    widths = other_widths(model, x) if isinstance(model, nn.Module) else []
    for t in [*([first] if first is not None else []), *widths, *alternatives(x)]:
        if tuple(t.shape) not in seen:
            seen.add(tuple(t.shape))
            out.append(t)
    return out
