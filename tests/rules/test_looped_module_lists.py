"""A literal `nn.ModuleList([...])` that `forward` runs item by item (`for layer in self.ff: x = layer(x)`) read
as the chain of its items (`chains.looped_lists`): detection only, reported at the loop's statement.

Shaped on qwen-tts 0.1.1 `qwen_tts/core/tokenizer_25hz/modeling_qwen3_tts_tokenizer_v1.py:514-530` (`DiTMLP`:
`ModuleList([Linear, GELU(approximate="tanh"), Dropout, Linear])`, walked in `forward`: the family-6 site),
naturalspeech2-pytorch `aligner.py:41-67` (two lists walked one after the other, `key_out = keys` before the loop)
and diffusers `models/unets/unet_1d_blocks.py:245-259` (`OutValueFunctionBlock`: statements before the loop),
written here with a conv -> BatchNorm list for family 7 (the metamorphic harness's `sequential_modulelist`,
docs/notes/meta36.md §3). The refusals are the nearest look-alikes: a skip in the loop, a body that feeds the
loop's input rather than its last output, an extra op between items, a list appended to or indexed elsewhere,
a list built by a comprehension. All detection tests fail on 8c2d50f7, where such a loop reads as no chain."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (6, 7)]

MLP = '''
import torch.nn as nn


class DiTMLP(nn.Module):
    def __init__(self, dim, mult=4, dropout=0.0):
        super().__init__()
        inner_dim = int(dim * mult)
        self.ff = nn.ModuleList(
            [
                nn.Linear(dim, inner_dim),
                nn.GELU(approximate="tanh"),
                nn.Dropout(dropout),
                nn.Linear(inner_dim, dim),
            ]
        )

    def forward(self, hidden_states):
        for layer in self.ff:
            hidden_states = layer(hidden_states)
        return hidden_states
'''

CONV = '''
import torch
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.keys = nn.ModuleList([nn.Conv1d(c_in, c_out, 3, padding=1), nn.ReLU(inplace=True)])
        self.conv = nn.ModuleList([conv, nn.BatchNorm2d(c_out), nn.ReLU()])

    def forward(self, x, k):
        k_out = k
        for layer in self.keys:
            k_out = layer(k_out)
        h = torch.flatten(x, 0, 0)
        for layer in self.conv:
            h = layer(h)
        return h, k_out
'''

_INIT = '''
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.ModuleList([nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()])
'''

REFUSED = {
    "skip": _INIT + '''
    def forward(self, x):
        for i, layer in enumerate(self.conv):
            if i == 1:
                continue
            x = layer(x)
        return x
''',
    "feeds_the_input": _INIT + '''
    def forward(self, x):
        h = x
        for layer in self.conv:
            h = layer(x)
        return h
''',
    "extra_op": _INIT + '''
    def forward(self, x):
        for layer in self.conv:
            x = layer(x)
            x = x * 2
        return x
''',
    "appended": _INIT + '''
        self.conv.append(nn.Identity())

    def forward(self, x):
        for layer in self.conv:
            x = layer(x)
        return x
''',
    "indexed": _INIT + '''
    def forward(self, x):
        for layer in self.conv:
            x = layer(x)
        return x + self.conv[0].bias
''',
    "residual": _INIT + '''
    def forward(self, x):
        for layer in self.conv:
            x = x + layer(x)
        return x
''',
    "comprehension": '''
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.ModuleList([nn.Conv2d(c, c, 3, padding=1) for _ in range(2)])

    def forward(self, x):
        for layer in self.conv:
            x = layer(x)
        return x
''',
    # diffusers' OutValueFunctionBlock: the activation is chosen by the class's parameter, whose default is Mish
    "activation_by_parameter": '''
import torch
import torch.nn as nn
from diffusers.models.activations import get_activation


class OutValueFunctionBlock(nn.Module):
    def __init__(self, fc_dim, embed_dim, act_fn="mish"):
        super().__init__()
        self.final_block = nn.ModuleList([
            nn.Linear(fc_dim + embed_dim, fc_dim // 2),
            get_activation(act_fn),
            nn.Linear(fc_dim // 2, 1),
        ])

    def forward(self, hidden_states, temb):
        hidden_states = torch.cat((hidden_states, temb), dim=-1)
        for layer in self.final_block:
            hidden_states = layer(hidden_states)
        return hidden_states
''',
    "sequential_not_in_order": '''
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.ModuleList([nn.BatchNorm2d(c), nn.Conv2d(c, c, 3, padding=1)])

    def forward(self, x):
        for layer in self.conv:
            x = layer(x)
        return x
''',
}


def _found(source: str) -> list[tuple[str, int, bool]]:
    return sorted((f.rule_id, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV))


def test_a_linear_gelu_list_run_in_turn_is_a_site_detection_only() -> None:
    # at the loop body's statement (0-based line 19), without an automatic fix
    assert _found(MLP) == [("f06-linear-gelu", 19, False)]


def test_a_conv_bn_list_of_a_local_and_constructors_run_in_turn_is_a_site() -> None:
    # the conv -> BN list only (the Conv1d -> ReLU list is no pair); items given as `__init__`'s locals are read
    assert _found(CONV) == [("f07-conv-bn", 18, False)]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_lists_not_run_as_a_chain_are_not_read(case: str) -> None:
    assert _found(REFUSED[case]) == []


NESTED = '''
import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, dim, dim_out, mult=4, glu=False, dropout=0.0):
        super().__init__()
        inner_dim = int(dim * mult)
        project_in = nn.Sequential(nn.Linear(dim, inner_dim), nn.GELU()) if not glu else nn.Linear(dim, inner_dim)
        self.net = nn.ModuleList([project_in, nn.Dropout(dropout), nn.Linear(inner_dim, dim_out)])

    def forward(self, x):
        for m in self.net:
            x = m(x)
        return x
'''


def test_a_container_item_is_its_own_chain_reported_once() -> None:
    # audioldm / f5-tts `FeedForward` written with a ModuleList: the inner Sequential's Linear -> GELU is read
    # where it is built (0-based line 8), not a second time through the loop
    assert _found(NESTED) == [("f06-linear-gelu", 8, False)]
