"""The `scale_factor($s)` guard (f12-rmsnorm-l2): a multiplier that is a number, an attribute, arithmetic of
those or a size read from a shape is a factor; another activation of the forward is not."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"


def l2_findings(body: str) -> list[str]:
    src = HEADER + "class M(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n" \
        "        self.scale = dim ** 0.5\n        self.gamma = nn.Parameter(torch.ones(dim))\n\n" \
        "    def forward(self, x, other, dim=-1):\n" + "".join(f"        {ln}\n" for ln in body.splitlines())
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(src, "m.py"), load_rules().rules, env).findings
    return [f.rule_id for f in found if f.rule_id == "f12-rmsnorm-l2"]


@pytest.mark.parametrize("body", [
    "return F.normalize(x, dim = -1) * self.scale * self.gamma",              # CoLT5, x-transformers
    "return F.normalize(x, dim = -1) * (self.gamma + 1)",                      # hyper-connections
    "return F.normalize(x, dim = dim) * (x.shape[dim] ** 0.5) * self.gamma",  # make-a-video
    "return F.normalize(x, dim = -1) * math.sqrt(x.shape[-1])",                # denoising-diffusion karras
    "return F.normalize(x, dim = -1) * self.gamma.exp()",                      # a log-parametrised scale
    # denoising-diffusion-pytorch simple_diffusion.py: the gain reshaped by the input's rank
    "scale = self.gamma.reshape(*self.gamma.shape, *((1,) * (x.ndim - 2)))\n"
    "return F.normalize(x, dim = 1) * scale * (x.shape[1] ** 0.5)",
], ids=["attributes", "gamma-plus-one", "shape-pow", "sqrt-shape", "method-of-parameter", "reshaped-by-ndim"])
def test_a_factor_is_accepted(body: str) -> None:
    assert l2_findings(body) == ["f12-rmsnorm-l2"]


@pytest.mark.parametrize("body", [
    "unit = F.normalize(other, dim = -1)\nreturn (x * unit).sum(dim = -1, keepdim = True) * unit",  # hyper-connections
    "return F.normalize(x, dim = -1) * torch.sigmoid(other)",
], ids=["projection-onto-a-direction", "gate-of-another-activation"])
def test_an_activation_is_not_a_factor(body: str) -> None:
    assert l2_findings(body) == []
