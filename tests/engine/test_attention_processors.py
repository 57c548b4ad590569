"""Attention processors (the diffusers form, as in f5-tts 1.x `f5_tts/model/modules.py`): `Attention`
(an nn.Module) holds `to_q/to_k/to_v` and calls `self.processor(self, x)`; the processor's
`__call__(self, attn: Attention, x)` runs `attn.to_q(x)`... Its `__call__` is read as a forward of the
module class it is handed (`analysis.idioms.processors`): family 9 is reported there, without a fix."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, UnitMatcher

CODE = '''import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, processor, dim, heads=8, dim_head=64, context_dim=None):
        super().__init__()
        self.processor = processor
        self.heads = heads
        self.inner_dim = dim_head * heads
        self.to_q = nn.Linear(dim, self.inner_dim)
        self.to_k = nn.Linear(dim, self.inner_dim)
        self.to_v = nn.Linear(dim, self.inner_dim)
        self.to_out = nn.Linear(self.inner_dim, dim)

    def forward(self, x, mask=None):
        return self.processor(self, x, mask=mask)


class AttnProcessor:
    def __init__(self, pe_attn_head=None):
        self.pe_attn_head = pe_attn_head

    def __call__(self, attn: Attention, x, mask=None):
        batch_size = x.shape[0]
        query = attn.to_q(x)
        key = attn.to_k(x)
        value = attn.to_v(x)
        head_dim = key.shape[-1] // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        x = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        x = x.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        return attn.to_out(x)
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
QUERY = "        query = attn.to_q(x)\n"


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def qkv(code: str) -> list[tuple[str, int, bool, str | None]]:
    found = check(analyse(code, "m.py"), load_rules().rules, ENV).findings
    return [(f.scope_name, f.span.start_line, f.fixable, f.no_fix_reason) for f in found if f.family == 9]


def test_the_processor_projections_are_a_site_without_a_fix() -> None:
    [(scope, at, fixable, reason)] = qkv(CODE)
    assert (scope, at, fixable) == ("AttnProcessor.__call__", line(CODE, "query = attn.to_q(x)"), False)
    assert reason is not None and "attention processor `AttnProcessor`" in reason and "`Attention`" in reason


def test_the_language_server_reports_the_same_site() -> None:
    rules = load_rules().rules
    mf = analyse(CODE, "m.py")
    found, _ = UnitMatcher().match(mf, RuleContext(tuple(rules), environment=ENV))
    assert [(f.scope_name, f.fixable) for f in found if f.family == 9] == [("AttnProcessor.__call__", False)]


UNANNOTATED = CODE.replace("attn: Attention", "attn").replace(
    "        self.processor = processor\n", "        self.processor = AttnProcessor()\n")


def test_the_class_calling_self_processor_with_itself() -> None:
    assert [s for s, *_ in qkv(UNANNOTATED)] == ["AttnProcessor.__call__"]


@pytest.mark.parametrize("code", [
    CODE.replace("key = attn.to_k(x)", "key = attn.to_k(mask)"),  # another input
    CODE.replace("self.to_v = nn.Linear(dim, self.inner_dim)", "self.to_v = nn.Linear(dim, dim)"),  # widths
    CODE.replace("        value = attn.to_v(x)\n", "        value = attn.to_v(x) if mask is None else x\n"),
    CODE.replace("attn: Attention", "attn: int"),  # not a module class
    CODE.replace("attn: Attention", "attn"),  # nothing says which module it runs on
    UNANNOTATED.replace("return self.processor(self, x, mask=mask)", "return self.processor(x, mask=mask)"),
    UNANNOTATED.replace("        self.processor = AttnProcessor()\n",  # bound twice: not evident
                        "        self.processor = AttnProcessor()\n        self.processor = AttnProcessor(2)\n"),
])
def test_not_a_site(code: str) -> None:
    assert qkv(code) == []


def test_a_module_with_call_is_not_a_processor() -> None:
    code = CODE.replace("class AttnProcessor:", "class AttnProcessor(nn.Module):")
    assert all(s != "AttnProcessor.__call__" for s, *_ in qkv(code))


def test_an_edit_of_the_module_init_reaches_the_processor() -> None:
    from adopter.analysis.analyser import Analyser
    from adopter.analysis.parse.source import new_parser

    analyser = Analyser(remember=True)

    def processor(code: str) -> object:
        data = code.encode()
        mf = analyser.run(data, new_parser().parse(data), "m.py")
        [found] = [c for c in mf.chains if c.name == "AttnProcessor.__call__"]
        return found

    first = processor(CODE)
    assert processor(CODE + "\n\ndef unrelated():\n    return 1\n") is first  # reused while nothing it read changed
    edited = processor(CODE.replace("self.to_v = nn.Linear(dim, self.inner_dim)", "self.to_v = nn.Linear(dim, dim)"))
    assert edited is not first
    assert edited.init is not None
    [to_v] = [b for b in edited.init.bindings if b.attr == "to_v"]
    assert [getattr(a, "text", a) for a in getattr(to_v.value, "args", ())] == ["dim", "dim"]


def test_the_module_it_runs_on_changes_with_the_edit() -> None:
    from adopter.analysis.analyser import Analyser
    from adopter.analysis.parse.source import new_parser

    analyser = Analyser(remember=True)
    other = UNANNOTATED.replace("class AttnProcessor:", '''class Other(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        return self.proc(self, x)


class AttnProcessor:''')
    moved = other.replace("        self.processor = AttnProcessor()\n", "        self.processor = None\n").replace(
        "        self.to_v = nn.Linear(dim, 2 * dim)\n", "        self.to_v = nn.Linear(dim, 2 * dim)\n"
        "        self.proc = AttnProcessor()\n")

    def owner(code: str) -> list[str | None]:
        data = code.encode()
        mf = analyser.run(data, new_parser().parse(data), "m.py")
        return [c.processor_of for c in mf.chains if c.name == "AttnProcessor.__call__"]

    assert owner(other) == ["Attention"]
    assert owner(moved) == ["Other"]
