"""Same-file subclasses of torch layers, bound as the layer they are.

Model code subclasses torch layers to change how they are built or to add padding:

    class Conv2dSame(nn.Conv2d):           # TF-style "same" padding
        def forward(self, x):
            x = pad_same(x, self.kernel_size, self.stride, self.dilation)
            return F.conv2d(x, self.weight, self.bias, self.stride, (0, 0), self.dilation, self.groups)

    class ScaledLinear(nn.Linear):         # only a different initialisation
        def __init__(self, *args, scale=1.0, **kwargs): ...

`self.conv = Conv2dSame(...)` is a `Conv2d` for every rule that asks for one (it is an instance of it). A
binding to such a class becomes the torch layer's constructor, with `origin` naming the subclass:

- a subclass that does not override `forward` (in any same-file class between it and the torch layer)
  computes the layer's own forward: rewrites that call the layer's methods are correct for it;
- a subclass whose `forward` ends in the layer's own computation (`F.conv2d(x, self.weight, ...)`,
  `self._conv_forward(...)`, `super().forward(...)`, also cast back: `super().forward(x.float()).type(x.dtype)`)
  after preparing its input (padding, an fp32 up-cast) is still that
  layer, but a rewrite that re-implements the layer would skip the preparation: its `origin` ends in
  `OWN_FORWARD`, and the engine reports those sites without an automatic fix;
- any other forward (a LoRA branch added to the output) is not the layer: the binding stays as written.

A module of the file that wraps one `nn.Linear` with elementwise work around it is bound as `nn.Linear` too
(`adopter.analysis.idioms.linear_like`), its sites without an automatic fix.

A module of the file whose forward writes the GELU formula or a LayerNorm out is bound as `nn.GELU` or
`nn.LayerNorm`, its sites without an automatic fix (`adopter.analysis.idioms.formula_layers`), alone or as a
container's item.

A module of the file that derives from `nn.Module` alone and whose forward returns a dropout of its input or the
input itself and nothing else (fairseq's `FairseqDropout`: `F.dropout(x, p=self.p, training=True)` while training
or when asked to, else `x`; `adopter.analysis.names.dropout_form`) is bound as `nn.Dropout` too, with `origin`
ending in `DROPOUT_LIKE`: it drops out what an `nn.Dropout` does, under a condition of its own, so the engine
reports its sites without an automatic fix. The binding's analysis depends on that answer alone
(`ModuleSymbols.note_method_dropout`), not on the forward's text: an edit of the module's forward that keeps it
dropout-like re-analyses no class that binds it.

With its own `__init__` the subclass's arguments are not the layer's, so they are dropped (as
`adopter.analysis.crossfile.reach` does for layers found in other files).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.crossfile.eval_norm import EVAL_NORM, RANK_FREE, eval_norm
from adopter.analysis.crossfile.norm_act import BATCH_NORMS, NORM_ACT, norm_then_act
from adopter.analysis.idioms.formula_layers import written_class
from adopter.analysis.idioms.linear_like import LINEAR, LINEAR_LIKE, linear_like, plain_module_order
from adopter.analysis.names.dropout_form import dropout_form
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis, read_init
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor, Init

OWN_FORWARD = "; its own forward prepares the input"  # suffix of `Ctor.origin`: no automatic fix
DROPOUT_LIKE = "; its forward is a dropout under its own condition"  # suffix of `Ctor.origin`: no automatic fix
DROPOUT = "torch.nn.Dropout"
_DROPOUTS = frozenset({"torch.nn.functional.dropout", "torch.dropout"})  # what `nn.Dropout.forward` computes
MAX_DEPTH = 6
# Containers and the base class are not layers that compute something of their own.
_NOT_LAYERS = frozenset({
    "torch.nn.Module", "torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict",
    "torch.nn.ParameterList", "torch.nn.ParameterDict",
})


def bound_init(name: str, table: ClassTable, src: SourceText) -> Init | None:
    """Class `name`'s `__init__` bindings with its layer subclasses bound (`bind_layer_subclasses` of
    `read_init`), read once per table (`ClassTable.init_reading`) when `src` is the table's own file."""
    if src is not table.symbols.src:
        return bind_layer_subclasses(InitAnalysis(name, table, src).run(), table, src)
    return table.init_reading(name, "bound", lambda: bind_layer_subclasses(read_init(name, table, src), table, src))


