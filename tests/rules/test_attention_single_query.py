"""Attention with one query per batch row, its scores a matrix-vector product (`f10-single-query*`).

The form recurs across dev packages (census in docs/notes/mech99.md): FastNLP's decoder-step `AttentionLayer`
(the query a column, `matmul(keys, x.unsqueeze(-1)).squeeze(-1)`), stanza's tree-stack attention (the column
made by a `reshape` ending in 1, several heads), wavencoder's `DotAttention` (the values transposed times the
probabilities as a column, the scores in a helper method) and deepmd-kit's repformer attention (the query a
row times the transposed keys). Each is found without a fix. Additive (Bahdanau) attention and a pooling with
a learned query, whose vector is a parameter, are not q·kᵀ; nor is a chain whose product with the values
does not contract the keys' axis.
"""

from __future__ import annotations

import pytest
import torch
from attention_harness import findings_of

from adopter.dsl.types import Rule
from adopter.engine import load_rules

F10: tuple[Rule, ...] = tuple(r for r in load_rules().rules if r.family == 10)

# FastNLP 1.0.1 fastNLP/modules/torch/attention.py:186 (AttentionLayer.forward), in other words
FASTNLP = '''
import torch
import torch.nn.functional as F
from torch import nn


class StepAttention(nn.Module):
    def __init__(self, input_size, key_dim, value_dim):
        super().__init__()
        self.input_proj = nn.Linear(input_size, key_dim, bias=False)
        self.output_proj = nn.Linear(input_size + key_dim, value_dim, bias=False)

    def forward(self, step, memory, memory_mask):
        x = self.input_proj(step)
        scores = torch.matmul(memory, QUERY).SQUEEZE
        if memory_mask is not None:
            scores = scores.float().masked_fill_(memory_mask.eq(0), float("-inf")).type_as(scores)
        scores = F.softmax(scores, dim=DIM)
        context = torch.matmul(scores.PROBS, memory).squeeze(1)
        return torch.tanh(self.output_proj(torch.cat((context, step), dim=1)))
'''

# stanza 1.10 stanza/models/constituency/transformer_tree_stack.py:92 (TransformerTreeStack.attention, called
# from its public methods), in other words: the query column made by a reshape ending in 1, heads split
STANZA = '''
import torch
from torch import nn


class StackAttention(nn.Module):
    def __init__(self, size, heads):
        super().__init__()
        self.heads = heads
        self.inv_sqrt = 1.0 / (size // heads) ** 0.5

    def forward(self, key, query, value, mask=None):
        b, n, _ = key.shape
        query = query.unsqueeze(2).reshape((b, self.heads, -1, 1))
        key = key.reshape((b, n, self.heads, -1)).transpose(1, 2)
        value = value.reshape((b, n, self.heads, -1)).transpose(1, 2)
        attn = torch.matmul(key, query).squeeze(3) * self.inv_sqrt
        if mask is not None:
            attn.masked_fill_(mask.unsqueeze(1).expand(-1, self.heads, -1), float("-inf"))
        attn = torch.softmax(attn, dim=SOFTMAX_DIM).unsqueeze(2)
        return torch.matmul(attn, value).squeeze(2).reshape(b, -1)
'''

# wavencoder 0.1.3 wavencoder/layers/attention_layer.py:95 (DotAttention: scores and softmax in `_get_weights`)
WAVENCODER = '''
import torch
import torch.nn.functional as F
from torch import nn


class DotPooling(nn.Module):
    def forward(self, values, query):
        weights = self.weights_of(values, query)
        return torch.bmm(values.transpose(1, 2), weights.unsqueeze(UNSQUEEZE)).squeeze(2)

    def weights_of(self, values, query):
        hidden = query.squeeze(0)
        scores = torch.bmm(values, hidden.unsqueeze(2)).squeeze(2)
        return F.softmax(scores, 1)
'''

