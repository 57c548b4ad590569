"""The analysis of one parsed file into a `ModuleFile`, with a per-class result cache.

`analyse()` and the incremental `DocumentAnalysis` both go through `Analyser.run`. Each unit (a
class, a module-level function, the top-level code) is cached under its own source text and position
plus the fingerprints of every module-level name its analysis consulted (same-file bases, inlined
helpers, imports), so an edit re-analyses the edited unit and the units that depend on it only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import pairwise
from typing import TypeVar

from tree_sitter import Node, Tree

from adopter.analysis.canonical.normalise import canonical_architecture, canonical_forward
from adopter.analysis.chains.caller_layers import calls_open_parameter, pinned_layers
from adopter.analysis.chains.class_callers import with_callers
from adopter.analysis.chains.functions import sequential_chains
from adopter.analysis.chains.lists import list_chains, splatted_lists
from adopter.analysis.chains.looped_lists import looped_list_chains
from adopter.analysis.chains.methods import method_chains
from adopter.analysis.chains.passed_layers import (
    PassedActivation,
    passed_activations,
    stores_activation,
    with_passed,
)
from adopter.analysis.chains.returned_lists import returned_list_chains
from adopter.analysis.chains.sequential_classes import is_sequential_class, sequential_class_chains
from adopter.analysis.chains.unrun_bindings import unrun_sequential_chains
from adopter.analysis.crossfile.additive import additive_helpers
from adopter.analysis.crossfile.importers import imported_elsewhere
from adopter.analysis.crossfile.init_source import InitSource
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.crossfile.stars import star_names, torch_reexports
from adopter.analysis.flow.foreign import BaseMethods
from adopter.analysis.flow.forward import FlowAnalysis
from adopter.analysis.flow.resume import Walk
from adopter.analysis.flow.state import parameter_attrs, positioned_items
from adopter.analysis.idioms.bias_submodules import bias_submodules
from adopter.analysis.idioms.entry_methods import (
    entry_method_architecture,
    entry_methods,
    same_file_decorators,
)
from adopter.analysis.idioms.function_attributes import function_attributes
from adopter.analysis.idioms.inherited_layers import inherited
from adopter.analysis.idioms.inherited_methods import base_methods
from adopter.analysis.idioms.layer_subclasses import bind_layer_subclasses, bound_init
from adopter.analysis.idioms.loss_methods import file_mentions_loss, loss_method_architecture, loss_methods
from adopter.analysis.idioms.method_forward import method_architecture
from adopter.analysis.idioms.optimizers import (
    file_mentions_optimizer,
    optimizer_methods,
    resolve_optimizer_classes,
)
from adopter.analysis.idioms.processors import processor_architecture, processor_calls
from adopter.analysis.idioms.random_layers import Imported, random_layers, reading_of
from adopter.analysis.idioms.readings import MethodReadings
from adopter.analysis.idioms.stored_methods import stored_methods
from adopter.analysis.idioms.submodules import (
    item_forwards,
    sequential_items,
    stateless_submodules,
    thin_submodules,
)
from adopter.analysis.names.carry import Layout, changed_names
from adopter.analysis.names.statement_reuse import StatementReadings
from adopter.analysis.names.symbols import ModuleSymbols, base_name, nested_reading
from adopter.analysis.parse.code_text import code_key
from adopter.analysis.parse.salvage import ParseMemo, salvage
from adopter.analysis.parse.source import Field, SourceText, is_broken
from adopter.analysis.parse.words import WordIndex, whole_word_at
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.analysis.scope.inline_lookups import with_inline_lookups
from adopter.dsl.types import (
    Architecture,
    Binding,
    Branch,
    Ctor,
    Forward,
    Init,
    Loop,
    ModuleFile,
    Op,
    Problem,
    Severity,
    Span,
)

_DEFAULT_RESOLVER: ModuleResolver | None = None
_DEFAULT_REACH: CrossFileReach | None = None


def default_resolver() -> ModuleResolver:
    """The process-wide resolver reading workspace files from disk (created on first use)."""
    global _DEFAULT_RESOLVER
    if _DEFAULT_RESOLVER is None:
        _DEFAULT_RESOLVER = ModuleResolver()
    return _DEFAULT_RESOLVER


def default_reach() -> CrossFileReach | None:
    """The process-wide cross-file reach over the default resolver (resolving on the spot, never
    deferred); None when `ADOPTER_CROSSFILE=0`."""
    global _DEFAULT_REACH
    if os.environ.get("ADOPTER_CROSSFILE", "1") == "0":
        return None
    if _DEFAULT_REACH is None:
        _DEFAULT_REACH = CrossFileReach(default_resolver())
    return _DEFAULT_REACH


def deferred_reach() -> CrossFileReach | None:
    """A new cross-file reach over the default resolver that queues the names it has not resolved yet
    instead of waiting for jedi (the language server keeps one and hands it to its analyses); None when
    `ADOPTER_CROSSFILE=0`."""
    if os.environ.get("ADOPTER_CROSSFILE", "1") == "0":
        return None
    return CrossFileReach(default_resolver(), deferred=True)


@dataclass(frozen=True)
class _Entry:
    text: bytes
    start: tuple[int, int]
    deps: tuple[tuple[str, tuple[object, ...]], ...]
    result: Architecture | Forward | tuple[Forward, tuple[Architecture, ...]] | tuple[Architecture, ...] | None
    problems: tuple[Problem, ...]
    bases: frozenset[str] = frozenset()  # the module-level names `deps` read (`base_name`)
    # `text` with what its comments say left out (`code_key`), set when a unit is built: a text that differs
    # from `text` in comments only reads the same (`_unit`); empty: compared as `text` only.
    code: bytes = b""
    # `deps` by the module-level name each reads (`base_name`): the next run checks those of the names it changed only
    by_base: Mapping[str, tuple[tuple[str, tuple[object, ...]], ...]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class _Flow:
    """A class's forward as the flow analysis read it (before the canonical pass), kept per class name
    while what it read is unchanged: `key` (the defining class, the method's text and position, the
    attributes `__init__` binds to modules, the stateless submodules inlined), and `deps`, the
    fingerprints of the names the flow consulted (the methods it inlined, imports, helpers)."""

    key: tuple[object, ...]
    deps: tuple[tuple[str, tuple[object, ...]], ...]
    forward: Forward
    problems: tuple[Problem, ...]
    canonical: Forward | None = None  # the class's canonical forward made from it (`_class`)
    walk: Walk | None = None  # the flow's walk, which the next walk of the edited forward resumes


class Analyser:
    """Analyses parsed files; keeps the per-unit cache between runs on the same document."""

    def __init__(self, resolver: ModuleResolver | None = None, reach: CrossFileReach | None = None, *,
                 remember: bool = True) -> None:
        self.resolver = resolver or default_resolver()
        # False: one run only (`analyse`), so no later run checks what a unit consulted: the names are not
        # recorded and no dependency fingerprint is computed (a tenth of the analysis's calls).
        self.remember = remember
        # Cross-file reach reads the disk: only with the disk resolver (not an archive's) by default.
        self.reach = reach if reach is not None else (default_reach() if resolver is None else None)
        self.cache: dict[str, _Entry] = {}
        # The entries the last run replaced or dropped: a keystroke deleted again, an undo, a broken line
        # completed back to what it was find their units' previous analyses here (same key, text and
        # dependencies, so the same result) instead of analysing them again. One generation only.
        self.older: dict[str, _Entry] = {}
        self.reanalysed: list[str] = []  # units analysed (not taken from the cache) by the last run
        self.memo = ParseMemo()  # statements' parse verdicts, for broken texts (`salvage`)
        self._readings = MethodReadings()  # each class's loss, entry and stored methods, by its text
        self.read: tuple[bytes, Tree] | None = None  # the text and tree the last run analysed (masked)
        # Dependency fingerprints carried from run to run (`adopter.analysis.names.carry`): the last
        # complete run's symbol layout and fingerprints, and this run's changed names (None: no carry).
        self._layout: Layout | None = None
        # A released document's layout without its text (`release_text`), until the text is given back.
        self._layout_released: Layout | None = None
        self._fingerprints: dict[str, tuple[object, ...]] = {}
        self._changed: set[str] | None = None
        self._words: WordIndex | None = None  # the last run's word index (`adopter.analysis.parse.words`)
        # Per class name, the flows of its last two forwards (`_forward`): an edit of `__init__` (or of a
        # method the forward does not inline) re-analyses the class but leaves its forward's flow as it was;
        # two, as for `older`: a character typed in the forward and deleted again gives back the one before.
        self._flows: dict[str, list[_Flow]] = {}
        # Per class name, its last `__init__` reading and the fingerprints of what that read (`_init`): an edit
        # of the forward re-analyses the class but leaves its `__init__` bindings as they were.
        self._inits: dict[str, tuple[tuple[tuple[str, tuple[object, ...]], ...], Init | None]] = {}
        # Method chains whose `block` the file's calls of the class decide (`class_callers`): each cached
        # chain's last reading, kept while it is unchanged, so the chain stays the same object.
        self._callers: dict[int, tuple[Architecture, Architecture]] = {}
        # Per class name whose stored activation parameter the file's constructions pass others to
        # (`passed_layers`): the cached class, what was passed, and the class read with it, kept while equal.
        self._passed: dict[str, tuple[Architecture, tuple[PassedActivation, ...], Architecture]] = {}
        # The classes read with the layer classes the file's constructions pin to their open parameters
        # (`caller_layers`): the cached class, the pins, and the class read with them, kept while equal.
        self._pinned: dict[str, tuple[Architecture, tuple[tuple[str, str], ...], Architecture]] = {}
        # Per `__init__` reading of the last run's classes (by id, the reading held): whether it calls an open
        # parameter and whether it stores an activation (`_init_flags`). A class taken from the unit cache
        # keeps its reading, so a keystroke asks both of the edited class's new reading only.
        self._flags: dict[int, tuple[Init, bool, bool]] = {}
        # Per class name, the bytes of its text the last run's method readings were keyed by (`_method_readings`).
        self._class_texts: dict[str, bytes] = {}
        # The last run's readings of the top-level statements (`names.statement_reuse`): the next run reads the
        # statements the edit changed only. With the imports and aliases that run qualified names by, and its
        # `ClassTable.conditional_bases` (None: not asked), which the next run takes while the edit lies in one
        # definition's body and those tables are equal.
        self._statements: StatementReadings | None = None
        self._conditional: tuple[dict[str, str], dict[str, str], dict[str, str]] | None = None

    def clear(self) -> None:
        self.cache.clear()
        self.older.clear()
        self._flows.clear()
        self._inits.clear()
        self._callers.clear()
        self._passed.clear()
        self._pinned.clear()
        self._flags.clear()
        self._class_texts = {}
        self._readings.clear()
        self._layout, self._fingerprints, self._changed = None, {}, None
        self._layout_released = None
        self._words = None
        self._statements = self._conditional = None

    def release_text(self, text: bytes | None = None) -> None:
        """Drop what holds the last text's bytes (a released document: `DocumentAnalysis.release`), keeping
        the unit cache; the next run searches words afresh and carries them again from the one after.
        `text`: the bytes of the document's text, which the caller can give back (`restore_text`) before the
        next run: when the last layout was read from them, it is kept without them meanwhile, so that run
        still carries the fingerprints; otherwise that run computes them all."""
        if self._layout is not None and text is not None and self._layout.data == text:
            self._layout_released = replace(self._layout, data=b"")
        self._layout = None
        self.read = None
        self._words = None
        self._statements = self._conditional = None
        self.memo.last_chunks = self.memo.last_lines = None
        self._readings.clear()
        self._class_texts = {}
        # The forwards' flows and their walks (a checkpoint before every statement: ~1 MB for a 100 KB file)
        # only spare the next edit of a class walking its forward again (all of it, or from the edited
        # statement on); a document nobody edits keeps neither, and its first edit of a class walks that
        # class's forward from the start (its result, still in the unit cache, is handed back when equal).
        self._flows.clear()

    def restore_text(self, text: Callable[[], bytes]) -> None:
        """Give back the bytes of the text `release_text` was given (`text()`, called only when the layout
        kept without them needs them): the next run carries the fingerprints from it."""
        if self._layout_released is not None:
            self._layout = replace(self._layout_released, data=text())
            self._layout_released = None

    def run(self, data: bytes, tree: Tree | None, path: str | None, *,
            parse: Callable[[bytes], Tree] | None = None,
            salvaged: tuple[bytes, Tree, tuple[Problem, ...]] | None = None) -> ModuleFile:
        """The ModuleFile of `tree` (parsed from `data`); never raises for one unit's failure.

        A text Python rejects is read as `adopter.analysis.parse.salvage` masks it; `parse` parses the masked
        text (the incremental document re-parses it from its last tree), a fresh parse by default. `tree`
        None: `data` is known broken and was not parsed (`adopter.analysis.parse.verdict`). `salvaged`: what
        `salvage` gave for this broken `data` already (the incremental document asks it first).
        """
        problems: list[Problem] = []
        last_conditional, self._conditional = self._conditional, None  # set again when this run completes
        if salvaged is not None:
            data, tree, found = salvaged
            problems.extend(found)
        elif tree is None or is_broken(tree):
            data, tree, found = salvage(data, path, self.memo, parse)
            problems.extend(found)
        self.read = (data, tree)
        # Where words occur, carried from the last run's text from the second run on (a document being
        # edited: `WordIndex.moved`); a one-off analysis searches the text as it asks.
        if self._words is None:
            self._words = WordIndex(data, carry=False)
        else:
            self._words = self._words.moved(data)
        src = SourceText(data, tree, path, self._words)
        symbols = ModuleSymbols(src, self.resolver.package_of(path), self._statements, keep=self.remember)
        self._statements = symbols.readings
        stars_bound = False
        if self.reach is not None and path and src.occurs(b"import *"):
            stars = symbols.star_imports()
            if stars:  # `from .conv2d_layers import *`: the names that module binds (its file is read)
                try:
                    names = star_names(stars, os.path.abspath(path), symbols.package, self.resolver.locate,
                                       self.reach.parsed, self.resolver.package_of)
                except Exception:  # a module that cannot be read leaves the file's own names, never an error
                    names = {}
                symbols.add_star_names(names)
                stars_bound = bool(names)
        if self.reach is not None and path and symbols.imports:
            try:  # `from xuance.torch import nn`: the `nn` that package imports from torch
                torch_names = torch_reexports(symbols.imports, lambda n: src.occurs(n.encode() + b"."),
                                              os.path.abspath(path), self.resolver.locate, self.reach.parsed)
            except Exception:  # a module that cannot be read leaves the names as imported, never an error
                torch_names = {}
            symbols.add_reexports(torch_names)
            stars_bound = stars_bound or bool(torch_names)
            try:  # `attn = maybe_add_mask(attn, bias)`: a helper of another file returning `attn + bias`
                added = additive_helpers(symbols.imports, data, src.positions, os.path.abspath(path),
                                         self.resolver.locate,
                                         self.reach.parsed, self.resolver.package_of)
            except Exception:  # a module that cannot be read leaves the names as imported, never an error
                added = {}
            symbols.add_reexports(added)
            stars_bound = stars_bound or bool(added)
        # Fingerprints carried from the last analysis: not when a star import bound names read from another
        # file (that file may have changed while this text did not), then every fingerprint is computed.
        previous, self._layout, self._changed = self._layout, None, None
        layout = None if tree.root_node.has_error else Layout.of(data, symbols)
        if previous is not None and layout is not None and not stars_bound:
            self._changed = changed_names(previous, layout)
            symbols.carry(self._fingerprints, self._changed)
        table = ClassTable(symbols, self.resolver, path)
        last = last_conditional
        if last is not None and symbols.body_edit and last[1] == symbols.imports and last[2] == symbols.aliases:
            table.carry_conditional(last[0])  # what it reads is unchanged: class headers, assignments, imports
        self.reanalysed = []
        fresh: dict[str, _Entry] = {}
        architectures: list[Architecture] = []
        passed, self._passed = self._passed, {}
        pinned, self._pinned = self._pinned, {}
        flags, self._flags = self._flags, {}
        for name, info in table.infos.items():
            try:
                if not table.is_module(name):
                    continue
                entry = self._unit(f"class {name}", info.node, symbols, fresh,
                                   lambda n=name: self._class(n, src, symbols, table),
                                   partial(table.module_deps, name), head=True)
            except Exception as exc:  # one broken class must not hide the others
                problems.append(_internal(f"class {name}", exc, src.span(info.node), path))
                continue
            problems.extend(entry.problems)
            if isinstance(entry.result, Architecture):
                arch = entry.result
                span = src.span(info.node)
                if arch.span != span:  # a method the analysis did not read changed the class's extent
                    arch = replace(arch, span=span)
                    fresh[f"class {name}"] = replace(entry, result=arch)
                calls_open, stores = self._init_flags(arch.init, flags)
                if calls_open:
                    arch = self._with_pinned(name, arch, src, symbols, table, pinned)
                if stores:
                    arch = self._with_passed(name, arch, src, symbols, table, passed)
                architectures.append(arch)
        chains: list[Architecture] = []
        named: frozenset[str] | None = None
        callers, self._callers = self._callers, {}
        for name, info in table.infos.items():  # Sequential subclasses: the chain their __init__ builds
            try:
                if not is_sequential_class(name, table):
                    continue
                entry = self._unit(f"sequential {name}", info.node, symbols, fresh,
                                   lambda n=name: (sequential_class_chains(n, src, table), []), frozenset())
            except Exception as exc:
                problems.append(_internal(f"class {name}", exc, src.span(info.node), path))
                continue
            if isinstance(entry.result, tuple):
                chains.extend(a for a in entry.result if isinstance(a, Architecture))
        for name, info in table.infos.items():  # literal ModuleLists `forward` runs in turn (`chains.looped_lists`)
            try:
                if not src.contains(info.node, b"ModuleList") or not table.is_module(name):
                    continue
                entry = self._unit(f"looped lists {name}", info.node, symbols, fresh,
                                   lambda n=name: (looped_list_chains(n, src, table), []),
                                   partial(table.module_deps, name))
            except Exception as exc:
                problems.append(_internal(f"class {name}", exc, src.span(info.node), path))
                continue
            if isinstance(entry.result, tuple):
                chains.extend(a for a in entry.result if isinstance(a, Architecture))
        for name, info in table.infos.items():  # Sequentials built in a module's methods, not bound
            try:
                if not src.contains(info.node, b"Sequential") or not table.is_module(name):
                    continue
                entry = self._unit(f"method chains {name}", info.node, symbols, fresh,
                                   lambda n=name: (method_chains(n, src, table) + returned_list_chains(n, src, table), []),
                                   partial(table.module_deps, name))
            except Exception as exc:
                problems.append(_internal(f"class {name}", exc, src.span(info.node), path))
                continue
            if isinstance(entry.result, tuple):
                chains.extend(self._with_callers([a for a in entry.result if isinstance(a, Architecture)],
                                                 src, table, callers))

        # Each method read like a forward is its own unit (`_method_unit`), given this run's tables rather than
        # closing over them: a nested function here made a reference cycle with the run's closure (compiled),
        # which kept every table of the run alive until the next garbage collection.
        run = (symbols, fresh, src, path)
        modules = [(name, info) for name, info in table.infos.items() if table.is_module(name)]
        readings = self._method_readings(src, tree, table)
        for name, info in modules if file_mentions_loss(src.occurs) else ():  # loss methods, as forwards
            for method, node in readings("loss", info.node, info.methods,
                                         partial(loss_methods, info.methods, info.node, src.contains)):
                self._method_unit(run, problems, chains, f"loss {name}.{method}", f"method {name}.{method}", node,
                                  lambda n=name, m=method, fn=node: loss_method_architecture(n, m, fn, src, symbols, table),
                                  partial(table.module_deps, name))
        # same-file functions some method may be decorated with (`transparent_decorators`): their text is part
        # of what the entry reading reads, so of its key
        decorators = {f: n for f, n in symbols.functions.items() if src.occurs(b"@" + f.encode())}
        for name, info in modules:  # public methods nothing in the class calls, as forwards
            key = "entry" + same_file_decorators(src.raw(info.node), decorators, src.raw).decode(
                "utf-8", "replace") if decorators else "entry"
            for method, node in readings(key, info.node, info.methods,
                                         partial(entry_methods, info.methods, info.node, src.raw, decorators)):
                self._method_unit(run, problems, chains, f"entry {name}.{method}", f"method {name}.{method}", node,
                                  lambda n=name, m=method, fn=node: entry_method_architecture(n, m, fn, src, symbols, table),
                                  partial(table.module_deps, name))
        for name, info in modules if src.occurs(b"= self.") else ():  # methods __init__ stores
            for method, node in readings("stored", info.node, info.methods,
                                         partial(stored_methods, info.methods, src.raw)):
                self._method_unit(run, problems, chains, f"stored {name}.{method}", f"method {name}.{method}", node,
                                  lambda n=name, m=method, fn=node: method_architecture(n, f"{n}.{m}", m, fn, src, symbols, table),
                                  partial(table.module_deps, name))
        for processor, owner, node in processor_calls(table, src):  # attention processors, on their module
            self._method_unit(run, problems, chains, f"processor {processor} on {owner}", f"method {processor}.__call__", node,
                              lambda p=processor, o=owner, fn=node: processor_architecture(p, o, fn, src, symbols, table),
                              partial(table.module_deps, owner))
        functions: list[Forward] = []
        for name, node in symbols.functions.items():
            try:
                entry = self._unit(f"def {name}", node, symbols, fresh,
                                   lambda fn=node, n=name: self._function(fn, n, src, symbols, table), frozenset())
            except Exception as exc:
                problems.append(_internal(f"function {name}", exc, src.span(node), path))
                continue
            problems.extend(entry.problems)
            if isinstance(entry.result, tuple) and entry.result and isinstance(entry.result[0], Forward):
                fn = entry.result[0]
                if named is None:
                    # In a file of helpers only (no module class), helpers serve other files: all count.
                    named = _named_elsewhere(src, symbols.functions) if architectures else frozenset(
                        symbols.functions)
                    unnamed = [n for n in symbols.functions if n not in named]
                    if unnamed:  # a helper another module of the package imports is referenced there
                        named = named | imported_elsewhere(path, unnamed)
                if fn.referenced != (name in named):
                    # Callers live outside the function's own cached unit: refresh the flag, keeping the
                    # entry's identity while it does not change.
                    fn = replace(fn, referenced=name in named)
                    fresh[f"def {name}"] = replace(entry, result=(fn, *entry.result[1:]))
                functions.append(fn)
                chains.extend(entry.result[1])
        for outer, inner, node in _nested_functions(symbols.functions, src):
            qualname = f"{outer}.{inner}"
            try:
                entry = self._unit(f"def {qualname}", node, symbols, fresh,
                                   lambda fn=node, n=qualname: self._function(fn, n, src, symbols, table, False),
                                   frozenset())
            except Exception as exc:
                problems.append(_internal(f"function {qualname}", exc, src.span(node), path))
                continue
            problems.extend(entry.problems)
            if isinstance(entry.result, tuple) and entry.result and isinstance(entry.result[0], Forward):
                # Referenced when the enclosing function uses it besides its `def` (`Module([to_out], forward)`).
                used = _words(src.raw(symbols.functions[outer]), inner.encode(), 2) >= 2
                fn = entry.result[0]
                if fn.referenced != used or fn.name != qualname:  # named apart from other builders' `forward`
                    fn = replace(fn, name=qualname, referenced=used)
                    fresh[f"def {qualname}"] = replace(entry, result=(fn, *entry.result[1:]))
                functions.append(fn)
        # Methods that build optimizers (`configure_optimizers`, a trainer's `__init__`), read like functions.
        # Each class's by its text (`MethodReadings`) and whether it is a module (its `forward` is then skipped).
        methods = [(f"{name}.{method}", node)
                   for name, info in (table.infos.items() if file_mentions_optimizer(src.occurs) else ())
                   for method, node in _optimizer_methods(name, info.node, info.methods, table.is_module(name),
                                                          src, readings)]
        for qualname, node in methods:
            try:
                entry = self._unit(f"method {qualname}", node, symbols, fresh,
                                   lambda fn=node, n=qualname: self._method(fn, n, src, symbols), frozenset())
            except Exception as exc:
                problems.append(_internal(f"method {qualname}", exc, src.span(node), path))
                continue
            problems.extend(entry.problems)
            if isinstance(entry.result, Forward):
                functions.append(entry.result)
        try:
            toplevel = self._toplevel(src, symbols, fresh)
            problems.extend(toplevel.problems)
            if isinstance(toplevel.result, Forward) and toplevel.result.body:
                functions.append(toplevel.result)
        except Exception as exc:
            problems.append(_internal("top-level code", exc, None, path))
        try:  # Sequentials `__init__` binds that no forward runs (`chains.unrun_bindings`)
            chains.extend(unrun_sequential_chains(
                architectures, [*(c.forward for c in chains if c.forward is not None), *functions], table, src))
        except Exception as exc:
            problems.append(_internal("unrun Sequential bindings", exc, None, path))
        self.older = {k: v for k, v in self.cache.items() if fresh.get(k) is not v}
        self.cache = fresh
        self._layout, self._fingerprints = layout, symbols.fingerprints
        known = table.conditional_known
        self._conditional = (known, dict(symbols.imports), dict(symbols.aliases)) if known is not None and self.remember else None
        return ModuleFile(path, tuple(architectures), tuple(problems), tuple(functions), tuple(chains))

    def _init_flags(self, init: Init | None, last_run: dict[int, tuple[Init, bool, bool]]) -> tuple[bool, bool]:
        """`calls_open_parameter(init)` and `stores_activation(init)`, the last run's answers while `init` is the
        very object they were asked of (both read the frozen reading alone)."""
        if init is None:
            return False, False
        known = last_run.get(id(init))
        if known is None or known[0] is not init:
            known = (init, calls_open_parameter(init), stores_activation(init))
        self._flags[id(init)] = known
        return known[1], known[2]

    def _method_readings(self, src: SourceText, tree: Tree, table: ClassTable) -> Callable[
            [str, Node, dict[str, Node], Callable[[], list[tuple[str, Node]]]], list[tuple[str, Node]]]:
        """How this run finds a class's loss, entry or stored methods: `MethodReadings` by the class's text and
        column, or afresh in a tree with errors (where a class's subtree may depend on more than its text).
        A class whose name the edit did not change (`changed_names`: its text and start are the last run's)
        looks its readings up with the last run's bytes of its text: the very key `MethodReadings` holds, found
        without slicing, hashing or comparing the text again."""
        readings = self._readings
        readings.start()
        last, self._class_texts = self._class_texts, {}
        if tree.root_node.has_error:
            return lambda _reading, _node, _methods, find: find()
        changed = self._changed
        now = self._class_texts
        names = {id(info.node): name for name, info in table.infos.items()}

        # Each class's text and column, read once for its four readings (by the node object, kept alive here).
        texts: dict[int, tuple[Node, bytes, int]] = {}

        def read(reading: str, node: Node, methods: dict[str, Node],
                 find: Callable[[], list[tuple[str, Node]]]) -> list[tuple[str, Node]]:
            known = texts.get(id(node))
            if known is None:
                name = names.get(id(node))
                text = None
                if name is not None and changed is not None and name.partition(".")[0] not in changed:
                    text = last.get(name)  # a nested class lies inside its outer one: unchanged with it
                if text is None:
                    text = src.raw(node)
                if name is not None:
                    now[name] = text
                known = texts[id(node)] = (node, text, node.start_point[1])
            return readings.methods(f"{reading} {known[2]}", known[1], methods, find)

        return read

    def _with_callers(self, found: list[Architecture], src: SourceText, table: ClassTable,
                      last_run: dict[int, tuple[Architecture, Architecture]]) -> list[Architecture]:
        """`found` (a class's method chains) with what the file passes to their `block` (`class_callers`):
        read afresh each run (callers lie outside the class's unit), the last run's reading reused while equal."""
        if not any(p.parameter for a in found for p in a.passed_to):
            return found
        out: list[Architecture] = []
        for chain, read in zip(found, with_callers(found, src, table), strict=True):
            last = last_run.get(id(chain))
            if last is not None and last[0] is chain and last[1] == read:
                read = last[1]
            if read is not chain:
                self._callers[id(chain)] = (chain, read)
            out.append(read)
        return out

    def _with_pinned(self, name: str, arch: Architecture, src: SourceText, symbols: ModuleSymbols,
                     table: ClassTable, last_run: dict[str, tuple[Architecture, tuple[tuple[str, str], ...],
                                                                    Architecture]]) -> Architecture:
        """`arch` read again with the layer class every construction in the file passes to a parameter it
        calls and has no default for (`caller_layers`)."""
        init = arch.init
        assert init is not None
        return _reread(name, arch, last_run, self._pinned, lambda: pinned_layers(name, init, src, table),
                       lambda pins: self._class(name, src, symbols, table, pinned=pins)[0])

    def _with_passed(self, name: str, arch: Architecture, src: SourceText, symbols: ModuleSymbols,
                     table: ClassTable, last_run: dict[str, tuple[Architecture, tuple[PassedActivation, ...],
                                                                    Architecture]]) -> Architecture:
        """`arch` read again with the activations the file's constructions pass to its stored parameters
        (`passed_layers`), and the layer classes `_with_pinned` found."""
        init = arch.init
        assert init is not None
        pins = self._pinned[name][1] if name in self._pinned else ()
        return _reread(name, arch, last_run, self._passed, lambda: passed_activations(name, init, src, table),
                       lambda found: self._class(name, src, symbols, table, found, pins)[0])

    def _method_unit(self, run: tuple[ModuleSymbols, dict[str, _Entry], SourceText, str | None], problems: list[Problem],
                     chains: list[Architecture], key: str, what: str, node: Node, build: object,
                     deps: frozenset[str] | Callable[[], frozenset[str]]) -> None:
        """One method read like a forward (its own unit): its architecture joins `chains`. `run`: the
        symbols, fresh entries, source and path of the run."""
        symbols, fresh, src, path = run
        try:
            entry = self._unit(key, node, symbols, fresh, build, deps)
        except Exception as exc:
            problems.append(_internal(what, exc, src.span(node), path))
            return
        problems.extend(entry.problems)
        if isinstance(entry.result, Architecture):
            chains.append(entry.result)

    def _unit(
        self,
        key: str,
        node: Node,
        symbols: ModuleSymbols,
        fresh: dict[str, _Entry],
        build: object,
        extra_deps: frozenset[str] | Callable[[], frozenset[str]],
        head: bool = False,
    ) -> _Entry:
        """The cached entry of a unit while its key text, position and dependencies are unchanged,
        else a fresh one. With `head` (a class) the key text is the class header only: the methods
        its analysis read (`__init__`, `forward`, inlined ones) are dependencies like any other, so
        an edit of a method the analysis never reads re-analyses nothing. `extra_deps`: dependency keys
        besides those the analysis consults, or a function giving them (called only when the unit is
        analysed: most runs take every unit from the cache)."""
        body = node.child_by_field_id(Field.BODY) if head else None
        end = body.start_byte if body is not None else node.end_byte
        text = symbols.src.data[node.start_byte : end]
        cached = self.cache.get(key)
        if (
            cached is not None
            and self._changed is not None
            and cached.start == node.start_point
            and cached.text == text
            and self._changed.isdisjoint(cached.bases)
        ):  # its dependencies' fingerprints are those it was checked or built with: none changed
            fresh[key] = cached
            return cached
        if (
            cached is not None
            and self._changed is not None
            and cached.by_base
            and cached.start == node.start_point
            and cached.text == text
            and all(symbols.fingerprint(n) == fp for changed in self._changed.intersection(cached.by_base)
                    for n, fp in cached.by_base[changed])
        ):  # the last run's entry, valid then: the fingerprints of the names the edit left alone are the same (those
            # `changed_names` leaves out, as above), so only those of the names it changed are compared
            fresh[key] = cached
            return cached
        code: bytes | None = None
        for kept in (cached, self.older.get(key)):
            if kept is None or kept.start != node.start_point:
                continue
            if kept.text != text:
                # A text that differs in what its comments say only (a comment keystroke, `code_key`): every
                # reading of the unit and of what it consulted is blind to comments (`parse.code_text`), and its
                # code tokens sit at the same lines and columns, so the analysis is the same, spans included.
                if code is None:
                    code = code_key(symbols.src, node.start_byte, end)
                if not kept.code or kept.code != code:
                    continue
            if all(symbols.fingerprint(n) == fp for n, fp in kept.deps):
                if kept.text != text:
                    kept = replace(kept, text=text)  # the same result: its findings are reused by identity
                fresh[key] = kept
                if kept.result is not getattr(cached, "result", None) and isinstance(kept.result, Architecture):
                    self._restored(kept.result)
                return kept
        symbols.consulted = set() if self.remember else None
        problems: list[Problem] = []
        try:
            assert callable(build)
            result, problems = build()
        finally:
            consulted = symbols.consulted
            symbols.consulted = None
            if consulted is not None:
                consulted |= extra_deps() if callable(extra_deps) else extra_deps
        consulted = consulted or set()
        deps = tuple(sorted((n, symbols.fingerprint(n)) for n in consulted))
        if cached is not None and identical_but_moved(result, cached.result):
            # The very same object: its findings and diagnostics are reused downstream. Also when an edit before
            # its `if`s only moved their start bytes (a comment or docstring typed above): see `identical_but_moved`.
            result = cached.result
        entry = _Entry(text, node.start_point, deps, result, tuple(problems), frozenset(base_name(n) for n in consulted),
                       code_key(symbols.src, node.start_byte, end) if self.remember else b"", _by_base(deps))
        fresh[key] = entry
        self.reanalysed.append(key)
        return entry

    def _imported_class(self, path: str | None) -> Callable[[str], Imported | None] | None:
        """Another file's class named in `path`, read by cross-file reach (`idioms.random_layers`)."""
        reach = self.reach
        if reach is None or not path:
            return None
        return reading_of(lambda qualified: reach.class_or_function(qualified, path))

    def _class(
        self, name: str, src: SourceText, symbols: ModuleSymbols, table: ClassTable,
        passed: tuple[PassedActivation, ...] = (), pinned: tuple[tuple[str, str], ...] = (),
    ) -> tuple[Architecture, list[Problem]]:
        problems: list[Problem] = []
        info = table.infos[name]
        init = self._init(name, src, symbols, table) if not pinned else self._pinned_init(name, src, table, pinned)
        # A module that overrides `__call__` and defines no `forward` (its own or a same-file base's) runs
        # `__call__` when called (`Conv2DBNActiv` of UVR's vr_network): that is its forward.
        found = table.find_method(name, "forward") or table.find_method(name, "__call__")
        init_found = table.find_method(name, "__init__")
        # `ACT2FN[self.config.hidden_act](x)` in forward: the binding `__init__` would hold for it (`inline_lookups`)
        init = with_inline_lookups(init, found[1] if found else None, name, table, src)
        if self.reach is not None and init is not None:  # the one hook of cross-file reach
            source = InitSource(init_found[1], src, symbols.qualify, found[1] if found else None, name,
                                symbols.note_method, symbols.qualify_binding,
                                symbols.note_class_head) if init_found else None
            init = self.reach.bind(init, src.path, source)
        if self.reach is not None:  # the layers its bases of other files build (`idioms.inherited_layers`)
            init = inherited(self.reach, init, name, table, src, symbols.note_method_exists)
        if passed and init is not None:  # what the file's constructions pass (`_with_passed`)
            init = with_passed(init, passed)
        module_attrs = frozenset(
            b.attr for b in (init.bindings if init is not None else ()) if isinstance(b.value, Ctor)
        )
        forward: Forward | None = None
        flows = tuple(self._flows.get(name, ()))  # before this run: whether the flow below is one of them
        if found is not None:
            stateless = stateless_submodules(init, table, src)
            functions = function_attributes(init_found[1] if init_found is not None else None, symbols, src)
            biases = bias_submodules(init, table, src, self._imported_class(src.path), src.raw(found[1]))
            forward = self._forward(name, found, module_attrs, stateless, src, symbols, table, problems,
                                    positioned_items(init), parameter_attrs(init), functions, biases,
                                    base_methods(self.reach, name, table, src))
        arch = Architecture(name, table.qualified_bases(name), init, forward, src.span(info.node))
        items = item_forwards(sequential_items(init), table, src)
        random = random_layers(init.bindings, table, src, self._imported_class(src.path), name) if init is not None else frozenset()
        result = canonical_architecture(arch, thin_submodules(init, table, src), items, random)
        if forward is not None and any(forward is f.forward for f in flows) and result.forward is not None:
            # The forward's flow is the last run's (an edit of `__init__`): its canonical form most likely is
            # too. Then the last run's object is handed back, and what is kept per forward object downstream
            # (the session's `MatchMemo`) is found by identity.
            for entry in (self.cache.get(f"class {name}"), self.older.get(f"class {name}")):
                old = entry.result if entry is not None else None
                if isinstance(old, Architecture) and old.forward is not None and identical(result.forward, old.forward):
                    result = replace(result, forward=old.forward)
                    break
        kept = self._flows.get(name, [])
        for i, f in enumerate(kept):
            if f.forward is forward:
                kept[i] = replace(f, canonical=result.forward)
        return result, problems

    def _init(self, name: str, src: SourceText, symbols: ModuleSymbols, table: ClassTable) -> Init | None:
        """Class `name`'s `__init__` bindings (`InitAnalysis`, then `bind_layer_subclasses`), reused from the last
        analysis of the class while the fingerprints of the names that reading consulted, and of those its
        module test read (`ClassTable.module_deps`: the headers of its classes), are unchanged.

        The reading reads the class's `__init__` (and the methods and bases it reaches) through `table` and
        every other name through `symbols`, all noted in `consulted` (as the class's own cache relies on): with
        those unchanged it computes the same `Init`. The names are noted again on reuse, so the class's
        dependencies stay complete. Kept only while names are recorded (a document's analysis)."""
        outer = symbols.consulted
        kept = self._inits.get(name)
        if outer is not None and kept is not None and all(symbols.fingerprint(n) == fp for n, fp in kept[0]):
            outer.update(n for n, _ in kept[0])
            return kept[1]
        init, consulted = nested_reading(
            symbols, outer is not None, lambda: bound_init(name, table, src))
        if consulted is not None:
            self._inits[name] = (tuple(sorted((n, symbols.fingerprint(n)) for n in consulted | table.module_deps(name))),
                                 init)
        return init

    def _pinned_init(self, name: str, src: SourceText, table: ClassTable, pinned: tuple[tuple[str, str], ...],
                     ) -> Init | None:
        """Class `name`'s `__init__` bindings with each pinned parameter read as the class passed to it."""
        reader = InitAnalysis(name, table, src)
        reader.pinned = dict(pinned)
        return bind_layer_subclasses(reader.run(), table, src)

    def _restored(self, arch: Architecture) -> None:
        """A class's earlier analysis came back (`older`: a character typed and deleted again): its forward's
        flow becomes the most recent of the two kept, so that more edits of the forward, each undone, do
        not push it out."""
        kept = self._flows.get(arch.name, [])
        for i, f in enumerate(kept):
            if arch.forward is not None and f.canonical is arch.forward:
                kept.insert(0, kept.pop(i))
                return

    def _forward(
        self,
        name: str,
        found: tuple[str, Node],
        module_attrs: frozenset[str],
        stateless: dict[str, tuple[str, Node]],
        src: SourceText,
        symbols: ModuleSymbols,
        table: ClassTable,
        problems: list[Problem],
        positioned: frozenset[str] = frozenset(),
        parameters: frozenset[str] = frozenset(),
        functions: dict[str, tuple[Node, bool]] | None = None,
        biases: frozenset[str] = frozenset(),
        foreign: BaseMethods | None = None,
    ) -> Forward:
        """The flow of class `name`'s forward (`found`: its defining class and node), reused from the last
        analysis of the class while its key and the fingerprints of what it consulted are unchanged.

        The flow reads the forward's own text, the attributes `__init__` binds to modules (a call of
        `self.x` is a module call or a method's), the stateless submodules it inlines, and through
        `symbols` every other name and method (noted in `consulted`, as the class's cache does): with
        those unchanged it computes the same Forward. The names it consulted are noted again on reuse,
        so the class's own dependencies stay complete."""
        owner, node = found
        key = (owner, node.start_point, src.raw(node), module_attrs, positioned, parameters,
               tuple(sorted((attr, cls, n.start_point, src.raw(n)) for attr, (cls, n) in stateless.items())),
               tuple(sorted((attr, n.start_point, src.raw(n)) for attr, (n, _) in (functions or {}).items())),
               biases)
        outer = symbols.consulted
        flows = self._flows.setdefault(name, [])
        for i, kept in enumerate(flows):
            if kept.key == key and all(symbols.fingerprint(n) == fp for n, fp in kept.deps):
                if outer is not None:
                    outer.update(n for n, _ in kept.deps)
                problems.extend(kept.problems)
                flows.insert(0, flows.pop(i))
                return kept.forward
        # An edit of the forward: the last walk of it with the same inputs but its text resumes from the
        # statement the edit is in (`adopter.analysis.flow.resume`).
        resume = next((kept.walk for kept in flows if kept.walk is not None and kept.key[:2] == key[:2]
                       and kept.key[3:] == key[3:]), None)
        before = len(problems)
        analysis = FlowAnalysis(src, symbols, table, name, module_attrs, problems, stateless, positioned, parameters,
                                functions, biases, foreign)
        forward, consulted = nested_reading(
            symbols, self.remember, lambda: analysis.function(node, owner, resume=resume, record=self.remember))
        deps = tuple(sorted((n, symbols.fingerprint(n)) for n in consulted or ()))
        flows.insert(0, _Flow(key, deps, forward, tuple(problems[before:]), walk=analysis.walk))
        del flows[2:]
        return forward

    def _function(
        self, node: Node, name: str, src: SourceText, symbols: ModuleSymbols, table: ClassTable,
        with_chains: bool = True,
    ) -> tuple[tuple[Forward, tuple[Architecture, ...]], list[Problem]]:
        """A module-level function read like a forward, and the layer chains it builds (`with_chains`)."""
        problems: list[Problem] = []
        forward = FlowAnalysis(src, symbols, None, None, frozenset(), problems).function(node, None)
        forward = resolve_optimizer_classes(canonical_forward(forward), symbols.qualify)
        if not with_chains:
            return (forward, ()), problems
        chains = self._reached_chains(sequential_chains(node, name, src, table), src)
        if splatted_lists(node, src, symbols):  # `layers.append(...)` in a loop, then `nn.Sequential(*layers)`
            reader = InitAnalysis(name, table, src)
            reader.read_locals(node, {}, method=False)
            chains += list_chains(node, name, src, symbols, reader)
        return (forward, chains), problems

    def _reached_chains(self, chains: tuple[Architecture, ...], src: SourceText) -> tuple[Architecture, ...]:
        """A function's Sequential chains with their imported items bound by cross-file reach, as a class's
        `__init__` bindings are (a sync BatchNorm of another file: `crossfile.eval_norm`)."""
        if self.reach is None or not src.path or not chains:
            return chains
        out = []
        for chain in chains:
            init = self.reach.bind(chain.init, src.path)
            out.append(chain if init is chain.init else replace(chain, init=init))
        return tuple(out)

    def _method(self, node: Node, name: str, src: SourceText, symbols: ModuleSymbols) -> tuple[Forward, list[Problem]]:
        """A method of a class read like a module-level function, named `Class.method`."""
        problems: list[Problem] = []
        forward = FlowAnalysis(src, symbols, None, None, frozenset(), problems).function(node, None)
        forward = resolve_optimizer_classes(canonical_forward(replace(forward, name=name)), symbols.qualify)
        return forward, problems

    def _toplevel(self, src: SourceText, symbols: ModuleSymbols, fresh: dict[str, _Entry]) -> _Entry:
        stmts = [s for s in symbols.toplevel if s.type not in ("comment", "ERROR")]
        key = "<module>"
        text = b"\n".join(src.raw(s) for s in stmts)
        # The positions of the statements, and the file's end (the Forward's span is the whole file).
        starts = (*(s.start_point for s in stmts), src.tree.root_node.end_point)
        for kept in (self.cache.get(key), self.older.get(key)):
            if (
                kept is not None
                and kept.text == text
                and kept.deps[:1] == (("<starts>", starts),)
                and all(symbols.fingerprint(n) == fp for n, fp in kept.deps[1:])
            ):
                fresh[key] = kept
                return kept
        problems: list[Problem] = []
        symbols.consulted = set() if self.remember else None
        try:
            root = src.tree.root_node
            forward = canonical_forward(FlowAnalysis(src, symbols, None, None, frozenset(), problems).statements(
                stmts, "<module>", src.span(root)
            ))
        finally:
            consulted = symbols.consulted
            symbols.consulted = None
        deps = (("<starts>", starts), *sorted((n, symbols.fingerprint(n)) for n in consulted or ()))
        entry = _Entry(text, (0, 0), deps, forward, tuple(problems))
        fresh[key] = entry
        self.reanalysed.append(key)
        return entry


def _by_base(deps: tuple[tuple[str, tuple[object, ...]], ...]) -> dict[str, tuple[tuple[str, tuple[object, ...]], ...]]:
    """`deps` grouped by the module-level name each reads (`base_name`), in their order."""
    grouped: dict[str, list[tuple[str, tuple[object, ...]]]] = {}
    for dep in deps:
        grouped.setdefault(base_name(dep[0]), []).append(dep)
    return {name: tuple(group) for name, group in grouped.items()}


def _optimizer_methods(name: str, node: Node, methods: dict[str, Node], module: bool, src: SourceText,
                       readings: Callable[[str, Node, dict[str, Node], Callable[[], list[tuple[str, Node]]]],
                                          list[tuple[str, Node]]]) -> list[tuple[str, Node]]:
    """(method, node) of each method of class `name` that builds an optimizer (`optimizer_methods`), a
    module's `forward` left out."""
    def find() -> list[tuple[str, Node]]:
        found = optimizer_methods({name: methods}, lambda _c, m: module and m == "forward", src.raw, src.contains)
        return [(qualname.split(".", 1)[1], node) for qualname, node in found]

    return readings(f"optimizer {module}", node, methods, find)


def identical(new: object, old: object) -> bool:
    """Whether a unit's fresh result is the cached one in every field, including those left out of
    equality (`EXTRA_FIELDS`). A re-analysis that changed nothing (an edit of a base class or helper
    its dependants read, a character typed where the analysis keeps nothing) then hands back the
    cached object, and what is kept per object downstream (the session's findings per unit, the
    server's diagnostics per finding) is reused instead of matched and converted again."""
    return new is old or (type(new) is type(old) and new == old and _same_extras(new, old))


def identical_but_moved(new: object, old: object) -> bool:
    """`identical`, but for the start bytes of the `if`s in `Forward.applications`, which may differ by a
    one-to-one, order-preserving map (`IfBytes`): an edit before them that moved no span (a letter typed in a
    comment or a docstring above them, on another line) re-analyses a unit that reads the edited method and
    finds it unchanged but for those bytes. The cached object may then be handed back, exactly as a unit below
    such an edit is taken from the cache unanalysed, its bytes those of the text it was analysed from:

    - Every field compared by `==` and every other extra is equal, so every span is: matching the fresh result
      gives the cached result's findings (`adopter.engine.moved`: with every span end mapped to itself and the
      bytes mapped one-to-one and in order, the findings are the old ones, spans unchanged).
    - The bytes are read only by `adopter.engine.applications`, to compare them with each other within one
      forward (which calls lie on one path); no finding, problem or span holds one. A map that is one-to-one
      and order-preserving keeps every such comparison, so any reading of the cached bytes answers as the
      fresh bytes would."""
    if new is old:
        return True
    if type(new) is not type(old) or new != old:
        return False
    moved = IfBytes()
    return _same_extras(new, old, moved) and moved.monotone()


class IfBytes:
    """The start bytes of the `if`s of two results' `Forward.applications`, old to new, while they are
    compared (`identical_but_moved`): kept one-to-one; `monotone` says whether the map keeps their order."""

    __slots__ = ("_new", "_old")

    def __init__(self) -> None:
        self._new: dict[int, int] = {}  # old byte -> new byte
        self._old: dict[int, int] = {}  # new byte -> old byte

    def add(self, new: int, old: int) -> bool:
        """Map `old` to `new`; False when either is already mapped to another byte."""
        return self._new.setdefault(old, new) == new and self._old.setdefault(new, old) == old

    def monotone(self) -> bool:
        olds = sorted(self._new)
        return all(self._new[a] < self._new[b] for a, b in pairwise(olds))


def _same_applications(a: tuple[tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]], ...],
                       b: tuple[tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]], ...],
                       moved: IfBytes | None) -> bool:
    """`a == b` (`moved` None), or equal but for the `if` start bytes of their paths, which go into `moved`."""
    if moved is None or a == b:
        return a == b
    if len(a) != len(b):
        return False
    for (via, outs, span, path), (via2, outs2, span2, path2) in zip(a, b):
        if via != via2 or outs != outs2 or span != span2 or len(path) != len(path2):
            return False
        for (at, alternative), (at2, alternative2) in zip(path, path2):
            if alternative != alternative2 or not moved.add(at, at2):
                return False
    return True


