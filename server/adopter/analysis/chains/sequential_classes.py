"""An `nn.Sequential` subclass read as the chain of layers its `__init__` hands to the Sequential.

Model code writes conv-norm-activation blocks as Sequential subclasses with no `forward` of their own
(torchvision's `Conv2dNormActivation`, MobileNet's `ConvBNReLU`, DenseNet's `_Transition`):

    class ConvBNReLU(nn.Sequential):
        def __init__(self, c_in, c_out, norm_layer=None):
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            super().__init__(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), norm_layer(c_out), nn.ReLU())

or, child by child, `self.add_module("conv", nn.Conv2d(...))` or `self.conv = nn.Conv2d(...)` (timm's
`ConvNorm`), or as a local list, `super().__init__(*layers)` (torchvision's `FCNHead`, read by
`adopter.analysis.chains.list_items.splatted_children`). Sequential's own forward runs the children in
order, so the class computes that chain. It becomes a small `Architecture` like the factory chains of
`adopter.analysis.chains.functions` (bindings = the children with their constructor spans, a forward that calls
them in turn, every op's `origin` the Sequential construction: reported without an automatic fix).
Children added under a condition or a loop end the chain there: what runs next to them is not certain.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from adopter.analysis.canonical.spellings import SEQUENTIAL
from adopter.analysis.chains.functions import layer_chain
from adopter.analysis.chains.list_items import splatted_children
from adopter.analysis.chains.ordered_items import positional_children
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText, descendants
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Span

MIN_CHILDREN = 2  # one child is a chain of nothing
MAX_CHILDREN = 64  # a bound on generated code
_BREAK = None  # a child whose place in the chain is not certain: the chain is cut there


def is_sequential_class(name: str, table: ClassTable) -> bool:
    """Whether class `name` of this file derives directly from `torch.nn.Sequential`."""
    info = table.infos.get(name)
    if info is None:
        return False
    return any(b not in table.infos and table.symbols.qualify(b) == SEQUENTIAL for b in info.bases)


def sequential_class_chains(name: str, src: SourceText, table: ClassTable) -> tuple[Architecture, ...]:
    """The chains of layers a Sequential subclass runs: without its own `forward`, or with one that runs
    its children in turn itself (`for mod in self: x = mod(x)`, torchvision's `ASPPPooling`), whose loop
    statement is then where the layers run (see the module doc)."""
    info = table.infos.get(name)
    if info is None or not is_sequential_class(name, table):
        return ()
    forward = info.methods.get("forward")
    turn = runs_children_in_turn(forward, src) if forward is not None else None
    if forward is not None and turn is None:
        return ()
    runs_at, skipped = turn if turn is not None else (None, None)
    init = info.methods.get("__init__")
    body = init.child_by_field_id(Field.BODY) if init is not None else None
    if init is None or body is None:
        return ()
    reader = InitAnalysis(name, table, src)
    reader.run()  # the locals `__init__` sets (`norm_layer = nn.BatchNorm2d` under `if norm_layer is None`)
    children = _children(body, name, src, reader)
    if skipped is not None:
        children = skip_instances(children, reader.qualified_callee(skipped), reader)
    runs: list[list[Node]] = [[]]
    for child in children[:MAX_CHILDREN]:
        if child is _BREAK:
            runs.append([])
        else:
            runs[-1].append(child)
    chains = []
    for run in runs:
        if len(run) >= MIN_CHILDREN:
            chains.append(chain_of(run, name, src, reader, init, runs_at=runs_at))
    return tuple(chains)


def runs_children_in_turn(forward: Node, src: SourceText) -> tuple[Span, str | None] | None:
    """The statement `x = mod(x)` of a top-level `for mod in self:` loop of `forward` whose body is only
    that statement (Sequential's own forward, written out: each child's output is the next one's input),
    or only that statement under `if not isinstance(mod, T):` (no `else`), with `T`'s text: children of
    class `T` are skipped (`skip_instances`). None for any other forward. What the forward does before or
    after the loop is its own."""
    body = forward.child_by_field_id(Field.BODY)
    inherited = _inherited_forward(body, src) if body is not None else None
    if inherited is not None:
        return inherited, None
    for stmt in body.named_children if body is not None else ():
        if stmt.type != "for_statement":
            continue
        left, right = stmt.child_by_field_id(Field.LEFT), stmt.child_by_field_id(Field.RIGHT)
        loop_body = stmt.child_by_field_id(Field.BODY)
        if left is None or right is None or loop_body is None or left.type != "identifier" or src.text(right) != "self":
            continue
        inner = [c for c in loop_body.named_children if c.type != "comment"]
        skipped = _skipped_class(inner, src.text(left), src)
        if skipped is not None:
            inner = skipped[1]
        if (runs := runs_in_turn(inner, left, src)) is not None:
            return runs, skipped[0] if skipped is not None else None
    return None


_INHERITED_FORWARD = re.compile(rb"\bsuper\s*\(|\bSequential\s*\.\s*forward\b")
_SIMPLE = ("expression_statement", "return_statement")


def _inherited_forward(body: Node, src: SourceText) -> Span | None:
    """The statement of `forward` that runs Sequential's own forward on one tensor, when it does so once:
    `new = super().forward(x)`, `super(_DenseLayer, self).forward(x)`, `nn.Sequential.forward(self, x)`
    (DenseNet's `_DenseLayer`, which concatenates the chain's output to its input). None when the forward
    calls it more than once, with other than one positional argument (`*args`: the first child's inputs
    are not one tensor), inside a nested function or lambda, or names `super()` or `Sequential.forward`
    any other way (another method of the parent, the bound method as a value)."""
    raw = code_bytes(src, body)
    if not _INHERITED_FORWARD.search(raw):
        return None
    calls = [n for n in descendants(body) if n.type == "call" and _runs_parent_forward(n, src)]
    mentions = len(_INHERITED_FORWARD.findall(raw))
    if len(calls) != 1 or mentions != 1:
        return None
    stmt: Node | None = calls[0]
    while stmt is not None and stmt.type not in _SIMPLE:
        if stmt.type in ("lambda", "function_definition"):
            return None
        stmt = stmt.parent
    return src.span(stmt) if stmt is not None else None


def _runs_parent_forward(call: Node, src: SourceText) -> bool:
    """`super().forward(a)`, `super(C, self).forward(a)` or `<...>Sequential.forward(self, a)`, `a` one
    positional argument."""
    func, args = call.child_by_field_id(Field.FUNCTION), call.child_by_field_id(Field.ARGUMENTS)
    if func is None or args is None or func.type != "attribute":
        return False
    obj, attr = func.child_by_field_id(Field.OBJECT), func.child_by_field_id(Field.ATTRIBUTE)
    if obj is None or attr is None or src.text(attr) != "forward":
        return False
    given = [a for a in args.named_children if a.type != "comment"]
    plain = all(a.type not in ("keyword_argument", "list_splat", "dictionary_splat") for a in given)
    obj_text = src.text(obj).replace(" ", "")
    if obj_text == "super()" or re.fullmatch(r"super\(\w+,self\)", obj_text):
        return plain and len(given) == 1
    return (obj_text.endswith("Sequential") and plain and len(given) == 2 and src.text(given[0]) == "self")


def _skipped_class(inner: list[Node], name: str, src: SourceText) -> tuple[str, list[Node]] | None:
    """`if not isinstance(<name>, T): <body>` alone in a loop body: `T`'s text and the body's statements."""
    if len(inner) != 1 or inner[0].type != "if_statement" or inner[0].child_by_field_id(Field.ALTERNATIVE):
        return None
    test, then = inner[0].child_by_field_id(Field.CONDITION), inner[0].child_by_field_id(Field.CONSEQUENCE)
    operand = test.child_by_field_id(Field.ARGUMENT) if test is not None and test.type == "not_operator" else None
    func = operand.child_by_field_id(Field.FUNCTION) if operand is not None and operand.type == "call" else None
    args = operand.child_by_field_id(Field.ARGUMENTS) if operand is not None and operand.type == "call" else None
    given = [a for a in args.named_children if a.type != "comment"] if args is not None else []
    if (then is None or func is None or src.text(func) != "isinstance" or len(given) != 2
            or src.text(given[0]) != name or given[1].type not in ("identifier", "attribute")):
        return None
    return src.text(given[1]), [c for c in then.named_children if c.type != "comment"]


def runs_in_turn(inner: list[Node], left: Node, src: SourceText) -> Span | None:
    """The span of `x = mod(x)` when it is the only statement of `inner`, `mod` being the loop's `left`."""
    if len(inner) != 1 or inner[0].type != "expression_statement" or inner[0].named_child_count != 1:
        return None
    assignment = inner[0].named_children[0]
    target = assignment.child_by_field_id(Field.LEFT) if assignment.type == "assignment" else None
    call = assignment.child_by_field_id(Field.RIGHT) if assignment.type == "assignment" else None
    func = call.child_by_field_id(Field.FUNCTION) if call is not None and call.type == "call" else None
    args = call.child_by_field_id(Field.ARGUMENTS) if call is not None and call.type == "call" else None
    given = [a for a in args.named_children if a.type != "comment"] if args is not None else []
    if (target is not None and func is not None and target.type == "identifier" and len(given) == 1
            and given[0].type == "identifier" and src.text(given[0]) == src.text(target)
            and src.text(func) == src.text(left)):
        return src.span(inner[0])
    return None


# Public `torch.nn` classes that other `torch.nn` classes derive from (torch 2.13: `LazyConv2d(Conv2d)`,
# `ReLU6(Hardtanh)`, ...; found by walking `__mro__` of every public class of `torch.nn`, see
# docs/notes/mech27.md). `isinstance(child, T)` for these is not the class test `skip_instances` reads.
_BASES = frozenset(f"torch.nn.{n}" for n in (
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Hardtanh", "Linear", "NLLLoss", "RNNBase", "RNNCellBase",
    "Upsample", "Module", "Sequential", "ModuleList", "ModuleDict", "Container"))


def skip_instances(children: list[Node | None], skipped: str, reader: InitAnalysis) -> list[Node | None]:
    """`children` as `for mod in self: if not isinstance(mod, T): x = mod(x)` runs them: a child built by
    `T` (the qualified `skipped`) is left out; one built by another `torch.nn` layer class runs. Anything
    else (a same-file or imported class, which may derive from `T`; a value not known) cuts the chain, and
    a `T` other than a `torch.nn` class no other derives from cuts all of it."""
    if not skipped.startswith("torch.nn.") or skipped in _BASES or skipped.rsplit(".", 1)[-1].startswith("_"):
        return [_BREAK]
    out: list[Node | None] = []
    for child in children:
        ctors = reader.constructors(child) if child is not None and child.type in ("call", "identifier") else []
        callees = {c.callee for c in ctors}
        if callees == {skipped}:
            continue
        stock = all(c.startswith("torch.nn.") and c.count(".") == 2 and c != skipped for c in callees)
        out.append(child if callees and stock else _BREAK)
    return out


def _children(body: Node, name: str, src: SourceText, reader: InitAnalysis) -> list[Node | None]:
    """The child constructors in the order the Sequential holds them; `_BREAK` where that order is not certain."""
    out: list[Node | None] = []
    assigned: set[str] = set()
    for stmt in body.named_children:
        if stmt.type == "comment":
            continue
        if stmt.type != "expression_statement":
            if _mentions_children(stmt, src) or _SELF_ASSIGNED.search(code_bytes(src, stmt)):
                out.append(_BREAK)  # children added under a condition or in a loop
            continue
        for expr in stmt.named_children:
            if expr.type == "call":
                out.extend(_call_children(expr, name, src, reader))
            elif expr.type == "assignment":
                out.extend(_assigned_child(expr, src, assigned))
    return out


_SELF_ASSIGNED = re.compile(rb"\bself\.\w+\s*=(?!=)")
_CONSTANTS = ("integer", "float", "string", "true", "false", "none", "concatenated_string")


def _assigned_child(assignment: Node, src: SourceText, assigned: set[str]) -> list[Node | None]:
    """`self.conv = nn.Conv2d(...)` in a Sequential's `__init__`: a module assigned to an attribute is
    registered as the next child (timm's `ConvNorm(torch.nn.Sequential)`). Any value but a constant is taken
    for a child (one not known as a layer keeps its neighbours apart); a second assignment to the same
    attribute keeps the first one's place, which is not read: the chain is cut."""
    left, right = assignment.child_by_field_id(Field.LEFT), assignment.child_by_field_id(Field.RIGHT)
    if left is None or right is None or left.type != "attribute":
        return [] if left is not None and left.type == "identifier" else [_BREAK]
    obj, attr = left.child_by_field_id(Field.OBJECT), left.child_by_field_id(Field.ATTRIBUTE)
    if obj is None or attr is None or src.text(obj) != "self":
        return []  # `self.bn.weight = ...`, a local's attribute: no child of this Sequential
    if right.type in _CONSTANTS:
        return []
    key = src.text(attr)
    if key in assigned:
        return [_BREAK]
    assigned.add(key)
    return [right]


def _mentions_children(node: Node, src: SourceText) -> bool:
    raw = code_bytes(src, node)
    return b"add_module" in raw or b"__init__" in raw or b".append(" in raw


def _call_children(call: Node, name: str, src: SourceText, reader: InitAnalysis) -> list[Node | None]:
    func = call.child_by_field_id(Field.FUNCTION)
    args_node = call.child_by_field_id(Field.ARGUMENTS)
    if func is None or func.type != "attribute" or args_node is None:
        return []
    obj = func.child_by_field_id(Field.OBJECT)
    method_node = func.child_by_field_id(Field.ATTRIBUTE)
    method = src.text(method_node) if method_node is not None else ""
    args = [a for a in args_node.named_children if a.type != "comment"]
    if obj is None:
        return []
    obj_text = src.text(obj).replace(" ", "")
    if method == "__init__" and (obj_text.startswith("super(") or _is_sequential_name(obj_text, reader)):
        if not obj_text.startswith("super("):
            args = args[1:]  # `nn.Sequential.__init__(self, a, b)`
        return _listed(positional_children(args, src), args, call, src, reader)
    if obj_text == "self" and method == "add_module" and len(args) == 2:
        return [args[1]]
    if obj_text == "self" and method == "append" and len(args) == 1:
        return [args[0]]
    if obj_text == "self" and method in ("extend", "insert"):
        return [_BREAK]
    return []


def _listed(children: list[Node | None], args: list[Node], call: Node, src: SourceText,
            reader: InitAnalysis) -> list[Node | None]:
    """`children` with each `*layers` of a local list of `__init__` replaced by the items it holds there."""
    body = call.parent
    while body is not None and body.type != "block":
        body = body.parent
    if (body is None or body.parent is None or body.parent.type != "function_definition"
            or len(children) != len(args)):  # `OrderedDict([...])` is read already
        return children  # under a test or in a loop: `_children` cuts the chain there anyway
    out: list[Node | None] = []
    for child, arg in zip(children, args):
        inner = arg.named_children[0] if arg.type == "list_splat" and arg.named_child_count else None
        if child is _BREAK and inner is not None and inner.type == "identifier":
            out.extend(splatted_children(body, src.text(inner), call.start_byte, src, reader.defaults))
        else:
            out.append(child)
    return out


def _is_sequential_name(text: str, reader: InitAnalysis) -> bool:
    return text.endswith("Sequential") and reader.qualified_callee(text) == SEQUENTIAL




def chain_of(children: list[Node], name: str, src: SourceText, reader: InitAnalysis, init: Node,
             where: Node | None = None, runs_at: Span | None = None) -> Architecture:
    """The chain of layers `children` (constructor nodes, or locals assigned earlier in the function `init`)
    run in turn, as an architecture named `name`; `where` is the construction (default: `init` itself);
    `runs_at` the statement of the class's own forward that runs them (`layer_chain`)."""
    last = src.span(children[-1])
    span = src.span(where if where is not None else init)
    # A conditional item (`nn.BatchNorm2d(c) if batch_norm else nn.Identity()`) is each of its layers on its path,
    # as in a function's chain (`chains.functions._chain_of`).
    layers = [(reader.constructors(c) if c.type in ("call", "identifier", "conditional_expression") else [],
               src.span(_definition(c, init, src) if c.type == "identifier" else c)) for c in children]
    return layer_chain(name, layers, span, last, reader.table, src, runs_at)


def _definition(name: Node, init: Node, src: SourceText) -> Node:
    """The value last assigned to the local `name` at the top of the function before it is used, else `name`:
    `conv = nn.Conv2d(...)` then `super().__init__(conv, bn)` reports the conv at its constructor."""
    body = init.child_by_field_id(Field.BODY)
    found = name
    text = src.raw(name)
    for stmt in body.named_children if body is not None else ():
        if stmt.start_byte >= name.start_byte:
            break
        for expr in stmt.named_children if stmt.type == "expression_statement" else ():
            left = expr.child_by_field_id(Field.LEFT) if expr.type == "assignment" else None
            right = expr.child_by_field_id(Field.RIGHT) if expr.type == "assignment" else None
            if left is not None and right is not None and left.type == "identifier" and src.raw(left) == text:
                found = right
    return found