# deepmd-kit 3.1 deepmd/pt/model/descriptor/repformer_layer.py:508 (one atom's query row over its neighbours,
# the masked probabilities zeroed after the softmax; the smooth switch, the other branch of an `if`, left out)
DEEPMD = '''
import torch
from torch import nn


class NeighbourAttention(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.hidden = hidden
        self.mapq = nn.Linear(dim, hidden, bias=False)
        self.mapkv = nn.Linear(dim, 2 * hidden, bias=False)

    def forward(self, g1, gg1, nlist_mask):
        g1q = QUERY
        gg1k, gg1v = torch.split(self.mapkv(gg1), [self.hidden, self.hidden], dim=-1)
        attnw = torch.matmul(g1q.unsqueeze(-2), torch.transpose(gg1k, -1, -2)) / self.hidden**0.5
        attnw = attnw.squeeze(-2)
        attnw_mask = ~nlist_mask.unsqueeze(-2)
        attnw = attnw.masked_fill(attnw_mask, float("-inf"))
        attnw = torch.softmax(attnw, dim=-1)
        attnw = attnw.masked_fill(attnw_mask, ZERO)
        return torch.matmul(attnw.unsqueeze(-2), VALUES).squeeze(-2)
'''


def _sites(source: str) -> list[tuple[str, int, bool]]:
    return [(f.rule_id, f.span.start_line + 1, f.fixable) for f in findings_of(source, F10)]


def _fastnlp(query: str = "x.unsqueeze(-1)", squeeze: str = "squeeze(-1)", dim: str = "-1",
             probs: str = "unsqueeze(1)") -> str:
    return FASTNLP.replace("QUERY", query).replace("SQUEEZE", squeeze).replace("DIM", dim).replace("PROBS", probs)


@pytest.mark.parametrize(("query", "squeeze", "probs"), [
    ("x.unsqueeze(-1)", "squeeze(-1)", "unsqueeze(1)"),  # FastNLP as written
    ("x.unsqueeze(2)", "squeeze(2)", "unsqueeze(1)"),  # bmm's axes counted from the front
    ("x.unsqueeze(-1)", "squeeze(-1)", "unsqueeze(-2)"),
    ("x.view(x.size(0), -1, 1)", "squeeze(-1)", "unsqueeze(1)"),  # the column made by a view
])
def test_a_decoder_step_attending_over_its_memory_is_found_without_a_fix(query: str, squeeze: str,
                                                                         probs: str) -> None:
    assert _sites(_fastnlp(query, squeeze, probs=probs)) == [("f10-single-query", 15, False)]


def _lines(source: str) -> list[tuple[str, frozenset[int], bool]]:
    """Each finding's rule, the lines of its statements (the labels' site is one of them), and fixability."""
    return [(f.rule_id, frozenset(n + 1 for s in f.stmt_spans for n in range(s.start_line, s.end_line + 1)),
             f.fixable) for f in findings_of(source, F10)]


@pytest.mark.parametrize("dim", ["2", "-1"])  # the last axis of the (B, H, N) scores the squeeze proves
def test_heads_split_with_the_query_column_made_by_a_reshape_are_found(dim: str) -> None:
    # the match starts at the reshape of the query (14) and holds the product (17), the softmax and the context
    [(rule, lines, fixable)] = _lines(STANZA.replace("SOFTMAX_DIM", dim))
    assert (rule, fixable) == ("f10-single-query", False)
    assert {14, 17, 20, 21} <= lines


def test_values_transposed_times_a_column_of_probabilities_across_a_helper_method_are_found() -> None:
    [(rule, lines, fixable)] = _lines(WAVENCODER.replace("UNSQUEEZE", "2"))
    assert (rule, fixable) == ("f10-single-query-values-first", False)
    assert {10, 14, 15} <= lines  # the forward's product and the helper's scores and softmax


def test_a_query_row_times_the_transposed_keys_is_found() -> None:
    source = DEEPMD.replace("QUERY", "self.mapq(g1)").replace("VALUES", "gg1v")
    assert _sites(source.replace("ZERO", "0.0")) == [("f10-single-query-row", 16, False)]
    # without the zeroing after the softmax
    assert _sites(source.replace("        attnw = attnw.masked_fill(attnw_mask, ZERO)\n", "")) == [
        ("f10-single-query-row", 16, False)]


