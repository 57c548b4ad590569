"""The classes a ResNet's unannotated `block` may be, read from what the file's calls of the class pass.

The commonest copy of torchvision's ResNet leaves `block` unannotated:

    class ResNetBackbone(nn.Module):
        def __init__(self, lda_out_channels, in_chn, block, layers, num_classes=1000):
            ...
            self.layer1 = self._make_layer(block, 64, layers[0])
        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...))
            layers.append(block(self.inplanes, planes, stride, downsample))

    def resnet50_backbone(lda_out_channels, in_chn, **kwargs):
        model = ResNetBackbone(lda_out_channels, in_chn, Bottleneck, [3, 4, 6, 3], **kwargs)

`adopter.analysis.chains.methods.passed_to` records that `block` is `__init__`'s parameter
(`PassedTo.parameter`); here the names the file passes there are added: calls of the class by name, a
subclass's `super().__init__(...)`, calls of a module-level factory whose parameter is passed on
(`_resnet('resnet50', Bottleneck, [3, 4, 6, 3], ...)` with `ResNet(block, layers, **kwargs)`), and the
parameter's default where a call leaves it out. Conservatively: when any use of the class (or factory) is
not such a call, or any call passes something else than a class's name (a string, a local, an expression,
an argument after a splat), nothing is added and the `PassedTo` is dropped, as the base reads it.

This reads the whole file, outside the cached per-class units (a caller may be anywhere in the file), and
runs only for chains that carry such a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.chains.call_arguments import argument_at, bound_names, positional_names, walk
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, PassedTo

MAX_DEPTH = 3  # class <- subclass or factory <- factory: the forms that occur
_SUPER_INIT = re.compile(r"super\s*\([^()]*\)\s*\.\s*__init__")
_CHECKS = ("isinstance", "issubclass")


def with_callers(chains: Sequence[Architecture], src: SourceText, table: ClassTable) -> list[Architecture]:
    """`chains` with each `PassedTo.parameter` read into the names the file passes there (or dropped)."""
    out: list[Architecture] = []
    for chain in chains:
        if not any(p.parameter for p in chain.passed_to):
            out.append(chain)
            continue
        cls, _, method = chain.name.partition(".")
        kept: list[PassedTo] = []
        for p in chain.passed_to:
            names = _init_arguments(cls, p.parameter, method, src, table) if p.parameter else ()
            if names is not None:
                kept.append(replace(p, classes=tuple(dict.fromkeys((*p.classes, *names)))))
        out.append(replace(chain, passed_to=tuple(kept)))
    return out


def _init_arguments(cls: str, param: str, method: str, src: SourceText, table: ClassTable,
                    ) -> tuple[str, ...] | None:
    """The names the file's constructions of `cls` pass as its `__init__` parameter `param`, None when one
    is not evident."""
    info = table.infos.get(cls)
    init = info.methods.get("__init__") if info is not None else None
    order = positional_names(init, src)[1:] if init is not None else []
    if init is None or param not in order:
        return None
    return _arguments(cls, order.index(param), param, _default(init, param, src), method, src, table, 0)


def _arguments(callee: str, position: int, keyword: str, default: Node | None, method: str, src: SourceText,
               table: ClassTable, depth: int) -> tuple[str, ...] | None:
    """The names every use of `callee` (a class or a module-level function) passes at `position` or as
    `keyword`; None when a use is not such a call or passes something that is not evident."""
    if depth > MAX_DEPTH:
        return None
    names: list[str] = []
    calls = 0
    root = src.tree.root_node
    for m in re.finditer(rb"\b" + re.escape(callee.encode()) + rb"\b", src.data):
        node = root.named_descendant_for_byte_range(m.start(), m.end())
        if node is None or node.type != "identifier" or node.start_byte != m.start():
            if node is not None and node.type in ("comment", "string", "string_content"):
                continue
            return None
        found = _use(node, callee, position, keyword, default, method, src, table, depth)
        if found is None:
            return None
        if found is not _SKIP:
            calls += 1
            names.extend(n for n in found if n not in names)
    if calls == 0:  # constructed only elsewhere: the default, when there is one
        return _value(default, src, table, method, depth) if default is not None else None
    return tuple(names)


_SKIP: tuple[str, ...] = ("<none>",)  # a use that passes nothing (the definition, an annotation, a type check)


def _use(node: Node, callee: str, position: int, keyword: str, default: Node | None, method: str,
         src: SourceText, table: ClassTable, depth: int) -> tuple[str, ...] | None:
    """What one occurrence of `callee`'s name passes; `_SKIP` for its definition or a type check."""
    parent = node.parent
    if parent is None:
        return None
    if parent.type in ("class_definition", "function_definition") and parent.child_by_field_id(Field.NAME) == node:
        return _SKIP
    if parent.type == "type":
        return _SKIP
    if parent.type == "call" and parent.child_by_field_id(Field.FUNCTION) == node:
        return _passed(parent, position, keyword, default, method, src, table, depth)
    holder = parent.parent
    if parent.type == "argument_list" and holder is not None and holder.type == "call":
        func = holder.child_by_field_id(Field.FUNCTION)
        if func is not None and ((name := src.text(func)) in _CHECKS or name == "super"):
            return _SKIP
    if parent.type == "argument_list" and holder is not None and holder.type == "class_definition":
        return _subclass(holder, position, keyword, default, method, src, table, depth)
    return None


