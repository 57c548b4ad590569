"""Conv/Linear -> BatchNorm pairs whose BatchNorm class is chosen by a helper, a local `partial` or a default.

- `nn.SyncBatchNorm` is a BatchNorm of the pair (families 7 and 8): in eval mode it normalises with its running
  statistics exactly as `BatchNorm1d/2d` do (pytorchvideo 0.1.5 `models/byol.py`: `norm: Callable =
  nn.SyncBatchNorm`, then `norm(predictor_inner)` after a Linear).
- A same-file helper returning a class by a conditional (`return nn.SyncBatchNorm if is_distributed else
  nn.BatchNorm1d`: byol-pytorch, enformer-pytorch, q-transformer), called for the layer (`helper(...)(dim)`)
  or bound to a local first: each class is the layer on its own path.
- A local `norm_layer = partial(nn.BatchNorm2d, eps=1e-3)` (torchvision `mobilenetv3.py`, `maxvit.py`,
  `ssdlite.py`; torchcrepe; pix2pix copies) builds that class, as a parameter defaulting to such a partial does.
- An item of a factory's `nn.Sequential` that is one of several layers (`helper(...)(dim)`, `a if c else b`):
  each alternative is the item on its path.

The folds (`folded_conv_bn`, `folded_linear_bn`) already fold a stock `SyncBatchNorm` at run time; the fixed
modules compute what the originals compute: outputs, input and parameter gradients, in eval and training mode
(float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9). Each near form (a helper returning other
norms, a partial of `InstanceNorm2d`, an item that is a LayerNorm or nothing) stays silent.
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules, trained_statistics  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8)]

CONV = '''
import torch.distributed as dist
import torch.nn as nn


def MaybeSyncBatchnorm2d(is_distributed=None):
    is_distributed = dist.is_available() and dist.is_initialized() if is_distributed is None else is_distributed
    return nn.SyncBatchNorm if is_distributed else nn.BatchNorm2d


class Block(nn.Module):
    def __init__(self, c_in, c_out, sync=None):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = MaybeSyncBatchnorm2d(sync)(c_out)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))
'''

LINEAR = '''
from typing import Callable

import torch.nn as nn


class Predictor(nn.Module):
    def __init__(self, dim, hidden, norm: Callable = nn.SyncBatchNorm):
        super().__init__()
        self.fc = nn.Linear(dim, hidden, bias=False)
        self.norm = norm(hidden)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.norm(self.fc(x)))
'''

PARTIAL = '''
from functools import partial

import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        norm_layer = partial(nn.{norm}, eps=1e-3, momentum=0.01)
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = norm_layer(c_out)

    def forward(self, x):
        return self.bn(self.conv(x))
'''

HELPER = '''
import torch.nn as nn


def maybe_sync(is_distributed=None):
    return nn.{a} if is_distributed else nn.{b}


class Head(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc = nn.Linear(dim, hidden)
        self.bn = maybe_sync()(hidden)

    def forward(self, x):
        return self.bn(self.fc(x))
'''

FACTORY = '''
import torch.nn as nn


def maybe_sync(is_distributed=None):
    return nn.SyncBatchNorm if is_distributed else nn.BatchNorm1d


def MLP(dim, projection_size, hidden_size=4096, sync_batchnorm=None, ln=False):
    return nn.Sequential(
        nn.Linear(dim, hidden_size),
        {item},
        nn.ReLU(inplace=True),
        nn.Linear(hidden_size, projection_size),
    )
'''


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _sites(source: str) -> list[tuple[str, bool]]:
    return [(f.rule_id, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV)]


def _same(original: torch.nn.Module, fixed: torch.nn.Module, x: torch.Tensor, bn: torch.nn.Module) -> None:
    trained_statistics(bn)
    compare_modules(original, fixed, lambda: (x,), atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)


def _fixed(source: str, call: str) -> str:
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert call in result.new_source
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    return result.new_source


@pytest.mark.parametrize("sync", [False, True])
def test_a_helper_choosing_sync_or_plain_batchnorm_is_a_conv_bn_site_and_folds_either(sync: bool) -> None:
    assert _sites(CONV) == [("f07-conv-bn", True)]
    new = _fixed(CONV, "folded_conv_bn(x, self.conv, self.bn)")
    original, fixed = _module(CONV, "original"), _module(new, "fixed")
    torch.manual_seed(0)
    a = original.Block(3, 4, sync).double()
    b = fixed.Block(3, 4, sync).double()
    assert isinstance(a.bn, torch.nn.SyncBatchNorm) == sync
    _same(a, b, torch.randn(2, 3, 6, 6, dtype=torch.float64), a.bn)


def test_linear_then_a_sync_batchnorm_default_is_a_linear_bn_site_and_folds() -> None:
    assert _sites(LINEAR) == [("f08-linear-bn", True)]
    new = _fixed(LINEAR, "folded_linear_bn(x, self.fc, self.norm)")
    original, fixed = _module(LINEAR, "original"), _module(new, "fixed")
    torch.manual_seed(0)
    a, b = original.Predictor(5, 7).double(), fixed.Predictor(5, 7).double()
    _same(a, b, torch.randn(16, 5, dtype=torch.float64), a.norm)


def test_a_local_partial_of_batchnorm_is_the_layer_it_builds() -> None:
    source = PARTIAL.replace("{norm}", "BatchNorm2d")
    assert _sites(source) == [("f07-conv-bn", True)]
    new = _fixed(source, "folded_conv_bn(x, self.conv, self.bn)")
    original, fixed = _module(source, "original"), _module(new, "fixed")
    torch.manual_seed(0)
    a, b = original.Stem(3, 4).double(), fixed.Stem(3, 4).double()
    assert a.bn.eps == 1e-3
    _same(a, b, torch.randn(2, 3, 6, 6, dtype=torch.float64), a.bn)


def test_a_local_partial_of_another_norm_is_no_site() -> None:
    # The twin with a BatchNorm is a site (so this fails where local partials are not read at all).
    assert _sites(PARTIAL.replace("{norm}", "BatchNorm2d")) == [("f07-conv-bn", True)]
    assert _sites(PARTIAL.replace("{norm}", "InstanceNorm2d")) == []


def test_a_helper_returning_classes_by_a_conditional() -> None:
    assert _sites(HELPER.replace("{a}", "SyncBatchNorm").replace("{b}", "BatchNorm1d")) == [("f08-linear-bn", True)]
    assert _sites(HELPER.replace("{a}", "LayerNorm").replace("{b}", "GroupNorm")) == []


SITE_ITEM = "maybe_sync(sync_batchnorm)(hidden_size)"


@pytest.mark.parametrize(("item", "site"), [
    (SITE_ITEM, True),
    ("nn.BatchNorm1d(hidden_size) if not ln else nn.LayerNorm(hidden_size)", True),
    ("nn.LayerNorm(hidden_size) if ln else nn.Identity()", False),
    ("nn.GroupNorm(1, hidden_size) if ln else nn.Identity()", False),
])
def test_a_factory_item_that_is_one_of_several_layers(item: str, site: bool) -> None:
    assert [rule for rule, _ in _sites(FACTORY.replace("{item}", SITE_ITEM))] == ["f08-linear-bn"]
    found = _sites(FACTORY.replace("{item}", item))
    assert [rule for rule, _ in found] == (["f08-linear-bn"] if site else [])


GIVEN_OR_DEFAULT = '''
from typing import Callable, Optional

import torch.nn as nn


class BYOL(nn.Module):
    def __init__(self, predictor: Optional[nn.Module] = None, feature_dim: int = 64, inner: int = 128,
                 norm: Callable = nn.SyncBatchNorm) -> None:
        super().__init__()
        if predictor is None:
            self.predictor = nn.Sequential(
                nn.Linear(feature_dim, inner, bias=False),
                {norm},
                nn.ReLU(inplace=True),
                nn.Linear(inner, feature_dim, bias=True),
            )
        else:
            self.predictor = predictor

    def forward(self, x):
        return self.predictor(x)
'''


def test_a_default_sequential_unless_the_caller_passes_a_module_is_read_on_its_path() -> None:
    # pytorchvideo 0.1.5 `models/byol.py`: the oracle's site is the line that runs the Sequential.
    site = GIVEN_OR_DEFAULT.replace("{norm}", "norm(inner)")
    findings = find(analyse(site, "model.py"), RULES, ENV)
    assert [f.rule_id for f in findings] == ["f08-linear-bn"]
    assert findings[0].span.start_line == next(
        i for i, line in enumerate(site.splitlines()) if "return self.predictor(x)" in line)  # 0-based
    assert _sites(GIVEN_OR_DEFAULT.replace("{norm}", "nn.LayerNorm(inner)")) == []
