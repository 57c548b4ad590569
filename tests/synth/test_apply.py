"""Applying recorded edits: exact splices, imports once, refusal of misplaced or overlapping edits."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Span
from adopter.synth.apply import ApplyError, apply_edits
from adopter.synth.registry import BindingEdit, Edits, ImportEdit, ModuleCodeEdit, StatementsEdit

SOURCE = '''"""Doc."""
import torch  # keep me
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)   # odd   spacing kept
        self.ln = nn.LayerNorm(8)

    def forward(self, x, r):
        h = self.drop(x)
        # a comment between
        t = h + r
        out = self.ln(t)
        if out is None:
            return x
        return out
'''


def line_span(source: str, line: int) -> Span:
    text = source.split("\n")[line]
    indent = len(text) - len(text.lstrip())
    return Span(line, indent, line, len(text))


def test_statements_binding_import_and_module_code() -> None:
    edits = Edits(
        statements=[StatementsEdit((line_span(SOURCE, 12), line_span(SOURCE, 15)), "out = fused(x, r)")],
        bindings=[BindingEdit(line_span(SOURCE, 9), "self.ln = nn.LayerNorm(8, eps=1e-5)")],
        imports=[ImportEdit("torch.nn.functional", None, "F"), ImportEdit("math", None, None)],
        module_code=[ModuleCodeEdit("def fused(x, r):\n    return x + r", "fused", None)],
    )
    new = apply_edits(SOURCE, [edits, Edits(imports=[ImportEdit("math", None, None)])])
    assert new.count("import math") == 1
    assert "import torch.nn.functional as F\nimport math\n\n\ndef fused(x, r):\n    return x + r\n" in new
    assert "        out = fused(x, r)\n        if out is None:" in new
    assert "self.drop = nn.Dropout(0.1)   # odd   spacing kept" in new
    assert "        self.ln = nn.LayerNorm(8, eps=1e-5)\n" in new
    assert "import torch  # keep me" in new
    assert "h = self.drop(x)" not in new


def test_insert_after_binding_and_after_class() -> None:
    edits = Edits(bindings=[BindingEdit(line_span(SOURCE, 9), "self.extra = 1", after=True)],
                  module_code=[ModuleCodeEdit("class Fast(Block):\n    pass", "Fast", "Block")])
    new = apply_edits(SOURCE, [edits])
    assert "        self.ln = nn.LayerNorm(8)\n        self.extra = 1\n" in new
    assert new.rstrip().endswith("class Fast(Block):\n    pass")


@pytest.mark.parametrize("edits", [
    # not whole statements of one block: from inside forward's body to the `if` body
    Edits(statements=[StatementsEdit((line_span(SOURCE, 17), line_span(SOURCE, 18)), "pass")]),
    # two edits over the same lines
    Edits(statements=[StatementsEdit((line_span(SOURCE, 12),), "a = 1"),
                      StatementsEdit((line_span(SOURCE, 12),), "b = 1")]),
    # a span that does not start its line
    Edits(statements=[StatementsEdit((Span(12, 12, 12, 24),), "a = 1")]),
    # a class that does not exist
    Edits(module_code=[ModuleCodeEdit("x = 1", "x", "Nope")]),
])
def test_refused(edits: Edits) -> None:
    with pytest.raises(ApplyError):
        apply_edits(SOURCE, [edits])


def test_crlf_preserved() -> None:
    crlf = SOURCE.replace("\n", "\r\n")
    new = apply_edits(crlf, [Edits(imports=[ImportEdit("math", None, None)])])
    assert "import math\r\n" in new and "\n" not in new.replace("\r\n", "")


def test_expression_edit_keeps_the_rest_of_the_statement() -> None:
    from adopter.synth.registry import ExpressionEdit

    span = Span(15, 14, 15, 24)  # `self.ln(t)` in `out = self.ln(t)`
    assert SOURCE.split("\n")[15][14:24] == "self.ln(t)"
    new = apply_edits(SOURCE, [Edits(expressions=[ExpressionEdit(span, "fast_ln(t)")])])
    assert "        out = fast_ln(t)\n" in new


def test_imports_go_after_header_comments_when_there_are_no_imports() -> None:
    source = "#!/usr/bin/env python\n# Copyright\nx = 1\n"
    new = apply_edits(source, [Edits(imports=[ImportEdit("math", None, None)])])
    assert new == "#!/usr/bin/env python\n# Copyright\nimport math\nx = 1\n"
