"""Family 5: the whole chain written inside the LayerNorm's call (`self.norm(x + self.dropout(h))`, the add and
the dropout nested in one statement, torch's `TransformerEncoderLayer` and most post-norm blocks' shape).

Before mech61 the strategy raised (the branch plan indexed the chain's own statements, and there are none
outside the norm's), so the site was reported without a fix. Compared with the original (torch, CPU, float32;
strict state-dict loading both ways): p=0 in eval and train with `compare_modules`, p=0.1 in training with
the same seed before each side's forward: outputs, input and parameter gradients.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f05-dropout-add-layernorm")

# The three shapes of one statement: the residual first or second, the dropout's input a name or a call.
INLINE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.ff = nn.Linear(d, d)
        self.dropout1 = nn.Dropout(p)
        self.dropout2 = nn.Dropout(p)
        self.dropout3 = nn.Dropout(p)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.norm3 = nn.LayerNorm(d)

    def forward(self, x):
        y = self.fc(x)
        x = self.norm1(x + self.dropout1(y))
        x = self.norm2(self.dropout2(self.ff(x)) + x)
        return self.norm3(x + self.dropout3(self.fc(x)))
'''

# The residual is a call written before the dropout's input: the fused call would run them in the other order.
REORDERED = '''
from torch import nn


class Block(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.attn = nn.Linear(d, d)
        self.dropout = nn.Dropout(p)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(self.attn(x) + self.dropout(self.fc(x)))
'''


def test_a_chain_inside_the_norm_call_is_rewritten() -> None:
    new = fixed(INLINE, RULES, applied=3)
    assert "x = fused_dropout_add_layer_norm(y, x, self.norm1, self.dropout1.p, self.dropout1.training)" in new
    assert "x = fused_dropout_add_layer_norm(self.ff(x), x, self.norm2, self.dropout2.p, self.dropout2.training)" in new
    assert "return fused_dropout_add_layer_norm(self.fc(x), x, self.norm3, self.dropout3.p, self.dropout3.training)" in new


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_a_chain_inside_the_norm_call_is_equivalent(p: float) -> None:
    new = fixed(INLINE, RULES, applied=3)
    old_ns, new_ns = load(INLINE, "inline_old"), load(new, "inline_new")
    torch.manual_seed(0)
    original, rewritten = old_ns["Block"](8, p), new_ns["Block"](8, p)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    if p == 0.0:
        compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8),))
        return
    x = torch.randn(3, 5, 8)
    results = []
    for module in (original, rewritten):
        module.train()
        module.zero_grad(set_to_none=True)
        xs = x.detach().clone().requires_grad_(True)
        torch.manual_seed(7)
        out = module(xs)
        out.backward(torch.ones_like(out))
        results.append((out.detach(), xs.grad, {n: q.grad for n, q in module.named_parameters()}))
    (a, a_in, a_par), (b, b_in, b_par) = results
    torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(b_in, a_in, atol=1e-4, rtol=1e-4)
    for name, grad in a_par.items():
        torch.testing.assert_close(b_par[name], grad, atol=1e-4, rtol=1e-4, msg=name)


def test_a_residual_call_written_before_the_dropout_is_declined() -> None:
    reasons = skip_reasons(REORDERED, RULES)
    assert len(reasons) == 1 and "residual is computed before the dropout's input" in reasons[0], reasons
