"""The walk of an edited forward resumed from the statement the edit is in (`adopter.analysis.flow.resume`).

A document's analysis keeps each forward's last walk with a checkpoint of the flow state before each of its
top-level statements; the next walk of the edited forward restores the last checkpoint whose statements before
it are unchanged (the same text at the same bytes, or all shifted alike by an edit above the forward) and whose
consulted names kept their fingerprints. After every edit the result equals a fresh analysis in every field
(`strictly_equal`: `Forward.applications`' `if` bytes and `calls` included), and the walk began where the edit
allows, no later."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.flow.resume import Walk
from adopter.analysis.incremental import DocumentAnalysis

from .helpers import strictly_equal

SOURCE = '''import torch
from torch import nn


def scale(x):
    return x * 0.5


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)

    def _bias(self, scores, mask):
        if mask is not None:
            scores = scores + mask
        else:
            scores = scores * 1.0
        return scores

    def forward(self, x, mask=None, cache=None):
        def shape(t):
            return t.view(t.shape[0], -1, 4, 8).transpose(1, 2)

        eq = "b h i d, b h j d -> b h i j"
        # project the inputs
        q = shape(self.q(x))
        k = shape(self.k(x))
        v = shape(self.v(x))
        if cache is not None:
            k = torch.cat([cache, k], dim=2)
        scores = scale(torch.einsum(eq, q, k))
        if mask is not None:
            scores = self._bias(scores, mask)
        probs = scores.softmax(dim=-1)
        probs = self.drop(probs)
        for _ in range(2):
            probs = probs * 1.0
        out = probs @ v
        # merge the heads
        out = out.transpose(1, 2).reshape(x.shape[0], -1, 32)
        return self.norm(self.o(out) + x)
'''

FORWARD = SOURCE.index("    def forward(")


def _statement(text: str, line: str) -> int:
    """The index of the forward's top-level statement holding `line` (comments counted, as the walk does)."""
    body = text[text.index("\n", text.index("    def forward(")) + 1:].splitlines()
    index = -1
    for row in body:
        if row.startswith("        ") and not row.startswith("         "):
            index += 1
        if line in row:
            return index
    raise AssertionError(line)


def _walk(doc: DocumentAnalysis) -> Walk:
    walk = doc._analyser._flows["Attention"][0].walk
    assert walk is not None
    return walk


def _edited(doc: DocumentAnalysis, text: str) -> None:
    doc.update(text)
    got = doc.result()
    fresh = analyse(text, doc.path)
    assert got == fresh
    assert strictly_equal(got, fresh)


@pytest.fixture
def doc() -> DocumentAnalysis:
    d = DocumentAnalysis(SOURCE, "m.py")
    assert strictly_equal(d.result(), analyse(SOURCE, "m.py"))
    assert _walk(d).resumed == 0
    return d


@pytest.mark.parametrize("old, new", [
    ("probs = scores.softmax(dim=-1)", "probs = scores.softmax(dim=-2)"),
    ("out = probs @ v", "out = torch.matmul(probs, v)"),
    ("return self.norm(self.o(out) + x)", "return self.norm(self.o(out) + x) * 2"),
    ("k = torch.cat([cache, k], dim=2)", "k = torch.cat([cache, k], dim=-2)"),
    ("probs = probs * 1.0", "probs = probs * 2.0"),
])
def test_an_edit_resumes_the_walk_at_its_statement(doc: DocumentAnalysis, old: str, new: str) -> None:
    text = SOURCE.replace(old, new)
    _edited(doc, text)
    # No checkpoint is taken before a comment (it changes no state): one in a comment resumes at the statement before.
    assert _walk(doc).resumed == _statement(text, new) - (1 if new.startswith("#") else 0)


def test_a_comment_line_added_resumes_at_the_statement_before(doc: DocumentAnalysis) -> None:
    """A new comment line moves the lines below: the forward is walked again from the statement before it. (An
    edit inside a comment re-analyses nothing: `test_comment_blind_cut.py`.)"""
    text = SOURCE.replace("        # merge the heads\n", "        # the heads\n        # merge the heads\n")
    assert text != SOURCE
    _edited(doc, text)
    assert _walk(doc).resumed == _statement(text, "# the heads") - 1
    text = text.replace("# merge the heads", "# merge all the heads")
    _edited(doc, text)
    assert doc.reanalysed == ()


def test_a_newline_typed_and_a_character_deleted_keeps_every_byte_but_moves_the_lines(doc: DocumentAnalysis) -> None:
    """Shaped on the differential fuzz's `examples/bert_encoder.py` case (`tests/session/test_broken_text.py`): the
    first five characters of the comment line above the scores replaced by `if x` and a newline. Every statement
    of the forward keeps its bytes, but the ones below move one line down (and the `if x` at column 0 is broken:
    salvage blanks it). The walk's spans are lines: no checkpoint after the moved line is restored (base
    restored the last one, and the findings came a line early)."""
    at = SOURCE.index("        # project the inputs")
    text = SOURCE[:at] + "if x\n" + SOURCE[at + 5:]
    assert len(text) == len(SOURCE)
    _edited(doc, text)
    assert _walk(doc).resumed <= _statement(SOURCE, "# project the inputs")


def test_each_keystroke_of_a_line_resumes_from_the_walk_before(doc: DocumentAnalysis) -> None:
    """Typing a new statement letter by letter, broken states included (salvage masks them)."""
    anchor = "        out = probs @ v\n"
    at = SOURCE.index(anchor) + len(anchor)
    typed = "        out = out.float()\n"
    for n in range(1, len(typed) + 1):
        text = SOURCE[:at] + typed[:n] + SOURCE[at:]
        _edited(doc, text)
        assert 0 < _walk(doc).resumed <= _statement(SOURCE, "out = probs @ v") + 1


