"""`WordIndex.moved` (a document's word offsets carried edit by edit) answers what a fresh search does."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis.analyser import _whole_words, _words
from adopter.analysis.parse.words import WordIndex, _find_all

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
WORDS = (b"import *", b"optim", b"Adam", b"Sequential", b"ross_entropy", b"self", b"forward", b"aa", b"a",
         b"\n", b"  ", b"x_x", b"(")


def _edit(data: bytes, rng: random.Random) -> bytes:
    """One random edit: a character or word typed or deleted, a line deleted or duplicated, a block cut."""
    at = rng.randrange(len(data) + 1)
    kind = rng.randrange(7)
    if kind == 0:
        return data[:at] + rng.choice([b"a", b"x", b"_", b"(", b" ", b"\n", b"."]) + data[at:]
    if kind == 1:
        return data[:at] + rng.choice(WORDS) + data[at:]
    if kind == 2:
        return data[:at] + data[at + rng.randint(1, 3):]
    if kind == 3:  # a line deleted
        s, e = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        return data[:s] + data[e + 1:] if e >= 0 else data[:s]
    if kind == 4:  # a line duplicated
        s, e = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        e = len(data) if e < 0 else e + 1
        return data[:e] + data[s:e] + data[e:]
    if kind == 5:  # a block cut
        return data[:at] + data[at + rng.randint(0, 400):]
    return data  # no change


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_moved_index_equals_fresh_search(path: Path) -> None:
    rng = random.Random(path.name)
    data = path.read_bytes()
    index = WordIndex(data)
    for word in WORDS:
        index.positions(word)
    for _ in range(150):
        new = _edit(data, rng)
        moved = index.moved(new)
        for word in WORDS:
            assert moved.positions(word) == _find_all(new, word), (word, len(data), len(new))
            assert moved.occurs(word) == (word in new)
        # The old index still answers for the old text.
        assert index.positions(b"self") == _find_all(data, b"self")
        index, data = moved, new


def test_words_asked_only_after_a_move_are_searched() -> None:
    index = WordIndex(b"import torch\n").moved(b"import torch.optim\n")
    assert index.occurs(b"optim") and index.positions(b"optim") == [13]
    assert not WordIndex(b"x = 1\n", carry=False).occurs(b"optim")


def test_overlap_at_the_edges() -> None:
    # Occurrences that straddle the edit's ends and ones that the edit creates or destroys.
    old = b"aaa_aaa"
    for new in (b"aaaa_aaa", b"aa_aaa", b"aaa__aaa", b"aaa_aaaa", b"aaaaaaa", b"", b"a"):
        assert WordIndex(old).moved(old).positions(b"aa") == _find_all(old, b"aa")
        index = WordIndex(old)
        index.positions(b"aa")
        index.positions(b"a_a")
        moved = index.moved(new)
        assert moved.positions(b"aa") == _find_all(new, b"aa")
        assert moved.positions(b"a_a") == _find_all(new, b"a_a")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_whole_words_from_positions_equal_the_find_loop(path: Path) -> None:
    data = path.read_bytes()
    index = WordIndex(data)
    text = data.decode().replace("(", " ").replace(".", " ")
    names = {w for w in text.split() if w.isidentifier()}
    for name in [*sorted(names)[:200], "aa", "é", "self"]:
        word = name.encode()
        for enough in (1, 2, 3):
            assert _whole_words(data, word, index.positions, enough) == _words(data, word, enough), word
    tricky = "aaa aa aaaa_aa éaa aaé aa".encode()
    for word in (b"aa", "aé".encode(), b"a"):
        for enough in (1, 2, 5):
            assert _whole_words(tricky, word, WordIndex(tricky).positions, enough) == _words(tricky, word, enough)


def test_source_text_rejects_another_texts_index() -> None:
    from adopter.analysis.parse.source import SourceText, new_parser

    tree = new_parser().parse(b"x = 1\n")
    with pytest.raises(ValueError):
        SourceText(b"x = 1\n", tree, None, WordIndex(b"y = 2\n"))
