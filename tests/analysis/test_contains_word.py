"""`SourceText.contains_word`: whether a node's text holds a word whole, the gate `function_reading` reads a
function's classes behind (issue 20, spdana). Checked against a regular expression over the file, and against the
class definitions themselves: every node above one holds the word `class`."""

from __future__ import annotations

import random
import re

from adopter.analysis.parse.source import SourceText, descendants, new_parser

_WHOLE = re.compile(rb"(?<![A-Za-z0-9_])class(?![A-Za-z0-9_])")

PIECES = [
    "def f(x):\n", "    class A:\n", "        pass\n", "    y = x.classifier\n", "    config_class = 1\n",
    "    # a class here\n", "    return x\n", "class B(nn.Module):\n", "    def g(self):\n", "        class C: pass\n",
    "        s = 'class'\n", "        t = subclass_of(x)\n", "    @classmethod\n", "x=1;class D: pass\n",
    "é_class = 2\n", "\n",
]


def _texts() -> list[bytes]:
    rng = random.Random(20)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 14))).encode() for _ in range(400)]


def test_contains_word_is_a_whole_word_search_inside_the_node() -> None:
    for data in _texts():
        src = SourceText(data, new_parser().parse(data), None)
        found = [m.start() for m in _WHOLE.finditer(data)]
        for node in descendants(src.tree.root_node):
            expected = any(node.start_byte <= at and at + 5 <= node.end_byte for at in found)
            assert src.contains_word(node, b"class") == expected, (data, node)


def test_every_node_holding_a_class_definition_holds_the_word() -> None:
    for data in _texts():
        src = SourceText(data, new_parser().parse(data), None)
        for node in descendants(src.tree.root_node):
            if node.type == "class_definition":
                up = node
                while up is not None:
                    assert src.contains_word(up, b"class"), (data, up)
                    up = up.parent
