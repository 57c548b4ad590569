"""Layer chains built by `nn.Sequential(...)` in functions, outside any `__init__`."""

from __future__ import annotations

from adopter.dsl.types import Ctor, Op
from adopter.engine import Environment, check, load_rules

from .helpers import HEADER, module

FACTORY = """
def conv1x1(c_in, c_out):
    return nn.Conv2d(c_in, c_out, 1)


def MBConv(dim_in, dim_out, norm_layer=nn.BatchNorm2d):
    hidden = dim_in * 4
    net = nn.Sequential(
        nn.Conv2d(dim_in, hidden, 1),
        norm_layer(hidden),
        nn.GELU(),
        conv1x1(hidden, dim_out),
        nn.BatchNorm2d(dim_out),
    )
    return net
"""


def _lines(*needles: str) -> list[int]:
    """0-based lines of the analysed text (the helper's header, then FACTORY) holding each needle."""
    lines = (HEADER + FACTORY).splitlines()
    return [next(i for i, line in enumerate(lines) if n in line) for n in needles]


def test_a_sequential_in_a_function_is_a_chain_of_its_children() -> None:
    mf = module(FACTORY)
    assert mf.architectures == ()
    (chain,) = mf.chains
    assert chain.name == "MBConv" and chain.init is not None and chain.forward is not None
    callees = [(b.attr, b.value.callee) for b in chain.init.bindings if isinstance(b.value, Ctor)]
    # `norm_layer` is read from its default; `conv1x1` is a same-file factory of a Conv2d.
    assert callees == [("layer0", "torch.nn.Conv2d"), ("layer1", "torch.nn.BatchNorm2d"), ("layer2", "torch.nn.GELU"),
                       ("layer3", "torch.nn.Conv2d"), ("layer4", "torch.nn.BatchNorm2d")]
    # Each child keeps its own line.
    assert [b.span.start_line for b in chain.init.bindings] == _lines("nn.Conv2d(dim_in", "norm_layer(hidden)",
                                                                      "nn.GELU()", "conv1x1(hidden", "nn.BatchNorm2d(dim_out)")
    ops = [s for s in chain.forward.body if isinstance(s, Op)]
    assert [op.target for op in ops] == ["self.layer0", "self.layer1", "torch.nn.functional.gelu", "self.layer3",
                                         "self.layer4"]
    assert all(op.origin is not None for op in ops)


def test_what_is_not_a_positional_chain_is_not_read() -> None:
    mf = module("""
    def build(layers, dim):
        a = nn.Sequential(*layers)
        b = nn.Sequential(nn.Linear(dim, dim))

        def inner():
            return nn.Sequential(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))

        return a, b, inner
    """)
    assert mf.chains == ()


def test_rules_match_the_chain_and_fold_it_in_place() -> None:
    mf = module(FACTORY)
    env = Environment("cuda", frozenset(), "2.13.0")
    findings = [f for f in check(mf, load_rules().rules, env).findings if f.family == 7]
    assert [f.span.start_line for f in findings] == _lines("nn.Conv2d(dim_in", "conv1x1(hidden")
    assert all(f.fixable for f in findings)  # conv-BN pairs in a Sequential are folded in place (synth/strategies/conv_bn_sequential.py)
