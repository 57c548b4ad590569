"""A tensor method called on an `nn.Parameter` the module holds (`self.weights.softmax(-1)`) is the tensor's
method, not a call of a submodule's method: family 4 sees the softmax.

The form recurs across packages (supar's `ScalarMix`, ESMFold's `self.logits.softmax(-1)`, recbole's CPR
heads, NeMo's multichannel weights, timm's EfficientViM, fla's HGRN); the flow read `self.weights.softmax`
as a method of a submodule because `__init__` binds `self.weights` to a constructor (`nn.Parameter`).
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

RULES = rules_of("f04-softmax")

MIX = '''
import torch
import torch.nn as nn


class ScalarMix(nn.Module):
    def __init__(self, n_layers, dropout=0):
        super().__init__()
        self.weights = WEIGHTS
        self.gamma = nn.Parameter(torch.tensor([1.0]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, tensors):
        normed_weights = self.dropout(self.weights.softmax(AXIS))
        weighted_sum = sum(w * h for w, h in zip(normed_weights, tensors))
        return self.gamma * weighted_sum
'''

MIXER = '''

class Mixer(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(n))

    def softmax(self, dim):
        return self.w.sigmoid()
'''


def _lines(source: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES)]


def test_softmax_of_a_parameter_over_its_last_axis_is_a_site() -> None:
    source = MIX.replace("WEIGHTS", "nn.Parameter(torch.zeros(n_layers))").replace("AXIS", "-1")
    assert _lines(source) == [("f04-softmax", 14)]


def test_softmax_of_a_2d_parameter_over_its_first_axis_is_not_a_site() -> None:
    source = MIX.replace("WEIGHTS", "nn.Parameter(torch.zeros(n_layers, 4))").replace("AXIS", "0")
    assert _lines(source) == []


def test_a_submodules_own_softmax_method_is_not_a_site() -> None:
    # `self.weights` is a module of the file whose method `softmax` computes something else.
    source = MIX.replace("WEIGHTS", "Mixer(n_layers)").replace("AXIS", "-1") + MIXER
    assert _lines(source) == []


def test_an_attribute_bound_to_a_module_on_another_path_is_not_read_as_a_tensor() -> None:
    source = MIX.replace(
        "        self.weights = WEIGHTS\n",
        "        if dropout:\n            self.weights = Mixer(n_layers)\n"
        "        else:\n            self.weights = nn.Parameter(torch.zeros(n_layers))\n",
    ).replace("AXIS", "-1") + MIXER
    assert _lines(source) == []
