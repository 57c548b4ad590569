"""`adopter.engine.moved`: an edit that only moves a class's code along a line (a space between tokens, a
letter in a string) leaves its findings those of matching it afresh, at the new columns; the language
server's `UnitMatcher` then carries them instead of matching the class again. Any other change (an op, a
name, a line moved) is matched as before."""

from __future__ import annotations

from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Architecture, ModuleFile
from adopter.engine import check, sites
from adopter.engine.moved import carried, moved_points
from adopter.session import UnitMatcher, load_context

ATTENTION = '''
import math
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)
        self.note = "attention"

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.size).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query = self.split(self.query(hidden_states))
        key = self.split(self.key(hidden_states))
        value = self.split(self.value(hidden_states))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        return torch.matmul(probs, value)
'''

LINE = "        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)"

# (edited line, whether the class's code only moved along it)
EDITS = [
    ("        scores =  torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)", True),
    ("        scores = torch.matmul( query, key.transpose(-1, -2)) / math.sqrt(self.size)", True),
    ("        scores = torch.matmul(query, key.transpose(-1, -2))  /  math.sqrt(self.size)", True),
    ("        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size) ", True),
    ("        scores = torch.matmul(query, key.transpose(-1,-2)) / math.sqrt(self.size)", True),
    ("        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.sizes)", False),
    ("        scores = torch.matmul(querys, key.transpose(-1, -2)) / math.sqrt(self.size)", False),
    ("        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(self.size)", False),
    ("        scores = torch.matmul(query, key.transpose(-1, -2)) * math.sqrt(self.size)", False),
    ("        score = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)", False),
    ("\n" + LINE, False),  # every line below moved down
]


@pytest.fixture(scope="module")
def context() -> Any:
    found = load_context()
    assert found.environment is not None
    return found


def _arch(text: str) -> Architecture:
    return next(a for a in analyse(text, "m.py").architectures if a.name == "SelfAttention")


def _check(arch: Architecture, context: Any) -> Any:
    return check(ModuleFile("m.py", (arch,)), context.rules, context.environment)


@pytest.mark.parametrize(("line", "moved"), EDITS)
def test_findings_carried_are_those_of_a_fresh_match(line: str, moved: bool, context: Any) -> None:
    assert LINE in ATTENTION
    old, new = _arch(ATTENTION), _arch(ATTENTION.replace(LINE, line))
    points = moved_points(old, new)
    assert (points is not None) == moved
    if points is None:
        return
    before, after = _check(old, context), _check(new, context)
    assert before.findings  # the attention chain is a site: there are spans to carry
    assert before.findings != after.findings or line.endswith(" ")  # columns moved in the findings
    assert carried(tuple(before.findings), points) == tuple(after.findings)
    assert carried(tuple(before.problems), points) == tuple(after.problems)


def test_points_that_would_change_order_are_not_carried() -> None:
    from adopter.dsl.types import Span

    points = moved_points((Span(1, 0, 1, 4), Span(1, 6, 1, 9)), (Span(1, 0, 1, 7), Span(1, 6, 1, 9)))
    assert points is None  # the first span's end passes the second's start: order not kept
    points = moved_points((Span(1, 0, 1, 4), Span(1, 6, 1, 9)), (Span(1, 0, 1, 4), Span(1, 7, 1, 10)))
    assert points is not None
    assert carried((Span(1, 6, 1, 4),), points) == (Span(1, 7, 1, 4),)
    assert carried((Span(1, 5, 1, 9),), points) is None  # an end the map does not cover


