"""Dependency fingerprints carried from one analysis of a document to the next
(`adopter.analysis.names.carry`): every fingerprint a run holds, carried or computed, equals the one a
fresh symbol table of the same text computes, and the result equals a fresh analysis, through random
edits that move, rename, shadow and break module-level names."""

from __future__ import annotations

import random
from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.names.carry import Layout, changed_names
from adopter.analysis.names.symbols import ModuleSymbols, base_name
from adopter.analysis.parse.source import SourceText, new_parser

from .helpers import run_without_native, strictly_equal
from .test_incremental import SOURCE, _replace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _fresh_fingerprints_agree(doc: DocumentAnalysis) -> int:
    """Every fingerprint the document's analyser holds equals a fresh computation on the text it analysed."""
    analyser = doc._analyser
    data, tree = analyser.read or (None, None)
    assert data is not None and tree is not None
    symbols = ModuleSymbols(SourceText(data, tree, doc.path), analyser.resolver.package_of(doc.path))
    held = analyser._fingerprints
    for key, value in held.items():
        assert symbols.fingerprint(key) == value, key
    return len(held)


def _check(doc: DocumentAnalysis, text: str) -> None:
    got = doc.result()
    fresh = analyse(text, doc.path)
    assert got == fresh
    assert strictly_equal(got, fresh)
    _fresh_fingerprints_agree(doc)


def test_base_name() -> None:
    assert base_name("BertModel") == "BertModel"
    assert base_name("method:BertModel.forward") == "BertModel"
    assert base_name("method-shape:A.forward") == "A"
    assert base_name("method-dropout:A.forward") == "A"
    assert base_name("method?:A.__init__") == "A"
    assert base_name("class-head:A") == "A"
    assert base_name("class?:A") == "A"


def _layout(text: str) -> Layout:
    data = text.encode()
    tree = new_parser().parse(data)
    return Layout.of(data, ModuleSymbols(SourceText(data, tree, "m.py"), None))


def test_changed_names_are_the_edited_moved_and_shadowed_ones() -> None:
    old = _layout(SOURCE)
    assert changed_names(old, old) == set()
    # An edit inside class C: C only (A, B and helper lie before it, unchanged).
    assert changed_names(old, _layout(SOURCE.replace("torch.relu(x)", "torch.tanh(x)"))) == {"C"}
    # An edit in helper: helper; A, B, C moved by a byte each but keep their start points.
    assert changed_names(old, _layout(SOURCE.replace("x * 2", "x * 22"))) == {"helper"}
    # A blank line added after helper (its node ends before it): every later definition starts a line lower.
    assert changed_names(old, _layout(SOURCE.replace("x * 2", "x * 2\n"))) == {"A", "B", "C"}
    # A later class of the same name shadows B; a new import changes `F`.
    assert "B" in changed_names(old, _layout(SOURCE + "\n\nclass B(nn.Module):\n    pass\n"))
    assert "np" in changed_names(old, _layout("import numpy as np\n" + SOURCE))
    assert "F" in changed_names(old, _layout(SOURCE.replace("import torch.nn.functional as F", "import torch.nn as F")))


def test_an_edit_of_one_class_computes_only_its_fingerprints_again() -> None:
    from adopter import _native

    if _native.state["active"]:  # compiled methods cannot be patched: run it again without them
        run_without_native(__file__, "test_an_edit_of_one_class_computes_only_its_fingerprints_again")
        return
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    computed: list[str] = []
    original = ModuleSymbols._fingerprint

    def counting(self: ModuleSymbols, name: str) -> tuple[object, ...]:
        computed.append(name)
        return original(self, name)

    ModuleSymbols._fingerprint = counting  # type: ignore[method-assign]
    try:
        text = _replace(doc, "torch.relu(x)", "torch.tanh(x)")
        doc.result()
    finally:
        ModuleSymbols._fingerprint = original  # type: ignore[method-assign]
    _check(doc, text)
    assert doc.reanalysed == ("class C",)
    assert computed and all(base_name(n) == "C" for n in computed), computed


def test_an_edit_of_a_base_class_still_reanalyses_its_subclass() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    text = _replace(doc, "self.fc = nn.Linear(2, 2)", "self.fc = nn.Linear(2, 3)")
    _check(doc, text)
    assert {"class A", "class B"} <= set(doc.reanalysed)


def _random_edit(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(8)
    i = rng.randrange(len(lines))
    if kind == 0:  # a character typed
        col = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:col] + rng.choice(["(", ")", ":", "x", " ", ".", "_", "1", "="]) + lines[i][col:]
    elif kind == 1 and lines[i]:  # a character deleted
        col = rng.randrange(len(lines[i]))
        lines[i] = lines[i][:col] + lines[i][col + 1 :]
    elif kind == 2:  # a line deleted
        del lines[i]
    elif kind == 3:  # a line duplicated
        lines.insert(i, lines[i])
    elif kind == 4:  # a class renamed (or a new name shadowing an earlier class)
        heads = [k for k, line in enumerate(lines) if line.startswith("class ")]
        if heads:
            k = rng.choice(heads)
            lines[k] = lines[k].replace("class ", "class " + rng.choice(["X", "Y", ""]), 1)
    elif kind == 5:  # a class definition copied to the end (shadows the first)
        heads = [k for k, line in enumerate(lines) if line.startswith("class ")]
        if heads:
            k = rng.choice(heads)
            end = next((j for j in range(k + 1, len(lines)) if lines[j][:1].isalpha()), len(lines))
            lines += ["", "", *lines[k:end]]
    elif kind == 6:  # an import added or changed
        lines.insert(0, rng.choice(["import torch.nn.functional as F", "from torch import nn as F",
                                    "from torch.nn import Linear as helper", "import math"]))
    else:  # a blank line inserted
        lines.insert(i, "")
    return "\n".join(lines)


def test_random_edits_carry_only_valid_fingerprints() -> None:
    rng = random.Random(7)
    sources = [SOURCE] + [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.py"))[:3]]
    carried = 0
    for source in sources:
        doc = DocumentAnalysis(source, "m.py")
        doc.result()
        text = source
        for _ in range(60):
            text = _random_edit(text, rng) if rng.random() < 0.85 else source
            doc.update(text)
            _check(doc, text)
            carried += bool(doc._analyser._changed is not None)
    assert carried > 100  # most states parse, and carry from the state before


def test_common_prefix_and_suffix_equal_the_naive_ones() -> None:
    from adopter.analysis.parse.reparse import common_prefix, common_suffix

    rng = random.Random(3)
    for _ in range(300):
        a = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(12)))
        b = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(12)))
        p = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        assert common_prefix(a, b) == p
        limit = min(len(a), len(b)) - p
        s = next((k for k in range(limit) if a[len(a) - 1 - k] != b[len(b) - 1 - k]), limit)
        assert common_suffix(a, b, limit) == s
