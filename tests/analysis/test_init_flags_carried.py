"""A keystroke asks whether a class calls an open parameter or stores an activation (`calls_open_parameter`,
`stores_activation`) of the re-analysed class's new `__init__` reading only; the other classes keep the last
run's answers with their cached reading. An edit that flips either answer, and an edit undone (the class's
older reading restored), still read the class again with what the file's constructions pass: the document's
analysis equals a fresh one after each edit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adopter.analysis import analyse
from adopter.analysis.chains import caller_layers, passed_layers
from adopter.analysis.incremental import DocumentAnalysis
from adopter.dsl.types import Ctor, Init

from .helpers import run_without_native, strictly_equal

SOURCE = '''import torch.nn as nn


class ConvNorm(nn.Module):
    def __init__(self, c, norm_layer):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, bias=False)
        self.norm = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.norm(self.conv(x))


class FeedForward(nn.Module):
    def __init__(self, d, act):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ConvNorm(4, nn.GroupNorm)
        self.b = FeedForward(4, nn.GELU())

    def forward(self, x):
        return self.b(self.a(x))
'''


def _callees(result: object, name: str, attr: str) -> list[str]:
    arch = next(a for a in result.architectures if a.name == name)  # type: ignore[attr-defined]
    return sorted(b.value.callee for b in arch.init.bindings if b.attr == attr and isinstance(b.value, Ctor))


def _edit(doc: DocumentAnalysis, old: str, new: str) -> str:
    text = doc.text
    i = text.index(old)
    line = text[:i].count("\n")
    col = i - (text.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + len(old)), new)
    return doc.text


# (old, new, ConvNorm's norm callees, FeedForward's act callees)
EDITS = (
    ("nn.BatchNorm2d(c)", "norm_layer(c)", ["torch.nn.GroupNorm"], ["torch.nn.ReLU"]),  # calls an open one now
    ("self.act = nn.ReLU()", "self.act = act", ["torch.nn.GroupNorm"], ["torch.nn.GELU"]),  # stores it now
    ("nn.Linear(d, d)", "nn.Linear(d, 2 * d)", ["torch.nn.GroupNorm"], ["torch.nn.GELU"]),  # neither flips
    ("norm_layer(c)", "nn.BatchNorm2d(c)", ["torch.nn.BatchNorm2d"], ["torch.nn.GELU"]),  # calls none now
    ("nn.BatchNorm2d(c)", "norm_layer(c)", ["torch.nn.GroupNorm"], ["torch.nn.GELU"]),  # undone: older reading
    ("self.act = act", "self.act = nn.ReLU()", ["torch.nn.GroupNorm"], ["torch.nn.ReLU"]),
    ("self.act = nn.ReLU()", "self.act = act", ["torch.nn.GroupNorm"], ["torch.nn.GELU"]),  # undone again
)


def test_edits_that_flip_the_flags_read_the_class_again_with_what_the_file_passes() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    first = doc.result()
    assert _callees(first, "ConvNorm", "norm") == ["torch.nn.BatchNorm2d"]
    assert _callees(first, "FeedForward", "act") == ["torch.nn.ReLU"]
    for old, new, norm, act in EDITS:
        text = _edit(doc, old, new)
        got, fresh = doc.result(), analyse(text, "m.py")
        assert got == fresh
        assert strictly_equal(got, fresh)
        assert _callees(got, "ConvNorm", "norm") == norm, (old, new)
        assert _callees(got, "FeedForward", "act") == act, (old, new)


def test_a_keystroke_asks_the_flags_of_the_re_analysed_class_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from adopter import _native
    from adopter.analysis import analyser

    if _native.state["active"]:  # compiled callers cannot be patched: run it again without them
        run_without_native(__file__, "test_a_keystroke_asks_the_flags_of_the_re_analysed_class_only")
        return
    asked: list[tuple[str | None, ...]] = []

    def counting(real: Callable[[Init | None], bool]) -> Callable[[Init | None], bool]:
        def ask(init: Init | None) -> bool:  # each `__init__` reading named by its first two bindings
            asked.append(tuple(b.attr for b in init.bindings)[:2] if init is not None else ())
            return real(init)
        return ask

    monkeypatch.setattr(analyser, "calls_open_parameter", counting(caller_layers.calls_open_parameter))
    monkeypatch.setattr(analyser, "stores_activation", counting(passed_layers.stores_activation))
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    assert set(asked) == {("conv", "norm"), ("fc", "act"), ("a", "b")}
    asked.clear()
    _edit(doc, "nn.Linear(d, d)", "nn.Linear(d, 3 * d)")
    doc.result()
    assert {"class FeedForward", "class Net"} == set(doc.reanalysed) & {"class ConvNorm", "class FeedForward", "class Net"}
    assert sorted(asked) == [("a", "b"), ("a", "b"), ("fc", "act"), ("fc", "act")]  # Net binds a FeedForward
    asked.clear()
    _edit(doc, "return self.b(", "return  self.b(")
    doc.result()
    assert "class Net" in doc.reanalysed
    assert set(asked) <= {("a", "b")}  # ConvNorm and FeedForward are taken from the cache, with their answers
