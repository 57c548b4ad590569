"""q/k/v projections of one input on the path where a conditional expression passes it on (issue 20, mech45).

transformers' `DetrSelfAttention.forward` (5.x `models/detr/modeling_detr.py`):

    query_key_input = hidden_states + position_embeddings if position_embeddings is not None else hidden_states
    query_states = self.q_proj(query_key_input).view(hidden_shape).transpose(1, 2)
    key_states = self.k_proj(query_key_input).view(hidden_shape).transpose(1, 2)
    value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

Without position embeddings the three Linears project `hidden_states`: family 9, no fix (the fused rewrite holds
on that path only). The flow emitted a transparent `choose` only when both alternatives are names
(`kv if cross else hidden`); an alternative that computes (`h + pos`) hid the name the other passes on.
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

from adopter.engine.types import Finding

RULES = rules_of("f09-fused-qkv")

SOURCE = '''
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, head_dim):
        super().__init__()
        self.head_dim = head_dim
        self.k_proj = nn.Linear(hidden, hidden)
        self.v_proj = nn.Linear(hidden, hidden)
        self.q_proj = nn.Linear(hidden, hidden)

    def forward(self, hidden_states, position_embeddings=None):
        hidden_shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        query_key_input = hidden_states + position_embeddings if position_embeddings is not None else hidden_states
        query_states = self.q_proj(query_key_input).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(query_key_input).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        return query_states, key_states, value_states
'''


def qkv(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 9]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_projections_of_one_input_on_the_path_without_position_embeddings_are_a_site() -> None:
    found = qkv(SOURCE)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(SOURCE, "self.q_proj(query_key_input)"), False)]


def test_the_computing_alternative_may_come_second() -> None:
    flipped = SOURCE.replace(
        "hidden_states + position_embeddings if position_embeddings is not None else hidden_states",
        "hidden_states if position_embeddings is None else hidden_states + position_embeddings")
    assert len(qkv(flipped)) == 1


def test_another_input_passed_on_is_no_site() -> None:
    # on the path without embeddings q/k project `memory`, v projects `hidden_states`: one input on no path
    other = SOURCE.replace("def forward(self, hidden_states, position_embeddings=None):",
                           "def forward(self, hidden_states, memory, position_embeddings=None):").replace(
        "if position_embeddings is not None else hidden_states", "if position_embeddings is not None else memory")
    assert qkv(other) == []
