"""Layer lists with a conditional-expression item (`h_swish() if use_hs else nn.ReLU(inplace=True)`): the item is
one of its two layers at run time, so it holds one position of the container and its neighbours keep their own
places and readings.

Shaped on light-cnns 0.4.2, `light_cnns/MobileNet/mobilenetv3.py` lines 80-120 (the widely copied MobileNetV3
`InvertedResidual`: `self.conv = nn.Sequential(conv, bn, h_swish() if use_hs else nn.ReLU(inplace=True),
SELayer(hidden_dim) if use_se else nn.Identity(), conv, bn)` on both paths of an `if/else`), rewritten at fixture
size. Before: no conv -> BN pair of the block was found (its 8 bindings, 2 paths x 4 choices, were past the flow's
bound on alternatives, and the else path's pairs were read with the first binding's items), and a single such
Sequential reported its pairs at the whole statement instead of the two items' lines (timm, birder and
celldetection write the same form: `nn.MaxPool2d(...) if initial_pooling else nn.Identity()` after a conv-BN-ReLU
stem, celldetection 0.4.x `celldetection/models/resnet.py:39`).

A conditional item that is itself a pair member (`nn.BatchNorm2d(c) if use_bn else nn.GroupNorm(4, c)`) forms the
pair on its BatchNorm path only: a conditional binding, reported as the labelled sets count one, at the two
items' lines; the fix is the Sequential's own (`FoldedConvBnSequential` folds a Conv -> BatchNorm child pair only
when the children built are those types), so on the other path it runs the children as written. Equivalence:
outputs, input and parameter gradients in eval and training mode and the running statistics training leaves,
for both values of every flag (float64, CPU, seed 0, rtol 1e-6 / atol 1e-9).
"""

from __future__ import annotations

import itertools
import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules
from adopter.engine.path_bindings import contradicts, path_facts

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]

# light-cnns 0.4.2 light_cnns/MobileNet/mobilenetv3.py:28-120, reduced (the SE block's body, the channel rounding).
MOBILENET = '''import torch
from torch import nn


class HSwish(nn.Module):
    def forward(self, x):
        return x * nn.functional.relu6(x + 3) / 6


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c)

    def forward(self, x):
        return x * torch.sigmoid(self.fc(x.mean((2, 3)))).unsqueeze(-1).unsqueeze(-1)


class InvertedResidual(nn.Module):
    def __init__(self, inp, hidden, oup, k, use_se, use_hs):
        super().__init__()
        self.identity = inp == oup
        if inp == hidden:
            self.conv = nn.Sequential(
                nn.Conv2d(hidden, hidden, k, 1, k // 2, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden),
                HSwish() if use_hs else nn.ReLU(inplace=True),
                SE(hidden) if use_se else nn.Identity(),
                nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
                nn.BatchNorm2d(oup),
            )
        else:
            self.conv = nn.Sequential(
                nn.Conv2d(inp, hidden, 1, 1, 0, bias=False),
                nn.BatchNorm2d(hidden),
                HSwish() if use_hs else nn.ReLU(inplace=True),
                nn.Conv2d(hidden, hidden, k, 1, k // 2, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden),
                SE(hidden) if use_se else nn.Identity(),
                HSwish() if use_hs else nn.ReLU(inplace=True),
                nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
                nn.BatchNorm2d(oup),
            )

    def forward(self, x):
        if self.identity:
            return x + self.conv(x)
        return self.conv(x)
'''


def _block(items: str) -> str:
    return f'''import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c, flag):
        super().__init__()
        self.conv = nn.Sequential(
{items}
        )

    def forward(self, x):
        return self.conv(x)
'''


# The lead's reduction of the same block: one Sequential, the conditional item between two pairs.
BETWEEN = _block('''            nn.Conv2d(c, c, 3, 1, 1, bias=False),
            nn.BatchNorm2d(c),
            nn.Hardswish() if flag else nn.ReLU(inplace=True),
            nn.Conv2d(c, c, 1, 1, 0, bias=False),
            nn.BatchNorm2d(c),''')
