"""The alias reading (`flow.aliases`) walks a forward's body once for all its aliasing statements (issue 22, speed38).

Each `name = <argument>` statement of a forward asked for the bindings of its two names and walked the whole body
again (474 asks of 306 bodies over check_speed's 202 files). The table of every local the body binds is now kept
per block in the file's `SourceText.memo`, so the second statement reads it; the answers are the ones a walk for
the two names gave.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.flow import aliases
from adopter.analysis.parse.source import Field, SourceText, new_parser

# slp 1.2.1 `modules/attention.py` (the module doc's example), rewritten at fixture size: two aliases of `keys`.
SOURCE = '''
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.k = nn.Linear(d, d)
        self.q = nn.Linear(d, d)
        self.v = nn.Linear(d, d)

    def forward(self, keys, queries=None):
        if queries is None:
            queries = keys
        values = keys
        residual = keys
        k, q, v = self.k(keys), self.q(queries), self.v(values)
        for i in range(2):
            v = v + k
        return (q @ k.transpose(-2, -1)).softmax(-1) @ v + residual
'''


def _forward_body() -> tuple[SourceText, object]:
    data = SOURCE.encode()
    tree = new_parser().parse(data)
    src = SourceText(data, tree, "m.py")
    cls = next(n for n in tree.root_node.named_children if n.type == "class_definition")
    body = cls.child_by_field_id(Field.BODY)
    forward = [n for n in body.named_children if n.type == "function_definition"][-1]
    return src, forward.child_by_field_id(Field.BODY)


def test_the_table_answers_as_a_walk_for_the_names() -> None:
    src, body = _forward_body()
    table = aliases._all_bindings(body, src)  # type: ignore[arg-type]
    for names in (frozenset({"values", "keys"}), frozenset({"residual", "keys"}), frozenset({"v", "i"}),
                  frozenset({"nothing", "queries"})):
        got = aliases._bindings(body, names, src)  # type: ignore[arg-type]
        assert {n: [(leaf.start_byte, leaf.end_byte) for leaf in leaves] for n, leaves in got.items()} == {
            n: [(leaf.start_byte, leaf.end_byte) for leaf in table[n]] for n in names if n in table}
    assert [src.text(leaf) for leaf in table["v"]] == ["v", "v"]  # the tuple target and the loop's `v = v + k`
    assert "i" in table  # a loop target binds too


@pytest.mark.pure_python
def test_one_walk_per_body(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[int] = []
    walk = aliases._all_bindings

    def counted(block, src):  # type: ignore[no-untyped-def]
        walks.append(block.start_byte)
        return walk(block, src)

    monkeypatch.setattr(aliases, "_all_bindings", counted)
    mf = analyse(SOURCE, "m.py")
    assert len(walks) == len(set(walks)) == 1  # `values = keys` and `residual = keys`: one walk of the body
    assert mf is not None
