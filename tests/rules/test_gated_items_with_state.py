"""A gated activation Sequential item that holds a parameter of its own (family 14, `f14-gated-chunked`, helper
`mech39`; the oracle's miss st-moe-pytorch 0.1.8 `st_moe_pytorch.py:121`).

st-moe's `GEGLU(dim_hidden, mult_bias=True)` binds `self.mult_bias = nn.Parameter(torch.ones(dim))` and its forward
is `x, gate = x.chunk(2, dim=-1); return F.gelu(gate) * x * self.mult_bias`. An item class whose forward reads its
own state only as values (no submodule call, no bare `self`) is spliced where the Sequential runs it, as the
stateless ones are, its `self.mult_bias` read as the item's (`self.net[1].mult_bias`). The fix edits the item
class's forward (`fused_gated_activation(x, F.gelu) * self.mult_bias`): exec'd next to the original and compared
through `adopter.verify.compare.compare` (outputs, input gradients and every parameter's gradient, the
`mult_bias` parameter's included; float32 tolerance of `compare.TOLERANCES`: rtol 1e-4, atol 1e-5 on outputs and
1e-4 on gradients), in eval and train mode, two seeds, CPU; state dicts load both ways with `strict=True`.
Near forms that stay silent: a stateful item that scales by its parameter without a gate (LayerScale), a
stateful GEGLU item after a convolution (no Linear), and an item whose forward calls a submodule of its own.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of  # noqa: E402

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, check, load_rules  # noqa: E402
from adopter.verify.compare import compare  # noqa: E402

RULES = rules_of("f14-swiglu")
HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nfrom torch.nn import Module\n\n\n"

# st-moe-pytorch 0.1.8, st_moe_pytorch/st_moe_pytorch.py (Sequential, GEGLU, Expert; init_ left out)
EXPERT = HEADER + '''
def exists(val):
    return val is not None

def Sequential(*mods):
    return nn.Sequential(*filter(exists, mods))

class GEGLU(Module):
    def __init__(
        self,
        dim,
        mult_bias = True
    ):
        super().__init__()
        self.mult_bias = nn.Parameter(torch.ones(dim)) if mult_bias else 1.

    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return F.gelu(gate) * x * self.mult_bias

class Expert(Module):
    def __init__(
        self,
        dim,
        hidden_mult = 4,
        mult_bias = True,
        prenorm = False
    ):
        super().__init__()
        dim_hidden = int(dim * hidden_mult * 2 / 3)

        self.net = Sequential(
            nn.LayerNorm(dim) if prenorm else None,
            nn.Linear(dim, dim_hidden * 2),
            GEGLU(dim_hidden, mult_bias = mult_bias),
            nn.Linear(dim_hidden, dim)
        )

    def forward(self, x):
        return self.net(x)
'''

NEAR = HEADER + '''
class LayerScale(Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return x * gate * self.gamma

class GEGLU(Module):
    def __init__(self, dim):
        super().__init__()
        self.mult_bias = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return F.gelu(gate) * x * self.mult_bias

class OwnGate(Module):
    def __init__(self, dim):
        super().__init__()
        self.inner = nn.Linear(dim, dim)

    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return F.gelu(self.inner(gate)) * x

class Blocks(Module):
    def __init__(self, dim):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(dim, dim * 2), LayerScale(dim), nn.Linear(dim, dim))
        self.b = nn.Sequential(nn.Conv2d(dim, dim * 2, 1), GEGLU(dim))
        self.c = nn.Sequential(nn.Linear(dim, dim * 2), OwnGate(dim), nn.Linear(dim, dim))

    def forward(self, x, y):
        return self.a(x) + self.c(x), self.b(y)
'''

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")


def _family14(source: str) -> list[tuple[str, str, int]]:
    rules = [r for r in load_rules().rules if r.family == 14]
    return [(f.rule_id, f.scope_name, f.span.start_line) for f in check(analyse(source, "case.py"), rules, CPU).findings]


def test_the_st_moe_expert_is_a_site_through_its_stateful_item() -> None:
    found = _family14(EXPERT)
    assert [(rule, scope) for rule, scope, _ in found] == [("f14-gated-chunked", "Expert")]


def test_the_item_class_is_rewritten_and_equivalent() -> None:
    new = fixed(EXPERT, RULES, 1)
    assert "return fused_gated_activation(x, F.gelu) * self.mult_bias" in new
    torch.manual_seed(0)
    original, rewritten = load(EXPERT, "orig")["Expert"](8), load(new, "new")["Expert"](8)
    with torch.no_grad():  # a mult_bias other than ones, so its gradient and its product are both exercised
        for m in (original, rewritten):
            m.net[1].mult_bias.copy_(torch.linspace(0.5, 1.5, m.net[1].mult_bias.numel()))
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, ((torch.randn(3, 5, 8),), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


def test_near_forms_of_stateful_items_stay_silent() -> None:
    assert _family14(NEAR) == []
    # and the positive form beside them: the same GEGLU item after a Linear
    positive = NEAR.replace("nn.Sequential(nn.Conv2d(dim, dim * 2, 1), GEGLU(dim))",
                            "nn.Sequential(nn.Linear(dim, dim * 2), GEGLU(dim))")
    assert [(rule, scope) for rule, scope, _ in _family14(positive)] == [("f14-gated-chunked", "Blocks")]
