"""Family 14: a gated MLP whose two halves are read by index from the tuple a split returns
(`t = h.chunk(2, dim=-1)`, `act(t[0]) * t[1]`), not unpacked.

The form recurs in transformers (GraniteMoeShared, GraniteMoeHybrid, JetMoe, Zamba2), Megatron-core's GLU experts
and ChatGLM's swiglu (diffusers' Kolors text encoder): the census in `docs/notes/mech55.md`. Detection only.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

RULES = rules_of("f14-swiglu")

INDEXED = '''
import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * h)
        self.fc2 = nn.Linear(h, d)
        self.act = ACT

    def forward(self, x):
        t = SPLIT
        y = PRODUCT
        return self.fc2(y)
'''


def _sites(product: str, split: str = "self.fc1(x).chunk(2, dim=-1)", act: str = "nn.SiLU()") -> list[tuple[str, int]]:
    source = INDEXED.replace("PRODUCT", product).replace("SPLIT", split).replace("ACT", act)
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES)]


@pytest.mark.parametrize(("product", "rule"), [
    ("F.silu(t[0]) * t[1]", "f14-gated-chunked-indexed"),
    ("t[1] * F.gelu(t[0])", "f14-gated-chunked-indexed"),
    ("t[0] * F.silu(t[1])", "f14-gated-chunked-indexed-last"),
    ("F.gelu(t[1]) * t[0]", "f14-gated-chunked-indexed-last"),
])
def test_halves_read_by_index_are_a_gated_mlp(product: str, rule: str) -> None:
    assert _sites(product) == [(rule, 15)]


@pytest.mark.parametrize("split", ["torch.chunk(self.fc1(x), 2, dim=-1)", "self.fc1(x).split(7, dim=-1)"])
def test_every_spelling_of_the_split_is_read(split: str) -> None:
    assert _sites("F.silu(t[0]) * t[1]", split) == [("f14-gated-chunked-indexed", 15)]


def _looked_up(key: str) -> str:
    source = INDEXED.replace("ACT", key).replace("PRODUCT", "self.act(t[0]) * t[1]")
    source = source.replace("SPLIT", "self.fc1(x).chunk(2, dim=-1)")
    source = source.replace("def __init__(self, d, h):", "def __init__(self, d, h, config):")
    return source.replace("import torch\n", "import torch\nfrom transformers.activations import ACT2FN\n", 1)


def test_an_activation_looked_up_by_a_config_key_is_read() -> None:
    found = [(f.rule_id, f.span.start_line + 1) for f in findings_of(_looked_up("ACT2FN[config.hidden_act]"), RULES)]
    compile(_looked_up("ACT2FN[config.hidden_act]"), "case.py", "exec")
    assert found == [("f14-gated-chunked-indexed", 16)]


@pytest.mark.parametrize(("product", "split"), [
    ("F.silu(t[0]) * t[0]", "self.fc1(x).chunk(2, dim=-1)"),  # one half twice
    ("F.silu(t[0]) * t[1]", "self.fc1(x).chunk(2, dim=1)"),  # halves of another axis
    ("torch.sigmoid(t[0]) * t[1]", "self.fc1(x).chunk(2, dim=-1)"),  # a GLU with sigmoid, not SiLU/GELU
    ("F.silu(t[0]) * t[1]", "x.chunk(2, dim=-1)"),  # no projection split
])
def test_other_products_are_not_a_gated_mlp(product: str, split: str) -> None:
    assert _sites(product, split) == []


def test_an_activation_chosen_by_a_literal_key_outside_the_list_is_not_a_gated_mlp() -> None:
    source = _looked_up('ACT2FN["relu"]')
    compile(source, "case.py", "exec")
    assert [f.rule_id for f in findings_of(source, RULES)] == []
