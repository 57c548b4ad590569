"""Layers a class inherits from a base defined in another file (issue 20).

A class whose base is a class of the same file inherits that base's `__init__` bindings (the analysis walks
same-file classes in their MRO: `ClassTable.mro`, `InitAnalysis`). A base imported from another file gave
nothing, so `class Mine(Layer)` overriding only `forward` (transformers' modular subclasses, mmseg/mmpretrain
blocks, torchvision's `QuantizableBasicBlock(BasicBlock)`) had no layers and no chain of its forward was found.

`inherit` reads such a base as the analysis reads a class of the analysed file: the base's file is parsed by the
resolver (tree-sitter, never imported or run), its `__init__` bindings read by the same `InitAnalysis` and bound
across files by the same `CrossFileReach.bind`, through further imported bases up to `MAX_DEPTH`, cached per
(file, class) with the files read (dropped by `CrossFileReach.changed`). The subclass gets each binding whose
attribute it does not bind itself (its own win), as the base's defaults build it (what a `super().__init__(...)`
call passes is not read). Every inherited binding's span is the subclass's header, a line of the analysed file;
its constructor's `origin` says where it was defined (`inherited from Layer (pkg/base.py:6)`), and a finding that
rests on one is detection-only (`inherited_reason`): the fix would have to rewrite another file.
"""

from __future__ import annotations

import ast
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from adopter.analysis.crossfile.init_source import InitSource
from adopter.analysis.crossfile.resolver import is_torch_module_class
from adopter.analysis.idioms.layer_subclasses import bind_layer_subclasses
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.words import groups_at_word_starts
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor, Init, Param, Span

if TYPE_CHECKING:
    from tree_sitter import Node

    from adopter.analysis.crossfile.resolver import ModuleResolver
    from adopter.analysis.parse.source import SourceText

MAX_DEPTH = 3  # imported bases read through, one below the other
# A module call in a forward: `self.x(...)`, or `self.x.forward(...)` (min-dalle's attention classes), where
# `self` starts a word (`groups_at_word_starts`).
_CALLED = re.compile(r"self\.(\w+)\s*(?:\.\s*forward\s*)?\(")
INHERITED = "inherited from "  # the prefix of an inherited constructor's `Ctor.origin`
_NOT_READ = ("torch.", "typing.", "builtins.", "abc.", "collections.", "enum.")
_CONTAINERS = frozenset({"Module", "Sequential", "ModuleList", "ModuleDict"})
_active = threading.local()


class CrossFileReach(Protocol):
    """What of `reach.CrossFileReach` inheriting reads (that module calls this one)."""

    resolver: ModuleResolver

    def bind(self, init: Init | None, path: str | None, source: Any = None) -> Init | None: ...

    def base_init(self, qualified: str, path: str, depth: int,
                  reader: Callable[[str, str, int], Init | None]) -> tuple[Init | None, str]: ...


def inherited_reason(bindings: Sequence[Binding]) -> str | None:
    """Why a match over a layer inherited from a base of another file gets no automatic fix, else None."""
    for b in bindings:
        if isinstance(b.value, Ctor) and b.value.origin is not None and b.value.origin.startswith(INHERITED):
            return (f"`self.{b.attr}` is built by a base class defined in another file "
                    f"({b.value.origin[len(INHERITED):]}); the rewrite would have to change that file, so change it by hand")
    return None


def torch_base(qualified: str) -> bool:
    """Whether `qualified` is a layer class of torch that is built of other layers, read from torch's installed
    source like any other base (`nn.TransformerEncoderLayer`); not `nn.Module` nor a container."""
    return is_torch_module_class(qualified) and qualified.rsplit(".", 1)[-1] not in _CONTAINERS


def _torch_callee(ctor: Ctor) -> Ctor:
    """`torch.nn.modules.linear.Linear` (as torch's own files import it) spelled `torch.nn.Linear`, items too."""
    callee = ctor.callee
    if is_torch_module_class(callee):
        callee = "torch.nn." + callee.rsplit(".", 1)[-1]
    items = tuple(_torch_callee(i) for i in ctor.items)
    return ctor if callee == ctor.callee and items == ctor.items else replace(ctor, callee=callee, items=items)


def imported_bases(name: str, table: ClassTable) -> list[str]:
    """The bases, qualified, that the classes of `name`'s same-file MRO import from another module, torch's
    layers built of layers among them (`torch_base`), in MRO order."""
    out: list[str] = []
    for cls in table.mro(name):
        for base in table.infos[cls].bases:
            if base in table.infos:
                continue
            qualified = table.symbols.qualify(base)
            readable = torch_base(qualified) or not qualified.startswith(_NOT_READ)
            if "." in qualified.lstrip(".") and readable and qualified not in out:
                out.append(qualified)
    return out


def header_span(node: Node, src: SourceText) -> Span:
    """The first line of a class's definition (its `class X(Base):` header), as far as its text goes."""
    span = src.span(node)
    first = src.raw(node).split(b"\n", 1)[0].decode("utf-8", errors="replace")
    return Span(span.start_line, span.start_col, span.start_line, span.start_col + len(first.rstrip()))


def inherited(reach: CrossFileReach, init: Init | None, name: str, table: ClassTable, src: SourceText,
              note_method_exists: Callable[[str, str], None] | None = None) -> Init | None:
    """`init` of class `name` with the bindings its bases imported from other files build that it does not bind
    itself (`inherit`): the analysis's second cross-file hook, after `CrossFileReach.bind`. Never raises.
    `note_method_exists(class, method)` records what the decision to look at the bases read of the file's
    classes (`ModuleSymbols.note_method_exists`), so that an edit of it alone re-reads the class."""
    try:
        return inherit(reach, init, name, table, src, src.path, note=note_method_exists)
    except (RecursionError, ValueError, OSError, SyntaxError):
        return init


