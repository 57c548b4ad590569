"""A rule's constant is matched by its value, not its spelling (`engine/constants.py`).

Shaped on sagar-neuron-gpt2 0.1.9 (dev2 batch 13), `sagar_neuron_gpt2/transfomer/gelu.py` lines 3-11: the tanh
GELU of Raschka's "LLMs from scratch" writes sqrt(2 / pi) as `torch.sqrt(torch.tensor(2.0 / torch.pi))`, which
the rule's spelling list (`math.sqrt(2.0 / math.pi)`, `0.7978845608`, ...) did not hold. Other spellings of the
same number: `(2 / math.pi) ** 0.5`, `np.sqrt(2 / np.pi)`, `math.sqrt(2.0 / torch.pi)`. Each fix is compared with
the original (torch, CPU, seed 0, float32, eval and train): outputs and input gradients within atol 1e-5 / rtol
1e-4 (`compare_modules`' default; the float32 tensor constant and F.gelu's own differ by float32 rounding only).
The near forms must stay silent: a constant 1 % off, and a value read from a parameter.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from adopter.engine.constants import same_number  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

GELU_RULES = rules_of("f13-gelu")

SPELLINGS = '''
import math

import numpy as np
import torch
from torch import nn


class TensorConstant(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor(2.0 / torch.pi)) *
            (x + 0.044715 * torch.pow(x, 3))
        ))


class PowerHalf(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh((2 / math.pi) ** 0.5 * (x + 0.044715 * torch.pow(x, 3))))


class NumpyConstant(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * torch.pow(x, 3))))


class OffByOnePercent(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.02 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class ScaleFromInput(nn.Module):
    def forward(self, x, k):
        return 0.5 * x * (1.0 + torch.tanh(torch.sqrt(k) * (x + 0.044715 * torch.pow(x, 3))))
'''


def test_the_constant_is_read_by_value_in_any_spelling() -> None:
    found = sorted((f.rule_id, f.scope_name, f.fixable) for f in findings_of(SPELLINGS, GELU_RULES))
    assert found == [
        ("f13-gelu-tanh-pow", "NumpyConstant", True),
        ("f13-gelu-tanh-pow", "PowerHalf", True),
        ("f13-gelu-tanh-pow", "TensorConstant", True),
    ]


def test_the_fixes_are_equivalent() -> None:
    new = fixed(SPELLINGS, GELU_RULES, applied=3)
    assert new.count('nn.functional.gelu(x, approximate="tanh")') == 3
    old_ns, new_ns = load(SPELLINGS, "constants_old"), load(new, "constants_new")
    inputs = lambda: (torch.randn(4, 33) * 3,)  # noqa: E731
    for cls in ("TensorConstant", "PowerHalf", "NumpyConstant"):
        torch.manual_seed(0)
        compare_modules(old_ns[cls](), new_ns[cls](), inputs)


@pytest.mark.parametrize("text, choices, same", [
    ("torch.sqrt(torch.tensor(2.0 / torch.pi))", ["0.7978845608", "math.sqrt(2/math.pi)"], True),
    ("torch.Tensor([2.0 / math.pi]).sqrt()", ["0.7978845608"], True),
    ("0.7978845", ["0.7978845608028654"], True),  # within float32 spacing
    ("0.79788", ["0.7978845608028654"], False),  # a different number in float32
    ("math.sqrt(2.0 / math.pi)", ["0.7978845608", "k"], False),  # a choice that is not a constant: text only
    ("k * 2", ["0.7978845608"], False),
    ("torch.tensor([1.0, 2.0])", ["1.0"], False),
], ids=["tensor", "tensor-list-method", "float32-neighbour", "other-number", "non-constant-choice", "name",
        "two-numbers"])
def test_same_number(text: str, choices: list[str], same: bool) -> None:
    assert same_number(text, choices) is same
