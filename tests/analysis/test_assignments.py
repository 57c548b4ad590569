"""The assignment walk shared by `__init__` bindings and `forward` data flow: targets, leaves, pairs."""

from __future__ import annotations

import pytest
from tree_sitter import Node

from adopter.analysis.names.assignments import element_pairs, read_assignment, target_leaves
from adopter.analysis.parse.source import SourceText, new_parser


def parse(line: str) -> tuple[tuple[list[Node], Node] | None, SourceText]:
    data = line.encode()
    tree = new_parser().parse(data)
    src = SourceText(data, tree, None)
    stmt = tree.root_node.named_children[0]
    assert stmt.type == "expression_statement", stmt.type
    return read_assignment(stmt.named_children[0]), src


def texts(nodes: list[Node], src: SourceText) -> list[str]:
    return [src.text(n) for n in nodes]


# (assignment, the targets as written, the value, the first target's leaves, pairs or None)
CASES = [
    ("a = x", ["a"], "x", ["a"], None),
    ("a = b = f(x)", ["a", "b"], "f(x)", ["a"], None),
    ("a, b = x, y", ["a, b"], "x, y", ["a", "b"], [("a", "x"), ("b", "y")]),
    ("(a, b) = (x, y)", ["(a, b)"], "(x, y)", ["a", "b"], [("a", "x"), ("b", "y")]),
    ("[a, b] = x, y", ["[a, b]"], "x, y", ["a", "b"], [("a", "x"), ("b", "y")]),
    ("a, *b = x, y", ["a, *b"], "x, y", ["a", "b"], [("a", "x"), ("b", "y")]),
    ("self.a, x[0] = p, q", ["self.a, x[0]"], "p, q", ["self.a", "x[0]"], [("self.a", "p"), ("x[0]", "q")]),
    # Unpacked at run time, or not element for element: no pairs, the value is bound whole.
    ("a, b = x.chunk(2)", ["a, b"], "x.chunk(2)", ["a", "b"], None),
    ("a, b = x, y, z", ["a, b"], "x, y, z", ["a", "b"], None),
    ("a, (b, c) = x, (y, z)", ["a, (b, c)"], "x, (y, z)", ["a", "b", "c"], None),
    ("a, b = [x, y]", ["a, b"], "[x, y]", ["a", "b"], None),
    ("a = x, y", ["a"], "x, y", ["a"], None),
    ("a, b = c, d = x, y", ["a, b", "c, d"], "x, y", ["a", "b"], [("a", "x"), ("b", "y")]),
]


@pytest.mark.parametrize(("code", "targets", "value", "leaves", "pairs"), CASES, ids=[c[0] for c in CASES])
def test_the_walk_reads_targets_value_leaves_and_pairs(
    code: str, targets: list[str], value: str, leaves: list[str], pairs: list[tuple[str, str]] | None
) -> None:
    read, src = parse(code)
    assert read is not None
    assert texts(read[0], src) == targets
    assert src.text(read[1]) == value
    flat = target_leaves(read[0][0])
    assert texts(flat, src) == leaves
    got = element_pairs(flat, read[1])
    assert (None if got is None else [(src.text(t), src.text(v)) for t, v in got]) == pairs


def test_an_annotation_without_a_value_is_no_assignment() -> None:
    read, _ = parse("x: int")
    assert read is None
    annotated, src = parse("x: int = 3")
    assert annotated is not None and texts(annotated[0], src) == ["x"]
