"""Module classes the class discovery used to miss: a class nested in a class body (sktime's
`class LTSFFullAttention: ... class _LTSFFullAttention(nn_module):`, rtdl's `MLP.Block`, deep-river's
`LSTMClassifier.LSTMModule`), analysed by its qualified name `Outer.Inner`."""

from __future__ import annotations

import textwrap

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.engine import Environment, find, load_rules

CPU = Environment("cpu", frozenset(), "2.13.0")


def _names(text: str) -> list[str]:
    return [a.name for a in analyse(textwrap.dedent(text), "m.py").architectures]


def _sites(text: str) -> list[tuple[str, str, int]]:
    mf = analyse(textwrap.dedent(text), "m.py")
    return [(f.scope_name, f.rule_id, f.span.start_line + 1) for f in find(mf, load_rules().rules, CPU)]


NESTED = """\
import math

import torch
import torch.nn as nn


class Builder:
    \"\"\"Holds hyper-parameters; builds the module it defines.\"\"\"

    def __init__(self, dim):
        self.dim = dim

    def _build(self):
        return self._Attention(self.dim)

    class _Attention(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dropout = nn.Dropout(0.1)
            self.dim = dim

        def forward(self, q, k, v):
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dim)
            attn = self.dropout(torch.softmax(scores, dim=-1))
            return torch.matmul(attn, v)

    class _Scaled(_Attention):
        def forward(self, q, k, v):
            return super().forward(q, k, v) * 2
"""


def test_a_module_class_nested_in_a_class_is_analysed_by_its_qualified_name() -> None:
    assert _names(NESTED) == ["Builder._Attention", "Builder._Scaled"]
    sites = _sites(NESTED)
    assert ("Builder._Attention", "f10-manual-attention-sdpa", 23) in sites


def test_a_nested_base_named_by_its_short_name_is_the_sibling_class() -> None:
    mf = analyse(NESTED, "m.py")
    scaled = next(a for a in mf.architectures if a.name == "Builder._Scaled")
    assert scaled.bases == ("Builder._Attention",)


def test_a_nested_class_that_is_no_module_is_not_analysed() -> None:
    assert _names("""
        import torch.nn as nn

        class Outer(nn.Module):
            class Config:
                def forward(self):
                    return 1

            def forward(self, x):
                return x
    """) == ["Outer"]  # no base: an object, as at top level
    assert _names("""
        import torch.nn as nn

        class Outer(nn.Module):
            class Config(dict):
                size = 3

            def forward(self, x):
                return x
    """) == ["Outer"]


def test_editing_a_nested_class_reanalyses_it_like_a_fresh_analysis() -> None:
    doc = DocumentAnalysis(NESTED, "m.py")
    doc.result()
    old = "attn = self.dropout(torch.softmax(scores, dim=-1))"
    i = NESTED.index(old)
    line = NESTED[:i].count("\n")
    col = i - (NESTED.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + len(old)), "attn = torch.softmax(scores, dim=-1)")
    text = doc.text
    assert doc.result() == analyse(text, "m.py")
    assert "class Builder._Attention" in doc.reanalysed
    doc.edit((line, col), (line, col + len("attn = torch.softmax(scores, dim=-1)")), old)
    assert doc.result() == analyse(NESTED, "m.py")
