"""Cross-file reach: a class of the analysed file that subclasses an `nn.Sequential` subclass of another file
(helper `mech43`; the oracle's miss torchvision 0.28 `models/vision_transformer.py:118`, family 6).

torchvision's `MLPBlock(MLP)` sits in `vision_transformer.py` beside `EncoderBlock`, which builds it
(`self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)`); its `__init__` hands `activation_layer=nn.GELU` to
`ops/misc.py`'s `MLP`, a Sequential subclass that fills its list in a loop. The reach read an imported
`MLPBlock` through its base (`tests/analysis/test_crossfile_sequential_loops.py`) but not one of the file itself:
the binding stayed `MLPBlock(...)`. A class of the file whose one base is imported (not torch's) and is such a
Sequential is now read the same way. Near forms that stay as written: the block with its own `forward`, a block
that adds a child after `super().__init__`, and a block over an imported base that is no Sequential; and a block
that keeps MLP's default ReLU is read but is no GELU site.
"""

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


class Scale(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.g = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.g
'''

BLOCK = '''
    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
'''

MODEL = '''
from torch import nn

from .misc import MLP, Scale


class MLPBlock({base}):{block}

class EncoderBlock(nn.Module):
    def __init__(self, dim, mlp_dim, dropout=0.0):
        super().__init__()
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLPBlock(dim, mlp_dim, dropout)

    def forward(self, x):
        y = self.ln_2(x)
        y = self.mlp(y)
        return x + y
'''

LAYERS = ["torch.nn.Linear", "torch.nn.GELU", "torch.nn.Dropout", "torch.nn.Linear", "torch.nn.Dropout"]


def _encoder(tmp_path: Path, block: str = BLOCK, base: str = "MLP") -> tuple[Ctor, list[tuple[str, int]]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "misc.py").write_text(textwrap.dedent(MISC), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(base=base, block=block), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "EncoderBlock")
    assert arch.init is not None
    value = next(b.value for b in arch.init.bindings if b.attr == "mlp")
    assert isinstance(value, Ctor)
    rules = [r for r in load_rules().rules if r.family == 6]
    found = check(mf, rules, detect_environment("cpu")).findings
    return value, [(f.rule_id, f.span.start_line + 1) for f in found]


def test_a_block_of_the_file_is_read_through_its_imported_sequential_base(tmp_path: Path) -> None:
    value, found = _encoder(tmp_path)
    assert [i.callee for i in value.items] == LAYERS
    assert found == [("f06-linear-gelu", 23)]  # `y = self.mlp(y)`, the line the oracle names


def test_the_default_activation_is_read_and_is_no_gelu(tmp_path: Path) -> None:
    value, found = _encoder(tmp_path, BLOCK.replace("activation_layer=nn.GELU, ", ""))
    assert [i.callee for i in value.items] == ["torch.nn.ReLU" if c == "torch.nn.GELU" else c for c in LAYERS]
    assert found == []


@pytest.mark.parametrize("block, base", [
    (BLOCK + "\n    def forward(self, x):\n        return x\n", "MLP"),  # a forward of its own
    (BLOCK.replace("nn.init.xavier_uniform_(m.weight)", "self.extra = m"), "MLP"),  # changes a child
    ("\n    def __init__(self, in_dim, mlp_dim, dropout):\n        super().__init__(in_dim)\n", "Scale"),  # no Sequential
])
def test_what_is_not_a_sequential_of_evident_items_stays_as_written(tmp_path: Path, block: str, base: str) -> None:
    twin = tmp_path / "twin"
    twin.mkdir()
    assert _encoder(twin)[1] == [("f06-linear-gelu", 23)]  # the positive form beside it is read
    value, found = _encoder(tmp_path, block, base)
    assert value.callee == "MLPBlock" and not value.items
    assert found == []
