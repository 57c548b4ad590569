"""Which classes of a file are `nn.Module`s, their same-file method resolution order and methods."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from adopter.analysis.crossfile.resolver import ModuleResolver, is_torch_module_class
from adopter.analysis.names.conditional_bases import conditional_module_bases
from adopter.analysis.names.symbols import (
    CLASS_HEAD,
    CONDITIONAL,
    METHOD_EXISTS,
    ModuleSymbols,
    nested_reading,
)
from adopter.dsl.types import Init


@dataclass
class ClassInfo:
    """A class of the analysed file: its node, bases as written, and the methods it defines."""

    name: str
    node: Node
    bases: list[str]
    methods: dict[str, Node] = field(default_factory=dict)


class ClassTable:
    """The classes of one file and the nn.Module test over them (same file, then other files)."""

    def __init__(self, symbols: ModuleSymbols, resolver: ModuleResolver, path: str | None) -> None:
        self.symbols = symbols
        self.resolver = resolver
        self.path = path
        self.infos: dict[str, ClassInfo] = {}
        for name, node in symbols.classes.items():
            self.infos[name] = ClassInfo(name, node, symbols.bases_of(name), symbols.methods_of(name))
        for name, node in symbols.nested_classes.items():  # `Outer.Inner`, after the top-level classes
            self.infos[name] = ClassInfo(name, node, _nested_bases(name, node, symbols), symbols.methods_of(name))
        self._module: dict[str, tuple[bool | None, frozenset[str]]] = {}
        # Per class, this table's answers: its order (`mro`), and `is_module` with the order it read when the
        # bases left it open (None: decided by the bases alone, which note nothing). The analysis asks them
        # of every class several times a run; a repeated question notes the same dependencies again.
        self._orders: dict[str, list[str]] = {}
        self._modules: dict[str, tuple[bool, list[str] | None]] = {}
        self._conditional: dict[str, str] | None = None  # `conditional_bases`, read on the first class asked
        # (class, kind) -> a reading of its `__init__` (`init_reading`) and the names it noted (None: not recorded)
        self._inits: dict[tuple[str, str], tuple[Init | None, frozenset[str] | None]] = {}

    def carry_conditional(self, known: dict[str, str]) -> None:
        """Take `known` as `conditional_bases`: the last analysis's of the same document, when the edit since left
        what it reads unchanged (`ModuleSymbols.body_edit`, the same imports and aliases)."""
        self._conditional = known

    @property
    def conditional_known(self) -> dict[str, str] | None:
        """`conditional_bases` if it was asked (or carried), else None."""
        return self._conditional

    def conditional_bases(self) -> dict[str, str]:
        """Names bound to a torch module class on some branches, a placeholder on the others (`conditional_bases`)."""
        if self._conditional is None:
            self._conditional = conditional_module_bases(
                self.symbols.src.tree.root_node, self.symbols.src, self.symbols.qualify, is_torch_module_class
            )
        return self._conditional

    def init_reading(self, name: str, kind: str, read: Callable[[], Init | None]) -> Init | None:
        """`read()`, the reading `kind` of class `name`'s `__init__` (`scope.bindings.read_init`,
        `idioms.layer_subclasses.bound_init`), done once per table: the analysed class, its thin submodules
        (`idioms.submodules`) and a method read as a forward (`idioms.method_forward`) ask it of the same
        class. The reading depends on this table and its symbols alone, fixed for the table's life (re-exports
        are added before the table is made). The names it noted (`ModuleSymbols.consulted`) are kept and noted
        again on reuse, so a reusing reading's dependencies stay complete; a reading first done while nothing
        was recorded is done again when something is."""
        symbols = self.symbols
        outer = symbols.consulted
        kept = self._inits.get((name, kind))
        if kept is not None and (outer is None or kept[1] is not None):
            if outer is not None and kept[1] is not None:
                outer.update(kept[1])
            return kept[0]
        result, noted = nested_reading(symbols, outer is not None, read)
        self._inits[(name, kind)] = (result, frozenset(noted) if noted is not None else None)
        return result

    def is_module(self, name: str) -> bool:
        """Whether class `name` of this file is an nn.Module (cycle-safe, memoised).

        A base we cannot read (not installed, outside the workspace) leaves the answer open; then a
        class that has a `forward` (its own or a same-file base's) is taken to be a module.
        """
        known = self._modules.get(name)
        if known is None:
            verdict = self._module_test(name, set())[0]
            if verdict is None:
                order = self.mro(name)
                known = (any("forward" in self.infos[c].methods for c in order), order)
            else:
                known = (verdict, None)
            self._modules[name] = known
        elif known[1] is not None:
            self._note_order(name, known[1])
        if known[1] is not None and self.symbols.consulted is not None:
            for c in known[1]:
                self.symbols.note_method_exists(c, "forward")  # which classes define it, not its text
        return known[0]

    def module_deps(self, name: str) -> frozenset[str]:
        """The dependency keys (see `ModuleSymbols.fingerprint`) the nn.Module test of `name` looked at."""
        deps = self._module_test(name, set())[1] | frozenset(CLASS_HEAD + c for c in self.mro(name))
        if self._module_test(name, set())[0] is None:  # decided by which classes define `forward`
            deps |= frozenset(f"{METHOD_EXISTS}{c}.forward" for c in self.mro(name))
        return deps

    def _module_test(self, name: str, active: set[str]) -> tuple[bool | None, frozenset[str]]:
        memo = self._module.get(name)
        if memo is not None:
            return memo
        info = self.infos.get(name)
        if info is None or name in active:
            return (False, frozenset({CLASS_HEAD + name}))
        active.add(name)
        deps: set[str] = {CLASS_HEAD + name}
        verdict: bool | None = False
        for base in info.bases:
            root = base.split(".")[0]
            result: bool | None
            if base in self.conditional_bases():  # before the same-file dummy class of the torch-less branch
                deps.add(CONDITIONAL + base)
                result = True
            elif base in self.infos and base != name:
                result, sub = self._module_test(base, active)
                deps |= sub  # the base's header, not its body
            else:
                deps.add(root)
                qualified = self.symbols.qualify(base)
                if is_torch_module_class(qualified):
                    result = True
                elif root in self.symbols.imports or root in self.symbols.aliases:
                    result = self.resolver.is_module_class(qualified, self.path)
                else:
                    result = None
            if result:
                verdict = True
                break
            if result is None:
                verdict = None
        active.discard(name)
        answer = (verdict, frozenset(deps))
        self._module[name] = answer
        return answer

    def qualified_bases(self, name: str) -> tuple[str, ...]:
        info = self.infos[name]
        return tuple(b if b in self.infos else self.symbols.qualify(b) for b in info.bases)

    def mro(self, name: str) -> list[str]:
        """Same-file classes in method resolution order (depth-first, left to right, no repeats)."""
        order = self._orders.get(name)
        if order is None:
            order = self._orders[name] = self._mro(name)
        else:
            self._note_order(name, order)
        return list(order)

    def _note_order(self, name: str, order: list[str]) -> None:
        """The dependencies `_mro(name)` records, recorded again: the header of each class it visits."""
        if self.symbols.consulted is not None:
            for current in order or (name,):
                self.symbols.note_class_head(current)

    def _mro(self, name: str) -> list[str]:
        order: list[str] = []
        stack = [name]
        while stack:
            current = stack.pop()
            if current in order:
                continue
            self.symbols.note_class_head(current)  # record the dependency (header only)
            info = self.infos.get(current)
            if info is None:
                continue
            order.append(current)
            stack.extend(reversed([b for b in info.bases if b in self.infos]))
        return order

    def find_method(self, class_name: str, method: str, after: str | None = None) -> tuple[str, Node] | None:
        """The class and node defining `method` for instances of `class_name`.

        With `after`, the search starts after that class in the MRO (for `super().method()`).
        """
        order = self.mro(class_name)
        if after is not None and after in order:
            order = order[order.index(after) + 1 :]
        for cls in order:
            self.symbols.note_method(cls, method)  # depends on this method's text, or its absence
            node = self.infos[cls].methods.get(method)
            if node is not None:
                return cls, node
        return None


def _nested_bases(name: str, node: Node, symbols: ModuleSymbols) -> list[str]:
    """The bases of nested class `name` (`Outer.Inner`): a class its outer body defined before names it
    by its short name (`class B(A)` under `class Outer: class A(nn.Module): ...`), read as `Outer.A`."""
    outer = name.rpartition(".")[0]
    bases = symbols.bases_of(name)
    return [f"{outer}.{b}" if f"{outer}.{b}" in symbols.nested_classes and b != name.rpartition(".")[2] else b
            for b in bases]
