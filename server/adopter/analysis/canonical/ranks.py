"""Rank facts the canonical pass learns besides the ranks it tracks forward: from a tensor's later uses, and
from the shape a creation function is given.

Two sources, both what the code itself proves when it runs:

- *Uses.* `torch.bmm` takes 3-D operands, so `bmm(w.unsqueeze(1), memory)` proves `w` 2-D there, and where
  `w = F.softmax(a, dim=1)`, `a` 2-D at the softmax: its `dim=1` is the last axis (styletts2's location-sensitive
  attention). `required_ranks` walks a forward backwards from each `bmm`, through ops whose output has the rank
  of their input (and `unsqueeze`, one more), and records the rank of each value at the op that reads it.
  Rebinding a name, or an in-place op that changes a rank, ends what is known of it; control flow that binds
  it does too (a later use proves nothing about a value an `if` may replace).
- *Shapes.* `torch.randn((n, e))`, `torch.zeros(b, t)`, `torch.full((n, e), v)`: one axis per size written;
  the same for sizes (or axes) written as one list or tuple literal where a shape is taken (`x.view([n, c, h,
  w])`, `torch.reshape(x, shape=[b, c])`, `x.permute((0, 2, 1))`, `x.repeat([1, h, 1, 1])`, `x.new_full((t, e),
  v)`, `x.new_zeros((n, t, d))`).

The pass plugs these in where it reads a value whose rank it does not know (`_Pass.op`), so every rule sees
`dim=1` of a 2-D tensor as `dim=-1`; where nothing proves a rank, nothing changes.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Final

from adopter.analysis.canonical.spellings import CANONICAL, TRANSPARENT_METHODS
from adopter.dsl.types import (
    FUNCTION_OP,
    METHOD_OP,
    MODULE_OP,
    OPERATOR_OP,
    Block,
    Branch,
    Expr,
    Loop,
    Op,
    Ref,
    Value,
)

# Ops whose result has the rank of their first argument.
SAME_RANK = frozenset({
    ("method", "transpose"), ("operator", "cast"), ("function", "torch.nn.functional.softmax"),
    ("function", "torch.nn.functional.log_softmax"), ("function", "torch.nn.functional.dropout"),
    ("function", "torch.nn.functional.gelu"), ("function", "torch.nn.functional.silu"),
    ("function", "torch.nn.functional.relu"), ("function", "torch.sigmoid"), ("function", "torch.tanh"),
    ("method", "masked_fill"), ("operator", "neg"), ("function", "torch.rsqrt"), ("function", "torch.sqrt"),
    ("method", "pow"), ("function", "torch.erf"),
})
# `torch.bmm(a, b)`: both operands are 3-D by contract.
_BATCHED = frozenset({("function", "torch.bmm"), ("method", "bmm")})
_BATCHED_TARGETS = frozenset(target for _, target in _BATCHED)
# In-place methods that change the rank of the tensor they are called on (no name is rebound).
_RESHAPING_IN_PLACE = frozenset({"unsqueeze_", "squeeze_", "resize_", "resize_as_", "as_strided_", "set_"})
# Creation functions whose positional arguments are the sizes (`torch.full`: its first one only).
_CREATED = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty"})
CREATION_TARGETS = _CREATED | {"torch.full"}  # the targets `created_rank` reads (a caller's cheap test first)
# Ops that take a shape as one sequence: methods whose second argument it is (after the tensor), and
# `torch.reshape(x, shape)`. The targets `listed_rank` reads (a caller's cheap test first).
_SHAPED_METHODS = frozenset({"view", "reshape", "permute", "expand", "repeat", "new_full", "new_zeros", "new_ones",
                             "new_empty"})
LISTED_TARGETS = _SHAPED_METHODS | {"torch.reshape"}

Need = dict[tuple[int, str], int]  # (id of the op reading a name, the name) -> the rank it has there


class RanksAsked(Exception):
    """A reading of the canonical pass consulted the ranks of a pass that does not track them (`UNTRACKED`)."""


# The ranks of a canonical pass that does not track them. Most forwards hold no op whose canonical form depends on
# a rank (`normalise.canonical_forward` runs them so, and the rest again with ranks tracked): no writer of ranks
# runs with it, and every reading that consults ranks goes through `consulted`, which raises `RanksAsked` instead
# of answering from it. It is never written (`tests/analysis/test_untracked_ranks.py`).
UNTRACKED: Final[dict[str, int]] = {}


def consulted(ranks: Mapping[str, int]) -> Mapping[str, int]:
    """`ranks`, asked by a reading whose answer depends on them; `RanksAsked` where they are not tracked."""
    if ranks is UNTRACKED:
        raise RanksAsked
    return ranks


def required_ranks(block: Block, same_rank_modules: frozenset[str] = frozenset()) -> Need:
    """The ranks later uses prove for values at the ops that read them (see the module docstring);
    `same_rank_modules`: the module targets (`self.attend`) whose call keeps its input's rank."""
    need: Need = {}
    # Only a `bmm` proves a rank, and `_back` starts knowing nothing: the statements after the last `bmm` of
    # the block (nested blocks are not read) prove nothing, so the walk starts at it (most forwards: none).
    last = len(block)
    while last and not (isinstance(op := block[last - 1], Op) and op.target in _BATCHED_TARGETS
                        and (op.kind._value_, op.target) in _BATCHED):
        last -= 1
    if last:
        _back(block[:last], {}, need, same_rank_modules)
    return need


