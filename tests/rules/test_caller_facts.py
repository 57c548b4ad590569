"""A helper's softmax decided by what its caller passes: the rank of the tensor and a constant `dim` (helper
`mech82`, issue 20, family 4; fresh4's census rows M1/M2).

A same-file helper (a module-level function called by name, a method called through `self.`) is inlined into
the method that calls it, its parameters bound to the caller's arguments (`adopter.analysis.flow.calls`), so the
canonical pass reads the softmax with the caller's ranks and constants, once per call site. These tests pin that
reading in the forms the census found (a top-2 gate after `reshape(-1, d)`, a routing method, a Gumbel-style
helper whose `dim` is a parameter), and its refusals: a caller whose tensor has no known rank, a constant that
is a middle axis, an edit of the caller, and a helper that calls itself (its own calls pass other values: the
caller's are not bound to its parameters).
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.engine import Environment, find

RULES = rules_of("f04-softmax")
CPU = Environment("cpu", frozenset(), "2.13.0")


def _lines(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES)]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# A top-2 gate (MoE routing) over tokens: the caller flattens to (tokens, d) before the gate's Linear, so the
# module-level helper's `dim=1` is the experts, the last axis.
TOP2 = """
import torch
import torch.nn.functional as F
from torch import nn


def top2gating(logits):
    gates = F.softmax(logits, dim=1, dtype=torch.float)
    first = torch.argmax(gates, dim=1)
    return gates, first


class Top2Gate(nn.Module):
    def __init__(self, model_dim, num_experts):
        super().__init__()
        self.wg = nn.Linear(model_dim, num_experts, bias=False)

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        return top2gating(self.wg(tokens))
"""

# The same routing as a method called through `self.` (a router whose input the forward flattened).
ROUTE = """
import torch
from torch import nn


class Router(nn.Module):
    def __init__(self, hidden, experts, top_k):
        super().__init__()
        self.layer = nn.Linear(hidden, experts, bias=False)
        self.top_k = top_k

    def route(self, router_logits):
        weights = torch.nn.functional.softmax(router_logits, dim=1)
        return torch.topk(weights, self.top_k, dim=-1)

    def forward(self, hidden_states):
        flat = hidden_states.view(-1, hidden_states.shape[-1])
        return self.route(self.layer(flat))
"""

# A helper whose axis is a parameter: the caller passes 3 with a 4-D tensor (a channel mask over (1, C, L, 2)).
MASKED = """
import torch
from torch import nn


def masked_softmax(x, dim, mask):
    return x.masked_fill(mask, -1e4).softmax(dim)


class MaskedMix(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x, keep):
        b, c, h, w = x.shape
        return masked_softmax(self.proj(x).view(b, c, h, w), 3, keep)
"""


@pytest.mark.parametrize(("source", "text"), [
    (TOP2, "gates = F.softmax"), (ROUTE, "weights = torch.nn"), (MASKED, "return x.masked_fill"),
], ids=["module-level-helper", "self-method", "constant-dim"])
def test_the_callers_rank_and_constant_decide_the_helpers_axis(source: str, text: str) -> None:
    assert _lines(source) == [_line(source, text)]


@pytest.mark.parametrize(("source", "old", "new"), [
    # The gate reads the forward's input as it comes (fairscale's own form): its rank is the caller's caller's.
    (TOP2, "top2gating(self.wg(tokens))", "top2gating(self.wg(x))"),
    (ROUTE, "self.route(self.layer(flat))", "self.route(self.layer(hidden_states))"),
    # A Conv2d's output has at most 4 axes: `dim=1` is its channels, never the last one.
    (MASKED, "masked_softmax(self.proj(x).view(b, c, h, w), 3, keep)", "masked_softmax(self.proj(x), 1, keep)"),
    # A 4-D tensor's axis 2 is not its last.
    (MASKED, "view(b, c, h, w), 3, keep)", "view(b, c, h, w), 2, keep)"),
], ids=["unknown-rank-gate", "unknown-rank-route", "middle-axis-of-a-bound", "middle-axis-of-a-rank"])
def test_a_caller_that_proves_nothing_leaves_the_helper_silent(source: str, old: str, new: str) -> None:
    changed = source.replace(old, new)
    assert changed != source
    assert _lines(changed) == []


def test_a_helper_called_twice_is_read_at_each_call() -> None:
    """One call passes the last axis of a 4-D tensor, the other the channels of a Conv2d's output: the helper's
    softmax is a site for the first call only, and its match is that call's."""
    two = MASKED.replace(
        "        return masked_softmax(self.proj(x).view(b, c, h, w), 3, keep)",
        "        m = masked_softmax(self.proj(x).view(b, c, h, w), 3, keep)\n"
        "        s = masked_softmax(self.proj(x), 1, keep)\n"
        "        return m, s")
    (finding,) = findings_of(two, RULES)
    assert finding.span.start_line + 1 == _line(two, "return x.masked_fill")
    assert [s.start_line + 1 for s in finding.call_spans] == [_line(two, "m = masked_softmax"), _line(two, "s = ")]
    assert finding.match.ops[0].outputs == ("m",)


def test_an_edit_of_the_caller_changes_the_helpers_verdict() -> None:
    """The helper's ops are read in its caller's unit: editing the constant at the call re-reads them."""
    doc = DocumentAnalysis(MASKED, "m.py")
    assert len(find(doc.result(), RULES, CPU)) == 1
    old = "view(b, c, h, w), 3, keep)"
    i = doc.text.index(old) + len("view(b, c, h, w), ")
    line = doc.text[:i].count("\n")
    col = i - (doc.text.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + 1), "2")
    assert doc.result() == analyse(doc.text, "m.py")
    assert find(doc.result(), RULES, CPU) == ()


RECURSIVE = """
import torch.nn.functional as F
from torch import nn


def refine(scores, steps):
    if steps == 0:
        return F.softmax(scores, dim=1)
    return refine(scores.unsqueeze(0), steps - 1)


class Refiner(nn.Module):
    def __init__(self, d, e):
        super().__init__()
        self.score = nn.Linear(d, e)

    def forward(self, x):
        return refine(self.score(x.reshape(-1, x.shape[-1])), 2)
"""


def test_a_recursive_helper_is_not_read_with_its_first_callers_rank() -> None:
    """`refine` passes its own call one more axis: at the softmax, `scores` is 2-D on the first call only."""
    assert _lines(RECURSIVE) == []
    # The same helper without the recursion: the caller's 2-D scores decide it.
    flat = RECURSIVE.replace("return refine(scores.unsqueeze(0), steps - 1)", "return scores")
    assert _lines(flat) == [_line(flat, "return F.softmax")]


def test_a_method_that_calls_itself_is_not_read_with_its_first_callers_rank() -> None:
    method = """
import torch.nn.functional as F
from torch import nn


class Refiner(nn.Module):
    def __init__(self, d, e):
        super().__init__()
        self.score = nn.Linear(d, e)

    def refine(self, scores, steps=0):
        if steps == 0:
            return F.softmax(scores, dim=1)
        return self.refine(scores.unsqueeze(0), steps - 1)

    def forward(self, x):
        return self.refine(self.score(x.reshape(-1, x.shape[-1])))
"""
    assert _lines(method) == []
    flat = method.replace("return self.refine(scores.unsqueeze(0), steps - 1)", "return scores")
    assert _lines(flat) == [_line(flat, "return F.softmax")]