@pytest.mark.parametrize(("source", "why"), [
    (_fastnlp(dim="0"), "the softmax runs over the batch"),
    (_fastnlp(probs="unsqueeze(2)"), "a column of probabilities times the values: no contraction over the keys"),
    (_fastnlp(probs="unsqueeze(-1)"), "the same, counted from the end"),
    (_fastnlp(query="x.unsqueeze(0)", squeeze="squeeze(0)"), "a batch axis added, not a column"),
    (_fastnlp(squeeze="squeeze(1)"), "the scores squeezed on another axis than the query's column"),
    (STANZA.replace("SOFTMAX_DIM", "1"), "a softmax over the heads"),
    (WAVENCODER.replace("UNSQUEEZE", "1"), "a row of probabilities right of the transposed values"),
    (DEEPMD.replace("QUERY", "self.mapq.weight.sum(0).expand(g1.size(0), -1)").replace("VALUES", "gg1v")
     .replace("ZERO", "0.0"), "the query a learned vector (a pooling with a learned query)"),
    (DEEPMD.replace("QUERY", "self.mapq(g1)").replace("VALUES", "gg1v * attnw.sum(-1, keepdim=True)")
     .replace("ZERO", "0.0"), "values computed from the probabilities"),
    (DEEPMD.replace("QUERY", "self.mapq(g1)").replace("VALUES", "gg1v").replace("ZERO", "1.0"),
     "the probabilities filled with another value than zero after the softmax"),
])
def test_look_alikes_are_not_single_query_attention(source: str, why: str) -> None:
    assert _sites(source) == [], why


BAHDANAU = '''
import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w_q = nn.Linear(dim, dim)
        self.w_k = nn.Linear(dim, dim)
        self.v = nn.Parameter(torch.rand(dim))

    def forward(self, query, keys):
        energy = torch.tanh(self.w_q(query).unsqueeze(1) + self.w_k(keys))
        v = self.v.expand(keys.size(0), -1)
        scores = torch.bmm(energy, v.unsqueeze(2)).squeeze(2)
        weights = torch.softmax(scores, dim=-1)
        return torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
'''


def test_additive_attention_with_a_learned_vector_is_not_family_10() -> None:
    assert _sites(BAHDANAU) == []
    # the same chain with the vector an activation is dot-product attention with one query
    assert _sites(BAHDANAU.replace("self.v.expand(keys.size(0), -1)", "self.w_q(query)")) == [
        ("f10-single-query", 16, False)]


def test_the_message_s_rewrite_is_the_same_attention() -> None:
    """The finding's suggested call, `sdpa(q.unsqueeze(-2), keys, values).squeeze(-2)`, computes the chain: outputs
    and gradients within 1e-10 in float64 (fixed seed, CPU), with a padding mask, for both context spellings."""
    gen = torch.Generator().manual_seed(0)
    b, n, d = 3, 7, 5
    q = torch.randn(b, d, dtype=torch.float64, generator=gen, requires_grad=True)
    keys = torch.randn(b, n, d, dtype=torch.float64, generator=gen, requires_grad=True)
    mask = torch.ones(b, n, dtype=torch.bool)
    mask[0, 5:] = False
    scores = torch.bmm(keys, q.unsqueeze(2)).squeeze(2) / d**0.5
    probs = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=1)
    row = torch.bmm(probs.unsqueeze(1), keys).squeeze(1)
    column = torch.bmm(keys.transpose(1, 2), probs.unsqueeze(2)).squeeze(2)
    fused = torch.nn.functional.scaled_dot_product_attention(
        q.unsqueeze(-2), keys, keys, attn_mask=mask.unsqueeze(1)).squeeze(-2)
    torch.testing.assert_close(row, fused, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(column, fused, rtol=1e-10, atol=1e-10)
    grads = torch.autograd.grad(row.sum(), (q, keys))
    fused_grads = torch.autograd.grad(fused.sum(), (q, keys))
    for got, want in zip(grads, fused_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