def _back(block: Block, want: dict[str, int], need: Need, modules: frozenset[str]) -> None:
    for stmt in reversed(block):
        if isinstance(stmt, Op):
            _step(stmt, want, need, modules)
        elif isinstance(stmt, Branch | Loop):
            for name in _changed(stmt):
                want.pop(name, None)


def _changed(stmt: Branch | Loop) -> set[str]:
    """The names a nested block binds, or reshapes in place."""
    found: set[str] = set()
    for path in stmt.paths if isinstance(stmt, Branch) else (stmt.body,):
        for s in path:
            if isinstance(s, Op):
                found.update(s.outputs)
                if _reshapes_in_place(s) and isinstance(s.args[0], Ref):
                    found.add(s.args[0].name)
            elif isinstance(s, Branch | Loop):
                found |= _changed(s)
    return found


def _reshapes_in_place(op: Op) -> bool:
    return op.kind == METHOD_OP and op.target in _RESHAPING_IN_PLACE and bool(op.args)


def _step(op: Op, want: dict[str, int], need: Need, modules: frozenset[str]) -> None:
    out_rank = want.get(op.outputs[0]) if len(op.outputs) == 1 else None
    for name in op.outputs:
        want.pop(name, None)
    first = op.args[0].name if op.args and isinstance(op.args[0], Ref) else None
    if first is not None and _reshapes_in_place(op):
        want.pop(first, None)
    key = (op.kind._value_, op.target)
    if key in _BATCHED:
        for a in op.args[:2]:
            if isinstance(a, Ref):
                _want(want, a.name, 3)
    elif out_rank is not None and first is not None:
        canonical = CANONICAL.get(key, key)
        if (canonical in SAME_RANK or (op.kind == METHOD_OP and op.target in TRANSPARENT_METHODS)
                or (op.kind == MODULE_OP and op.target in modules)):
            _want(want, first, out_rank)
        elif key in (("method", "unsqueeze"), ("function", "torch.unsqueeze")) and out_rank >= 1:
            _want(want, first, out_rank - 1)
    for a in op.args:
        if isinstance(a, Ref) and a.name in want:
            here = (id(op), a.name)
            if need.get(here, want[a.name]) != want[a.name]:
                need.pop(here)  # the same op object read at two places that disagree: nothing is proved
            else:
                need[here] = want[a.name]


def _want(want: dict[str, int], name: str, rank: int) -> None:
    """Record a rank a later use proves; two uses that disagree (code that cannot run) prove nothing."""
    if want.get(name, rank) != rank:
        want.pop(name)
    else:
        want[name] = rank


def created_rank(op: Op, lists: Mapping[str, tuple[Value, ...]]) -> int | None:
    """The rank of a tensor a creation function makes from sizes written at the call (`torch.randn(b, t)`,
    `torch.zeros((n, e))` with the tuple a literal, `torch.full((n, e), v)`); None when the sizes are held
    elsewhere (`torch.zeros(shape)`, `torch.ones(*shape)`)."""
    if op.kind != FUNCTION_OP or len(op.outputs) != 1 or not op.args:
        return None
    if op.target == "torch.full":
        sizes: tuple[Value, ...] = op.args[:1]
    elif op.target in _CREATED:
        sizes = op.args
    else:
        return None
    if any((isinstance(a, Ref) and a.name.startswith("*")) or getattr(a, "text", "").startswith("*") for a in sizes):
        return None
    if len(sizes) > 1:
        return None if any(isinstance(a, Ref) and a.name in lists for a in sizes) else len(sizes)
    size = sizes[0]
    if isinstance(size, Ref) and size.name in lists:
        items = lists[size.name]
        return None if any(getattr(a, "text", "").startswith("*") for a in items) else len(items)
    return 1 if getattr(size, "text", "").strip().isdigit() else None


