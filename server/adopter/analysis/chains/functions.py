"""`nn.Sequential(...)` built in a function, outside any `__init__`, read as the chain of layers it runs.

A factory function (`def MBConv(...): return nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...), ...)`)
holds sites no forward shows: the Sequential runs its children in order. Each such construction becomes
a small `Architecture` whose bindings are the children (with their own spans) and whose forward calls
them one after the other, so every rule that matches layers in a forward matches here too. The ops
keep the construction as their `origin`: the engine reports these sites without an automatic fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from tree_sitter import Node

from adopter.analysis.canonical.normalise import canonical_architecture
from adopter.analysis.canonical.spellings import SEQUENTIAL
from adopter.analysis.chains.added_modules import added_children
from adopter.analysis.chains.default_branches import taken_block
from adopter.analysis.chains.local_classes import LocalClasses
from adopter.analysis.chains.local_items import local_item_value
from adopter.analysis.chains.ordered_items import positional_children
from adopter.analysis.idioms.submodules import item_forwards
from adopter.analysis.names.identifiers import identifier_nodes
from adopter.analysis.names.signature import params
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import (
    MODULE_OP,
    Architecture,
    Binding,
    Ctor,
    Forward,
    Init,
    Op,
    Param,
    Ref,
    Return,
    Span,
    Stmt,
)

MIN_CHILDREN = 2  # one child is a chain of nothing
MAX_CHAINS = 64  # per function: a bound on generated code
MAX_ALTERNATIVES = 4  # layers one item may be (`a if c else b`, a helper returning one of several classes)


def sequential_chains(function: Node, name: str, src: SourceText, table: ClassTable) -> tuple[Architecture, ...]:
    """The `nn.Sequential(a, b, ...)` constructions inside `function` (nested definitions excluded)."""
    body = function.child_by_field_id(Field.BODY)
    if body is None or b"Sequential" not in code_bytes(src, body):
        return ()
    reader = InitAnalysis(name, table, src)
    reader.read_defaults(params(function, src))
    local_classes = LocalClasses(function, name, src, table)
    chains: list[Architecture] = []
    stack = list(body.named_children)
    while stack and len(chains) < MAX_CHAINS:
        node = stack.pop(0)
        if node.type in ("function_definition", "class_definition", "decorated_definition", "lambda"):
            continue
        if node.type == "call":
            chain = _chain(node, name, src, local_classes.reader_for(node) or reader, body, function)
            if chain is not None:
                chains.append(chain)
        stack.extend(node.named_children)
    return tuple(chains)


def _chain(call: Node, name: str, src: SourceText, reader: InitAnalysis, body: Node | None = None,
           function: Node | None = None) -> Architecture | None:
    func = call.child_by_field_id(Field.FUNCTION)
    dotted = dotted_text(func, src) if func is not None else None
    if dotted is None or not dotted.endswith("Sequential") or reader.qualified_callee(dotted) != SEQUENTIAL:
        return None
    args_node = call.child_by_field_id(Field.ARGUMENTS)
    children = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
    if not children and body is not None and body.parent is not None:
        # `result = nn.Sequential()` then `result.add_module("conv", ...)`, ...: the children it is given
        added = sequential_added(call, body.parent, src, reader.defaults)
        if added is None:
            return None
        children = added
    if len(children) == 1 and children[0].type == "list_splat" and body is not None:
        # `nn.Sequential(*layers)`: the layers a list built in the function's own block holds
        listed = _listed(body, children[0], call, src, reader.defaults)
        if listed is None:
            return None
        children = listed
    if len(children) == 1 and children[0].type == "call":
        # `nn.Sequential(OrderedDict([("conv", ...), ("bn", ...)]))`: the dict's values, in order
        keyed = positional_children(children, src)
        if keyed != children:
            if any(k is None for k in keyed):
                return None
            children = [k for k in keyed if k is not None]
    if function is not None:
        # `conv = nn.Conv2d(...)` then `nn.Sequential(conv, ...)`: the item is what the local was built by
        children = [local_item_value(c, call, function, src) or c for c in children]
    return _chain_of(children, call, name, src, reader)


def sequential_added(call: Node, function: Node, src: SourceText,
                     defaults: Mapping[str, str | None]) -> list[Node] | None:
    """The children `add_module` gives the empty `nn.Sequential()` `call` of `function` (`added_children`)."""
    return added_children(call, function, src, defaults, _steps)


def _listed(body: Node, splat: Node, call: Node, src: SourceText,
            defaults: Mapping[str, str | None]) -> list[Node] | None:
    """The elements of the list `*name` unpacks, built by the statements of `body` before `call`
    (`layers = [...]`, `layers.append(x)`, `layers += [...]`, `layers.extend([...])`); None when it is
    also changed anywhere else (inside a loop, or an `if` the parameters' defaults `defaults` do not decide:
    the layers would depend on the path)."""
    target = splat.named_children[0] if splat.named_children else None
    if target is None or target.type != "identifier":
        return None
    name = src.text(target)
    stmts = [s for s in body.named_children if s.end_byte <= call.start_byte]  # before the Sequential's statement
    return _steps(stmts, body, name, None, src, defaults)


def _steps(stmts: list[Node], body: Node, name: str, items: list[Node] | None, src: SourceText,
           defaults: Mapping[str, str | None]) -> list[Node] | None:
    """`items` after the statements `stmts` (of the function `body`) build the list `name`; an `if` the
    parameters' defaults decide (`adopter.analysis.chains.default_branches`) is read on their path."""
    for stmt in stmts:
        expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
        step = _list_step(expr, name, src) if expr is not None else None
        if step is not None:
            kind, nodes = step
            if nodes is None or (kind != "set" and items is None):
                return None
            items = list(nodes) if kind == "set" else [*(items or []), *nodes]
        elif name.encode() in code_bytes(src, stmt) and any(
                n.type == "identifier" and src.text(n) == name for n in identifier_nodes(stmt)):
            block = taken_block(stmt, body, src, defaults) if items is not None else None
            if isinstance(block, str):
                continue  # no branch runs with the defaults
            if block is None:
                return None  # read or changed another way (in a branch, a loop, a call)
            items = _steps([s for s in block.named_children if s.type != "comment"], body, name, items, src, defaults)
            if items is None:
                return None
    return items


