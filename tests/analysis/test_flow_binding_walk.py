"""The alias reading's table of a body's bindings (`flow.aliases._all_bindings`) is read without `Node.parent`.

tree-sitter finds a node's parent by descending from the tree's root, so the walk's test "an assignment that is not
another assignment's value" (`a = b = c`: the outer one reads both targets) cost two such descents per assignment.
The walk now notes the ranges of an assignment's assignment children when it pops the outer one (before its
children), and reads each node's type once. Its table must equal the one the walk with `Node.parent` built, leaf
for leaf and in the same order; the reference walk below is the code before the change.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.flow import aliases
from adopter.analysis.flow.state import (
    CALL_OP,
    FUNCTION_OP,
    KEYWORD_ONLY,
    METHOD_OP,
    MODULE_OP,
    OPERATOR_OP,
    POSITIONAL,
    VAR_KEYWORD,
    VAR_POSITIONAL,
)
from adopter.analysis.names.assignments import read_assignment
from adopter.analysis.parse.source import Field, SourceText, new_parser
from adopter.dsl.types import OpKind, ParamKind

# Every kind of binding the table reads, chained assignments at several depths, and scopes it leaves out.
SOURCE = '''
def forward(self, x, mask=None):
    a = b = x
    c = d = e = self.proj(a)
    f, (g, h) = i = j = c, (d, e)
    k: int = 3
    l = m: int = 4
    n += 1
    o[0] = p = q.r = x
    for s, t in zip(a, b):
        u = v = s + t
        while (w := u) is not None:
            u = None
    ys = [z for z in range(3) if (zz := z)]
    with open(x) as fh, open(x) as (g1, g2):
        pass
    try:
        pass
    except ValueError as err:
        pass
    del a, b
    global gg
    nonlocal nn_
    def inner(q1):
        q2 = q3 = q1
    class Inner:
        q4 = q5 = 1
    fn = lambda q6: (q7 := q6)
    if mask is not None:
        a = b = mask
    else:
        c = d = (e := 2)
    return a
'''


def _reference(block: Node, src: SourceText) -> dict[str, list[Node]]:
    """`_all_bindings` as it was (f4cb1b49): the test for a chained assignment read through `Node.parent`."""
    found: dict[str, list[Node]] = {}
    stack = list(block.named_children)
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "class_definition", "lambda"):
            continue
        stack.extend(node.named_children)
        targets: list[Node] = []
        if node.type == "assignment" and node.parent is not None and node.parent.type != "assignment":
            read = read_assignment(node)
            targets = read[0] if read is not None else []
        elif node.type == "augmented_assignment" or node.type in ("for_statement", "for_in_clause"):
            left = node.child_by_field_id(Field.LEFT)
            targets = [left] if left is not None else []
        elif node.type == "named_expression":
            left = node.child_by_field_id(Field.NAME)
            targets = [left] if left is not None else []
        elif node.type in ("as_pattern_target", "delete_statement", "global_statement", "nonlocal_statement"):
            targets = [node]
        for t in targets:
            for leaf in aliases._leaves(t):
                found.setdefault(src.text(leaf), []).append(leaf)
    return found


def _body(source: str) -> tuple[SourceText, Node]:
    data = source.encode()
    tree = new_parser().parse(data)
    src = SourceText(data, tree, "m.py")
    function = next(n for n in tree.root_node.named_children if n.type == "function_definition")
    body = function.child_by_field_id(Field.BODY)
    assert body is not None
    return src, body


def _ranges(table: dict[str, list[Node]]) -> dict[str, list[tuple[int, int]]]:
    return {name: [(leaf.start_byte, leaf.end_byte) for leaf in leaves] for name, leaves in table.items()}


def test_the_table_is_the_parent_walks() -> None:
    src, body = _body(SOURCE)
    table = aliases._all_bindings(body, src)
    assert _ranges(table) == _ranges(_reference(body, src))
    assert list(table) == list(_reference(body, src))  # the same order of names, too


def test_a_chained_assignment_binds_each_target_once() -> None:
    src, body = _body(SOURCE)
    table = aliases._all_bindings(body, src)
    # `a = b = x`, `del a, b` and `a = b = mask`: each chain read once, through its outer assignment
    assert len(table["a"]) == 3 and len(table["b"]) == 3
    assert len(table["e"]) == 2  # `c = d = e = ...` and the walrus `(e := 2)`
    assert len(table["i"]) == 1 and len(table["j"]) == 1 and len(table["p"]) == 1
    assert "q2" not in table and "q4" not in table and "q7" not in table  # nested scopes are left out
    assert {"w", "zz", "z", "fh", "err", "gg", "nn_", "fn"} <= set(table)


def test_chained_assignments_in_a_line_of_statements() -> None:
    # many chains, nested in compound statements, so that ranges of different assignments sit side by side
    lines = ["def forward(x):"]
    for k in range(30):
        lines.append(f"    a{k} = b{k} = c{k} = x + {k}" if k % 2 else f"    if x:\n        a{k} = b{k} = x")
    src, body = _body("\n".join(lines) + "\n")
    table = aliases._all_bindings(body, src)
    assert _ranges(table) == _ranges(_reference(body, src))
    assert all(len(table[f"b{k}"]) == 1 for k in range(30))


def test_the_flow_kinds_are_the_members() -> None:
    # the module constants the flow emits and binds with (`flow.state`): each the member it stands for
    assert (MODULE_OP, FUNCTION_OP, METHOD_OP, OPERATOR_OP, CALL_OP) == (
        OpKind.MODULE, OpKind.FUNCTION, OpKind.METHOD, OpKind.OPERATOR, OpKind.CALL)
    assert {MODULE_OP, FUNCTION_OP, METHOD_OP, OPERATOR_OP, CALL_OP} == set(OpKind)
    assert (POSITIONAL, KEYWORD_ONLY, VAR_POSITIONAL, VAR_KEYWORD) == (
        ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY, ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)
    assert {POSITIONAL, KEYWORD_ONLY, VAR_POSITIONAL, VAR_KEYWORD} == set(ParamKind)
