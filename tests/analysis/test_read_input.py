"""The incremental re-parse keeps nothing of the texts it read: py-tree-sitter's `Parser.parse(callable)`
keeps a reference to each chunk the callable returns, and each chunk pinned its whole text (the server grew
by a file's size per keystroke)."""

from __future__ import annotations

import sys

from tree_sitter import Tree

from adopter.analysis.parse.read_input import Reader
from adopter.analysis.parse.source import new_parser
from adopter.analysis.parse.verdict import parse_within, resume

OLD = b"".join(b"def f%d(x):\n    return x + %d\n\n" % (i, i) for i in range(200))


def _inserted(at: int, text: bytes) -> tuple[bytes, Tree]:
    """OLD with `text` inserted at byte `at` (a new object, as each version of a document's text is) and
    OLD's tree edited to match, as the server re-parses an edit."""
    tree = new_parser().parse(OLD)
    row = OLD.count(b"\n", 0, at)
    column = at - (OLD.rfind(b"\n", 0, at) + 1)
    tree.edit(start_byte=at, old_end_byte=at, new_end_byte=at + len(text), start_point=(row, column),
              old_end_point=(row, column), new_end_point=(row, column + len(text)))
    return bytes(bytearray(OLD[:at] + text + OLD[at:])), tree


def test_a_budgeted_reparse_keeps_no_reference_to_its_text() -> None:
    parser = new_parser()
    new, tree = _inserted(OLD.index(b"return x + 7\n") + 11, b"7")
    before = sys.getrefcount(new)
    done = parse_within(parser, new, tree, budget=10_000)
    assert done is not None and not done.root_node.has_error
    del done  # a tree parsed from a callable keeps the callable (for `Node.text`), and so the text, while it lives
    assert sys.getrefcount(new) == before


def test_a_cancelled_then_resumed_reparse_keeps_no_reference_either() -> None:
    parser = new_parser()
    new, tree = _inserted(OLD.index(b"def f7"), b"(")
    before = sys.getrefcount(new)
    assert parse_within(parser, new, tree, budget=0) is None  # stopped at the first report
    assert sys.getrefcount(new) == before
    finished = resume(parser, new, tree)
    assert finished.root_node.has_error
    assert str(finished.root_node) == str(new_parser().parse(new).root_node)
    del finished
    assert sys.getrefcount(new) == before


def test_the_reader_serves_the_text_from_any_offset() -> None:
    reader = Reader(b"abcdef")
    assert bytes(reader(2, (0, 2))) == b"cdef"
    assert bytes(reader(6, (0, 6))) == b""
    reader.release()