def bind_layer_subclasses(init: Init | None, table: ClassTable, src: SourceText) -> Init | None:
    """`init` with each binding to a same-file subclass of a torch layer bound as that layer (see the doc), the
    items of a container written here included (`nn.Sequential(nn.Conv2d(...), ABN(c))`)."""
    if init is None or not any(isinstance(b.value, Ctor) and _holds_class(b.value, table) for b in init.bindings):
        return init
    out: list[Binding] = []
    changed = False
    for b in init.bindings:
        value = b.value
        if isinstance(value, Ctor) and _holds_class(value, table):
            bound = _bound(value, table, src, 0)
            if bound is not value:
                b = replace(b, value=bound)
                changed = True
        out.append(b)
    return replace(init, bindings=tuple(out)) if changed else init


def _holds_class(ctor: Ctor, table: ClassTable) -> bool:
    return ctor.callee in table.infos or any(_holds_class(i, table) for i in ctor.items)


def _bound(value: Ctor, table: ClassTable, src: SourceText, depth: int) -> Ctor:
    """`value` as the torch layer it is, or with its items so (the same `Ctor` when nothing changes)."""
    if value.items:
        if depth >= MAX_DEPTH:
            return value
        items = tuple(_bound(i, table, src, depth + 1) for i in value.items)
        changed = any(a is not b for a, b in zip(items, value.items, strict=True))
        return replace(value, items=items) if changed else value
    if value.callee not in table.infos:
        return value
    found = layer_of(value.callee, table, src)
    if found is None:
        return _module_like(value, table, src) if depth == 0 else _written_like(value, table)
    layer, own_init, suffix = found
    if depth > 0 and suffix not in (NORM_ACT, EVAL_NORM):
        return value  # an item: only the norm-then-activation form is read there (the rest is not measured)
    args, kwargs = ((), ()) if own_init else (value.args, value.kwargs)
    return Ctor(layer, args, kwargs, origin=f"{value.callee} (a subclass in this file{suffix})")


def _module_like(value: Ctor, table: ClassTable, src: SourceText) -> Ctor:
    """A binding to a same-file `nn.Module` that computes a torch layer as the layer (Linear-like, dropout-like),
    without its arguments (they are not the layer's); else `value` itself."""
    if linear_like(value.callee, table, src):
        return Ctor(LINEAR, (), (), origin=f"{value.callee} (a module in this file{LINEAR_LIKE})")
    if dropout_like(value.callee, table):
        return Ctor(DROPOUT, (), (), origin=f"{value.callee} (a module in this file{DROPOUT_LIKE})")
    return _written_like(value, table)


def _written_like(value: Ctor, table: ClassTable) -> Ctor:
    """A binding (or a container's item) to a same-file module whose forward writes a GELU or a LayerNorm out as
    that layer (`idioms.formula_layers`); else `value` itself."""
    return written_class(value.callee, table) or value


def subclass_reason(bindings: Sequence[Binding]) -> str | None:
    """Why a match over a layer subclass with its own forward gets no automatic fix, else None."""
    for b in bindings:
        norm_act = _norm_act(b.value) if isinstance(b.value, Ctor) else None
        if norm_act is not None and norm_act.origin is not None:
            name = norm_act.origin.split(" ", 1)[0]
            held = f"`self.{b.attr}` is" if norm_act is b.value else f"`self.{b.attr}` holds"
            return (f"{held} a `{name}`, a {norm_act.callee.rsplit('.', 1)[-1]} whose forward activates "
                    "after the norm; the fold folds a stock BatchNorm only, so change it by hand")
        eval_only = _eval_norm(b.value) if isinstance(b.value, Ctor) else None
        if eval_only is not None and eval_only.origin is not None:
            name = eval_only.origin.split(" ", 1)[0]
            held = f"`self.{b.attr}` is" if eval_only is b.value else f"`self.{b.attr}` holds"
            return (f"{held} a `{name}`, a BatchNorm subclass whose forward is the BatchNorm only in eval mode "
                    "(it gathers its statistics its own way while training); the fold folds a stock BatchNorm "
                    "only, so change it by hand")
        if isinstance(b.value, Ctor) and b.value.origin is not None and b.value.origin.endswith(DROPOUT_LIKE + ")"):
            name = b.value.origin.split(" ", 1)[0]
            return (f"`self.{b.attr}` is a `{name}`, a module of this file whose forward is a dropout under a "
                    "condition of its own, not `nn.Dropout`; the rewrite would not keep that condition, so change "
                    "it by hand")
        if isinstance(b.value, Ctor) and b.value.origin is not None and b.value.origin.endswith(OWN_FORWARD + ")"):
            name = b.value.origin.split(" ", 1)[0]
            return (f"`self.{b.attr}` is a `{name}`, whose own forward prepares the input (padding, a dtype cast) "
                    "before the "
                    f"{b.value.callee.rsplit('.', 1)[-1]}; the rewrite would skip that, so change it by hand")
    return None


