"""Public methods that run the module itself (`self(x)`, `self.forward(x)`) are entry methods.

Shaped on kan-gpt 1.2.0 `kan_gpt/mingpt/model.py:380` (and `kan_gpt/model.py`, the KAN copy): minGPT's
`GPT.generate` crops the context, runs `logits, _ = self(idx_cond)`, scales the last step by the temperature and
samples from `F.softmax(logits, dim=-1)` (404). The dev2 labels count that softmax (LABELLING.md, "Families 4
and 16 outside forward"); the method calls no layer of its own, so it was never read. Rewritten at fixture size.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules

GPT = '''import torch
import torch.nn.functional as F
from torch import nn


class GPT(nn.Module):
    def __init__(self, vocab, dim, block_size):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, dim)
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, targets=None):
        x = self.ln_f(self.wte(idx))
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    DECORATOR
    def METHOD(self, idx, steps, temperature=1.0, top_k=None):
        for _ in range(steps):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = CALL(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = PROBS
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def _found(method: str = "generate", call: str = "self", probs: str = "F.softmax(logits, dim=-1)",
           decorator: str = "@torch.no_grad()") -> list[tuple[int, str, int]]:
    text = (GPT.replace("METHOD", method).replace("CALL", call).replace("PROBS", probs)
            .replace("DECORATOR", decorator))
    found = find(analyse(text, "m.py"), load_rules().rules, ENV)
    return sorted((f.family, f.scope_name, f.span.start_line) for f in found)


FORWARD_HEAD = (16, "GPT", 15)  # lm_head -> cross_entropy in forward: found once, not again in generate
SAMPLED = (4, "GPT.generate", 30)  # 0-based lines


@pytest.mark.parametrize("call", ["self", "self.forward", "self ", "self.forward "])
def test_a_sampling_loop_that_runs_the_module_is_read(call: str) -> None:
    assert _found(call=call) == [SAMPLED, FORWARD_HEAD]


@pytest.mark.parametrize("method", ["sample", "predict_next"])
def test_any_public_name(method: str) -> None:
    assert _found(method=method) == [(4, f"GPT.{method}", 30), FORWARD_HEAD]


def test_undecorated() -> None:
    assert _found(decorator="") == [SAMPLED, FORWARD_HEAD]


# Refusals: the nearest look-alikes.

def test_no_softmax_in_the_loop_is_no_site() -> None:
    # a-transformers-pytorch's `Autoregressive.generate` (dev2 not-site 439): an argmax over the logits
    assert _found(probs="torch.argmax(logits, dim=-1, keepdim=True)") == [FORWARD_HEAD]


def test_a_softmax_over_another_axis_is_no_site() -> None:
    assert _found(probs="F.softmax(logits, dim=0)") == [FORWARD_HEAD]


def test_a_log_softmax_is_no_site() -> None:
    # fireredasr `TransformerDecoder.batch_beam_search` (dev2 not-site 92): log_softmax, not softmax
    assert _found(probs="F.log_softmax(logits, dim=-1)") == [FORWARD_HEAD]


def test_a_private_method_is_not_an_entry() -> None:
    assert _found(method="_generate") == [FORWARD_HEAD]


@pytest.mark.parametrize("decorator", ["@property", "@staticmethod", "@my_cache"])
def test_a_method_under_another_decorator_is_not(decorator: str) -> None:
    assert _found(decorator=decorator) == [FORWARD_HEAD]


def test_another_objects_call_is_not_the_module() -> None:
    # `model(x)` of an argument, `self.model.forward(x)`: not the class's own forward, and no layer of the class
    assert _found(call="self.other.forward") == [FORWARD_HEAD]
    assert _found(call="model") == [FORWARD_HEAD]



# A wrapper that calls the forward with one input as its three parameters: shaped on adn-torch 0.0.2
# `adn/attentions/full.py:79` (`forward_single(x)` returns `self.forward(q=x, k=x, v=x)`); the dev2 labels refuse
# the projections at 59 as a fused q/k/v (three different parameters in the forward). What lies wholly in the
# forward is found or refused where the forward is read.
ATTENTION = '''import torch.nn.functional as F
from einops import rearrange
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.to_out = nn.Linear(dim, dim, bias=False)

    def forward(self, q, k, v):
        q, k, v = self.to_q(q), self.to_k(k), self.to_v(v)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
        attention_map = q @ k.transpose(-1, -2) * self.scale
        attention_map = F.softmax(attention_map, dim=-1)
        x = rearrange(attention_map @ v, "b h n d -> b n (h d)")
        return self.to_out(x)

    def forward_single(self, x, **kwargs):
        return CALL
'''


@pytest.mark.parametrize("call", ["self.forward(q=x, k=x, v=x)", "self(x, x, x)"])
def test_the_forward_read_again_with_one_input_is_no_fused_qkv(call: str) -> None:
    found = find(analyse(ATTENTION.replace("CALL", call), "m.py"), load_rules().rules, ENV)
    assert sorted((f.family, f.scope_name) for f in found) == [(4, "MultiHeadAttention"), (10, "MultiHeadAttention")]


def test_the_forward_read_again_then_normalised_is_a_site_of_the_method() -> None:
    # what the method adds to the forward's output is matched: a softmax of the attention output's last axis
    found = find(analyse(ATTENTION.replace("CALL", "F.softmax(self(x, x, x), dim=-1)"), "m.py"),
                 load_rules().rules, ENV)
    assert sorted((f.family, f.scope_name, f.span.start_line) for f in found) == [
        (4, "MultiHeadAttention", 19), (4, "MultiHeadAttention.forward_single", 24), (10, "MultiHeadAttention", 18)]
