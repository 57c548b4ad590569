"""Attention written in a method outside its class: a module-level function whose first parameter is `self`,
put on instances with `types.MethodType` (the MiDaS BEiT backbone patches timm's `Attention.forward` so) or
on a class by a patching registry (composer's ALiBi surgery replaces BERT's and GPT-2's attention forwards).
Its `self` is the module it runs on; the dropout it applies to the probabilities is one of that module's
layers (`self.attn_drop(attn)`), which nothing in the file binds. f10 finds the chain with such a layer in
the dropout's place (guard `handed_layer`) and offers no fix: what the layer computes is unknown here.
Near forms stay as they were: a layer the file binds (a talking-heads Linear) is not taken for the dropout,
nor is a layer that takes anything but the probabilities themselves."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl import DslError, parse_rules
from adopter.engine import Environment, find, load_rules

ENV = Environment(device="cpu", packages=frozenset(), torch_version="2.4.0")
RULES = load_rules(select=["f10-manual-attention-sdpa"]).rules

PATCHED = '''
import types

import torch


def attention_forward(self, x, resolution, shared_rel_pos_bias=None):
    B, N, C = x.shape
    qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    q = q * self.scale
    attn = q @ k.transpose(-2, -1)
    if shared_rel_pos_bias is not None:
        attn = attn + shared_rel_pos_bias
    attn = attn.softmax(dim=-1)
    attn = self.attn_drop(attn)
    x = (attn @ v).transpose(1, 2).reshape(B, N, -1)
    return self.proj_drop(self.proj(x))


def patch_blocks(model):
    for block in model.blocks:
        block.attn.forward = types.MethodType(attention_forward, block.attn)
'''

SURGERY = '''
import torch
from torch import nn


def _attn(self, query, key, value, attention_mask=None):
    attn_weights = torch.matmul(query, key.transpose(-1, -2))
    attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = self.attn_dropout(attn_weights)
    return torch.matmul(attn_weights, value), attn_weights
'''

# The probabilities mixed across heads by a layer the class binds (CaiT's talking heads): not a dropout.
TALKING_HEADS = '''
import torch
from torch import nn


class TalkingHeads(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.proj_w = nn.Linear(heads, heads)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.proj_w(attn)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)
'''

# In a method written outside its class, a layer that reads the probabilities permuted (talking heads
# again) is no dropout step: the step takes the probabilities themselves.
PATCHED_TALKING_HEADS = '''
import torch


def cait_forward(self, x):
    B, N, C = x.shape
    q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
    attn = (q * self.scale) @ k.transpose(-2, -1)
    attn = attn.softmax(dim=-1)
    attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    return (attn @ v).transpose(1, 2).reshape(B, N, C)
'''

# The same function handed the module under another name, analysed on its own: not read as a method (its
# first parameter may be anything), so nothing changes for it.
MODULE_PARAMETER = PATCHED.replace("(self, x,", "(module, x,").replace("self.", "module.")


def _f10(source: str) -> list[tuple[int, bool, str | None]]:
    found = find(analyse(source, "m.py"), RULES, ENV)
    return [(f.span.start_line, f.fixable, f.no_fix_reason) for f in found if f.family == 10]


def test_attention_in_a_method_patched_on_with_method_type_is_found_without_a_fix() -> None:
    (line, fixable, reason) = _f10(PATCHED)[0]
    assert line == 11  # the product's statement (0-based), where the chain starts
    assert not fixable
    assert reason is not None and "`self.attn_drop`" in reason and "outside its class" in reason


def test_attention_in_a_surgery_function_is_found_without_a_fix() -> None:
    findings = _f10(SURGERY)
    assert len(findings) == 1
    assert not findings[0][1] and "`self.attn_dropout`" in (findings[0][2] or "")


def test_a_layer_the_class_binds_is_not_taken_for_the_dropout() -> None:
    assert _f10(TALKING_HEADS) == []


def test_a_layer_of_the_permuted_probabilities_is_no_dropout_step() -> None:
    assert _f10(PATCHED_TALKING_HEADS) == []


def test_a_function_handed_the_module_under_another_name_is_unchanged() -> None:
    assert _f10(MODULE_PARAMETER) == []


def test_a_module_variable_with_no_init_pattern_needs_the_handed_layer_guard() -> None:
    rule = '''
rule r {
  family 10
  title "t"
  message "m"
  severity info
  scope forward
  forward {
    $p = torch.softmax($s, dim=-1)
    $p2 = $layer($p)
  }
  rewrite none
}
'''
    with pytest.raises(DslError, match="bound by no `init` pattern"):
        parse_rules(rule)
    guarded = rule.replace("  rewrite none", "  where {\n    handed_layer($layer)\n  }\n  rewrite none")
    (parsed,) = parse_rules(guarded)
    assert parsed.guards[0].args[0].name == "layer"  # type: ignore[union-attr]