def listed_rank(op: Op, lists: Mapping[str, tuple[Value, ...]]) -> int | None:
    """The rank of a tensor whose shape (or axis order) is given as one list or tuple literal (`x.view([n, c, h,
    w])`, `torch.reshape(x, shape=[b, c])`, `x.permute((0, 2, 1))`, `x.new_full((t, e), v)`; `repeat` and
    `expand` take at least one size per axis and give one axis per size): one axis per item; None when the shape is held
    elsewhere (`x.view(shape)`), starred, or the sizes are written one by one (`_track_rank` counts those)."""
    if len(op.outputs) != 1 or len(op.args) < 1:
        return None
    if op.kind == METHOD_OP and op.target in _SHAPED_METHODS:
        size: Value | None = op.args[1] if len(op.args) >= 2 else None
        if not op.target.startswith("new_") and len(op.args) != 2:
            return None
    elif op.kind == FUNCTION_OP and op.target == "torch.reshape":
        given = [k.value for k in op.kwargs if k.name == "shape"]
        size = op.args[1] if len(op.args) == 2 else (given[0] if len(op.args) == 1 and given else None)
    else:
        return None
    if isinstance(size, Expr):
        return _literal_length(size.text)  # all items constants: the pass keeps the literal as written
    if not isinstance(size, Ref) or size.name not in lists:
        return None
    items = lists[size.name]
    if any((isinstance(a, Ref) and a.name.startswith("*")) or getattr(a, "text", "").startswith("*") for a in items):
        return None
    return len(items)


