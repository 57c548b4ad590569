"""A class's `__init__` is read once per file's analysis (`ClassTable.init_reading`; issue 20, spdinit).

The analysed class's bindings (`Analyser._init`), its thin submodules (`idioms.submodules._leaves` reads each
same-file submodule's `__init__`) and a method read as a forward (`idioms.method_forward`) each ran
`InitAnalysis(...).run()` on the same class of the same table: now the table keeps the reading, with the names it
noted (`ModuleSymbols.consulted`), which a reuse notes again.
"""

from __future__ import annotations

from collections import Counter

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.idioms.layer_subclasses import bind_layer_subclasses, bound_init
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText, new_parser
from adopter.analysis.scope import bindings
from adopter.analysis.scope.bindings import InitAnalysis, read_init
from adopter.analysis.scope.classes import ClassTable

# transformers' `BertOnlyMLMHead` shape, at fixture size: `Model` calls `self.head`, a thin chain of two layers
# (`_leaves` reads `Head.__init__`), and `Head` is analysed as a class of its own too.
SOURCE = '''
import torch.nn as nn
from torch.nn import functional as F


class Act(nn.GELU):
    pass


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.transform = nn.Linear(d, d)
        self.decoder = nn.Linear(d, 2 * d)
        self.act = Act()

    def forward(self, x):
        x = self.transform(x)
        x = self.decoder(x)
        return x


class Model(nn.Module):
    def __init__(self, d, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm = norm_layer(d)
        self.head = Head(d)

    def forward(self, x):
        return F.cross_entropy(self.head(self.norm(x)), x)
'''


def _no_file(path: str) -> str | None:
    """A reader that reads no other file."""
    return None


def _table() -> tuple[ClassTable, SourceText]:
    data = SOURCE.encode()
    src = SourceText(data, new_parser().parse(data), "m.py")
    return ClassTable(ModuleSymbols(src, None), ModuleResolver(_no_file, search_paths=[]), "m.py"), src


@pytest.mark.pure_python  # patches a method: the compiled InitAnalysis calls it natively
def test_each_init_is_read_once_per_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: Counter[str] = Counter()
    run = InitAnalysis.run

    def counted(self: InitAnalysis) -> object:
        reads[self.class_name] += 1
        return run(self)

    monkeypatch.setattr(bindings.InitAnalysis, "run", counted)
    mf = analyse(SOURCE, "m.py")
    assert {a.name for a in mf.architectures} >= {"Head", "Model"}
    model = next(a for a in mf.architectures if a.name == "Model").init
    assert model is not None and "head.decoder" in {b.attr for b in model.bindings}  # read through `Head`
    assert reads["Head"] == 1  # the class itself and `Model`'s thin submodule `self.head`: one reading
    assert reads["Model"] == 1


def test_the_kept_reading_is_a_fresh_reading() -> None:
    for name in ("Head", "Model", "Act"):
        table, src = _table()
        fresh = InitAnalysis(name, table, src).run()
        assert read_init(name, table, src) == fresh
        assert read_init(name, table, src) is read_init(name, table, src)
        assert bound_init(name, table, src) == bind_layer_subclasses(fresh, table, src)


@pytest.mark.parametrize("name", ["Head", "Model"])
def test_a_reuse_notes_what_a_reading_notes(name: str) -> None:
    table, src = _table()
    walked, _ = _table()
    walked.symbols.consulted = set()
    bind_layer_subclasses(InitAnalysis(name, walked, walked.symbols.src).run(), walked, walked.symbols.src)
    expected = walked.symbols.consulted
    assert expected  # the reading consults names (`nn`, the classes it binds)
    table.symbols.consulted = set()
    first = bound_init(name, table, src)
    assert table.symbols.consulted == expected
    table.symbols.consulted = set()  # a second reader: nothing read again, the same names noted
    assert bound_init(name, table, src) is first
    assert table.symbols.consulted == expected


def test_a_reading_done_unrecorded_is_done_again_when_recorded() -> None:
    table, src = _table()
    unrecorded = read_init("Model", table, src)  # nothing recorded: no names kept
    table.symbols.consulted = set()
    again = read_init("Model", table, src)
    assert again == unrecorded and again is not unrecorded
    assert table.symbols.consulted  # its names, noted by the reading done again
