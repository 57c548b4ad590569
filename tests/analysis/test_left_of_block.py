"""Code typed into a line's indentation left of its top-level statement's body, but not at column 0
(`verdict.left_of_block`): "broken" without a parse, and only where a whole parse says so; never at the
columns where tree-sitter takes the line as a statement of an outer block without an error."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tree_sitter import Tree

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.parse.source import is_broken, new_parser
from adopter.analysis.parse.verdict import left_of_block

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MODULE = '''import torch
from torch import nn


class Block(nn.Module):
    """A block."""

    def __init__(self, d):
        super().__init__()
        # a comment line
        self.fc = nn.Linear(
            d,
            d)
        x = 1 + \\
            2
        if d:
            self.act = nn.ReLU()
        else:
            self.act = None

    # a comment between methods
    @torch.no_grad()
    def forward(self, x):
        try:
            h = self.fc(x)
        except ValueError:
            h = x
        text = """
  a string line
"""
        return h * 2


if torch.cuda.is_available():
    DEVICE = "cuda"
        # a deeper comment
  # a shallower comment
    SPARE = 1
else:
  DEVICE = "cpu"


def helper(x):
    # the first line is a comment

    y = x
    return y
'''

ALPHABET = ["a", "x.", "_", "0", ".", "(", ")", "[", ":", "=", "x ", "else:", "elif x:", "except:", "finally:",
            "return", "def f():", "pass", "not ", "lambda: 0", "case", "match x:", ";", "-"]


_TREES: dict[bytes, Tree] = {}


def _known(old: bytes, column_of: tuple[int, int], typed: str) -> tuple[bool, bytes]:
    line, column = column_of
    tree = _TREES.get(old)
    if tree is None:
        tree = _TREES[old] = new_parser().parse(old)
    starts = [0]
    for text in old.split(b"\n")[:-1]:
        starts.append(starts[-1] + len(text) + 1)
    at = starts[line] + column
    new = old[:at] + typed.encode() + old[at:]
    return left_of_block(old, tree, at, at, new, at + len(typed)), new


def test_every_column_of_every_line_known_broken_only_when_a_whole_parse_says_so() -> None:
    """Every line, every column of its indentation, each typed text of the alphabet: where the verdict is
    "broken", a whole parse is broken; and it is given (some lines, some columns)."""
    old = MODULE.encode()
    parser, known = new_parser(), 0
    lines = old.split(b"\n")
    for line, text in enumerate(lines):
        indent = len(text) - len(text.lstrip(b" "))
        for column in range(0, indent + 1):
            for typed in ALPHABET:
                verdict, new = _known(old, (line, column), typed)
                if verdict:
                    known += 1
                    assert is_broken(parser.parse(new)), (line, column, typed)
    assert known > 300, known


def test_where_it_is_given_and_where_not() -> None:
    old = MODULE.encode()
    lines = [text.decode() for text in old.split(b"\n")]

    def line_of(prefix: str) -> int:
        return next(i for i, text in enumerate(lines) if text.startswith(prefix))

    fc = line_of("        self.fc = nn.Linear(")
    assert _known(old, (fc, 1), "a")[0] and _known(old, (fc, 3), "(")[0]  # left of the class body's column 4
    assert not _known(old, (fc, 0), "a")[0]  # column 0: another argument (`salvage`'s region parse)
    for column in (4, 5, 6, 7):  # the class body's column or right of it: the pops may stop at 4
        assert not _known(old, (fc, column), "a")[0]
    assert not _known(old, (fc + 1, 2), "a")[0]  # inside a call's brackets
    assert not _known(old, (line_of("            2"), 2), "a")[0]  # after a backslash continuation
    assert not _known(old, (line_of('  a string line'), 1), "a")[0]  # in a string
    # A header continued by a backslash: `x` typed there makes `-> x (int):`, a clean text.
    header = b"class A:\n    def f(self):\n        pass\n\n    def g(self) -> \\\n  (int):\n        return 1\n"
    verdict, new = _known(header, (5, 1), "x")
    assert not verdict and not is_broken(new_parser().parse(new)) and not is_broken(new_parser().parse(header))
    assert _known(old, (line_of("        # a comment line"), 1), "y")[0]  # a comment line between statements
    for clause in ("else:", "elif x:", "except:", "finally:"):  # might continue a top-level statement
        assert not _known(old, (fc, 2), clause)[0]
    assert not _known(old, (line_of('    """A block."""'), 2), "a")[0]  # the class body's first line: none open
    assert _known(old, (line_of("    def __init__"), 2), "a")[0]  # its second
    assert not _known(old, (line_of("    y = x"), 2), "a")[0]  # after comment and blank lines, the first code line
    assert _known(old, (line_of("    return y"), 2), "a")[0]
    assert _known(old, (line_of('  DEVICE = "cpu"'), 1), "a")[0] is False  # the `else` body's first line
    assert not _known(old, (line_of("    SPARE = 1"), 0), "a")[0]
    # A body whose first line is a comment: the first code line takes the INDENT, wherever it is (`x.  y = x`
    # at column 2 makes a clean text whose body is at 2); refused.
    for first in (b"class A:\n    # c\n    y = x\n    z = 1\n", b"def f(x):\n    # c\n\n    y = x\n    return y\n"):
        verdict, new = _known(first, (first.split(b"\n").index(b"    y = x"), 2), "x.")
        assert not verdict and not is_broken(new_parser().parse(new))
    # The old text broken: no verdict.
    broken = old.replace(b"        h = x\n", b"        h = x)\n")
    at = broken.index(b"        return h * 2") + 1
    new = broken[:at] + b"a" + broken[at:]
    assert not left_of_block(broken, new_parser().parse(broken), at, at, new, at + 1)


def test_tabs_and_carriage_returns() -> None:
    """A tab in the indentation is 8 columns to the scanner: a line indented with one is not measured."""
    old = b"class A:\n\tdef f(self):\n\t\treturn 1\n\n\tdef g(self):\n\t\treturn 2\n"
    at = old.index(b"\t\treturn 2") + 1
    new = old[:at] + b"a" + old[at:]
    assert not left_of_block(old, new_parser().parse(old), at, at, new, at + 1)
    old = b"class A:\r\n    def f(self):\r\n        return 1\r\n\r\n    def g(self):\r\n        return 2\r\n"
    at = old.index(b"        return 2") + 2
    new = old[:at] + b"a" + old[at:]
    assert left_of_block(old, new_parser().parse(old), at, at, new, at + 1) and is_broken(new_parser().parse(new))


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_random_keystrokes_in_the_examples(path: Path) -> None:
    data = path.read_bytes()
    tree = new_parser().parse(data)
    rng = random.Random(path.name)
    parser, known = new_parser(), 0
    lines = data.split(b"\n")
    starts = [0]
    for text in lines[:-1]:
        starts.append(starts[-1] + len(text) + 1)
    for _ in range(600):
        line = rng.randrange(len(lines))
        indent = len(lines[line]) - len(lines[line].lstrip(b" "))
        at = starts[line] + rng.randint(0, indent)
        typed = rng.choice(ALPHABET).encode()
        new = data[:at] + typed + data[at:]
        if left_of_block(data, tree, at, at, new, at + len(typed)):
            known += 1
            assert is_broken(parser.parse(new)), new[max(0, at - 80) : at + 80]
    if not is_broken(tree) and (b"\nclass " in data or b"\ndef " in data):
        assert known > 10, known


@pytest.mark.pure_python
def test_documents_known_broken_left_of_a_body_analyse_as_afresh() -> None:
    """Keystrokes into the indentation of lines: some known broken without a parse (the document keeps no tree
    then); after every keystroke the analysis equals a fresh one."""
    text = (EXAMPLES / "bert_encoder.py").read_text()
    doc = DocumentAnalysis(text, "bert_encoder.py")
    doc.result()
    doc.prepare()
    rng = random.Random(5)
    lines = text.split("\n")
    indented = [i for i, line in enumerate(lines) if line.startswith("        ")]
    skipped = 0
    for step in range(40):
        line = rng.choice(indented)
        column = rng.randint(1, 3)
        doc.edit((line, column), (line, column), rng.choice("a_(.0"))
        skipped += doc._tree is None
        assert doc.result() == analyse(doc.text.encode(), "bert_encoder.py"), step
        doc.edit((line, column), (line, column + 1), "")
        assert doc.text == text
        assert doc.result() == analyse(text.encode(), "bert_encoder.py"), step
    assert skipped > 20, skipped
