"""`ParsedText` cuts a module into top-level units and parses them alone: what it answers must equal what
one `ast.parse` of the whole text answers (the fix decisions of `check` depend on it byte for byte)."""

from __future__ import annotations

import ast
import re

import pytest

from adopter.analysis.parse.source import new_parser
from adopter.parsed import ParsedText, StatementIndex, outline, walk, walk_statements

SOURCE = '''#!/usr/bin/env python
"""Doc."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn as tnn, Tensor
import a.b.c
x = 1; y = 2


@decorator(
    arg=1,
)
class Block(tnn.Module):
    """A block."""

    def __init__(self) -> None:
        super().__init__()
        self.query = tnn.Linear(4, 4)
        self.key = tnn.Linear(4, 4)
        if True: self.flag = 1

    def forward(self, h: Tensor) -> Tensor:
        q = self.query(h)
        k = self.key(h)
        try:
            s = q @ k.transpose(-1, -2)
        except RuntimeError:
            s = q
        finally:
            pass
        if s is None:
            return h
        elif s.ndim:
            s = s + 1
        else:
            s = s - 1
        return F.softmax(s, dim=-1)


def helper(m):  # comment after the header
    return m.query, (m.
                     key)
# trailing comment
'''


def _walk_with_top(tree: ast.Module) -> list[tuple[ast.AST, ast.stmt]]:
    """The nodes of `tree` below its top-level statements in `ast.walk` order, each with that statement."""
    queue: list[tuple[ast.AST, ast.stmt]] = [(stmt, stmt) for stmt in tree.body]
    i = 0
    while i < len(queue):
        node, top = queue[i]
        i += 1
        queue.extend((child, top) for child in ast.iter_child_nodes(node))
    return queue


def _whole_index(text: str) -> StatementIndex:
    return StatementIndex(ast.parse(text).body, text.split("\n"))


def test_units_follow_the_top_level_statements() -> None:
    parsed = ParsedText.of(SOURCE)
    assert parsed.units is not None
    starts = [u.start for u in parsed.units]
    whole = ast.parse(SOURCE).body
    # `x = 1; y = 2` is one unit; a decorated class starts at its decorator.
    assert [u.start + 1 for u in parsed.units] == sorted({(getattr(s, "decorator_list", None) and
                                                          s.decorator_list[0].lineno) or s.lineno for s in whole})
    assert len(starts) == len(whole) - 1
    assert parsed.units[-2].defines("class_definition", "Block")
    assert parsed.units[-1].defines("function_definition", "helper")


def test_a_restricted_module_walks_in_the_whole_modules_order() -> None:
    parsed = ParsedText.of(SOURCE)
    whole = ast.parse(SOURCE)
    assert parsed.units is not None
    for lines in ([20], [44, 20], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], list(range(60))):
        picked = [u for u in parsed.units if any(u.start <= line <= u.end for line in lines)]
        expected = [n for n, top in _walk_with_top(whole) if any(u.start < top.lineno <= u.end + 1 for u in picked)]
        restricted = parsed.nodes(parsed.module(lines))[1:]
        assert [ast.dump(n, include_attributes=True) for n in restricted] == \
            [ast.dump(n, include_attributes=True) for n in expected]
    assert ast.dump(parsed.module()) == ast.dump(whole)


def test_imports_and_statement_blocks_equal_the_whole_parse() -> None:
    parsed = ParsedText.of(SOURCE)
    assert parsed.imports() == ParsedText(SOURCE, None).imports()
    assert parsed.imports()[("torch", "nn")] == "tnn"
    whole = _whole_index(SOURCE)
    n = len(SOURCE.split("\n"))
    for first in range(n):
        for last in range(first, min(n, first + 12)):
            assert parsed.statement_index(first, last).region(first, last) == whole.region(first, last), (first, last)


def test_a_text_that_does_not_parse_raises_the_whole_texts_error() -> None:
    broken = SOURCE.replace("k = self.key(h)", "k = self.key(h))")
    with pytest.raises(SyntaxError) as cut:
        ParsedText.of(broken).module([0])
    with pytest.raises(SyntaxError) as whole:
        ast.parse(broken)
    assert (cut.value.msg, cut.value.lineno) == (whole.value.msg, whole.value.lineno)
    assert ParsedText.of(broken).imports() == {}
    assert ParsedText.of(broken).parses() == f"the file does not parse: {whole.value.msg} (line {whole.value.lineno})"


def test_line_breaks_the_cut_cannot_follow_read_the_text_whole() -> None:
    text = "import os\rimport sys\nclass A:\n    pass\n"
    parsed = ParsedText.of(text)
    assert parsed.units is None
    assert parsed.module([3]) is parsed.module() and ast.dump(parsed.module()) == ast.dump(ast.parse(text))


def test_a_text_without_either_keyword_skips_the_python_2_query() -> None:
    """`outline` runs the whole-tree query only when the text holds `print` or `exec`: the same units."""
    text = "import os\n\n\ndef show(x):\n    return x\n\n\nclass A:\n    pass\n"
    tree = new_parser().parse(text.encode())
    assert outline(tree, text) == outline(tree) and outline(tree, text)[1]
    printing = text.replace("return x", "print(x)")
    tree = new_parser().parse(printing.encode())
    assert outline(tree, printing) == outline(tree) and outline(tree, printing)[1]


