"""The in-place fold of a Sequential construction no forward runs (`adopter.analysis.chains.unrun_bindings`):
the same `FoldedConvBnSequential` fix as a run one's, equal outputs in eval (folded) and training (unfused)."""

from __future__ import annotations

import pytest

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

HEADER = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
ENV = Environment("cpu", frozenset(), "2.13.0")

UNCALLED = """
class Fusion(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        inner = c // r
        self.local_att = nn.Sequential(nn.Conv2d(c, inner, 1), nn.BatchNorm2d(inner), nn.ReLU(inplace=True))
        self.global_att = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, inner, 1), nn.BatchNorm2d(inner))
        self.global_att2 = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(c, inner, 1),
            nn.BatchNorm2d(inner),
        )

    def forward(self, x):
        return self.local_att(x) + self.global_att(x) + self.global_att(x * 2)
"""


def test_the_unrun_construction_is_folded_in_place_and_computes_the_same() -> None:
    # The fix of a Sequential construction (`FoldedConvBnSequential`, family 7's in-place fold) applies as to
    # one a forward runs: the class keeps its children and state-dict keys, whoever runs it.
    torch = pytest.importorskip("torch")
    source = HEADER + UNCALLED.lstrip("\n")
    out = Session(RuleContext(tuple(load_rules().rules), (), ENV)).fix(source, "m.py")
    assert [f.scope_name for f in out.applied if f.rule_id == "f07-conv-bn"].count("Fusion.__init__") == 1
    assert "self.global_att2 = FoldedConvBnSequential(" in out.new_source
    after = Session(RuleContext(tuple(load_rules().rules), (), ENV)).analysed(out.new_source, "m.py")
    assert not [f for f in after.findings if f.family == 7 and f.scope_name == "Fusion.__init__"]
    before_ns: dict[str, object] = {}
    after_ns: dict[str, object] = {}
    exec(compile(source, "before.py", "exec"), before_ns)  # the test's own snippet
    exec(compile(out.new_source, "after.py", "exec"), after_ns)
    torch.manual_seed(0)
    old = before_ns["Fusion"](8)  # type: ignore[operator]
    for p in old.parameters():
        torch.nn.init.normal_(p)
    for m in old.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
    new = after_ns["Fusion"](8)  # type: ignore[operator]
    new.load_state_dict(old.state_dict(), strict=True)
    x = torch.randn(2, 8, 5, 5)
    old.eval()
    new.eval()
    # Eval mode folds the BatchNorm into the convolution: equal up to float32 rounding.
    torch.testing.assert_close(new.global_att2(x), old.global_att2(x), rtol=1e-5, atol=1e-5)
    old.train()
    new.train()
    torch.testing.assert_close(new.global_att2(x), old.global_att2(x), rtol=0, atol=0)  # training: unfused


