"""Attention processors read as running on the module they are handed: `__call__(self, attn, x)` as a forward.

The diffusers "attention processor" form (copied widely in diffusion and TTS code) keeps the layers in an
`nn.Module` and the computation in a plain class the module calls with itself:

    class Attention(nn.Module):
        def __init__(self, dim, processor):
            self.processor = processor
            self.to_q = nn.Linear(dim, dim)  # to_k, to_v ...
        def forward(self, x):
            return self.processor(self, x)

    class AttnProcessor:
        def __call__(self, attn: Attention, x):
            query = attn.to_q(x)             # key = attn.to_k(x), value = attn.to_v(x) ...

A processor's `__call__` becomes an `Architecture` named `Processor.__call__`: the module class's `__init__`
bindings and the `__call__` body with its second parameter in the role of `self`, so every rule that joins
layers of `__init__` with ops of a forward matches there. The module class is the one the parameter is
annotated with (a module class of this file), else the one module class of the file whose `__init__` binds
`self.<attr> = Processor(...)` and whose forward calls `self.<attr>(self, ...)`. The processor's own `self`
is an unknown object. No strategy rewrites a processor: `processor_of` carries the module class, and the
engine reports these sites without an automatic fix.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from adopter.analysis.idioms.method_forward import method_architecture
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Problem

_NAME = re.compile(r"""["']?([A-Za-z_]\w*)["']?""")
_BOUND = re.compile(rb"self\.(\w+)\s*=\s*(\w+)\s*\(")


def processor_calls(table: ClassTable, src: SourceText) -> list[tuple[str, str, Node]]:
    """(processor class, module class it runs on, its `__call__` node) for each processor of the file."""
    if not src.occurs(b"__call__"):
        return []
    out: list[tuple[str, str, Node]] = []
    for name, info in table.infos.items():
        node = info.methods.get("__call__")
        if node is None or table.is_module(name):
            continue
        owner = _annotated(node, table, src) or _caller(name, table, src)
        if owner is not None:
            out.append((name, owner, node))
    return out


def _annotated(call: Node, table: ClassTable, src: SourceText) -> str | None:
    """The module class of this file that `__call__`'s second parameter is annotated with."""
    ps = call.child_by_field_id(Field.PARAMETERS)
    named = [c for c in (ps.named_children if ps is not None else ()) if c.type != "comment"]
    if len(named) < 2 or named[1].type not in ("typed_parameter", "typed_default_parameter"):
        return None
    hint = named[1].child_by_field_name("type")
    found = _NAME.fullmatch(src.text(hint).strip()) if hint is not None else None
    if found is None or found.group(1) not in table.infos or not table.is_module(found.group(1)):
        return None
    return found.group(1)


def _caller(processor: str, table: ClassTable, src: SourceText) -> str | None:
    """The one module class whose `__init__` binds `self.<attr> = processor(...)` (once) and whose forward
    calls `self.<attr>(self, ...)`."""
    callers: list[str] = []
    for name, info in table.infos.items():
        init, forward = info.methods.get("__init__"), info.methods.get("forward")
        if init is None or forward is None or not src.contains(init, processor.encode()):
            continue
        code = code_bytes(src, init)  # what the methods' code says: a comment binds and calls nothing
        bound = [m.group(1) for m in _BOUND.finditer(code)]
        attrs = {m.group(1) for m in _BOUND.finditer(code) if m.group(2) == processor.encode()}
        if any(bound.count(a) != 1 for a in attrs):
            continue  # bound more than once: the class is not evident
        calls = code_bytes(src, forward)
        if any(re.search(rb"self\." + a + rb"\s*\(\s*self\s*[,)]", calls) for a in attrs) and table.is_module(name):
            callers.append(name)
    return callers[0] if len(callers) == 1 else None


def processor_architecture(
    processor: str, owner: str, node: Node, src: SourceText, symbols: ModuleSymbols, table: ClassTable
) -> tuple[Architecture, list[Problem]]:
    """`owner`'s `__init__` with the processor's `__call__` read as its forward, named `Processor.__call__`."""
    return method_architecture(owner, f"{processor}.__call__", "__call__", node, src, symbols, table, self_at=1,
                               processor_of=owner)
