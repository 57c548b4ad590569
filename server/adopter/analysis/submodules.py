"""Same-file submodules whose forward only chains their own layers, read through where they are called.

`self.cls(x)` with `self.cls = BertOnlyMLMHead(config)`, whose forward is `return self.predictions(x)`,
whose forward is `x = self.transform(x); x = self.decoder(x); return x`: the call runs `transform`'s
layers and then the `decoder` Linear. A site that spans the call and what follows it (the decoder's
logits fed to a cross-entropy) lives in the caller, so the canonical pass unrolls such calls into their
leaf layers (`self.cls.predictions.decoder`), each bound to the constructor of the submodule's own
`__init__` (with that binding's span). Reading never goes past a forward that does anything else.
"""

from __future__ import annotations

from dataclasses import replace

from adopter.analysis.bindings import InitAnalysis
from adopter.analysis.classes import ClassTable
from adopter.analysis.forward_shape import chain_shape
from adopter.analysis.source import SourceText
from adopter.dsl.types import Binding, Ctor, Init

MAX_DEPTH = 3  # submodules of submodules read through


def thin_submodules(init: Init | None, table: ClassTable, src: SourceText, depth: int = 0) -> dict[str, tuple[Binding, ...]]:
    """attr -> the leaf layers a call of `self.<attr>` runs, in order, as bindings named by their path
    (`cls.predictions.decoder`); only for submodules bound once, unconditionally, to a same-file class
    whose forward is a plain chain of its own layers."""
    found: dict[str, tuple[Binding, ...]] = {}
    if init is None or depth >= MAX_DEPTH:
        return found
    counts: dict[str, int] = {}
    for b in init.bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
    for b in init.bindings:
        ctor = b.value
        if not isinstance(ctor, Ctor) or b.condition is not None or counts[b.attr] != 1 or ctor.items:
            continue
        if ctor.callee not in table.infos or not table.is_module(ctor.callee):
            continue
        leaves = _leaves(ctor.callee, table, src, depth)
        if leaves:
            found[b.attr] = tuple(replace(leaf, attr=f"{b.attr}.{leaf.attr}") for leaf in leaves)
    return found


def _forward_shape(class_name: str, table: ClassTable) -> tuple[str, ...] | None:
    """The chain shape of the forward instances of `class_name` run. The analysis depends on that shape,
    not on the forward's text (a user of the class is re-analysed only when the shape changes), and on
    the absence of `forward` in the classes before it in the MRO."""
    symbols = table.symbols
    for cls in table.mro(class_name):
        node = table.infos[cls].methods.get("forward")
        if node is None:
            symbols.note_method_exists(cls, "forward")  # absent here: depends on it staying absent
            continue
        symbols.note_method_shape(cls, "forward")
        return chain_shape(node, table.symbols.src)
    return None


def _leaves(class_name: str, table: ClassTable, src: SourceText, depth: int) -> tuple[Binding, ...] | None:
    steps = _forward_shape(class_name, table)
    if not steps:
        return None
    inner = InitAnalysis(class_name, table, src).run()
    if inner is None:
        return None
    deeper = thin_submodules(inner, table, src, depth + 1)
    leaves: list[Binding] = []
    for attr in steps:
        bound = [b for b in inner.bindings if b.attr == attr]
        if len(bound) != 1 or bound[0].condition is not None or not isinstance(bound[0].value, Ctor):
            return None
        leaves.extend(deeper.get(attr, (bound[0],)))
    return tuple(leaves)
