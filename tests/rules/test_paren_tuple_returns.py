"""A helper's `return (a, b)` gives each of the caller's targets its item (helper `mech123`, issue 20).

`z, aux = self._project(x)` inlines `_project`; its `return a, b` (an expression list) bound `z` to `a` and `aux`
to `b`, but the same tuple in parentheses, `return (a, b)`, was read as one `tuple` op bound to neither target, so
a site spanning the call (the layer in the helper, the op after it in the caller) was lost. The metamorphic
harness's `extract_method` / `extract_function` rewrites (`docs/notes/meta36.md`, weakness 4) print returns that
way (`ast.unparse`); real code does too (census in `docs/notes/mech123.md`: 59 dev packages call a same-file
helper returning a parenthesised tuple into as many targets).

Shaped on birder 0.8.4 `birder/net/ssl/barlow_twins.py` lines 64-110 (`_project` ends in
`return (self.projector(embedding), moe_training_output)`; `forward` unpacks it and runs `self.bn(z1)`: a Linear
then a BatchNorm1d, family 8) and flair 0.15.1 `flair/models/language_model.py` lines 77-104 and 372-390
(`forward` returns `(decoded, output, hidden)`, `decoded = self.decoder(output)` a Linear; `calculate_perplexity`
unpacks it and applies `torch.nn.CrossEntropyLoss()`: family 16). Rewritten at fixture size. Both rules are
detection-only here (a Linear in a Sequential; family 16 has no rewrite).
Refusals: the item the op reads is not the layer's (positions matter), a target overwritten before the op, a
starred item (the count of items is not the count of targets).
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

LINEAR_BN = rules_of("f08-linear-bn")
HEAD_CE = rules_of("f16-linear-cross-entropy")

PROJECT = '''import torch
from torch import nn


class Twins(nn.Module):
    def __init__(self, dim, out):
        super().__init__()
        self.backbone = nn.Identity()
        self.projector = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, out, bias=False))
        self.bn = nn.BatchNorm1d(out, affine=False)

    def _project(self, x):
        features = self.backbone(x)
        aux = features.mean()
        return RETURN

    def forward(self, x1, x2):
        z1, aux1 = self._project(x1)
        z2, aux2 = self._project(x2)
BETWEEN        c = self.bn(z1).T @ self.bn(z2)
        return c.sum() + aux1 + aux2
'''


def _twins(ret: str, between: str = "") -> list[str]:
    source = PROJECT.replace("RETURN", ret).replace("BETWEEN", between)
    return [f.rule_id for f in findings_of(source, LINEAR_BN)]


def test_parenthesised_tuple_return_binds_each_target() -> None:
    # birder barlow_twins: the projector's last Linear (in the helper), the BatchNorm1d (in forward)
    assert _twins("(self.projector(features), aux)") == ["f08-linear-bn", "f08-linear-bn"]


def test_parenthesised_and_bare_tuple_returns_read_alike() -> None:
    assert _twins("(self.projector(features), aux)") == _twins("self.projector(features), aux")


def test_the_item_read_is_the_one_at_the_targets_position() -> None:
    # `z1` is the helper's second item here: the mean, not the projector's output
    assert _twins("(aux, self.projector(features))") == []


def test_a_target_overwritten_before_the_op_is_not_the_helpers_item() -> None:
    between = "        z1 = torch.tanh(x1)\n        z2 = torch.tanh(x2)\n"
    assert _twins("(self.projector(features), aux)", between) == []


def test_a_starred_item_is_not_split_by_position() -> None:
    # `(*parts, aux)` has as many items as targets only by accident of the lengths at run time
    source = PROJECT.replace("RETURN", "(*[self.projector(features)], aux)").replace("BETWEEN", "")
    assert [f.rule_id for f in findings_of(source, LINEAR_BN)] == []


LM = '''import math

import torch
from torch import nn


class LanguageModel(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.encoder = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden)
        self.decoder = nn.Linear(hidden, vocab)
        self.vocab = vocab

    def forward(self, input, hidden, decode=True):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        if decode:
            decoded = self.decoder(output)
            return (decoded, output, hidden)
        else:
            return (output, hidden)

    def calculate_perplexity(self, input, targets, hidden):
        TARGETS = self.forward(input, hidden)
        criterion = torch.nn.CrossEntropyLoss()
        loss = criterion(prediction.view(-1, self.vocab), targets).item()
        return math.exp(loss)
'''


def _perplexity(targets: str) -> list[tuple[str, str]]:
    source = LM.replace("TARGETS", targets)
    return [(f.scope_name, f.rule_id) for f in findings_of(source, HEAD_CE)]


def test_a_head_returned_in_a_tuple_then_cross_entropy() -> None:
    # flair language_model: `prediction, _, hidden = self.forward(input, hidden)`, then the loss on `prediction`
    assert _perplexity("prediction, _, hidden") == [("LanguageModel.calculate_perplexity", "f16-linear-cross-entropy")]


def test_the_loss_on_another_item_is_no_head_site() -> None:
    # the RNN's output (second item), not the decoder's logits
    assert _perplexity("_, prediction, hidden") == []


# --- sites across the call are detection-only -------------------------------------------------------------------
# Shaped on diffusers 0.31 `models/activations.py` `SwiGLU.forward` (`hidden_states = self.proj(hidden_states);
# hidden_states, gate = hidden_states.chunk(2, dim=-1); return hidden_states * self.activation(gate)`) and
# stable-diffusion-pytorch 0.0.2 `attention.py` `SelfAttention.forward` (q·kᵀ, scale, softmax, ·v), each with its
# first statements moved into a helper method (the metamorphic `extract_method` rewrite): the rewrite strategies
# edit statements of one function (the split and the product; the products and the softmax), so the finding is
# reported and not called fixable, with the strategy's own reason.

GATED = rules_of("f14-swiglu")
ATTENTION = rules_of("f10-manual-attention-sdpa")

SWIGLU = '''import torch
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)
        self.activation = nn.SiLU()

    def forward(self, hidden_states):
        hidden_states, gate = self._project(hidden_states)
        return hidden_states * self.activation(gate)

    def _project(self, hidden_states):
        hidden_states = self.proj(hidden_states)
        hidden_states, gate = hidden_states.chunk(2, dim=-1)
        return RETURN
'''


def _fixability(source: str, rules: tuple) -> list[tuple[str, bool, str]]:
    return [(f.rule_id, f.fixable, f.no_fix_reason or "") for f in findings_of(source, rules)]


def test_a_gated_split_in_a_helper_is_found_and_detection_only() -> None:
    for ret in ("(hidden_states, gate)", "hidden_states, gate"):
        found = _fixability(SWIGLU.replace("RETURN", ret), GATED)
        assert [(rule, fixable) for rule, fixable, _ in found] == [("f14-gated-chunked", False)], ret
        assert "different functions" in found[0][2]


def test_the_gated_site_in_one_function_stays_fixable() -> None:
    one = SWIGLU.replace("hidden_states, gate = self._project(hidden_states)",
                         "hidden_states = self.proj(hidden_states)\n"
                         "        hidden_states, gate = hidden_states.chunk(2, dim=-1)")
    assert [(rule, fixable) for rule, fixable, _ in _fixability(one, GATED)] == [("f14-gated-chunked", True)]


SELF_ATTENTION = '''import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, n_heads, d_embed):
        super().__init__()
        self.in_proj = nn.Linear(d_embed, 3 * d_embed)
        self.out_proj = nn.Linear(d_embed, d_embed)
        self.n_heads = n_heads
        self.d_head = d_embed // n_heads

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q = q.view(b, n, self.n_heads, self.d_head).transpose(1, 2)
        k = k.view(b, n, self.n_heads, self.d_head).transpose(1, 2)
        v = v.view(b, n, self.n_heads, self.d_head).transpose(1, 2)
        weight, v = self._scores(q, k, v)
        weight = torch.softmax(weight, dim=-1)
        output = weight @ v
        output = output.transpose(1, 2).reshape(b, n, d)
        return self.out_proj(output)

    def _scores(self, q, k, v):
        weight = q @ k.transpose(-1, -2)
        weight = weight / math.sqrt(self.d_head)
        return (weight, v)
'''


def test_attention_scores_in_a_helper_are_found_and_detection_only() -> None:
    found = [f for f in _fixability(SELF_ATTENTION, ATTENTION) if f[0] == "f10-manual-attention-sdpa"]
    assert [(rule, fixable) for rule, fixable, _ in found] == [("f10-manual-attention-sdpa", False)]
    assert "another function than its softmax" in found[0][2]
