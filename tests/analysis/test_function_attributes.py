"""An attribute `__init__` binds to a same-file function is that function where forward calls it (issue 20,
family 14: ChatGLM's `self.activation_func = swiglu`, as diffusers' Kolors text encoder and Megatron's MLP
write it; `adopter.analysis.idioms.function_attributes`)."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

from .helpers import forward_lines, reanalysed_after

ENV = Environment("cpu", frozenset(), "2.13.0")
HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"

MODULE_LEVEL = HEADER + '''
def swiglu(x):
    x = torch.chunk(x, 2, dim=-1)
    return F.silu(x[0]) * x[1]


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(d, hidden * 2, bias=False)
        self.activation_func = swiglu
        self.dense_4h_to_h = nn.Linear(hidden, d, bias=False)

    def forward(self, hidden_states):
        intermediate = self.dense_h_to_4h(hidden_states)
        intermediate = self.activation_func(intermediate)
        return self.dense_4h_to_h(intermediate)
'''

NESTED = HEADER + '''
class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.fc1 = nn.Linear(config.hidden, 2 * config.ffn)

        def glu(x):
            x = torch.chunk(x, 2, dim=-1)
            return F.gelu(x[0]) * x[1]

        self.activation_func = glu
        self.fc2 = nn.Linear(config.ffn, config.hidden)

    def forward(self, x):
        return self.fc2(self.activation_func(self.fc1(x)))
'''


ALIASED = HEADER + '''
def swiglu(x, y):
    return F.silu(x.float(), inplace=False).to(x.dtype) * y


class FeedForward(nn.Module):
    def __init__(self, dim, inner_dim):
        super().__init__()
        self.swiglu = swiglu
        self.linear_1 = nn.Linear(dim, inner_dim, bias=False)
        self.linear_2 = nn.Linear(inner_dim, dim, bias=False)
        self.linear_3 = nn.Linear(dim, inner_dim, bias=False)

    def forward(self, x):
        h1, h2 = self.linear_1(x), self.linear_3(x)
        swiglu_fn = self.swiglu
        return self.linear_2(swiglu_fn(h1, h2))
'''


def findings(code: str, family: int) -> list[Finding]:
    found = check(analyse(code, "m.py"), load_rules().rules, ENV).findings
    return [f for f in found if f.family == family]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_a_module_level_function_held_by_an_attribute_is_inlined_where_it_is_called() -> None:
    lines = forward_lines(MODULE_LEVEL, "MLP")
    assert any("function torch.nn.functional.silu(" in text for text in lines)
    assert not any("self.activation_func(" in text for text in lines)


def test_the_gated_product_inside_it_is_a_family_14_site() -> None:
    found = findings(MODULE_LEVEL, 14)
    assert [f.rule_id for f in found] == ["f14-gated-chunked-indexed"]
    assert found[0].span.start_line == line(MODULE_LEVEL, "intermediate = self.dense_h_to_4h(")


def test_a_function_defined_in_init_is_read_the_same_way() -> None:
    found = findings(NESTED, 14)
    assert [f.rule_id for f in found] == ["f14-gated-chunked-indexed"]
    assert found[0].span.start_line == line(NESTED, "return self.fc2(self.activation_func(")


def test_a_local_holding_the_attribute_calls_the_function() -> None:
    # Lumina's feed-forward as diffsynth writes it: `swiglu_fn = self.swiglu; swiglu_fn(h1, h2)`. Reported without
    # a fix: the product lives in the function, which the fix of `f14-swiglu` does not rewrite.
    found = findings(ALIASED, 14)
    assert [(f.rule_id, f.span.start_line) for f in found] == [("f14-swiglu", line(ALIASED, "h1, h2 = self.linear_1("))]


def test_another_activation_in_the_function_is_not_a_site() -> None:
    assert findings(MODULE_LEVEL.replace("F.silu(x[0])", "F.relu(x[0])"), 14) == []
    assert findings(MODULE_LEVEL.replace("F.silu(x[0])", "torch.sigmoid(x[0])"), 14) == []  # a GLU


def test_a_binding_on_some_paths_only_stays_a_call() -> None:
    # Megatron's form: the gated function only when the configuration asks for it.
    code = NESTED.replace(
        "        self.activation_func = glu\n",
        "        if config.gated:\n            self.activation_func = glu\n"
        "        else:\n            self.activation_func = F.gelu\n")
    assert findings(code, 14) == []
    assert any("self.activation_func(" in text for text in forward_lines(code, "MLP"))


def test_a_rebound_attribute_or_a_shadowed_name_is_not_read() -> None:
    twice = MODULE_LEVEL.replace(
        "        self.dense_4h_to_h = nn", "        self.activation_func = F.gelu\n        self.dense_4h_to_h = nn")
    assert findings(twice, 14) == []
    shadowed = MODULE_LEVEL.replace("def __init__(self, d, hidden):", "def __init__(self, d, hidden, swiglu=F.gelu):")
    assert findings(shadowed, 14) == []


def test_editing_the_function_reanalyses_the_class() -> None:
    units, same = reanalysed_after(MODULE_LEVEL[len(HEADER):], "    return F.silu(x[0]) * x[1]",
                                   "return F.relu(x[0]) * x[1]")
    assert "class MLP" in units and same
