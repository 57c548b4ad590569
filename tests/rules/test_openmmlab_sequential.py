"""Conv -> BatchNorm pairs inside OpenMMLab's `Sequential` (`analysis/names/library_containers.py`).

mmengine's `Sequential` (and mmcv 1.x's, `mmcv/runner/base_module.py`) is `class Sequential(BaseModule,
nn.Sequential)` with no `forward` of its own: its children run in order, as in `nn.Sequential`. Shaped on
three dev2 distributions, rewritten at fixture size:
- mmocr 1.0.1 `mmocr/models/textdet/heads/db_head.py:51-57, 80-86` (`DBHead.binarize`, and `_init_thr`
  returning the threshold branch) and `mmocr/models/textrecog/backbones/resnet31_ocr.py:98-102` (a downsample);
- mmaction2 1.2.0 `mmaction/models/utils/gcn_utils.py:373-383, 397-420` (`mstcn`: branches
  `Sequential(nn.Conv2d, nn.BatchNorm2d, act, ...)`, and `transform = Sequential(BN, act, Conv2d)` whose last
  conv runs into `self.bn` in forward);
- mmpretrain 1.2.0 `mmpretrain/models/backbones/tinyvit.py:41-60` (`ConvBN2d(Sequential)`, children added with
  `self.add_module`).

The sites have no fix: the in-place fold builds a `torch.nn.Sequential` subclass, which would drop the
`BaseModule` base (its `init_cfg` and the `init_weights` walk over the children).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.names.library_containers import spelled_by_library, torch_container
from adopter.engine import Environment, find, load_rules
from adopter.session import rewrite
from adopter.synth.types import RewriteFailed

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8)]

DB_HEAD = '''
import torch.nn as nn
from mmengine.model import BaseModule, Sequential


class DBHead(BaseModule):
    def __init__(self, in_channels, with_bias=False, init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        self.binarize = Sequential(
            nn.Conv2d(in_channels, in_channels // 4, 3, bias=with_bias, padding=1),
            nn.BatchNorm2d(in_channels // 4), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(in_channels // 4, 1, 2, 2))
        self.threshold = self._init_thr(in_channels)

    def _init_thr(self, inner_channels, bias=False):
        seq = Sequential(
            nn.Conv2d(inner_channels, inner_channels // 4, 3, padding=1, bias=bias),
            nn.BatchNorm2d(inner_channels // 4), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(inner_channels // 4, 1, 2, 2), nn.Sigmoid())
        return seq

    def forward(self, img):
        prob = self.binarize(img)
        thr = self.threshold(img)
        return prob, thr
'''

MSTCN = '''
import torch
import torch.nn as nn
from mmengine.model import BaseModule, ModuleList, Sequential


class MultiScaleTCN(BaseModule):
    def __init__(self, in_channels, out_channels, branch_c=8):
        super().__init__()
        self.act = nn.ReLU()
        branches = []
        for stride in (1, 2):
            branches.append(
                Sequential(
                    nn.Conv2d(in_channels, branch_c, kernel_size=1),
                    nn.BatchNorm2d(branch_c), self.act,
                    nn.MaxPool2d(kernel_size=(3, 1), stride=(stride, 1), padding=(1, 0))))
        self.branches = ModuleList(branches)
        self.transform = Sequential(
            nn.BatchNorm2d(2 * branch_c), self.act,
            nn.Conv2d(2 * branch_c, out_channels, kernel_size=1))
        self.bn = nn.BatchNorm2d(out_channels)

    def inner_forward(self, x):
        outs = [branch(x) for branch in self.branches]
        return self.transform(torch.cat(outs, dim=1))

    def forward(self, x):
        out = self.inner_forward(x)
        out = self.bn(out)
        return out
'''

CONV_BN = '''
import torch.nn as nn
from mmengine.model import Sequential


class ConvBN2d(Sequential):
    def __init__(self, in_channels, out_channels, kernel_size=1, init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        self.add_module("conv2d", nn.Conv2d(in_channels, out_channels, kernel_size, bias=False))
        self.add_module("bn2d", nn.BatchNorm2d(out_channels))


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = ConvBN2d(3, c)

    def forward(self, x):
        return self.conv(x)
'''

MMCV_DOWNSAMPLE = '''
import torch.nn as nn
from mmcv.runner import BaseModule, Sequential


class Stage(BaseModule):
    def __init__(self, cin, cout):
        super().__init__()
        self.downsample = Sequential(
            nn.Conv2d(cin, cout, kernel_size=1, stride=1, bias=False),
            nn.BatchNorm2d(cout))

    def forward(self, x):
        return self.downsample(x)
'''


def _lines(source: str, text: str) -> list[int]:
    return [i for i, line in enumerate(source.splitlines(), start=1) if text in line]


def _sites(source: str) -> list[int]:
    return sorted(f.span.start_line + 1 for f in find(analyse(source, "model.py"), RULES, ENV) if f.rule_id == "f07-conv-bn")


def _declined(source: str) -> list[str]:
    """The fix's reasons for leaving each site as written (every site is left: none is rewritten)."""
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, RewriteFailed), "no OpenMMLab Sequential may be rewritten"
    assert len(result.skipped) == len(findings)
    return [s.reason for s in result.skipped]