# The dataclass fields of `adopter.dsl.types` that `==` does not compare; `_same_extras` compares them
# (a test checks that this list is complete).
EXTRA_FIELDS = frozenset({("Op", "origin"), ("Forward", "referenced"), ("Forward", "calls"),
                          ("Forward", "applications"), ("Ctor", "origin"),
                          ("Binding", "item_spans"), ("Init", "sizes")})


def _same_extras(a: object, b: object, moved: IfBytes | None = None) -> bool:
    """For `a == b`: whether their `EXTRA_FIELDS` are equal too, all the way down; with `moved`, the `if` start
    bytes of `Forward.applications` may differ, each pair going into `moved` (`identical_but_moved`)."""
    if a is b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return all(_same_extras(x, y, moved) for x, y in zip(a, b, strict=True))
    if isinstance(a, Architecture) and isinstance(b, Architecture):
        return _same_extras(a.init, b.init, moved) and _same_extras(a.forward, b.forward, moved)
    if isinstance(a, Init) and isinstance(b, Init):
        return a.sizes == b.sizes and all(_same_extras(x, y, moved) for x, y in zip(a.bindings, b.bindings, strict=True))
    if isinstance(a, Ctor) and isinstance(b, Ctor):
        return a.origin == b.origin and _same_extras(a.items, b.items, moved)
    if isinstance(a, Forward) and isinstance(b, Forward):
        return (a.referenced == b.referenced and a.calls == b.calls
                and _same_applications(a.applications, b.applications, moved) and _same_extras(a.body, b.body, moved))
    if isinstance(a, Op) and isinstance(b, Op):
        if a.origin is None or b.origin is None:
            return a.origin is b.origin
        return a.origin == b.origin and _same_extras(a.origin, b.origin, moved)
    if isinstance(a, Branch) and isinstance(b, Branch):
        return _same_extras(a.paths, b.paths, moved)
    if isinstance(a, Loop) and isinstance(b, Loop):
        return _same_extras(a.body, b.body, moved)
    if isinstance(a, Binding) and isinstance(b, Binding):
        return a.item_spans == b.item_spans and _same_extras(a.value, b.value, moved)
    return True  # the other types (Return, Ref, Expr, Span, Param, Binding's other fields...) have no extras


