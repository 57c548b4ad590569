"""Conv -> BatchNorm pairs in a factory function's `nn.Sequential` whose BatchNorm class is a local name of the
function (`analysis/chains/local_classes.py`).

Shaped on lucidrains' factories, rewritten at fixture size:
- metnet3-pytorch 0.0.12 `metnet3_pytorch/metnet3_pytorch.py:48-50, 303-331` (dev2): `MaybeSyncBatchnorm2d()`
  returns `nn.SyncBatchNorm if is_distributed else nn.BatchNorm2d`; `MBConv` binds it to `batchnorm_klass` and
  builds `Sequential(nn.Conv2d(...), batchnorm_klass(hidden_dim), nn.GELU(), ...)` (three pairs).
- q-transformer `q_transformer/q_robotic_transformer.py:119-121, 247-279`: the same helper, bound to `norm_klass`
  on the `else` of `if use_layernorm: norm_klass = ChanRMSNorm`: a choice on the factory's own parameter, left
  to its callers as for any factory (a refusal here).
- enformer-pytorch `enformer_pytorch/modeling_enformer.py:59, 214-221`: `batchnorm_klass(dim)` *before* the
  Conv1d: no pair (a refusal).

The fix is the one a factory's Sequential already gets (`FoldedConvBnSequential`, which folds a stock
BatchNorm2d / SyncBatchNorm child at run time and runs any other child as before); the fixed factory builds
modules that compute what the original's do: outputs, input and parameter gradients and buffers, in eval and
training mode (float64, CPU, seed 0, atol 1e-9 / rtol 1e-6).
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

HELPER = '''
import torch
import torch.distributed as dist
import torch.nn as nn


def MaybeSyncBatchnorm2d(is_distributed=None):
    if is_distributed is None:
        is_distributed = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
    return nn.SyncBatchNorm if is_distributed else nn.BatchNorm2d


class ChanRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, dim, 1, 1))

    def forward(self, x):
        return nn.functional.normalize(x, dim=1) * x.shape[1] ** 0.5 * self.gamma
'''

MBCONV = HELPER + '''

def MBConv(dim_in, dim_out, expansion=2, is_distributed=None):
    hidden = dim_out * expansion
    batchnorm_klass = MaybeSyncBatchnorm2d(is_distributed)
    return nn.Sequential(
        nn.Conv2d(dim_in, hidden, 1),
        batchnorm_klass(hidden),
        nn.GELU(),
        nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden),
        batchnorm_klass(hidden),
        nn.GELU(),
        nn.Conv2d(hidden, dim_out, 1),
        batchnorm_klass(dim_out),
    )
'''

CHOSEN = HELPER + '''

def MBConv(dim_in, dim_out, use_layernorm=True, is_distributed=None):
    if use_layernorm:
        norm_klass = ChanRMSNorm
    else:
        norm_klass = MaybeSyncBatchnorm2d(is_distributed)
    return nn.Sequential(
        nn.Conv2d(dim_in, dim_out, 1),
        norm_klass(dim_out),
        nn.GELU(),
    )
'''


def _lines(source: str, text: str) -> list[int]:
    """0-based lines holding `text` (a finding's span is 0-based)."""
    return [i for i, line in enumerate(source.splitlines()) if text in line]


def _sites(source: str) -> list[tuple[str, int, bool]]:
    return [(f.rule_id, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV)]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _fixed(source: str) -> str:
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "return FoldedConvBnSequential(" in result.new_source
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    return result.new_source


def _same(a: torch.nn.Module, b: torch.nn.Module, x: torch.Tensor) -> None:
    trained_statistics(a)
    compare_modules(a, b, lambda: (x,), atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)


def test_a_local_bound_to_a_helper_returning_batchnorm_classes_is_each_pairs_norm() -> None:
    assert _sites(MBCONV) == [("f07-conv-bn", line, True) for line in _lines(MBCONV, "nn.Conv2d(")]


@pytest.mark.parametrize("sync", [False, True])
def test_the_fixed_factory_computes_what_the_original_does(sync: bool) -> None:
    new = _fixed(MBCONV)
    original, fixed = _module(MBCONV, "original"), _module(new, "fixed")
    torch.manual_seed(0)
    a = original.MBConv(3, 4, is_distributed=sync).double()
    b = fixed.MBConv(3, 4, is_distributed=sync).double()
    assert isinstance(a[1], torch.nn.SyncBatchNorm) == sync
    assert type(b).__name__ == "FoldedConvBnSequential"
    _same(a, b, torch.randn(2, 3, 6, 6, dtype=torch.float64))


def test_a_local_chosen_on_the_factory_s_own_flag_is_left_to_its_callers() -> None:
    # q-transformer's form: which norm the factory builds is its callers' choice (`use_layernorm=True` by
    # default builds no BatchNorm); the factory's own chain reads no choice on its parameters, as for
    # gigagan-pytorch's `proj` (`tests/engine/test_factory_helper_locals.py`).
    assert _sites(CHOSEN) == []
    assert _sites(CHOSEN.replace("use_layernorm=True", "use_layernorm=False")) == []


def test_a_local_alias_of_a_torch_batchnorm_class() -> None:
    source = MBCONV.replace("batchnorm_klass = MaybeSyncBatchnorm2d(is_distributed)", "batchnorm_klass = nn.BatchNorm2d")
    assert [rule for rule, _, _ in _sites(source)] == ["f07-conv-bn"] * 3


@pytest.mark.parametrize("binding", [
    "batchnorm_klass = nn.InstanceNorm2d",  # another norm
    "batchnorm_klass = ChanRMSNorm",  # a same-file norm that is no BatchNorm
    "batchnorm_klass = nn.LayerNorm if is_distributed else nn.GroupNorm",  # a helper-like choice of other norms
])
def test_a_local_naming_another_norm_is_no_site(binding: str) -> None:
    assert _sites(MBCONV.replace("batchnorm_klass = MaybeSyncBatchnorm2d(is_distributed)", binding)) == []


def test_a_batchnorm_before_the_convolution_is_no_pair() -> None:
    # enformer-pytorch's ConvBlock: norm, activation, then the convolution.
    source = HELPER + '''

def ConvBlock(dim, dim_out, kernel_size=1, is_distributed=None):
    batchnorm_klass = MaybeSyncBatchnorm2d(is_distributed)
    return nn.Sequential(
        batchnorm_klass(dim),
        nn.GELU(),
        nn.Conv2d(dim, dim_out, kernel_size, padding=kernel_size // 2),
    )
'''
    assert _sites(source) == []


def test_a_name_bound_only_after_the_sequential_is_not_read_there() -> None:
    # The item calls the parameter (None unless the caller passes a class); the later binding is for another use.
    source = HELPER + '''

def Block(dim_in, dim_out, norm=None):
    block = nn.Sequential(nn.Conv2d(dim_in, dim_out, 1), norm(dim_out), nn.GELU())
    norm = nn.BatchNorm2d
    return block, norm(dim_out)
'''
    assert _sites(source) == []