# ... and away from both pairs, parenthesised.
AWAY = _block('''            nn.Conv2d(c, c, 3, 1, 1, bias=False),
            nn.BatchNorm2d(c),
            nn.ReLU(inplace=True),
            (nn.Identity() if flag else nn.ReLU()),
            nn.Conv2d(c, c, 1, 1, 0, bias=False),
            nn.BatchNorm2d(c),''')
# A conditional pair member: BatchNorm on one path, GroupNorm on the other.
MEMBER = _block('''            nn.Conv2d(c, c, 3, 1, 1, bias=False),
            nn.BatchNorm2d(c) if flag else nn.GroupNorm(2, c),
            nn.ReLU(inplace=True),''')
# Look-alikes that are no pair on either path.
NO_BN = _block('''            nn.Conv2d(c, c, 3, 1, 1, bias=False),
            nn.GroupNorm(2, c) if flag else nn.InstanceNorm2d(c),
            nn.ReLU(inplace=True),''')
ACT_BETWEEN = _block('''            nn.Conv2d(c, c, 3, 1, 1, bias=False),
            nn.ReLU() if flag else nn.GELU(),
            nn.BatchNorm2d(c),''')
BN_FIRST = _block('''            nn.BatchNorm2d(c) if flag else nn.Identity(),
            nn.Conv2d(c, c, 3, 1, 1, bias=False),
            nn.ReLU(inplace=True),''')


def _line(source: str, text: str, nth: int = 0) -> int:
    """The 1-based line of the `nth` line of `source` whose text, stripped, is `text`."""
    return [n + 1 for n, line in enumerate(source.splitlines()) if line.strip() == text][nth]


def _init_lines(source: str) -> list[list[int]]:
    found = find(analyse(source, "model.py"), RULES, ENV)
    return sorted([s.start_line + 1 for s in f.init_spans] for f in found)


def test_every_pair_of_the_mobilenet_block_is_a_site_at_its_items() -> None:
    src = MOBILENET
    found = find(analyse(src, "model.py"), RULES, ENV)
    assert all(f.rule_id == "f07-conv-bn" for f in found)
    dw = "nn.Conv2d(hidden, hidden, k, 1, k // 2, groups=hidden, bias=False),"
    pw = "nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),"
    first = _line(src, dw)
    expected = [[first, first + 1], [_line(src, pw), _line(src, pw) + 1],
                [_line(src, "nn.Conv2d(inp, hidden, 1, 1, 0, bias=False),"),
                 _line(src, "nn.Conv2d(inp, hidden, 1, 1, 0, bias=False),") + 1],
                [_line(src, dw, 1), _line(src, dw, 1) + 1], [_line(src, pw, 1), _line(src, pw, 1) + 1]]
    assert sorted(sorted(s.start_line + 1 for s in f.init_spans) for f in found) == sorted(expected)


def test_a_conditional_item_beside_the_pairs_keeps_each_item_s_line() -> None:
    conv = "nn.Conv2d(c, c, 3, 1, 1, bias=False),"
    pw = "nn.Conv2d(c, c, 1, 1, 0, bias=False),"
    for src in (BETWEEN, AWAY):
        assert _init_lines(src) == [[_line(src, conv), _line(src, conv) + 1], [_line(src, pw), _line(src, pw) + 1]]


def test_a_conditional_batchnorm_is_a_pair_on_its_path_at_the_items_lines() -> None:
    conv = _line(MEMBER, "nn.Conv2d(c, c, 3, 1, 1, bias=False),")
    found = find(analyse(MEMBER, "model.py"), RULES, ENV)
    assert [sorted(s.start_line + 1 for s in f.init_spans) for f in found] == [[conv, conv + 1]]
    # matched on the path where the BatchNorm is built, with that binding only
    assert {b.condition for f in found for b in f.match.bindings} == {"flag"}


@pytest.mark.parametrize("src", [NO_BN, ACT_BETWEEN, BN_FIRST], ids=["no-batchnorm", "act-between", "bn-first"])
def test_look_alikes_are_not_pairs(src: str) -> None:
    assert find(analyse(src, "model.py"), RULES, ENV) == ()


