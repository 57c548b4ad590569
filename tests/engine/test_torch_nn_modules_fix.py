"""A layer imported from where torch defines it (`from torch.nn.modules.normalization import LayerNorm`,
graphtransformer-digress) is the `torch.nn` layer (`adopter.analysis.names.torch_nn_public`): its sites are found
and fixed as `nn.LayerNorm`'s, and the fixed module computes the same."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session

HEADER = "import torch\nimport torch.nn as nn\n"
ENV = Environment("cpu", frozenset(), "2.13.0")

LAYER = '''from torch.nn.modules.dropout import Dropout
from torch.nn.modules.linear import Linear
from torch.nn.modules.normalization import LayerNorm


class XEyTransformerLayer(nn.Module):
    def __init__(self, dx, dim_ffX=32, dropout=0.1):
        super().__init__()
        self.linX1 = Linear(dx, dim_ffX)
        self.linX2 = Linear(dim_ffX, dx)
        self.normX1 = LayerNorm(dx, eps=1e-5)
        self.normX2 = LayerNorm(dx, eps=1e-5)
        self.dropoutX1 = Dropout(dropout)
        self.dropoutX2 = Dropout(dropout)
        self.dropoutX3 = Dropout(dropout)
        self.activation = torch.nn.modules.activation.ReLU()

    def forward(self, X, newX):
        X = self.normX1(X + self.dropoutX1(newX))
        ff_outputX = self.linX2(self.dropoutX2(self.activation(self.linX1(X))))
        ff_outputX = self.dropoutX3(ff_outputX)
        return self.normX2(X + ff_outputX)
'''


def _family5(code: str) -> list[int]:
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, ENV)
    return sorted(f.span.start_line - HEADER.count("\n") for f in result.findings if f.family == 5)


def _line(code: str, what: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines()) if what in ln)


def test_dropout_add_layernorm_of_torch_nn_modules_layers_is_found() -> None:
    assert _family5(LAYER) == [_line(LAYER, "self.normX1(X + self.dropoutX1(newX))"),
                               _line(LAYER, "ff_outputX = self.dropoutX3(ff_outputX)")]
    # the same layers from a package of the user's own keep their names: nothing is claimed
    own = LAYER.replace("from torch.nn.modules.", "from mylib.modules.")
    assert _family5(own) == []


def test_the_fixed_layer_computes_the_same() -> None:
    torch = pytest.importorskip("torch")
    source = HEADER + LAYER
    out = Session(RuleContext(tuple(load_rules().rules), (), ENV)).fix(source, "m.py")
    assert len([f for f in out.applied if f.family == 5]) == 2
    before_ns: dict[str, object] = {}
    after_ns: dict[str, object] = {}
    exec(compile(source, "before.py", "exec"), before_ns)  # the test's own snippet
    exec(compile(out.new_source, "after.py", "exec"), after_ns)
    torch.manual_seed(0)
    old = before_ns["XEyTransformerLayer"](16)  # type: ignore[operator]
    new = after_ns["XEyTransformerLayer"](16)  # type: ignore[operator]
    new.load_state_dict(old.state_dict(), strict=True)
    x, dx = torch.randn(4, 7, 16), torch.randn(4, 7, 16)
    old.eval()
    new.eval()
    torch.testing.assert_close(new(x, dx), old(x, dx), rtol=0, atol=0)
    old.train()
    new.train()
    torch.manual_seed(1)
    trained_old = old(x, dx)
    torch.manual_seed(1)
    # training: the same dropout masks drawn in the same order (CPU, seed 1)
    torch.testing.assert_close(new(x, dx), trained_old, rtol=0, atol=0)
