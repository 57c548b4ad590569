"""A softmax helper's guard for fully masked rows, read as the softmax itself.

A same-file helper that computes a masked softmax often guards the rows its mask removes entirely: there
every score is the fill, so the softmax is uniform (a finite fill) or NaN (`-inf`), and the helper zeroes
them after the softmax (physis-lm's `_guarded_softmax`: `attn * allow.any(-1, keepdim=True).to(dtype)`;
rec-pangu's `p.masked_fill(torch.isnan(p), 0)`; `torch.nan_to_num(p)`). Wherever the row keeps a score the
guard leaves the probabilities as they are (the entries it may zero are those the fill already took to 0),
so the guarded value is the softmax for the chain it starts: the guard is respelled as a cast of it.

Only a guard whose mask is the softmax's own is read so, and only in an inlined helper (`Op.via`): a product
with any other factor (a per-element or per-row scale), a fill of other entries, or a guard written in the
forward itself (where a fix would drop it) keep their op. A chain read through a helper is never fixed
(the helper's call sits between its steps), so the guard's rows are not lost to a rewrite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from adopter.dsl.types import OPERATOR_OP, Expr, Op, Ref, Value

_COMPARISONS = frozenset({"==", "!=", ">", "<", ">=", "<="})
_ROW_REDUCTIONS = frozenset({"any", "all", "torch.any", "torch.all"})
_NAN_TESTS = frozenset({"isnan", "torch.isnan"})
_NAN_TO_NUM = frozenset({"nan_to_num", "torch.nan_to_num"})
_MASKED_FILLS = frozenset({"masked_fill", "masked_fill_"})
_ZERO_MAKERS = frozenset({"torch.zeros_like", "zeros_like", "new_zeros", "torch.zeros"})
_ZERO_TEXTS = frozenset({"0", "0.0", "0.", "False"})
# The fills of scores `note` reads a mask from (`s.masked_fill(m, fill)`, `torch.where(m, s, fill)`).
FILLS = frozenset({"masked_fill", "torch.where"})
# The targets `guard` answers for (any other op is no guard).
GUARD_TARGETS = frozenset({"*", "torch.where"}) | _MASKED_FILLS | _NAN_TO_NUM


def _name(v: Value | None) -> str | None:
    return v.name if isinstance(v, Ref) else None


def _is_zero(v: Value, zeros: set[str]) -> bool:
    return (isinstance(v, Expr) and v.text.strip() in _ZERO_TEXTS) or _name(v) in zeros


def _last_keepdim(op: Op) -> bool:
    """`any(dim=-1, keepdim=True)` (or positionally `any(-1, True)`): one value per row, broadcast back."""
    texts = {k.name: k.value.text.strip() for k in op.kwargs if isinstance(k.value, Expr)}
    rest = [a.text.strip() for a in op.args[1:] if isinstance(a, Expr)]
    dim = texts.get("dim", rest[0] if rest else None)
    keep = texts.get("keepdim", rest[1] if len(rest) > 1 else None)
    return dim == "-1" and keep == "True"


@dataclass
class SoftmaxGuards:
    """What the canonical pass has seen of masks in one forward: fed every op it emits (`note`), asked
    of each op it reads whether it is a softmax's guard (`guard`)."""

    keep: set[str] = field(default_factory=set)  # masks, True where the scores were kept
    drop: set[str] = field(default_factory=set)  # their complements (True where the scores were filled)
    rows: set[str] = field(default_factory=set)  # row masks: a keep mask reduced over the last axis
    nan: dict[str, str] = field(default_factory=dict)  # name -> the tensor it tests for NaN
    zeros: set[str] = field(default_factory=set)
    complement: dict[str, str] = field(default_factory=dict)  # `~m` -> `m`

    def note(self, op: Op, scores: Callable[[], frozenset[str]]) -> None:
        """Record the masks `op` makes, or uses to fill `scores()` (the names that reach a softmax: asked only of
        a fill, `FILLS`, as computing them reads the whole body), after the pass's respelling."""
        if self.keep or self.drop or self.rows or self.zeros or self.nan or self.complement:  # (most forwards: none)
            for out in op.outputs:
                for known in (self.keep, self.drop, self.rows, self.zeros):
                    known.discard(out)
                self.nan.pop(out, None)
                self.complement.pop(out, None)
        if len(op.outputs) != 1 or not op.args:
            return
        out, first = op.outputs[0], _name(op.args[0])
        if op.kind is OPERATOR_OP and op.target == "~" and first is not None:
            self.complement[out] = first
        elif op.target in _ZERO_MAKERS:
            self.zeros.add(out)
        elif op.target in _NAN_TESTS and first is not None:
            self.nan[out] = first
        elif op.target in _ROW_REDUCTIONS and first in self.keep and _last_keepdim(op):
            self.rows.add(out)
        elif op.kind is OPERATOR_OP and op.target == "cast" and first is not None:
            for known in (self.keep, self.drop, self.rows):
                if first in known:
                    known.add(out)
        elif op.target not in FILLS or out not in scores():
            return
        elif op.target == "masked_fill" and len(op.args) >= 2 and (m := _name(op.args[1])) is not None:
            self.drop.add(m)  # `s.masked_fill(m, fill)`: `m` marks the filled scores
            if m in self.complement:
                self.keep.add(self.complement[m])
        elif op.target == "torch.where" and len(op.args) == 3 and (m := _name(op.args[0])) is not None:
            self.keep.add(m)  # `torch.where(m, s, fill)`: `m` marks the kept scores
            if m in self.complement:
                self.drop.add(self.complement[m])

    def guard(self, op: Op, probs: set[str]) -> Ref | None:
        """The softmax output `op` guards (its value wherever a row keeps a score), None if it is no guard
        of a helper."""
        if not op.via or len(op.outputs) != 1:
            return None
        args = op.args
        names = [_name(a) for a in args]
        if op.kind is OPERATOR_OP and op.target == "*" and len(args) == 2 and not op.kwargs:
            for prob, factor in ((names[0], names[1]), (names[1], names[0])):
                if prob in probs and factor is not None and (factor in self.keep or factor in self.rows):
                    return Ref(prob)
        elif op.target in _MASKED_FILLS and len(args) == 3 and names[0] in probs:
            prob, fill = names[0] or "", names[1] or ""
            if _is_zero(args[2], self.zeros) and (fill in self.drop or self.nan.get(fill) == prob
                                                  or self.complement.get(fill, "") in self.keep | self.rows):
                return Ref(prob)
        elif op.target in _NAN_TO_NUM and args and names[0] in probs and len(args) <= 2:
            if all(k.name == "nan" and _is_zero(k.value, self.zeros) for k in op.kwargs) and (
                    len(args) == 1 or _is_zero(args[1], self.zeros)):
                return Ref(names[0] or "")
        elif op.target == "torch.where" and len(args) == 3:
            cond = names[0] or ""
            if names[1] in probs and _is_zero(args[2], self.zeros) and (cond in self.keep or cond in self.rows):
                return Ref(names[1] or "")
            if names[2] in probs and _is_zero(args[1], self.zeros) and (
                    cond in self.drop or self.nan.get(cond) == names[2]):
                return Ref(names[2] or "")
        return None