def test_the_table_maps_openmmlab_sequentials_only() -> None:
    assert torch_container("mmengine.model.Sequential") == "torch.nn.Sequential"
    assert torch_container("mmcv.runner.base_module.Sequential") == "torch.nn.Sequential"
    assert torch_container("mmengine.model.ModuleList") == "mmengine.model.ModuleList"
    assert torch_container("mypkg.layers.Sequential") == "mypkg.layers.Sequential"
    assert spelled_by_library({("mmengine.model", "Sequential"): "Sequential"}, "Sequential")
    assert not spelled_by_library({("torch.nn", "Sequential"): "Sequential"}, "Sequential")
    assert spelled_by_library({("mmengine.model", None): "mm"}, "mm.Sequential")  # a module alias
    assert spelled_by_library({("mmcv.runner", None): "mmcv.runner"}, "mmcv.runner.Sequential")
    assert not spelled_by_library({("mmengine.model", None): "mm"}, "mmx.Sequential")


def test_the_children_of_an_mmengine_sequential_pair_without_a_fix() -> None:
    # the method's Sequential at its conv; the one built in __init__ where forward calls it
    assert _sites(DB_HEAD) == [*_lines(DB_HEAD, "nn.Conv2d(inner_channels"), *_lines(DB_HEAD, "self.binarize(img)")]
    assert all("OpenMMLab" in reason for reason in _declined(DB_HEAD))


def test_branches_and_a_last_conv_running_into_the_callers_batchnorm() -> None:
    # one branch Sequential (built in a loop: one construction) and transform's last conv -> self.bn
    assert _sites(MSTCN) == [_lines(MSTCN, "nn.Conv2d(in_channels, branch_c")[0],
                             _lines(MSTCN, "out = self.bn(out)")[0]]
    assert len(_declined(MSTCN)) == 2


def test_a_subclass_of_the_mmengine_sequential_adding_its_children() -> None:
    assert len(_sites(CONV_BN)) == 1
    assert all("OpenMMLab" in reason for reason in _declined(CONV_BN))


def test_mmcv_runner_spelling() -> None:
    assert _sites(MMCV_DOWNSAMPLE) == _lines(MMCV_DOWNSAMPLE, "return self.downsample(x)")
    assert all("OpenMMLab" in reason for reason in _declined(MMCV_DOWNSAMPLE))


def test_a_module_alias_of_mmengine_is_declined_too() -> None:
    """`import mmengine.model as mm` then `mm.Sequential(...)`: the analysis reads it as an `nn.Sequential`, and the
    fix declines it as it does `from mmengine.model import Sequential`."""
    source = DB_HEAD.replace("from mmengine.model import BaseModule, Sequential",
                             "import mmengine.model as mm\nfrom mmengine.model import BaseModule").replace(
        " Sequential(", " mm.Sequential(")
    assert "mm.Sequential(" in source
    assert _sites(source) == [*_lines(source, "nn.Conv2d(inner_channels"), *_lines(source, "self.binarize(img)")]
    assert all("OpenMMLab" in reason for reason in _declined(source))

def test_the_same_pair_in_torch_s_sequential_keeps_its_fix() -> None:
    source = MMCV_DOWNSAMPLE.replace("from mmcv.runner import BaseModule, Sequential",
                                     "from torch.nn import Module as BaseModule, Sequential")
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert not isinstance(result, RewriteFailed)
    assert "FoldedConvBnSequential" in result.new_source


@pytest.mark.parametrize("norm", ["nn.GroupNorm(4, cout)", "nn.LayerNorm(cout)", "nn.InstanceNorm2d(cout)"])
def test_another_norm_in_an_mmengine_sequential_is_no_site(norm: str) -> None:
    source = MMCV_DOWNSAMPLE.replace("nn.BatchNorm2d(cout)", norm)
    assert _sites(source) == []


def test_a_batchnorm_before_the_conv_or_an_activation_between_is_no_pair() -> None:
    before = MMCV_DOWNSAMPLE.replace(
        "nn.Conv2d(cin, cout, kernel_size=1, stride=1, bias=False),\n            nn.BatchNorm2d(cout))",
        "nn.BatchNorm2d(cin),\n            nn.Conv2d(cin, cout, kernel_size=1, stride=1, bias=False))")
    between = MMCV_DOWNSAMPLE.replace("nn.BatchNorm2d(cout))", "nn.ReLU(), nn.BatchNorm2d(cout))")
    assert before != MMCV_DOWNSAMPLE and between != MMCV_DOWNSAMPLE
    assert _sites(before) == [] and _sites(between) == []


def test_a_sequential_of_another_library_is_not_read() -> None:
    source = MMCV_DOWNSAMPLE.replace("from mmcv.runner import BaseModule, Sequential",
                                     "from mypkg.layers import BaseModule, Sequential")
    assert _sites(source) == []
