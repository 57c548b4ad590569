"""Same-file submodules read through where they are called: the thin ones and the stateless ones.

Thin: `self.cls(x)` with `self.cls = BertOnlyMLMHead(config)`, whose forward is `return
self.predictions(x)`, whose forward is `x = self.transform(x); x = self.decoder(x); return x`: the call
runs `transform` and then the `decoder` Linear. A site that spans the call and what follows it (the
decoder's logits fed to a cross-entropy) lives in the caller. `thin_submodules` gives the leaf layers
(`cls.predictions.decoder`), each bound to the constructor of the submodule's own `__init__` (with that
binding's span); they join the caller's bindings, and `canonical.submodule_view` unrolls the calls for
the rules that ask for it. Reading never goes past a forward that does anything else.

Stateless: `self.act = GEGLU()` of a same-file class with no `__init__` beyond `super().__init__()` and a
forward that never reads `self`: calling it is calling its forward, which the flow analysis inlines.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.names.forward_shape import chain_shape
from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor, Init

MAX_DEPTH = 3  # submodules of submodules read through


def _same_file_submodules(init: Init | None, table: ClassTable) -> Iterator[tuple[str, Ctor]]:
    """(attr, constructor) of each submodule bound once, unconditionally, to a same-file nn.Module class."""
    if init is None:
        return
    counts: dict[str, int] = {}
    for b in init.bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
    for b in init.bindings:
        ctor = b.value
        if (isinstance(ctor, Ctor) and b.condition is None and counts[b.attr] == 1 and not ctor.items
                and ctor.callee in table.infos and table.is_module(ctor.callee)):
            yield b.attr, ctor


def thin_submodules(init: Init | None, table: ClassTable, src: SourceText, depth: int = 0) -> dict[str, tuple[Binding, ...]]:
    """attr -> the leaf layers a call of `self.<attr>` runs, in order, as bindings named by their path
    (`cls.predictions.decoder`); only for same-file submodules whose forward is a plain chain of their
    own layers."""
    found: dict[str, tuple[Binding, ...]] = {}
    if depth >= MAX_DEPTH:
        return found
    for attr, ctor in _same_file_submodules(init, table):
        leaves = _leaves(ctor.callee, table, src, depth)
        if leaves:
            found[attr] = tuple(replace(leaf, attr=f"{attr}.{leaf.attr}") for leaf in leaves)
    return found


def stateless_submodules(init: Init | None, table: ClassTable, src: SourceText) -> dict[str, tuple[str, Node]]:
    """attr -> (class, forward node) of the same-file submodules that hold nothing (built without
    arguments, no `__init__` beyond `super().__init__()`, a forward that never reads `self`)."""
    found: dict[str, tuple[str, Node]] = {}
    for attr, ctor in _same_file_submodules(init, table):
        if ctor.args or ctor.kwargs:
            continue
        ctor_init = table.find_method(ctor.callee, "__init__")
        if ctor_init is not None and not _only_super_init(ctor_init[1], src):
            continue
        forward = table.find_method(ctor.callee, "forward")
        if forward is None:
            continue
        ps = params(forward[1], src)
        body = forward[1].child_by_field_id(Field.BODY)
        if ps and body is not None and not _reads_name(body, ps[0].name, src):
            found[attr] = forward
    return found


def _only_super_init(function: Node, src: SourceText) -> bool:
    body = function.child_by_field_id(Field.BODY)
    for stmt in body.named_children if body is not None else ():
        text = src.text(stmt).replace(" ", "")
        if stmt.type == "comment" or stmt.type == "pass_statement" or text.startswith("super().__init__("):
            continue
        if stmt.type == "expression_statement" and stmt.named_child_count == 1 and stmt.named_children[0].type == "string":
            continue
        return False
    return True


def _reads_name(node: Node, name: str, src: SourceText) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and src.text(n) == name:
            return True
        stack.extend(n.children)
    return False


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
        return chain_shape(node, symbols.src)
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
