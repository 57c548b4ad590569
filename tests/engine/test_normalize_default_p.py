"""Family 12: `F.normalize(x, p=2)` is the default L2 normalisation (helper `mech43`; the oracle's misses vit-pytorch
1.x `normalized_vit.py:99, 100`, interim r5 report).

vit-pytorch's nViT `Attention` runs `q, k = map(l2norm, (q, k))` with `def l2norm(t, dim=-1): return
F.normalize(t, dim=dim, p=2)`, then `q = q * self.q_scale`: an RMS normalisation times a factor, `f12-rmsnorm-l2`'s
form, whose `no_kwarg($n, p)` guard refused the explicit default `p=2`. The canonical form now drops `p=2` of
`F.normalize` as it drops that of `torch.norm` (`spellings.DEFAULT_KEYWORDS`). Near forms that stay silent: `p=1`,
the normalised vector without a factor.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")

NVIT = '''
import torch
import torch.nn.functional as F
from torch import nn


def l2norm(t, dim=-1):
    return F.normalize(t, dim=dim, p=2)


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        self.to_q = nn.Linear(dim, heads * dim_head)
        self.to_k = nn.Linear(dim, heads * dim_head)
        self.q_scale = nn.Parameter(torch.ones(heads, 1, dim_head) * (dim_head ** 0.25))
        self.k_scale = nn.Parameter(torch.ones(heads, 1, dim_head) * (dim_head ** 0.25))

    def forward(self, x):
        q, k = self.to_q(x), self.to_k(x)
        q, k = map(l2norm, (q, k))
        q = q * self.q_scale
        k = k * self.k_scale
        return q @ k.transpose(-1, -2)
'''


def _f12(source: str) -> list[tuple[str, int]]:
    rules = [r for r in load_rules().rules if r.family == 12]
    return [(f.rule_id, f.span.start_line + 1) for f in check(analyse(source, "case.py"), rules, CPU).findings]


def test_the_explicit_default_p_is_the_l2_normalisation() -> None:
    assert _f12(NVIT) == [("f12-rmsnorm-l2", 22), ("f12-rmsnorm-l2", 23)]
    assert _f12(NVIT.replace("p=2)", "p=2.0)")) == [("f12-rmsnorm-l2", 22), ("f12-rmsnorm-l2", 23)]


def test_near_forms_stay_silent() -> None:
    assert _f12(NVIT) != []  # the positive form beside them
    assert _f12(NVIT.replace("p=2)", "p=1)")) == []  # an L1 normalisation
    no_factor = NVIT.replace("q = q * self.q_scale", "q = q").replace("k = k * self.k_scale", "k = k")
    assert _f12(no_factor) == []
