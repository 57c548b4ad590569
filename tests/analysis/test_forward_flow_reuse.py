"""A class's forward flow kept between analyses of a document (`Analyser._forward`): an edit of `__init__`
re-analyses the class but takes its forward's flow from the last run, and every edit that changes what the
flow read (the forward's text or position, the attributes bound to modules, an inlined method, a helper
function, a stateless submodule) computes it again. After each edit the result equals a fresh analysis."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

from .helpers import strictly_equal

SOURCE = '''import torch
from torch import nn


def scale(x):
    return x * 0.5


class Gate(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * x


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.gate = Gate()
        self.norm = nn.LayerNorm(dim)

    def _heads(self, t):
        return t.view(t.shape[0], -1, 4, 8).transpose(1, 2)

    def forward(self, x):
        q = self._heads(self.q(x))
        k = self._heads(self.k(x))
        v = self._heads(self.v(x))
        scores = scale(q @ k.transpose(-1, -2))
        probs = scores.softmax(dim=-1)
        return self.gate(self.norm(probs @ v))
'''


def _edited(doc: DocumentAnalysis, text: str) -> None:
    doc.update(text)
    got = doc.result()
    fresh = analyse(text, doc.path)
    assert got == fresh
    assert strictly_equal(got, fresh)


def _flow(doc: DocumentAnalysis, name: str = "Attention") -> object:
    return doc._analyser._flows[name][0].forward


@pytest.fixture
def doc() -> DocumentAnalysis:
    d = DocumentAnalysis(SOURCE, "m.py")
    assert d.result() == analyse(SOURCE, "m.py")
    return d


def test_an_init_edit_reuses_the_forward_flow(doc: DocumentAnalysis) -> None:
    before = _flow(doc)
    text = SOURCE.replace("self.v = nn.Linear(dim, dim)", "self.v = nn.Linear(dim, 2 * dim)")
    _edited(doc, text)
    assert "class Attention" in doc.reanalysed  # the class was analysed again (its __init__ changed) ...
    assert _flow(doc) is before  # ... but not its forward's flow


def test_a_forward_edit_computes_the_flow_again(doc: DocumentAnalysis) -> None:
    before = _flow(doc)
    _edited(doc, SOURCE.replace("probs = scores.softmax(dim=-1)", "probs = scores.softmax(dim=-2)"))
    assert _flow(doc) is not before


def test_a_moved_forward_computes_the_flow_again(doc: DocumentAnalysis) -> None:
    # A line added to __init__ moves the forward: its spans change, so its flow is not the last one.
    before = _flow(doc)
    _edited(doc, SOURCE.replace("        self.norm = nn.LayerNorm(dim)\n",
                                "        self.norm = nn.LayerNorm(dim)\n        self.extra = 1\n"))
    assert _flow(doc) is not before


def test_a_module_attribute_that_stops_being_a_module_computes_the_flow_again(doc: DocumentAnalysis) -> None:
    # `self.norm(...)` is a submodule call while __init__ binds a module to it, not after.
    before = _flow(doc)
    _edited(doc, SOURCE.replace("self.norm = nn.LayerNorm(dim)", "self.norm = torch.tanh"))
    assert _flow(doc) is not before


def test_an_inlined_method_edit_computes_the_flow_again(doc: DocumentAnalysis) -> None:
    before = _flow(doc)
    _edited(doc, SOURCE.replace(".transpose(1, 2)\n", ".permute(0, 2, 1, 3)\n"))
    assert _flow(doc) is not before


def test_a_helper_function_edit_computes_the_flow_again(doc: DocumentAnalysis) -> None:
    before = _flow(doc)
    _edited(doc, SOURCE.replace("return x * 0.5", "return x / 8"))
    assert _flow(doc) is not before


def test_a_stateless_submodule_edit_computes_the_flow_again(doc: DocumentAnalysis) -> None:
    # Gate holds nothing: its forward is inlined into Attention's.
    before = _flow(doc)
    _edited(doc, SOURCE.replace("return torch.sigmoid(x) * x", "return torch.tanh(x) * x"))
    assert _flow(doc) is not before


def test_edits_there_and_back_agree_with_fresh_analyses(doc: DocumentAnalysis) -> None:
    texts = [
        SOURCE.replace("self.q = nn.Linear(dim, dim)", "self.q = nn.Linear(dim, dim, bias=False)"),
        SOURCE.replace("self.norm = nn.LayerNorm(dim)", "self.norm = torch.tanh"),
        SOURCE,
        SOURCE.replace("self.gate = Gate()", "self.gate = nn.Identity()"),
        SOURCE.replace("return x * 0.5", "return x / 8"),
        SOURCE,
    ]
    for text in texts:
        _edited(doc, text)


PLAIN = '''from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.fc(x))
'''


def test_a_forward_moved_by_an_init_edit_computes_the_flow_again() -> None:
    # The forward reads nothing with a position of its own (no inlined method): only its position moves.
    doc = DocumentAnalysis(PLAIN, "p.py")
    doc.result()
    before = _flow(doc, "Block")
    _edited(doc, PLAIN.replace("        self.act = nn.GELU()\n", "        self.act = nn.GELU()\n        self.n = 2\n"))
    assert _flow(doc, "Block") is not before
    before = _flow(doc, "Block")
    _edited(doc, PLAIN.replace("        self.act = nn.GELU()\n", "        self.act = nn.GELU()\n        self.n = 3\n"))
    assert _flow(doc, "Block") is before  # where the last run had it, and nothing else it read changed


def test_the_flow_before_the_last_is_kept(doc: DocumentAnalysis) -> None:
    # A character typed in the forward and deleted again (the class's older analysis comes back, its flow
    # is not computed), then an __init__ edit: the first flow is still there.
    first = _flow(doc)
    _edited(doc, SOURCE.replace("probs = scores.softmax(dim=-1)", "probs = scores.softmax(dim=-2)"))
    _edited(doc, SOURCE)
    _edited(doc, SOURCE.replace("self.v = nn.Linear(dim, dim)", "self.v = nn.Linear(dim, 2 * dim)"))
    assert _flow(doc) is first


def test_forward_edits_each_undone_keep_the_first_flow(doc: DocumentAnalysis) -> None:
    # Each undo gives back the class's earlier analysis (its flow becomes the most recent again), so three
    # forward edits, each undone, do not push the first flow out of the two kept.
    first = _flow(doc)
    for dim in ("-2", "1", "2"):
        _edited(doc, SOURCE.replace("probs = scores.softmax(dim=-1)", f"probs = scores.softmax(dim={dim})"))
        _edited(doc, SOURCE)
    _edited(doc, SOURCE.replace("self.v = nn.Linear(dim, dim)", "self.v = nn.Linear(dim, 2 * dim)"))
    assert _flow(doc) is first
