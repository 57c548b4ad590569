"""A keystroke's verdict from the method it lies in, parsed alone (`verdict.method_text`): "broken" only when a
whole parse says so; never where tree-sitter reads the whole text and the method alone differently (a line
left of the body's column); its verdict is the one the masking looks up; documents analyse as afresh."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.parse.reparse import common_prefix, common_suffix
from adopter.analysis.parse.salvage import ParseMemo, mask_broken
from adopter.analysis.parse.source import is_broken, new_parser
from adopter.analysis.parse.verdict import method_text, seldom_breaks

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MODULE = '''import torch
from torch import nn


class Block(nn.Module):
    """A block."""

    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        if d:
            self.act = nn.ReLU()

    # a comment between methods
    @torch.no_grad()
    def forward(
        self,
        x,
    ):
        h = self.fc(x)
        for i in range(2):
            h = h + i
        return h * 2

    def last(self, x):
        return x


DOC = r"""
    A docstring constant.
"""


class Tail(nn.Module):
    def forward(self, x):
        y = x + 1
        return y


@dataclass
class After:
    size: int = 1
'''


def _change(old: bytes, new: bytes) -> tuple[int, int, int]:
    start = common_prefix(old, new)
    suffix = common_suffix(old, new, min(len(old), len(new)) - start)
    return start, len(old) - suffix, len(new) - suffix


def _found(old: bytes, new: bytes) -> tuple[bytes, int] | None:
    start, old_end, new_end = _change(old, new)
    return method_text(old, new_parser().parse(old), new, start, old_end, new_end)


def test_a_line_left_of_the_body_is_not_read_from_the_method_alone() -> None:
    """tree-sitter takes a line at column 5-7 of a method whose body is at 8 (in a class at 4) as a statement of
    the class, without an error, while the method alone has an unexpected indent there: no verdict then."""
    old = b"class A:\n    def f(self):\n        if x:\n            pass\n        y = 1\n\n    def g(self):\n        pass\n"
    parser = new_parser()
    for column in (5, 6, 7):
        new = old.replace(b"        y = 1", b" " * column + b"y = 1")
        assert not is_broken(parser.parse(new))
        alone = new[new.index(b"    def f") : new.index(b"    def g") - 1]
        assert is_broken(parser.parse(alone), 4)  # the method alone reads otherwise
        assert _found(old, new) is None
    # An `if` body moved left of its `if`: the same.
    new = old.replace(b"            pass", b"      pass")
    assert not is_broken(parser.parse(new))
    assert _found(old, new) is None
    # A line at the body's column or deeper: the method alone is the verdict.
    new = old.replace(b"        y = 1", b"        y = = 1")
    found = _found(old, new)
    assert found == (new[new.index(b"    def f") : new.index(b"    def g") - 1], 4)
    assert is_broken(parser.parse(found[0]), 4) and is_broken(parser.parse(new))


def test_what_follows_the_method_must_be_a_definition() -> None:
    """The class's last method before `DOC = ...` gets no verdict (`x = a.` would continue into `DOC`); before a
    definition, a decorator or the end of the text it does, and the text is the masking's statement."""
    old = MODULE.encode()
    new = old.replace(b"        return x\n", b"        return x.\n")
    assert _found(old, new) is None
    new = old.replace(b"        h = self.fc(x)", b"        h = self.fc((x)")
    found = _found(old, new)
    assert found is not None and found[0].startswith(b"    # a comment") is False
    assert found[0].startswith(b"    @torch.no_grad()") and found[0].endswith(b"return h * 2\n")
    new = old.replace(b"        y = x + 1", b"        y = x +. 1")
    found = _found(old, new)
    assert found is not None and found[0].endswith(b"return y\n\n")
    new = old.replace(b"            self.act", b"            self.act(")
    found = _found(old, new)
    assert found is not None and found[0].startswith(b"    def __init__")
    # In the header, on the next definition's line, at the top level: none.
    assert _found(old, old.replace(b"        x,\n", b"        x,(\n")) is None
    assert _found(old, old.replace(b"    def last", b"    ddef last")) is None
    assert _found(old, old.replace(b"import torch", b"import torch(")) is None


