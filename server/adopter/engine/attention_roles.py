"""The `attention_roles($q, $k, $v, $qh, $kh, $vh)` guard: three projections are a query, keys and values.

Three Linears applied to one input are fused q/k/v projections only when they play those roles. A head
split (`$qh`, `$kh`, `$vh`: a `view`/`reshape`/`rearrange` into heads) says so; without one, the values must
be used as attention uses them:

- all three read by one call (`self.attn(q, k, v)`, `F.scaled_dot_product_attention(q, k, v)`, a helper),
  or returned together (`return q, k, v`), after layout, cast and arithmetic steps only; or
- two of them meet in a contraction (`q @ k.transpose(-1, -2)`, an einsum: the scores), and the third is
  contracted with a value computed from those scores (`softmax(scores) @ v`).

Five projections of one input used as gates and mixed by an einsum (AlphaFold's triangle multiplicative
update: `left * sigmoid(left_gate)`, `einsum(eq, left, right)`, `out * sigmoid(out_gate)`) meet in a
contraction, but no third projection is contracted with its result: not attention, not q/k/v.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations

from adopter.dsl.types import MODULE_OP, Expr
from adopter.engine.flow import FlatForward

MAX_NODES = 200  # how far forward from a projection the uses are followed
_CONTRACTIONS = frozenset({"torch.matmul", "torch.einsum", "einops.einsum", "torch.baddbmm", "baddbmm",
                           "einsum", "torch.bmm", "bmm", "matmul", "@"})
# Steps that pass a projection on unchanged in role: layout, casts, scaling, masking, concatenation.
_PASS = frozenset({"cast", "choose", "getitem", "view", "reshape", "transpose", "permute", "contiguous",
                   "unsqueeze", "squeeze", "expand", "flatten", "unflatten", "torch.unflatten", "to", "type_as", "float", "half", "masked_fill",
                   "torch.transpose", "einops.rearrange", "rearrange", "+", "-", "*", "/", "neg",
                   "torch.cat", "cat",
                   # the function forms of the layout methods above (ludwig's `torch.reshape(x, shape)` then
                   # `torch.permute(x, dims)` in its head-split helper)
                   "torch.reshape", "torch.permute", "torch.flatten", "torch.squeeze", "torch.unsqueeze"})
_SPLITS = frozenset({"chunk", "split", "unbind", "tensor_split", "torch.chunk", "torch.split"})

_UNFLATTEN = frozenset({"unflatten", "torch.unflatten"})
_HEAD_SPLITS = frozenset({"view", "reshape", "einops.rearrange", "torch.reshape"}) | _UNFLATTEN
_SIZE_METHODS = frozenset({"size", "dim", "numel"})
_SIZE_ATTRS = frozenset({"shape", "ndim"})

Bound = tuple[str, str, int] | tuple[str, str] | None


def plays_attention_roles(values: Sequence[Bound], splits: Sequence[Bound], flat: FlatForward) -> bool:
    """Whether the three projection values are q, k and v (see the module doc)."""
    if any(_head_split(flat, s) for s in splits):
        return True
    # The rest reads the three values alone: kept per forward, as the fused-QKV search asks it for every
    # combination of its optional head splits present or skipped (8 per assignment of the projections).
    key = tuple(values)
    known = flat.roles.get(key)
    if known is None:
        known = flat.roles[key] = _play_roles(values, flat)
    return known


def _play_roles(values: Sequence[Bound], flat: FlatForward) -> bool:
    """`plays_attention_roles` when no split is a head split: the uses of the three values."""
    refs = [v for v in values if v is not None and v[0] == "ref" and len(v) >= 3]
    if len(refs) < 3:
        return True  # an input or an expression: nothing to follow, keep the match
    starts = [(str(v[1]), int(v[2])) for v in refs[:3]]
    direct = [_reach(flat, name, d, passing=True) for name, d in starts]
    if _read_together(flat, direct):
        return True
    full = [_reach(flat, name, d, passing=False) for name, d in starts]
    for a, b, c in permutations(range(3)):
        for scores in full[a] & full[b]:
            if not _contraction(flat, scores):
                continue
            after = _reach_from(flat, scores, passing=False)
            if any(_contraction(flat, n) and n != scores for n in after & full[c]):
                return True
    return False


def computed_from(value: Bound, source: Bound, flat: FlatForward) -> bool:
    """Whether the op defining `value` reads `source`'s data, directly or through the values it makes (followed
    up to `MAX_NODES` uses: past that, no). Sizes read from it (`x.shape[-1]`, `x.size(-1)`) are not its data.
    An input, an expression or an absent optional value is made from nothing."""
    if value is None or source is None or value[0] != "ref" or source[0] != "ref" or len(value) < 3 or len(source) < 3:
        return False
    made = int(value[2])
    if made < 0:
        return False
    seen: set[int] = set()
    todo = [(str(source[1]), int(source[2]))]
    while todo and len(seen) < MAX_NODES:
        current, at = todo.pop()
        for u in flat.uses_of.get(current, ()):
            if u <= at or u in seen or not flat.may_reach(current, at, u):
                continue
            seen.add(u)
            op = flat.nodes[u].op
            if op is None or _size_read(op.target, op.args):
                continue
            if u == made:
                return True
            todo.extend((out, u) for out in op.outputs)
    return False


def _size_read(target: str, args: tuple[object, ...]) -> bool:
    """`x.shape` / `x.ndim` (a `getattr` op) or `x.size(...)` / `x.dim()`: metadata, not the tensor's values."""
    if target in _SIZE_METHODS:
        return True
    return target == "getattr" and len(args) == 2 and isinstance(args[1], Expr) and args[1].text in _SIZE_ATTRS


