"""Conv -> BatchNorm pairs built inside an `nn.Sequential` (family 7): the Sequential becomes one that folds.

The children stay where they are (same keys, `strict=True` checkpoints load both ways, indexing and
`append` behave as before): only the constructor's callee changes, from `nn.Sequential` to a
`nn.Sequential` subclass whose forward runs each stock Conv -> stock BatchNorm pair of adjacent children
through `folded_conv_bn` (the helper of the plain fold, which folds only in eval mode with running
statistics and runs the two modules as before otherwise). Which children are a stock convolution and a
stock BatchNorm is decided at run time by their types, so a `norm_layer` argument that turns out to be a
GroupNorm is run unfolded, never folded.
"""

from __future__ import annotations

import ast
import re

from adopter.analysis.canonical.spellings import SEQUENTIAL
from adopter.analysis.names.library_containers import spelled_by_library
from adopter.analysis.scope.bindings import FACTORY_ORIGIN
from adopter.dsl.types import Ctor, Op, OpKind, Span
from adopter.synth.registry import SynthContext

_SEQUENTIAL_CLASS = '''
class FoldedConvBnSequential({torch}.nn.Sequential):
    """`nn.Sequential` whose Conv -> BatchNorm children run as one folded convolution in eval mode; the same
    children, keys and training behaviour (adopter: conv-bn-sequential)."""

    def forward(self, input):
        nn = {torch}.nn
        convs = (nn.Conv1d.forward, nn.Conv2d.forward, nn.Conv3d.forward)
        norms = (nn.BatchNorm2d.forward, nn.SyncBatchNorm.forward)
        children = list(self)
        i = 0
        while i < len(children):
            pair = children[i : i + 2]
            if len(pair) == 2 and type(pair[0]).forward in convs and type(pair[1]).forward in norms:
                input = {fold}(input, pair[0], pair[1])
                i += 2
            else:
                input = children[i](input)
                i += 1
        return input
'''

_TAG = "(adopter: conv-bn-sequential)"


def sequential_origin(ctx: SynthContext) -> Op | None:
    """The Sequential the match's layers are children of (its construction or its call), else None."""
    for op in ctx.finding.match.ops:
        origin = op.origin
        if origin is None or origin.kind is not OpKind.MODULE:
            continue
        if origin.target == SEQUENTIAL and not origin.args:
            return origin
        if op.target.startswith(origin.target + "["):
            return origin
    return None


def _is_sequential(node: ast.expr) -> bool:
    return isinstance(node, (ast.Name, ast.Attribute)) and ast.unparse(node).rsplit(".", 1)[-1] == "Sequential"


def _callee_span(ctx: SynthContext, tree: ast.Module, span: Span) -> Span:
    """The span of what names `nn.Sequential` for the construction at `span`: the callee of the one
    `nn.Sequential(...)` call inside it, or, for a Sequential subclass's `__init__` (which hands its layers
    to `super().__init__`), the base class of that subclass."""
    first, last = span.start_line + 1, span.end_line + 1
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(isinstance(item, ast.FunctionDef) and item.lineno == first
                                                  and item.name == "__init__" for item in node.body):
            bases = [b for b in node.bases if _is_sequential(b)]
            if len(bases) != 1:
                ctx.decline(f"the matched layers are built by {node.name}, whose nn.Sequential base could not be read")
            _decline_library(ctx, bases[0])
            return ctx.text_index.span(bases[0])
    if any(isinstance(n, ast.List) and ctx.text_index.span(n) == span for n in ast.walk(tree)):
        ctx.decline("the matched layers are items of a list a method returns for its callers to splat into "
                    "nn.Sequential(*...); Adopter does not rewrite those callers' Sequentials, so change it by hand")
    calls = [(n, ctx.text_index.span(n)) for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_sequential(n.func)
             and first <= n.lineno and (n.end_lineno or 0) <= last]
    inside = [(n, at) for n, at in calls if span.contains(at)]
    outer = [n for n, at in inside if not any(other is not n and o_at.contains(at) for other, o_at in inside)]
    if len(outer) != 1 or outer[0].func.lineno != outer[0].func.end_lineno:
        ctx.decline("the matched layers are built inside an nn.Sequential(...) that could not be read")
    _decline_library(ctx, outer[0].func)
    return ctx.text_index.span(outer[0].func)