def test_the_masking_looks_up_the_same_key() -> None:
    old = MODULE.encode()
    for broken in (b"        h = self.fc((x)", b"        h = self.fc x", b"        return h * 2 2"):
        new = old.replace(old[old.index(broken[:14]) : old.index(b"\n", old.index(broken[:14]))], broken, 1)
        found = _found(old, new)
        assert found is not None
        assert is_broken(new_parser().parse(found[0]), found[1])
        # A wrong verdict planted under the key: the masking reads it (the method is then left as it is).
        memo = ParseMemo()
        memo.put(found, True)
        planted = mask_broken(new, None, memo)
        assert planted.data != mask_broken(new, None, ParseMemo()).data
        assert found[0] in planted.data


def _random_edit(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    typed = rng.choice([*"abcxyz_(0 .)[]:,=+-*", "  ", "not ", " if x", "lambda", "@", "\n", '"', "#", "\t"])
    if rng.random() < 0.3:
        return data[:at] + data[at + rng.randint(1, 3) :]
    if rng.random() < 0.2:  # at the start of a line: into the indentation
        at = data.rfind(b"\n", 0, at) + 1 + rng.randint(0, 9)
    return data[:at] + typed.encode() + data[at:]


@pytest.mark.parametrize("path", [*sorted(EXAMPLES.glob("*.py")), None], ids=lambda p: p.name if p else "module")
def test_known_broken_only_when_a_whole_parse_says_broken(path: Path | None) -> None:
    data = path.read_bytes() if path is not None else MODULE.encode()
    tree = new_parser().parse(data)
    rng = random.Random(path.name if path is not None else 7)
    parser, known, parses = new_parser(), 0, 0
    for _ in range(400):
        new = _random_edit(rng, data)
        start, old_end, new_end = _change(data, new)
        found = method_text(data, tree, new, start, old_end, new_end)
        if found is None:
            continue
        if is_broken(parser.parse(found[0]), found[1]):
            known += 1
            assert is_broken(parser.parse(new)), new[max(0, start - 80) : start + 80]
        else:
            parses += 1
    if b"\nclass " in data:  # (a script of functions has no method to read)
        assert known > 15 and parses > 15, (known, parses)


def test_seldom_breaks_is_a_name_or_spacing_edit() -> None:
    old = b"x = ab + 1"
    cases = {(5, b"c"): True, (4, b"c"): True, (6, b"_"): True, (4, b" "): True, (5, b" "): False,
             (5, b"("): False, (8, b"0"): False, (7, b"."): False}
    for (at, typed), expected in cases.items():
        assert seldom_breaks(old, at, at, old[:at] + typed + old[at:], at + len(typed)) is expected, (at, typed)
    assert seldom_breaks(old, 5, 6, b"x = a + 1", 5)  # a letter deleted from a name
    # At the start and the end of the text (compiled, `old[-1:0]` raised: found by the native fuzz).
    assert seldom_breaks(old, 0, 0, b"y" + old, 1) and not seldom_breaks(old, 0, 0, b"(" + old, 1)
    assert not seldom_breaks(old, len(old), len(old), old + b".", len(old) + 1)


@pytest.mark.pure_python
def test_documents_known_broken_from_the_method_analyse_as_afresh() -> None:
    """Keystrokes in methods: some known broken from the method alone (the whole text then not parsed); after
    every keystroke the analysis equals a fresh one, and the tree parsed when asked a fresh parse's verdict."""
    text = (EXAMPLES / "bert_encoder.py").read_text()
    doc = DocumentAnalysis(text, "bert_encoder.py")
    doc.result()
    doc.prepare()
    rng = random.Random(11)
    skipped = 0
    for step in range(60):
        lines = doc.text.split("\n")
        line = rng.randrange(len(lines))
        column = rng.randint(0, len(lines[line]))
        doc.edit((line, column), (line, column), rng.choice("(.0 )x:"))
        skipped += doc._tree is None
        assert doc.result() == analyse(doc.text.encode(), "bert_encoder.py"), step
        if step % 3 == 2:
            tree = doc.tree
            assert tree is not None and is_broken(tree) == is_broken(new_parser().parse(doc.text.encode()))
        doc.edit((line, column), (line, column + 1), "")
        assert doc.text == text
        assert doc.result() == analyse(text.encode(), "bert_encoder.py"), step
    assert skipped > 5
