"""q/k/v projections of one input reached through a second name (`values = keys`) (mech109).

`name = <argument>` binds the same tensor to a second name; base d214b905 lost that link (a plain local
name on the right emitted no op), so a projection of the second name did not project "the same input".
`flow.statements` now passes the forward's argument on by a transparent `choose` when a local of the forward
is bound to it by a plain name. Shaped on (rewritten at fixture size):

- slp 1.2.1 `slp/modules/attention.py:417-422` (`Attention.forward`, and `MultiheadAttention.forward` at
  671-678): `if queries is None: queries = keys`, `values = keys`, then `self.k(keys)`, `self.q(queries)`,
  `self.v(values)`, heads split by a same-file `split_heads` (dev2; the labelled sites);
- transformers 4.46.3 `models/wav2vec2_conformer/modeling_wav2vec2_conformer.py:673-686`
  (`Wav2Vec2ConformerSelfAttention.forward`; also seamless_m4t, seamless_m4t_v2, wav2vec2_bert):
  `query_key_states = hidden_states`, `value_states = hidden_states`, rotary embeddings applied to the first
  under an `if`, then `linear_q/k(query_key_states)`, `linear_v(value_states)`;
- lightning-ir 0.0.6 `lightning_ir/models/cross_encoders/set_encoder.py:151-167`
  (`SetEncoderModel.attention_forward`): `key_value_hidden_states = hidden_states`, rebound under
  `if num_docs is not None`, then `self.query(hidden_states)`, `self.key/value(key_value_hidden_states)`.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, fixed, load, rules_of

from adopter.engine.types import Finding

RULES = rules_of("f09-fused-qkv")

SLP = '''
import torch
from torch import nn


def split_heads(x, num_heads):
    batch, length, width = x.size()
    return x.view(batch, length, num_heads, width // num_heads).transpose(1, 2)


class MultiheadAttention(nn.Module):
    def __init__(self, attention_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.k = nn.Linear(attention_size, attention_size, bias=False)
        self.q = nn.Linear(attention_size, attention_size, bias=False)
        self.v = nn.Linear(attention_size, attention_size, bias=False)

    def forward(self, keys, queries=None):
        if queries is None:
            queries = keys
        values = keys
        k = self.k(keys)
        q = self.q(queries)
        v = self.v(values)
        k = split_heads(k, self.num_heads)
        q = split_heads(q, self.num_heads)
        v = split_heads(v, self.num_heads)
        scores = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return scores @ v
'''

CONFORMER = '''
import torch
from torch import nn


class ConformerSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, rotary):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.rotary = rotary
        self.linear_q = nn.Linear(hidden_size, hidden_size)
        self.linear_k = nn.Linear(hidden_size, hidden_size)
        self.linear_v = nn.Linear(hidden_size, hidden_size)

    def _apply_rotary_embedding(self, states, cos):
        return states * cos

    def forward(self, hidden_states, cos=None):
        batch_size = hidden_states.size(0)
        query_key_states = hidden_states
        value_states = hidden_states
        if self.rotary:
            query_key_states = self._apply_rotary_embedding(query_key_states, cos)
        query = self.linear_q(query_key_states).view(batch_size, -1, self.num_heads, self.head_size)
        key = self.linear_k(query_key_states).view(batch_size, -1, self.num_heads, self.head_size)
        value = self.linear_v(value_states).view(batch_size, -1, self.num_heads, self.head_size)
        query, key, value = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)
        return torch.softmax(query @ key.transpose(-1, -2), dim=-1) @ value
'''

SET_ENCODER = '''
import torch
from torch import nn


class SetEncoderAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, other_docs=None):
        key_value_hidden_states = hidden_states
        if other_docs is not None:
            key_value_hidden_states = torch.cat([hidden_states, other_docs], dim=1)
        b = hidden_states.shape[0]
        query = self.query(hidden_states).view(b, -1, self.heads, 8).transpose(1, 2)
        key = self.key(key_value_hidden_states).view(b, -1, self.heads, 8).transpose(1, 2)
        value = self.value(key_value_hidden_states).view(b, -1, self.heads, 8).transpose(1, 2)
        return torch.softmax(query @ key.transpose(-1, -2), dim=-1) @ value
'''

# The plainest form: one unconditional second name, nothing else in the way (fixable).
PLAIN = '''
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        values = x
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, -1).transpose(1, 2)
        v = self.to_v(values).view(b, n, self.heads, -1).transpose(1, 2)
        out = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v
        return out.transpose(1, 2).reshape(b, n, d)
'''


RESIDUAL = '''
from torch import nn


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.dropout = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(d)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.fc(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = residual + hidden_states
        hidden_states = self.norm(hidden_states)
        return hidden_states
'''


def qkv(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 9]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_slp_values_named_as_keys_are_one_site_on_the_self_attention_path() -> None:
    found = qkv(SLP)
    # a site on the path where `queries` is `keys`; no fix (the query's input is another value on the other)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(SLP, "k = self.k(keys)"), False)]


def test_conformer_second_names_are_a_site_on_the_path_without_rotary() -> None:
    found = qkv(CONFORMER)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(CONFORMER, "query = self.linear_q"), False)]


def test_set_encoder_second_name_is_a_site_on_the_path_without_other_documents() -> None:
    found = qkv(SET_ENCODER)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(SET_ENCODER, "query = self.query"), False)]


def test_an_unconditional_second_name_is_fixable_and_the_fix_is_equivalent() -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules

    found = qkv(PLAIN)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(PLAIN, "q = self.to_q(x)"), True)]
    new = fixed(PLAIN, RULES, applied=1)
    assert "self.qkv(x).chunk(3, dim=-1)" in new and "keep_separate_checkpoints(self, " in new
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(0)
        original = load(PLAIN, "alias_orig")["Attention"](16, 4)
        rewritten = load(new, "alias_new")["Attention"](16, 4)
        # float64: outputs within 1e-10, gradients within 1e-9 (absolute), 1e-8 relative
        compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 16),), atol=1e-10, rtol=1e-8,
                        grad_atol=1e-9, grad_rtol=1e-8, round_trip=True)
    finally:
        torch.set_default_dtype(torch.float32)


# Refusals: the nearest look-alikes.

def test_a_second_name_rebound_before_the_projection_is_not_the_input() -> None:
    rebound = PLAIN.replace("        values = x\n", "        values = x\n        values = values * 2\n")
    assert qkv(rebound) == []


def test_a_second_name_of_another_argument_is_cross_attention() -> None:
    cross = PLAIN.replace("def forward(self, x):", "def forward(self, x, memory):").replace(
        "values = x", "values = memory").replace("k = self.to_k(x)", "k = self.to_k(memory)")
    assert qkv(cross) == []


def test_slp_keys_from_another_tensor_are_not_a_site() -> None:
    # the query given (no default from the keys): the query projects another tensor
    given = SLP.replace("        if queries is None:\n            queries = keys\n", "")
    assert qkv(given) == []


def test_a_second_name_bound_again_by_a_plain_name_keeps_the_old_reading() -> None:
    # `values = memory` later emits no op of its own, so the first alias would reach past it: not read
    twice = PLAIN.replace("def forward(self, x):", "def forward(self, x, memory=None):").replace(
        "        values = x\n", "        values = x\n        if memory is not None:\n            values = memory\n")
    assert qkv(twice) == []


def test_an_argument_bound_again_after_the_alias_keeps_the_residual_add_fixable() -> None:
    # `residual = hidden_states` ... `hidden_states = residual + hidden_states` (the DETR layers): no alias
    # is passed on, so the dropout-add-LayerNorm fix is still offered
    found = [f for f in findings_of(RESIDUAL, rules_of("f05-dropout-add-layernorm"))]
    assert [f.fixable for f in found] == [True]


def test_a_second_name_of_a_local_computed_from_the_input_is_not_the_input() -> None:
    # `values` names `h`, a value computed from `x`, not `x`: the three project two tensors
    local = PLAIN.replace("        values = x\n", "        h = x * 2\n        values = h\n")
    assert qkv(local) == []
