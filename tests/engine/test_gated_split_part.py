"""A gated MLP on one part of a fused projection (`f14-gated-split-part`, detection only): the PaLM-style parallel
block's one Linear gives q, k, v and the feed-forward input, split on the last axis, and the feed-forward's gated
activation (a SwiGLU class of the same file, first item of an `nn.Sequential`) halves that part.

Shaped on (the code rewritten at fixture size):
- palm-pytorch 0.2.2 `palm_pytorch/palm_pytorch.py` 61-64 (`SwiGLU`: `x, gate = x.chunk(2, dim=-1)`,
  `F.silu(gate) * x`), 78-90 (`fused_dims`, `fused_attn_ff_proj`, `ff_out = nn.Sequential(SwiGLU(), nn.Linear)`),
  130 (`q, k, v, ff = self.fused_attn_ff_proj(x).split(self.fused_dims, dim=-1)`), 168 (`self.ff_out(ff)`); the
  same block in palm-rlhf-pytorch 0.8.0 `palm_rlhf_pytorch/palm.py` 211, flamingo-pytorch 0.1.2
  `flamingo_pytorch/flamingo_palm.py` 153, and zetascale 2.8.8 (fresh6) `zeta/structs/simple_transformer.py` 190.
- refusals: toolformer-pytorch 0.0.30 `toolformer_pytorch/palm.py` 73-76 (the same block with `nn.GELU()` and no
  gate); zetascale 2.8.8 `zeta/structs/transformer_block.py` 106 (the `SwiGLU` imported from another file: not written in
  the file, dev2 LABELLING batch-1 call 1).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

PALM = '''import torch
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return F.silu(gate) * x


class ParallelTransformerBlock(nn.Module):
    def __init__(self, dim, dim_head=8, heads=2, ff_mult=4):
        super().__init__()
        attn_inner_dim = dim_head * heads
        ff_inner_dim = dim * ff_mult
        self.fused_dims = (attn_inner_dim, dim_head, dim_head, (ff_inner_dim * 2))
        self.fused_attn_ff_proj = nn.Linear(dim, sum(self.fused_dims), bias=False)
        self.attn_out = nn.Linear(attn_inner_dim, dim, bias=False)
        self.ff_out = nn.Sequential(
            SwiGLU(),
            nn.Linear(ff_inner_dim, dim, bias=False),
        )

    def forward(self, x):
        q, k, v, ff = self.fused_attn_ff_proj(x).split(self.fused_dims, dim=-1)
        out = torch.einsum("b n d, b m d -> b n m", q, k).softmax(dim=-1) @ v
        return self.attn_out(out) + self.ff_out(ff)
'''

SITE = 26  # the split of the fused projection


def gated(code: str) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [(f.rule_id, f.span.start_line + 1) for f in check(analyse(code, "m.py"), load_rules().rules, env).findings
            if f.family == 14]


def test_palm_parallel_block_gated_part() -> None:
    assert gated(PALM) == [("f14-gated-split-part", SITE)]


def test_gelu_gate_and_gate_in_forward() -> None:
    code = PALM.replace("F.silu(gate) * x", "x * F.gelu(gate)")
    assert gated(code) == [("f14-gated-split-part", SITE)]
    inline = PALM.replace("        return self.attn_out(out) + self.ff_out(ff)",
                          "        h, gate = ff.chunk(2, dim=-1)\n"
                          "        return self.attn_out(out) + self.ff_out[1](F.silu(gate) * h)")
    assert gated(inline) == [("f14-gated-split-part", SITE)]


def test_the_finding_is_detection_only() -> None:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = [f for f in check(analyse(PALM, "m.py"), load_rules().rules, env).findings if f.family == 14]
    assert found and not any(f.fixable for f in found)


@pytest.mark.parametrize(("old", "new"), [
    # a plain GELU on the part (toolformer-pytorch's block): no gate
    ("            SwiGLU(),\n", "            nn.GELU(),\n"),
    # a sigmoid gate (a classic GLU) or a ReLU gate (ReGLU): not family 14
    ("F.silu(gate) * x", "torch.sigmoid(gate) * x"),
    ("F.silu(gate) * x", "F.relu(gate) * x"),
    # the halves multiplied with no activation on either
    ("F.silu(gate) * x", "gate * x"),
    # the parts of the input itself, not of a projection's output
    ("self.fused_attn_ff_proj(x).split(", "x.split("),
], ids=["gelu-no-gate", "sigmoid-gate", "relu-gate", "no-activation", "not-a-projection"])
def test_look_alikes_are_not_gated_parts(old: str, new: str) -> None:
    assert old in PALM
    assert gated(PALM.replace(old, new)) == []


def test_imported_gate_class_is_not_written_in_the_file() -> None:
    code = PALM.replace('''class SwiGLU(nn.Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return F.silu(gate) * x


''', "").replace("from torch import nn\n", "from torch import nn\n\nfrom .layers import SwiGLU\n")
    assert "class SwiGLU" not in code
    assert gated(code) == []
