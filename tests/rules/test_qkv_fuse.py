"""Family 9: three q/k/v Linears of one input fused into one Linear(in, 3 * out).

For each order the rules cover, the fixed module loads the original's state dict with
`strict=True`, emits the original's `state_dict()` keys (the fused tensors split back), accepts a
checkpoint in either form, and computes the same outputs (atol 1e-5, rtol 1e-4) and gradients
(the fused weight's gradient equals the stacked q/k/v gradients, atol 1e-4, rtol 1e-4) in eval and
train mode; a second fix changes nothing. Unsafe sites are declined with their reason.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f09-fused-qkv")
CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")


def _example(index: int) -> str:
    rule = next(r for r in RULES if r.id == "f09-fused-qkv")
    return [ex.code for ex in rule.examples if ex.should_match][index]


# One rule, three orders of the projections and head splits (its must-match examples, in order).
NEO = _example(0)
INTERLEAVED = _example(1)
QUERY_LAST = _example(2)


class _Config:
    hidden_size = 32
    num_attention_heads = 4


CASES = [
    ("projections-then-splits", NEO, "SelfAttention", (_Config(),)),
    ("interleaved", INTERLEAVED, "SelfAttention", (32, 4)),
    ("query-last", QUERY_LAST, "SelfAttention", (32, 4)),
]


@pytest.mark.parametrize(("rule_id", "source", "cls", "args"), CASES, ids=[c[0] for c in CASES])
def test_fused_projection_is_equivalent(
    rule_id: str, source: str, cls: str, args: tuple[object, ...]
) -> None:
    new = fixed(source, RULES, applied=1)
    assert ".chunk(3, dim=-1)" in new and "keep_separate_checkpoints(self, " in new
    torch.manual_seed(0)
    original = load(source, "orig")[cls](*args)
    rewritten = load(new, "new")[cls](*args)
    assert next(n for n, _ in rewritten.named_parameters()) == "qkv.weight"
    # state_dict() of the rewritten module looks exactly like the original's (keys and shapes).
    a, b = original.state_dict(), rewritten.state_dict()
    assert list(b) == list(a) or sorted(b) == sorted(a)
    assert all(b[k].shape == a[k].shape for k in a)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))
    # A checkpoint of the rewritten module loads back into the original, and into itself.
    original.load_state_dict(rewritten.state_dict(), strict=True)
    rewritten.load_state_dict(rewritten.state_dict(), strict=True)


def test_fused_keys_are_accepted_too() -> None:
    new = fixed(NEO, RULES, applied=1)
    module = load(new, "new")["SelfAttention"](_Config())
    fused = {"qkv.weight": torch.randn(96, 32)}
    module.load_state_dict(fused, strict=True)
    torch.testing.assert_close(module.qkv.weight, fused["qkv.weight"])


def test_prune_heads_use_is_declined() -> None:
    source = NEO.replace(
        "    def forward(self, hidden_states):",
        "    def prune(self, index):\n"
        "        self.q_proj = prune_linear_layer(self.q_proj, index)\n\n"
        "    def forward(self, hidden_states):",
    )
    reasons = skip_reasons(source, RULES)
    assert len(reasons) == 1 and "is also used on line" in reasons[0], reasons


def test_different_widths_are_no_site() -> None:
    # Outputs of different widths are not the three equal parts of one projection (issue 20): no finding.
    source = NEO.replace(
        "self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)",
        "self.v_proj = nn.Linear(config.hidden_size, 2 * config.hidden_size, bias=False)",
    )
    assert not find(analyse(source), RULES, CPU)
    assert find(analyse(NEO), RULES, CPU)


def test_different_bias_settings_are_declined() -> None:
    source = NEO.replace(
        "self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)",
        "self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=True)",
    )
    reasons = skip_reasons(source, RULES)
    assert reasons == ["the three Linears differ in more than their out_features (input size, bias or other arguments)"]


def test_projections_in_a_branch_are_declined() -> None:
    source = QUERY_LAST.replace(
        "    def forward(self, hidden_states):\n"
        "        mixed_query_layer = self.query(hidden_states)\n"
        "        key_layer = self.transpose_for_scores(self.key(hidden_states))\n"
        "        value_layer = self.transpose_for_scores(self.value(hidden_states))\n",
        "    def forward(self, hidden_states, memory=None):\n"
        "        mixed_query_layer = self.query(hidden_states)\n"
        "        if memory is not None:\n"
        "            key_layer = self.transpose_for_scores(self.key(memory))\n"
        "            value_layer = self.transpose_for_scores(self.value(memory))\n"
        "        else:\n"
        "            key_layer = self.transpose_for_scores(self.key(hidden_states))\n"
        "            value_layer = self.transpose_for_scores(self.value(hidden_states))\n",
    )
    reasons = skip_reasons(source, RULES)
    assert reasons and all("not consecutive statements of one block" in r for r in reasons), reasons


# Grouped-query attention: the key/value projections are narrower than the query's (fewer heads), so the
# constructors differ in out_features only. The fix builds one Linear of the three widths' sum and splits
# its output by the widths, which it keeps in an attribute.
GQA = '''
import torch
from torch import nn


class GroupedAttention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(heads * self.head_dim, dim)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))
'''

# Projections with other statements between them (DETR-style decoders add position projections in
# between): the fused projection is computed at the first one, the later ones' statements go.
APART = '''
import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.pos_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)

    def forward(self, x, pos):
        b, t, d = x.shape
        q = self.q_proj(x)
        p = self.pos_proj(pos)
        k = self.k_proj(x) + p
        scale = (d // self.heads) ** -0.5
        v = self.v_proj(x)
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2) for y in (q * scale, k, v))
        attn = (q @ k.transpose(-2, -1)).softmax(-1) @ v
        return attn.transpose(1, 2).reshape(b, t, d)
'''


def _equivalent(source: str, new: str, cls: str, args: tuple[object, ...], inputs) -> None:
    torch.manual_seed(0)
    original = load(source, "orig")[cls](*args)
    rewritten = load(new, "new")[cls](*args)
    a, b = original.state_dict(), rewritten.state_dict()
    assert sorted(b) == sorted(a) and all(b[k].shape == a[k].shape for k in a)
    compare_modules(original, rewritten, inputs)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    rewritten.load_state_dict(original.state_dict(), strict=True)


def test_grouped_query_projections_are_fused_and_split_by_width() -> None:
    new = fixed(GQA, RULES, applied=1)
    assert "self.qkv_sizes = (heads * self.head_dim, kv_heads * self.head_dim, kv_heads * self.head_dim)" in new
    assert "nn.Linear(dim, sum(self.qkv_sizes), bias=True)" in new
    assert ".split(self.qkv_sizes, dim=-1)" in new and "keep_split_checkpoints(self, " in new
    _equivalent(GQA, new, "GroupedAttention", (32, 4, 2), lambda: (torch.randn(2, 5, 32),))
    module = load(new, "fused")["GroupedAttention"](32, 4, 2)
    assert module.qkv.weight.shape == (32 + 16 + 16, 32)


def test_grouped_query_with_different_bias_is_declined() -> None:
    source = GQA.replace("self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=True)",
                         "self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)")
    assert skip_reasons(source, RULES) == [
        "the three Linears differ in more than their out_features (input size, bias or other arguments)"]


def test_projections_apart_are_fused_at_the_first() -> None:
    new = fixed(APART, RULES, applied=1)
    body = new[new.index("def forward"):]
    assert body.index("q, k_proj_out, v = self.qkv(x).chunk(3, dim=-1)") < body.index("p = self.pos_proj(pos)")
    assert "k = k_proj_out + p" in body and "self.v_proj" not in body
    _equivalent(APART, new, "CrossAttention", (32, 4), lambda: (torch.randn(2, 5, 32), torch.randn(2, 5, 32)))


@pytest.mark.parametrize(("between", "name"), [
    ("        x.mul_(2)\n", "x"),  # the shared input is changed in place between the projections
    ("        print(v)\n", "v"),  # a later projection's name is read before its statement
])
def test_projections_apart_declined_when_a_statement_between_would_see_another_value(between: str,
                                                                                   name: str) -> None:
    source = APART.replace("        scale = (d // self.heads) ** -0.5\n",
                           "        scale = (d // self.heads) ** -0.5\n" + between)
    reasons = skip_reasons(source, RULES)
    assert reasons and all(f"uses `{name}`, which the fused projection would change" in r for r in reasons), reasons


# transformers 5.0 `modeling_bert.py`'s layout: `BertSelfAttention` and an unrelated `BertCrossAttention` that
# binds and calls its own `self.query`/`self.key`/`self.value` (the cross-attention takes the keys and values
# from the encoder, so it is no site). Those are the other class's attributes: the self-attention is fused.
TWO_CLASSES = '''
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        shape = (*hidden_states.shape[:-1], self.heads, -1)
        q = self.query(hidden_states).view(shape).transpose(1, 2)
        k = self.key(hidden_states).view(shape).transpose(1, 2)
        v = self.value(hidden_states).view(shape).transpose(1, 2)
        scores = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        return (scores @ v).transpose(1, 2).flatten(2)


class CrossAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, encoder_states):
        shape = (*hidden_states.shape[:-1], self.heads, -1)
        kv_shape = (*encoder_states.shape[:-1], self.heads, -1)
        q = self.query(hidden_states).view(shape).transpose(1, 2)
        k = self.key(encoder_states).view(kv_shape).transpose(1, 2)
        v = self.value(encoder_states).view(kv_shape).transpose(1, 2)
        scores = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        return (scores @ v).transpose(1, 2).flatten(2)
'''


def test_another_classes_own_attribute_of_that_name_does_not_block_the_fusion() -> None:
    new = fixed(TWO_CLASSES, RULES, applied=1)
    cross = new[new.index("class CrossAttention"):]
    assert "self.query = nn.Linear" in cross and "self.qkv" not in cross  # the other class is untouched
    torch.manual_seed(0)
    original = load(TWO_CLASSES, "two_old")["SelfAttention"](32, 4)
    rewritten = load(new, "two_new")["SelfAttention"](32, 4)
    load(TWO_CLASSES, "two_back")["SelfAttention"](32, 4).load_state_dict(rewritten.state_dict(), strict=True)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))


@pytest.mark.parametrize("related", [
    # a subclass's method runs on the fused class's instances
    "\n\nclass Probe(SelfAttention):\n    def peek(self):\n        return self.query.weight\n",
    # so does a base class's method: the fused class would inherit it
    "\n\nclass Base(nn.Module):\n    def peek(self):\n        return self.query.weight\n",
])
def test_a_use_in_a_related_class_is_still_declined(related: str) -> None:
    source = TWO_CLASSES + related
    if "class Base" in related:
        source = source.replace("class SelfAttention(nn.Module):", "class SelfAttention(Base):")
    reasons = skip_reasons(source, RULES)
    line = source.count("\n", 0, source.index("return self.query.weight")) + 1
    assert reasons == [f"`self.query` is also used on line {line}; the fused layer would break it"], reasons
