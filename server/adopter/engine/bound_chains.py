"""A Sequential built as a local and then bound to `self` is one site: where it is built, not also where forward runs it.

classy-vision's ResNeXt (and any block that assembles its layers before handing them on):

    class BasicLayer(GenericLayer):
        def __init__(self, ...):
            convolutional_block = nn.Sequential(conv3x3(...), nn.BatchNorm2d(...), nn.ReLU(), conv3x3(...))
            super().__init__(convolutional_block, ...)      # GenericLayer: self.convolutional_block = ...

    out = self.convolutional_block(x)                         # GenericLayer.forward runs its items

The local `nn.Sequential(...)` is a chain of `BasicLayer.__init__` (`analysis.chains.methods`) whose pairs are
found there, at their constructor lines, with the in-place fold as their fix; the forward unrolls the bound
attribute into the same items (`self.convolutional_block[0]`, `[1]`) and finds them again. The analysis
keeps where each item of such a local is written (`Binding.item_spans`), so a forward finding made only of
items whose written places are exactly a chain finding's layers (same rule) is that chain's site: it is
dropped, and its statements join the chain's, as the statements of a container called twice are both calls.

A match that also takes a layer outside the container (the last item, a conv, into the base's `self.bn`)
is its own site, told apart from another subclass's by where its items are written (`item_spans`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from adopter.dsl.types import MODULE_OP, Op, Span
from adopter.engine.types import Finding

_ONE_ITEM = re.compile(r"^self\.(\w+)\[(\d+)\]$")


def item_spans(f: Finding) -> tuple[Span, ...]:
    """Where the container items `f` matched are written (`Binding.item_spans`), in op order, one each; ()
    when none of its ops is an item whose place is known."""
    spans: list[Span] = []
    for op in f.match.ops:
        at = _written_at(f, op)
        if at is not None and at not in spans:
            spans.append(at)
    return tuple(spans)


def into_bound_chains(findings: list[Finding]) -> list[Finding]:
    """`findings` with each forward finding of a bound local Sequential's items merged into the chain finding
    of that Sequential's construction (see the module doc); unchanged when there is none."""
    chains: dict[tuple[str, frozenset[Span], tuple[str, ...]], Finding] = {}
    for g in findings:
        if all(op.origin is not None and op.origin.kind is MODULE_OP and not op.origin.args
               and op.origin.target.endswith("Sequential") for op in g.match.ops):
            layers = frozenset(op.span for op in g.match.ops if op.kind is MODULE_OP)
            chains.setdefault((g.rule_id, layers, _spelled(g.match.ops)), g)
    if not chains:
        return findings
    calls: dict[int, list[Span]] = {}
    absorbed: set[int] = set()
    for f in findings:
        # The layers by where they are written; an item spelled as a function (an `nn.GELU()` item read as
        # `F.gelu`, its origin the container's call) by that function, spelled from a layer of `self`.
        written = [_written_at(f, op) for op in f.match.ops if op.kind is MODULE_OP]
        if not written or any(s is None for s in written) or any(
                op.origin is None or op.origin.kind is not MODULE_OP or not op.origin.target.startswith("self.")
                for op in f.match.ops if op.kind is not MODULE_OP):
            continue
        chain = chains.get((f.rule_id, frozenset(s for s in written if s is not None), _spelled(f.match.ops)))
        if chain is None or chain is f:
            continue
        absorbed.add(id(f))
        calls.setdefault(id(chain), []).extend(f.stmt_spans)
    if not absorbed:
        return findings
    out: list[Finding] = []
    for f in findings:
        if id(f) in absorbed:
            continue
        extra = [s for s in dict.fromkeys(calls.get(id(f), ())) if s not in f.stmt_spans]
        out.append(replace(f, stmt_spans=tuple(sorted((*f.stmt_spans, *extra), key=_span_key))) if extra else f)
    return out


def _spelled(ops: tuple[Op, ...]) -> tuple[str, ...]:
    """The targets of the ops that are not layer calls, sorted."""
    return tuple(sorted(op.target for op in ops if op.kind is not MODULE_OP))


def _written_at(f: Finding, op: Op) -> Span | None:
    """Where the item `op` calls (itself, or as the module it was spelled from) is written, when its
    binding knows; else None."""
    target = op.target
    if not _ONE_ITEM.match(target) and op.origin is not None and op.origin.kind is MODULE_OP:
        target = op.origin.target
    m = _ONE_ITEM.match(target)
    if m is None:
        return None
    i = int(m.group(2))
    places = {b.item_spans[i] for b in f.match.bindings if b.attr == m.group(1) and i < len(b.item_spans)}
    return next(iter(places)) if len(places) == 1 else None


def _span_key(s: Span) -> tuple[int, int, int, int]:
    return (s.start_line, s.start_col, s.end_line, s.end_col)
