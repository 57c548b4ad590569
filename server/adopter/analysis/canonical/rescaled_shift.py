"""A softmax helper's `/c`, shift, `*c`: `softmax(c·(t/c − rowmax(t/c)))` read as `softmax(t)`.

lucidrains' `stable_softmax` (dalle-pytorch 1.6 `attention.py` 27, dalle2-pytorch 1.15 `vqgan_vae.py` 101,
nuwa-pytorch 0.7 `vqgan_vae.py` 97):

    def stable_softmax(t, dim=-1, alpha=32 ** 2):
        t = t / alpha
        t = t - torch.amax(t, dim=dim, keepdim=True).detach()
        return (t * alpha).softmax(dim=dim)

For any nonzero number `c` and row maximum `m` of `u = t / c`, `c·(u − m) = c·u − c·m`, and a softmax over the
row drops the row's constant `c·m`; `c·u = (t / c)·c = t` in exact arithmetic (in floating point exactly
when `c` is a power of two, as `32 ** 2` is, else within one rounding). So the shift of a value that reaches
the softmax through a product with a number is read as the stable shift is (`normalise.stable_shift`), and the
product, of a value divided by that same number, as a cast of the undivided value.

Read only in an inlined helper (`Op.via`): a chain read through a helper is never fixed (the helper's call
sits between its steps), so the division left in place is never a step a rewrite must account for. The
number must be a literal (`32 ** 2`, `1024.0`), the same text for the division and the product; a tensor or
an attribute (`self.alpha`, which could be zero or per-element) keeps the ops as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from adopter.dsl.types import OPERATOR_OP, Expr, Op, Ref, Value

_NUMBER = re.compile(r"^[\d\s.*+/()eE_-]*\d[\d\s.*+/()eE_-]*$")
_ZERO = re.compile(r"^[\s(]*[0._]+[\s)]*$")


def _number(v: Value) -> str | None:
    """The text of a literal number (`32 ** 2`), else None."""
    if isinstance(v, Expr) and _NUMBER.match(v.text) and not _ZERO.match(v.text):
        return " ".join(v.text.split())
    return None


def _scaled(op: Op) -> tuple[str, str] | None:
    """(value, number) of `value * number` or `number * value`."""
    if op.kind != OPERATOR_OP or op.target != "*" or len(op.args) != 2 or len(op.outputs) != 1:
        return None
    a, b = op.args
    if isinstance(a, Ref) and (c := _number(b)) is not None:
        return a.name, c
    if isinstance(b, Ref) and (c := _number(a)) is not None:
        return b.name, c
    return None


def rescaled_into(ops: Iterable[Op], softmaxed: frozenset[str]) -> frozenset[str]:
    """The names an inlined helper multiplies by a literal number straight into a softmax (`(t * c).softmax()`)."""
    return frozenset(s[0] for op in ops if op.via and (s := _scaled(op)) is not None and op.outputs[0] in softmaxed)


class RescaledShift:
    """Follows values divided by a number in an inlined helper, and reads their product by it as the value."""

    def __init__(self) -> None:
        self.divided: dict[str, tuple[str, str]] = {}  # name -> (the value it is, over a number; that number)

    def note(self, op: Op) -> tuple[str, str] | None:
        """Before `op` is respelled: forget what its outputs held, and what was divided from them; what its first
        argument held (for `shifted`)."""
        first = op.args[0] if op.args else None
        divided = self.divided
        held = divided.get(first.name) if divided and isinstance(first, Ref) else None
        if divided and op.outputs:  # (nothing to forget while nothing is held: most forwards)
            for name in op.outputs:
                divided.pop(name, None)
            rebound = set(op.outputs)
            for name in [n for n, (source, _) in self.divided.items() if source in rebound]:
                del self.divided[name]
        if (op.via and op.kind == OPERATOR_OP and op.target == "/" and len(op.args) == 2
                and len(op.outputs) == 1 and isinstance(op.args[0], Ref) and (c := _number(op.args[1])) is not None
                and op.args[0].name != op.outputs[0]):
            self.divided[op.outputs[0]] = (op.args[0].name, c)
        return held

    def shifted(self, out: str, held: tuple[str, str] | None) -> None:
        """The stable shift bound `out` (read as a cast of its input): `out` holds what its input held."""
        if held is not None:
            self.divided[out] = held

    def undone(self, op: Op, softmaxed: frozenset[str]) -> Ref | None:
        """The undivided value when `op` is `(t / c) * c` of an inlined helper going into a softmax, else None."""
        scaled = _scaled(op) if op.via and op.outputs and op.outputs[0] in softmaxed else None
        if scaled is None:
            return None
        held = self.divided.get(scaled[0])
        return Ref(held[0]) if held is not None and held[1] == scaled[1] else None
