"""Whether a `forward` is a dropout of its input and nothing else, and which callee drops out.

fairseq's `FairseqDropout` (vendored with its multi-head attention) and its kin are modules of the file
whose forward gives `F.dropout(x, ...)` of its input under a condition of their own, else `x`:

    def forward(self, x, inplace: bool = False):
        if self.p > 0 and (self.training or self.apply_during_inference):
            return F.dropout(x, p=self.p, training=True, inplace=inplace)
        else:
            return x

`dropout_form` reads that from the syntax tree alone, so that a cached analysis can depend on this answer
rather than on the method's text (`ModuleSymbols`, `METHOD_DROPOUT`): editing the forward re-analyses the
classes that bind the module only when the answer changes. The callees stay as written (`F.dropout`):
whether one is torch's dropout depends on the file's imports, which the caller qualifies and depends on.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.dotted import dotted_text
from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import POSITIONAL

_BRANCHES = frozenset({"if_statement", "elif_clause", "else_clause"})


def dropout_form(function: Node, src: SourceText) -> tuple[str, ...] | None:
    """The callees, as written and sorted, of the dropouts `forward(self, x, ...)` returns, when every `return`
    gives `<...>.dropout(x, ...)` of its first argument or `x` itself, at least one the dropout, and the body
    holds nothing but those returns, `if`/`elif`/`else` around them, comments, `pass` and a docstring; else None."""
    ps = params(function, src)
    body = function.child_by_field_id(Field.BODY)
    if len(ps) < 2 or ps[0].kind != POSITIONAL or ps[1].kind != POSITIONAL or body is None:
        return None
    x = ps[1].name
    callees: set[str] = set()
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type in ("comment", "pass_statement") or (
                node.type == "expression_statement" and node.named_child_count == 1
                and node.named_children[0].type == "string"):
            continue
        if node.type in _BRANCHES:
            # the condition is not read: the module drops out under a condition of its own
            stack.extend(c for c in node.named_children if c.type == "block" or c.type in _BRANCHES)
            continue
        if node.type == "block":
            stack.extend(node.named_children)
            continue
        if node.type != "return_statement":
            return None  # an assignment, a call: the forward computes something else as well
        values = [c for c in node.named_children if c.type != "comment"]
        if len(values) != 1:
            return None
        if values[0].type == "identifier" and src.text(values[0]) == x:
            continue
        callee = _dropout_of(values[0], x, src)
        if callee is None:
            return None
        callees.add(callee)
    return tuple(sorted(callees)) or None


def _dropout_of(value: Node, x: str, src: SourceText) -> str | None:
    """The callee of `value` when it is a call `<...>.dropout(x, ...)` (or `dropout(x, ...)`) of `x`, else None."""
    if value.type != "call":
        return None
    func = value.child_by_field_id(Field.FUNCTION)
    dotted = dotted_text(func, src)
    if dotted is None or dotted.rsplit(".", 1)[-1] != "dropout":
        return None
    arguments = value.child_by_field_id(Field.ARGUMENTS)
    first = next((c for c in arguments.named_children if c.type != "comment"), None) if arguments is not None else None
    return dotted if first is not None and first.type == "identifier" and src.text(first) == x else None
