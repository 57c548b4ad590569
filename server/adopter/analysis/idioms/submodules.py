"""Same-file submodules read through where they are called: the thin ones and the stateless ones.

Thin: `self.cls(x)` with `self.cls = BertOnlyMLMHead(config)`, whose forward is `return
self.predictions(x)`, whose forward is `x = self.transform(x); x = self.decoder(x); return x`: the call
runs `transform` and then the `decoder` Linear. A site that spans the call and what follows it (the
decoder's logits fed to a cross-entropy) lives in the caller. `thin_submodules` gives the leaf layers
(`cls.predictions.decoder`), each bound to the constructor of the submodule's own `__init__` (with that
binding's span); they join the caller's bindings, and `canonical.submodule_view` unrolls the calls for
the rules that ask for it. A forward whose last layer's output gets a parameter of the module added
(`x = self.decoder(x) + self.bias`: `forward_shape.head_shape`) gives that parameter as its last leaf, which the
view adds. Reading never goes past a forward that does anything else.

Stateless: `self.act = GEGLU()` of a same-file class with no `__init__` beyond `super().__init__()` and a
forward that never reads `self`: calling it is calling its forward, which the flow analysis inlines.
The same class built as an item of an `nn.Sequential` (`nn.Sequential(nn.Linear(d, 2 * h), GEGLU(),
nn.Linear(h, d))`, in `__init__` or in a factory function) is read through too: `item_forwards` gives
its forward, analysed on its own and in canonical form, which the canonical pass splices into the
Sequential's chain where the item runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.canonical.normalise import canonical_forward
from adopter.analysis.canonical.spellings import PARAMETERS, SEQUENTIAL
from adopter.analysis.flow.forward import FlowAnalysis
from adopter.analysis.names.forward_shape import BIAS, head_shape
from adopter.analysis.names.pair_shape import pair_shape
from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import read_init
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import MODULE_OP, Binding, Ctor, Expr, Forward, Init, Op, Problem, Ref, Return

MAX_DEPTH = 3  # submodules of submodules read through
MAX_ITEM_OPS = 16  # a Sequential item's forward spliced into the chain: a small activation, not a block


def _same_file_submodules(init: Init | None, table: ClassTable) -> Iterator[tuple[str, Ctor]]:
    """(attr, constructor) of each submodule bound once to a same-file nn.Module class: unconditionally,
    or with `None` on every other path (`self.geglu = GEGLU() if glu else None`): a call of the attribute
    runs only where it holds the module, since calling None raises."""
    if init is None:
        return
    counts: dict[str, int] = {}
    nones: dict[str, int] = {}
    for b in init.bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
        if isinstance(b.value, Expr) and b.value.text.strip() == "None":
            nones[b.attr] = nones.get(b.attr, 0) + 1
    for b in init.bindings:
        ctor = b.value
        none = nones.get(b.attr, 0)
        only = (counts[b.attr] == 1 and b.condition is None) or (none > 0 and counts[b.attr] - none == 1)
        if (isinstance(ctor, Ctor) and only and not ctor.items
                and ctor.callee in table.infos and table.is_module(ctor.callee)):
            yield b.attr, ctor


def _same_file_items(init: Init | None, table: ClassTable) -> Iterator[tuple[str, Ctor]]:
    """(`attr[k]`, constructor) of each item of a literal `nn.Sequential` bound once, unconditionally, that
    builds a same-file nn.Module class (`nn.Sequential(nn.Conv2d(...), Norm(c))`: `body[1]`, `Norm(c)`)."""
    if init is None:
        return
    counts: dict[str, int] = {}
    for b in init.bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
    for b in init.bindings:
        ctor = b.value
        if (isinstance(ctor, Ctor) and ctor.callee == SEQUENTIAL and ctor.repeat is None and b.condition is None
                and counts[b.attr] == 1):
            for k, item in enumerate(ctor.items):
                if not item.items and item.callee in table.infos and table.is_module(item.callee):
                    yield f"{b.attr}[{k}]", item


def thin_submodules(init: Init | None, table: ClassTable, src: SourceText, depth: int = 0) -> dict[str, tuple[Binding, ...]]:
    """attr -> the leaf layers a call of `self.<attr>` runs, in order, as bindings named by their path
    (`cls.predictions.decoder`); only for same-file submodules whose forward is a plain chain of their
    own layers."""
    found: dict[str, tuple[Binding, ...]] = {}
    if depth >= MAX_DEPTH:
        return found
    for attr, ctor in (*_same_file_submodules(init, table), *_same_file_items(init, table)):
        leaves = _leaves(ctor.callee, table, src, depth) or (_pair_leaves(ctor.callee, table, src) if depth == 0 else None)
        if leaves:
            found[attr] = tuple(replace(leaf, attr=f"{attr}.{leaf.attr}") for leaf in leaves)
    return found


def stateless_submodules(init: Init | None, table: ClassTable, src: SourceText) -> dict[str, tuple[str, Node]]:
    """attr -> (class, forward node) of the same-file submodules that hold nothing (built without
    arguments, no `__init__` beyond `super().__init__()`, a forward that never reads `self`)."""
    found: dict[str, tuple[str, Node]] = {}
    for attr, ctor in _same_file_submodules(init, table):
        forward = _stateless_forward(ctor, table, src)
        if forward is not None:
            found[attr] = forward
    return found


def _stateless_forward(ctor: Ctor, table: ClassTable, src: SourceText) -> tuple[str, Node] | None:
    """(class, forward node) when `ctor` builds a same-file module that holds nothing (no arguments, no
    `__init__` beyond `super().__init__()`, a forward that never reads `self`), else None."""
    if ctor.args or ctor.kwargs or ctor.items or ctor.callee not in table.infos or not table.is_module(ctor.callee):
        return None
    ctor_init = table.find_method(ctor.callee, "__init__")
    if ctor_init is not None and not _only_super_init(ctor_init[1], src):
        return None
    forward = table.find_method(ctor.callee, "forward")
    if forward is None:
        return None
    ps = params(forward[1], src)
    body = forward[1].child_by_field_id(Field.BODY)
    if ps and body is not None and not _reads_name(body, ps[0].name, src):
        return forward
    return None


def sequential_items(init: Init | None) -> list[Ctor]:
    """The items of the Sequentials `init` binds (for `item_forwards`)."""
    if init is None:
        return []
    return [item for b in init.bindings if isinstance(b.value, Ctor) and b.value.callee == SEQUENTIAL
            for item in b.value.items]


def item_forwards(ctors: Iterable[Ctor], table: ClassTable, src: SourceText) -> dict[str, Forward]:
    """class -> its forward (canonical) for each stateless same-file module among `ctors`, the items of a
    Sequential (and the items of a Sequential among them), when that forward is a straight run of ops
    that returns one value: `x, gate = x.chunk(2, dim=-1); return x * F.gelu(gate)`. The canonical pass
    splices it where the Sequential runs the item. A forward with branches or loops, or with more than
    one input, is left as a call."""
    found: dict[str, Forward] = {}
    seen: set[str] = set()
    stack = list(ctors)
    while stack:
        ctor = stack.pop()
        if ctor.callee == SEQUENTIAL:
            stack.extend(ctor.items)
            continue
        if ctor.callee in seen:
            continue
        seen.add(ctor.callee)
        method = _item_forward(ctor, table, src)
        if method is None:
            continue
        owner, node = method
        problems: list[Problem] = []
        forward = canonical_forward(FlowAnalysis(src, table.symbols, table, owner, frozenset(), problems, {})
                                    .function(node, owner))
        body = forward.body
        if (len(forward.params) == 1 and body and isinstance(body[-1], Return) and len(body[-1].values) == 1
                and all(isinstance(s, Op) and _reads_attributes_only(s) for s in body[:-1])
                and len(body) <= MAX_ITEM_OPS):
            found[ctor.callee] = forward
    return found


def _item_forward(ctor: Ctor, table: ClassTable, src: SourceText) -> tuple[str, Node] | None:
    """(class, forward node) of a same-file module built as a Sequential item whose forward reads its
    own state only as values (`self.mult_bias`, a gain its `__init__` binds): a stateless one
    (`_stateless_forward`), or any same-file module class, built with any arguments, whose forward's
    ops `item_forwards` then checks (`_reads_attributes_only`). The arguments only shape what
    `__init__` binds; the forward computes the same ops whatever they are."""
    if ctor.items or ctor.callee not in table.infos or not table.is_module(ctor.callee):
        return None
    stateless = _stateless_forward(ctor, table, src)
    if stateless is not None:
        return stateless
    if table.find_method(ctor.callee, "__call__") is not None:
        return None
    return table.find_method(ctor.callee, "forward")


# `self.gain`, `self.scale ** 0.5`: the item's own attributes read as values (no call, no bare `self`).
_SELF_WORD = re.compile(r"\bself\b")
_SELF_VALUE = re.compile(r"\bself\.[A-Za-z_]\w*(?!\w|\s*\()")


def _reads_attributes_only(op: Op) -> bool:
    """Whether `op` reads the item's `self` only as attribute values: not a submodule call (`self.proj(x)`,
    whose layer the splice could not name), not `self` itself handed on."""
    if op.kind == MODULE_OP or op.target.startswith("self.") or op.target == "self":
        return False
    for v in (*op.args, *(k.value for k in op.kwargs)):
        if isinstance(v, Ref) and (v.name == "self" or v.name.startswith("self.")):
            return False
        text = v.text if isinstance(v, Expr) else ""
        if len(_SELF_WORD.findall(text)) != len(_SELF_VALUE.findall(text)):
            return False
    return True


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
        return head_shape(node, symbols.src)
    return None


def _pair_shape(class_name: str, table: ClassTable) -> tuple[str, ...] | None:
    """The layers a forward applies one to each of its inputs (`pair_shape`), read from the class in the MRO
    that defines `forward`; the analysis depends on that answer (a part of the method's shape), not its text."""
    symbols = table.symbols
    for cls in table.mro(class_name):
        node = table.infos[cls].methods.get("forward")
        if node is None:
            symbols.note_method_exists(cls, "forward")
            continue
        symbols.note_method_shape(cls, "forward")
        return pair_shape(node, symbols.src)
    return None


def _pair_leaves(class_name: str, table: ClassTable, src: SourceText) -> tuple[Binding, ...] | None:
    """The leaf layers of a head whose forward applies layer k to its input k and returns the results
    (`pair_shape`: BERT's pre-training heads), layer by layer: the view tells them apart by the path's
    second name (`cls.predictions.decoder`, `cls.seq_relationship`) and unrolls layer k from argument k to
    result k of a call that unpacks as many results as it passes arguments. Read only for a submodule of the
    analysed class itself: a chain that ran such a head would mix the layers of all its results."""
    layers = _pair_shape(class_name, table)
    if not layers:
        return None
    return _leaves(class_name, table, src, 0, layers)


def _leaves(class_name: str, table: ClassTable, src: SourceText, depth: int,
            layers: tuple[str, ...] | None = None) -> tuple[Binding, ...] | None:
    steps = layers or _forward_shape(class_name, table)
    if not steps:
        return None
    inner = read_init(class_name, table, src)
    if inner is None:
        return None
    deeper = thin_submodules(inner, table, src, depth + 1)
    leaves: list[Binding] = []
    for step in steps:
        attr = step[len(BIAS):] if step.startswith(BIAS) else step
        bound = [b for b in inner.bindings if b.attr == attr]
        if len(bound) != 1 or bound[0].condition is not None or not isinstance(bound[0].value, Ctor):
            return None
        if step.startswith(BIAS) != (bound[0].value.callee in PARAMETERS):
            return None  # only a parameter is added (`+ self.bias`); a parameter is never called
        leaves.extend(deeper.get(attr, (bound[0],)))
    return tuple(leaves)