def inherit(reach: CrossFileReach, init: Init | None, name: str, table: ClassTable, src: SourceText,
            path: str | None, depth: int = 0, note: Callable[[str, str], None] | None = None) -> Init | None:
    """`init` (class `name`'s own bindings, None without an `__init__`) with the bindings its bases of other
    files build that it does not bind itself. Never raises: a problem leaves `init` as it is."""
    if not path or depth > MAX_DEPTH or name not in table.infos:
        return init
    bases = imported_bases(name, table)
    if not bases:
        return init  # the common class: no base of another file, no cost
    own = {b.attr for b in init.bindings} if init is not None else set()
    if depth == 0:
        # Only a forward that calls a `self.<attr>(...)` the class neither binds nor defines looks further.
        found = table.find_method(name, "forward")
        called = set(groups_at_word_starts(_CALLED, code_bytes(src, found[1]).decode("utf-8", errors="replace"))) if (
            found) else set()
        mro = table.mro(name)
        if note is not None:  # whether each called attribute is a method of the class or a same-file base
            for attr in sorted(called - own):
                for cls in mro:
                    note(cls, attr)
        methods = {m for cls in mro for m in table.infos[cls].methods}
        if not called - own - methods:
            return init
    path = os.path.abspath(path)
    header = header_span(table.infos[name].node, src)
    added: list[Binding] = []
    params = None
    for qualified in bases:
        try:
            found_init, where = reach.base_init(qualified, path, depth, partial(read_base, reach))
        except (RecursionError, ValueError, OSError, SyntaxError):
            continue
        if found_init is None:
            continue
        if params is None:
            params = found_init.params
        from_torch = qualified.startswith("torch.")
        for b in found_init.bindings:
            if b.attr in own:
                continue
            if b.condition is not None and not _holds_at_defaults(b.condition, found_init.params):
                # bound on some paths of the base's `__init__` only, under tests of its own parameters that its
                # defaults do not evidently pass (`if heads > 1:`): the guards that read such a condition beside
                # the code it stands in cannot see it from here. A fallback its defaults take (`if norm_layer is
                # None: norm_layer = nn.BatchNorm2d`) is the base as the subclass builds it by default.
                continue
            value = _torch_callee(b.value) if isinstance(b.value, Ctor) else b.value
            if from_torch and not (isinstance(value, Ctor) and is_torch_module_class(value.callee)):
                continue  # of torch's own layers, only the layers they hold (not their flags and tensors)
            if isinstance(value, Ctor):
                origin = value.origin if value.origin and value.origin.startswith(INHERITED) else (
                    f"{INHERITED}{where}" + (f"; {value.origin}" if value.origin else ""))
                value = replace(value, origin=origin)
            added.append(replace(b, value=value, span=header, item_spans=()))
        own |= {b.attr for b in found_init.bindings}
    if not added:
        return init
    if init is None:
        return Init(params or (), tuple(added), header)
    return replace(init, bindings=(*init.bindings, *added))


def read_base(reach: CrossFileReach, d_path: str, d_name: str, depth: int) -> Init | None:
    """The `__init__` bindings of class `d_name` of file `d_path`, as the analysis reads a class of the analysed
    file (`InitAnalysis`, layer subclasses, `CrossFileReach.bind`), with its own imported bases' (`inherit`)."""
    key = (d_path, d_name)
    active: set[tuple[str, str]] = getattr(_active, "keys", None) or set()
    if key in active:
        return None  # a cycle of imports: no base reads itself
    symbols = reach.resolver.symbols(d_path)
    if symbols is None or d_name not in symbols.classes:
        return None
    _active.keys = active | {key}
    try:
        table = ClassTable(symbols, reach.resolver, d_path)
        src = symbols.src
        init = bind_layer_subclasses(InitAnalysis(d_name, table, src).run(), table, src)
        init_found = table.find_method(d_name, "__init__")
        if init is not None and init_found is not None:
            source = InitSource(init_found[1], src, symbols.qualify, None, d_name)
            init = reach.bind(init, d_path, source)
        return inherit(reach, init, d_name, table, src, d_path, depth + 1)
    finally:
        _active.keys = active


def _holds_at_defaults(condition: str, params: Sequence[Param]) -> bool:
    """Whether a binding's condition evidently holds at the parameters' defaults: `p is None` / `p is not None`
    and a flag, against a literal default, joined by `and` / `not`; anything else does not."""
    defaults = {p.name: p.default for p in params if p.default is not None}
    try:
        tree = ast.parse(condition.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return False
    return _truth(tree, defaults) is True


def _truth(node: ast.expr, defaults: dict[str, str]) -> bool | None:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        parts = [_truth(v, defaults) for v in node.values]
        return False if False in parts else (True if all(p is True for p in parts) else None)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(node.operand, defaults)
        return None if inner is None else not inner
    if isinstance(node, ast.Name) and node.id in defaults:
        value = _literal(defaults[node.id])
        return bool(value) if isinstance(value, bool | type(None)) else None
    if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name)
            and isinstance(node.ops[0], ast.Is | ast.IsNot) and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value is None and node.left.id in defaults):
        value = _literal(defaults[node.left.id])
        if value is _UNKNOWN:
            return None
        return (value is None) == isinstance(node.ops[0], ast.Is)
    return None


_UNKNOWN = object()


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError):
        return _UNKNOWN
