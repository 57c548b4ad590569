"""Attention and rotary embedding in every spelling the rules could rewrite, found around anchors that
torch's pattern matcher finds.

The composed patterns of `patterns.py` (inductor's `fuse_attention` shapes, the einsum/matmul/bmm
compositions, the stable-softmax shift) are fixed expression trees: attention with a step they do not
spell (a fp32 cast and back around the softmax, `baddbmm`, a scale on `k`, a head reshape between the
product and the softmax, a relative-position term that is itself a product, a multiplicative mask on
the probabilities, a `where` mask, several terms added in another order) is not counted, and neither
are the checker's misses on it. Inductor's pattern language has no repetition ("any number of
elementwise ops"), so this module walks between anchors instead, with a closed list of ops allowed on
the way and a bound on the walk:

* **attention (family 10)**: a softmax over the last axis (the family-4 pattern's match: `_softmax`
  with the last dim) whose input is reached, through elementwise and layout ops only, from a
  contraction (`bmm`, `mm`, `baddbmm`: what `matmul`, `@` and `einsum` trace to) of two activations (no
  operand is a parameter, which would make it a Linear: a learned query, a router) entering with its
  sign (a negated or subtracted product, as in an L2-distance score, is not q·kᵀ); and whose output
  reaches, through elementwise and layout ops only (dropout, cast, mask), an operand of a contraction
  over the key axis (the contracted size is the softmax axis's length) with another activation (v).
* **rotary embedding (family 15)**: `x * c ± r * s` where `r` is `x` rotated (reached from the same
  `x` through slicing/chunking/unbinding, a `neg` and a `cat`/`stack`, layout ops between), in either
  operand order; and the explicit pair form `cat/stack(x1 * c - x2 * s, x2 * c + x1 * s)` with `x1`,
  `x2` two slices of one tensor.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

aten = torch.ops.aten

_LAYOUT = {aten.view.default, aten.permute.default, aten.transpose.int, aten.expand.default,
           aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
           aten.clone.default, aten._to_copy.default, aten.t.default, aten.flatten.using_ints,
           aten.unflatten.int, aten.contiguous.default, aten.alias.default, aten.detach.default,
           aten.slice.Tensor, aten.select.int, aten.repeat.default, aten.lift_fresh_copy.default}
_ELEMENTWISE = {aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.mul.Tensor,
                aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar, aten.masked_fill.Scalar,
                aten.masked_fill.Tensor, aten.where.self, aten.where.ScalarOther, aten.where.ScalarSelf,
                aten.neg.default}
_BETWEEN = _LAYOUT | _ELEMENTWISE
_CONTRACTIONS = {aten.bmm.default, aten.mm.default, aten.baddbmm.default}
_SOFTMAX = {aten._softmax.default}
_DROPOUT = aten.native_dropout.default
WALK_LIMIT = 64  # nodes visited on either side of a softmax


def _val(n: object) -> torch.Tensor | None:
    v = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _is_parameter(n: object) -> bool:
    """A forward-graph parameter, through layout ops (`t(weight)`: the operand of a Linear's `mm`)."""
    while isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in _LAYOUT:
        n = n.args[0]
    return isinstance(n, torch.fx.Node) and n.op == "placeholder" and n.name.startswith("params")


def _operands(n: torch.fx.Node) -> tuple[torch.fx.Node, torch.fx.Node]:
    a, b = (n.args[1], n.args[2]) if n.target == aten.baddbmm.default else (n.args[0], n.args[1])
    return a, b


def _of_activations(contraction: torch.fx.Node) -> bool:
    a, b = _operands(contraction)
    return not _is_parameter(a) and not _is_parameter(b)


def _is_softmax_last(n: torch.fx.Node) -> bool:
    v = _val(n.args[0])
    dim = n.args[1]
    return isinstance(dim, int) and v is not None and (dim == -1 or dim == v.dim() - 1)


def _scores_side(softmax: torch.fx.Node) -> tuple[list[torch.fx.Node], list[torch.fx.Node]]:
    """The contractions of activations the softmax's input is made from, and the ops on the paths from
    them to the softmax (not the ops of other terms: a position bias's own MLP is not attention)."""
    found: list[torch.fx.Node] = []
    parent: dict[torch.fx.Node, torch.fx.Node | None] = {}
    start = softmax.args[0]
    if not isinstance(start, torch.fx.Node):
        return [], []
    parent[start] = None
    stack = [start]
    while stack and len(parent) < WALK_LIMIT:
        n = stack.pop()
        if n.op != "call_function":
            continue
        if n.target in _CONTRACTIONS:
            if _of_activations(n):
                found.append(n)
            continue
        if n.target in (aten.sub.Tensor, aten.sub.Scalar):
            inputs = [n.args[0]]  # the scores enter with their sign: `s - shift` or `s - term`, never `term - s`
        elif n.target in _BETWEEN and n.target is not aten.neg.default:
            inputs = list(n.args)
        else:
            continue  # the stable shift's max, a library op: not a step of the scores
        for a in inputs:
            if isinstance(a, torch.fx.Node) and a not in parent:
                parent[a] = n
                stack.append(a)
    path: list[torch.fx.Node] = []
    for c in found:
        step = parent[c]
        while step is not None and step not in path:
            path.append(step)
            step = parent[step]
    return found, path


def _depends_on(node: torch.fx.Node, targets: set[torch.fx.Node]) -> bool:
    """Whether `node` is computed from any of `targets` (the values of attention never are: they do not
    depend on the scores; a pseudo-inverse iteration or a mixture's outputs do). Bounded walk."""
    seen: set[torch.fx.Node] = set()
    stack = [node]
    while stack and len(seen) < 4 * WALK_LIMIT:
        n = stack.pop()
        if n in targets:
            return True
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
    return False


def _contracted_size(contraction: torch.fx.Node, operand: torch.fx.Node) -> int | None:
    a, b = _operands(contraction)
    va, vb = _val(a), _val(b)
    if operand is a and va is not None:
        return int(va.shape[-1])
    if operand is b and vb is not None and vb.dim() >= 2:
        return int(vb.shape[-2])
    return None


def _values_side(softmax: torch.fx.Node, scores: list[torch.fx.Node]) -> tuple[torch.fx.Node | None, list[torch.fx.Node]]:
    """The first contraction the probabilities reach as one operand, over the key axis, with an activation
    that does not depend on the scores as the other operand (v); and the ops on the way."""
    v = _val(softmax)
    if v is None:
        return None, []
    keys = int(v.shape[-1])
    parent: dict[torch.fx.Node, torch.fx.Node | None] = {softmax: None}
    queue = [softmax]
    while queue and len(parent) < WALK_LIMIT:
        n = queue.pop(0)
        for user in n.users:
            if user in parent:
                continue
            if user.target in _CONTRACTIONS:
                a, b = _operands(user)
                other = b if n is a else a if n is b else None
                if (other is not None and not _is_parameter(other) and _contracted_size(user, n) == keys
                        and not _depends_on(other, {softmax, *scores})):
                    path = []
                    step: torch.fx.Node | None = n
                    while step is not None and step is not softmax:
                        path.append(step)
                        step = parent[step]
                    return user, path
                continue
            dropout_out = user.target is _getitem_target() and n.target == _DROPOUT and user.args[1] == 0
            if user.target in _BETWEEN or user.target == _DROPOUT or dropout_out:
                parent[user] = n
                queue.append(user)
    return None, []


def _getitem_target() -> object:
    import operator

    return operator.getitem


def attention(graph: torch.fx.Graph) -> list[tuple[torch.fx.Node, list[torch.fx.Node]]]:
    """(the value contraction, every node of the site) for each attention in the graph."""
    out = []
    for n in graph.nodes:
        if n.op != "call_function" or n.target not in _SOFTMAX or not _is_softmax_last(n):
            continue
        scores, before = _scores_side(n)
        if not scores:
            continue
        product, after = _values_side(n, scores)
        if product is None:
            continue
        out.append((product, [*scores, *before, n, *after, product]))
    return out


# --- rotary embedding -----------------------------------------------------------------------------------
_SPLITS = {aten.slice.Tensor, aten.select.int, aten.split.Tensor, aten.split_with_sizes.default,
           aten.chunk.default, aten.unbind.int, aten.unsafe_split.Tensor, aten.unsafe_chunk.default}
_JOINS = {aten.cat.default, aten.stack.default}
_ROTATION = _SPLITS | _JOINS | _LAYOUT | {aten.neg.default, aten.mul.Tensor, aten.mul.Scalar,
                                        _getitem_target()}


def _base(n: object) -> object:
    """A tensor through its layout ops (the same values viewed or cast)."""
    while isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in _LAYOUT - {aten.slice.Tensor, aten.select.int}:
        n = n.args[0]
    return n


def _rotation_of(r: torch.fx.Node) -> tuple[object, list[torch.fx.Node]] | None:
    """The tensor `r` is a half- or pair-rotation of (`cat((-x2, x1))`, `stack((-x2, x1)).flatten()`),
    with the rotation's ops; None when `r` is not one. A `mul` on the way is `x * -1` only."""
    ops: list[torch.fx.Node] = []
    sources: set[object] = set()
    seen: set[torch.fx.Node] = set()
    stack: list[object] = [r]
    kinds: set[str] = set()
    while stack and len(seen) < WALK_LIMIT:
        n = stack.pop()
        if not isinstance(n, torch.fx.Node) or n in seen:
            continue
        seen.add(n)
        if n.op != "call_function" or n.target not in _ROTATION:
            sources.add(n)
            continue
        if n.target in (aten.mul.Tensor, aten.mul.Scalar):
            if not any(isinstance(a, (int, float)) and a == -1 for a in n.args):
                sources.add(n)
                continue
            kinds.add("neg")
        ops.append(n)
        if n.target is aten.neg.default:
            kinds.add("neg")
        elif n.target in _JOINS:
            kinds.add("join")
        elif n.target in _SPLITS:
            kinds.add("split")
            sources.add(n.args[0])  # the tensor split: what is rotated (a partial rotary's slice is its own)
            continue
        for a in n.args:
            if isinstance(a, torch.fx.Node):
                stack.append(a)
            elif isinstance(a, (list, tuple)):
                stack.extend(x for x in a if isinstance(x, torch.fx.Node))
    if kinds != {"neg", "join", "split"}:
        return None
    bases = {_base(s) for s in sources}
    if len(bases) != 1:
        return None
    return bases.pop(), ops


def _muls(n: torch.fx.Node) -> list[torch.fx.Node] | None:
    a, b = n.args[0], n.args[1]
    if all(isinstance(x, torch.fx.Node) and x.target == aten.mul.Tensor for x in (a, b)):
        return [a, b]  # type: ignore[list-item]
    return None


def _rope_sum(n: torch.fx.Node) -> list[torch.fx.Node] | None:
    """`x * c + rotate(x) * s` (any operand order, `+` or `-`)."""
    muls = _muls(n)
    if muls is None:
        return None
    for first, second in (muls, muls[::-1]):
        for r in second.args:
            if not isinstance(r, torch.fx.Node):
                continue
            rot = _rotation_of(r)
            if rot is None:
                continue
            base, ops = rot
            if any(isinstance(x, torch.fx.Node) and _base(x) is base for x in first.args):
                return [*ops, first, second, n]
    return None


def _slice_base(n: object) -> object | None:
    n = _base(n)
    if isinstance(n, torch.fx.Node) and n.op == "call_function":
        if n.target is _getitem_target() and isinstance(n.args[0], torch.fx.Node) and n.args[0].target in _SPLITS:
            return _base(n.args[0].args[0])
        if n.target in (aten.slice.Tensor, aten.select.int):
            return _base(n.args[0])
    return None


def _rope_pair(join: torch.fx.Node) -> list[torch.fx.Node] | None:
    """`cat/stack((x1 * c - x2 * s, x2 * c + x1 * s))`, `x1`, `x2` two slices of one tensor."""
    parts = join.args[0] if join.args and isinstance(join.args[0], (list, tuple)) else ()
    parts = [_base(p) for p in parts]
    if len(parts) != 2 or not all(isinstance(p, torch.fx.Node) for p in parts):
        return None
    kinds = {p.target for p in parts}  # type: ignore[union-attr]
    if kinds != {aten.add.Tensor, aten.sub.Tensor}:
        return None
    nodes: list[torch.fx.Node] = [join]
    halves: list[set[object]] = []
    for p in parts:
        muls = _muls(p)  # type: ignore[arg-type]
        if muls is None:
            return None
        nodes += [p, *muls]  # type: ignore[list-item]
        halves.append({x for m in muls for x in m.args if isinstance(x, torch.fx.Node) and _slice_base(x) is not None})
    slices = halves[0] & halves[1]
    if len(slices) < 2 or len({_slice_base(x) for x in slices}) != 1:
        return None
    return nodes


def rotary(graph: torch.fx.Graph) -> list[tuple[torch.fx.Node, list[torch.fx.Node]]]:
    """(the last op, every node of the site) for each rotary embedding in the graph."""
    out = []
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        nodes = _rope_sum(n) if n.target in (aten.add.Tensor, aten.sub.Tensor) else (
            _rope_pair(n) if n.target in _JOINS else None)
        if nodes:
            out.append((n, nodes))
    return out


def names(nodes: Iterable[torch.fx.Node]) -> str:
    """A short description of a walked site's ops, for the census ("attention_walk[baddbmm,_to_copy]")."""
    seen: list[str] = []
    for n in nodes:
        name = getattr(n.target, "__name__", str(n.target)).split(".")[0]
        if name not in seen:
            seen.append(name)
    return ",".join(seen)
