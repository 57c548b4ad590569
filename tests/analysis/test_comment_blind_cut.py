"""A keystroke inside a comment re-analyses nothing (issues 21, 22): a unit's cached entry is handed back when its
text differs from the entry's only in what comments say (`adopter.analysis.parse.code_text.code_key`) and the
fingerprints of what it consulted, comment-blind too, are unchanged. Every reading is blind to what a comment says
(`tests/analysis/test_comment_blind.py`) and the code tokens keep their lines and columns, so the result is the
one a fresh analysis gives, spans included.

Shaped on transformers 4.35.0, `models/t5/modeling_t5.py`: `T5PreTrainedModel._shift_right` (lines 869-899, two
comments in it) is inlined by the subclasses' forwards; the bench's edit `[896, 58, 'y']` types into the comment
at line 897 and re-analysed the three subclasses on a4c764f1 (T5's slowest keystroke). A comment in a method of
the class (`# Input is (batch_size, seq_length, dim)`, T5Attention.forward, line 467) and in a module-level
function (`# clamp inf values to enable fp16 training`, line 727). Rewritten here at fixture size.
"""

from __future__ import annotations

import random

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

SOURCE = '''import torch
import torch.nn as nn


def clamp(hidden_states):
    # clamp inf values to enable fp16 training
    limit = torch.finfo(hidden_states.dtype).max - 1000
    return torch.clamp(hidden_states, min=-limit, max=limit)


class PreTrained(nn.Module):
    def _shift_right(self, input_ids):
        """Shift the labels right, the start token first."""
        # shift inputs to the right
        shifted = input_ids.new_zeros(input_ids.shape)
        shifted[..., 1:] = input_ids[..., :-1].clone()
        # replace possible -100 values in labels by the pad id
        shifted.masked_fill_(shifted == -100, 0)
        return shifted


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)  # the query projection
        self.k = nn.Linear(d, d)

    def forward(self, x):
        # Input is (batch_size, seq_length, dim)
        scores = self.q(x) @ self.k(x).transpose(-1, -2)
        return torch.softmax(scores, dim=-1)  # the weights


class Generator(PreTrained):
    def __init__(self):
        super().__init__()
        self.lm_head = nn.Linear(8, 8)

    def forward(self, input_ids, labels=None):
        if labels is not None:
            input_ids = self._shift_right(labels)
        logits = clamp(self.lm_head(input_ids))
        return torch.softmax(logits, dim=-1)
'''


def _type(doc: DocumentAnalysis, anchor: str, typed: str, offset: int = 0) -> str:
    """Type `typed` at `anchor`'s start (+ `offset`) in the document; its new text."""
    text = doc.text
    i = text.index(anchor) + offset
    line = text[:i].count("\n")
    col = i - (text.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col), typed)
    doc.result()
    return doc.text


def _results(doc: DocumentAnalysis) -> dict[str, object]:
    mf = doc.result()
    return {**{a.name: a for a in mf.architectures}, **{f.name: f for f in mf.functions}}


def _same_as_fresh(doc: DocumentAnalysis, text: str) -> None:
    assert doc.result() == analyse(text, "m.py")


def test_a_comment_typed_in_an_inlined_method_reanalyses_nothing() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    before = _results(doc)
    text = _type(doc, "by the pad id", "y", 3)  # `by the pyad id`
    assert doc.reanalysed == ()
    after = _results(doc)
    assert all(after[name] is before[name] for name in before)
    _same_as_fresh(doc, text)
    text = _type(doc, "shift inputs", "(")  # a bracket in a comment opens nothing
    assert doc.reanalysed == ()
    _same_as_fresh(doc, text)


def test_a_comment_typed_in_the_class_or_a_function_reanalyses_nothing() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    before = _results(doc)
    for anchor, offset, typed in (("Input is", 0, "x"), ("the query projection", 4, "_"), ("clamp inf values", 6, "a")):
        text = _type(doc, anchor, typed, offset)
        assert doc.reanalysed == (), anchor
        _same_as_fresh(doc, text)
    after = _results(doc)
    assert all(after[name] is before[name] for name in before)


def test_refusals_code_a_string_and_a_comment_that_moves_or_appears_are_analysed() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    text = _type(doc, "-100, 0)", "1", 6)  # `masked_fill_(..., 10)`: code
    assert "class Generator" in doc.reanalysed
    _same_as_fresh(doc, text)
    text = _type(doc, "Shift the labels", "#")  # a `#` in a docstring: a string, code
    assert "class Generator" in doc.reanalysed
    _same_as_fresh(doc, text)
    text = _type(doc, "    return torch.clamp", "    # a comment line: the lines below move\n")
    assert "def clamp" in doc.reanalysed
    _same_as_fresh(doc, text)
    text = _type(doc, "the weights", "0")  # a comment that ends the class: its span, and its forward's, end there
    assert doc.reanalysed == ("class Attention",)
    _same_as_fresh(doc, text)
    text = _type(doc, "\n        return torch.softmax(scores", "  #")  # a comment where there was none
    assert doc.reanalysed == ("class Attention",)
    _same_as_fresh(doc, text)
    text = _type(doc, "(x) @ self.k(x)", "  # q\n       ", 4)  # a comment inside an expression, then typed into
    assert "class Attention" in doc.reanalysed
    text = _type(doc, "# q\n", "x", 2)
    assert doc.reanalysed == ("class Attention",)
    _same_as_fresh(doc, text)


def test_random_comment_keystrokes_give_the_fresh_analysis() -> None:
    for seed in (1, 2):
        rng = random.Random(seed)
        doc = DocumentAnalysis(SOURCE, "m.py")
        doc.result()
        skipped = 0
        for _ in range(12):
            text = doc.text
            spots = [i + 1 for i in range(len(text)) if text[i] == "#"]
            at = rng.choice(spots)
            at = rng.randrange(at, text.index("\n", at) + 1)
            line = text[:at].count("\n")
            col = at - (text.rfind("\n", 0, at) + 1)
            doc.edit((line, col), (line, col), rng.choice("ab_ (0#."))
            doc.result()
            skipped += doc.reanalysed == ()
            _same_as_fresh(doc, doc.text)
        assert skipped >= 6  # all but those typed into the comment that ends the class (and its forward)
