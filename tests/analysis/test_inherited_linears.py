"""q/k/v Linears built by a base class of another file (`adopter.analysis.idioms.inherited_layers`, issue 20, mech65 and inh1).

min-dalle's `DecoderSelfAttention(AttentionBase)` writes its own forward (`self.k_proj.forward(x)`, ...) and
keeps the projections `AttentionBase.__init__` builds in the encoder's file; faesm's and the `adapters`
package's attention classes do the same with transformers' bases. Nothing in the file binds the three
Linears, so family 9 had no site. They are now read from the base's file (never imported) and the
site is reported without a fix (the constructors are in another file): the message says where.

Near forms stay silent: the base binds the projections under a condition, with other widths, or builds
another layer; the subclass binds the attribute itself (its own binding wins).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adopter.cli import main

BASE = '''import torch
from torch import nn


class AttentionBase(nn.Module):
    def __init__(self, heads, dim):
        super().__init__()
        self.heads = heads
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.out_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, keys, values, queries):
        b = keys.shape[0]
        keys, values, queries = (t.view(b, -1, self.heads, 16).transpose(1, 2) for t in (keys, values, queries))
        out = torch.nn.functional.scaled_dot_product_attention(queries, keys, values)
        return self.out_proj(out.transpose(1, 2).flatten(2))
'''

CHILD = '''from .base import AttentionBase


class SelfAttention(AttentionBase):
    def __init__(self, heads, dim):
        super().__init__(heads, dim)

    def forward(self, x):
        keys = self.k_proj.forward(x)
        values = self.v_proj.forward(x)
        queries = self.q_proj.forward(x)
        return super().forward(keys, values, queries)
'''


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: str = BASE, child: str = CHILD,
           extra: dict[str, str] | None = None) -> list[dict[str, object]]:
    pkg = tmp_path / f"pkg_{tmp_path.name}"  # one package name per test: resolutions are kept per process
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(base)
    (pkg / "child.py").write_text(child)
    for name, text in (extra or {}).items():
        (pkg / name).write_text(text)
    main(["check", "--format", "json", "--select", "9", "--jobs", "1", "--no-cache", "--target", "cpu",
          str(pkg / "child.py")])
    return [r for r in json.loads(capsys.readouterr().out) if r["family"] == 9]


def test_projections_a_base_of_another_file_builds_are_a_site_without_a_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (found,) = _check(tmp_path, capsys)
    assert found["range"]["start"]["line"] == CHILD.splitlines().index("        keys = self.k_proj.forward(x)") + 1
    assert found["fixable"] is False


def test_a_subclass_without_its_own_init_and_a_base_two_files_up(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the base's own base (a third file) builds the Linears; the subclass has no __init__ at all
    middle = "from .root import Root\n\n\nclass AttentionBase(Root):\n    pass\n"
    root = BASE.replace("class AttentionBase(nn.Module)", "class Root(nn.Module)")
    child = CHILD.replace("    def __init__(self, heads, dim):\n        super().__init__(heads, dim)\n\n", "")
    assert child != CHILD
    (found,) = _check(tmp_path, capsys, base=middle, child=child, extra={"root.py": root})
    assert found["fixable"] is False


@pytest.mark.parametrize("change", [
    # the keys' and values' Linears are built under a condition: they may not exist on every path
    ("        self.k_proj = nn.Linear(dim, dim, bias=False)\n        self.v_proj = nn.Linear(dim, dim, bias=False)\n",
     "        if heads > 1:\n            self.k_proj = nn.Linear(dim, dim, bias=False)\n"
     "            self.v_proj = nn.Linear(dim, dim, bias=False)\n"),
    # the value's width shares no factor with the others': one Linear cannot be chunked into the three
    ("self.v_proj = nn.Linear(dim, dim, bias=False)", "self.v_proj = nn.Linear(dim, dim // 2, bias=False)"),
    # the base builds convolutions, not Linears
    ("self.k_proj = nn.Linear(dim, dim, bias=False)", "self.k_proj = nn.Conv1d(dim, dim, 1, bias=False)"),
])
def test_near_forms_in_the_base_stay_silent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str]) -> None:
    base = BASE.replace(*change)
    assert base != BASE
    assert _check(tmp_path, capsys, base=base) == []


def test_the_subclass_own_binding_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the subclass replaces the value projection with its own module: the three are not three Linears
    child = CHILD.replace("        super().__init__(heads, dim)\n",
                          "        super().__init__(heads, dim)\n        self.v_proj = Identity()\n").replace(
        "from .base import AttentionBase\n", "from torch.nn import Identity\n\nfrom .base import AttentionBase\n")
    assert child != CHILD
    assert _check(tmp_path, capsys, child=child) == []
