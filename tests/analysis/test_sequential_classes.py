"""`nn.Sequential` subclasses read as the chain of children their `__init__` hands to the Sequential."""

from __future__ import annotations

from adopter.dsl.types import Ctor, Op
from adopter.engine import Environment, check, load_rules

from .helpers import HEADER, module

BLOCKS = """
from collections import OrderedDict


class ConvBNReLU(nn.Sequential):
    def __init__(self, c_in, c_out, kernel_size=3, stride=1, norm_layer=None):
        padding = (kernel_size - 1) // 2
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel_size, stride, padding, bias=False),
            norm_layer(c_out),
            nn.ReLU6(inplace=True),
        )


class Transition(nn.Sequential):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.add_module("norm", nn.BatchNorm2d(c_in))
        self.add_module("conv", nn.Conv2d(c_in, c_out, 1, bias=False))
        self.add_module("bn", nn.BatchNorm2d(c_out))


class Named(nn.Sequential):
    def __init__(self, c):
        conv = nn.Conv2d(c, c, 1, bias=False)
        super().__init__(OrderedDict([("conv", conv), ("bn", nn.BatchNorm2d(c))]))
"""


def _line(needle: str, text: str = BLOCKS) -> int:
    """0-based line of the analysed text (the helpers' header, then `text`) holding `needle`."""
    return next(i for i, line in enumerate((HEADER + text).splitlines()) if needle in line)


def test_a_sequential_subclass_is_a_chain_of_the_children_it_builds() -> None:
    mf = module(BLOCKS)
    chains = {c.name: c for c in mf.chains}
    assert set(chains) == {"ConvBNReLU", "Transition", "Named"}
    callees = {name: [b.value.callee for b in c.init.bindings if isinstance(b.value, Ctor)]
               for name, c in chains.items() if c.init is not None}
    # `norm_layer` is what `__init__` sets it to under `if norm_layer is None`.
    assert callees["ConvBNReLU"] == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU6"]
    assert callees["Transition"] == ["torch.nn.BatchNorm2d", "torch.nn.Conv2d", "torch.nn.BatchNorm2d"]
    assert callees["Named"] == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d"]
    conv = chains["ConvBNReLU"].init.bindings[0]  # type: ignore[union-attr]
    assert conv.span.start_line == _line("nn.Conv2d(c_in, c_out, kernel_size")
    ops = [s for s in chains["Transition"].forward.body if isinstance(s, Op)]  # type: ignore[union-attr]
    assert [op.target for op in ops] == ["self.layer0", "self.layer1", "self.layer2"]
    assert all(op.origin is not None for op in ops)


def test_what_is_not_a_certain_chain_is_not_read() -> None:
    mf = module("""
    class Own(nn.Sequential):
        def __init__(self, c):
            super().__init__(nn.Conv2d(c, c, 1), nn.BatchNorm2d(c))

        def forward(self, x):  # its own forward: read like any module's
            return x


    class Maybe(nn.Sequential):
        def __init__(self, c, norm=True):
            super().__init__()
            self.add_module("conv", nn.Conv2d(c, c, 1))
            if norm:
                self.add_module("bn", nn.BatchNorm2d(c))


    class Splat(nn.Sequential):
        def __init__(self, layers):
            super().__init__(*layers)


    class Plain(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.add_module("conv", nn.Conv2d(c, c, 1))
            self.add_module("bn", nn.BatchNorm2d(c))
    """)
    assert mf.chains == ()


def test_rules_match_the_chain_and_fold_it_in_place() -> None:
    mf = module(BLOCKS)
    env = Environment("cuda", frozenset(), "2.13.0")
    findings = [f for f in check(mf, load_rules().rules, env).findings if f.family == 7]
    assert sorted(f.span.start_line for f in findings) == sorted(
        [_line("nn.Conv2d(c_in, c_out, kernel_size"), _line('("conv", nn.Conv2d(c_in'), _line("conv = nn.Conv2d(c, c")])
    assert all(f.fixable for f in findings)  # conv-BN pairs in a Sequential are folded in place (synth/strategies/conv_bn_sequential.py)


def test_a_linear_batchnorm1d_sequential_subclass_is_family_8() -> None:
    mf = module("""
    class Projection(nn.Sequential):
        def __init__(self, d_in, d_out):
            super().__init__(nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.ReLU())
    """)
    env = Environment("cpu", frozenset(), "2.13.0")
    assert [f.family for f in check(mf, load_rules().rules, env).findings] == [8]
