"""The analyser keeps each class's loss, entry and stored methods by the class's text (`MethodReadings`):
an unchanged class is not read again, a changed one is, and what an edited document finds is what a fresh
analysis finds."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.analysis import analyser as analyser_module
from adopter.analysis.incremental import DocumentAnalysis

TEXT = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.proj(x))

    def encode(self, x):
        return self.proj(x) * 2


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 2)
        self.score = self.scored

    def forward(self, x):
        return self.out(x)

    def scored(self, x):
        return self.out(x).softmax(-1)
'''


def _counting(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name in ("entry_methods", "stored_methods"):
        real = getattr(analyser_module, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(analyser_module, name, counted)
    return calls


def _names(doc: DocumentAnalysis) -> list[str]:
    return [a.name for a in doc.result().chains] + [a.name for a in doc.result().architectures]


def test_an_unchanged_class_is_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    doc = DocumentAnalysis(TEXT, "m.py")
    doc.result()
    assert calls == Counter({"entry_methods": 2, "stored_methods": 2})
    doc.update(TEXT.replace("return self.out(x)\n", "return self.out(x) + 0\n"))  # Head changes, Encoder not
    doc.result()
    assert calls == Counter({"entry_methods": 3, "stored_methods": 3})
    doc.update(TEXT)  # both texts were read before: nothing is read again
    doc.result()
    assert calls == Counter({"entry_methods": 3, "stored_methods": 3})


def test_a_class_whose_text_changed_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """`encode` is an entry method until the class names it; `scored` a stored method until `__init__` calls it:
    the class whose text changed is read again (and only it), and its reading is a fresh analysis's."""
    doc = DocumentAnalysis(TEXT, "m.py")
    assert "Encoder.encode" in _names(doc) and "Head.scored" in _names(doc)
    calls = _counting(monkeypatch)
    named = TEXT.replace("return self.act(self.proj(x))", "return self.act(self.encode(x))")
    doc.update(named)
    assert "Encoder.encode" not in _names(doc)
    assert calls == Counter({"entry_methods": 1, "stored_methods": 1})  # Encoder's, read again; Head's kept
    called = TEXT.replace("self.score = self.scored", "self.score = self.scored(1)")
    doc.update(called)
    assert "Head.scored" not in _names(doc) and "Encoder.encode" in _names(doc)
    assert calls == Counter({"entry_methods": 2, "stored_methods": 2})  # Head's; Encoder's as two runs ago
    monkeypatch.undo()
    doc.update(named)
    assert doc.result() == analyse(named, "m.py")
    doc.update(called)
    assert doc.result() == analyse(called, "m.py")
    doc.update(TEXT)
    assert doc.result() == analyse(TEXT, "m.py")


OPTIMIZING = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)  # a module's forward is not read for optimizers: torch.optim

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class Trainer:
    def __init__(self, model):
        self.opt = torch.optim.Adam(model.parameters())

    def forward(self, x):
        return torch.optim.SGD(x)
'''


@pytest.mark.pure_python  # counts calls through a patched module attribute the compiled build calls natively
def test_optimizer_methods_are_read_once_per_class_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The methods that build optimizers are found per class (by its text and whether it is a module): an
    edit of one class reads it again, not the others, and the functions are a fresh analysis's."""
    calls: list[tuple[str, ...]] = []
    real = analyser_module.optimizer_methods

    def counted(classes: dict[str, Any], *args: Any) -> Any:
        calls.append(tuple(classes))
        return real(classes, *args)

    monkeypatch.setattr(analyser_module, "optimizer_methods", counted)
    doc = DocumentAnalysis(OPTIMIZING, "m.py")
    assert sorted(f.name for f in doc.result().functions if "." in f.name) == [
        "Model.configure_optimizers", "Trainer.__init__", "Trainer.forward"]
    assert calls == [("Model",), ("Trainer",)]
    edited = OPTIMIZING.replace("lr=1e-3", "lr=1e-4")
    doc.update(edited)
    found = doc.result()
    assert calls == [("Model",), ("Trainer",), ("Model",)]
    doc.update(OPTIMIZING)
    back = doc.result()
    assert calls == [("Model",), ("Trainer",), ("Model",)]  # both texts read before
    assert found == analyse(edited, "m.py") and back == analyse(OPTIMIZING, "m.py")