def _norm_act(ctor: Ctor, depth: int = 0) -> Ctor | None:
    """The BatchNorm-then-activation layer `ctor` is or holds among its items (`crossfile.norm_act`), else None."""
    if ctor.origin is not None and NORM_ACT in ctor.origin:  # `X (where; ...)`, a registry's `, key from ...` after
        return ctor
    if depth >= MAX_DEPTH:
        return None
    return next((found for i in ctor.items if (found := _norm_act(i, depth + 1)) is not None), None)


def _eval_norm(ctor: Ctor, depth: int = 0) -> Ctor | None:
    """The eval-mode-only BatchNorm `ctor` is or holds among its items (`crossfile.eval_norm`), else None."""
    if ctor.origin is not None and EVAL_NORM in ctor.origin:
        return ctor
    if depth >= MAX_DEPTH:
        return None
    return next((found for i in ctor.items if (found := _eval_norm(i, depth + 1)) is not None), None)


def layer_of(name: str, table: ClassTable, src: SourceText) -> tuple[str, bool, str] | None:
    """(the torch layer, own `__init__`, the origin's suffix: "", `OWN_FORWARD`, `NORM_ACT` or `EVAL_NORM`) of a same-file
    subclass of one, else None."""
    order = table.mro(name)
    if not order or len(order) > MAX_DEPTH:
        return None
    layer: str | None = None
    for cls in order:
        for base in table.infos[cls].bases:
            if base in table.infos:
                continue
            qualified = table.symbols.qualify_binding(base)
            if qualified in RANK_FREE or (
                    qualified.startswith("torch.nn.") and qualified not in _NOT_LAYERS and qualified.count(".") == 2):
                if layer is not None and layer != qualified:
                    return None  # two torch layers among the bases: not one layer
                layer = qualified
            elif not _is_mixin_free(qualified):
                return None
    if layer is None:
        return None
    own_init = table.find_method(name, "__init__") is not None
    found = table.find_method(name, "forward")
    if found is None:
        return None if layer in RANK_FREE else (layer, own_init, "")
    if layer not in RANK_FREE and _ends_in_layer(found[1], layer, table, src):
        return layer, own_init, OWN_FORWARD
    read = _ast_class(found[0], found[1], table, src)
    if read is None:
        return None
    if layer in BATCH_NORMS and norm_then_act(read, layer, table.symbols.qualify):
        return layer, own_init, NORM_ACT
    eval_layer = eval_norm(read, layer, table.symbols.qualify)  # a sync BatchNorm (`crossfile.eval_norm`)
    return (eval_layer, own_init, EVAL_NORM) if eval_layer is not None else None


def _ast_class(owner: str, forward: Node, table: ClassTable, src: SourceText) -> ast.ClassDef | None:
    """The `forward` of `owner` and the `__init__` found for it, read with Python's `ast` as one class."""
    init = table.find_method(owner, "__init__")
    methods = [m for m in (forward, init[1] if init is not None else None) if m is not None]
    body: list[ast.stmt] = []
    for method in methods:
        text = " " * method.start_point[1] + src.text(method)
        try:
            tree = ast.parse(textwrap.dedent(text))
        except (SyntaxError, ValueError):
            return None
        body.extend(s for s in tree.body if isinstance(s, ast.FunctionDef))
    return ast.ClassDef(name=owner, bases=[], keywords=[], body=body, decorator_list=[])


