"""A class's `__init__` reading kept between analyses of a document (`Analyser._init`): an edit of the forward
re-analyses the class but takes its `__init__` bindings from the last run, and every edit that changes what the
reading read (`__init__`'s text or position, a method it calls, a base class's `__init__` or header, a helper or
class it builds) reads it again. After each edit the result equals a fresh analysis in every field."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

from .helpers import strictly_equal

SOURCE = '''import torch
from torch import nn


def make_norm(dim):
    return nn.LayerNorm(dim)


class Gate(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * x


class Base(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)


class Block(Base):
    def __init__(self, dim):
        super().__init__(dim)
        self.norm = make_norm(dim)
        self.gate = Gate()
        self._layers(dim)

    def _layers(self, dim):
        self.fc = nn.Linear(dim, 4 * dim)

    def forward(self, x):
        h = self.proj(x)
        h = self.fc(self.gate(h))
        return self.norm(h)
'''


def _edited(doc: DocumentAnalysis, text: str) -> None:
    doc.update(text)
    got = doc.result()
    fresh = analyse(text, doc.path)
    assert got == fresh
    assert strictly_equal(got, fresh)


def _init(doc: DocumentAnalysis) -> object:
    return doc._analyser._inits["Block"][1]


@pytest.fixture
def doc() -> DocumentAnalysis:
    d = DocumentAnalysis(SOURCE, "m.py")
    assert strictly_equal(d.result(), analyse(SOURCE, "m.py"))
    return d


def test_a_forward_edit_reuses_the_init_reading(doc: DocumentAnalysis) -> None:
    before = _init(doc)
    _edited(doc, SOURCE.replace("h = self.fc(self.gate(h))", "h = self.fc(self.gate(h)) * 2"))
    assert "class Block" in doc.reanalysed  # the class was analysed again (its forward changed) ...
    assert _init(doc) is before  # ... but not its __init__


@pytest.mark.parametrize("old, new", [
    ("self.gate = Gate()", "self.gate = nn.GELU()"),  # its own __init__
    ("self.fc = nn.Linear(dim, 4 * dim)", "self.fc = nn.Linear(dim, 2 * dim)"),  # a method it calls
    ("self.proj = nn.Linear(dim, dim)", "self.proj = nn.Linear(dim, dim, bias=False)"),  # the base's __init__
    ("class Block(Base):", "class Block(Gate):"),  # its header
    ("    return nn.LayerNorm(dim)", "    return nn.RMSNorm(dim)"),  # a helper it builds with
    ("class Gate(nn.Module):", "class Gate(nn.Identity):"),  # a class it builds
    ("import torch\n", "import torch\n\n\n"),  # lines above: spans moved
])
def test_what_the_init_reading_read_reads_it_again(doc: DocumentAnalysis, old: str, new: str) -> None:
    before = _init(doc)
    assert old in SOURCE
    _edited(doc, SOURCE.replace(old, new))
    assert _init(doc) is not before
