"""A convolution followed by a BatchNorm subclass that is the torch BatchNorm in eval mode only
(`adopter.analysis.crossfile.eval_norm`) is an `f07-conv-bn` site, reported without an automatic fix.

Shaped on (rewritten at fixture size):
- vacancy's `sync_batchnorm/batchnorm.py` `_SynchronizedBatchNorm(_BatchNorm).forward` (`if not
  (self._is_parallel and self.training): return F.batch_norm(input, self.running_mean, ...)`), copied as
  doclayout-yolo 0.0.4 `doclayout_yolo/nn/modules/modeling/sync_batchnorm/batchnorm.py:48` and mit-semseg 1.0.0
  `mit_semseg/lib/nn/modules/batchnorm.py`, used there as `BatchNorm2d = SynchronizedBatchNorm2d` after a conv
  (`mit_semseg/models/hrnet.py:13,38`, `models.py:5,165`);
- pytorchvideo 0.1.5 `pytorchvideo/layers/batch_norm.py:60` `NaiveSyncBatchNorm2d(nn.BatchNorm2d).forward`
  (`if get_world_size() == 1 or not self.training: return super().forward(input)`);
- timm `timm/layers/split_batchnorm.py:28` `SplitBatchNorm2d.forward` (`if self.training: ...` then
  `return super().forward(input)`).

Not sites (the nearest look-alikes): an eval test that eval mode alone does not decide (lightly's
`self.training or not self.track_running_stats`), a `_BatchNorm` subclass that normalises with batch statistics
in eval mode too (V-Net's `ContBatchNorm3d`: `F.batch_norm(..., True, ...)`), one that changes the input first,
a GroupNorm built on `_BatchNorm` (pywick's `_GroupNorm`), a convolution whose output is also read elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, find, load_rules
from adopter.session import RuleContext, Session

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (7, 8))

VACANCY = '''
    def forward(self, input):
        # the torch norm unless training across devices
        if not (self._is_parallel and self.training):
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                self.training, self.momentum, self.eps)
        mean, var = self._gather(input)
        return (input - mean[None, :, None, None]) / var[None, :, None, None]
'''
NAIVE = '''
    def forward(self, input):
        if world_size() == 1 or not self.training:
            return super().forward(input)
        return self._synced(input)
'''
SPLIT = '''
    def forward(self, input):
        if self.training:
            halves = input.split(input.shape[0] // 2)
            return torch.cat([super().forward(halves[0]), self.aux(halves[1])])
        return super().forward(input)
'''

SYNC_FILE = '''
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm


def world_size():
    return 1


class _SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1):
        super().__init__(num_features, eps=eps, momentum=momentum)
        self._is_parallel = False
{forward}

class SyncBatchNorm2d(_SyncBatchNorm):
    def _check_input_dim(self, input):
        assert input.dim() == 4
'''

USER = '''
from torch import nn

from .sync import SyncBatchNorm2d

BatchNorm2d = SyncBatchNorm2d


def conv3x3_bn_relu(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), BatchNorm2d(c_out), nn.ReLU())


class Block(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn1 = BatchNorm2d(c_out)
        self.head = conv3x3_bn_relu(c_out, c_out)

    def forward(self, x):
        out = self.conv1(x)
        out = self.bn1(out)
        return self.head(out)
'''

SAME_FILE = '''
import torch
import torch.nn.functional as F
from torch import nn


def world_size():
    return 1


class NaiveSyncBatchNorm2d(nn.BatchNorm2d):
{forward}

class Block(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = NaiveSyncBatchNorm2d(c_out)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x
'''


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _package(tmp_path: Path, name: str, files: dict[str, str], model: str) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for file, text in files.items():
        (pkg / file).write_text(text, encoding="utf-8")
    return pkg / model


def _sites(text: str, path: str | None = None, reach: CrossFileReach | None = None) -> list[tuple[str, int, bool]]:
    """(rule, 1-based line, whether `check` / `fix` call it fixable) of each site."""
    assert find(analyse(text, path, reach=reach), RULES, ENV) is not None
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    analysed = session.analysed(text, path)
    return sorted((f.rule_id, f.span.start_line + 1, session.planned(analysed, f).fixable) for f in analysed.findings)


def _line(text: str, code: str) -> int:
    found = [i + 1 for i, line in enumerate(text.splitlines()) if code in line]
    assert len(found) == 1, code
    return found[0]


def _unfixed(text: str, path: str | None = None, reach: CrossFileReach | None = None) -> None:
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    assert session.fix(text, path).new_source == text


def _user_sites(text: str) -> list[tuple[str, int, bool]]:
    # the factory's Sequential is reported where the block runs it
    return sorted([("f07-conv-bn", _line(text, "return self.head(out)"), False),
                   ("f07-conv-bn", _line(text, "out = self.conv1(x)"), False)])


def test_a_sync_batchnorm_of_another_file_aliased_as_batchnorm2d_is_a_site(tmp_path: Path) -> None:
    for i, forward in enumerate((VACANCY, NAIVE, SPLIT)):
        model = _package(tmp_path, f"semseglike{i}", {"sync.py": SYNC_FILE.format(forward=forward),
                                                      "models.py": USER}, "models.py")
        text = model.read_text(encoding="utf-8")
        assert _sites(text, str(model), _reach(tmp_path)) == _user_sites(text), i
        _unfixed(text, str(model), _reach(tmp_path))


def test_another_files_batchnorm_that_is_not_the_norm_in_eval_mode_is_no_site(tmp_path: Path) -> None:
    refused = {
        "a test eval mode does not decide": VACANCY.replace(
            "not (self._is_parallel and self.training)", "self.training or not self.track_running_stats"),
        "batch statistics in eval mode too": VACANCY.replace("self.training, self.momentum", "True, self.momentum"),
        "the input changed first": VACANCY.replace(
            "        # the torch norm", "        input = input * 2\n        # the torch norm"),
        "another tensor normalised": VACANCY.replace("F.batch_norm(input,", "F.batch_norm(input.transpose(1, 2),"),
        "a group norm on _BatchNorm": VACANCY.replace("F.batch_norm(input, self.running_mean, self.running_var,",
                                                      "F.group_norm(input, 4,"),
        "the training path in eval": SPLIT.replace("if self.training:", "if not self.training:"),
    }
    for i, (why, forward) in enumerate(refused.items()):
        model = _package(tmp_path, f"semseglike_no{i}", {"sync.py": SYNC_FILE.format(forward=forward),
                                                         "models.py": USER}, "models.py")
        assert _sites(model.read_text(encoding="utf-8"), str(model), _reach(tmp_path)) == [], why


def test_a_same_file_sync_batchnorm_is_a_site_without_a_fix() -> None:
    for forward in (NAIVE, SPLIT):
        text = SAME_FILE.format(forward=forward)
        assert _sites(text) == [("f07-conv-bn", _line(text, "x = self.conv(x)"), False)]
        _unfixed(text)


def test_a_same_file_sync_batchnorm_that_is_no_eval_norm_is_no_site() -> None:
    for forward in (NAIVE.replace("or not self.training", "and not self.training"),
                    SPLIT.replace("return super().forward(input)\n", "return super().forward(input) + 1\n")):
        assert _sites(SAME_FILE.format(forward=forward)) == [], forward


def test_a_conv_read_elsewhere_before_a_sync_batchnorm_is_no_site() -> None:
    text = SAME_FILE.format(forward=NAIVE).replace("        x = self.bn(x)\n        return x",
                                                   "        y = self.bn(x)\n        return x + y")
    assert _sites(text) == []


TWO_USERS = '''
from torch import nn

from .sync import SyncBatchNorm2d

BatchNorm2d = SyncBatchNorm2d


def conv3x3_bn_relu(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), BatchNorm2d(c_out), nn.ReLU())


class C1(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.cbr = conv3x3_bn_relu(c_in, c_out)
        self.conv_last = nn.Conv2d(c_out, 3, 1)

    def forward(self, x):
        return self.conv_last(self.cbr(x))


class C1Deepsup(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.cbr_deepsup = conv3x3_bn_relu(c_in, c_out)

    def forward(self, x):
        return self.cbr_deepsup(x)
'''


def test_a_helpers_sequential_with_a_sync_batchnorm_is_one_site_for_all_its_callers(tmp_path: Path) -> None:
    # mit-semseg 1.0.0 `mit_semseg/models/models.py:160` `conv3x3_bn_relu`, built by C1, C1DeepSup, PPM, ...:
    # the helper's chain is read with the imported BatchNorm too, so its callers' sites are that one site
    model = _package(tmp_path, "semseglike_helper", {"sync.py": SYNC_FILE.format(forward=VACANCY),
                                                     "models.py": TWO_USERS}, "models.py")
    text = model.read_text(encoding="utf-8")
    reach = _reach(tmp_path)
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    findings = session.analysed(text, str(model)).findings
    assert [(f.rule_id, f.span.start_line + 1) for f in findings] == [
        ("f07-conv-bn", _line(text, "return self.conv_last(self.cbr(x))"))]
    helper = _line(text, "return nn.Sequential(nn.Conv2d(")
    assert any(s.start_line + 1 == helper for s in (*findings[0].stmt_spans, *findings[0].init_spans))
    _unfixed(text, str(model), reach)
