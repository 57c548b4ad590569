"""A local list filled in a `for` loop in an evident order and run as `self.main = nn.Sequential(*sequence)`
holds one pass of each loop (`scope.bindings`: `_ListBuild.positions`, `InitAnalysis._one_pass`): the
pix2pix-style discriminator of taming-transformers-rom1504 0.0.6 (`taming/modules/discriminator/model.py`,
`NLayerDiscriminator`, with its `norm_layer` aliased under `if/else`) is reported where forward runs the
Sequential, fixable (`FoldedConvBnSequential` folds only stock Conv -> BatchNorm children at run time), with
the matched items' lines among its `__init__` lines, and its loop chain is not reported again. Counter-examples keep the old reading (the loop's
chain at its lines, no forward finding): an attribute the class indexes, an addition under an `if`, an
`insert`; an alias to a GroupNorm only is no site."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import functools\nimport torch\nfrom torch import nn\n\n\n"

TAMING = '''
class ActNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, num_features, 1, 1))

    def forward(self, x):
        return x + self.loc


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc=3, ndf=64, n_layers=3, use_actnorm=False):
        super(NLayerDiscriminator, self).__init__()
        if not use_actnorm:
            norm_layer = nn.BatchNorm2d
        else:
            norm_layer = ActNorm
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func != nn.BatchNorm2d
        else:
            use_bias = norm_layer != nn.BatchNorm2d

        kw = 4
        padw = 1
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        nf_mult_prev = 1
        for n in range(1, n_layers):
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

        sequence += [
            nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]
        self.main = nn.Sequential(*sequence)

    def forward(self, input):
        return self.main(input)
'''

PLAIN = '''
class Net(nn.Module):
    def __init__(self, c=8, n=3):
        super().__init__()
        layers = []
        for i in range(n):
            layers.append(nn.Conv2d(c, c, 3, padding=1, bias=False))
            layers.extend([nn.BatchNorm2d(c), nn.ReLU()])
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def conv_bn(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == 7]


@pytest.mark.parametrize(("code", "call", "conv", "bn"), [
    (TAMING, "return self.main(input)", "nn.Conv2d(ndf * nf_mult_prev", "norm_layer(ndf * nf_mult)"),
    (PLAIN, "return self.main(x)", "layers.append(nn.Conv2d", "layers.extend([nn.BatchNorm2d"),
])
def test_a_loop_filled_list_is_one_pass_of_the_loop(code: str, call: str, conv: str, bn: str) -> None:
    """Reported at forward's call; its `__init__` lines are the binding's and where the matched items
    are written (a labeller marks `layers.append(nn.Conv2d(...))`, as `bench/data/forms` does)."""
    found = conv_bn(code)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(code, call), True)]
    init_lines = {s.start_line for s in found[0].init_spans}
    assert {line(code, conv), line(code, bn), line(code, "self.main = nn.Sequential(*")} <= init_lines


@pytest.mark.parametrize(("old", "new"), [
    # the class indexes the attribute: an index past the loop is not known
    ("        return self.main(x)\n", "        return self.main(x) + self.main[0](x)\n"),
    # an addition under a condition in the loop body
    ("            layers.extend([nn.BatchNorm2d(c), nn.ReLU()])\n",
     "            if i:\n                layers.extend([nn.BatchNorm2d(c), nn.ReLU()])\n"),
    # another operation on the list
    ("        self.main = nn.Sequential(*layers)\n", "        layers.insert(0, nn.Identity())\n        self.main = nn.Sequential(*layers)\n"),
])
def test_a_list_whose_order_or_indexes_are_not_evident_keeps_the_loop_chain(old: str, new: str) -> None:
    code = PLAIN.replace(old, new)
    found = conv_bn(code)
    assert all(f.span.start_line != line(code, "return self.main(x)") for f in found)
    assert all(f.scope_name == "Net.__init__" for f in found)  # at most the loop's chain, as before


def test_an_alias_to_another_norm_only_is_no_site() -> None:
    code = TAMING.replace("norm_layer = nn.BatchNorm2d\n", "norm_layer = nn.GroupNorm\n")
    assert conv_bn(code) == []


def test_one_pass_keeps_the_loop_count_beside_the_items() -> None:
    """Hover and `adopter arch` show the loop's count as they did for the list's union of items; the
    items themselves are the pass, in order."""
    from adopter.dsl.printer import format_ctor
    from adopter.dsl.types import Ctor
    from adopter.lsp.hover_summary import layer_lines

    arch = next(a for a in analyse(HEADER + PLAIN, "m.py").architectures if a.name == "Net")
    assert arch.init is not None
    main = next(b.value for b in arch.init.bindings if b.attr == "main")
    assert isinstance(main, Ctor) and main.once and main.repeat == "n"
    assert [i.callee for i in main.items] == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"]
    assert format_ctor(main).startswith("torch.nn.Sequential{n * torch.nn.Conv2d(")
    assert any("Sequential{n × BatchNorm2d, Conv2d, ReLU}" in line for line in layer_lines(arch))
