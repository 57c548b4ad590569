"""Same-file subclasses of torch layers bound as that layer (`adopter.analysis.idioms.layer_subclasses`)."""

from __future__ import annotations

from adopter.analysis.idioms.layer_subclasses import OWN_FORWARD
from adopter.dsl.types import Ctor
from adopter.engine import Environment, check, load_rules

from .helpers import arch, module

LAYERS = """
class StdInit(nn.Conv2d):
    def __init__(self, *args, eps=1e-6, **kwargs):
        super().__init__(*args, **kwargs)
        self.eps = eps


class Conv2dSame(nn.Conv2d):
    def forward(self, x):
        x = F.pad(x, [1, 1, 1, 1])
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class PaddedConv(Conv2dSame):
    pass


class LoRAConv(nn.Conv2d):
    def forward(self, x):
        return super().forward(x) + self.lora(x)


class Plain(nn.Linear):
    pass


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = StdInit(c, c, 3)
        self.b = Conv2dSame(c, c, 3)
        self.c = PaddedConv(c, c, 3)
        self.d = LoRAConv(c, c, 3)
        self.e = Plain(c, c)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(self.a(x))
"""


def test_bindings_to_layer_subclasses_become_the_layer() -> None:
    net = arch(LAYERS, "Net")
    assert net.init is not None
    values = {b.attr: b.value for b in net.init.bindings if isinstance(b.value, Ctor)}
    assert values["a"].callee == "torch.nn.Conv2d" and values["a"].args == ()  # its own __init__: args dropped
    assert values["b"].callee == "torch.nn.Conv2d" and len(values["b"].args) == 3
    assert (values["b"].origin or "").endswith(OWN_FORWARD + ")")
    assert values["c"].callee == "torch.nn.Conv2d" and (values["c"].origin or "").endswith(OWN_FORWARD + ")")
    assert values["d"].callee == "LoRAConv"  # adds a branch to the output: not a Conv2d any more
    assert values["e"].callee == "torch.nn.Linear" and not (values["e"].origin or "").endswith(OWN_FORWARD + ")")


def _conv_bn_findings(conv_class: str) -> list[tuple[bool, str | None]]:
    mf = module(f"""
    class Conv2dSame(nn.Conv2d):
        def forward(self, x):
            x = F.pad(x, [1, 1, 1, 1])
            return self._conv_forward(x, self.weight, self.bias)


    class Quiet(nn.Conv2d):
        pass


    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = {conv_class}(c, c, 3, bias=False)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            return self.bn(self.conv(x))
    """)
    env = Environment("cpu", frozenset(), "2.13.0")
    return [(f.fixable, f.no_fix_reason) for f in check(mf, load_rules().rules, env).findings if f.family == 7]


def test_a_subclass_that_keeps_the_layers_forward_is_fixable() -> None:
    assert _conv_bn_findings("Quiet") == [(True, None)]


def test_a_subclass_that_prepares_the_input_is_reported_without_a_fix() -> None:
    ((fixable, reason),) = _conv_bn_findings("Conv2dSame")
    assert not fixable and reason is not None and "Conv2dSame" in reason and "own forward" in reason


def test_a_layer_computed_in_float32_and_cast_back_is_the_layer_without_a_fix() -> None:
    # whisper's and CLIP's LayerNorm: `super().forward(x.float()).type(x.dtype)`; a cast of another
    # computation is not the layer.
    mf = module("""
    class LayerNorm(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.float()).type(x.dtype)


    class Scaled(nn.LayerNorm):
        def forward(self, x):
            return (super().forward(x) * 2).type(x.dtype)


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.drop = nn.Dropout(0.1)
            self.ln = LayerNorm(d)
            self.other = Scaled(d)

        def forward(self, x):
            return self.ln(x + self.drop(self.fc(x)))
    """)
    (block,) = [a for a in mf.architectures if a.name == "Block"]
    assert block.init is not None
    values = {b.attr: b.value for b in block.init.bindings if isinstance(b.value, Ctor)}
    assert values["ln"].callee == "torch.nn.LayerNorm" and (values["ln"].origin or "").endswith(OWN_FORWARD + ")")
    assert values["other"].callee == "Scaled"
    env = Environment("cpu", frozenset(), "2.13.0")
    ((fixable, reason),) = [(f.fixable, f.no_fix_reason) for f in check(mf, load_rules().rules, env).findings
                            if f.family == 5]
    assert not fixable and reason is not None and "dtype cast" in reason