def test_an_edit_above_the_forward_shifts_the_bytes_it_resumes_with(doc: DocumentAnalysis) -> None:
    """A character typed in `__init__` moves every byte of the forward, not its lines: the forward's flow is
    taken as it was (`Analyser._forward`'s memo, keyed by lines; its `applications` keep the old `if` bytes,
    which only tell the forward's `if`s apart: `==` leaves them out). The next edit of the forward resumes that
    walk with its bytes shifted: the `if` bytes of `applications` and the closures' keys are a fresh walk's."""
    text = SOURCE.replace("nn.Dropout(0.1)", "nn.Dropout(0.15)")
    doc.update(text)
    assert doc.result() == analyse(text, doc.path)
    assert _walk(doc).start == SOURCE.index("def forward(")  # the walk before the edit
    text = text.replace("probs = scores.softmax(dim=-1)", "probs = scores.softmax(dim=-2)")
    _edited(doc, text)
    walk = _walk(doc)
    assert walk.start == SOURCE.index("def forward(") + 1
    assert walk.resumed == _statement(text, "probs = scores.softmax(dim=-2)")
    forward = doc.result().architectures[0].forward
    assert forward is not None and any(alternatives for *_, alternatives in forward.applications)


def test_a_changed_callee_resumes_before_the_statement_that_inlined_it(doc: DocumentAnalysis) -> None:
    text = SOURCE.replace("scores = scores * 1.0", "scores = scores * 0.5")
    _edited(doc, text)
    assert 0 < _walk(doc).resumed <= _statement(SOURCE, "scores = self._bias(scores, mask)")
    text = text.replace("def scale(x):\n    return x * 0.5", "def scale(x):\n    return x / 2")
    _edited(doc, text)  # a helper the forward inlines, above the class: its lines moved nothing
    assert 0 < _walk(doc).resumed <= _statement(SOURCE, "scores = scale(torch.einsum(eq, q, k))")


def test_a_closure_or_a_parameter_edited_walks_from_the_start(doc: DocumentAnalysis) -> None:
    text = SOURCE.replace("return t.view(t.shape[0], -1, 4, 8)", "return t.view(t.shape[0], -1, 8, 4)")
    _edited(doc, text)
    assert _walk(doc).resumed == 0
    text = text.replace("def forward(self, x, mask=None, cache=None)", "def forward(self, x, mask=None, cache=1)")
    _edited(doc, text)
    assert _walk(doc).resumed == 0


def test_lines_added_above_walk_again_and_the_walk_after_resumes(doc: DocumentAnalysis) -> None:
    text = SOURCE.replace("        self.drop = nn.Dropout(0.1)\n", "        self.drop = nn.Dropout(0.1)\n        self.extra = 1\n")
    _edited(doc, text)
    assert _walk(doc).resumed == 0  # the forward's lines moved: its ops' spans with them
    text = text.replace("probs = scores.softmax(dim=-1)", "probs = scores.softmax(-1)")
    _edited(doc, text)
    assert _walk(doc).resumed == _statement(text, "probs = scores.softmax(-1)")


def test_a_released_document_keeps_no_walk_and_its_next_edit_walks_from_the_start(doc: DocumentAnalysis) -> None:
    """`release` (a document nobody edits) drops the forwards' flows and their walks, which only the next edit
    would read: that edit walks the forward from its first statement, gives the fresh analysis, and keeps its
    walk again, which the edit after it resumes."""
    doc.release()
    assert not doc._analyser._flows
    _edited(doc, SOURCE.replace("probs = scores.softmax(dim=-1)", "probs = scores.softmax(dim=-2)"))
    assert _walk(doc).resumed == 0
    text = doc.text.replace("out = probs @ v", "out = torch.matmul(probs, v)")
    _edited(doc, text)
    assert _walk(doc).resumed == _statement(text, "out = torch.matmul(probs, v)")


ALIASED = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, keys, queries=None):
        if queries is None:
            queries = keys
        values = keys
        k, q, v = self.k(keys), self.q(queries), self.v(values)
        scores = torch.matmul(q, k.transpose(-1, -2))
        probs = scores.softmax(dim=-1)
        out = probs @ v
        return out
'''


def test_a_second_name_for_an_argument_is_decided_again_when_the_argument_is_bound_below_it() -> None:
    """`values = keys` reads as one tensor under two names only while `keys` is bound nowhere after it
    (`flow.aliases`): that statement's walk reads the statements below it, so an edit below binding `keys`
    again must not resume past it (the alias's decision changes), and removing the binding flips it back."""
    doc = DocumentAnalysis(ALIASED, "m.py")
    assert strictly_equal(doc.result(), analyse(ALIASED, "m.py"))
    alias = ALIASED.index("        values = keys\n")
    rebound = ALIASED.replace("        out = probs @ v\n", "        out = probs @ v\n        keys = out\n")
    doc.update(rebound)
    got, fresh = doc.result(), analyse(rebound, "m.py")
    assert got == fresh and strictly_equal(got, fresh)
    walk = doc._analyser._flows["Attention"][0].walk
    assert walk is not None and walk.looked_ahead is not None
    assert walk.resumed <= walk.looked_ahead  # resumed no later than the aliasing statement
    doc.update(ALIASED)
    got, fresh = doc.result(), analyse(ALIASED, "m.py")
    assert got == fresh and strictly_equal(got, fresh)
    assert alias > 0
