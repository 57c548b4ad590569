"""Family 6 on an activation a same-file ladder builds for a config field's default (open-moonvit `main.py:779`:
`self.act = _get_activation(config.hidden_act)`, `hidden_act: str = "gelu_pytorch_tanh"` in a same-file
`@dataclass`; `scope.config_fields`). The fix's helper reads the activation at run time (a GELU's own
`approximate`; anything else runs the original modules), so the fixed module computes the same."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session

HEADER = "import torch\nimport torch.nn as nn\nfrom dataclasses import dataclass\n"
CUDA = Environment("cuda", frozenset(), "2.13.0")

MOONVIT = '''

@dataclass
class MoonViTConfig:
    hidden_size: int = 16
    intermediate_size: int = 64
    hidden_act: str = "gelu_pytorch_tanh"


def _get_activation(name: str) -> nn.Module:
    if name == "gelu_pytorch_tanh":
        return nn.GELU(approximate="tanh")
    if name == "gelu":
        return nn.GELU()
    if name == "relu":
        return nn.ReLU()
    raise ValueError(f"Unsupported activation: {name!r}")


class MoonViTMLP(nn.Module):
    def __init__(self, config: MoonViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=True)
        self.act = _get_activation(config.hidden_act)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=True)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
'''


def _family6(code: str) -> list[int]:
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, CUDA)
    return [f.span.start_line - HEADER.count("\n") for f in result.findings if f.family == 6]


def test_linear_then_the_configured_gelu_is_found() -> None:
    at = next(i for i, ln in enumerate(MOONVIT.splitlines()) if "return self.fc2(self.act(self.fc1(x)))" in ln)
    assert _family6(MOONVIT) == [at]
    relu = MOONVIT.replace('hidden_act: str = "gelu_pytorch_tanh"', 'hidden_act: str = "relu"')
    assert _family6(relu) == []


@pytest.mark.parametrize("act", ["gelu_pytorch_tanh", "gelu", "relu"])
def test_the_fixed_module_computes_the_same_whatever_the_config(act: str) -> None:
    # The fix is written for the default configuration; a model built with another `hidden_act` runs the
    # helper's run-time check (CPU, seed 0: the helper's CPU path is `F.gelu(F.linear(...))`, the same ops).
    torch = pytest.importorskip("torch")
    source = HEADER + MOONVIT
    out = Session(RuleContext(tuple(load_rules().rules), (), CUDA)).fix(source, "m.py")
    assert [f.rule_id for f in out.applied] == ["f06-linear-gelu"]
    before_ns: dict[str, object] = {}
    after_ns: dict[str, object] = {}
    exec(compile(source, "before.py", "exec"), before_ns)  # the test's own snippet
    exec(compile(out.new_source, "after.py", "exec"), after_ns)
    torch.manual_seed(0)
    old = before_ns["MoonViTMLP"](before_ns["MoonViTConfig"](hidden_act=act))  # type: ignore[operator]
    new = after_ns["MoonViTMLP"](after_ns["MoonViTConfig"](hidden_act=act))  # type: ignore[operator]
    new.load_state_dict(old.state_dict(), strict=True)
    x = torch.randn(3, 5, 16)
    torch.testing.assert_close(new(x), old(x), rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(new(x), old(x), rtol=0, atol=0)


def test_an_only_gelu_ladder_with_an_unannotated_config_is_fixed_and_computes_the_same() -> None:
    # attr-eomt's `_act(config.hidden_act)`: only "gelu" returns (a GELU), anything else raises
    torch = pytest.importorskip("torch")
    eomt = MOONVIT.replace("config: MoonViTConfig", "config").replace(
        '    if name == "gelu_pytorch_tanh":\n        return nn.GELU(approximate="tanh")\n', "").replace(
        '    if name == "relu":\n        return nn.ReLU()\n', "").replace('"gelu_pytorch_tanh"', '"gelu"')
    at = next(i for i, ln in enumerate(eomt.splitlines()) if "return self.fc2(self.act(self.fc1(x)))" in ln)
    assert _family6(eomt) == [at]
    source = HEADER + eomt
    out = Session(RuleContext(tuple(load_rules().rules), (), CUDA)).fix(source, "m.py")
    assert [f.rule_id for f in out.applied] == ["f06-linear-gelu"]
    before_ns: dict[str, object] = {}
    after_ns: dict[str, object] = {}
    exec(compile(source, "before.py", "exec"), before_ns)  # the test's own snippet
    exec(compile(out.new_source, "after.py", "exec"), after_ns)
    torch.manual_seed(0)
    old = before_ns["MoonViTMLP"](before_ns["MoonViTConfig"]())  # type: ignore[operator]
    new = after_ns["MoonViTMLP"](after_ns["MoonViTConfig"]())  # type: ignore[operator]
    new.load_state_dict(old.state_dict(), strict=True)
    x = torch.randn(3, 5, 16)
    torch.testing.assert_close(new(x), old(x), rtol=0, atol=0)  # CPU, seed 0: the same ops