def _internal(what: str, exc: Exception, span: object, path: str | None) -> Problem:

    return Problem(
        f"internal error analysing {what}: {type(exc).__name__}: {exc}",
        span if isinstance(span, Span) else None,
        path,
        Severity.ERROR,
        "internal-error",
    )


def _named_elsewhere(src: SourceText, functions: Mapping[str, object]) -> frozenset[str]:
    """The module-level functions whose name occurs as a word in the file besides their own `def` (a
    call, a decorator, an export list, a mention in a string or comment: a doubt keeps the function's
    findings). Plain `find`s, no regular expression: this runs on every analysis of the file; a document
    being edited reads the offsets from its carried word index."""
    if src.words is not None and src.words.carries:
        positions = src.words.positions
        return frozenset(name for name in functions if _whole_words(src.data, name.encode(), positions, 2) >= 2)
    return frozenset(name for name in functions if _words(src.data, name.encode(), 2) >= 2)


def _nested_functions(functions: Mapping[str, Node], src: SourceText) -> list[tuple[str, str, Node]]:
    """The functions defined at the top of a module-level function's body (`def forward(q, k, v): ...`
    inside a builder that returns `Module([to_out], forward)`: a-unet's `AttentionBase`), as (outer, inner,
    node): they compute what the returned module runs, and their ops are read like a module-level
    function's (the layer chains they build are not: `tests/analysis/test_chains.py`)."""
    out: list[tuple[str, str, Node]] = []
    for outer, node in functions.items():
        body = node.child_by_field_id(Field.BODY)
        for stmt in body.named_children if body is not None else ():
            inner = stmt.child_by_field_id(Field.DEFINITION) if stmt.type == "decorated_definition" else stmt
            name = inner.child_by_field_id(Field.NAME) if inner is not None and inner.type == "function_definition" else None
            if inner is not None and name is not None:
                out.append((outer, src.text(name), inner))
    return out


