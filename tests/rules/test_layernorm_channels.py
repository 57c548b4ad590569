"""Family 11: a LayerNorm over the channel axis written out by hand (a channels-first LayerNorm2d).

The real class is ultralytics 8.3.40's `LayerNorm2d` (`ultralytics/nn/modules/transformer.py`, from ConvNeXt),
verbatim. The fix writes `F.layer_norm(x.movedim(1, -1), x.shape[1:2], eps=eps).movedim(-1, 1)`. Compared with
the original (torch, CPU, float32, seed 0; strict state-dict loading both ways; eval and train; non-trivial
weight and bias): outputs atol 1e-5 / rtol 1e-4, input and parameter gradients atol 1e-4 / rtol 1e-4.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f11-layernorm")

ULTRALYTICS_LAYER_NORM_2D = '''
import torch
import torch.nn as nn


class LayerNorm2d(nn.Module):
    """
    2D Layer Normalization module inspired by Detectron2 and ConvNeXt implementations.

    Original implementations in
    https://github.com/facebookresearch/detectron2/blob/main/detectron2/layers/batch_norm.py
    and
    https://github.com/facebookresearch/ConvNeXt/blob/main/models/convnext.py.
    """

    def __init__(self, num_channels, eps=1e-6):
        """Initialize LayerNorm2d with the given parameters."""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x):
        """Perform forward pass for 2D layer normalization."""
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]
'''


def test_the_channel_axis_is_moved_last_and_back() -> None:
    new = fixed(ULTRALYTICS_LAYER_NORM_2D, RULES, applied=1)
    assert "x = nn.functional.layer_norm(x.movedim(1, -1), x.shape[1:2], eps=self.eps).movedim(-1, 1)" in new


@pytest.mark.parametrize("shape", [(2, 8, 5, 7), (1, 8, 3, 1)])
def test_ultralytics_layer_norm_2d_is_equivalent(shape: tuple[int, ...]) -> None:
    new = fixed(ULTRALYTICS_LAYER_NORM_2D, RULES, applied=1)
    old_cls, new_cls = load(ULTRALYTICS_LAYER_NORM_2D, "ln2d_old")["LayerNorm2d"], load(new, "ln2d_new")["LayerNorm2d"]
    torch.manual_seed(0)
    original = old_cls(8)
    with torch.no_grad():
        original.weight.add_(torch.randn(8))
        original.bias.add_(torch.randn(8))
    rewritten = new_cls(8)
    old_cls(8).load_state_dict(rewritten.state_dict(), strict=True)
    compare_modules(original, rewritten, lambda: (torch.randn(*shape) * 2 + 0.5,))