def test_a_test_taken_true_makes_its_conjuncts_known() -> None:
    # the flow's branch over a Sequential's bindings: one `if` test, one choice of each conditional item
    tests = ("inp == hidden and use_hs", "inp == hidden and not (use_hs)", "not (inp == hidden) and use_hs", "else")
    facts = path_facts(((tests, 2),))
    assert contradicts("inp == hidden and use_hs", facts)
    assert contradicts("not (inp == hidden) and not (use_hs)", facts)
    assert not contradicts("not (inp == hidden) and use_hs", facts)
    # a test taken false says nothing of its conjuncts one by one
    assert not contradicts("inp == hidden", path_facts(((("inp == hidden and use_hs", "else"), 1),)))


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _fixed(source: str) -> str:
    from adopter.session import rewrite
    from adopter.synth import Rewritten

    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    return result.new_source


def test_the_fix_keeps_each_conditional_item_verbatim() -> None:
    for src in (MOBILENET, BETWEEN, MEMBER):
        new = _fixed(src)
        for line in src.splitlines():
            if " if " in line and " else " in line and "nn.Sequential" not in line:
                assert line in new.splitlines()
        assert new.count("FoldedConvBnSequential(\n") == (2 if src is MOBILENET else 1)


@pytest.mark.torch
@pytest.mark.parametrize("inp, use_se, use_hs", list(itertools.product((4, 8), (False, True), (False, True))))
def test_the_fixed_mobilenet_block_computes_what_the_original_computes(inp: int, use_se: bool, use_hs: bool) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules, trained_statistics

    new = _fixed(MOBILENET)
    original = _module(MOBILENET, "before").InvertedResidual(inp, 8, 4, 3, use_se, use_hs).double()
    fixed = _module(new, "after").InvertedResidual(inp, 8, 4, 3, use_se, use_hs).double()
    torch.manual_seed(0)
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, inp, 6, 6, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=1e-9, buffer_rtol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("flag", [False, True])
def test_the_fixed_conditional_member_computes_what_the_original_computes(flag: bool) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules, trained_statistics

    new = _fixed(MEMBER)
    original = _module(MEMBER, "before").Block(4, flag).double()
    fixed = _module(new, "after").Block(4, flag).double()
    torch.manual_seed(0)
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, 4, 6, 6, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=1e-9, buffer_rtol=1e-6)


# A Sequential a method of the class builds and returns, its BatchNorm a conditional item: lightning-bolts 0.7.0
# `pl_bolts/models/gans/srgan/components.py:120-130` (`_make_conv_block`, `batch_norm=True`) and
# `dcgan/components.py:79`, deepinv `deepinv/models/multispectral.py:34-54` (`nn.BatchNorm2d(c) if self.batch_norm
# else nn.Identity()`, fresh6 G3), rewritten. The method's chain read the conditional item as no layer at all, so
# the pair was not found (a function's chain already read it as each of its layers on its path).
METHOD_BUILT = '''import torch
from torch import nn


class Discriminator(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.blocks = nn.Sequential(self._block(c, c, batch_norm=False), self._block(c, c))

    def _block(self, cin, cout, batch_norm=True):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1),
            nn.BatchNorm2d(cout) if batch_norm else nn.Identity(),
            nn.LeakyReLU(0.2, inplace=True),
        )

    def forward(self, x):
        return self.blocks(x)
'''
METHOD_NOT_A_PAIR = METHOD_BUILT.replace("nn.BatchNorm2d(cout) if batch_norm else nn.Identity()",
                                         "nn.GroupNorm(2, cout) if batch_norm else nn.Identity()")


def test_a_method_s_sequential_with_a_conditional_batchnorm_is_a_site() -> None:
    conv = _line(METHOD_BUILT, "nn.Conv2d(cin, cout, 3, padding=1),")
    found = find(analyse(METHOD_BUILT, "model.py"), RULES, ENV)
    assert [sorted(s.start_line + 1 for s in f.init_spans) for f in found] == [[conv, conv + 1]]
    assert find(analyse(METHOD_NOT_A_PAIR, "model.py"), RULES, ENV) == ()
