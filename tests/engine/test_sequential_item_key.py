"""An activation looked up by a literal key as an item of an `nn.Sequential` is read by its key, as the same lookup
bound to an attribute is (`key_may_be` on the item's constructor, `RuleMatcher._layer_ctor`).

Shaped on ludwig 0.11.0 `ludwig/modules/attention_modules.py:115` (`TransformerBlock.fully_connected =
nn.Sequential(nn.Linear(input_size, output_size), get_activation("relu"), nn.Linear(output_size, hidden_size))`,
`get_activation` imported from `ludwig.utils.torch_utils`): reported as Linear -> GELU before, a ReLU by its key
(dev2's labelled not-site). Rewritten at fixture size.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

CUDA = Environment("cuda", frozenset(), "2.13.0")

BLOCK = '''from torch import nn
from ludwig.utils.torch_utils import get_activation


class TransformerBlock(nn.Module):
    def __init__(self, input_size, output_size, hidden_size):
        super().__init__()
        self.fully_connected = nn.Sequential(
            nn.Linear(input_size, output_size), ACT, nn.Linear(output_size, hidden_size)
        )

    def forward(self, inputs):
        return self.fully_connected(inputs)
'''


def _f06(source: str) -> int:
    rules = [r for r in load_rules().rules if r.family == 6]
    return len(check(analyse(source, "m.py"), rules, CUDA).findings)


@pytest.mark.parametrize("act", ['get_activation("relu")', "get_activation('tanh')"])
def test_an_item_looked_up_by_another_key_is_not_a_gelu(act: str) -> None:
    assert _f06(BLOCK.replace("ACT", act)) == 0


@pytest.mark.parametrize("act", ['get_activation("gelu")', "get_activation(act)", "nn.GELU()"])
def test_an_item_looked_up_by_gelu_or_an_unknown_key_stays_a_site(act: str) -> None:
    assert _f06(BLOCK.replace("ACT", act).replace("hidden_size):", "hidden_size, act='gelu'):")) == 1
