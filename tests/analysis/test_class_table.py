"""`ClassTable` answers `mro` and `is_module` once per class and run: a repeated question records the very
dependencies the first walk recorded (the unit cache keys on them), without walking again."""

from __future__ import annotations

import pytest

from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText, new_parser
from adopter.analysis.scope.classes import ClassTable

TEXT = '''import torch
from torch import nn
from elsewhere import Base


class A(Base):
    def forward(self, x):
        return x


class B(A):
    pass


class C(nn.Module):
    pass


class D(Unknown, B):
    pass
'''


class _Unresolved:
    """A resolver that reads no other file: every imported base is left open."""

    def is_module_class(self, qualified: str, path: str | None) -> bool | None:
        return None


def _table() -> ClassTable:
    data = TEXT.encode()
    src = SourceText(data, new_parser().parse(data), "m.py")
    return ClassTable(ModuleSymbols(src, None), _Unresolved(), "m.py")  # type: ignore[arg-type]


@pytest.mark.pure_python  # a stand-in resolver and patched internals: the compiled ClassTable checks types and calls natively
def test_a_repeated_question_records_what_a_walk_records(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, walked = _table(), _table()
    walks: list[str] = []
    real = ClassTable._mro

    def counted(table: ClassTable, name: str) -> list[str]:
        if table is kept:
            walks.append(name)
        return real(table, name)

    monkeypatch.setattr(ClassTable, "_mro", counted)
    for _ in range(3):
        for name in ("B", "A", "C", "D", "Missing"):
            for kind in ("is_module", "mro"):
                walked._orders.clear()  # a table that walks at every question, as before the memo
                walked._modules.clear()
                answers = []
                for table in (kept, walked):
                    table.symbols.consulted = set()
                    answers.append((getattr(table, kind)(name), table.symbols.consulted))
                assert answers[0] == answers[1], (kind, name)
    assert walks == ["B", "A", "C", "D", "Missing"]  # once each
