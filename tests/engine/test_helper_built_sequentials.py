"""A same-file helper that builds the `nn.Sequential` it returns in statements of its own (the conv -> BN ->
activation helpers of segmentation and encoder packages, pytorch-toolbelt 0.8 `xresnet.py` `make_conv_bn_act`):
`bn = nn.BatchNorm2d(c)` initialised in place, a local list of `(name, layer)` pairs, an activation appended
under `if use_activation:`, then `return nn.Sequential(OrderedDict(layers))` (or `nn.Sequential(*layers)`).
`scope.bindings.InitAnalysis._built_by_helper` reads those statements as `__init__`'s are, on a state of their
own, so the conv -> BN is reported where the class's forward runs the helper's Sequential. What the helper's
statements leave open stays unread, as before: the sites are detection-only (a helper's container)."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session

HEADER = "from collections import OrderedDict\nimport torch\nfrom torch import nn\n\n\n"

HELPER = '''
def conv_norm_act(cin, cout, k=3, stride=1, zero_init=False, use_act=True):
    norm = nn.BatchNorm2d(cout)
    nn.init.constant_(norm.weight, 0.0 if zero_init else 1.0)
    layers = [
        ("conv", nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)),
        ("norm", norm),
    ]
    if use_act:
        layers.append(("act", nn.ReLU(inplace=True)))
    return nn.Sequential(OrderedDict(layers))
'''

STEM = HELPER + '''

class Stem(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.first = conv_norm_act(cin, 16, stride=2)
        self.second = conv_norm_act(16, cout, zero_init=True, use_act=USE_ACT)

    def forward(self, x):
        x = self.first(x)
        return self.second(x)
'''

BLOCK = HELPER + '''

class Block(nn.Module):
    def __init__(self, c, hidden):
        super().__init__()
        layers = [conv_norm_act(c, hidden, 1), conv_norm_act(hidden, c, 3, zero_init=True, use_act=False)]
        self.convs = nn.Sequential(*layers)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.convs(x) + x)
'''

SPLATTED = '''
def stack(cin, cout):
    layers = []
    layers.append(nn.Conv2d(cin, cout, 3, padding=1, bias=False))
    layers.append(nn.BatchNorm2d(cout))
    layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class Head(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.body = stack(c, c)
        self.out = nn.Conv2d(c, n, 1)

    def forward(self, x):
        x = self.body(x)
        return self.out(x)
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def sites(code: str, family: int = 7) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return sorted((f.scope_name, f.span.start_line) for f in found if f.family == family)


def test_each_call_of_the_helper_is_a_site_where_forward_runs_it() -> None:
    code = STEM.replace("USE_ACT", "True")
    assert sites(code) == [("Stem", line(code, "x = self.first(x)")), ("Stem", line(code, "return self.second(x)"))]


def test_the_helper_inside_a_sequential_is_read_item_by_item() -> None:
    # both items of `self.convs` hold a conv -> BN: one with the activation, one without (`use_act=False`)
    found = sites(BLOCK)
    assert found == [("Block", line(BLOCK, "return self.act"))] * 2


def test_a_list_the_helper_appends_to_and_splats_stays_the_helpers_site() -> None:
    # `nn.Sequential(*layers)` of a list the helper fills was read already, as the helper's own chain
    # (`chains.functions`): the class's reading of the same container is that one site, not a second
    assert sites(SPLATTED) == [("stack", line(SPLATTED, "nn.Conv2d(cin, cout, 3"))]


def test_the_sites_are_detection_only() -> None:
    # the helper's Sequential is another function's construction: no fold is planned for it
    s = Session(RuleContext(tuple(load_rules().rules), (), Environment("cpu", frozenset(), "2.13.0")))
    analysed = s.analysed(HEADER + STEM.replace("USE_ACT", "True"), "m.py")
    found = [f for f in analysed.findings if f.family == 7]
    assert len(found) == 2
    assert not any(s.planned(analysed, f).fixable for f in found)


@pytest.mark.parametrize(("change", "left"), [
    # a name between the conv and the norm: `conv -> act -> norm`, no conv -> BN
    (('("norm", norm),\n    ]', '("act", nn.ReLU()),\n        ("norm", norm),\n    ]'), 0),
    # the list's order is changed in place: which layer follows the conv is not evident
    (("    if use_act:", "    layers.insert(1, (\"drop\", nn.Dropout()))\n    if use_act:"), 0),
    # added to in a loop: which items the Sequential holds, and in which order, is not one pass
    (("    if use_act:", "    for i in range(2):\n        layers.append((f\"extra{i}\", nn.Conv2d(cout, cout, 1)))\n    if use_act:"), 0),
    # an early return: what the helper returns depends on the path
    (("    norm = nn.BatchNorm2d(cout)\n", "    if cout == 0:\n        return nn.Identity()\n    norm = nn.BatchNorm2d(cout)\n"), 0),
    # the norm is another class
    (("norm = nn.BatchNorm2d(cout)", "norm = nn.GroupNorm(8, cout)"), 0),
])
def test_what_the_helper_leaves_open_is_not_read(change: tuple[str, str], left: int) -> None:
    code = STEM.replace("USE_ACT", "True")
    assert len(sites(code)) == 2  # the twin: the helper as written is read
    changed = code.replace(*change)
    assert changed != code
    assert len(sites(changed)) == left


def test_a_branch_the_call_decides_is_read_on_its_path() -> None:
    # `use_norm=False` given as a literal: the BatchNorm is never added, so that call holds no site
    code = '''
def conv_block(cin, cout, use_norm=True):
    layers = [("conv", nn.Conv2d(cin, cout, 3, padding=1, bias=False))]
    if use_norm:
        layers.append(("norm", nn.BatchNorm2d(cout)))
    layers.append(("act", nn.ReLU()))
    return nn.Sequential(OrderedDict(layers))


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = conv_block(c, c)
        self.b = conv_block(c, c, use_norm=False)

    def forward(self, x):
        x = self.a(x)
        return self.b(x)
'''
    assert sites(code) == [("Net", line(code, "x = self.a(x)"))]
