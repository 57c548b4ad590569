"""A literal `nn.ModuleList([...])` whose items `forward` runs in turn, read as the chain of those layers.

A Sequential may be written as a list and a loop (qwen-tts 0.1.1 `modeling_qwen3_tts_tokenizer_v1.py:519-530`,
`DiTMLP`; naturalspeech2-pytorch, diffusers `OutValueFunctionBlock`, transformers' UperNet heads):

    self.ff = nn.ModuleList([nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Dropout(p), nn.Linear(4 * d, d)])
    ...
    for layer in self.ff:
        x = layer(x)

The loop is Sequential's forward written out, so the items form the chain a Sequential of them would. Read only
where that is certain: the list is a literal of ≥ 2 items, the argument of the one `nn.ModuleList(...)` bound to
the attribute by a top-level statement of `__init__`; the attribute is named nowhere else in the class but in
that loop (never appended to, indexed, sliced or run another way); the loop is a top-level statement of `forward`
over the attribute itself, without `else`, whose body is only `x = layer(x)` (`sequential_classes.runs_in_turn`:
no skip, no other statement, no other input). The chain runs at the loop's statement (`runs_at`): reported
without an automatic fix (a fix building the list as another class would not reach the loop).
"""

from __future__ import annotations

import re
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.chains.sequential_classes import chain_of, runs_in_turn
from adopter.analysis.names.naming import CONTAINERS
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Param, Span

MIN_ITEMS = 2
MAX_ITEMS = 64  # a bound on generated code
MODULE_LIST = "torch.nn.ModuleList"


def looped_list_chains(class_name: str, src: SourceText, table: ClassTable) -> tuple[Architecture, ...]:
    """The chains of the literal ModuleLists `forward` of `class_name` runs in turn (see the module doc)."""
    info = table.infos.get(class_name)
    forward = info.methods.get("forward") if info is not None else None
    init = info.methods.get("__init__") if info is not None else None
    if info is None or forward is None or init is None or b"ModuleList" not in code_bytes(src, init):
        return ()
    loops = _loops(forward, src)
    if not loops:
        return ()
    class_text = code_bytes(src, info.node)
    reader: InitAnalysis | None = None
    params: tuple[Param, ...] = ()
    chains: list[Architecture] = []
    for attr, runs_at in loops:
        if len(re.findall(rb"\bself\s*\.\s*" + re.escape(attr.encode()) + rb"\b", class_text)) != 2:
            continue  # the attribute is named elsewhere too: the list may change, or run another way
        found = _literal_list(init, attr, src, table)
        if found is None:
            continue
        call, items = found
        if reader is None:
            reader = InitAnalysis(class_name, table, src)
            read = reader.run()  # `__init__`'s locals, for items given as names
            params = read.params if read is not None else ()
        for run in _runs(items, reader):
            chain = chain_of(run, f"{class_name}.forward", src, reader, init, call, runs_at)
            # the class's parameters and their defaults: an item chosen by a parameter (`get_activation(act_fn)`,
            # `act_fn="mish"`) is decided as in the class itself
            chains.append(replace(chain, init=replace(chain.init, params=params)) if chain.init is not None else chain)
    return tuple(chains)


def _runs(items: list[Node], reader: InitAnalysis) -> list[list[Node]]:
    """`items` cut at each container (`project_in = nn.Sequential(nn.Linear(...), nn.GELU())` as an item): a
    container's own chain is read where it is built (`chains.methods`), and read again through the loop it would
    be the same site twice."""
    runs: list[list[Node]] = [[]]
    for item in items:
        if any(c.callee in CONTAINERS for c in reader.constructors(item)):
            runs.append([])
        else:
            runs[-1].append(item)
    return [run for run in runs if len(run) >= MIN_ITEMS]


def _loops(forward: Node, src: SourceText) -> list[tuple[str, Span]]:
    """(attribute, the loop body's statement) of each top-level `for m in self.<attr>: x = m(x)` of `forward`."""
    body = forward.child_by_field_id(Field.BODY)
    out: list[tuple[str, Span]] = []
    for stmt in body.named_children if body is not None else ():
        if stmt.type != "for_statement" or stmt.child_by_field_name("alternative") is not None:
            continue
        left, right = stmt.child_by_field_id(Field.LEFT), stmt.child_by_field_id(Field.RIGHT)
        loop_body = stmt.child_by_field_id(Field.BODY)
        if left is None or right is None or loop_body is None or left.type != "identifier":
            continue
        obj = right.child_by_field_id(Field.OBJECT) if right.type == "attribute" else None
        attr = right.child_by_field_id(Field.ATTRIBUTE) if right.type == "attribute" else None
        if obj is None or attr is None or src.text(obj) != "self":
            continue
        inner = [c for c in loop_body.named_children if c.type != "comment"]
        runs = runs_in_turn(inner, left, src)
        if runs is not None:
            out.append((src.text(attr), runs))
    return out


def _literal_list(init: Node, attr: str, src: SourceText, table: ClassTable) -> tuple[Node, list[Node]] | None:
    """The `nn.ModuleList([...])` call and its items when a top-level statement of `init` binds it to
    `self.<attr>`, the list a literal of plain items."""
    body = init.child_by_field_id(Field.BODY)
    for stmt in body.named_children if body is not None else ():
        expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count == 1 else None
        if expr is None or expr.type != "assignment":
            continue
        left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
        if left is None or right is None or src.text(left).replace(" ", "") != f"self.{attr}" or right.type != "call":
            continue
        func, args = right.child_by_field_id(Field.FUNCTION), right.child_by_field_id(Field.ARGUMENTS)
        dotted = dotted_text(func, src) if func is not None else None
        if dotted is None or args is None or table.symbols.qualify(dotted) != MODULE_LIST:
            return None
        given = [a for a in args.named_children if a.type != "comment"]
        if len(given) != 1 or given[0].type != "list":
            return None
        items = [c for c in given[0].named_children if c.type != "comment"]
        if not MIN_ITEMS <= len(items) <= MAX_ITEMS or any(
                c.type not in ("call", "identifier", "conditional_expression") for c in items):
            return None
        return right, items
    return None
