"""A gated activation held by an attribute that is a same-file stateless module on one path and `None` on the
other (s5-pytorch's `self.geglu = GEGLU() if glu else None`, called under `if self.geglu is not None:`):
a call of the attribute runs only where it holds the module (calling None raises), so its forward is read
through there, and `Linear -> GEGLU` is family 14's `f14-gated-chunked` (dev2 s5-pytorch `s5_model.py:379`).

The fix is the existing one: the item class's forward becomes `fused_gated_activation(x, F.gelu)`. Each
rewrite is exec'd next to the original and compared through `adopter.verify.compare.compare` (outputs,
input gradients and every parameter's gradient; float32, `compare.TOLERANCES`: rtol 1e-4, atol 1e-5 on
outputs and 1e-4 on gradients), eval and train mode, seeds 0 and 1, CPU, with the gate on and off.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

RULES = rules_of("f14-swiglu")

# s5-pytorch 0.2.1, s5/s5_model.py lines 347-383, reduced: the S5 layer replaced by a Linear.
OPTIONAL = '''import torch
import torch.nn.functional as F


class GEGLU(torch.nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * F.gelu(gates)


class Block(torch.nn.Module):
    def __init__(self, dim: int, ff_mult: float = 1., glu: bool = True):
        super().__init__()
        self.mix = torch.nn.Linear(dim, dim)
        self.geglu = GEGLU() if glu else None
        self.ff_enc = torch.nn.Linear(dim, int(dim * ff_mult) * (1 + glu), bias=False)
        self.ff_dec = torch.nn.Linear(int(dim * ff_mult), dim, bias=False)
        self.ff_norm = torch.nn.LayerNorm(dim)

    def forward(self, x):
        x = F.gelu(self.mix(x)) + x
        fx = self.ff_norm(x)
        res = fx.clone()
        x = self.ff_enc(fx)
        if self.geglu is not None:
            x = self.geglu(x)
        x = self.ff_dec(x) + res
        return x
'''

# Not a site: the attribute holds one of two same-file modules (which one runs is the caller's choice).
TWO_MODULES = OPTIONAL.replace("class Block(", '''class ReGLU(torch.nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * F.relu(gates)


class Block(''').replace("GEGLU() if glu else None", "GEGLU() if glu else ReGLU()")

# Not a site: `None` on one path and a module bound again on another (two modules, not one).
REBOUND = OPTIONAL.replace(
    "        self.geglu = GEGLU() if glu else None\n",
    "        self.geglu = GEGLU() if glu else None\n        if ff_mult > 2:\n            self.geglu = torch.nn.ReLU()\n")


def _lines(source: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES)]


def test_a_module_or_none_attribute_is_read_through_where_it_is_called() -> None:
    line = OPTIONAL.splitlines().index("        x = self.ff_enc(fx)") + 1
    assert _lines(OPTIONAL) == [("f14-gated-chunked", line)]


def test_two_possible_modules_or_a_rebinding_stay_silent() -> None:
    assert _lines(TWO_MODULES) == []
    assert _lines(REBOUND) == []


def test_the_fix_rewrites_the_class_and_is_equivalent_with_the_gate_on_and_off() -> None:
    new = fixed(OPTIONAL, RULES, 1)
    assert "return fused_gated_activation(x, F.gelu)" in new
    assert "self.geglu = GEGLU() if glu else None" in new
    for glu in (True, False):
        torch.manual_seed(0)
        original, rewritten = load(OPTIONAL, "orig")["Block"](8, glu=glu), load(new, "new")["Block"](8, glu=glu)
        rewritten.load_state_dict(original.state_dict(), strict=True)
        for train in (False, True):
            original.train(train)
            rewritten.train(train)
            for seed in (0, 1):
                torch.manual_seed(seed)
                result = compare(original, rewritten, ((torch.randn(3, 5, 8),), {}), seed=seed, dtype=torch.float32)
                assert result.equivalent, (glu, train, seed, result)
