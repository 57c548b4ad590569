"""The row and column `DocumentAnalysis._reparse` hands `Tree.edit` for the change's start (`incremental._point`):
read from the last tree (the row of the smallest node spanning the offset, plus the line breaks after that
node's start) it must equal the count of every line break before the offset (issue 21, lat38: that count was
~80 us a keystroke on T5's 106 KB)."""

from __future__ import annotations

import random
from pathlib import Path

from adopter.analysis.incremental import DocumentAnalysis, _point
from adopter.analysis.parse.source import new_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _counted(data: bytes, offset: int) -> tuple[int, int]:
    return (data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1))


def test_every_offset_of_clean_broken_and_odd_texts() -> None:
    texts = [
        (EXAMPLES / "bert_encoder.py").read_bytes(),
        # broken: an open bracket, an unmatched one, a statement cut in two, a stray indent
        b"class A:\n    def f(self, x):\n        y = self.f(x\n        return y\n\nz = ]\n",
        b"def g(x):\n    return x.\n\n      w = 1\n",
        # CRLF line ends, a tab, non-ASCII text in a string and a comment, a text without a final line break
        b"def h(x):\r\n\tz = '\xc3\xa9t\xc3\xa9'  # \xe2\x80\x94 note\r\n\treturn z",
        b"",
        b"\n\n\n",
    ]
    for data in texts:
        tree = new_parser().parse(data)
        for offset in range(len(data) + 1):
            assert _point(data, offset, tree) == _counted(data, offset), (data[:30], offset)


def test_the_tree_of_a_typing_session_gives_the_counted_points() -> None:
    """Edits one after another through the document: every tree it keeps (re-parsed, or moved by `Tree.edit`
    for a whitespace change) gives the counted point at random offsets of its own text."""
    rng = random.Random(38)
    text = (EXAMPLES / "gpt_decoder.py").read_text()
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    for _ in range(120):
        lines = doc.text.split("\n")
        number = rng.randrange(len(lines))
        col = rng.randint(0, len(lines[number]))
        doc.edit((number, col), (number, col), rng.choice([" ", "x", "(", ".", "\n", "    ", "'", "#"]))
        doc.result()
        for data, tree in ((doc.text.encode(), doc.tree), (doc.analysed_text, doc.analysed_tree)):
            if data is None or tree is None:
                continue
            for offset in [rng.randint(0, len(data)) for _ in range(40)]:
                assert _point(data, offset, tree) == _counted(data, offset)