def _head_split(flat: FlatForward, bound: Bound) -> bool:
    """Whether the value is made by a head split (an optional step left out binds the value it would read)."""
    if bound is None or bound[0] != "ref" or len(bound) < 3 or int(bound[2]) < 0:
        return False
    op = flat.nodes[int(bound[2])].op
    if op is None or op.target not in _HEAD_SPLITS:
        return False
    # `x.unflatten(-1, (heads, -1))` splits the features into heads; another axis unflattened is something else
    return op.target not in _UNFLATTEN or (len(op.args) > 1 and isinstance(op.args[1], Expr) and op.args[1].text == "-1")


def _contraction(flat: FlatForward, n: int) -> bool:
    op = flat.nodes[n].op
    return op is not None and op.kind != MODULE_OP and op.target in _CONTRACTIONS


def _read_together(flat: FlatForward, reached: list[frozenset[int]]) -> bool:
    """A node reads all three (through passing steps): a call that is not a contraction or arithmetic, or a
    `return`."""
    for n in reached[0] & reached[1] & reached[2]:
        op = flat.nodes[n].op
        if op is None or (op.target not in _PASS and op.target not in _CONTRACTIONS):
            return True
    return False


def _reach(flat: FlatForward, name: str, d: int, *, passing: bool) -> frozenset[int]:
    """The nodes reading the value `name` defined at node `d`, followed forward through the values they
    define (only through passing steps when `passing`). Kept per forward: the guard runs for every
    candidate triple of projections, and they share their starting values."""
    key = (name, d, passing)
    known = flat.reached.get(key)
    if known is None:
        known = flat.reached[key] = frozenset(_walk(flat, name, d, passing))
    return known


def _walk(flat: FlatForward, name: str, d: int, passing: bool) -> set[int]:
    seen: set[int] = set()
    todo = [(name, d)]
    while todo and len(seen) < MAX_NODES:
        current, at = todo.pop()
        for u in flat.uses_of.get(current, ()):
            if u <= at or u in seen or not flat.may_reach(current, at, u):  # on some path (defs per branch)
                continue
            seen.add(u)
            op = flat.nodes[u].op
            if op is None or (op.target in _SPLITS and op.kind != MODULE_OP):
                continue
            if passing and op.target not in _PASS:
                continue
            todo.extend((out, u) for out in op.outputs)
    return seen


def _reach_from(flat: FlatForward, n: int, *, passing: bool) -> frozenset[int]:
    """The nodes the values node `n` defines reach (`_reach` of each); kept per forward: the guard asks it of
    the same scores in every order of the three projections and for every triple."""
    key = (n, passing)
    known = flat.reached_from.get(key)
    if known is None:
        op = flat.nodes[n].op
        out: set[int] = set()
        for name in op.outputs if op is not None else ():
            out |= _reach(flat, name, n, passing=passing)
        known = flat.reached_from[key] = frozenset(out)
    return known
