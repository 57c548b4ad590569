"""The shape of a `forward` that applies one of its own layers to each of its inputs and returns the results.

BERT's pre-training heads and their ports (transformers' `BertPreTrainingHeads` and the Ernie, Nezha,
MegatronBert, BigBird, FNet, LXMERT copies; pytorch-pretrained-bert, bert4pytorch, mergoo):

    def forward(self, sequence_output, pooled_output):
        prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(pooled_output)
        return prediction_scores, seq_relationship_score

`pair_shape` gives the layers `("predictions", "seq_relationship")`: result k is layer k applied to the
forward's input k, with nothing else done. A caller that unpacks the call (`scores, nsp = self.cls(seq,
pooled)`) then holds in `scores` exactly what `self.cls.predictions(seq)` gives (the submodule view,
`canonical.normalise.submodule_view`, reads the call so). Anything else (an input used twice, a layer applied
to a computed value, a result returned that no layer made, defaults, `*args`) gives None.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import POSITIONAL

MAX_OUTPUTS = 4


def pair_shape(function: Node, src: SourceText) -> tuple[str, ...] | None:
    """The attributes `forward(self, x0, x1, ...)` applies, one to each input in turn, returning their results
    as a tuple in the same order (see the module doc); None for anything else."""
    ps = params(function, src)
    body = function.child_by_field_id(Field.BODY)
    inputs = [p.name for p in ps[1:]]
    if (body is None or not 2 <= len(inputs) <= MAX_OUTPUTS
            or any(p.default is not None or p.kind is not POSITIONAL for p in ps)):
        return None
    me = ps[0].name
    stmts = [s for s in body.named_children if s.type not in ("comment", "pass_statement")]
    if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children[0].type == "string":
        stmts = stmts[1:]  # the docstring
    if not stmts or stmts[-1].type != "return_statement" or stmts[-1].named_child_count != 1:
        return None
    made: dict[str, tuple[str, str]] = {}  # local -> (attribute, the input it was applied to)
    for stmt in stmts[:-1]:
        assign = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count == 1 else None
        left = assign.child_by_field_id(Field.LEFT) if assign is not None and assign.type == "assignment" else None
        right = assign.child_by_field_id(Field.RIGHT) if assign is not None and assign.type == "assignment" else None
        if left is None or right is None or left.type != "identifier" or src.text(left) in made:
            return None
        applied = _layer_call(right, me, inputs, src)
        if applied is None or src.text(left) in inputs:
            return None
        made[src.text(left)] = applied
    result = stmts[-1].named_children[0]
    if result.type == "parenthesized_expression" and result.named_child_count == 1:
        result = result.named_children[0]
    if result.type not in ("expression_list", "tuple"):
        return None
    items = [i for i in result.named_children if i.type != "comment"]
    if len(items) != len(inputs):
        return None
    layers: list[str] = []
    for k, item in enumerate(items):
        applied = made.get(src.text(item)) if item.type == "identifier" else _layer_call(item, me, inputs, src)
        if applied is None or applied[1] != inputs[k]:
            return None
        layers.append(applied[0])
    if len(made) + sum(i.type != "identifier" for i in items) != len(items) or len(set(layers)) != len(layers):
        return None  # a local computed and not returned, or one layer returned twice
    return tuple(layers)


def _layer_call(expr: Node, me: str, inputs: list[str], src: SourceText) -> tuple[str, str] | None:
    """`self.<attr>(<an input>)` -> (attr, input), else None."""
    if expr.type != "call":
        return None
    func, args = expr.child_by_field_id(Field.FUNCTION), expr.child_by_field_id(Field.ARGUMENTS)
    if func is None or args is None or func.type != "attribute":
        return None
    obj, attr = func.child_by_field_id(Field.OBJECT), func.child_by_field_id(Field.ATTRIBUTE)
    real = [a for a in args.named_children if a.type != "comment"]
    if (obj is None or attr is None or obj.type != "identifier" or src.text(obj) != me or len(real) != 1
            or real[0].type != "identifier" or src.text(real[0]) not in inputs):
        return None
    return src.text(attr), src.text(real[0])