def _literal_length(text: str) -> int | None:
    """The number of items of a list or tuple literal written without a starred item (`(0, 2, 1, 3)`); else None."""
    text = text.strip()
    if not text.startswith(("(", "[")):
        return None
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if isinstance(node, ast.List | ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return len(node.elts)
    return None


# The flow marks, as the `origin` of the op, an unpacking whose targets include a starred one (`b, *rest =
# x.shape`): the number of names then says nothing of the rank.
STARRED_UNPACK = "unpacked into targets of which one is starred"


def unpacked_rank(op: Op) -> tuple[str, int] | None:
    """`b, c, h, w = x.shape` (or `= x.size()`): unpacking a tensor's sizes into n names raises unless it has n
    items, so `x` has n axes: (x, n). None for one name, a starred target (`b, *rest = x.shape`, marked by the
    flow), `x.shape[-2:]` (a slice: not this op), or a size read with arguments (`x.size(1)`)."""
    if len(op.outputs) < 2 or not op.args or not isinstance(first := op.args[0], Ref) or first.name.startswith("*"):
        return None
    if op.origin is not None:  # `STARRED_UNPACK`, or an op respelled: not a plain read of the sizes
        return None
    if op.kind == OPERATOR_OP and op.target == "getattr":
        sizes = len(op.args) == 2 and isinstance(op.args[1], Expr) and op.args[1].text == "shape" and not op.kwargs
    else:
        sizes = op.kind == METHOD_OP and op.target == "size" and len(op.args) == 1 and not op.kwargs
    return (first.name, len(op.outputs)) if sizes and first.name not in op.outputs else None


# Reductions over the axes given as `dim` (one, or a list or tuple of them): without `keepdim` each axis is
# dropped, with `keepdim=True` each is kept with length 1. The keys as the canonical pass leaves them (it
# writes `torch.mean(x, d)` as the method). The positional `keepdim` is the third argument of these;
# `std`/`var` take `unbiased` there, so theirs must be a keyword.
_REDUCTIONS = frozenset({"mean", "sum", "amax", "amin", "nansum", "nanmean", "logsumexp", "std", "var"})
_THIRD_IS_KEEPDIM = frozenset({"mean", "sum", "amax", "amin", "nansum", "nanmean", "logsumexp"})
REDUCED_TARGETS = _REDUCTIONS | {f"torch.{name}" for name in _REDUCTIONS}  # a caller's cheap test first
_REDUCTION_KEYWORDS = frozenset({"dim", "keepdim", "dtype", "correction", "unbiased"})


def reduced_rank(op: Op, ranks: Mapping[str, int]) -> int | None:
    """The rank of a reduction's result over axes written as integers (`x.mean(dim=(-2, -1))` of a 4-D `x`: 2-D;
    `torch.sum(x, 1, keepdim=True)`: the rank of `x`), where the rank of `x` is known; None where it is not,
    where an axis is held in a name (`x.mean(dim)`), out of range, or given twice (torch raises), where `keepdim`
    is not a literal, or where no axis is given (numpy's and torch's reduce-all forms differ in their keywords)."""
    name = op.target[6:] if op.kind == FUNCTION_OP and op.target.startswith("torch.") else (
        op.target if op.kind == METHOD_OP else "")
    if name not in _REDUCTIONS or len(op.outputs) != 1 or not op.args or not isinstance(op.args[0], Ref):
        return None
    rank = ranks.get(op.args[0].name)
    if rank is None:
        return None
    given: dict[str, Value] = {}
    for k in op.kwargs:
        if k.name not in _REDUCTION_KEYWORDS:
            return None
        given[k.name] = k.value
    positional = op.args[1:]
    if len(positional) > (2 if name in _THIRD_IS_KEEPDIM else 1):
        return None
    if positional:
        if "dim" in given:
            return None
        given["dim"] = positional[0]
    if len(positional) == 2:
        if "keepdim" in given:
            return None
        given["keepdim"] = positional[1]
    dims, keep = given.get("dim"), given.get("keepdim")
    keepdim = getattr(keep, "text", "").strip() if keep is not None else "False"
    if not isinstance(dims, Expr) or keepdim not in ("True", "False"):
        return None
    axes = _literal_axes(dims.text)
    if not axes or any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        return None
    return rank if keepdim == "True" else rank - len(axes)


def _literal_axes(text: str) -> tuple[int, ...] | None:
    """The axes written as one integer or a list or tuple literal of integers (`1`, `(-2, -1)`); else None."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    items = node.elts if isinstance(node, ast.List | ast.Tuple) else [node]
    out: list[int] = []
    for item in items:
        sign = 1
        if isinstance(item, ast.UnaryOp) and isinstance(item.op, ast.USub):
            sign, item = -1, item.operand
        if not isinstance(item, ast.Constant) or type(item.value) is not int:
            return None
        out.append(sign * item.value)
    return tuple(out)


# Calls that take sizes one per argument (`x.view(b, h, n, d)`, `x.expand(b, -1, d)`, `torch.zeros(b, t)`): each
# size is an integer by the call's contract (`*shape (int...)`), so a name passed as one holds a number, rank 0.
_SIZE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"})
SIZED_TARGETS = _SIZE_METHODS | _CREATED  # a caller's cheap test first


def size_names(op: Op) -> tuple[str, ...]:
    """The names `op` passes as sizes written one per argument, at least two of them (`x.reshape(m, n, -1)`:
    `m`, `n`; `torch.zeros(b, t)`): each is a number there. None from one argument (`x.view(shape)` may hold a
    whole shape), a starred one (`x.view(*shape)`), a keyword, or a name the op binds."""
    if op.kind == METHOD_OP and op.target in _SIZE_METHODS and not (op.target == "repeat" and op.kwargs):
        sizes = op.args[1:]
    elif op.kind == FUNCTION_OP and op.target in _CREATED:
        sizes = op.args
    else:
        return ()
    if len(sizes) < 2 or any((isinstance(a, Ref) and a.name.startswith("*")) or getattr(a, "text", "").startswith("*")
                             for a in sizes):
        return ()
    return tuple(a.name for a in sizes if isinstance(a, Ref) and a.name not in op.outputs)


# numpy's elementwise math of a number is a number (`np.sqrt(head_dim)`: a numpy scalar, rank 0).
NUMPY_SCALAR_MATH = frozenset({"numpy.sqrt", "numpy.power", "numpy.log", "numpy.exp"})


def numpy_scalar_rank(op: Op, ranks: Mapping[str, int]) -> int | None:
    """0 where `op` is numpy's elementwise math (`NUMPY_SCALAR_MATH`) of numbers only: every argument a name of
    rank 0 or a numeric literal; None otherwise (`np.sqrt(x)` of an array keeps its shape)."""
    if op.kind != FUNCTION_OP or op.target not in NUMPY_SCALAR_MATH or op.kwargs or len(op.outputs) != 1:
        return None
    for a in op.args:
        if isinstance(a, Ref):
            if ranks.get(a.name) != 0:
                return None
        elif not _is_number(getattr(a, "text", "")):
            return None
    return 0 if op.args else None


def _is_number(text: str) -> bool:
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)
