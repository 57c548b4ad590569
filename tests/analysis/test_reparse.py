"""How edits are handed to tree-sitter (`adopter.analysis.parse.reparse`): the tree after an edit is always
exactly the tree a fresh parse of the new text gives, node by node, whether it was re-parsed with a
widened edit range or only moved (a blank line's whitespace changed)."""

from __future__ import annotations

import random
from pathlib import Path

from tree_sitter import Tree

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.parse.reparse import reparse_start, whitespace_only
from adopter.analysis.parse.source import new_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _nodes(tree: Tree) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        out.append((n.type, n.start_byte, n.end_byte, n.start_point, n.end_point, n.is_missing, n.has_error))
        stack.extend(reversed(n.children))
    return out


def _same_as_fresh(doc: DocumentAnalysis) -> None:
    assert doc.analysed_text is not None and doc.analysed_tree is not None and doc.tree is not None
    assert _nodes(doc.analysed_tree) == _nodes(new_parser().parse(doc.analysed_text))
    if not doc.tree.root_node.has_error:
        assert _nodes(doc.tree) == _nodes(new_parser().parse(doc.text.encode()))


def _indented_blank_lines(text: str) -> str:
    """`text` with every blank line indented like the next statement (some with a tab as well)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            following = next((x for x in lines[i + 1 :] if x.strip()), "")
            lines[i] = following[: len(following) - len(following.lstrip())] + ("\t " if i % 3 == 0 else "")
    return "\n".join(lines)


def test_whitespace_only_changes() -> None:
    old = b"class A:\n    x = 1\n\n    \n    y = 2\n"
    blank = old.index(b"\n\n") + 1  # the empty line
    assert whitespace_only(old, old[:blank] + b" " + old[blank:], blank, blank, blank + 1)
    indented = old.index(b"    \n")
    assert whitespace_only(old, old[: indented + 2] + old[indented + 4 :], indented + 2, indented + 4, indented + 2)
    after_token = old.index(b"1") + 1  # a space after `1` would lengthen the statement's node
    assert not whitespace_only(old, old[:after_token] + b" " + old[after_token:], after_token, after_token, after_token + 1)
    assert not whitespace_only(old, old[:blank] + b"x" + old[blank:], blank, blank, blank + 1)
    assert not whitespace_only(old, old[:blank] + b" \n" + old[blank:], blank, blank, blank + 2)
    crlf = b"x = 1\r\n\r\ny = 2\r\n"
    at = crlf.index(b"\r\n\r\n") + 2
    assert whitespace_only(crlf, crlf[:at] + b" " + crlf[at:], at, at, at + 1)


def test_reparse_start_goes_back_from_a_blank_line_only() -> None:
    old = b"import torch\n\n\nclass A:\n    pass\n\n\nx = 1\n"
    blank = old.index(b"\n\n\nx") + 2  # the second blank line above `x = 1`
    assert reparse_start(old, blank) == old.index(b"\nclass") + len(b"\nclass A:")  # the break before `    pass`
    inside = old.index(b"pass") + 2
    assert reparse_start(old, inside) == inside
    assert reparse_start(b"\n\nx = 1\n", 1) == 1  # nothing above: unchanged


def test_every_blank_line_whitespace_edit_of_a_real_file_gives_the_fresh_tree() -> None:
    text = _indented_blank_lines((EXAMPLES / "llama_block.py").read_text())
    lines = text.split("\n")
    checked = 0
    for number, line in enumerate(lines):
        if line.strip():
            continue
        for col in range(len(line) + 1):
            for inserted, deleted in ((" ", 0), ("\t", 0), ("", 1)):
                if col + deleted > len(line):
                    continue
                doc = DocumentAnalysis(text, "m.py")
                doc.edit((number, col), (number, col + deleted), inserted)
                _same_as_fresh(doc)
                checked += 1
    assert checked > 100


def test_random_edits_near_blank_lines_give_the_fresh_tree_and_analysis() -> None:
    """Characters, snippets and line breaks typed on and around blank lines, one after another:
    after every edit the incremental tree equals a fresh parse of what the analysis sees, and the
    analysis of that text equals a fresh analysis of it (a tree moved by `Tree.edit` has no node
    text, so the analysis must read the source instead)."""
    rng = random.Random(5)
    for name in ("gpt_decoder.py", "bert_encoder.py"):
        text = _indented_blank_lines((EXAMPLES / name).read_text())
        doc = DocumentAnalysis(text, "m.py")
        doc.result()
        for _ in range(150):
            lines = doc.text.split("\n")
            blanks = [i for i, line in enumerate(lines) if not line.strip()]
            number = rng.choice(blanks) if blanks and rng.random() < 0.8 else rng.randrange(len(lines))
            line = lines[number]
            col = rng.randint(0, len(line))
            if rng.random() < 0.7 or not line:
                doc.edit((number, col), (number, col), rng.choice([" ", "\t", "x", "def f(): pass", "\n", "#", "(", "    "]))
            else:
                doc.edit((number, col), (number, min(len(line), col + rng.randint(1, 4))), "")
            _same_as_fresh(doc)
            analysed = doc.analysed_text
            assert analysed is not None
            fresh = analyse(analysed.decode(), "m.py")
            assert doc.result().architectures == fresh.architectures


def test_lines_left_blank_and_broken_statements_give_the_fresh_tree() -> None:
    """Statements whose text is deleted (their line left blank) and statements broken by a typed `(` or
    `.` (blanked by salvage in the text the analysis reads), in real files, one after another: the
    incremental trees equal fresh parses."""
    rng = random.Random(11)
    for name in ("bert_encoder.py", "llama_block.py", "resnet_block.py"):
        doc = DocumentAnalysis((EXAMPLES / name).read_text(), "m.py")
        doc.result()
        for _ in range(60):
            lines = doc.text.split("\n")
            code = [i for i, line in enumerate(lines) if line.strip()]
            number = rng.choice(code)
            line = lines[number]
            indent = len(line) - len(line.lstrip())
            if rng.random() < 0.5:
                doc.edit((number, indent), (number, len(line)), "")  # the line left blank (indented)
            else:
                col = rng.randint(indent, len(line))
                doc.edit((number, col), (number, col), rng.choice(["(", ".", "(x"]))
            _same_as_fresh(doc)
            if rng.random() < 0.3:
                doc = DocumentAnalysis((EXAMPLES / name).read_text(), "m.py")
                doc.result()


def test_common_prefix_and_suffix_equal_the_naive_ones_across_blocks() -> None:
    """Compared block by block, then narrowed down: a difference in any block, at a block's edge, none at all
    (one text the other's prefix or suffix), texts shorter and longer than a block."""
    from adopter.analysis.parse import reparse
    from adopter.analysis.parse.reparse import common_prefix, common_suffix

    rng = random.Random(5)
    block = reparse._BLOCK
    for _ in range(300):
        a = bytes(rng.choice(b"ab\n") for _ in range(rng.choice((5, block - 1, block, 3 * block + 7))))
        b = bytearray(a)
        kind = rng.random()
        if kind < 0.4 and a:  # one byte changed: at a block's edge now and then
            at = rng.choice((0, len(a) - 1, min(block, len(a) - 1), min(block - 1, len(a) - 1), rng.randrange(len(a))))
            b[at] = ord("c")
        elif kind < 0.6:  # bytes inserted
            at = rng.randrange(len(a) + 1)
            b[at:at] = b"xyz"[: rng.randint(1, 3)]
        elif kind < 0.8:  # cut at either end
            b = b[rng.randrange(len(b) + 1):] if rng.random() < 0.5 else b[: rng.randrange(len(b) + 1)]
        new = bytes(b)
        p = next((k for k in range(min(len(a), len(new))) if a[k] != new[k]), min(len(a), len(new)))
        assert common_prefix(a, new) == p
        limit = min(len(a), len(new)) - p
        s = next((k for k in range(limit) if a[len(a) - 1 - k] != new[len(new) - 1 - k]), limit)
        assert common_suffix(a, new, limit) == s
        assert common_suffix(a, new, min(limit, 3)) == min(s, 3)
