"""Same-file Linear-like modules, bound as `nn.Linear`: a module of the file that wraps one `nn.Linear` and
applies it once to its input, with only elementwise work around it.

    class Gemma4ClippableLinear(nn.Module):       # transformers' Gemma 4 (and timm's port): optional clamps
        def __init__(self, config, in_features, out_features):
            super().__init__()
            self.use_clipped_linears = config.use_clipped_linears
            self.linear = nn.Linear(in_features, out_features, bias=False)
            ...
        def forward(self, hidden_states):
            if self.use_clipped_linears:
                hidden_states = torch.clamp(hidden_states, self.input_min, self.input_max)
            hidden_states = self.linear(hidden_states)
            ...

    class AdapterV2Linear(torch.nn.Module):       # litgpt's adapter v2: a scale and a bias after the Linear
        def forward(self, x):
            return self.adapter_scale * (self.linear(x) + self.adapter_bias)

Such a module projects as an `nn.Linear` does, so `act(self.gate_proj(x)) * self.up_proj(x)` over two of them
is a gated MLP, `gelu(self.fc(x))` a Linear→GELU, `self.q_proj(x)`, `self.k_proj(x)`, `self.v_proj(x)` three
projections of one input. A binding to one becomes `torch.nn.Linear` (no arguments: the module's are not
the Linear's), with `origin` ending in `LINEAR_LIKE`: a rewrite into one `nn.Linear` would drop the work
around it (the clamps, the adapter's scale and bias) and the checkpoint keys differ (`gate_proj.linear.weight`),
so the engine reports those sites without an automatic fix (`linear_like_reason`).

The test, exactly: the class derives from `nn.Module` (through classes of this file only); its `forward`
has the shape `adopter.analysis.names.linear_shape` reads (one layer applied once to the input, only
elementwise work: clamps, casts, `+ - * /` with values that do not read the input); and its `__init__` binds
that layer, once and unconditionally, to `nn.Linear`. The analysis of a user depends on the forward's answer
(`METHOD_LINEAR`), not its text; on the `__init__`'s text only when the forward is Linear-like.
"""

from __future__ import annotations

from collections.abc import Sequence

from tree_sitter import Node

from adopter.analysis.crossfile.linear_forward import LINEAR_FORWARD
from adopter.analysis.names.linear_shape import linear_shape
from adopter.analysis.names.signature import params
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor

LINEAR_LIKE = "; its forward applies one nn.Linear with elementwise work around it"  # `Ctor.origin` suffix
LINEAR = "torch.nn.Linear"
_MAX_DEPTH = 6


def plain_module_order(name: str, table: ClassTable) -> list[str] | None:
    """The classes of this file same-file class `name` derives through (`ClassTable.mro`), when every base of
    another file among theirs is `nn.Module`; else None (a torch layer's subclass, an unknown base, too deep)."""
    order = table.mro(name)
    if not order or len(order) > _MAX_DEPTH:
        return None
    for cls in order:
        for base in table.infos[cls].bases:
            if base not in table.infos and table.symbols.qualify_binding(base) != "torch.nn.Module":
                return None
    return order


def linear_like(name: str, table: ClassTable, src: SourceText) -> bool:
    """Whether same-file class `name` is a Linear-like wrapper of one `nn.Linear` (see the module doc)."""
    order = plain_module_order(name, table)
    if order is None:
        return False
    forward: Node | None = None
    for cls in order:
        table.symbols.note_method_exists(cls, "forward")
        forward = table.infos[cls].methods.get("forward")
        if forward is not None:
            table.symbols.note_method_linear(cls, "forward")
            break
    attr = linear_shape(forward, src) if forward is not None else None
    if attr is None:
        return False
    init = table.find_method(name, "__init__")
    return init is not None and _binds_one_linear(init[1], attr, table, src)


def _binds_one_linear(init: Node, attr: str, table: ClassTable, src: SourceText) -> bool:
    """Whether `__init__` assigns `self.<attr>` once, at its top level, to a call of `nn.Linear`."""
    body = init.child_by_field_id(Field.BODY)
    if body is None:
        return False
    ps = params(init, src)
    if not ps:
        return False
    target = f"{ps[0].name}.{attr}"
    assigned = [n for n in _assignments(body) if _left(n, src) == target]
    if len(assigned) != 1 or assigned[0].parent is None or assigned[0].parent.parent != body:
        return False  # bound twice, under a condition, or never
    value = assigned[0].child_by_field_id(Field.RIGHT)
    if value is None or value.type != "call":
        return False
    dotted = dotted_text(value.child_by_field_id(Field.FUNCTION), src)
    return dotted is not None and table.symbols.qualify(dotted) == LINEAR


def _left(assignment: Node, src: SourceText) -> str:
    left = assignment.child_by_field_id(Field.LEFT)
    return src.text(left).replace(" ", "") if left is not None else ""


def _assignments(block: Node) -> list[Node]:
    found: list[Node] = []
    stack = list(block.named_children)
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "class_definition", "lambda"):
            continue
        if node.type in ("assignment", "augmented_assignment") and node.child_by_field_id(Field.LEFT) is not None:
            found.append(node)
        stack.extend(node.named_children)
    return found


def linear_like_reason(bindings: Sequence[Binding]) -> str | None:
    """Why a match over a Linear-like module (of this file, or of another: `crossfile.linear_forward`) gets no
    automatic fix, else None."""
    for b in bindings:
        origin = b.value.origin if isinstance(b.value, Ctor) else None
        if origin is None:
            continue
        name = origin.split(" ", 1)[0]
        if origin.endswith(LINEAR_LIKE + ")"):
            return (f"`self.{b.attr}` is a `{name}`, a module of this file that wraps one nn.Linear with elementwise "
                    "work around it (clamps, a scale, a bias), not `nn.Linear`; the rewrite would drop that work "
                    "and change the checkpoint's keys, so change it by hand")
        if origin.endswith(LINEAR_FORWARD + ")"):
            return (f"`self.{b.attr}` is a `{name}`, a class of another file whose forward is a linear map of its "
                    "input by its own weight (`F.linear`, or one nn.Linear child), not `nn.Linear`; the rewrite would "
                    "build plain nn.Linear layers, dropping what that forward does to the weight (quantisation, a "
                    "cast) and changing the checkpoint's keys, so change it by hand")
    return None
