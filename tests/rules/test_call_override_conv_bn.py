"""A module that overrides `__call__` and defines no `forward` runs `__call__` when called (audio-separator
0.47.1 `uvr_lib_v5/vr_network/layers_new.py` `Conv2DBNActiv`, dev2 batch 3): that is its forward, so the
conv -> BN pair of its `nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...), activ())` is a site, at the conv's
constructor, and the in-place fold (`FoldedConvBnSequential`) is its fix. The rewritten module computes what
the original computes: outputs, input and parameter gradients in eval and training mode, and the running
statistics training leaves (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9).
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

MODEL = '''
import torch
from torch import nn


class Conv2DBNActiv(nn.Module):
    def __init__(self, nin, nout, ksize=3, stride=1, pad=1, dilation=1, activ=nn.ReLU):
        super(Conv2DBNActiv, self).__init__()
        self.conv = nn.Sequential(nn.Conv2d(nin, nout, kernel_size=ksize, stride=stride, padding=pad, dilation=dilation, bias=False), nn.BatchNorm2d(nout), activ())

    def __call__(self, input_tensor):
        return self.conv(input_tensor)
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def test_the_pair_is_a_site_at_the_conv_and_its_fold_computes_the_same() -> None:
    findings = find(analyse(MODEL, "model.py"), RULES, ENV)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    assert {s.start_line for s in findings[0].init_spans} == {MODEL.splitlines().index(
        next(t for t in MODEL.splitlines() if "nn.Conv2d(nin" in t))}
    result = rewrite(MODEL, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    original, fixed = _module(MODEL, "original"), _module(result.new_source, "fixed")
    torch.manual_seed(0)
    a = original.Conv2DBNActiv(3, 4).double()
    trained_statistics(a.conv[1])
    b = fixed.Conv2DBNActiv(3, 4).double()
    # running statistics equal to the bit
    compare_modules(a, b, lambda: (torch.randn(2, 3, 8, 8, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=0, buffer_rtol=0)


def test_an_activation_between_conv_and_norm_stays_silent() -> None:
    code = MODEL.replace("nn.BatchNorm2d(nout), activ())", "activ(), nn.BatchNorm2d(nout))")
    assert len(find(analyse(MODEL, "model.py"), RULES, ENV)) == 1
    assert find(analyse(code, "model.py"), RULES, ENV) == ()


def test_a_forward_beside_call_is_what_is_read() -> None:
    # `forward` defined: `__call__` is a wrapper around it, not the computation (here it skips the norm).
    code = MODEL.replace("    def __call__(self, input_tensor):\n        return self.conv(input_tensor)\n",
                         "    def forward(self, input_tensor):\n        return self.conv[0](input_tensor)\n\n"
                         "    def __call__(self, input_tensor):\n        return self.conv(input_tensor)\n")
    assert find(analyse(code, "model.py"), RULES, ENV) == () != find(analyse(MODEL, "model.py"), RULES, ENV)
