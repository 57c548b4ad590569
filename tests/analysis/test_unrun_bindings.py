"""Sequentials `__init__` binds that no forward runs, read as chains (`adopter.analysis.chains.unrun_bindings`),
and a Sequential handed to the wrapper that rebinds its attribute (`adopter.analysis.chains.methods`)."""

from __future__ import annotations

import pytest

from adopter.engine import Environment, check, load_rules

from .helpers import HEADER, module

ENV = Environment("cpu", frozenset(), "2.13.0")

# A fusion block that builds a second global branch and, as written, runs the first twice.
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

# A momentum encoder run by the training step, not by forward.
TRAINING_ONLY = """
class Byol(nn.Module):
    def __init__(self, d, h, out):
        super().__init__()
        self.projector = nn.Sequential(nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, out))
        self.momentum_projector = nn.Sequential(nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, out))

    def forward(self, x):
        return self.projector(x)

    def training_step(self, batch, idx):
        return [self.momentum_projector(f) for f in batch]
"""

# A classifier head whose call in forward is commented out (a comment does not run it).
HEAD = """
class Classifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.body = nn.Linear(dim, dim)
        self.to_out = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, classes), nn.Softmax(dim=-1))

    def forward(self, x):
        # return self.to_out(self.body(x))
        return self.body(x)
"""

# CoAtNet's MBConv: the Sequential becomes the `fn` of a pre-norm wrapper bound to the same attribute.
WRAPPED = """
class PreNorm(nn.Module):
    def __init__(self, dim, fn, norm):
        super().__init__()
        self.norm = norm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))


class MBConv(nn.Module):
    def __init__(self, inp, oup, expansion=4):
        super().__init__()
        hidden = inp * expansion
        if expansion == 1:
            self.conv = nn.Sequential(nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False),
                                      nn.BatchNorm2d(hidden), nn.GELU())
        else:
            self.conv = nn.Sequential(
                nn.Conv2d(inp, hidden, 1, 1, 0, bias=False),
                nn.BatchNorm2d(hidden),
                nn.GELU(),
                nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
                nn.BatchNorm2d(oup),
            )
        self.conv = PreNorm(inp, self.conv, nn.BatchNorm2d)

    def forward(self, x):
        return x + self.conv(x)
"""


def _found(code: str, family: int) -> list[tuple[str, int]]:
    text = HEADER + code
    lines = text.splitlines()
    out = []
    for f in check(module(code), load_rules().rules, ENV).findings:
        if f.family == family:
            out.append((f.scope_name, f.span.start_line + 1))
            if f.scope_name.endswith(".__init__"):  # a chain's site: a constructor line of the user's file
                assert "nn." in lines[f.span.start_line]
    return sorted(out)


def _line(code: str, needle: str, nth: int = 0) -> int:
    hits = [i + 1 for i, line in enumerate((HEADER + code).splitlines()) if needle in line]
    return hits[nth]


def test_a_sequential_no_forward_runs_is_a_chain() -> None:
    # global_att is run by forward (found there, once); global_att2 is built and never run: its pair is the
    # construction's.
    found = _found(UNCALLED, 7)
    assert ("Fusion.__init__", _line(UNCALLED, "nn.Conv2d(c, inner, 1),", -1)) in found
    assert [s for s, _ in found].count("Fusion.__init__") == 1
    assert len(found) == 3  # local_att, global_att (forward), global_att2 (chain)


def test_a_sequential_run_outside_forward_is_a_chain() -> None:
    found = _found(TRAINING_ONLY, 8)
    assert found == sorted([("Byol", _line(TRAINING_ONLY, "return self.projector(x)")),
                            ("Byol.__init__", _line(TRAINING_ONLY, "self.momentum_projector = nn.Sequential"))])


def test_an_unrun_head_softmax() -> None:
    assert _found(HEAD, 4) == [("Classifier.__init__", _line(HEAD, "self.to_out"))]


def test_a_sequential_a_wrapper_rebinds_is_a_chain() -> None:
    found = _found(WRAPPED, 7)
    first = _line(WRAPPED, "nn.Conv2d(hidden, hidden, 3")
    assert found == sorted([("MBConv.__init__", first), ("MBConv.__init__", _line(WRAPPED, "nn.Conv2d(inp, hidden")),
                            ("MBConv.__init__", _line(WRAPPED, "nn.Conv2d(hidden, oup"))])


@pytest.mark.parametrize("forward", [
    "return self.layers(x)",  # called
    "return self.layers[0](x) + self.layers[1](x)",  # indexed
    "for layer in self.layers:\n            x = layer(x)\n        return x",  # looped over
    "return torch.utils.checkpoint.checkpoint(self.layers, x)",  # handed to a function
    "return getattr(self, 'layers')(x)",  # by name
])
def test_a_sequential_the_forward_reaches_is_not_a_chain(forward: str) -> None:
    code = f"""
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))

    def forward(self, x):
        {forward}
"""
    assert not [c for c in module(code).chains if c.name == "Block.__init__"]


def test_reached_through_another_module_or_a_subclass_is_not_a_chain() -> None:
    code = """
class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x)


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.stem = Stem(c)

    def forward(self, x):
        return self.stem.layers(x)


class Base(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(c, c), nn.BatchNorm1d(c))

    def forward(self, x):
        return x


class Child(Base):
    def forward(self, x):
        # return self.to_out(self.body(x))
        return self.body(x)
"""
    assert [c.name for c in module(code).chains if c.name.endswith(".__init__")] == []


def test_a_rebinding_that_does_not_take_the_sequential_keeps_it_a_binding() -> None:
    code = """
class Block(nn.Module):
    def __init__(self, c, fast=False):
        super().__init__()
        self.layers = nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))
        self.layers = nn.Identity()

    def forward(self, x):
        return self.layers(x)
"""
    assert _found(code, 7) == []