def _list_step(expr: Node, name: str, src: SourceText) -> tuple[str, list[Node] | None] | None:
    """How a statement builds the list `name`: ("set", items), ("add", items), or None when it does not."""
    if expr.type in ("assignment", "augmented_assignment"):
        left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
        if left is None or right is None or src.text(left) != name:
            return None
        elements = _elements(right)
        if expr.type == "assignment":
            return "set", elements
        return ("add", elements) if src.text(expr).split(name, 1)[1].lstrip().startswith("+=") else ("add", None)
    if expr.type == "call":
        func, args = expr.child_by_field_id(Field.FUNCTION), expr.child_by_field_id(Field.ARGUMENTS)
        if func is None or args is None or src.text(func) not in (
                f"{name}.append", f"{name}.extend", f"{name}.add_module"):
            return None
        values = [a for a in args.named_children if a.type != "comment"]
        if src.text(func).endswith("add_module"):  # a Sequential's `add_module(key, child)`
            return "add", ([values[1]] if len(values) == 2 and values[1].type not in (
                "keyword_argument", "list_splat", "dictionary_splat") else None)
        if len(values) != 1:
            return "add", None
        return "add", ([values[0]] if src.text(func).endswith("append") else _elements(values[0]))
    return None


def _elements(node: Node) -> list[Node] | None:
    if node.type != "list":
        return None
    out = [c for c in node.named_children if c.type != "comment"]
    return None if any(c.type == "list_splat" for c in out) else out



def _chain_of(children: list[Node], call: Node, name: str, src: SourceText, reader: InitAnalysis) -> Architecture | None:
    """The chain of the layers `children` (argument nodes, or the calls that built them) of `call`."""
    if len(children) < MIN_CHILDREN or any(a.type in ("keyword_argument", "list_splat") for a in children):
        return None  # `Sequential(*layers)` unread, or keywords: no positional chain to read
    span = src.span(call)
    layers = [(reader.constructors(c) if c.type in ("call", "conditional_expression") else [], src.span(c))
              for c in children]
    return layer_chain(name, layers, span, span, reader.table, src)


def layer_chain(name: str, layers: list[tuple[list[Ctor], Span]], span: Span, end: Span,
                table: ClassTable | None = None, src: SourceText | None = None,
                runs_at: Span | None = None) -> Architecture:
    """The architecture of `layers` (each its constructors and its span) run in turn, as `self.layer<i>`
    of a Sequential named `name` built at `span`; the chain's return is placed at `end`. With the file's
    `table`, a stateless same-file item (`GEGLU()`) runs its forward's ops (`item_forwards`). `runs_at`: the
    statement that runs each layer, when the class's own forward runs them (`x = mod(x)` in `for mod in
    self`), else each layer's own span."""
    # A class's own forward that runs the layers is the origin's statement (`runs_at`): the fix that builds
    # the Sequential as another class would not reach that forward (`engine.sites._spelling_reason`).
    origin = Op(MODULE_OP, SEQUENTIAL, (), (), (), span, runs_at or span)
    bindings: list[Binding] = []
    body: list[Stmt] = []
    value = Ref("x")
    for i, (ctors, child_span) in enumerate(layers):
        attr = f"layer{i}"
        if len(ctors) == 1:
            bindings.append(Binding(attr, ctors[0], child_span))
        elif 1 < len(ctors) <= MAX_ALTERNATIVES:
            # `MaybeSyncBatchnorm(sync)(dim)`, `nn.BatchNorm2d(c) if bn else nn.Identity()`: one layer of
            # several, chosen where the Sequential is built; each is the item on its own path.
            bindings.extend(Binding(attr, c, child_span, f"{attr} is {c.callee}") for c in ctors)
        out = f"%{i + 1}"
        body.append(Op(MODULE_OP, f"self.{attr}", (value,), (), (out,), child_span, runs_at or child_span, (),
                       origin))
        value = Ref(out)
    body.append(Return((value,), end))
    forward = Forward("forward", (Param("x"),), tuple(body), span)
    arch = Architecture(name, (SEQUENTIAL,), Init((), tuple(bindings), span), forward, span)
    items = item_forwards([ctors[0] for ctors, _ in layers if len(ctors) == 1], table, src) if (
        table is not None and src is not None) else None
    return canonical_architecture(arch, None, items)
