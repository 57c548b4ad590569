"""An `nn.Sequential()` filled by `add_module` in a loop, one layer per statement, is one pass of the loop in order.

anomalib 2.7 `models/image/ganomaly/torch_model.py` (`Encoder.extra_layers`, `pyramid_features`, `Decoder.extra_layers`),
classy_vision 0.7 `models/vision_transformer.py` (the conv stem), facexlib's `awing_arch` (on `self`): the
attribute is bound to an empty `nn.Sequential()`, then each loop pass adds a convolution, a BatchNorm and an
activation. Read as the union of what the loop adds (the base), the order was lost and no pair was found; read as
one pass (`InitAnalysis._fill_in_order`), each conv -> BN neighbour is a pair that runs whenever the loop runs.
The fix builds the Sequential as `FoldedConvBnSequential` (folds adjacent stock children at run time), and the
rewritten module computes what the original computes: outputs, input and parameter gradients in eval and
training mode (float64, CPU, seed 0, outputs and gradients at rtol 1e-6 / atol 1e-9 by
`equivalence.compare_modules`; running statistics at `torch.allclose`'s tolerances).

Not sites (each asserted after its site twin, so it fails where the form is not read at all): the BatchNorm
added before the convolution (pre-activation), an activation between them, and the BatchNorm added under an
`if` inside the loop (which pass has it is not evident).
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
RULES = [r for r in load_rules().rules if r.family == 7]

MODEL = '''
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, channels, n_features, extra_layers=2):
        super().__init__()
        self.input_layers = nn.Sequential()
        self.input_layers.add_module("initial-conv", nn.Conv2d(channels, n_features, 3, padding=1, bias=False))
        self.input_layers.add_module("initial-relu", nn.LeakyReLU(0.2, inplace=True))
        self.extra_layers = nn.Sequential()
        for layer in range(extra_layers):
            self.extra_layers.add_module(
                f"extra-layers-{layer}-conv",
                nn.Conv2d(n_features, n_features, kernel_size=3, stride=1, padding=1, bias=False),
            )
            {first}
            {second}
            self.extra_layers.add_module(f"extra-layers-{layer}-relu", nn.LeakyReLU(0.2, inplace=True))

    def forward(self, x):
        x = self.input_layers(x)
        return self.extra_layers(x)
'''

BN = 'self.extra_layers.add_module(f"extra-layers-{layer}-batchnorm", nn.BatchNorm2d(n_features))'
ACT = 'self.extra_layers.add_module(f"extra-layers-{layer}-act", nn.ReLU())'
SITE = MODEL.replace("{first}", BN).replace("{second}", "")


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _sites(source: str) -> list[tuple[str, bool]]:
    return [(f.rule_id, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV)]


def test_the_loop_pass_is_read_in_order_and_its_fold_computes_the_same() -> None:
    findings = find(analyse(SITE, "model.py"), RULES, ENV)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    result = rewrite(SITE, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "FoldedConvBnSequential" in result.new_source
    original, fixed = _module(SITE, "original"), _module(result.new_source, "fixed")
    torch.manual_seed(0)
    a = original.Encoder(3, 4, extra_layers=3).double()
    b = fixed.Encoder(3, 4, extra_layers=3).double()
    trained_statistics(a)
    # outputs, input and parameter gradients (as strict as before the harness: atol 1e-9), running statistics
    # (the harness's buffer check at torch.allclose's tolerances), in eval and training mode
    compare_modules(a, b, lambda: (torch.randn(2, 3, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6,
                    grad_atol=1e-9, same_parameters=True)


@pytest.mark.parametrize("near", [
    # the BatchNorm before the convolution: the previous pass's BN feeds this pass's conv, no conv -> BN
    MODEL.replace("{first}", "").replace("{second}", "").replace(
        "        for layer in range(extra_layers):\n",
        "        for layer in range(extra_layers):\n            " + BN + "\n"),
    MODEL.replace("{first}", ACT).replace("{second}", BN),  # an activation between them
    MODEL.replace("{first}", "if layer % 2:\n                " + BN).replace("{second}", ""),  # under an `if`
])
def test_near_forms_stay_silent(near: str) -> None:
    assert _sites(SITE) == [("f07-conv-bn", True)]
    assert _sites(near) == []
