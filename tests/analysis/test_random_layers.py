"""A layer-or-identity between the dropout and the residual add (family 5) is read through its identity path only
when its layer draws no random numbers (`adopter.analysis.idioms.random_layers`). A stochastic-depth layer
(`DropPath(rate) if rate > 0 else nn.Identity()`, its forward masking whole samples with `torch.rand`, in this
file or another) drops the branch wherever it is built: not a dropout-add-LayerNorm (dev2's mmocr reading;
funasr's emotion2vec and mmpretrain's OFA blocks were reported). A LayerScale-or-Identity (audiocraft's label)
and a plain dropout -> add -> LayerNorm are still found, and the layer is read, never its name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import check, detect_environment, load_rules

STOCHASTIC = '''
import torch
import torch.nn as nn


def skip_rows(x, p: float = 0.0, training: bool = False):
    if p == 0.0 or not training:
        return x
    keep = 1 - p
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).{draw}
    return x * mask / keep


class {name}(nn.Module):
    def __init__(self, p=0.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        return skip_rows(x, self.p, self.training)
'''

SCALE = '''
import torch
import torch.nn as nn


class {name}(nn.Module):
    def __init__(self, dim, init=1e-4):
        super().__init__()
        self.scale = nn.Parameter(torch.full((dim,), init))

    def forward(self, x):
        return self.scale * x
'''

BLOCK = '''
import torch.nn as nn
{imports}


class Block(nn.Module):
    def __init__(self, dim, rate=0.0):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)
        self.skip = {name}({args}) if rate > 0 else nn.Identity()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.dropout(self.fc(x))
        return self.norm(x + self.skip(h))
'''

PLAIN = '''
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.dropout(self.fc(x))
        return self.norm(x + h)
'''

CASES = {
    # (the layer's module text, where it is: "here" / "there" / "local" (imported inside `__init__`), a site?)
    "random mask, this file": (STOCHASTIC.format(name="Skip", draw="bernoulli_(keep)"), "here", False),
    "torch.rand, another file": (STOCHASTIC.format(name="RowDrop", draw="fill_(0) + torch.rand(1)"), "there", False),
    "imported inside __init__": (STOCHASTIC.format(name="Skip", draw="bernoulli_(keep)"), "local", False),
    "a scale, this file": (SCALE.format(name="Skip"), "here", True),
    "a scale, another file": (SCALE.format(name="DropScale"), "there", True),
}


def _write(tmp_path: Path, case: str) -> Path:
    layer, where, _ = CASES[case]
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    name = "Skip" if where != "there" else ("RowDrop" if "RowDrop" in layer else "DropScale")
    args = "dim" if "scale" in layer else "rate"
    if where == "here":
        text = textwrap.dedent(layer) + BLOCK.format(imports="", name=name, args=args)
    else:
        (pkg / "layers.py").write_text(textwrap.dedent(layer), encoding="utf-8")
        imports = f"from .layers import {name}" if where == "there" else ""
        text = BLOCK.format(imports=imports, name=name, args=args)
        if where == "local":
            text = text.replace("        super().__init__()\n", f"        super().__init__()\n        from pkg.layers import {name}\n", 1)
    (pkg / "model.py").write_text(text, encoding="utf-8")
    return pkg / "model.py"


def _family5(path: Path, text: str, root: Path | None) -> list[int]:
    reach = CrossFileReach(ModuleResolver(search_paths=[str(root)]), root=str(root)) if root else None
    mf = analyse(text, str(path), reach=reach) if reach else analyse(text, str(path))
    rules = [r for r in load_rules().rules if r.family == 5]
    return [f.span.start_line + 1 for f in check(mf, rules, detect_environment("cpu")).findings]


@pytest.mark.parametrize("case", list(CASES))
def test_a_layer_that_draws_random_numbers_is_no_identity_path(tmp_path: Path, case: str) -> None:
    model = _write(tmp_path, case)
    text = model.read_text(encoding="utf-8")
    found = _family5(model, text, tmp_path)
    assert bool(found) is CASES[case][2], found


def test_a_plain_dropout_add_layernorm_is_found(tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_text(PLAIN, encoding="utf-8")
    assert _family5(path, PLAIN, None) == [13]  # the dropout call