def _decline_library(ctx: SynthContext, callee: ast.expr) -> None:
    """Decline a Sequential of OpenMMLab's (`from mmengine.model import Sequential`): the folding subclass
    would drop its `BaseModule` base and the `init_weights` walk that base runs over the children."""
    name = ast.unparse(callee)
    if spelled_by_library(ctx.text_index.imports(), name):
        ctx.decline(f"the matched layers are children of OpenMMLab's `{name}` (a BaseModule as well as an "
                    "nn.Sequential); the folding nn.Sequential would drop its BaseModule base, so change it by hand")


def _ensure_class(ctx: SynthContext, fold: str) -> str:
    """Add `FoldedConvBnSequential` once per file (reusing one an earlier fix added); return its name."""
    try:  # only top-level classes are read: the units that define one
        body = list(ctx.text_index.top_level(lambda unit: unit.defines("class_definition")))
    except SyntaxError:
        body = []
    for node in body:
        if isinstance(node, ast.ClassDef) and _TAG in (ast.get_docstring(node) or ""):
            return node.name
    torch = ctx.add_import("torch")
    code = _SEQUENTIAL_CLASS.replace("{torch}", torch).replace("{fold}", fold)
    return ctx.add_module_code(code, name="FoldedConvBnSequential")


def fold_in_sequential(ctx: SynthContext, origin: Op, fold: str) -> None:
    """Change the constructor of the Sequential holding the matched pair to the folding subclass."""
    if origin.target == SEQUENTIAL:
        spans = [origin.span]
    else:
        attr = origin.target.removeprefix("self.")
        outside = [op.target for op in ctx.finding.match.ops
                   if op.kind is OpKind.MODULE and not op.target.startswith(origin.target + "[")]
        if outside:  # the Sequential's last child into a layer forward applies after it
            ctx.decline(f"the pair straddles the end of the nn.Sequential `{origin.target}`: its last child runs "
                        f"into `{outside[0]}`, applied after it in forward; folding them needs both in one "
                        "place, so change it by hand")
        if any(not re.fullmatch(rf"{re.escape(origin.target)}\[\d+\]", op.target)
               for op in ctx.finding.match.ops if op.kind is OpKind.MODULE):
            ctx.decline(f"the matched layers sit in a Sequential nested inside `{origin.target}`; the fix of "
                        "that Sequential's own construction folds them")
        if "." in attr or "[" in attr or not origin.target.startswith("self."):
            ctx.decline(f"the matched layers are children of `{origin.target}`, which Adopter cannot trace "
                        "to one nn.Sequential construction")
        bound = [b for b in ctx.finding.match.bindings if b.attr == attr]
        if not bound or any(not isinstance(b.value, Ctor) or b.value.callee != SEQUENTIAL for b in bound):
            ctx.decline(f"`{origin.target}` is not built by nn.Sequential(...) in __init__")
        elsewhere = [b.value.origin for b in bound if isinstance(b.value, Ctor) and b.value.origin
                     and not b.value.origin.endswith(FACTORY_ORIGIN)]
        if elsewhere:  # read across files (`Conv2dNormActivation (torchvision/ops/misc.py:126)`)
            ctx.decline(f"`{origin.target}` is an nn.Sequential built by {elsewhere[0]}, in another file; "
                        "Adopter rewrites only this file")
        spans = sorted({b.span for b in bound}, key=lambda s: (s.start_line, s.start_col))
    try:  # the top-level statements holding the constructions (`_callee_span` looks inside them only)
        tree = ctx.text_index.module(line for span in spans for line in range(span.start_line, span.end_line + 1))
    except SyntaxError:
        ctx.decline("the file does not parse")
    callees = {_callee_span(ctx, tree, span) for span in spans}
    name = _ensure_class(ctx, fold)
    for callee in sorted(callees, key=lambda s: (s.start_line, s.start_col)):
        ctx.replace_expression(callee, name)
