"""The layer class the file's constructions of a class supply to an `__init__` parameter without one of its own.

The classic ResNet port leaves the norm class to its caller, with no fallback (gluoncv-torch's resnet):

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = norm_layer(planes)
    class ResNet(nn.Module):
        def __init__(self, block, layers, norm_layer=nn.BatchNorm2d):
            self.layer1 = self._make_layer(block, 64, layers[0], norm_layer=norm_layer)
        def _make_layer(self, block, planes, blocks, stride=1, norm_layer=None):
            layers = [block(self.inplanes, planes, stride, downsample, norm_layer=norm_layer)]
    def resnet18(**kwargs):
        return ResNet(BasicBlock, [2, 2, 2, 2], **kwargs)

`norm_layer(planes)` builds what the constructions pass. Here the values that reach the parameter are
followed through the file: every construction of the class (a call of it by name; a call of a class-valued
parameter the class is passed to, `block(...)` in `_make_layer` above, through as many such parameters as the
class is passed on, also to a base's `__init__` by `super().__init__(Block, ...)`; a subclass's one
`super().__init__(...)` call, or, without an `__init__`, the subclass's own constructions); at each, the
argument passed there; an argument that is a parameter of the enclosing function (`norm_layer=norm_layer`)
is in turn what that function's callers pass (its class's constructions, `self._make_layer(...)` calls, a
module-level factory's calls), or its default where a call leaves it out
(also behind a `**kwargs` splat: the default, as the analysis reads any layer default). A value is a layer
class named at module level (`nn.BatchNorm2d`, a class of the file) or a `partial` of one (its class).

The parameter is read as that class (`InitAnalysis(..., pinned=...)`, as if it were the default) only when
every value that reaches it is one and the same class. Anything not evident refuses the whole parameter:
a use of the class other than a call or a pass to a function of the file (a registry dict,
`partial(Block, ...)`, an attribute of a module), a class-valued parameter stored or rebound, a parameter
the function passing it on rebinds (`norm_layer = norm_layer or ...`: not read, two packages), a value that is
a local, an expression, `None`, an argument left out of a call with no layer default, two different classes
(`nn.BatchNorm2d` from one caller, `nn.Identity` from another), or no construction in the file at all (what
another file passes is not read: a file's analysis does not depend on the files that import it). A parameter
`__init__` rebinds (`norm_layer = norm_layer or nn.BatchNorm2d`) is the analysis's own reading already.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from adopter.analysis.chains.call_arguments import (
    argument_at,
    parameter_names,
    positional_names,
    rebinds,
    walk,
)
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassInfo, ClassTable
from adopter.dsl.types import Ctor, Init, ParamKind

MAX_DEPTH = 6  # hops of a value: argument -> parameter -> caller's argument ...
_NAMED = (ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY)
_PARTIALS = ("partial", "functools.partial")
_SUPER_INIT = re.compile(r"super\s*\([^()]*\)\s*\.\s*__init__")
_CHECKS = ("isinstance", "issubclass", "type", "super")  # uses that construct nothing


class _Refused(Exception):
    """A value that reaches the parameter is not evident."""


def calls_open_parameter(init: Init | None) -> bool:
    """Whether `init` builds a layer by calling a parameter that has no default or a `None` one (the only
    parameters read here; cheap: the bindings only)."""
    if init is None:
        return False
    open_ = {p.name for p in init.params if p.kind in _NAMED and (p.default is None or p.default.strip() == "None")}
    return bool(open_) and any(c.callee in open_ for b in init.bindings if isinstance(b.value, Ctor)
                               for c in _ctors(b.value))


def pinned_layers(name: str, init: Init, src: SourceText, table: ClassTable) -> tuple[tuple[str, str], ...]:
    """(parameter, the class's dotted text) for each open parameter of class `name`'s `__init__` that it
    calls to build a binding and to which every construction in the file passes the same layer class."""
    info = table.infos.get(name)
    function = info.methods.get("__init__") if info is not None else None
    if info is None or function is None or not calls_open_parameter(init):
        return ()
    called = {c.callee for b in init.bindings if isinstance(b.value, Ctor) for c in _ctors(b.value)}
    order = positional_names(function, src)[1:]
    out: list[tuple[str, str]] = []
    for p in init.params:
        if p.name not in called or p.kind not in _NAMED or not (p.default is None or p.default.strip() == "None"):
            continue
        if rebinds(function, p.name, src):
            continue
        position = order.index(p.name) if p.name in order else -(1 << 20)
        try:
            values = _Flow(src, table).constructions(name, position, p.name, None, 0)
        except _Refused:
            continue
        qualified = {table.symbols.qualify(v) if not table.symbols.has_class(v) else v: v for v in values}
        if len(qualified) == 1:
            out.append((p.name, next(iter(qualified.values()))))
    return tuple(out)


def _ctors(ctor: Ctor) -> Iterator[Ctor]:
    yield ctor
    for item in ctor.items:
        if isinstance(item, Ctor):
            yield from _ctors(item)


class _Flow:
    """The values that reach one parameter, read through the file's calls (raises `_Refused`)."""

    def __init__(self, src: SourceText, table: ClassTable) -> None:
        self.src = src
        self.table = table
        self.functions = table.symbols.functions

    def constructions(self, callee: str, position: int, keyword: str, default: Node | None,
                      depth: int) -> set[str]:
        """What every use of `callee` (a class or module-level function of the file, by name) passes at
        `position` or as `keyword`, the use being a call or a pass of it to a parameter that is called."""
        if depth > MAX_DEPTH:
            raise _Refused
        root = self.src.tree.root_node
        values: set[str] = set()
        calls = 0
        for m in re.finditer(rb"\b" + re.escape(callee.encode()) + rb"\b", self.src.data):
            node = root.named_descendant_for_byte_range(m.start(), m.end())
            if node is not None and node.type in ("comment", "string", "string_content"):
                continue
            if node is None or node.type != "identifier" or node.start_byte != m.start():
                raise _Refused
            found = self._use(node, position, keyword, default, depth)
            if found is not None:
                calls += 1
                values |= found
        if calls == 0:  # constructed only in other files: its default, as the class's own reading takes it
            if default is None:
                raise _Refused
            return self._value(default, depth)
        return values

    def _use(self, node: Node, position: int, keyword: str, default: Node | None, depth: int) -> set[str] | None:
        """The values one occurrence of a class's (or function's) name passes; None for its definition or a
        type check."""
        parent = node.parent
        if parent is None:
            raise _Refused
        if parent.type in ("class_definition", "function_definition") and parent.child_by_field_id(Field.NAME) == node:
            return None
        if parent.type == "call" and parent.child_by_field_id(Field.FUNCTION) == node:
            return self._passed(parent, position, keyword, default, depth)
        if parent.type == "type":
            return None  # an annotation
        holder = parent.parent
        if parent.type == "argument_list" and holder is not None and holder.type == "class_definition":
            return self._subclass(holder, position, keyword, default, depth)
        return self._handed(node, position, keyword, default, depth)

    def _handed(self, node: Node, position: int, keyword: str, default: Node | None, depth: int) -> set[str] | None:
        """A class handed to a call as an argument: what the receiving parameter's calls pass."""
        arg, holder = node, node.parent
        if holder is not None and holder.type == "keyword_argument" and holder.child_by_field_id(Field.VALUE) == node:
            arg, holder = holder, holder.parent
        call = holder.parent if holder is not None and holder.type == "argument_list" else None
        if holder is None or call is None or call.type != "call":
            raise _Refused
        func = call.child_by_field_id(Field.FUNCTION)
        written = self.src.text(func) if func is not None else ""
        if written in _CHECKS:
            return None
        target = self._callee(call, written)
        if target is None:
            raise _Refused
        function, offset = target
        order = positional_names(function, self.src)[offset:]
        if arg.type == "keyword_argument":
            key = arg.child_by_field_id(Field.NAME)
            param = self.src.text(key) if key is not None else ""
        else:
            args = [a for a in holder.named_children if a.type != "comment"]
            index = args.index(arg)
            if any(a.type in ("list_splat", "dictionary_splat", "keyword_argument") for a in args[:index]):
                raise _Refused
            param = order[index] if index < len(order) else ""
        if not param or rebinds(function, param, self.src):
            raise _Refused
        return self._parameter_calls(function, param, position, keyword, default, depth + 1)

    def _parameter_calls(self, function: Node, param: str, position: int, keyword: str, default: Node | None,
                         depth: int) -> set[str] | None:
        """What the calls of class-valued parameter `param` in `function` pass; passed on: followed."""
        values: set[str] = set()
        seen = False
        for node in walk(function):
            if node.type != "identifier" or self.src.text(node) != param:
                continue
            parent = node.parent
            if parent is not None and parent.type == "attribute" and parent.child_by_field_id(Field.OBJECT) == node:
                continue  # `block.expansion`
            if parent is not None and parent.type == "attribute":
                continue  # `self.param`: another name
            if (parent is not None and parent.type == "keyword_argument"
                    and parent.child_by_field_id(Field.NAME) == node):
                continue  # `param=` of another call
            found = self._use(node, position, keyword, default, depth)
            if found is not None:
                seen = True
                values |= found
        if _lambdas_read(function, param, self.src):
            raise _Refused
        return values if seen else None

    def _subclass(self, node: Node, position: int, keyword: str, default: Node | None, depth: int) -> set[str]:
        """What a subclass passes up: its one `super().__init__(...)` call, or, without an `__init__` of its
        own, what its constructions pass."""
        name = node.child_by_field_id(Field.NAME)
        info = self.table.infos.get(self.src.text(name)) if name is not None else None
        if info is None:
            raise _Refused
        init = info.methods.get("__init__")
        if init is None:
            return self.constructions(info.name, position, keyword, default, depth + 1)
        calls = [n for n in walk(init) if n.type == "call" and _SUPER_INIT.fullmatch(
            self.src.text(n.child_by_field_id(Field.FUNCTION) or n))]
        if len(calls) != 1:
            raise _Refused
        return self._passed(calls[0], position, keyword, default, depth)

    def _callee(self, call: Node, written: str) -> tuple[Node, int] | None:
        """The function of the file a call runs, and how many of its leading parameters a call does not
        pass (`self`): a class of the file (its `__init__`), a module-level function, `self.<method>`."""
        info = self.table.infos.get(written)
        if info is not None:
            init = info.methods.get("__init__")
            return (init, 1) if init is not None else None
        function = self.functions.get(written)
        if function is not None:
            return function, 0
        if _SUPER_INIT.fullmatch(written):  # `super().__init__(Block, ...)`: the base class's `__init__`
            owner = self._owner(call)
            found = self.table.find_method(owner.name, "__init__", after=owner.name) if owner is not None else None
            return (found[1], 1) if found is not None else None
        if written.startswith("self."):
            owner = self._owner(call)
            method = owner.methods.get(written[5:]) if owner is not None else None
            if method is not None:
                return method, 1
        return None

    def _owner(self, node: Node) -> ClassInfo | None:
        """The file's class whose body `node` is in."""
        parent = node.parent
        while parent is not None:
            if parent.type == "class_definition":
                name = parent.child_by_field_id(Field.NAME)
                return self.table.infos.get(self.src.text(name)) if name is not None else None
            parent = parent.parent
        return None

    def _passed(self, call: Node, position: int, keyword: str, default: Node | None, depth: int) -> set[str]:
        """The value one call passes at `position` or as `keyword` (left out: `default`)."""
        value = argument_at(call, position, keyword, self.src)
        if value is None:
            if default is None:
                raise _Refused  # a required parameter left out, or a `None` default: nothing evident
            value = default
        return self._value(value, depth)

    def _value(self, value: Node, depth: int) -> set[str]:
        """A layer class named at module level, a `partial` of one, or the values of the enclosing
        function's parameter."""
        if value.type == "call":
            func = value.child_by_field_id(Field.FUNCTION)
            args = value.child_by_field_id(Field.ARGUMENTS)
            first = next((a for a in args.named_children if a.type != "comment"), None) if args is not None else None
            if func is None or self.src.text(func) not in _PARTIALS or first is None:
                raise _Refused
            if self.table.symbols.qualify(self.src.text(func)) != "functools.partial":
                raise _Refused
            value = first
        if value.type == "attribute":
            text = self.src.text(value)
            root = text.split(".", 1)[0]
            if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", text) or not self.table.symbols.is_imported(root):
                raise _Refused
            if self._local(value, root):
                raise _Refused
            return {text}
        if value.type != "identifier":
            raise _Refused
        text = self.src.text(value)
        function = _enclosing(value)
        if function is not None:
            if function.type == "lambda":
                raise _Refused
            if text in parameter_names(function, self.src):
                return self._parameter(function, text, depth)
            if self._local(value, text):
                raise _Refused
        if self.table.symbols.has_class(text) or self.table.symbols.is_imported(text):
            if not text[:1].isupper():
                raise _Refused
            return {text}
        raise _Refused

    def _local(self, node: Node, name: str) -> bool:
        function = _enclosing(node)
        return function is not None and (
            rebinds(function, name, self.src) or name in parameter_names(function, self.src))

    def _parameter(self, function: Node, param: str, depth: int) -> set[str]:
        """The values of `function`'s parameter `param`: what its callers pass, or its default."""
        if rebinds(function, param, self.src):
            raise _Refused
        default = _default(function, param, self.src)
        name_node = function.child_by_field_id(Field.NAME)
        name = self.src.text(name_node) if name_node is not None else ""
        owner = self._owner(function)
        order = positional_names(function, self.src)
        if owner is not None and owner.methods.get(name) == function:
            position = order.index(param) - 1 if param in order else -(1 << 20)
            if name == "__init__":
                return self.constructions(owner.name, position, param, default, depth + 1)
            return self._self_calls(owner, name, position, param, default, depth + 1)
        if self.functions.get(name) == function:
            position = order.index(param) if param in order else -(1 << 20)
            return self.constructions(name, position, param, default, depth + 1)
        raise _Refused  # a nested function's parameter

    def _self_calls(self, owner: ClassInfo, name: str, position: int, param: str, default: Node | None,
                    depth: int) -> set[str]:
        """What a class's `self.<name>(...)` calls pass (every use of `self.<name>` being such a call)."""
        if depth > MAX_DEPTH:
            raise _Refused
        values: set[str] = set()
        calls = 0
        for method in owner.methods.values():
            for node in walk(method):
                if node.type != "attribute" or self.src.text(node) != f"self.{name}":
                    continue
                call = node.parent
                if call is None or call.type != "call" or call.child_by_field_id(Field.FUNCTION) != node:
                    raise _Refused
                calls += 1
                values |= self._passed(call, position, param, default, depth)
        if calls == 0:
            raise _Refused
        return values


def _enclosing(node: Node) -> Node | None:
    """The function (or lambda) whose scope `node` is read in: a parameter's default is read outside it."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in ("function_definition", "lambda") and child != parent.child_by_field_id(Field.PARAMETERS):
            return parent
        child, parent = parent, parent.parent
    return None


def _default(function: Node, param: str, src: SourceText) -> Node | None:
    """The default value node of `function`'s parameter `param`, None without one (or a `None` one)."""
    params = function.child_by_field_id(Field.PARAMETERS)
    for p in params.named_children if params is not None else ():
        if p.type in ("default_parameter", "typed_default_parameter"):
            key = p.child_by_field_id(Field.NAME)
            value = p.child_by_field_id(Field.VALUE)
            if key is not None and src.text(key) == param and value is not None:
                return None if value.type == "none" else value
    return None


def _lambdas_read(function: Node, name: str, src: SourceText) -> bool:
    """Whether a nested function or lambda in `function` reads `name` (a use not followed here)."""
    body = function.child_by_field_id(Field.BODY)
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "lambda", "class_definition"):
            if re.search(rb"\b" + re.escape(name.encode()) + rb"\b", code_bytes(src, node)):
                return True
            continue
        stack.extend(node.named_children)
    return False
