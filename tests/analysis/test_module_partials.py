"""A module-level `Name = partial(LayerClass, key=value)` builds that layer wherever `Name(...)` is called, with
the partial's keywords (the call's own keywords win, as in Python)."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.dsl.types import Ctor, Expr, Kwarg
from adopter.engine import Environment, check, load_rules

# simple-hierarchical-transformer 0.3.0, simple_hierarchical_transformer.py (module-level `Linear`, FeedForward)
SOURCE = '''from functools import partial

import torch.nn.functional as F
from torch import nn
from torch.nn import Module

Linear = partial(nn.Linear, bias = False)
Wide = partial(nn.Linear, 64, bias = False)
Act = partial(F.gelu, approximate = "tanh")


class FeedForward(Module):
    def __init__(self, dim, mult = 4):
        super().__init__()
        dim_inner = int(dim * mult)

        self.net = nn.Sequential(
            nn.LayerNorm(dim),
            Linear(dim, dim_inner),
            nn.GELU(),
            Linear(dim_inner, dim)
        )
        self.out = Linear(dim, dim, bias = True)
        self.wide = Wide(dim)
        self.act = Act

    def forward(self, x):
        return self.net(x)
'''


def _bindings() -> dict[str, object]:
    arch = next(a for a in analyse(SOURCE, "m.py").architectures if a.name == "FeedForward")
    assert arch.init is not None
    return {b.attr: b.value for b in arch.init.bindings}


def test_a_module_level_partial_of_a_layer_builds_that_layer_with_its_keywords() -> None:
    b = _bindings()
    net = b["net"]
    assert isinstance(net, Ctor)
    assert net.items[1] == Ctor("torch.nn.Linear", (Expr("dim"), Expr("dim_inner")), (Kwarg("bias", Expr("False")),))
    out = b["out"]
    assert isinstance(out, Ctor) and out.callee == "torch.nn.Linear" and out.kwargs == (Kwarg("bias", Expr("True")),)


def test_partials_with_positional_arguments_or_of_functions_are_not_read_as_layers() -> None:
    b = _bindings()
    assert not (isinstance(b["wide"], Ctor) and b["wide"].callee == "torch.nn.Linear")
    assert not isinstance(b["act"], Ctor) or b["act"].callee != "torch.nn.GELU"


def test_the_sequential_linear_gelu_is_found() -> None:
    result = check(analyse(SOURCE, "m.py"), load_rules().rules, Environment("cpu", frozenset(), "2.13.0"))
    assert [f.rule_id for f in result.findings if f.family == 6] == ["f06-linear-gelu"]
