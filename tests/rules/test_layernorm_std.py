"""Family 11 as the Annotated Transformer writes it: `a * (x - mean) / (std + eps) + b` (`f11-layernorm-std`), issue 20.

Detection only: `x.std` is unbiased and eps is added outside the root, so `F.layer_norm` is not the same function
(no fix is offered, tested). Shapes written anew in the census's forms (docs/notes/mech84.md): the gain multiplied
before the division, no gain with `dim=` keywords (`torch.std` and `.std` read as one signature), and
`torch.std(x, -1, keepdim=True)`. Look-alikes: a standardisation over the batch axis, the spread of another
tensor, a mean of another tensor subtracted.
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of, skip_reasons

LN_RULES = rules_of("f11-layernorm")

SITES = '''
import torch
from torch import nn


class AnnotatedLayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class PlainStdNorm(nn.Module):
    def forward(self, h):
        mu = h.mean(dim=-1, keepdim=True)
        sigma = torch.std(h, dim=-1, keepdim=True)
        return (h - mu) / (sigma + 1e-5)
'''

LOOK_ALIKES = '''
import torch
from torch import nn


class BatchStandardise(nn.Module):
    def forward(self, x):
        mean = x.mean(0, keepdim=True)
        std = x.std(0, keepdim=True)
        return (x - mean) / (std + 1e-6)


class OtherSpread(nn.Module):
    def forward(self, x, ref):
        mean = x.mean(-1, keepdim=True)
        std = ref.std(-1, keepdim=True)
        return (x - mean) / (std + 1e-6)


class OtherMean(nn.Module):
    def forward(self, x, ref):
        mean = ref.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return (x - mean) / (std + 1e-6)
'''


def test_std_layer_norm_is_found_without_a_fix() -> None:
    found = sorted((f.rule_id, f.scope_name) for f in findings_of(SITES, LN_RULES))
    assert found == [("f11-layernorm-std", "AnnotatedLayerNorm"), ("f11-layernorm-std", "PlainStdNorm")]
    assert len(skip_reasons(SITES, LN_RULES)) == 2


def test_std_layer_norm_look_alikes_stay_silent() -> None:
    assert findings_of(LOOK_ALIKES, LN_RULES) == ()
