"""`from pkg import nn` where `pkg/__init__.py` holds `import torch.nn as nn`: the file's `nn` is torch's.

xuance's `representations/vit.py` imports `nn` and `Module` from `xuance.torch`, whose `__init__.py` imports
them from torch; the attention written there (`self.attend = nn.Softmax(dim=-1)`, `torch.matmul`) is
families 4 and 10 like any other. Each case is a small package in tmp_path, analysed with cross-file reach.
"""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import check, detect_environment, load_rules

MODEL = '''
import torch
from einops import rearrange

from pkg.base import nn, Module


class Attention(Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.attend = nn.Softmax(dim=-1)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x):
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        attn = self.attend(dots)
        out = torch.matmul(attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)
'''


def _findings(tmp_path: Path, base: str) -> list[tuple[str, int]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "base.py").write_text(base, encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(MODEL, str(model), reach=reach)
    rules = [r for r in load_rules().rules if r.family in (4, 10)]
    return sorted((f.rule_id, f.span.start_line + 1) for f in check(mf, rules, detect_environment("cpu")).findings)


def test_nn_imported_from_a_package_that_imports_it_from_torch_is_torch_nn(tmp_path: Path) -> None:
    base = "import torch.nn as nn\nfrom torch.nn import Module\n\n__all__ = ['nn', 'Module']\n"
    assert _findings(tmp_path, base) == [("f04-softmax", 22), ("f10-manual-attention-sdpa", 21)]


def test_nn_a_package_defines_itself_is_not_torch_nn(tmp_path: Path) -> None:
    # The package binds its own `nn` (a namespace of its layers): nothing says its `Softmax` is torch's.
    base = ("import torch\nfrom torch.nn import Module\n\n\nclass nn:\n    class Softmax(Module):\n"
            "        def __init__(self, dim):\n            super().__init__()\n\n"
            "        def forward(self, x):\n            return torch.sigmoid(x)\n\n"
            "    Linear = torch.nn.Linear\n")
    assert _findings(tmp_path, base) == []
