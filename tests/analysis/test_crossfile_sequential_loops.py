"""Cross-file reach: an imported `nn.Sequential` subclass that fills its list in a loop whose count the
construction makes evident (torchvision 0.28 `ops/misc.py` `MLP`: `for hidden_dim in hidden_channels[:-1]:
layers.append(Linear); layers.append(activation_layer()); ...`, built as `MLP(dim, [4 * dim, dim],
activation_layer=nn.GELU)` in `swin_transformer.py` and `video/mvit.py`). The loop is unrolled when the
sequence is a list or tuple display passed by the call (or a constant slice of one, or `range(<int>)`);
a subclass whose `__init__` only initialises weights after `super().__init__(...)` is read through its
base as before (`vision_transformer.py` `MLPBlock`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor
from adopter.engine import check, detect_environment, load_rules

MISC = '''
import torch


class MLP(torch.nn.Sequential):
    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=torch.nn.ReLU,
                 inplace=None, bias=True, dropout=0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(torch.nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(torch.nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(torch.nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(torch.nn.Dropout(dropout, **params))
        super().__init__(*layers)


class MLPBlock(MLP):
    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=torch.nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.xavier_uniform_(m.weight)
'''

MODEL = '''
from torch import nn

from .misc import MLP, MLPBlock


class Block(nn.Module):
    def __init__(self, dim, hidden=None, mlp_ratio=4.0, dropout=0.0):
        super().__init__()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = {mlp}

    def forward(self, x):
        return x + self.mlp(self.norm2(x))
'''


def _mlp(tmp_path: Path, mlp: str, misc: str = MISC) -> tuple[Ctor, list[str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "misc.py").write_text(textwrap.dedent(misc), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(mlp=mlp), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "Block")
    assert arch.init is not None
    value = next(b.value for b in arch.init.bindings if b.attr == "mlp")
    assert isinstance(value, Ctor)
    rules = [r for r in load_rules().rules if r.family == 6]
    return value, [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]


LAYERS = ["torch.nn.Linear", "torch.nn.GELU", "torch.nn.Dropout", "torch.nn.Linear", "torch.nn.Dropout"]


@pytest.mark.parametrize("mlp", [
    "MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)",
    "MLPBlock(dim, int(dim * mlp_ratio), dropout)",  # weights initialised after super().__init__
])
def test_the_loop_runs_as_many_times_as_the_list_passed_has_items_but_one(tmp_path: Path, mlp: str) -> None:
    value, found = _mlp(tmp_path, mlp)
    assert [i.callee for i in value.items] == LAYERS
    assert found == ["f06-linear-gelu"]


def test_three_items_unroll_twice(tmp_path: Path) -> None:
    value, _ = _mlp(tmp_path, "MLP(dim, [dim, dim, dim], activation_layer=nn.GELU)")
    assert [i.callee for i in value.items] == LAYERS[:3] + LAYERS


@pytest.mark.parametrize("mlp, misc", [
    ("MLP(dim, hidden, activation_layer=nn.GELU)", MISC),  # the sequence is not evident
    ("MLP(dim, [dim, dim], activation_layer=nn.GELU)", MISC.replace("            in_dim = hidden_dim\n",
                                                                      "            in_dim = hidden_dim\n            break\n")),
    ("MLPBlock(dim, dim, dropout)", MISC.replace("                torch.nn.init.xavier_uniform_(m.weight)\n",
                                                 "                self.extra = m\n")),  # changes self after
])
def test_what_is_not_evident_stays_as_written(tmp_path: Path, mlp: str, misc: str) -> None:
    value, found = _mlp(tmp_path, mlp, misc)
    assert not value.items  # a Sequential of unknown items, as before
    assert found == []