@pytest.mark.pure_python
def test_the_server_does_not_match_a_class_that_only_moved(context: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from adopter.analysis.incremental import DocumentAnalysis

    matched: list[str] = []
    original = sites._match_scope

    def counted(scope_name: str, *args: Any, **kwargs: Any) -> Any:
        matched.append(scope_name)
        return original(scope_name, *args, **kwargs)

    monkeypatch.setattr(sites, "_match_scope", counted)
    doc, matcher = DocumentAnalysis(ATTENTION, "m.py"), UnitMatcher()
    first = matcher.match(doc.result(), context)
    assert first[0] and matched == ["SelfAttention"]
    for line, moved in EDITS:
        text = ATTENTION.replace(LINE, line)
        fresh = UnitMatcher(remember=False).match(analyse(text, "m.py"), context)
        matched.clear()
        doc.update(text)
        assert matcher.match(doc.result(), context) == fresh
        assert matched == ([] if moved else ["SelfAttention"]), line
        doc.update(ATTENTION)  # back: the analysis hands back the unit before, its findings kept
        matched.clear()
        assert matcher.match(doc.result(), context) == first
        assert matched == []


@pytest.mark.pure_python
def test_an_init_edit_after_a_carried_one_finds_the_rules_results(context: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from adopter.analysis.incremental import DocumentAnalysis

    matched: list[str] = []
    original = sites._rule_findings

    def counted(rule: Any, *args: Any) -> Any:
        matched.append(rule.id)
        return original(rule, *args)

    monkeypatch.setattr(sites, "_rule_findings", counted)
    doc, matcher = DocumentAnalysis(ATTENTION, "m.py"), UnitMatcher()
    matcher.match(doc.result(), context)
    assert "f09-fused-qkv" in matched
    moved = ATTENTION.replace(LINE, EDITS[0][0])
    doc.update(moved)
    matched.clear()
    matcher.match(doc.result(), context)
    assert matched == []  # carried
    edited = moved.replace('self.note = "attention"', 'self.note = "self-attention"')
    fresh = UnitMatcher(remember=False).match(analyse(edited, "m.py"), context)
    doc.update(edited)
    matched.clear()
    assert matcher.match(doc.result(), context) == fresh
    assert matched == []  # no rule asked about `note`: every result carried with the forward holds


BRANCHED = '''
import math
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.size).permute(0, 2, 1, 3)

    def forward(self, hidden_states, cached=None):
        # project the states
        query = self.split(self.query(hidden_states))
        if cached is None:
            key = self.split(self.key(hidden_states))
        else:
            key = torch.cat([cached, self.split(self.key(hidden_states))], dim=2)
        value = self.split(self.value(hidden_states))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        return torch.matmul(probs, value)
'''

COMMENT = "        # project the states"


@pytest.mark.parametrize("comment", ["        # projects the states", "        #  project the states",
                                     "        # project the state"])
def test_an_edit_before_an_if_around_inlined_calls_is_carried(comment: str, context: Any) -> None:
    """The `if` around `self.split(...)` names it by its start byte (`Forward.applications`), which the edit
    above moves: the byte is mapped like a span's end, and the findings carried are a fresh match's."""
    old = next(a for a in analyse(BRANCHED, "m.py").architectures if a.name == "SelfAttention")
    new = next(a for a in analyse(BRANCHED.replace(COMMENT, comment), "m.py").architectures
               if a.name == "SelfAttention")
    assert old.forward is not None and new.forward is not None
    paths = [path for _, _, _, path in old.forward.applications if path]
    assert paths and paths != [path for _, _, _, path in new.forward.applications if path]  # the bytes moved
    points = moved_points(old, new)
    assert points is not None
    before, after = _check(old, context), _check(new, context)
    assert before.findings
    assert carried(tuple(before.findings), points) == tuple(after.findings)
    assert carried(tuple(before.problems), points) == tuple(after.problems)


def test_applications_whose_ifs_are_told_apart_differently_are_not_carried() -> None:
    """The `if`s' bytes are mapped one-to-one: every byte moved alike is carried; one `if` becoming two, or
    the alternative of a call changing, is a change of what matching compares."""
    from dataclasses import replace

    old = next(a for a in analyse(BRANCHED, "m.py").architectures if a.name == "SelfAttention")
    assert old.forward is not None
    apps = old.forward.applications
    under_if = [i for i, (_, _, _, path) in enumerate(apps) if path]
    assert len(under_if) == 2 and apps[under_if[0]][3][0][0] == apps[under_if[1]][3][0][0]  # one `if`, two calls

    def edited(change: Any) -> Any:
        assert old.forward is not None
        moved = tuple(change(i, app) if i in under_if else app for i, app in enumerate(apps))
        return replace(old, forward=replace(old.forward, applications=moved))

    assert moved_points(old, edited(lambda i, a: (*a[:3], ((a[3][0][0] + 5, a[3][0][1]),)))) is not None
    assert moved_points(old, edited(lambda i, a: (*a[:3], ((a[3][0][0] + i, a[3][0][1]),)))) is None  # two `if`s
    assert moved_points(old, edited(lambda i, a: (*a[:3], ((a[3][0][0], 1 - a[3][0][1]),)))) is None
    assert moved_points(old, edited(lambda i, a: (*a[:3], ()))) is None


@pytest.mark.pure_python
def test_the_server_does_not_match_a_class_whose_comment_changed(context: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from adopter.analysis.incremental import DocumentAnalysis

    matched: list[str] = []
    original = sites._match_scope

    def counted(scope_name: str, *args: Any, **kwargs: Any) -> Any:
        matched.append(scope_name)
        return original(scope_name, *args, **kwargs)

    monkeypatch.setattr(sites, "_match_scope", counted)
    doc, matcher = DocumentAnalysis(BRANCHED, "m.py"), UnitMatcher()
    assert matcher.match(doc.result(), context)[0]
    text = BRANCHED.replace(COMMENT, "        # projects the states")
    fresh = UnitMatcher(remember=False).match(analyse(text, "m.py"), context)
    doc.update(text)
    matched.clear()
    assert matcher.match(doc.result(), context) == fresh
    assert matched == []


def test_a_part_shared_by_findings_is_mapped_once() -> None:
    from adopter.dsl.types import Span

    points = moved_points((Span(1, 0, 1, 4), Span(1, 6, 1, 9)), (Span(1, 0, 1, 4), Span(1, 7, 1, 10)))
    assert points is not None
    shared = (Span(1, 6, 1, 9), "x")
    first = carried(((shared, 1), (shared, 2), (Span(1, 0, 1, 4),)), points)
    assert first == (((Span(1, 7, 1, 10), "x"), 1), ((Span(1, 7, 1, 10), "x"), 2), (Span(1, 0, 1, 4),))
    assert first is not None and first[0][0] is first[1][0]  # one mapped copy, not one per finding
    second = carried((shared,), points)  # a later call through the same map (a unit's rule answers)
    assert second is not None and second[0] is first[0][0]
    unmoved = (Span(1, 0, 1, 4), "y")
    assert carried((unmoved,), points) == (unmoved,) and carried((unmoved,), points)[0] is unmoved  # type: ignore[index]
    for _ in range(2):  # a part with an end the map does not cover is refused every time, not kept
        assert carried(((Span(1, 5, 1, 9), "z"),), points) is None
