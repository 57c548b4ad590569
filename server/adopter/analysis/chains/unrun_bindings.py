"""`self.<attr> = nn.Sequential(...)` in `__init__` that no forward runs, read as the chain of its layers.

A Sequential bound to an attribute is read where a forward calls it (`adopter.analysis.canonical.normalise`
unrolls `self.net(x)` into its children), which is why `adopter.analysis.chains.methods` leaves such bindings
alone. Some are built and never run by any forward the file shows:

    self.global_att2 = nn.Sequential(          # laion-clap's iAFF: forward calls `self.global_att` twice
        nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c // r, 1), nn.BatchNorm2d(c // r), nn.ReLU(inplace=True), ...)

    self.momentum_projector = nn.Sequential(   # solo-learn's BYOL: run in `training_step`, not in forward
        nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, out))

The construction still writes its pairs (the labelled sets count an `__init__` construction as a site), so
each such binding becomes a chain like a factory's (`adopter.analysis.chains.functions.layer_chain`), named
`Class.__init__`, reported without an automatic fix. A binding counts as run when a forward may reach its
attribute in any way (a call, a loop over it, an argument, a condition, `getattr(self, "net")`): the class's
own forward, or that of a same-file class it inherits from or that inherits from it, naming `self.<attr>`; any
forward naming `<attr>` through another object (`self.block.<attr>`, `model.<attr>`); any method read as a
forward, chain or function of the file naming `<attr>` at all. Only a literal Sequential of the class's own
`__init__` (each child a constructor call at its own position) is read.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence

from adopter.analysis.canonical.spellings import SEQUENTIAL
from adopter.analysis.chains.functions import layer_chain
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Binding, Block, Branch, Ctor, Expr, Forward, Loop, Op, Return

MIN_CHILDREN = 2  # one child is a chain of nothing
_SPACE = re.compile(r"\s+")
_PATH = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")


def unrun_sequential_chains(classes: Sequence[Architecture], forwards: Iterable[Forward], table: ClassTable,
                            src: SourceText) -> tuple[Architecture, ...]:
    """The chains of the literal Sequentials bound in the `__init__` of `classes` (the file's module classes)
    that no forward runs: see the module doc for what names an attribute."""
    candidates = [(arch, b) for arch in classes if arch.init is not None and arch.forward is not None
                  for b in arch.init.bindings if _literal_sequential(b, arch) and not _in_own_forward(arch, b, table, src)]
    if not candidates:
        return ()
    # Any forward but a class's own reaches a class's attribute only through another object (`model.net`,
    # `self.block.net`): those words name it for every class; a class's own `self.<attr>` names it for that
    # class and the classes it inherits from or that inherit from it. A chain or a method read as a forward
    # (`Class.method`, a function) may run any class's layers: every word of theirs counts.
    foreign: set[str] = set()
    own: dict[str, set[str]] = {}
    for arch in classes:
        if arch.forward is not None:
            mine = own.setdefault(arch.name, set())
            for path in _paths(arch.forward.body):
                words = _SPACE.sub("", path).split(".")
                if words[0] == "self" and len(words) > 1:
                    mine.add(words[1])
                    foreign.update(words[2:])
                else:
                    foreign.update(words)
    for forward in forwards:
        for path in _paths(forward.body):
            foreign.update(_SPACE.sub("", path).split("."))
    chains: list[Architecture] = []
    for arch, binding in candidates:
        if binding.attr in foreign or any(binding.attr in own.get(other.name, ()) for other in classes
                                          if _related(arch, other)):
            continue
        value = binding.value
        assert isinstance(value, Ctor)
        layers = [([item], span) for item, span in zip(value.items, binding.item_spans)]
        chains.append(layer_chain(f"{arch.name}.__init__", layers, binding.span, binding.span, table, src))
    return tuple(chains)


def _in_own_forward(arch: Architecture, binding: Binding, table: ClassTable, src: SourceText) -> bool:
    """Whether the code of the class's own `forward` writes `self.<attr>`, the usual case, decided on the bytes
    before any op is read. An occurrence after a `#` on its line is a comment (`# return self.to_out(x)`) and
    left to the ops (so is one after a `#` inside a string: the ops decide either way)."""
    info = table.infos.get(arch.name)
    node = info.methods.get("forward") if info is not None else None
    word = f"self.{binding.attr}".encode()
    if node is None or not src.contains(node, word):
        return False
    data, found = src.data, src.positions(word)
    for at in found[bisect_left(found, node.start_byte):]:
        if at + len(word) > node.end_byte:
            break
        if data.find(b"#", data.rfind(b"\n", 0, at) + 1, at) < 0:
            return True
    return False


def _related(a: Architecture, b: Architecture) -> bool:
    """The same class, or one names the other among its bases (same-file inheritance, either way)."""
    return a.name == b.name or any(base.rsplit(".", 1)[-1] == b.name for base in a.bases) or any(
        base.rsplit(".", 1)[-1] == a.name for base in b.bases)


def _literal_sequential(binding: Binding, arch: Architecture) -> bool:
    """`self.<attr> = nn.Sequential(A(...), B(...), ...)` written in `arch`'s own class (not a parent's)."""
    value = binding.value
    return (isinstance(value, Ctor) and value.callee == SEQUENTIAL and len(value.items) >= MIN_CHILDREN
            and len(value.items) == len(binding.item_spans) and value.repeat is None and not value.once
            and not value.lead and "." not in binding.attr and arch.span.contains(binding.span))


def _paths(block: Block) -> Iterator[str]:
    """Every dotted name a block's ops, loops, conditions and returns write (`self.net[0]` gives `self.net`)."""
    for stmt in block:
        if isinstance(stmt, Op):
            yield from _PATH.findall(stmt.target)
            for value in (*stmt.args, *(k.value for k in stmt.kwargs)):
                if isinstance(value, Expr):
                    yield from _PATH.findall(value.text)
        elif isinstance(stmt, Branch):
            for condition in stmt.conditions:
                yield from _PATH.findall(condition)
            for path in stmt.paths:
                yield from _paths(path)
        elif isinstance(stmt, Loop):
            yield from _PATH.findall(stmt.iterable)
            yield from _paths(stmt.body)
        elif isinstance(stmt, Return):
            for value in stmt.values:
                if isinstance(value, Expr):
                    yield from _PATH.findall(value.text)
