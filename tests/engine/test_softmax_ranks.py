"""Family 4 forms of dev2 batch 3 (issue 20): a softmax over `dim=1` that the code proves is the last axis,
and a softmax called through a local alias; each with a near form that must stay silent.

- styletts2 0.1.6 `Utils/ASR/layers.py:204/285`: `F.softmax(alignment, dim=1)` whose output goes into
  `torch.bmm(w.unsqueeze(1), memory)`: bmm takes 3-D operands, so `w` (and the scores) are 2-D and `dim=1` is
  the last axis (`adopter.analysis.canonical.ranks`).
- SwissArmyTransformer 0.4.12 `sat/transformer_defaults.py:154`: `F.softmax(torch.randn((n, e)), dim=1)`.
- tortoise-tts 3.0.0 `tortoise/models/transformer.py:173`: `softmax = torch.softmax`, then `softmax(dots, -1)`.
- labml-nn 0.5.1 `transformers/mha.py`: `softmax(dim=1)` of a 4-D `[q, k, batch, heads]` tensor is not the
  last axis: nothing proves a rank there, and nothing is reported.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"

LOCATION_ATTENTION = '''
class Attention(nn.Module):
    def __init__(self, dim, att):
        super().__init__()
        self.query_layer = nn.Linear(dim, att, bias=False)
        self.v = nn.Linear(att, 1, bias=False)

    def energies(self, query, processed_memory):
        processed_query = self.query_layer(query.unsqueeze(1))
        energies = self.v(torch.tanh(processed_query + processed_memory))
        return energies.squeeze(-1)

    def forward(self, query, memory, processed_memory, mask):
        alignment = self.energies(query, processed_memory)
        if mask is not None:
            alignment.data.masked_fill_(mask, -float("inf"))
        attention_weights = F.softmax(alignment, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory)
        return attention_context.squeeze(1), attention_weights
'''

# The same softmax whose output is read by bmm as it is: 3-D, so dim=1 is not the last axis.
BATCHED_THREE_D = '''
class Pool(nn.Module):
    def forward(self, scores, values):
        weights = F.softmax(scores, dim=1)
        return torch.bmm(weights, values)
'''

# An `if` may rebind the probabilities before bmm reads them: the later use proves nothing about the softmax.
REBOUND_ON_A_PATH = '''
class Pool(nn.Module):
    def forward(self, scores, memory, flat: bool):
        weights = F.softmax(scores, dim=1)
        if flat:
            weights = weights.flatten(1)
        return torch.bmm(weights.unsqueeze(1), memory)
'''

ROUTER = '''
def routing_forward(self, hidden_states):
    batch_size, sequence_length, hidden_dim = hidden_states.shape
    router_logits = torch.randn((batch_size * sequence_length, self.num_experts), device=hidden_states.device)
    routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
    return torch.topk(routing_weights, 2, dim=-1)


class Router(nn.Module):
    def forward(self, hidden_states):
        return routing_forward(self, hidden_states)
'''

THREE_D_ROUTER = ROUTER.replace("(batch_size * sequence_length, self.num_experts)",
                                "(batch_size, sequence_length, self.num_experts)")

FOUR_D_SCORES = '''
class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, query, key, value):
        scores = torch.einsum("ibhd,jbhd->ijbh", query, key)
        attn = self.softmax(scores)
        return torch.einsum("ijbh,jbhd->ibhd", attn, value)
'''

ALIASED = '''
class Attention(nn.Module):
    def forward(self, q, k, v):
        softmax = torch.softmax
        dots = q @ k.transpose(-2, -1)
        attn = softmax(dots, dim=-1)
        return attn @ v
'''

# The local holds log_softmax on one path: a call of it is not known to be a softmax.
ALIASED_PER_PATH = '''
class Scores(nn.Module):
    def forward(self, x, log: bool):
        if log:
            normalise = F.log_softmax
        else:
            normalise = F.softmax
        return normalise(x, dim=-1)
'''


def _family4(code: str) -> list[int]:
    env = Environment("cpu", frozenset(), "2.13.0")
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, env)
    return [f.span.start_line - HEADER.count("\n") for f in result.findings if f.family == 4]


def _line(code: str, what: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines()) if what in ln)


def test_a_softmax_over_dim_1_whose_output_bmm_proves_2d_is_the_last_axis() -> None:
    assert _family4(LOCATION_ATTENTION) == [_line(LOCATION_ATTENTION, "F.softmax(alignment, dim=1)")]
    assert _family4(BATCHED_THREE_D) == []  # read by bmm as it is: 3-D, dim=1 is not the last axis


def test_a_use_after_an_if_that_may_rebind_the_value_proves_nothing() -> None:
    straight = REBOUND_ON_A_PATH.replace("        if flat:\n            weights = weights.flatten(1)\n", "")
    assert _family4(straight) == [_line(straight, "F.softmax(scores")]
    assert _family4(REBOUND_ON_A_PATH) == []


def test_a_softmax_over_dim_1_of_a_tensor_created_2d_is_the_last_axis() -> None:
    assert _family4(ROUTER) == [_line(ROUTER, "F.softmax(router_logits")]
    assert _family4(THREE_D_ROUTER) == []


def test_a_softmax_over_dim_1_of_scores_of_unknown_rank_stays_silent() -> None:
    proven = FOUR_D_SCORES.replace('scores = torch.einsum("ibhd,jbhd->ijbh", query, key)', "scores = query").replace(
        'torch.einsum("ijbh,jbhd->ibhd", attn, value)', "torch.bmm(attn.unsqueeze(1), value)")
    assert _family4(proven) == [_line(proven, "self.softmax(scores)")]  # bmm proves the scores 2-D
    assert _family4(FOUR_D_SCORES) == []


def test_a_softmax_called_through_a_local_alias_is_a_softmax() -> None:
    assert _line(ALIASED, "softmax(dots") in _family4(ALIASED)
    assert _family4(ALIASED_PER_PATH) == []  # log_softmax on one path: not known to be a softmax
