"""`nn.Sequential(...)` built in a module's methods but not bound to an attribute, read as layer chains.

Model code builds many small Sequentials that no forward calls by name:

    def _make_layer(self, block, planes, blocks, stride=1):       # torchvision's ResNet
        norm_layer = self._norm_layer
        downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride), norm_layer(planes))
        ...

    for c_in, c_out in stages:                                  # in __init__
        self.stages.append(nn.Sequential(nn.Conv2d(c_in, c_out, 3), nn.BatchNorm2d(c_out), nn.ReLU()))

Each positional `nn.Sequential(a, b, ...)` in a method of an `nn.Module` other than `forward` becomes a chain
like the factory chains of `adopter.analysis.chains.functions` (named `Class.method`, reported without an automatic
fix), except one assigned straight to `self.<attr>`: that is a binding, whose layers the forward that calls
it shows (`adopter.analysis.canonical.normalise` unrolls it). Lists filled in a loop and run as `nn.Sequential(*layers)`
are read by `adopter.analysis.chains.lists`. Names are read as in `__init__`: the method's own
locals and parameter defaults, and `self.<attr>` holding a layer class (`self._norm_layer = norm_layer`
with `norm_layer = nn.BatchNorm2d` under `if norm_layer is None`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.canonical.spellings import SEQUENTIAL
from adopter.analysis.chains.call_arguments import self_call_arguments, walk
from adopter.analysis.chains.functions import sequential_added
from adopter.analysis.chains.lists import list_chains, splatted_lists
from adopter.analysis.chains.ordered_items import positional_children
from adopter.analysis.chains.passed_classes import passed_defaults
from adopter.analysis.chains.sequential_classes import chain_of, is_sequential_class
from adopter.analysis.names.naming import MODULE_SELF_METHODS
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Binding, Expr, PassedTo

MIN_CHILDREN = 2
MAX_CHAINS = 64  # per class: a bound on generated code
_NESTED = ("function_definition", "class_definition", "decorated_definition", "lambda")
_NAME = re.compile(r"[A-Za-z_]\w*")


def method_chains(class_name: str, src: SourceText, table: ClassTable) -> tuple[Architecture, ...]:
    """The unbound Sequential chains of the methods of module class `class_name` (see the module doc)."""
    info = table.infos.get(class_name)
    if info is None or b"Sequential" not in code_bytes(src, info.node):
        return ()
    candidates: list[tuple[str, Node, list[Node]]] = []
    parent = is_sequential_class(class_name, table)  # its `__init__` may hand a list to the Sequential
    for method, node in info.methods.items():
        if method == "forward" or (b"Sequential" not in code_bytes(src, node) and not (parent and method == "__init__")):
            continue
        calls = _unbound_sequentials(node, src, table)
        if calls or splatted_lists(node, src, table.symbols, parent and method == "__init__"):
            candidates.append((method, node, calls))
    if not candidates:
        return ()
    init_reader = InitAnalysis(class_name, table, src)
    init = init_reader.run()
    classes = _layer_classes(init.bindings if init is not None else ())
    chains: list[Architecture] = []
    for method, node, calls in candidates:
        if method == "__init__":
            reader = init_reader
        else:
            reader = InitAnalysis(class_name, table, src)
            handed = passed_defaults(node, info.methods, init_reader.defaults, src) if init is not None else ()
            reader.read_defaults(handed)  # before its body's locals are read, and again after its own defaults
            reader.read_locals(node, classes)
            reader.read_defaults(handed)
        for call in calls:
            args = call.child_by_field_id(Field.ARGUMENTS)
            given = [a for a in (args.named_children if args is not None else ()) if a.type != "comment"]
            # `result = nn.Sequential()` then `result.add_module(...)`: the children it is given in order
            children = positional_children(given, src) if given else list(
                sequential_added(call, node, src, reader.defaults) or ())
            if len(children) >= MIN_CHILDREN and all(c is not None for c in children):
                nodes = [c for c in children if c is not None]
                chain = chain_of(nodes, f"{class_name}.{method}", src, reader, node, call)
                passed = passed_to(call, node, src, info.methods) if method != "__init__" else ()
                chains.append(replace(chain, passed_to=passed) if passed else chain)
            if len(chains) >= MAX_CHAINS:
                return tuple(chains)
        chains.extend(list_chains(node, f"{class_name}.{method}", src, table.symbols, reader,
                                  parent and method == "__init__"))
    return tuple(chains[:MAX_CHAINS])


def _layer_classes(bindings: Sequence[Binding]) -> dict[str, str]:
    """`self.<attr>` -> the torch layer class `__init__` stores there (one binding, a class, not an instance)."""
    seen: dict[str, list[str]] = {}
    for b in bindings:
        seen.setdefault(b.attr, []).append(b.value.text if isinstance(b.value, Expr) else "")
    return {a: v[0] for a, v in seen.items()
            if len(v) == 1 and v[0].startswith("torch.nn.") and v[0].rsplit(".", 1)[-1][:1].isupper()}


def _unbound_sequentials(function: Node, src: SourceText, table: ClassTable) -> list[Node]:
    """The `nn.Sequential(...)` calls in `function` (nested definitions excluded) not assigned straight to
    `self.<attr>`."""
    body = function.child_by_field_id(Field.BODY)
    out: list[Node] = []
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop(0)
        if node.type in _NESTED:
            continue
        if node.type == "call" and _is_sequential(node, src, table) and not _bound_to_self(node, src):
            out.append(node)
        stack.extend(node.named_children)
    return out


def _is_sequential(call: Node, src: SourceText, table: ClassTable) -> bool:
    func = call.child_by_field_id(Field.FUNCTION)
    dotted = dotted_text(func, src) if func is not None else None
    return dotted is not None and dotted.endswith("Sequential") and table.symbols.qualify(dotted) == SEQUENTIAL


def _bound_to_self(call: Node, src: SourceText) -> bool:
    """`self.x = nn.Sequential(...)` (also `self.x = y = ...`, `self.x = nn.Sequential(...).to(device)`): a
    binding the forward's calls unroll."""
    parent = call.parent
    while (parent is not None and parent.type == "attribute" and parent.parent is not None
           and parent.parent.type == "call" and parent.child_by_field_id(Field.OBJECT) == call):
        method = parent.child_by_field_id(Field.ATTRIBUTE)
        if method is None or src.text(method) not in MODULE_SELF_METHODS:
            break
        call, parent = parent.parent, parent.parent.parent  # the module the method returns: the same one
    while parent is not None and parent.type == "assignment":
        left = parent.child_by_field_id(Field.LEFT)
        if left is not None and left.type == "attribute":
            obj = left.child_by_field_id(Field.OBJECT)
            if obj is not None and src.text(obj) == "self":
                return not _wrapped_later(parent, src.text(left), src)
        parent = parent.parent
    return False