def _subclass(node: Node, position: int, keyword: str, default: Node | None, method: str, src: SourceText,
              table: ClassTable, depth: int) -> tuple[str, ...] | None:
    """What a subclass passes up: its one `super().__init__(...)` call, or, without an `__init__` of its
    own, what its constructions pass. None when it calls the method itself."""
    name = node.child_by_field_id(Field.NAME)
    info = table.infos.get(src.text(name)) if name is not None else None
    if info is None or f"self.{method}".encode() in code_bytes(src, node):
        return None
    init = info.methods.get("__init__")
    if init is None:
        return _arguments(info.name, position, keyword, default, method, src, table, depth + 1)
    calls = [n for n in walk(init) if n.type == "call" and _SUPER_INIT.fullmatch(
        src.text(n.child_by_field_id(Field.FUNCTION) or n))]
    if len(calls) != 1:
        return None
    return _passed(calls[0], position, keyword, default, method, src, table, depth)


def _passed(call: Node, position: int, keyword: str, default: Node | None, method: str, src: SourceText,
            table: ClassTable, depth: int) -> tuple[str, ...] | None:
    value = argument_at(call, position, keyword, src)
    if value is None:
        args = call.child_by_field_id(Field.ARGUMENTS)
        if args is None or default is None or any(
                a.type in ("list_splat", "dictionary_splat") for a in args.named_children):
            return None  # left out: the default, unless a splat may pass it
        value = default
    return _value(value, src, table, method, depth)


def _value(value: Node, src: SourceText, table: ClassTable, method: str, depth: int) -> tuple[str, ...] | None:
    """A class's name (same file or imported) as one name; a parameter of a module-level function as what
    that function's calls pass; anything else None."""
    if value.type != "identifier":
        return None
    text = src.text(value)
    function = _enclosing(value)
    if function is not None and function.type == "lambda":
        return None
    if function is not None:
        name = function.child_by_field_id(Field.NAME)
        fname = src.text(name) if name is not None else ""
        params = positional_names(function, src)
        if text in params:
            if table.symbols.functions.get(fname) != function:
                return None  # a method's or nested function's parameter
            return _arguments(fname, params.index(text), text, _default(function, text, src), method, src, table,
                              depth + 1)
        if text in bound_names(function, src) or _declared(function, text, src):
            return None
    if text in table.infos or text in table.symbols.imports:
        return (text,)
    return None


def _enclosing(node: Node) -> Node | None:
    """The function (or lambda) whose scope `node` is read in: a parameter's default is read outside it."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in ("function_definition", "lambda") and child != parent.child_by_field_id(Field.PARAMETERS):
            return parent
        child, parent = parent, parent.parent
    return None


def _declared(function: Node, name: str, src: SourceText) -> bool:
    """`name` is any other parameter of `function` (keyword-only, `*args`)."""
    params = function.child_by_field_id(Field.PARAMETERS)
    return params is not None and name in re.findall(r"[A-Za-z_]\w*", src.text(params))


def _default(function: Node, param: str, src: SourceText) -> Node | None:
    params = function.child_by_field_id(Field.PARAMETERS)
    for p in params.named_children if params is not None else ():
        if p.type in ("default_parameter", "typed_default_parameter"):
            key = p.child_by_field_id(Field.NAME)
            if key is not None and src.text(key) == param:
                return p.child_by_field_id(Field.VALUE)
    return None
