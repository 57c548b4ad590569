"""The attention fix inside a function nested in a module-level builder (`def forward(q, k, v)` in
`AttentionBase`, returned as `Module([to_out], forward)`: a-unet 0.0.16 `a_unet/blocks.py`): the rewritten
builder's module computes what the original computes (heads split with `reshape`/`transpose` here, as
einops is not installed in the test environment), outputs and the gradients of q, k, v and of the output
projection (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9)."""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

SOURCE = '''
import torch
import torch.nn.functional as F
from torch import einsum, nn


class Module(nn.Module):
    def __init__(self, modules, forward_fn):
        super().__init__()
        self.blocks = nn.ModuleList(modules)
        self.forward_fn = forward_fn

    def forward(self, *args, **kwargs):
        return self.forward_fn(*args, **kwargs)


def AttentionBase(features, head_features, num_heads):
    scale = head_features ** -0.5
    mid_features = head_features * num_heads
    to_out = nn.Linear(in_features=mid_features, out_features=features, bias=False)

    def forward(q, k, v):
        h = num_heads
        q, k, v = map(lambda t: t.reshape(t.shape[0], t.shape[1], h, -1).transpose(1, 2), (q, k, v))
        sim = einsum("... n d, ... m d -> ... n m", q, k) * scale
        attn = sim.softmax(dim=-1)
        out = einsum("... n m, ... m d -> ... n d", attn, v)
        out = out.transpose(1, 2).flatten(2)
        return to_out(out)

    return Module([to_out], forward)
'''


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def test_the_fix_computes_what_the_original_computes() -> None:
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 10]
    findings = find(analyse(SOURCE, "blocks.py"), rules, env)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f10-manual-attention-sdpa", True)]
    result = rewrite(SOURCE, findings, rules=rules, env=env, path="blocks.py")
    assert isinstance(result, Rewritten), result
    assert "scaled_dot_product_attention(q, k, v, scale=scale)" in result.new_source
    torch.manual_seed(0)
    original = _module(SOURCE, "before").AttentionBase(8, 4, 2).double()
    fixed = _module(result.new_source, "after").AttentionBase(8, 4, 2).double()
    # in the mode it was built in
    compare_modules(original, fixed, lambda: tuple(torch.randn(2, 5, 8, dtype=torch.float64) for _ in range(3)),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, modes=(True,))
