"""What a run reads of the classes an edit did not change is carried from the last run.

A keystroke asks whether a class calls an open parameter or stores an activation (`calls_open_parameter`,
`stores_activation`) of the re-analysed class's new `__init__` reading only; the other classes keep the last
run's answers with their cached reading. An edit that flips either answer, and an edit undone (the class's
older reading restored), still read the class again with what the file's constructions pass: the document's
analysis equals a fresh one after each edit.

A class the edit did not change (`changed_names`) looks its method readings (`MethodReadings`) up with the
last run's bytes of its text, not a new slice of the same text; a class that changed and a renamed one read
their text afresh."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tree_sitter import Node

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


READINGS = """import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x)

    def encode(self, x):
        return self.proj(x) * 2

    class Inner(nn.Module):
        def forward(self, x):
            return x

        def extra(self, x):
            return x + 1


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 2)
        self.score = self.scored

    def forward(self, x):
        return self.out(x)

    def scored(self, x):
        return self.out(x).softmax(-1)
"""

# (old, new): each edit's document analysis must equal a fresh one
READING_EDITS = (
    ("return self.out(x)\n", "return self.out(x) + 0\n"),  # Head changes, Encoder (and Inner) do not
    ("return self.proj(x)\n", "return self.encode(x)\n"),  # Encoder changes: `encode` is no entry now
    ("self.score = self.scored\n", "self.score = self.scored(1)\n"),  # Head: `scored` no stored method
    ("return x + 1", "return x + 2"),  # Inner, inside Encoder
    ("class Head(nn.Module)", "class Heads(nn.Module)"),  # renamed
    ("return self.out(x) + 0\n", "return self.out(x) +\n"),  # broken: masked
    ("return self.out(x) +\n", "return self.out(x) + 0\n"),  # mended
    ("class Heads(nn.Module)", "class Head(nn.Module)"),
)


def test_method_readings_of_unchanged_classes_equal_a_fresh_analysis() -> None:
    doc = DocumentAnalysis(READINGS, "m.py")
    doc.result()
    for old, new in READING_EDITS:
        text = _edit(doc, old, new)
        got, fresh = doc.result(), analyse(text, "m.py")
        assert got == fresh, (old, new)
        assert strictly_equal(got, fresh)


def test_an_unchanged_class_is_looked_up_with_the_last_runs_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from adopter import _native
    from adopter.analysis.idioms.readings import MethodReadings

    if _native.state["active"]:  # compiled callers cannot be patched: run it again without them
        run_without_native(__file__, "test_an_unchanged_class_is_looked_up_with_the_last_runs_text")
        return
    seen: list[dict[bytes, bytes]] = []  # per run: each class's first line -> the text object asked with
    real = MethodReadings.methods

    def methods(self: MethodReadings, reading: str, text: bytes, found: dict[str, Node],
                find: Callable[[], list[tuple[str, Node]]]) -> list[tuple[str, Node]]:
        seen[-1].setdefault(text.split(b"\n", 1)[0].strip(), text)
        return real(self, reading, text, found, find)

    monkeypatch.setattr(MethodReadings, "methods", methods)

    def run(old: str | None = None, new: str = "") -> dict[bytes, bytes]:
        seen.append({})
        if old is not None:
            _edit(doc, old, new)
        doc.result()
        return seen[-1]

    doc = DocumentAnalysis(READINGS, "m.py")
    first = run()
    assert set(first) == {b"class Encoder(nn.Module):", b"class Inner(nn.Module):", b"class Head(nn.Module):"}
    second = run("return self.out(x)\n", "return self.out(x) + 0\n")
    assert second[b"class Encoder(nn.Module):"] is first[b"class Encoder(nn.Module):"]
    assert second[b"class Inner(nn.Module):"] is first[b"class Inner(nn.Module):"]
    assert second[b"class Head(nn.Module):"] == doc.text[doc.text.index("class Head"):].rstrip().encode()
    third = run("return x + 1", "return x + 2")  # Inner changes, and Encoder with it; Head does not
    assert third[b"class Head(nn.Module):"] is second[b"class Head(nn.Module):"]
    assert third[b"class Encoder(nn.Module):"] is not second[b"class Encoder(nn.Module):"]
    assert third[b"class Inner(nn.Module):"] is not second[b"class Inner(nn.Module):"]
    # Broken: the masked text (which parses) is analysed, and Encoder's part of it is as it was; mended again.
    fourth = run("return self.out(x) + 0\n", "return self.out(x) +\n")
    fifth = run("return self.out(x) +\n", "return self.out(x) + 0\n")
    assert fifth[b"class Encoder(nn.Module):"] is fourth[b"class Encoder(nn.Module):"] is third[b"class Encoder(nn.Module):"]
    assert fifth[b"class Head(nn.Module):"] is not fourth[b"class Head(nn.Module):"]
    sixth = run("class Head(nn.Module)", "class Heads(nn.Module)")  # a new name: its text read afresh
    assert sixth[b"class Heads(nn.Module):"] is not fifth[b"class Head(nn.Module):"]
