"""A public method decorated by a decorator of its own file that runs it once with its own arguments is read
like a forward (`idioms/transparent_decorators.py`, `idioms/entry_methods.py`).

Shaped on token-shift-gpt 0.0.2 (dev2 batch 13), `token_shift_gpt/autoregressive_wrapper.py` lines 7-14 and
33-53: `eval_decorator` switches the model to eval, calls `fn(model, *args, **kwargs)` and switches back; the
decorated `generate` samples with `F.softmax(filtered_logits / temperature, dim=-1)` (a labelled family-4 site).
The same wrapper is in 13 dev packages' files (x-transformers, PaLM, MEGA, g-mlp, hourglass, long-short,
memory-efficient-attention, gated-state-spaces, ...; the census in docs/benchmarks.md, thirty-first stop).
Rewritten at fixture size. A decorator that calls the method twice, under a branch, with other arguments, that
returns something else, that is itself decorated, or that is imported keeps the method unread, as before.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.idioms.transparent_decorators import runs_the_method_once
from adopter.analysis.incremental import DocumentAnalysis
from adopter.engine import Environment, check, load_rules

CPU = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 4]

EVAL_DECORATOR = '''def eval_decorator(fn):
    def inner(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        out = fn(model, *args, **kwargs)
        model.train(was_training)
        return out
    return inner
'''

WRAPPER = '''import torch
import torch.nn.functional as F
from torch import nn
{imports}

{decorator}

class AutoregressiveWrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    @torch.no_grad()
    @eval_decorator
    def generate(self, start_tokens, seq_len, temperature=1.0):
        out = start_tokens
        for _ in range(seq_len):
            logits = self.net(out)[:, -1, :]
            probs = F.softmax(logits / temperature, dim=-1)
            sample = torch.multinomial(probs, 1)
            out = torch.cat((out, sample), dim=-1)
        return out
'''


def _softmax_lines(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in check(analyse(source, "m.py"), RULES, CPU).findings]


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def test_a_method_under_a_same_file_eval_decorator_is_read() -> None:
    source = WRAPPER.format(imports="", decorator=EVAL_DECORATOR)
    assert _softmax_lines(source) == [_line(source, "probs = F.softmax(logits / temperature, dim=-1)")]


def test_wraps_on_the_inner_function_and_a_direct_return_are_read_too() -> None:
    decorator = '''def eval_decorator(fn):
    @functools.wraps(fn)
    def inner(self, *args, **kwargs):
        """Run in eval mode."""
        return fn(self, *args, **kwargs)
    return inner
'''
    source = WRAPPER.format(imports="import functools", decorator=decorator)
    assert len(_softmax_lines(source)) == 1


@pytest.mark.parametrize("decorator", [
    EVAL_DECORATOR.replace("        out = fn(model, *args, **kwargs)\n",
                           "        out = fn(model, *args, **kwargs)\n        out = fn(model, *args, **kwargs)\n"),
    EVAL_DECORATOR.replace("        out = fn(model, *args, **kwargs)\n",
                           "        out = None\n        if was_training:\n            out = fn(model, *args, **kwargs)\n"),
    EVAL_DECORATOR.replace("fn(model, *args, **kwargs)", "fn(model, *args[1:], **kwargs)"),
    EVAL_DECORATOR.replace("fn(model, *args, **kwargs)", "fn(model, *args)"),
    EVAL_DECORATOR.replace("    return inner\n", "    return fn\n"),
    EVAL_DECORATOR.replace("        model.eval()\n", "        model.eval()\n        helper = fn\n"),
    "@cache\n" + EVAL_DECORATOR,
], ids=["twice", "under-a-branch", "other-arguments", "kwargs-dropped", "returns-fn", "fn-named-again",
        "itself-decorated"])
def test_other_decorators_keep_the_method_unread(decorator: str) -> None:
    source = WRAPPER.format(imports="from functools import cache", decorator=decorator)
    assert _softmax_lines(source) == []


def test_an_imported_decorator_keeps_the_method_unread() -> None:
    source = WRAPPER.format(imports="from .utils import eval_decorator", decorator="")
    assert _softmax_lines(source) == []


def test_the_shape_alone() -> None:
    assert runs_the_method_once(EVAL_DECORATOR)
    assert not runs_the_method_once("def d(fn):\n    return fn\n")
    assert not runs_the_method_once("def d(fn, n=2):\n    def inner(*a):\n        return fn(*a)\n    return inner\n")
    assert not runs_the_method_once("def d(fn):\n    def inner(x, *, k=1):\n        return fn(x, k=k)\n    return inner\n")


def test_editing_the_decorator_is_seen_by_the_live_analysis() -> None:
    # the entry reading's cache is keyed by the class's text and the same-file decorators it names
    source = WRAPPER.format(imports="", decorator=EVAL_DECORATOR)
    doc = DocumentAnalysis(source, "m.py")
    assert doc.result() == analyse(source, "m.py")
    for old, new in (("out = fn(model, *args, **kwargs)", "out = fn(model, *args)"),
                     ("out = fn(model, *args)", "out = fn(model, *args, **kwargs)")):
        text = doc.text
        i = text.index(old)
        line, col = text[:i].count("\n"), i - (text.rfind("\n", 0, i) + 1)
        doc.edit((line, col), (line, col + len(old)), new)
        assert doc.result() == analyse(doc.text, "m.py")
        found = [f.span.start_line + 1 for f in check(doc.result(), RULES, CPU).findings]
        assert found == ([] if new.endswith("*args)") else [_line(doc.text, "probs = F.softmax(logits / temperature, dim=-1)")])


def test_a_comment_after_the_decorator_does_not_hide_it_from_the_live_analysis() -> None:
    source = WRAPPER.format(imports="", decorator=EVAL_DECORATOR).replace(
        "    @eval_decorator\n", "    @eval_decorator  # eval mode while sampling\n")
    doc = DocumentAnalysis(source, "m.py")
    assert len([f for f in check(doc.result(), RULES, CPU).findings]) == 1
    text = doc.text
    i = text.index("out = fn(model, *args, **kwargs)")
    line, col = text[:i].count("\n"), i - (text.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + len("out = fn(model, *args, **kwargs)")), "out = fn(model, *args)")
    assert doc.result() == analyse(doc.text, "m.py")
    assert not check(doc.result(), RULES, CPU).findings
