"""Values at the joins of the flow analysis (issue 20).

1. `if context is None: context = x` as a statement: on that path `context` is `x` (a `choose`, as the
   conditional expression `x if context is None else context` already gives), so the three projections of
   audioldm's `CrossAttention` are a family-9 site on the self-attention path. The fused QKV Linear is right
   only where `context is x`: the site is path-dependent and gets no automatic fix.
2. transformers >= 4.48's `attention_interface: Callable = eager_attention_forward` then
   `if config._attn_implementation != "eager": attention_interface = ALL_ATTENTION_FUNCTIONS[...]`: the call
   is a branch whose eager path inlines the module-level function (handed the module as `module`, read as
   `self`), so gpt2's `eager_attention_forward` is a family-10 site; a rewrite would write `self.` into a
   function without one, so it gets no automatic fix.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.dsl.types import Branch, Op
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session

CPU = Environment("cpu", frozenset(), "2.13.0")

CROSS = '''from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, query_dim, heads, dim_head):
        super().__init__()
        self.n_heads = heads
        d_attn = dim_head * heads
        self.to_q = nn.Linear(query_dim, d_attn, bias=False)
        self.to_k = nn.Linear(query_dim, d_attn, bias=False)
        self.to_v = nn.Linear(query_dim, d_attn, bias=False)

    def forward(self, x, context=None):
{default}
        q = self.to_q(x)  # site
        k = self.to_k(context)
        v = self.to_v(context)
        b = x.shape[0]
        return q.view(b, -1, self.n_heads, 8), k.view(b, -1, self.n_heads, 8), v.view(b, -1, self.n_heads, 8)
'''

AUDIOLDM = """        has_cond = context is not None
        if not has_cond:
            context = x"""

INTERFACE = '''from typing import Callable

import torch
from torch import nn

ALL_ATTENTION_FUNCTIONS = {}


def eager_attention_forward(module, query, key, value, attention_mask, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(-1, -2))  # site
    attn_weights = attn_weights / (value.size(-1) ** 0.5)
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = module.attn_dropout(attn_weights)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.heads = config.heads
        self.c_attn = nn.Linear(config.hidden, 3 * config.hidden)
        self.attn_dropout = nn.Dropout(config.dropout)

    def forward(self, hidden_states, attention_mask=None):
        b, n, _ = hidden_states.shape
        q, k, v = self.c_attn(hidden_states).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
{choice}
        return attn_output.reshape(b, n, -1)
'''

CHOSEN = """        attention_interface: Callable = eager_attention_forward
        if self.config._attn_implementation != "eager":
            attention_interface = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        attn_output = attention_interface(self, q, k, v, attention_mask)  # call"""


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def found(code: str, family: int) -> list[tuple[int, bool, str | None]]:
    return [(f.span.start_line, f.fixable, f.no_fix_reason)
            for f in check(analyse(code, "m.py"), load_rules().rules, CPU).findings if f.family == family]


def test_a_default_written_as_an_if_statement_is_a_site_on_its_path() -> None:
    code = CROSS.replace("{default}", AUDIOLDM)
    ((site, fixable, reason),) = found(code, 9)
    assert site == line(code, "# site")
    assert not fixable and reason is not None and "another control-flow path" in reason


def test_the_is_none_spelling_is_the_same_site() -> None:
    code = CROSS.replace("{default}", "        if context is None:\n            context = x")
    assert [s for s, _, _ in found(code, 9)] == [line(code, "# site")]


def test_an_if_else_of_two_names_is_read_as_the_conditional_expression() -> None:
    code = CROSS.replace("{default}", "        if context is not None:\n            context = context\n"
                                "        else:\n            context = x")
    assert [s for s, _, _ in found(code, 9)] == [line(code, "# site")]


def test_a_default_that_is_another_input_is_no_site() -> None:
    code = CROSS.replace("{default}", "        if context is None:\n            context = self.memory")
    assert found(code, 9) == []


def test_the_default_on_no_path_is_no_site() -> None:
    code = CROSS.replace("{default}", "        if context is None:\n            y = x")
    assert found(code, 9) == []


def test_fix_leaves_the_path_dependent_site_alone() -> None:
    code = CROSS.replace("{default}", AUDIOLDM)
    out = Session(RuleContext(tuple(load_rules().rules), (), CPU)).fix(code, "m.py")
    assert out.applied == () or all(f.family != 9 for f in out.applied)
    assert "self.to_k(context)" in out.new_source


def test_a_function_chosen_through_a_local_is_inlined_on_its_path() -> None:
    code = INTERFACE.replace("{choice}", CHOSEN)
    ((site, fixable, reason),) = found(code, 10)
    assert site == line(code, "# site")
    assert not fixable and reason is not None and "`module`" in reason
    (f,) = [f for f in check(analyse(code, "m.py"), load_rules().rules, CPU).findings if f.family == 10]
    assert [s.start_line for s in f.call_spans] == [line(code, "# call")]


def test_the_other_path_keeps_the_call_as_written() -> None:
    mf = analyse(INTERFACE.replace("{choice}", CHOSEN), "m.py")
    (arch,) = [a for a in mf.architectures if a.name == "Attention"]
    (branch,) = [s for s in arch.forward.body if isinstance(s, Branch) and "_attn_implementation" in s.conditions[0]]
    (written,) = branch.paths[0]
    assert isinstance(written, Op) and written.target == "attention_interface"
    assert any(isinstance(s, Op) and s.via == ("eager_attention_forward",) for s in branch.paths[1])


def test_a_function_handed_the_module_directly_reads_it_as_self() -> None:
    code = INTERFACE.replace("{choice}", "        attn_output = eager_attention_forward(self, q, k, v, attention_mask)")
    ((site, fixable, reason),) = found(code, 10)
    assert site == line(code, "# site")
    assert not fixable and reason is not None and "handed" in reason

