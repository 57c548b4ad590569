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

from tree_sitter import Node

from adopter.analysis.bindings import InitAnalysis
from adopter.analysis.classes import ClassTable
from adopter.analysis.signature import params
from adopter.analysis.source import Field, SourceText
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


def _leaves(class_name: str, table: ClassTable, src: SourceText, depth: int) -> tuple[Binding, ...] | None:
    forward = table.find_method(class_name, "forward")
    steps = _chain(forward[1], src) if forward is not None else None
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


def _chain(function: Node, src: SourceText) -> list[str] | None:
    """The attributes `forward(self, x)` applies in turn (`x = self.a(x)` ..., `return self.b(x)` or
    `return x`), or None when its body does anything else."""
    ps = params(function, src)
    body = function.child_by_field_id(Field.BODY)
    if len(ps) != 2 or ps[1].default is not None or body is None:
        return None
    me, value = ps[0].name, ps[1].name
    steps: list[str] = []
    stmts = [s for s in body.named_children if s.type not in ("comment", "pass_statement")]
    if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children[0].type == "string":
        stmts = stmts[1:]  # the docstring
    for i, stmt in enumerate(stmts):
        last = i == len(stmts) - 1
        if stmt.type == "return_statement" and last and stmt.named_child_count == 1:
            expr = stmt.named_children[0]
            if expr.type == "identifier" and src.text(expr) == value:
                return steps or None
            attr = _self_call(expr, me, value, src)
            return [*steps, attr] if attr is not None else None
        if stmt.type != "expression_statement" or stmt.named_child_count != 1:
            return None
        assign = stmt.named_children[0]
        left = assign.child_by_field_id(Field.LEFT) if assign.type == "assignment" else None
        right = assign.child_by_field_id(Field.RIGHT) if assign.type == "assignment" else None
        if left is None or right is None or left.type != "identifier":
            return None
        attr = _self_call(right, me, value, src)
        if attr is None:
            return None
        steps.append(attr)
        value = src.text(left)
    return None


def _self_call(expr: Node, me: str, value: str, src: SourceText) -> str | None:
    """`self.<attr>(value)` -> attr, else None."""
    if expr.type != "call":
        return None
    func = expr.child_by_field_id(Field.FUNCTION)
    args = expr.child_by_field_id(Field.ARGUMENTS)
    if func is None or func.type != "attribute" or args is None:
        return None
    obj = func.child_by_field_id(Field.OBJECT)
    attr = func.child_by_field_id(Field.ATTRIBUTE)
    real = [a for a in args.named_children if a.type != "comment"]
    if obj is None or attr is None or obj.type != "identifier" or src.text(obj) != me:
        return None
    if len(real) != 1 or real[0].type != "identifier" or src.text(real[0]) != value:
        return None
    return src.text(attr)
