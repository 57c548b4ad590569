"""A class whose norm layer a construction elsewhere in the file pins (`adopter.analysis.chains.caller_layers`)
is read again when only that construction is edited: the document's analysis equals a fresh one after each
edit, though the block's own text is unchanged."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.dsl.types import Ctor

from .helpers import strictly_equal

SOURCE = '''import torch.nn as nn


class ConvNorm(nn.Module):
    def __init__(self, c, norm_layer):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, bias=False)
        self.norm = norm_layer(c)

    def forward(self, x):
        return self.norm(self.conv(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ConvNorm(4, nn.BatchNorm2d)

    def forward(self, x):
        return self.a(x)
'''


def _norm(result: object) -> str:
    arch = next(a for a in result.architectures if a.name == "ConvNorm")  # type: ignore[attr-defined]
    value = next(b.value for b in arch.init.bindings if b.attr == "norm")
    assert isinstance(value, Ctor)
    return value.callee


def _edit(doc: DocumentAnalysis, old: str, new: str) -> str:
    text = doc.text
    i = text.index(old)
    line = text[:i].count("\n")
    col = i - (text.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + len(old)), new)
    return doc.text


def test_an_edit_of_the_construction_alone_re_reads_the_pinned_norm() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    assert _norm(doc.result()) == "torch.nn.BatchNorm2d"
    for old, new, expected in (("nn.BatchNorm2d)", "nn.Identity)", "torch.nn.Identity"),
                               ("nn.Identity)", "nn.GroupNorm)", "torch.nn.GroupNorm"),
                               ("ConvNorm(4, nn.GroupNorm)", "ConvNorm(4, make())", "norm_layer"),
                               ("ConvNorm(4, make())", "ConvNorm(4, nn.BatchNorm2d)", "torch.nn.BatchNorm2d")):
        text = _edit(doc, old, new)
        got, fresh = doc.result(), analyse(text, "m.py")
        assert got == fresh
        assert strictly_equal(got, fresh)
        assert _norm(got) == expected
