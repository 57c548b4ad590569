"""A method other than `forward` read as a forward of a module class (a loss method; an attention processor's
`__call__` on the module it is handed): that class's `__init__` bindings and the method's body."""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.canonical.normalise import canonical_architecture
from adopter.analysis.flow.forward import FlowAnalysis
from adopter.analysis.flow.state import parameter_attrs
from adopter.analysis.idioms.layer_subclasses import bound_init
from adopter.analysis.idioms.submodules import stateless_submodules, thin_submodules
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Ctor, Problem


def method_architecture(owner: str, name: str, method: str, node: Node, src: SourceText, symbols: ModuleSymbols,
                        table: ClassTable, *, self_at: int = 0,
                        processor_of: str | None = None) -> tuple[Architecture, list[Problem]]:
    """`owner`'s `__init__` with the `def` at `node` read as its forward, named `name`; the forward is called
    `method`. `self_at`: the parameter in the role of `owner`'s `self` (`FlowAnalysis.function`)."""
    problems: list[Problem] = []
    init = bound_init(owner, table, src)
    module_attrs = frozenset(b.attr for b in (init.bindings if init is not None else ()) if isinstance(b.value, Ctor))
    flow = FlowAnalysis(src, symbols, table, owner, module_attrs, problems, stateless_submodules(init, table, src),
                        parameters=parameter_attrs(init))
    forward = flow.function(node, owner, self_at=self_at)
    arch = Architecture(name, table.qualified_bases(owner), init, replace(forward, name=method), src.span(node),
                        processor_of=processor_of)
    return canonical_architecture(arch, thin_submodules(init, table, src)), problems
