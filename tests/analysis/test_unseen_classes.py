"""Module classes the class discovery used to miss: a class nested in a class body (sktime's
`class LTSFFullAttention: ... class _LTSFFullAttention(nn_module):`), and a base named through a
module-level `torch.nn.Module` alias or import bound under a guard whose other branch defines a stand-in
class (`if _check_soft_dependencies("torch"): nn_module = nn.Module` / `else: class nn_module: ...`)."""

from __future__ import annotations

import textwrap

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.engine import Environment, find, load_rules

CPU = Environment("cpu", frozenset(), "2.13.0")

SOFTMAX = """
            def forward(self, s):
                return torch.softmax(s, dim=-1)
"""


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


GUARDS = {
    "if-else alias": """
        from skbase.utils.dependencies import _check_soft_dependencies

        if _check_soft_dependencies("torch", severity="none"):
            import torch
            import torch.nn as nn

            nn_module = nn.Module
        else:

            class nn_module:
                \"\"\"Dummy class if torch is unavailable.\"\"\"
    """,
    "try-except alias": """
        try:
            import torch
            import torch.nn as nn
            nn_module = nn.Module
        except ImportError:
            class nn_module:
                pass
    """,
    "try-except import": """
        import torch
        try:
            from torch.nn import Module as nn_module
        except ImportError:
            class nn_module:
                pass
    """,
    "stand-in first": """
        import torch
        from importlib.util import find_spec

        if find_spec("torch") is None:
            class nn_module:
                pass
        else:
            from torch.nn import Module as nn_module
    """,
}


@pytest.mark.parametrize("form", sorted(GUARDS))
def test_a_guarded_torch_module_alias_outlives_its_stand_in_class(form: str) -> None:
    text = GUARDS[form] + """
        class A(nn_module):""" + SOFTMAX
    assert _names(text) == ["A"]
    assert [(scope, rule) for scope, rule, _ in _sites(text)] == [("A", "f04-softmax")]


def test_a_guarded_alias_also_reaches_a_nested_class() -> None:
    text = GUARDS["if-else alias"] + """
        class LTSFFullAttention:
            def _build(self):
                return self._LTSFFullAttention()

            class _LTSFFullAttention(nn_module):""" + textwrap.indent(SOFTMAX, "    ")
    assert _names(text) == ["LTSFFullAttention._LTSFFullAttention"]


def test_a_stand_in_with_a_forward_or_at_top_level_is_a_real_class() -> None:
    # `except ImportError: class LayerNorm(nn.Module): def forward...`: a fallback implementation, analysed.
    fallback = """
        import torch
        import torch.nn as nn
        try:
            from apex.normalization import FusedLayerNorm as LayerNorm
        except ImportError:
            class LayerNorm(nn.Module):""" + SOFTMAX
    assert _names(fallback) == ["LayerNorm"]
    # A top-level class of the alias's name is the binding Python sees (no guard): not a module.
    shadowed = """
        import torch
        import torch.nn as nn
        nn_module = nn.Module

        class nn_module:
            pass

        class A(nn_module):
            def run(self, s):
                return torch.softmax(s, dim=-1)
    """
    assert _names(shadowed) == []


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