def _wrapped_later(assignment: Node, target: str, src: SourceText) -> bool:
    """Whether a later statement of the method's own body rebinds `target` (`self.conv`) to a call given its
    value (`self.conv = PreNorm(inp, self.conv, nn.BatchNorm2d)`, CoAtNet's MBConv): the Sequential is then an
    argument of the wrapper, not the attribute's binding, and no forward shows its layers."""
    stmt = assignment
    while stmt.parent is not None and not (stmt.parent.type == "block" and stmt.parent.parent is not None
                                           and stmt.parent.parent.type == "function_definition"):
        stmt = stmt.parent
    later = stmt.next_named_sibling
    while later is not None:
        expr = later.named_children[0] if later.type == "expression_statement" and later.named_children else None
        left = expr.child_by_field_id(Field.LEFT) if expr is not None and expr.type == "assignment" else None
        if expr is not None and left is not None and src.text(left) == target:
            right = expr.child_by_field_id(Field.RIGHT)
            args = right.child_by_field_id(Field.ARGUMENTS) if right is not None and right.type == "call" else None
            return args is not None and any(a.type == "attribute" and src.text(a) == target for a in args.named_children)
        later = later.next_named_sibling
    return False


def passed_to(call: Node, method: Node, src: SourceText, methods: dict[str, Node] | None = None,
              ) -> tuple[PassedTo, ...]:
    """The calls that `method` hands the Sequential `call` to through a local:
    `downsample = nn.Sequential(conv1x1(...), norm_layer(...))` then `block(self.inplanes, planes, stride,
    downsample, ...)` with `block: type[Union[BasicBlock, Bottleneck]]` (torchvision's `ResNet._make_layer`
    and its copies). The local must hold nothing else (`None` aside); the callee is a name (a class, kept
    when the engine finds it among the file's classes), or a parameter of `method`, read as the names its
    annotation or default holds; an unannotated one (`def _make_layer(self, block, planes, ...)`), as what
    the class's calls of `method` pass there (`_self_calls`, with `methods` the class's methods)."""
    parent = call.parent
    left = parent.child_by_field_id(Field.LEFT) if parent is not None and parent.type == "assignment" else None
    if parent is None or left is None or left.type != "identifier" or parent.child_by_field_id(Field.RIGHT) != call:
        return ()
    name = src.text(left)
    params = _class_parameters(method, src)
    out: list[PassedTo] = []
    for node in walk(method):
        if node.type == "assignment" and node != parent:
            target, value = node.child_by_field_id(Field.LEFT), node.child_by_field_id(Field.RIGHT)
            if target is not None and src.text(target) == name and (value is None or src.text(value) != "None"):
                return ()  # the local holds something else too
        func = node.child_by_field_id(Field.FUNCTION) if node.type == "call" else None
        if func is None or func.type != "identifier":
            continue
        callee = src.text(func)
        classes = params[callee] if callee in params else (callee,)
        parameter = ""
        if not classes and methods is not None:
            classes, parameter = self_call_arguments(method, callee, methods, src) or ((), "")
        where = _argument(node, name, src) if classes or parameter else None
        if where is not None:
            out.append(PassedTo(classes, *where, parameter=parameter))
    return tuple(out)


