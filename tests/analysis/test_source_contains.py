"""`SourceText.contains(node, word)` is `word in raw(node)` for every node and word, overlapping
occurrences and words at a node's very edges included."""

from __future__ import annotations

from pathlib import Path

from adopter.analysis.parse.source import SourceText, new_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORDS = [b"optim", b"Adam", b"opt_", b"cross_entropy", b"CrossEntropy", b"Sequential", b"self", b"aa", b"(", b"zzz"]


def test_contains_is_in_raw_for_every_node_of_the_examples() -> None:
    for path in sorted(EXAMPLES.glob("*.py")):
        data = path.read_bytes() + b"\nx = 'aaa'\nclass S(nn.Sequential):\n    pass\n"
        tree = new_parser().parse(data)
        src = SourceText(data, tree, str(path))
        stack = [tree.root_node]
        checked = 0
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            for word in WORDS:
                assert src.contains(node, word) == (word in src.raw(node)), (path.name, node.type, word)
                checked += 1
        assert checked > 1000
