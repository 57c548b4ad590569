"""A site wholly inside a same-file helper lists the statements of the scope that call the helper
(`Forward.calls`, `Finding.call_spans`): ring-attention-pytorch's `apply_rotary_pos_emb(pos, t)` applied to q
and k in `RingAttention.forward`. The finding stays where its ops are written (the helper, where a rewrite
edits); the calls join its statements. torchtitan's `CosSinRoPE._rotate_half(x)`, a staticmethod called
through its class, is read as a call of that function."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session, UnitMatcher

CUDA = Environment("cuda", frozenset(), "2.13.0")
CPU = Environment("cpu", frozenset(), "2.13.0")

RING = '''import torch
from torch import nn
from einops import rearrange


def rotate_half(x):
    x1, x2 = x.chunk(2, dim = -1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(pos, t, head_dim_first = False):
    if not head_dim_first:
        pos = rearrange(pos, 'n d -> n 1 d')

    return t * pos.cos() + rotate_half(t) * pos.sin()


class RingAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, rotary_emb = None):
        q, k, v = self.to_qkv(x).chunk(3, dim = -1)
        if rotary_emb is not None:
            q = apply_rotary_pos_emb(rotary_emb, q)  # q call
            k = apply_rotary_pos_emb(rotary_emb, k)  # k call
        return q + k + v
'''

OTHER = '''

class Cross(nn.Module):
    def forward(self, x, pos):
        y = apply_rotary_pos_emb(pos, x)  # other call
        return y
'''

DIRECT = '''import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim = -1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def forward(self, q, cos, sin):
        y = q * cos + rotate_half(q) * sin  # written here
        return y
'''

TITAN = '''import torch
from torch import nn


class CosSinRoPE(nn.Module):
    def forward(self, query, key, rope_cache):
        return self.apply_rotary_emb(query, key, rope_cache)  # forward call

    @staticmethod
    def apply_rotary_emb(query, key, rope_cache):
        head_dim = query.shape[-1]
        cos = rope_cache[..., :head_dim]
        sin = rope_cache[..., head_dim:]
        query_f = query.float()
        key_f = key.float()
        xq_out = (query_f * cos) + (CosSinRoPE._rotate_half(query_f) * sin)
        xk_out = (key_f * cos) + (CosSinRoPE._rotate_half(key_f) * sin)
        return xq_out.type_as(query), xk_out.type_as(key)

    @staticmethod
    def _rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)
'''

GELU = '''import math

import torch
from torch import nn


def gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


class Intermediate(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, 4 * d)

    def forward(self, x):
        h = self.dense(x)
        return gelu(h)  # gelu call
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def rope(code: str) -> list[tuple[int, list[int], list[int]]]:
    found = check(analyse(code, "m.py"), load_rules().rules, CUDA).findings
    return [(f.span.start_line, sorted({s.start_line for s in f.stmt_spans}), [s.start_line for s in f.call_spans])
            for f in found if f.family == 15]


def test_the_forwards_calls_are_statements_of_the_helpers_site() -> None:
    calls = [line(RING, "# q call"), line(RING, "# k call")]
    ((site, stmts, called),) = rope(RING)
    assert site == line(RING, "return t * pos.cos()")
    assert called == calls
    assert set(calls) <= set(stmts)


def test_calls_from_two_classes_are_a_site_each() -> None:
    # The helper rotates one tensor: each class's application is a site of its own, reported at its first
    # call (retB39, `engine.rotary_sites.one_site_per_application`; it was one site listing every call).
    code = RING + OTHER
    found = sorted(rope(code))
    assert [(site, called) for site, _, called in found] == [
        (line(code, "# q call"), [line(code, "# q call"), line(code, "# k call")]),
        (line(code, "# other call"), [line(code, "# other call")])]
    assert all(line(code, "return t * pos.cos()") in stmts for _, stmts, _ in found)


def test_a_site_written_in_the_forward_lists_no_call() -> None:
    ((site, stmts, called),) = rope(DIRECT)
    assert site == line(DIRECT, "# written here")
    assert called == []
    assert line(DIRECT, "# written here") in stmts


def test_a_staticmethod_called_through_its_class_completes_the_site() -> None:
    ((site, _, called),) = rope(TITAN)
    assert site == line(TITAN, "xq_out = (query_f * cos)")
    assert called == [line(TITAN, "# forward call")]


def test_the_language_server_reports_the_same_statements() -> None:
    rules = load_rules().rules
    code = RING + OTHER
    mf = analyse(code, "m.py")
    expected = [(f.rule_id, f.scope_name, f.stmt_spans, f.call_spans) for f in check(mf, rules, CUDA).findings]
    matcher, context = UnitMatcher(), RuleContext(tuple(rules), environment=CUDA)
    got, _ = matcher.match(mf, context)
    assert [(f.rule_id, f.scope_name, f.stmt_spans, f.call_spans) for f in got] == expected
    assert any(f.call_spans for f in got)


def test_a_fixable_helper_site_is_fixed_in_the_helper_alone() -> None:
    found = [f for f in check(analyse(GELU, "m.py"), load_rules().rules, CPU).findings if f.family == 13]
    assert [(f.span.start_line, [s.start_line for s in f.call_spans]) for f in found] == [
        (line(GELU, "return x * 0.5"), [line(GELU, "# gelu call")])]
    session = Session(RuleContext(tuple(load_rules().rules), (), CPU))
    out = session.fix(GELU, "m.py")
    assert [f.family for f in out.applied] == [13]
    assert "return gelu(h)  # gelu call" in out.new_source
    assert "torch.erf" not in out.new_source


SOFTMAX = '''import torch
from torch import nn


def probs(x):
    p = torch.softmax(x, dim=-1)
    return p


class Head(nn.Module):
    def forward(self, s):
        y = probs(s)  # probs call
        return y * 2
'''


def test_the_template_rewrite_edits_the_helper_not_its_call() -> None:
    env = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")
    session = Session(RuleContext(tuple(load_rules().rules), (), env))
    (found,) = [f for f in session.analysed(SOFTMAX, "m.py").findings if f.rule_id == "f04-softmax"]
    assert [s.start_line for s in found.call_spans] == [line(SOFTMAX, "# probs call")]
    out = session.rewrite(SOFTMAX, [found], target="liger")
    assert "    p = liger_softmax(x)\n" in out.new_source
    assert "        y = probs(s)  # probs call\n" in out.new_source
