"""A module built and moved in one expression (`nn.Conv2d(3, 8, 3).to(device)`, `nn.Sequential(...).cuda()`,
`nn.Linear(d, h).float()`) is the module it builds: `torch.nn.Module`'s `to`, `cuda`, `cpu`, `type`, `float`,
`double`, `half`, `bfloat16`, `to_empty`, `requires_grad_`, `train`, `eval`, `share_memory` and `apply` return
`self` (`adopter.analysis.names.naming.MODULE_SELF_METHODS`). Before, such a binding was an opaque expression:
the conv -> BN and Linear -> GELU pairs of the forward were missed, and a moved Sequential was read as an unbound
one in `__init__` (a second chain beside the forward's, once the forward saw it).

The fixes are the existing ones and keep the call (`FoldedConvBnSequential(...).to(device)`); the rewritten module
computes what the original computes: outputs, input and parameter gradients in eval and training mode
(`equivalence.compare_modules`: float64, CPU, seed 0, rtol 1e-6 / atol 1e-9). Not moved: a tensor's `.to(device)`
stays the expression it is, and a method that returns something else (`register_forward_hook`) is not read
through.
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.dsl.types import Ctor, Expr  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (6, 7)]

SOURCE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d=4, device="cpu"):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d).to(device)
        self.act = nn.GELU()
        self.conv = nn.Conv2d(3, 8, 3, padding=1).to(device).float()
        self.bn = nn.BatchNorm2d(8).to(device=device)
        self.seq = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)).to(device)
        self.scale = torch.ones(1).to(device)
        self.hook = nn.Identity().register_forward_hook(lambda *a: None)

    def forward(self, x, y):
        y = self.bn(self.conv(y))
        y = self.seq(y) * self.scale
        return self.act(self.fc(x)), y
'''


def _line(text: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def _sites() -> list[tuple[str, bool, int]]:
    return sorted((f.rule_id, f.fixable, f.span.start_line + 1) for f in find(analyse(SOURCE, "model.py"), RULES, ENV))


def test_moved_constructions_are_the_modules_they_build() -> None:
    arch = next(a for a in analyse(SOURCE, "model.py").architectures if a.name == "Block")
    assert arch.init is not None
    values = {b.attr: b.value for b in arch.init.bindings}
    for attr, callee in (("fc", "torch.nn.Linear"), ("conv", "torch.nn.Conv2d"), ("bn", "torch.nn.BatchNorm2d"),
                         ("seq", "torch.nn.Sequential")):
        assert isinstance(values[attr], Ctor) and values[attr].callee == callee, attr
    assert not isinstance(values.get("scale"), Ctor)  # a tensor moved: an expression
    assert not isinstance(values.get("hook"), Ctor)  # a method that returns a handle, not the module
    assert isinstance(values.get("hook"), Expr) or "hook" not in values


def test_pairs_of_moved_modules_are_found_once() -> None:
    assert _sites() == [
        ("f06-linear-gelu", False, _line("return self.act(self.fc(x))")),  # CUDA only: no fix on CPU
        ("f07-conv-bn", True, _line("y = self.bn(self.conv(y))")),
        ("f07-conv-bn", True, _line("y = self.seq(y) * self.scale")),
    ]


def test_the_fix_keeps_the_move_and_computes_the_same() -> None:
    findings = find(analyse(SOURCE, "model.py"), RULES, ENV)
    result = rewrite(SOURCE, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    new = result.new_source
    assert "FoldedConvBnSequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)).to(device)" in new
    assert "folded_conv_bn(y, self.conv, self.bn)" in new
    original, fixed = types.ModuleType("original"), types.ModuleType("fixed")
    exec(compile(SOURCE, "original.py", "exec"), original.__dict__)
    exec(compile(new, "fixed.py", "exec"), fixed.__dict__)
    torch.manual_seed(0)
    a = original.Block().double()
    with torch.no_grad():  # statistics a trained model would have
        for m in a.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-1, 1)
    b = fixed.Block().double()
    compare_modules(a, b, lambda: (torch.randn(2, 4, dtype=torch.float64), torch.randn(2, 3, 6, 6, dtype=torch.float64)),
                    atol=1e-9, rtol=1e-6)