def test_the_statement_walk_is_the_full_walk_without_expressions() -> None:
    tree = ast.parse(SOURCE + "\nmatch x:\n    case 1:\n        y = lambda: [z for z in ()]\n")
    holders = (ast.Module, ast.stmt, ast.excepthandler, ast.match_case)
    assert walk_statements(tree) == tuple(n for n in walk(tree) if isinstance(n, holders))


@pytest.mark.parametrize("statement", ["print x", "exec code"])
def test_python_2_statements_read_the_text_whole(statement: str) -> None:
    text = f"import os\n\n\ndef show(x):\n    {statement}\n\n\nclass A:\n    pass\n"
    parsed = ParsedText.of(text)
    assert parsed.units is None  # tree-sitter reads `print x` without an error; Python 3 does not
    with pytest.raises(SyntaxError):
        parsed.module([7])
    assert parsed.imports() == {}


def test_a_segment_is_asts_source_segment() -> None:
    # Texts without a `\r` are read from `lines` (speed6), the others as `ast` splits them.
    for text in (SOURCE, "x = 'é' + b\r\ny = (1,\r 2)\n", "a = [1,\r\n  2]\nb = f(\x0c3)\n",
                 "s = ('é',\n     'ü' +\n  f(1))\nt = g(\x0c3,\n  4)", "\n\nz = [\n\n 1]\n"):
        parsed = ParsedText(text, None)
        for node in ast.walk(ast.parse(text)):
            assert parsed.segment(node) == ast.get_source_segment(text, node)
    assert ParsedText(SOURCE, None).segment(ast.Load()) is None


WORDS = "from a.b import c\nx = 3abc + a1b\n  from  torch . nn import y\nfrom m importx\n_q = é_z\n"


@pytest.mark.parametrize("text", [SOURCE, WORDS, "x = 1\n", "3from x import y"])
def test_takes_answers_as_the_list_of_words(text: str) -> None:
    parsed = ParsedText(text, None)
    asked = set(re.findall(r"\w+", text)) | {
        "from", "import", "_", "torch", "nn", "a", "b", "c", "abc", "a1b", "importx", "m", "z", "é_z", "3x",
        "x.y", "", "Block", "tnn", "nothing_here"}
    assert {w for w in asked if parsed.takes(w)} == {w for w in asked if w in parsed.taken()}


def test_class_headers_read_as_the_whole_module() -> None:
    text = SOURCE + "class C(\n    Block,  # c\n    tnn.Module, metaclass=M): z = {1: 2}\n\n# after\n"
    parsed = ParsedText.of(text)
    assert parsed.units is not None
    whole = [c for c in ast.parse(text).body if isinstance(c, ast.ClassDef)]
    headers = parsed.class_headers()
    assert [(h.name, h.lineno, [ast.unparse(b) for b in h.bases], [ast.unparse(d) for d in h.decorator_list],
             [ast.unparse(k) for k in h.keywords]) for h, _ in headers] == \
        [(c.name, c.lineno, [ast.unparse(b) for b in c.bases], [ast.unparse(d) for d in c.decorator_list],
          [ast.unparse(k) for k in c.keywords]) for c in whole]
    lines = text.split("\n")
    for (_, end), c in zip(headers, whole, strict=True):  # past the last statement: comments and blanks only
        assert c.end_lineno is not None and c.end_lineno <= end
        assert all(not line.strip() or line.strip().startswith("#") for line in lines[c.end_lineno:end])
    uncut = ParsedText(text, None)  # no tree-sitter tree: read whole
    assert [(h.name, end) for h, end in uncut.class_headers()] == [(c.name, c.end_lineno) for c in whole]


PYTHON2 = ["print x\n", "print >>f, x\n", "def f():\n    print x,\n", "exec code\n", 'exec "x = 1" in d\n',
           "if a: print b\n", "x = 1; print y\n", "é = 1\nprint é\n", "class A:\n    def f(self):\n        exec c\n"]
PYTHON3 = ["print(x)\n", "x.print\n", "# print x\n", '"print x"\n', "fingerprint = x\n", "exec(code)\n",
           "print_x = 1\n", "é = 1; print(é)\n", "def print_(): pass\n", "x = 'exec'\nprint\n", "y = print\n"]


@pytest.mark.parametrize("text", PYTHON2 + PYTHON3)
def test_python2_statements_are_found_at_their_keywords_as_by_the_whole_tree_query(text: str) -> None:
    """`_python2` with the text's bytes looks at the tokens where the keywords stand (speed6): the same answer as
    the query over the whole tree."""
    from adopter.parsed import _python2

    data = text.encode("utf-8")
    root = new_parser().parse(data).root_node
    assert not root.has_error
    assert _python2(root, data) == _python2(root) == (text in PYTHON2)
    assert (ParsedText.of(text).units is None) == (text in PYTHON2)
