"""A `ModuleDict`'s items looked up by literal keys (`self.layers["conv"]`) are the layers bound under those keys
(issue 20): the flow keeps the key (`analysis.flow.state.positioned_items`), the engine resolves it
(`InitIndex.resolve_ctor`). Family 7 reads a conv -> BN pair held so; its fix passes the two items to the fold
helper, which folds a stock pair at run time: the rewritten module computes what the original computes in eval
and training mode (outputs, input and parameter gradients, float32, CPU, seed 0, atol 1e-5 / rtol 1e-4,
`equivalence.compare_modules`), with random running statistics. A key bound twice, or keys from an
iterable that is not a literal, leave the item unknown: no site."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f07-conv-bn")

BRANCHES = '''
import torch
from torch import nn


class Branches(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleDict({"conv": nn.Conv2d(c, c, 3, padding=1), "bn": nn.BatchNorm2d(c)})

    def forward(self, x):
        return torch.relu(self.layers["bn"](self.layers["conv"](x)))
'''


def _randomised(module: torch.nn.Module) -> torch.nn.Module:
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return module


def test_conv_bn_items_by_key_are_a_site_and_the_fold_is_equivalent() -> None:
    assert [f.span.start_line + 1 for f in findings_of(BRANCHES, RULES)] == [12]
    new = fixed(BRANCHES, RULES, applied=1)
    assert 'folded_conv_bn(x, self.layers["conv"], self.layers["bn"])' in new
    torch.manual_seed(0)
    original = _randomised(load(BRANCHES, "orig")["Branches"](4))
    rewritten = load(new, "new")["Branches"](4)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 4, 6, 6),))


@pytest.mark.parametrize("change", [
    # "bn" bound a second time: which layer the key names is not one constructor
    ('self.layers = nn.ModuleDict({"conv": nn.Conv2d(c, c, 3, padding=1), "bn": nn.BatchNorm2d(c)})',
     'self.layers = nn.ModuleDict({"conv": nn.Conv2d(c, c, 3, padding=1), "bn": nn.BatchNorm2d(c)})\n'
     '        self.layers["bn"] = nn.GroupNorm(2, c)'),
    # keys from a comprehension over a name: which item a key names is not read
    ('nn.ModuleDict({"conv": nn.Conv2d(c, c, 3, padding=1), "bn": nn.BatchNorm2d(c)})',
     "nn.ModuleDict({k: nn.Conv2d(c, c, 3, padding=1) for k in self.names})"),
])
def test_items_by_key_that_are_not_one_constructor_stay_silent(change: tuple[str, str]) -> None:
    source = BRANCHES.replace(*change)
    assert source != BRANCHES
    assert findings_of(source, RULES) == () and findings_of(BRANCHES, RULES) != ()