def _words(data: bytes, word: bytes, enough: int) -> int:
    """How many times `word` occurs in `data` as a whole identifier, counting up to `enough`."""
    found = 0
    at = data.find(word)
    while at >= 0 and found < enough:
        end = at + len(word)
        if whole_word_at(data, at, end):
            found += 1
        at = data.find(word, end)
    return found


def _whole_words(data: bytes, word: bytes, positions: Callable[[bytes], list[int]], enough: int) -> int:
    """`_words(data, word, enough)` from every offset of `word` in `data` (`WordIndex.positions`): the
    same occurrences, those `find` would skip (overlapping the one before) skipped too."""
    found = 0
    end = 0
    for at in positions(word):
        if found >= enough:
            break
        if at < end:
            continue
        end = at + len(word)
        if whole_word_at(data, at, end):
            found += 1
    return found


_Values = TypeVar("_Values", bound=tuple[object, ...])


def _reread(name: str, arch: Architecture, last_run: Mapping[str, tuple[Architecture, _Values, Architecture]],
            store: dict[str, tuple[Architecture, _Values, Architecture]], values: Callable[[], _Values],
            read: Callable[[_Values], Architecture]) -> Architecture:
    """`arch` read again with what the file's constructions pass to the class (`values`): read afresh each run
    (the constructions lie outside the class's unit), the last run's reading reused while the class and the
    values are unchanged; what was read goes into `store`. A construction that cannot be read leaves the
    class as its own unit reads it."""
    try:
        found = values()
        if not found:
            return arch
        last = last_run.get(name)
        read_again = last[2] if last is not None and last[0] is arch and last[1] == found else read(found)
    except Exception:
        return arch
    store[name] = (arch, found, read_again)
    return read_again
