"""Layers a same-file helper passes through, and submodules with no state inlined where called."""

from __future__ import annotations

from adopter.dsl.types import Ctor

from .helpers import arch, forward_lines, reanalysed_after

SOURCE = """
def apply_wd(module):
    for name, param in module.named_parameters():
        param.tag = name
    return module


def zero_init(layer):
    nn.init.zeros_(layer.weight)
    return layer


def rebuilt(layer):
    layer = nn.Identity()
    return layer


def geglu(x):
    a, b = x.chunk(2, dim=-1)
    return a * F.gelu(b)


class GEGLU(nn.Module):
    def forward(self, x):
        return geglu(x)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def forward(self, x):
        return x * self.scale


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = apply_wd(zero_init(nn.Linear(d, 2 * d)))
        self.odd = rebuilt(nn.Linear(d, d))
        self.act = GEGLU()
        self.scaled = Scaled()

    def forward(self, x):
        x = self.up(x)
        x = self.act(x)
        return self.scaled(x)
"""


def test_a_helper_returning_its_argument_builds_what_the_argument_builds() -> None:
    block = arch(SOURCE, name="Block")
    assert block.init is not None
    callees = {b.attr: b.value.callee for b in block.init.bindings if isinstance(b.value, Ctor)}
    assert callees["up"] == "torch.nn.Linear"
    assert callees.get("odd") != "torch.nn.Linear"  # `rebuilt` reassigns its parameter: not a pass-through


def test_a_submodule_without_state_is_inlined_and_one_with_state_is_not() -> None:
    lines = forward_lines(SOURCE, "Block")
    assert "a, b = method chunk(x, 2, dim=-1)" in lines
    assert any(line.startswith("x = operator *(a, ") for line in lines)
    assert any("module self.scaled(" in line for line in lines)  # reads self.scale: stays a module call


def test_editing_the_inlined_forward_reanalyses_its_user() -> None:
    units, same = reanalysed_after(SOURCE, "        return geglu(x)", "return F.silu(x)")
    assert "class Block" in units and same
