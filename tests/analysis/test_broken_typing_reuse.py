"""Typing inside a statement that stays broken: the masked text changes only in the blanks of the line `salvage`
blanked, so the document hands back its last result (same architectures, the new syntax errors) instead of
analysing again (`adopter.analysis.parse.blank_lines`, `DocumentAnalysis._run`). Every state's result is the
fresh analysis of its text (`analyse`, what `adopter check` reads), and its findings are `check`'s."""

from __future__ import annotations

from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.parse.blank_lines import blanks_only
from adopter.analysis.parse.source import new_parser
from adopter.engine import Environment, check, load_rules

CPU = Environment("cpu", frozenset(), "2.13.0")

# Shaped on transformers 4.35.0, src/transformers/models/t5/modeling_t5.py, `T5Stack.forward` (line 1088 on: the
# layer loop that moves each mask to the hidden states' device) and `T5Attention.forward` (line 524 on: scores,
# position bias added, softmax, dropout), rewritten at fixture size.
SOURCE = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.dropout = nn.Dropout(0.1)

    def shape(self, x):
        return x.view(x.size(0), -1, self.heads, x.size(-1) // self.heads).transpose(1, 2)

    def forward(self, hidden, bias=None):
        q = self.shape(self.q(hidden))
        k = self.shape(self.k(hidden))
        v = self.shape(self.v(hidden))
        scores = torch.matmul(q, k.transpose(3, 2))
        if bias is not None:
            scores = scores + bias
        weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        weights = self.dropout(weights)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(hidden.size(0), -1, self.heads * v.size(-1))
        return self.o(out)


class Stack(nn.Module):
    def __init__(self, d, heads, n):
        super().__init__()
        self.blocks = nn.ModuleList([Attention(d, heads) for _ in range(n)])
        self.norm = nn.LayerNorm(d)

    def forward(self, hidden, mask=None, head_mask=None):
        for i, block in enumerate(self.blocks):
            if mask is not None:
                mask = mask.to(hidden.device)
            if head_mask is not None:
                head_mask = head_mask.to(hidden.device)
            hidden = block(hidden, mask)
        return self.norm(hidden)
'''

LINE = "                head_mask = head_mask.to(hidden.device)"


@pytest.fixture(scope="module")
def rules() -> tuple[Any, ...]:
    return tuple(load_rules().rules)


def _typed(prefix: str, line: str = LINE, source: str = SOURCE) -> str:
    """`source` with `line` holding only `prefix` of its code (typed up to there)."""
    indent = len(line) - len(line.lstrip())
    return source.replace(line, line[:indent] + prefix)


def _same_as_fresh(doc: DocumentAnalysis, text: str, rules: tuple[Any, ...]) -> None:
    doc.update(text)
    got = doc.result()
    fresh = analyse(text, "m.py")
    assert got == fresh
    assert check(got, rules, CPU) == check(fresh, rules, CPU)


def test_typing_inside_a_broken_statement_reuses_the_result(rules: tuple[Any, ...]) -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    code = LINE.lstrip()
    states = [code[:n] for n in range(len("head_mask = head_mask."), len(code) + 1)]  # `.`, `.t`, ..., mended
    previous = None
    reused = 0
    for prefix in states:
        text = _typed(prefix)
        _same_as_fresh(doc, text, rules)
        result = doc.result()
        broken = any(p.code == "syntax-error" for p in result.problems)
        if previous is not None and broken:
            assert result.architectures is previous.architectures  # handed back, not analysed again
            assert doc.reanalysed == ()
            reused += 1
        previous = result if broken else None
    assert reused >= 10
    # The mending keystroke: the text parses, no syntax error, the statement read again.
    assert not any(p.code == "syntax-error" for p in doc.result().problems)
    assert doc.analysed_text == SOURCE.encode()


def test_the_syntax_error_follows_the_typing(rules: tuple[Any, ...]) -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    for prefix in ("head_mask = head_mask.to(", "head_mask = head_mask.to(hid", "head_mask = head_mask.to(hidden.d"):
        text = _typed(prefix)
        _same_as_fresh(doc, text, rules)
        errors = [p for p in doc.result().problems if p.code == "syntax-error"]
        line = text.split("\n").index(_typed(prefix).split("\n")[SOURCE.split("\n").index(LINE)])
        assert errors and errors[0].span is not None and errors[0].span.start_line == line
        assert errors == [p for p in analyse(text, "m.py").problems if p.code == "syntax-error"]


def test_a_broken_keystroke_after_a_clean_edit_in_another_method(rules: tuple[Any, ...]) -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    # A clean edit of `Attention.forward` (the softmax's dim), then typing in `Stack.forward`.
    edited = SOURCE.replace("softmax(scores.float(), dim=-1)", "softmax(scores.float(), dim=3)")
    _same_as_fresh(doc, edited, rules)
    for prefix in ("head_mask = head_mask.", "head_mask = head_mask.t", "head_mask = head_mask.to("):
        _same_as_fresh(doc, _typed(prefix, source=edited), rules)
    # The clean method edited again while the other stays broken: analysed again, not handed back.
    before = doc.result()
    again = _typed("head_mask = head_mask.to(", source=SOURCE)
    _same_as_fresh(doc, again, rules)
    assert doc.result().architectures is not before.architectures


def test_two_broken_statements_at_once(rules: tuple[Any, ...]) -> None:
    other = "        scores = torch.matmul(q, k.transpose(3, 2))"
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    first = _typed("scores = torch.matmul(q, k.", other)
    _same_as_fresh(doc, first, rules)
    previous = doc.result()
    both = ""
    for prefix in ("head_mask = head_mask.to(", "head_mask = head_mask.to(h", "head_mask = head_mask.to(hi"):
        both = _typed(prefix, source=first)
        _same_as_fresh(doc, both, rules)
        assert len([p for p in doc.result().problems if p.code == "syntax-error"]) == 2
    assert doc.result().architectures is not previous.architectures  # the second break blanked a new line
    previous = doc.result()
    typed = "        scores = torch.matmul(q, k."
    for more in ("t", "tr", "tra"):  # the first one typed on, the second still broken: handed back
        _same_as_fresh(doc, both.replace(typed + "\n", typed + more + "\n"), rules)
        assert len([p for p in doc.result().problems if p.code == "syntax-error"]) == 2
        assert doc.result().architectures is previous.architectures


def test_a_line_break_typed_in_a_broken_statement_is_analysed_again(rules: tuple[Any, ...]) -> None:
    # Refusal: the masked texts differ in their line count (a line break typed): positions move, no reuse.
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    _same_as_fresh(doc, _typed("head_mask = head_mask.t"), rules)
    before = doc.result()
    _same_as_fresh(doc, _typed("head_mask = head_mask.t\n                x"), rules)
    assert doc.result().architectures is not before.architectures


def test_a_statement_that_changes_while_it_parses_is_analysed_again(rules: tuple[Any, ...]) -> None:
    # Refusal: from a broken state to another where a line of code changed (not blanked in both).
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    broken = _typed("head_mask = head_mask.t")
    _same_as_fresh(doc, broken, rules)
    before = doc.result()
    text = broken.replace("mask = mask.to(hidden.device)", "mask = mask.to(hidden.dtype)")
    _same_as_fresh(doc, text, rules)
    assert doc.result().architectures is not before.architectures


def _blanks(old: bytes, new: bytes) -> bool:
    return blanks_only(old, new, new_parser().parse(new))


def test_blanks_only() -> None:
    assert _blanks(b"a\n   \nb", b"a\n \nb")
    assert _blanks(b"a\n\t \nb\n", b"a\n\nb\n")
    assert _blanks(b"a\n  \n  \nb", b"a\n\n    \nb")
    assert _blanks(b"if a:\n    pass   \nb", b"if a:\n    pass \nb")  # salvage's `pass`
    assert _blanks(b"a\n", b"a\n")
    # Refusals: a line of code changed; blanks at the end of a code line; a line added; a blank line given
    # code; a blank line of a string (its blanks are the string's); `pass` changed.
    assert not _blanks(b"a\n   \nb", b"a\n   \nc")
    assert not _blanks(b"a  \n\nb", b"a \n\nb")
    assert not _blanks(b"a = 1 \\ \nb", b"a = 1 \\\nb")
    assert not _blanks(b"a\n  \nb", b"a\n  \n\nb")
    assert not _blanks(b"a\n  \nb", b"a\n x\nb")
    assert not _blanks(b"a\n  ", b"a\n  x")
    assert not _blanks(b'a = """x\n   \ny"""\n', b'a = """x\n \ny"""\n')
    assert not _blanks(b"if a:\n    pass   \nb", b"if a:\n    pas    \nb")
