"""A tensor's last axis split as (2, n) by a `view` or `reshape` that writes the tensor's own leading sizes.

`x.reshape(*x.shape[:-1], 2, -1)` and, after `b, h, t, d = x.size()`, `x.view(b, h, t, 2, d // 2)` keep every
axis of `x` but the last and split the last into two rows: torch's row-major reshape puts its first half in
row 0 and its second half in row 1, so `unbind(dim=-2)` of the result gives the two halves `x.chunk(2, dim=-1)`
gives (rotate_half written with a reshape: ai2-olmo's `RotaryEmbedding.rotate_half`, neuraloperator's
`rotate_half`, diffusers' `apply_rotary_emb` at `use_real_unbind_dim=-2`). The size of the last part needs no
reading: the leading sizes are the tensor's own, so it can only be half the last axis (any other value raises).

`SizeReads` follows the sizes a forward reads off its tensors (`x.shape`, `x.size()`, `x.shape[:-1]`, sizes
unpacked into names) so the canonical pass can tell such a split from one whose leading sizes are unknown.
"""

from __future__ import annotations

from collections.abc import Mapping

from adopter.dsl.types import METHOD_OP, OPERATOR_OP, Expr, Op, Ref

RESHAPES = frozenset({"view", "reshape"})  # the methods `splits_last_in_two` reads


def _size_read(op: Op) -> str | None:
    """The tensor `op` reads the sizes of (`x.shape`, `x.size()`), or None."""
    if not op.args or not isinstance(first := op.args[0], Ref) or first.name.startswith("*") or op.kwargs:
        return None
    if op.kind == OPERATOR_OP and op.target == "getattr":
        ok = len(op.args) == 2 and isinstance(op.args[1], Expr) and op.args[1].text == "shape"
    else:
        ok = op.kind == METHOD_OP and op.target == "size" and len(op.args) == 1
    return first.name if ok and first.name not in op.outputs else None


class SizeReads:
    """The sizes read off tensors so far in one pass: each keyed by the name holding it, with the tensor's name
    and its binding count (`version`) at the read, so a tensor bound again in between is not taken for it."""

    def __init__(self) -> None:
        self.shapes: dict[str, tuple[str, int]] = {}  # name -> the tensor whose whole size tuple it holds
        self.leading: dict[str, tuple[str, int]] = {}  # name -> the tensor whose sizes but the last it holds
        self.items: dict[str, tuple[str, int, int, int]] = {}  # name -> (tensor, version, axis, rank)

    def forget(self, name: str) -> None:
        """`name` is bound again: whatever size it held, it holds no longer."""
        if self.shapes or self.leading or self.items:  # (while none is held, nothing to forget)
            self.shapes.pop(name, None)
            self.leading.pop(name, None)
            self.items.pop(name, None)

    def note(self, op: Op, version: Mapping[str, int]) -> None:
        """Record the sizes `op` reads (after `forget` of its outputs)."""
        if op.kind != OPERATOR_OP and op.kind != METHOD_OP:
            return  # a size is read by `getattr(x, "shape")`, `x.size()` or an index of those only
        tensor = _size_read(op)
        if tensor is not None:
            seen = (tensor, version.get(tensor, 0))
            if len(op.outputs) == 1:
                self.shapes[op.outputs[0]] = seen
            else:  # `b, h, t, d = x.size()`: unpacking n items means `x` has n axes
                for axis, name in enumerate(op.outputs):
                    self.items[name] = (*seen, axis, len(op.outputs))
            return
        if (op.kind == OPERATOR_OP and op.target == "getitem" and len(op.args) == 2 and len(op.outputs) == 1
                and isinstance(op.args[0], Ref) and op.args[0].name in self.shapes
                and isinstance(op.args[1], Expr) and op.args[1].text.replace(" ", "") == ":-1"):
            self.leading[op.outputs[0]] = self.shapes[op.args[0].name]

    def splits_last_in_two(self, op: Op, version: Mapping[str, int]) -> bool:
        """`op` is `x.view(...)` / `x.reshape(...)` keeping `x`'s leading sizes (as read off `x` itself, with
        `x` not bound again since) and splitting its last axis as (2, n). Call before `op` binds its outputs."""
        if (op.kind != METHOD_OP or op.target not in RESHAPES or op.kwargs or len(op.outputs) != 1
                or len(op.args) < 4 or not isinstance(first := op.args[0], Ref)):
            return False
        *lead, two, _last = op.args[1:]
        if not isinstance(two, Expr) or two.text != "2" or not all(isinstance(a, Ref) for a in lead):
            return False
        names = [a.name for a in lead if isinstance(a, Ref)]
        seen = (first.name, version.get(first.name, 0))
        if len(names) == 1 and names[0].startswith("*"):  # `x.reshape(*x.shape[:-1], 2, -1)`
            return self.leading.get(names[0][1:]) == seen
        return all(self.items.get(name) == (*seen, axis, len(names) + 1) for axis, name in enumerate(names))