def _argument(call: Node, name: str, src: SourceText) -> tuple[int, str] | None:
    """Where `call` passes the local `name`: (its position, -1 when by keyword; the keyword or "")."""
    args = call.child_by_field_id(Field.ARGUMENTS)
    position = 0
    for a in args.named_children if args is not None and args.type == "argument_list" else ():
        if a.type == "comment":
            continue
        if a.type == "keyword_argument":
            key, value = a.child_by_field_id(Field.NAME), a.child_by_field_id(Field.VALUE)
            if key is not None and value is not None and value.type == "identifier" and src.text(value) == name:
                return (-1, src.text(key))
        elif a.type in ("list_splat", "dictionary_splat"):
            position = -1 << 20  # positions after a splat are not evident
        else:
            if a.type == "identifier" and src.text(a) == name and position >= 0:
                return (position, "")
            position += 1
    return None


def _class_parameters(method: Node, src: SourceText) -> dict[str, tuple[str, ...]]:
    """Parameter -> the names its annotation or default holds (`block: type[Union[A, B]]`). Which of them
    are same-file classes the engine decides from the whole file (`engine.passed_in.chain_statements`), so
    that an edit of another class never leaves this unit's reading stale."""
    params = method.child_by_field_id(Field.PARAMETERS)
    out: dict[str, tuple[str, ...]] = {}
    for p in params.named_children if params is not None else ():
        if p.type == "identifier":
            out[src.text(p)] = ()
            continue
        key = p.child_by_field_id(Field.NAME) if p.type != "typed_parameter" else (
            p.named_children[0] if p.named_children else None)
        if key is None or key.type != "identifier":
            continue
        named: list[str] = []
        for part in (p.child_by_field_name("type"), p.child_by_field_id(Field.VALUE)):
            for word in _NAME.findall(src.text(part)) if part is not None else ():
                if word not in named:
                    named.append(word)
        out[src.text(key)] = tuple(named)
    return out
