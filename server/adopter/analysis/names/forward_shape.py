"""The shape of a `forward` that only chains its own layers: which attributes it applies, in turn.

`forward(self, x)` whose body is `x = self.a(x)` ..., then `return self.b(x)` or `return x`: the
attributes `("a", ..., "b")`; a call of a call (`return self.act(self.bn(x))`) applies the inner one
first. Kept apart (it needs only the syntax tree) so that a cached analysis can depend on this answer
rather than on the method's text (`ModuleSymbols`, `METHOD_SHAPE`): editing a submodule's forward
re-analyses the classes that use it only when its shape changes.

`head_shape` also reads a chain whose last layer's output gets one of the module's own attributes added
(`x = self.decoder(x) + self.bias`, the bias-free vocabulary projection of BERT's original prediction head and
its ports): the attributes `(..., "decoder", BIAS + "bias")`. Only the submodule view (family 16's head read
through a call) asks for it; `chain_shape` stays a plain chain (a Linear-like wrapper `self.linear(x) +
self.adapter_bias` is `linear_shape`'s).
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText

BIAS = "+"  # marks an added attribute in a `head_shape`


def head_shape(function: Node, src: SourceText) -> tuple[str, ...] | None:
    """`chain_shape`, or the chain whose last layer's output gets an attribute of the module added (see the
    module doc), or None."""
    return chain_shape(function, src, bias=True)


def chain_shape(function: Node, src: SourceText, bias: bool = False) -> tuple[str, ...] | None:
    """The attributes `forward(self, x)` applies in turn (`x = self.a(x)` ..., `return self.b(x)` or
    `return x`), or None when its body does anything else (or applies nothing)."""
    ps = params(function, src)
    body = function.child_by_field_id(Field.BODY)
    if len(ps) != 2 or ps[1].default is not None or body is None:
        return None
    me, value = ps[0].name, ps[1].name
    steps: list[str] = []
    stmts = [s for s in body.named_children if s.type not in ("comment", "pass_statement")]
    if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children[0].type == "string":
        stmts = stmts[1:]  # the docstring
    added = False  # a bias was added: only `return x` may follow
    for i, stmt in enumerate(stmts):
        last = i == len(stmts) - 1
        if stmt.type == "return_statement" and last and stmt.named_child_count == 1:
            expr = stmt.named_children[0]
            if expr.type == "identifier" and src.text(expr) == value:
                return tuple(steps) or None
            if added:
                return None
            attrs = _self_call(expr, me, value, src) or (_biased_call(expr, me, value, src) if bias else None)
            return (*steps, *attrs) if attrs is not None else None
        if stmt.type != "expression_statement" or stmt.named_child_count != 1 or added:
            return None
        assign = stmt.named_children[0]
        left = assign.child_by_field_id(Field.LEFT) if assign.type == "assignment" else None
        right = assign.child_by_field_id(Field.RIGHT) if assign.type == "assignment" else None
        if left is None or right is None or left.type != "identifier":
            return None
        attrs = _self_call(right, me, value, src)
        if attrs is None and bias:
            attrs = _biased_call(right, me, value, src)
            added = attrs is not None
        if attrs is None:
            return None
        steps.extend(attrs)
        value = src.text(left)
    return None


def _biased_call(expr: Node, me: str, value: str, src: SourceText) -> tuple[str, ...] | None:
    """`self.<a>(value) + self.<p>` -> ("a", "+p"), else None."""
    if expr.type != "binary_operator" or src.text(expr.child_by_field_id(Field.OPERATOR) or expr) != "+":
        return None
    left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
    attrs = _self_call(left, me, value, src) if left is not None else None
    if attrs is None or right is None or right.type != "attribute":
        return None
    obj, attr = right.child_by_field_id(Field.OBJECT), right.child_by_field_id(Field.ATTRIBUTE)
    if obj is None or attr is None or obj.type != "identifier" or src.text(obj) != me:
        return None
    return (*attrs, BIAS + src.text(attr))


def _self_call(expr: Node, me: str, value: str, src: SourceText) -> tuple[str, ...] | None:
    """`self.<attr>(value)` -> (attr,), `self.<b>(self.<a>(value))` -> ("a", "b"), else None."""
    if expr.type != "call":
        return None
    func = expr.child_by_field_id(Field.FUNCTION)
    args = expr.child_by_field_id(Field.ARGUMENTS)
    if func is None or func.type != "attribute" or args is None:
        return None
    obj = func.child_by_field_id(Field.OBJECT)
    attr = func.child_by_field_id(Field.ATTRIBUTE)
    real = [a for a in args.named_children if a.type != "comment"]
    if obj is None or attr is None or obj.type != "identifier" or src.text(obj) != me:
        return None
    if len(real) != 1:
        return None
    if real[0].type == "identifier" and src.text(real[0]) == value:
        return (src.text(attr),)
    inner = _self_call(real[0], me, value, src)
    return None if inner is None else (*inner, src.text(attr))