def dropout_like(name: str, table: ClassTable) -> bool:
    """Whether same-file class `name` derives from `nn.Module` alone (through same-file classes) and the forward
    its instances run is a dropout of its input or the input itself (`dropout_form`) by torch's dropout.

    Depends on the classes' headers, the bindings of the names read, which classes before the forward's lack
    one, and the forward's `dropout_form` (`note_method_dropout`): never on the forward's text."""
    order = plain_module_order(name, table)
    if order is None:
        return False
    symbols = table.symbols
    for cls in order:
        node = table.infos[cls].methods.get("forward")
        if node is None:
            symbols.note_method_exists(cls, "forward")  # absent here: depends on it staying absent
            continue
        symbols.note_method_dropout(cls, "forward")
        callees = dropout_form(node, symbols.src)
        return callees is not None and all(symbols.qualify_binding(c) in _DROPOUTS for c in callees)
    return False


def _is_mixin_free(qualified: str) -> bool:
    """Bases other than the torch layer that add nothing to what it computes (`object`, `abc.ABC`)."""
    return qualified in ("object", "abc.ABC", "ABC")


def _ends_in_layer(forward: Node, layer: str, table: ClassTable, src: SourceText) -> bool:
    """Whether every `return` of `forward` returns the layer's own computation of the (prepared) input."""
    body = forward.child_by_field_id(Field.BODY)
    if body is None:
        return False
    returns = [s for s in body.named_children if s.type == "return_statement"]
    if len(returns) != 1 or body.named_children[-1] is not returns[0]:
        return False  # one return, at the end: no early exits that compute something else
    if any(s.type == "return_statement" for s in _nested_statements(body)):
        return False
    values = [c for c in returns[0].named_children if c.type != "comment"]
    if len(values) != 1 or values[0].type != "call":
        return False
    value = _uncast(values[0], src)
    if value.type != "call":
        return False
    func = value.child_by_field_id(Field.FUNCTION)
    if func is None or func.type != "attribute":
        return False
    method_node = func.child_by_field_id(Field.ATTRIBUTE)
    obj = func.child_by_field_id(Field.OBJECT)
    method = src.text(method_node) if method_node is not None else ""
    if obj is None:
        return False
    obj_text = src.text(obj).replace(" ", "")
    short = layer.rsplit(".", 1)[-1]
    if method == "forward" and (obj_text.startswith("super(") or obj_text.endswith(short)):
        return True  # `super().forward(x)`, `nn.Conv2d.forward(self, x)`
    if method == "_conv_forward" and obj_text == "self" and short.startswith("Conv"):
        return True
    dotted = dotted_text(obj, src)
    qualified = table.symbols.qualify(dotted) if dotted is not None else ""
    return qualified == "torch.nn.functional" and method == _functional_name(short)


_CASTS = frozenset({"type", "to", "type_as", "float", "half", "bfloat16", "double"})


def _uncast(call: Node, src: SourceText) -> Node:
    """The value under trailing dtype casts: `super().forward(x.float()).type(x.dtype)` is
    `super().forward(x.float())` (whisper's and CLIP's fp32 LayerNorm)."""
    node = call
    while node.type == "call":
        func = node.child_by_field_id(Field.FUNCTION)
        method = func.child_by_field_id(Field.ATTRIBUTE) if func is not None and func.type == "attribute" else None
        obj = func.child_by_field_id(Field.OBJECT) if func is not None else None
        if method is None or obj is None or src.text(method) not in _CASTS or obj.type != "call":
            break
        node = obj
    return node


def _functional_name(layer: str) -> str:
    """`Conv2d` -> `conv2d`, `Linear` -> `linear`, `ConvTranspose2d` -> `conv_transpose2d`."""
    out = []
    for i, ch in enumerate(layer):
        if ch.isupper() and i > 0 and not layer[i - 1].isupper() and not layer[i - 1].isdigit():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _nested_statements(block: Node) -> list[Node]:
    found: list[Node] = []
    stack = [c for c in block.named_children if c.type != "return_statement"]
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "class_definition", "lambda"):
            continue
        if node.type == "return_statement":
            found.append(node)
        stack.extend(node.named_children)
    return found
